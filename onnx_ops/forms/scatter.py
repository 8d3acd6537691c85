"""scatter: integer downsampling whose gradient writes each dY row into its own block of X rows. For a scale 1/k
the output has m = floor(n / k) rows, and for many maps (linear half_pixel x1/2: both rows of the block 1/2;
nearest: one row 1) dY row o reaches only X rows k*o .. k*o + k - 1, with one weight; the rows past the last whole
block get nothing. Two spellings:
- scatter: dY times the weights, one nearest Resize x k, a 0/1 mask where a block has rows dY does not reach, and a
  Pad of the tail (4-D, H and W by the same 1/2, 1/4 or 1/8: `resize_fits`);
- gathered: one blocked MatMul on the last axis and a Gather of rows from a zero row per other axis, where blocks
  have rows dY does not reach, or the Resize does not fit.
Static maps are proven here from their taps; maps with run-time lengths in onnx_ops.lowering.generic_forms (every
length of FAMILY), and take the If that skips the Pad."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.weights import Taps, gradient_taps

from .cost import (MLAS_COLUMNS, NS_PER_BYTE, NS_PER_NODE, PAD_NS_PER_BYTE, PAD_NS_PER_ROW, ROW_GATHER_NS_PER_BYTE,
                   matmul_cost)
from .dynamic_taps import squeeze_axes
from .emitter import Emitter
from .filter_conv import dims
from .generic_emit import emit_if
from .resize import taps_close

DOWN_FACTORS = range(2, 9)


def row_values(k: int) -> tuple:
    """dY values per MatMul row of the gathered spelling, widest first: 16 / k (MLAS computes 16 columns at a time,
    and wider rows only add multiplies by 0), then halved down to 1; the first that divides dY's size is taken."""
    widest = max(MLAS_COLUMNS // k, 1)
    return tuple(widest >> i for i in range(widest.bit_length()))


def resize_fits(rank: int, ks: dict) -> bool:
    """Where onnxruntime's nearest Resize takes its fast 2x kernel: 4-D, H and W doubled (k = 4 and 8 as 2 and 3
    such Resizes). Elsewhere it measured far slower than the run-time path (2 threads, onnxruntime 1.19.2, 0.15 ms
    on 4x48x112^2 doubled; one Resize x4: 3.2 ms; only W doubled: 3.2 ms; 5-D 2x8x32x64^2 doubled: 13.4 ms)."""
    return rank == 4 and set(ks) == {2, 3} and ks[2] == ks[3] and ks[2] in (2, 4, 8)


# The Resize: output o reads row o // k (proven for every length: onnx_ops.lowering.generic_forms._nearest_repeats)
SCATTER_RESIZE = (("mode", "nearest"), ("coordinate_transformation_mode", "asymmetric"), ("nearest_mode", "floor"))


@dataclass(frozen=True)
class DownAxis:
    """One axis downsampled by k: X's block o (rows k*o .. k*o + k - 1) holds `weight` x dY[o] on the rows `reach`
    marks and 0 on the others; X's rows past the last whole block hold 0."""
    k: int
    weight: float
    reach: tuple          # k bools

    @property
    def factor(self) -> float:
        """The scale (1/k), as the calibration signature records it (2 would be upsampling's)."""
        return 1 / self.k

    def source_rows(self, n: int) -> np.ndarray:
        """The dY row each of X's n rows reads, m = n // k (a zero row) where it reads none."""
        rows, m = np.arange(n), n // self.k
        return np.where(np.asarray(self.reach)[rows % self.k] & (rows < self.k * m), rows // self.k, m)

    def taps(self, n: int) -> Taps:
        """The (n rows, n // k columns) gradient table this axis stands for."""
        m = n // self.k
        return Taps(np.minimum(np.arange(n) // self.k, max(m - 1, 0))[:, None],
                    np.where(self.source_rows(n) < m, self.weight, 0.0)[:, None], m)

    def matrix(self, n: int) -> np.ndarray:
        """taps(n) as a dense (n, n // k) table."""
        return self.taps(n).dense()


@dataclass(frozen=True)
class DownsampleForm:
    """A whole node's downsampling form: per resized axis a DownAxis; `channels` X's dim 1 when static. The
    upsampling spellings read `block`, `spatial` and `resize` and never hold here."""
    axes: dict            # axis -> DownAxis
    rank: int
    channels: int | None = None
    fits: bool = True     # onnxruntime's fast 2x Resize takes it (resize_fits), else the gathered spelling only
    down = True
    block = spatial = False
    resize = None

    def names(self, kind: str, opset: int) -> tuple:
        """The per-axis form names the lowering report prints, e.g. 'generic scatter x1/2' (shape-generic: the
        gathered spelling's 'generic gather x1/4', or with ', gather on a tail' where an If takes it)."""
        if self.gathered:
            return tuple(f"generic gather x1/{f.k}" for f in self.axes.values())
        tail = ", gather on a tail" if self.masked else ""
        return tuple(f"generic {kind} x1/{f.k}{tail}" for f in self.axes.values())

    @property
    def gathered(self) -> bool:
        """The shape-generic spelling is emit_gathered's whatever the lengths: where onnxruntime's Resize has no fast
        kernel (not `fits`), or blocks have unreached rows and k >= 4 (measured faster than the Resizes and the mask
        everywhere; at k = 2 only where X has a tail)."""
        return not self.fits or self.masked and self.axes[self.rank - 1].k >= 4

    @property
    def masked(self) -> bool:
        """True where some block has rows dY does not reach (the mask Mul)."""
        return not all(all(f.reach) for f in self.axes.values())

    @property
    def weight(self) -> float:
        """The product of the axes' weights (dY is scaled by it, on the small side)."""
        return float(math.prod(f.weight for f in self.axes.values()))


def block_of(taps: Taps, k: int) -> DownAxis | None:
    """The DownAxis read from the middle column of a gradient table (rows = X), where its reached rows share one
    weight; None otherwise (the caller checks the whole table)."""
    o = taps.cols // 2
    rows = range(k * o, k * o + k)
    block = [float(taps.weight[r][taps.index[r] == o].sum()) for r in rows]
    weights = [w for w in block if w != 0]
    if not weights or any(w != weights[0] for w in weights):
        return None
    return DownAxis(k, weights[0], tuple(w != 0 for w in block))


def static_form(res: Resampling) -> DownsampleForm | None:
    """The DownsampleForm of a static map whose every resized axis is such a downsampling, proven on its taps."""
    ks = {}
    for a in res.resized_axes:
        n, m = res.axes[a].in_size, res.axes[a].out_size
        ks[a] = n // m if 0 < m < n else 0
        if ks[a] not in DOWN_FACTORS or n // ks[a] != m:
            return None
    if not resize_fits(len(res.axes), ks):          # before the taps: their check reads every row
        return None
    axes = {}
    for a, k in ks.items():
        taps = gradient_taps(res.axes[a], res)
        form = block_of(taps, k)
        if form is None or not taps_close(taps, form.taps(res.axes[a].in_size)):
            return None
        axes[a] = form
    return DownsampleForm(axes, len(res.axes))


def cost(res: Resampling, form: DownsampleForm, itemsize: int = 4) -> float:
    """The estimate: the Resize reads dY and writes X's whole blocks, the scale reads and writes dY, a mask Mul
    reads and writes the blocks again, the Pad copies them once more (one thread); `gathered_cost` where blocks
    have unreached rows (emit_static)."""
    if form.masked:
        return gathered_cost(res, form, itemsize)
    dy, dx = math.prod(res.out_shape) * itemsize, math.prod(res.in_shape) * itemsize
    passes = 1 + (form.axes[form.rank - 1].k > 2) / 4
    tail = any(res.in_shape[a] != f.k * res.out_shape[a] for a, f in form.axes.items())
    return (3 * dy + passes * 2 * dx) * NS_PER_BYTE + tail * dx * PAD_NS_PER_BYTE + 3 * NS_PER_NODE


def emit_static(em: Emitter, src: str, res: Resampling, form: DownsampleForm) -> tuple:
    """(dX, names) of a static map: the scattered rows, the tail padded where there is one; the gathered spelling
    where blocks have unreached rows (static, kron takes the whole blocks first: odd lengths; nearest x1/2 on
    4x48x113^2, 2 threads, the plan's Gather and dense MatMul 0.51-0.77 ms, this spelling about 0.4)."""
    if form.masked:
        return _static_gathered(em, src, res, form), tuple(f"gather x1/{f.k}" for f in form.axes.values())
    out = _scattered(em, em.scale(src, form.weight), None, form)
    tail = [res.in_shape[a] - f.k * res.out_shape[a] if (f := form.axes.get(a)) else 0 for a in range(form.rank)]
    return (em.pad(out, [0] * form.rank + tail) if any(tail) else out), \
        tuple(f"scatter x1/{f.k}" for f in form.axes.values())


def emit_generic(em: Emitter, dy: str, x: str, form: DownsampleForm) -> str:
    """Run-time lengths: the scattered rows, and an If that pads the tail rows with zeros where there are any (the
    Pad is a full copy even with zero pads), or takes the gathered spelling there where blocks have unreached rows;
    the gathered spelling alone where `form.gathered`."""
    if form.gathered:
        return emit_gathered(em, dy, x, form)
    src, sy = em.scale(dy, form.weight), em.node("Shape", [dy], "dyshape")
    mask = _reach_mask(em, sy, form) if form.masked else None
    ks = em.const([form.axes[a].k if a in form.axes else 1 for a in range(form.rank)], "ks", np.int64)
    tail = em.node("Sub", [em.node("Shape", [x], "xshape"), em.node("Mul", [sy, ks], "blocks")], "tail")
    whole = em.node("Equal", [em.node("ReduceMax", [tail], "longest", keepdims=0), em.const(0, "none", np.int64)],
                    "whole")

    def padded() -> str:
        pads = em.node("Concat", [em.const([0] * form.rank, "head", np.int64), tail], "pads", axis=0)
        return em.node("Pad", [_scattered(em, src, mask, form), pads], "padded")
    on_tail = (lambda: emit_gathered(em, dy, x, form)) if form.masked else padded
    return emit_if(em, whole, lambda: _scattered(em, src, mask, form), on_tail, "scattered")


def emit_gathered(em: Emitter, dy: str, x: str, form: DownsampleForm) -> str:
    """Run-time lengths: the gathered spelling (gathered) on dY's and X's run-time shapes."""
    known = form.channels if form.channels and 1 not in form.axes else 1          # a factor of dY's size
    return gathered(em, dy, em.node("Shape", [dy], "dyshape"), em.node("Shape", [x], "xshape"), form, known)


def gathered(em: Emitter, dy: str, sy: str, sx: str, form: DownsampleForm, known: int) -> str:
    """dX where blocks have rows dY does not reach (nearest, linear x1/4) or onnxruntime's Resize has no fast kernel,
    from dY's and X's shapes `sy`, `sx`: the last axis (where resized) by one MatMul of rows of b dY values with
    kron(I_b, the block's weights) (each dY value writes its k X values, so rows of b need only divide dY's size:
    b from row_values, an If on the size where `known`, a factor of it, does not guarantee the widest), each
    other axis by a Gather of whole rows from a zero row padded on (the first Pad adds the last axis's tail too);
    the unreached rows exactly 0. The Resizes and mask Mul of the
    scatter write dX twice more (2 threads, onnxruntime 1.19.2, nearest x1/4, ms: 4x48x224^2 2.9-3.0 -> 1.5,
    8x64x31^2 0.19-0.24 -> 0.11); at x1/2 one Resize and the mask measured 10-20% faster on whole blocks, this
    spelling 30-40% faster with a tail (2x64x160x97: 0.44-0.60 -> 0.30-0.34); unmasked, the one Resize is faster
    (linear x1/2)."""
    last = form.rank - 1
    if last not in form.axes:
        cur, tail = em.scale(dy, form.weight), ""
    else:
        cur = _widened(em, dy, sy, form, known)                         # [.., m, k * m_last]
        tail = em.node("Sub", [dims(em, sx, last, last + 1),
                               em.node("Mul", [dims(em, sy, last, last + 1),
                                               em.const([form.axes[last].k], "k", np.int64)], "whole")], "tail")
    others = sorted((a for a in form.axes if a != last), reverse=True)
    if not others:          # the last axis alone: its tail padded (a Reshape writing dX would copy it too)
        return em.node("Pad", [cur, em.node("Concat", [em.const([0] * (2 * form.rank - 1), "head", np.int64), tail],
                                            "pads", axis=0)], "padded")
    for a in others:
        cur, tail = _rows_gathered(em, cur, sy, sx, a, form, tail), ""
    return cur


def _widened(em: Emitter, dy: str, sy: str, form: DownsampleForm, known: int) -> str:
    """dY's last axis written into its k-row blocks by one MatMul (`gathered`), viewed at dY's other dims."""
    last = form.rank - 1
    widths = row_values(form.axes[last].k)
    narrow = next(b for b in widths if known % b == 0)
    if narrow == widths[0]:
        rows = _block_rows(em, dy, form, narrow)
    else:
        rest = em.node("Mod", [em.node("Size", [dy], "size"), em.const(widths[0], "width", np.int64)], "rest")
        fits = em.node("Equal", [rest, em.const(0, "zero", np.int64)], "fits")
        rows = emit_if(em, fits, lambda: _block_rows(em, dy, form, widths[0]),
                       lambda: _block_rows(em, dy, form, narrow), "block_rows")
    wide = em.node("Concat", [dims(em, sy, 0, last), em.const([-1], "rest", np.int64)], "wide_shape", axis=0)
    return em.node("Reshape", [rows, wide], "widened")


def _static_gathered(em: Emitter, src: str, res: Resampling, form: DownsampleForm) -> str:
    """`gathered` on known lengths: its views, pads and row indices constants; the last axis by one dense MatMul
    (its tail columns zeros of the matrix, no Pad of them) where estimated cheaper (`_last_axis_costs`)."""
    last, k = form.rank - 1, form.axes[form.rank - 1].k
    blocked, dense = _last_axis_costs(res, form)
    if dense < blocked:
        matrix = form.weight * form.axes[last].matrix(res.in_shape[last]).T / form.axes[last].weight   # [m, n]
        cur, tail = em.node("MatMul", [src, em.const(matrix, "dense")], "dense"), 0
    else:
        b = next(b for b in row_values(k) if math.prod(res.out_shape) % b == 0)
        cur = em.reshape(_block_rows(em, src, form, b), list(res.out_shape[:last]) + [k * res.out_shape[last]])
        tail = res.in_shape[last] - k * res.out_shape[last]
    for a in sorted((a for a in form.axes if a != last), reverse=True):
        padded = em.pad(cur, [0] * form.rank + [int(x == a) for x in range(last)] + [tail])
        index = em.const(form.axes[a].source_rows(res.in_shape[a]), "index", np.int64)
        cur, tail = em.node("Gather", [padded, index], "gathered", axis=a), 0
    return cur


def gathered_cost(res: Resampling, form: DownsampleForm, itemsize: int = 4) -> float:
    """The estimate of `gathered` (static): the last axis's MatMul (_last_axis_costs), the Pad copies its result (one
    thread), the Gather writes dX."""
    widened = math.prod(res.in_shape) / math.prod(f.k for a, f in form.axes.items() if a != form.rank - 1)
    return min(_last_axis_costs(res, form, itemsize)) + widened * itemsize * PAD_NS_PER_BYTE + \
        2 * math.prod(res.in_shape) * itemsize * ROW_GATHER_NS_PER_BYTE + 3 * NS_PER_NODE


def _last_axis_costs(res: Resampling, form: DownsampleForm, itemsize: int = 4) -> tuple:
    """(blocked, dense) estimates of the static last axis: rows of b dY values (and the Pad of the tail columns, row
    by row), or one dense m x n MatMul (tiny maps: nearest x1/4 8x64x31^2, 2 threads, the blocked MatMul and its
    Pad 0.068-0.093 ms, dense 0.054-0.068)."""
    last = form.rank - 1
    k, n, m = form.axes[last].k, res.in_shape[last], res.out_shape[last]
    dy, rows = math.prod(res.out_shape), math.prod(res.out_shape[:last])
    b = next(b for b in row_values(k) if dy % b == 0)
    moved = dy + rows * n
    blocked = matmul_cost(dy / b, b, k * b, 1, moved, itemsize) + (n > k * m) * rows * PAD_NS_PER_ROW
    return blocked + NS_PER_NODE, matmul_cost(rows, m, n, 1, moved, itemsize)


def _block_rows(em: Emitter, dy: str, form: DownsampleForm, b: int) -> str:
    """[-1, k * b]: dY's values b at a time times kron(I_b, the last axis's block row, the weight of every axis)."""
    f = form.axes[form.rank - 1]
    block = [form.weight if r else 0.0 for r in f.reach]
    rows = em.node("Reshape", [dy, em.const([-1, b], "rows", np.int64)], "rows")
    return em.node("MatMul", [rows, em.const(np.kron(np.eye(b), [block]), "blocks")], "blocked")


def _rows_gathered(em: Emitter, src: str, sy: str, sx: str, axis: int, form: DownsampleForm, tail: str) -> str:
    """src's `axis` (dY's m rows) gathered into X's n rows: block o's reached rows read row o, the others and the
    rows past the last whole block a zero row padded on (with `tail` columns on the last axis where given)."""
    f = form.axes[axis]
    n, m = dims(em, sx, axis, axis + 1), dims(em, sy, axis, axis + 1)
    after = [em.const([1 if a == axis else 0], "pad", np.int64) for a in range(form.rank - 1)]
    after.append(tail or em.const([0], "pad", np.int64))
    pads = em.node("Concat", [em.const([0] * form.rank, "head", np.int64)] + after, "pads", axis=0)
    padded = em.node("Pad", [src, pads], "zero_row")
    rows = em.node("Range", [em.const(0, "zero", np.int64), em.node("Squeeze", [n], "n", **squeeze_axes(em)),
                             em.const(1, "one", np.int64)], "x_rows")
    k = em.const(f.k, "k", np.int64)
    block = em.node("Div", [rows, k], "block")
    reached = em.node("And", [em.node("Gather", [em.const(list(f.reach), "reach", np.bool_),
                                                 em.node("Mod", [rows, k], "offset")], "reached"),
                              em.node("Less", [block, m], "whole")], "reached")
    index = em.node("Where", [reached, block, m], "index")
    return em.node("Gather", [padded, index], "gathered", axis=axis)


def _scattered(em: Emitter, src: str, mask: str | None, form: DownsampleForm) -> str:
    """src's rows repeated k times on H and W (log2(k) nearest Resizes x2: o // 2 // 2 = o // 4), times the mask
    where there is one."""
    scales = [2.0 if a in form.axes else 1.0 for a in range(form.rank)]
    roi = em.const([], "roi", np.float32) if em.opset < 13 else ""
    out = src
    for _ in range(int(math.log2(form.axes[form.rank - 1].k))):
        out = em.node("Resize", [out, roi, em.const(scales, "scales", np.float32)], "repeated",
                      **dict(SCATTER_RESIZE))
    return out if mask is None else em.node("Mul", [out, mask], "reached")


def _reach_mask(em: Emitter, dy_shape: str, form: DownsampleForm) -> str:
    """1 on the block rows dY (of shape `dy_shape`) reaches, 0 on the others, over the resized axes whose blocks
    have rows it does not reach (broadcast over the rest; a Where measured 6 x slower than this Mul); `form.masked`
    holds."""
    mask = ""
    for a, f in form.axes.items():
        if all(f.reach):
            continue
        m = dims(em, dy_shape, a, a + 1)
        rows = em.node("Tile", [em.const([float(r) for r in f.reach], "reach"), m], "rows")
        rows = em.node("Reshape", [rows, em.const([-1] + [1] * (form.rank - 1 - a), "rows_shape", np.int64)], "rows")
        mask = em.node("Mul", [mask, rows], "mask") if mask else rows
    return mask
