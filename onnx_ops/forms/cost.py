"""The cost model: every constant (with the measurements behind it) and every cost function the forms' choice
reads (onnx_ops.forms.registry). Costs are estimated nanoseconds on onnxruntime's CPU provider, one thread."""
from __future__ import annotations

import math

from dml_desc.canonical import Resampling
from dml_desc.weights import forward_taps


# Estimated time (ns) of each node, calibrated on the benchmark machine (AMD EPYC, onnxruntime 1.19.2) from
# single-threaded CPU times (time.thread_time, best of 5: a load-independent proxy on a shared machine; two
# threads scale every form alike). Measured on 16.7 M float32 values (README "Lowering"):
#   copy 3.6 ms -> 0.027 ns per byte read or written; Transpose of the last two axes 7.1 ms (twice a copy)
#   MatMul (M x K) @ (K x N): 130 GMAC/s once N >= 16 (MLAS computes 16 columns at a time), plus ~1 ns
#     per output row (N = 2: 4.4 ms, N = 32: 2.0 ms for the same data) and ~0.3 us per matrix of a batch
#   Gather: a copy plus 2.3 ns per copied block (windows on the last axis, blocks of one value: 47.5 ms;
#     on axis 1, blocks of 256 values: 4.6 ms)
#   antialiased bilinear /2 Resize 22.4 ms: 0.32 ns per filter tap; Gather + Mul + ReduceSum 75 ms
#   whole plans on bilinear x2 (8x32x128^2) then fit one factor, 1.4, for MatMul / Gather pipelines (their
#   intermediates miss the cache): band + dense 24.6-25.0 ms (model 24-25), dense + dense 35.3 (41),
#   band + transposed band 28.8 (30), band + band on the last axis 40.5 (45), gather form 74.8 (69)
PIPELINE = 1.4
# One tap per X row (the gather form with K = 1): a Gather of whole rows and a Mul by each row's weight, measured
# on 4x48x41x112 -> 4x48x112x112 (linear 112 -> 41's second axis, one thread, 2026-11-26): Gather 169 us, Mul
# 347 us for 9.6 MB written, per byte read or written (the MatMul before it: 314 us, estimated 469)
ROW_GATHER_NS_PER_BYTE = 0.0088
ROW_SCALE_NS_PER_BYTE = 0.018
PAD_NS_PER_BYTE = 0.036      # onnxruntime's Pad (one thread): the zero row beats the Mul from n / m = 2 (measured
#                              on nearest 128 -> 41, 64 -> 30 against 24 -> 14 and 12 -> 7: 1.7 lost, 2.1 won)
PAD_NS_PER_ROW = 8.0        # ... and per row where it pads the last axis too (2 threads, 2026-11-27: a zero row and 3
#                            columns on [8, 64, 7, 28], [4, 48, 56, 112], [8, 16, 112, 224]: 4.9, 2.8, 12.9 ns a row
#                            more than the zero row alone)
NS_PER_BYTE = 0.027
NS_PER_MAC = 0.009 * PIPELINE
NS_PER_ROW = 1.0 * PIPELINE
NS_PER_GEMM = 300.0 * PIPELINE
NS_PER_BLOCK = 2.3 * PIPELINE
NS_PER_TAP = 0.32
NS_PER_NODE = 2e3
MLAS_COLUMNS = 16
# The pool form is used by rule, where it measured faster than every other form (README "Lowering"):
# AveragePool at opsets up to 18 (MLAS in onnxruntime 1.19.2 and 1.32) in windows of 2 on every pooled axis, 2 or
# 3 of them. One thread, nearest x2, opset 17 (ms): X 8x32x128^2 10.8 (band 12.6), 8x128x64^2 10.2 (band 12.5),
# 8x32x32^2 0.24 (dense + band 0.35), 2x16x32^3 2.9 (band 7.3), 2x3x8x12 0.006 (kron 0.009). Measured slower:
# one pooled axis (16x64x64: 0.12, kron 0.03), windows of 3 and 4 (1.6x and 2.5x the band), and AveragePool-19
# (a separate onnxruntime kernel, "averagepool v19 and beyond": 2x the MLAS one on 8x32x128^2 in both versions).
POOL_WINDOW = 2
POOL_MAX_OPSET = 18
POOL_NS_PER_BYTE = 4.8 * NS_PER_BYTE   # the pool form's time per byte of dY and dX: 10.8 ms on 8x32x128^2 (above)
# The kron form (integer-factor block sums) is taken unless the per-axis plan is estimated this much cheaper: where it
# applies it measured faster than the plans the row-gather estimate (above) prefers, one thread, 2026-11-26 (ms):
# nearest 1/2 on 4x32x100^2 0.28 (plan 0.42), 8x32x200^2 6.6 (7.1), nearest 1/3 on 4x32x99^2 0.22 (0.38), linear
# 1/2 on 4x32x100^2 0.19 (plan 0.43; the Resize form it then fell to, 1.7)
KRON_MARGIN = 1.5
# A Resize is kept unless the plan is estimated this many times cheaper: one node, no intermediates, and the
# reference's pattern of non-finite values.
PREFER_RESIZE = 2.0


def matmul_cost(rows: float, k: int, n: float, gemms: float, moved: float, itemsize: int) -> float:
    """rows x k times k x n (summed over `gemms` matrices), reading and writing `moved` values."""
    macs = rows * k * max(n, MLAS_COLUMNS)
    return rows * NS_PER_ROW + gemms * NS_PER_GEMM + max(moved * itemsize * NS_PER_BYTE * PIPELINE,
                                                          macs * NS_PER_MAC) + NS_PER_NODE


def gather_cost(source: float, out: float, blocks: float, itemsize: int) -> float:
    """The cost model of a gather/band contraction in ns: bytes moved, blocks and one node's overhead."""
    return (source + out) * itemsize * NS_PER_BYTE * PIPELINE + blocks * NS_PER_BLOCK + NS_PER_NODE


def swapped(shape: list) -> list:
    """`shape` with its last two axes swapped."""
    return list(shape[:-2]) + [shape[-1], shape[-2]]


def band_cost(plan, shape: list, n: int, itemsize: int) -> float:
    """Windows (a Gather unless they are a Reshape) + one MatMul, on a tensor of `shape`; a padded last tile adds
    its zero rows to the MatMul and a Slice (a copy) of its output."""
    a, m = plan.axis, shape[plan.axis]
    lead, trail = math.prod(shape[:a]), math.prod(shape[a + 1:])
    windows = lead * plan.tiles * plan.width * trail
    gathered = not (plan.dense or plan.contiguous)
    cost = gather_cost(lead * m * trail, windows, lead * plan.tiles * plan.width, itemsize) if gathered else 0.0
    rows = n + plan.padding
    if plan.padding:
        cost += copy_cost(lead * n * trail, itemsize) + NS_PER_NODE
    moved = windows + lead * rows * trail + plan.matrices.size
    if a == len(shape) - 1:
        return cost + matmul_cost(lead * plan.tiles, plan.width, plan.tile, 1, moved, itemsize)
    return cost + matmul_cost(lead * rows, plan.width, trail, lead * plan.tiles, moved, itemsize)


def gather_form_cost(rest: float, m: int, light, piles: list, itemsize: int, inner: float = 1) -> float:
    """The gather form of one axis (m dY rows -> light.rows X rows, `rest` values per row, `inner` of them
    contiguous): Gather + Mul + ReduceSum over K taps, measured at ~12 passes of K x dX, plus the edge piles (their
    lengths). One tap per X row (K = 1, no piles) is a Gather of blocks of `inner` values and a Mul, no ReduceSum:
    on 4x48x112^2, linear 112 -> 41, that axis after the other's dense MatMul took the whole gradient from 1.08 to
    0.91 ms (one thread; 0.55 to 0.45 ms on two)."""
    n = light.rows
    if light.width == 1 and not piles:
        gathered = 2 * rest * n * itemsize * ROW_GATHER_NS_PER_BYTE + rest / inner * n * NS_PER_BLOCK + NS_PER_NODE
        if pads_zero_row(light):         # the zero row padded onto dY (a copy of its m rows), no Mul
            return gathered + 2 * rest * m * itemsize * PAD_NS_PER_BYTE + NS_PER_NODE
        if (light.weight == 1).all():
            return gathered
        return gathered + 2 * rest * n * itemsize * ROW_SCALE_NS_PER_BYTE + NS_PER_NODE
    gathered = rest * (m + 12 * n * light.width + n) + 2 * light.index.size + sum(piles)
    return gathered * itemsize * NS_PER_BYTE + (3 + 6 * len(piles)) * NS_PER_NODE


def pads_zero_row(taps) -> bool:
    """One tap per X row, each of weight 1 but some of weight 0 (nearest downsampling), and the X rows n more than
    PAD_NS_PER_BYTE / ROW_SCALE_NS_PER_BYTE times the dY rows m: the gather form reads the rows of weight 0 from a
    zero row padded onto dY (a copy of its m rows) instead of scaling every X row by its weight."""
    weight = taps.weight[:, 0]
    return taps.width == 1 and bool(((weight == 0) | (weight == 1)).all()) and bool((weight == 0).any()) and \
        taps.rows * ROW_SCALE_NS_PER_BYTE > taps.cols * PAD_NS_PER_BYTE


# onnxruntime's Pad and Slice run on one thread where the plans' MatMuls and Gathers use every thread: the padded
# form's copies count this many times (2: the benchmark machine's threads). At 1x, on 14 random maps that took the
# form, 6 lost (worst 1.45x; docs/benchmarks.md, the sixth round).
ONE_THREAD_NODES = 2.0


def padded_copies_cost(dy: float, longer_dy: float, dx: float, itemsize: int) -> float:
    """The padded form's copies (onnx_ops.forms.padded): dY's `dy` values lengthened to `longer_dy` (estimated as one
    Pad of every axis at once; the axis-by-axis Concats with zeros it writes measured faster: on 4x48x169^2 -> 180^2,
    a Pad of both axes 1.72 ms, of the first 0.74, a Concat with zeros on the last 0.82; on another machine, 2026-11-27,
    a Pad of the first 1.62, a Concat on it 1.05) and the Slice writing dX's `dx`."""
    pad = (dy + longer_dy) * itemsize * PAD_NS_PER_BYTE + NS_PER_NODE
    return ONE_THREAD_NODES * (pad + copy_cost(dx, itemsize) + NS_PER_NODE)


def transposes_cost(rest: float, m: int, n: int, itemsize: int) -> float:
    """The two Transposes around a band on the last axis (m -> n rows, `rest` values per row)."""
    return 2 * rest * (m + n) * itemsize * NS_PER_BYTE * 3 * PIPELINE + 2 * NS_PER_NODE


def copy_cost(values: float, itemsize: int) -> float:
    """A full copy of `values` values (read and written), e.g. a Reshape that writes dX."""
    return 2 * values * itemsize * NS_PER_BYTE


def resize_cost(res: Resampling, cand: Resampling, itemsize: int = 4) -> float:
    """One onnxruntime Resize: its input and output once, plus every filter tap (separable passes)."""
    taps, shape = 0.0, list(res.out_shape)
    for a in reversed(res.resized_axes):
        shape[a] = res.in_shape[a]
        taps += math.prod(shape) * forward_taps(cand.axes[a], cand).width
    moved = (math.prod(res.out_shape) + math.prod(res.in_shape)) * itemsize
    return moved * NS_PER_BYTE + taps * NS_PER_TAP + 2 * NS_PER_NODE   # moved is in bytes


def kron_cost(res: Resampling, form, itemsize: int = 4) -> float:
    """The kron form: its MatMul on the last axis, then a ReduceSum (measured ~3.4 copies of its input:
    onnxruntime reduces small inner axes one tiny GEMM at a time, README) or a Gather per other axis."""
    last, shape, cost = len(res.axes) - 1, list(res.out_shape), 0.0
    if last in form.kernels:
        p, q = form.kernels[last].shape
        rows = math.prod(shape) / (form.chunk * q)
        cost += matmul_cost(rows, form.chunk * q, form.chunk * p, 1, rows * form.chunk * (p + q), itemsize)
        shape[last] = res.in_shape[last]
    for a, k in form.kernels.items():
        if a == last:
            continue
        size = math.prod(shape)
        shape[a] = res.in_shape[a]
        if k.shape[1] > 1:
            cost += 3.4 * (size + math.prod(shape)) * itemsize * NS_PER_BYTE + NS_PER_NODE
        else:
            cost += gather_cost(size, math.prod(shape), math.prod(shape[:a + 1]), itemsize)
    return cost


def conv_cost(res: Resampling, itemsize: int = 4) -> float:
    """A depthwise Conv / ConvTranspose (or Reshape + ReduceSum): measured at about four copies of its input
    and output (nearest x2 on 8x32x128^2: 8-10 ms, README)."""
    return 4 * (math.prod(res.out_shape) + math.prod(res.in_shape)) * itemsize * NS_PER_BYTE + NS_PER_NODE


# The filter-conv form (onnx_ops.forms.filter_conv) reads dY about 3 times (onnxruntime's NCHWc reorder, the Conv)
# plus 2 for the edge-scaling Mul, writes dX once plus 2 passes per fold (Slice + Concat), and runs about 10 small
# nodes. Fitted to 16 shapes at 2 threads (docs/lowering.md; the plan's estimate scaled by the measured conv/plan
# ratio), ms, Convs against band + dense: bilinear x2 6x40x96^2 7.5 (11.1), 8x32x128^2 14.4 (25.3), bicubic x2
# 8x32x128^2 15.3 (25.1), 6x40x96^2 12.0 (19.3); slower below about 1 MB of dY: 1x256x16^2 0.26 (0.15), 2x3x16^2
# 0.034 (0.014); near ties either way: trilinear x2 2x12x20x40^2 7.3 (8.1), bicubic x2 2x16x64^2 0.39 (0.36).
FILTER_CONV_READS = 3
FILTER_EDGE_PASSES = 2
FILTER_FOLD_PASSES = 2
FILTER_CONV_NODES = 10


def filter_conv_cost(res: Resampling, edge_scaled: bool, folds: int, itemsize: int = 4) -> float:
    """The filter-conv form's estimated ns (constants above)."""
    dy, dx = math.prod(res.out_shape) * itemsize, math.prod(res.in_shape) * itemsize
    moved = (FILTER_CONV_READS + FILTER_EDGE_PASSES * edge_scaled) * dy + (1 + FILTER_FOLD_PASSES * folds) * dx
    return moved * NS_PER_BYTE * PIPELINE + FILTER_CONV_NODES * NS_PER_NODE


def pool_cost(res: Resampling, itemsize: int = 4) -> float:
    """The pool form (Reshape + AveragePool + Mul + Reshape), fitted to its measurement above. The form is chosen
    by rule; this estimate only ranks it among the candidates `dml-desc calibrate` measures."""
    return (math.prod(res.out_shape) + math.prod(res.in_shape)) * itemsize * POOL_NS_PER_BYTE + 2 * NS_PER_NODE
