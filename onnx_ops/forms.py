"""ONNX spellings of one gradient contraction. Each form is proven against the shared taps.

- kron:    every resized axis is I (x) K (integer factors, the same weights in every block): the last axis
           as one MatMul with a small block-diagonal matrix, the others as ReduceSum (sums) or Gather (spreads)
- block:   every resized axis sums blocks of F outputs (nearest, integer factor): Reshape + ReduceSum
- pool:    the same block sums as one AveragePool (viewed with one channel) times the block size
- resize:  the gradient taps equal (out/in) x the taps of another Resize (e.g. bilinear x2's gradient
           is 4 x an antialiased linear /2 Resize): one onnxruntime Resize node and a Mul
- band / dense: per axis, tiles of X rows each reading a window of dY rows (a Gather, or a Reshape when the
           windows tile dY), then one batched MatMul; one tile is a dense MatMul. Covers every map.
- gather:  per axis Gather + Mul + ReduceSum (kept for tables with edge piles)
The cost model at the end of this file picks among them (onnx_ops.lower._contract).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np
from onnx import helper, numpy_helper

from dml_desc.canonical import AxisMap, Mode, Resampling, Rounding
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.weights import Taps, forward_taps, gradient_taps

DENSE_MAX_COLS = 16
CHUNK = 16           # columns per MatMul row in the kron form: measured fastest on onnxruntime CPU (README)


class SymbolicDim(int):
    """A dim known only at run time, on an axis the node does not resize: 1 in arithmetic (the forms only
    carry it along), read from the tensor's shape where Emitter.reshape needs it."""

    def __new__(cls, axis: int):
        dim = super().__new__(cls, 1)
        dim.axis = axis
        return dim

    def __repr__(self):
        return f"SymbolicDim(axis={self.axis})"


def symbolic_dim(axis: int) -> SymbolicDim:
    """A placeholder for the size of axis `axis` that is only known at run time (read from Shape())."""
    return SymbolicDim(axis)


def is_symbolic(n) -> bool:
    """True when `n` is a SymbolicDim rather than an int."""
    return isinstance(n, SymbolicDim)


@dataclass
class Emitter:
    """Accumulates nodes and initializers under one name prefix."""
    prefix: str
    opset: int
    acc: type
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    count: int = 0
    dims_from: str = ""   # a tensor whose shape gives the run-time (symbolic) dims, by axis

    def name(self, what: str) -> str:
        """A fresh tensor name under the prefix: `<prefix>_<what><k>`."""
        self.count += 1
        return f"{self.prefix}_{what}{self.count}"

    def const(self, value, what: str, dtype=None) -> str:
        """Add an initializer holding `value` (in `dtype`, default the accumulation type); returns its name."""
        name = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype or self.acc), name))
        return name

    def node(self, op: str, inputs: list, what: str, **attrs) -> str:
        """Add one `op` node reading `inputs` with `attrs`; returns its output's name."""
        out = self.name(what)
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def rename(self, src: str, final: str) -> None:
        """Make the node that produced `src` write `final` directly (no trailing copy); an Identity when no node
        of ours produced it (an identity map: dX is dY)."""
        last = next((n for n in reversed(self.nodes) if src in n.output), None)
        if last is None:
            self.nodes.append(helper.make_node("Identity", [src], [final]))
            return
        last.output[list(last.output).index(src)] = final

    def reduce_sum(self, src: str, axes: list, keepdims: int = 0) -> str:
        """ReduceSum over `axes` (an input from opset 13, an attribute before)."""
        if self.opset >= 13:
            return self.node("ReduceSum", [src, self.const(axes, "axes", np.int64)], "sum", keepdims=keepdims)
        return self.node("ReduceSum", [src], "sum", axes=axes, keepdims=keepdims)

    def pad(self, src: str, pads: list) -> str:
        """Zero padding; the pads input exists from opset 11, an attribute before."""
        if self.opset >= 11:
            return self.node("Pad", [src, self.const(pads, "pads", np.int64)], "padded")
        return self.node("Pad", [src], "padded", pads=pads)

    def reshape(self, src: str, shape: list) -> str:
        """Reshape `src` to `shape` (symbolic dims read at run time)."""
        return self.node("Reshape", [src, self.shape(shape)], "view")

    def shape(self, shape: list) -> str:
        """A shape input: a constant, or with symbolic dims read from Shape(dims_from) at run time."""
        if not any(is_symbolic(n) for n in shape):
            return self.const(shape, "shape", np.int64)
        dims = self.node("Shape", [self.dims_from], "dims")
        parts = [self.node("Gather", [dims, self.const([n.axis], "axis", np.int64)], "dim")
                 if is_symbolic(n) else self.const([n], "size", np.int64) for n in shape]
        return self.node("Concat", parts, "shape", axis=0)

    def scale(self, src: str, factor: float) -> str:
        """`src` multiplied by `factor` (no node when it is 1)."""
        return src if factor == 1 else self.node("Mul", [src, self.const(factor, "factor")], "scaled")


def taps_close(a: Taps, b: Taps, factor: float = 1.0) -> bool:
    """True when `a` and `factor` * `b` have the same sparsity and weights equal within float32 rounding."""
    (ra, ca, wa), (rb, cb, wb) = a.merged(), b.merged()
    return (np.array_equal(ra, rb) and np.array_equal(ca, cb)
            and np.allclose(wa, factor * wb, rtol=2e-6, atol=1e-12))


# ---- kron: one small MatMul on the last axis, ReduceSum / Gather on the others ----------------

@dataclass(frozen=True)
class KronForm:
    """The kron form of a gradient: per resized axis a block kernel K (p, q), the other axes' constant weight
    folded into one scale, and the number of last-axis blocks one MatMul row covers.
    """
    kernels: dict        # axis -> K (p, q): block b of p dX entries reads block b of q dY entries
    scale: float         # constant weights of the other axes, folded into the MatMul
    chunk: int           # blocks of the last axis per MatMul row (0: the last axis is not resized)

    def names(self, rank: int) -> tuple:
        """The per-axis form names the lowering report prints (kron-matmul, kron-sum, kron-gather)."""
        def name(a, k):
            p, q = k.shape
            if a == rank - 1:
                return f"kron-matmul {self.chunk * q}->{self.chunk * p}"
            return "kron-sum" if q > 1 else "kron-gather"
        return tuple(name(a, k) for a, k in sorted(self.kernels.items()))


def kron_form(res: Resampling) -> KronForm | None:
    """The kron form, when every resized axis is I (x) K and the axes other than the last have one weight
    per axis (spreads may also skip phases: weight 0). 1x1 kernels only scale."""
    last = len(res.axes) - 1
    kernels = {a: gradient_taps(res.axes[a], res).block_kernel() for a in res.resized_axes}
    if any(k is None for k in kernels.values()):
        return None
    scale = 1.0
    for a, k in list(kernels.items()):
        if a == last and k.size > 1:
            continue
        nonzero = k[k != 0]
        if min(k.shape) > 1 or not len(nonzero) or np.ptp(nonzero) or (k.shape[1] > 1 and len(nonzero) < k.size):
            return None
        scale *= float(nonzero[0])
        if k.size == 1:
            del kernels[a]
    if not kernels:
        return None
    chunk = 0
    if last in kernels:
        chunk = _chunk(res.axes[last].in_size // kernels[last].shape[0], max(kernels[last].shape))
        if not chunk:
            return None
    return KronForm(kernels, scale, chunk)


def _chunk(blocks: int, width: int) -> int:
    """Blocks per MatMul row: the whole axis when it is short, else a divisor giving about CHUNK columns."""
    if blocks * width <= CHUNK:
        return blocks
    b = max(d for d in range(1, max(1, CHUNK // width) + 1) if blocks % d == 0)
    return b if b * width >= CHUNK // 2 else 0


def emit_kron(em: Emitter, src: str, res: Resampling, form: KronForm) -> str:
    """Emit the kron form of the gradient of `res` on `src` (dY): one MatMul on the last axis by a small
    block-diagonal matrix, ReduceSum / Gather on the other resized axes; returns dX's name.
    """
    last = len(res.axes) - 1
    shape, cur, flat = list(res.out_shape), src, False
    late = last not in form.kernels and math.prod(res.in_shape) < math.prod(res.out_shape)   # scale the smaller side
    if last in form.kernels:
        cur, flat = _kron_matmul(em, cur, res, form)
        shape[last] = res.in_shape[last]
    elif not late:
        cur = em.scale(cur, form.scale)
    for spread, a in sorted((k.shape[1] == 1, a) for a, k in form.kernels.items() if a != last):   # sums first
        k = form.kernels[a]
        if spread:
            cur = _spread(em, em.reshape(cur, shape) if flat else cur, k[:, 0], a, shape)
            shape[a] *= k.shape[0]
        else:
            q = k.shape[1]
            cur = em.reduce_sum(em.reshape(cur, shape[:a] + [shape[a] // q, q] + shape[a + 1:]), [a + 1])
            shape[a] //= q
        flat = False
    if late:
        cur = em.scale(cur, form.scale)
    return em.reshape(cur, list(res.in_shape)) if flat else cur


def _kron_matmul(em: Emitter, src: str, res: Resampling, form: KronForm) -> tuple[str, bool]:
    """The last axis: dY rows of `chunk` blocks times kron(I, K^T). Returns (tensor, flattened?)."""
    kernel = form.kernels[len(res.axes) - 1]
    matrix = np.kron(np.eye(form.chunk), kernel.T) * form.scale
    whole = form.chunk * kernel.shape[1] == res.out_shape[-1]
    rows = src if whole else em.reshape(src, [-1, matrix.shape[0]])
    return em.node("MatMul", [rows, em.const(matrix, "kron")], "kron"), not whole


def _spread(em: Emitter, src: str, weights: np.ndarray, axis: int, shape: list) -> str:
    """Each entry along `axis` feeds p outputs; phases of weight 0 read an appended zero row."""
    p = len(weights)
    index = np.arange(shape[axis] * p) // p
    if np.any(weights == 0):
        pads = [0] * (2 * len(shape))
        pads[len(shape) + axis] = 1
        src = em.pad(src, pads)
        index = np.where(np.tile(weights, shape[axis]) == 0, shape[axis], index)
    return em.node("Gather", [src, em.const(index, "index", np.int64)], "spread", axis=axis)


# ---- block: Reshape + ReduceSum -------------------------------------------------------------

def block_factors(res: Resampling) -> dict | None:
    """{axis: (F, weight)} when every resized axis's gradient sums aligned blocks of F outputs, one weight."""
    out = {}
    for a in res.resized_axes:
        k = gradient_taps(res.axes[a], res).block_kernel()
        if k is None or k.shape[0] != 1 or np.ptp(k) != 0:
            return None
        out[a] = (k.shape[1], float(k[0, 0]))
    return out


def emit_block(em: Emitter, src: str, res: Resampling, blocks: dict) -> str:
    """Emit the Reshape + ReduceSum form: each resized axis sums blocks of `blocks[axis][0]` dY entries."""
    shape, sum_axes = [], []
    for a, n in enumerate(res.out_shape):
        if a in blocks:
            f = blocks[a][0]
            shape += [n // f, f]
            sum_axes.append(len(shape) - 1)
        else:
            shape.append(n)
    split = em.reshape(src, shape)
    return em.scale(em.reduce_sum(split, sum_axes), math.prod(w for _, w in blocks.values()))


# ---- pool: one AveragePool ------------------------------------------------------------------

@dataclass(frozen=True)
class PoolForm:
    """Block sums as one AveragePool times the block size: dY viewed as [lead dims, 1, *pooled] (one channel, so
    onnxruntime's NCHWc rewrite, measured 1.5x slower here, leaves it alone), a window on each pooled axis."""
    lead: int            # the axes before the pooled ones, folded into the pool's batch
    kernel: tuple        # the window on each pooled (resized) axis
    scale: float         # prod(F * weight): the mean back to the weighted sum


def pool_form(res: Resampling, blocks: dict | None, opset: int) -> PoolForm | None:
    """The pool form of block sums (`block_factors`) where it measured fastest (the rule above the constants):
    windows of 2 on the last 2 or 3 axes, all of them resized, at an opset whose AveragePool runs on MLAS."""
    if not blocks or opset > POOL_MAX_OPSET or not 2 <= len(blocks) <= 3:
        return None
    lead = len(res.axes) - len(blocks)
    if sorted(blocks) != list(range(lead, len(res.axes))) or any(f != POOL_WINDOW for f, _ in blocks.values()):
        return None
    return PoolForm(lead, (POOL_WINDOW,) * len(blocks), math.prod(f * w for f, w in blocks.values()))


def emit_pool(em: Emitter, src: str, res: Resampling, form: PoolForm) -> str:
    """Emit Reshape + AveragePool + Mul (+ Reshape): exact up to float32 rounding of the mean and the scaling
    (none when the block size is a power of two: it divides and multiplies exactly)."""
    viewed = em.reshape(src, [-1, 1] + list(res.out_shape[form.lead:]))
    mean = em.node("AveragePool", [viewed], "mean", kernel_shape=list(form.kernel), strides=list(form.kernel))
    return em.reshape(em.scale(mean, form.scale), list(res.in_shape))


# ---- resize: one Resize node ----------------------------------------------------------------

def _reverse(ax: AxisMap, rounding=Rounding.ROUND_PREFER_FLOOR) -> AxisMap:
    """A half-pixel map from the gradient's side (out -> in) with onnxruntime's float32 scale."""
    return AxisMap(ax.out_size, ax.in_size, float(np.float32(ax.in_size / ax.out_size)), 0.5, -0.5, rounding)


def resize_candidates(res: Resampling):
    """Canonical maps whose Resize, scaled by a constant, may equal the gradient of `res` (checked by the caller)."""
    rank = len(res.axes)
    ident = [AxisMap.identity(n) for n in res.out_shape]
    for rounding in Rounding:
        axes = list(ident)
        for a in res.resized_axes:
            axes[a] = _reverse(res.axes[a], rounding)
        yield Resampling(tuple(axes), Mode.NEAREST)
    if res.mode is Mode.NEAREST or res.antialias or not set(res.resized_axes) <= set(range(2, rank)):
        return
    axes = list(ident)
    for a in res.resized_axes:
        axes[a] = _reverse(res.axes[a])
    yield Resampling(tuple(axes), res.mode, cubic_coeff_a=res.cubic_coeff_a, antialias=True)


def find_resize(res: Resampling, opset: int):
    """A Resize (canonical, ONNX spelling) whose taps are the gradient's, axis by axis, up to out/in."""
    if opset < 11:                     # Resize-10 has no coordinate_transformation_mode
        return None
    for cand in resize_candidates(res):
        if cand.antialias and opset < 18:
            continue
        if all(taps_close(gradient_taps(res.axes[a], res), forward_taps(cand.axes[a], cand),
                          res.axes[a].out_size / res.axes[a].in_size) for a in res.resized_axes):
            try:   # Resize-19 is the newest schema: read opsets above 21 as 21
                spelling, _ = onnx_conv.from_canonical(cand, opset=max(opset, 11) if opset < 18 else min(opset, 21),
                                                       semantics=onnx_conv.STAND_IN_SEMANTICS)
            except Exception:
                continue
            if spelling.sizes is not None and any(is_symbolic(n) for n in spelling.sizes):
                continue                   # sizes would bake a run-time dim
            return cand, spelling
    return None


def emit_resize(em: Emitter, src: str, res: Resampling, spelling) -> str:
    """Emit one ONNX Resize of `src` as `spelling` (an OnnxResize: scales or sizes) at the emitter's opset."""
    inputs = [src, "", em.const(spelling.scales, "scales", np.float32)] if spelling.scales is not None else \
        [src, "", "", em.const(spelling.sizes, "sizes", np.int64)]
    if em.opset < 13:
        inputs[1] = em.const([], "roi", np.float32)
    factor = math.prod(res.axes[a].out_size / res.axes[a].in_size for a in res.resized_axes)
    if math.prod(res.out_shape) < math.prod(res.in_shape):      # scale on the smaller side
        inputs[0] = em.scale(src, factor)
        return em.node("Resize", inputs, "resized", **spelling.attributes)
    return em.scale(em.node("Resize", inputs, "resized", **spelling.attributes), factor)


# ---- gather / dense: one axis at a time -----------------------------------------------------

def split_piles(taps: Taps) -> tuple[Taps, list]:
    """Rows far wider than the rest (outputs piled on an edge by clamping) come out as (row, first, weights)
    so the gather table keeps its typical width and the cost stays linear."""
    counts = (taps.weight != 0).sum(axis=1)
    typical = int(np.median(counts[counts > 0])) if np.any(counts) else 1
    heavy = np.flatnonzero(counts > 4 * typical + 4)
    if not len(heavy):
        return taps, []
    piles = []
    index, weight = taps.index.copy(), taps.weight.copy()
    for r in heavy:
        cols = index[r][weight[r] != 0]
        first, last = int(cols.min()), int(cols.max())
        dense = np.zeros(last - first + 1)
        np.add.at(dense, cols - first, weight[r][weight[r] != 0])
        piles.append((int(r), first, dense))
        weight[r] = 0
    order = np.argsort(weight == 0, axis=1, kind="stable")       # nonzero entries first
    index, weight = np.take_along_axis(index, order, 1), np.take_along_axis(weight, order, 1)
    width = max(int((weight != 0).sum(axis=1).max()), 1)
    return Taps(index[:, :width], weight[:, :width], taps.cols), piles


def emit_axis(em: Emitter, src: str, taps: Taps, axis: int, rank: int) -> tuple[str, str]:
    """Emit the gather form for one axis: per input index the few dY entries touching it (Gather + Mul +
    ReduceSum, plus MatMul piles); returns (output name, form name).
    """
    light, piles = split_piles(taps)
    out, form = _emit_gather(em, src, light, axis, rank)
    for row, first, weights in piles:
        cols = em.const(np.arange(first, first + len(weights)), "pile_index", np.int64)
        shape = [len(weights)] + [1] * (rank - axis - 1)
        part = em.node("Mul", [em.node("Gather", [src, cols], "pile", axis=axis), em.const(weights.reshape(shape),
                                                                                          "pile_weight")], "piled")
        pads = [0] * (2 * rank)
        pads[axis], pads[rank + axis] = row, taps.rows - row - 1
        out = em.node("Add", [out, em.pad(em.reduce_sum(part, [axis], keepdims=1), pads)], "unpiled")
    return out, form + (f" + {len(piles)} edge pile(s)" if piles else "")


def _emit_gather(em: Emitter, src: str, taps: Taps, axis: int, rank: int) -> tuple[str, str]:
    if axis == rank - 1 and taps.cols <= DENSE_MAX_COLS and taps.cols <= 2 * taps.width:
        return em.node("MatMul", [src, em.const(taps.dense().T, "matrix")], "dense"), "dense"
    if taps.width == 1:
        g = em.node("Gather", [src, em.const(taps.index[:, 0], "index", np.int64)], "gathered", axis=axis)
        if np.all(taps.weight == 1):
            return g, "gather"
        weight = taps.weight[:, 0].reshape([taps.rows] + [1] * (rank - axis - 1))
        return em.node("Mul", [g, em.const(weight, "weight")], "weighted"), "gather"
    g = em.node("Gather", [src, em.const(taps.index, "index", np.int64)], "gathered", axis=axis)
    weight = taps.weight.reshape([taps.rows, taps.width] + [1] * (rank - axis - 1))
    w = em.node("Mul", [g, em.const(weight, "weight")], "weighted")
    return em.reduce_sum(w, [axis + 1]), f"gather-sum x{taps.width}"


# ---- band: windows of dY per tile of X, one batched MatMul per axis -------------------------

@dataclass(frozen=True)
class Band:
    """One resized axis as tiles of `tile` X rows, each reading a window of `width` consecutive dY rows:
    dX[t*tile + i] = sum_j matrices[t][i, j] * dY[starts[t] + j]. One matrix when every tile has the same."""
    axis: int
    tile: int
    width: int
    starts: np.ndarray          # (tiles,)
    matrices: np.ndarray        # (tiles, tile, width), or (1, tile, width) when shared
    cols: int                   # dY rows on this axis

    @property
    def tiles(self) -> int:
        """The number of tiles of X rows."""
        return len(self.starts)

    @property
    def contiguous(self) -> bool:
        """Windows side by side, no overlap: a Reshape instead of a Gather."""
        return bool(np.array_equal(self.starts, np.arange(self.tiles) * self.width)) and \
            self.tiles * self.width == self.cols

    @property
    def shared(self) -> bool:
        """True when every tile uses the same matrix."""
        return self.matrices.shape[0] == 1

    @property
    def dense(self) -> bool:
        """True when there is one tile reading every dY row (a plain MatMul)."""
        return self.tiles == 1 and self.width == self.cols

    def name(self) -> str:
        """The form name the report prints, e.g. 'band 8x4->2, shared'."""
        kind = "dense" if self.dense else "band"
        return f"{kind} {self.tiles}x{self.width}->{self.tile}" + (", shared" if self.shared and self.tiles > 1 else "")


def band(taps: Taps, axis: int, tile: int) -> Band | None:
    """The band spelling of one axis's gradient taps with `tile` X rows per tile (tile divides the axis); None
    when its matrices would exceed MAX_BAND_ENTRIES (built from the sparse taps, never from a dense matrix)."""
    n, m = taps.rows, taps.cols
    if n % tile:
        return None
    tiles = n // tile
    r, c, w = taps.merged()
    t = r // tile
    lo = np.zeros(tiles, np.int64)
    hi = np.ones(tiles, np.int64)
    used = np.unique(t)
    lo[used] = np.minimum.reduceat(c, np.searchsorted(t, used)) if len(c) else 0
    hi[used] = np.maximum.reduceat(c, np.searchsorted(t, used)) + 1 if len(c) else 1
    width = int(min(m, (hi - lo).max()))
    if n * width > MAX_BAND_ENTRIES:
        return None
    starts = np.minimum(lo, m - width)
    mats = np.zeros((tiles, tile, width))
    np.add.at(mats, (t, r % tile, c - starts[t]), w)
    if np.all(mats == mats[:1]):
        mats = mats[:1]
    return Band(axis, tile, width, starts.astype(np.int64), mats, m)


def shared_band(taps: Taps, axis: int, tile: int) -> Band | None:
    """One matrix for every tile: windows step by m*tile/n dY rows (periodic weights, e.g. integer factors);
    the window indices clamp at the edges, the way resampling clamps. Proven against the taps: same
    sparsity, weights within float32 rounding."""
    n, m = taps.rows, taps.cols
    if n % tile or (m * tile) % n or n // tile < 3:
        return None
    step, mid = m * tile // n, (n // tile) // 2
    inner = band(Taps(taps.index[mid * tile:(mid + 1) * tile], taps.weight[mid * tile:(mid + 1) * tile], m), 0, tile)
    if inner.width > m:
        return None
    starts = np.arange(n // tile) * step + (int(inner.starts[0]) - mid * step)
    plan = Band(axis, tile, inner.width, starts, inner.matrices, m)
    return plan if _band_matches(plan, taps) else None


BAND_CHECK_ROWS = 2 ** 20      # band entries (rows x width) materialised at a time when a band is checked


def band_taps(plan: Band, cols: int, tiles: slice = slice(None)) -> Taps:
    """The table a band computes (rows = X rows), window indices clamped as the emitted Gather clamps them;
    `tiles` limits it to those tiles' rows (memory: rows x width, so callers walk long axes in slices)."""
    first, stop, _ = tiles.indices(plan.tiles)
    rows = np.arange(first * plan.tile, stop * plan.tile)
    t = rows // plan.tile
    mats = plan.matrices[np.zeros_like(t) if plan.shared else t, rows % plan.tile]     # (rows, width)
    index = np.clip(plan.starts[t][:, None] + np.arange(plan.width), 0, cols - 1)
    return Taps(index, mats, cols)


def band_dense(plan: Band, cols: int) -> np.ndarray:
    """The (rows, cols) matrix a band computes, window indices clamped."""
    return band_taps(plan, cols).dense()


def _band_matches(plan: Band, taps: Taps) -> bool:
    """Same nonzero pattern as the taps, weights within float32 rounding (compared sparsely: O(rows x width))."""
    rw, cw, ww = taps.merged()
    step = max(1, BAND_CHECK_ROWS // max(plan.tile * plan.width, 1))       # tiles per slice: bounded memory
    for lo in range(0, plan.tiles, step):
        hi = min(plan.tiles, lo + step)
        rg, cg, wg = band_taps(plan, taps.cols, slice(lo, hi)).merged()
        part = slice(*np.searchsorted(rw, [lo * plan.tile, hi * plan.tile]))
        if not (np.array_equal(rg + lo * plan.tile, rw[part]) and np.array_equal(cg, cw[part])
                and np.allclose(wg, ww[part], rtol=2e-6, atol=1e-12)):
            return False
    return True


def emit_band(em: Emitter, src: str, plan: Band, shape: list) -> str:
    """Contract axis `plan.axis` of `src` (of shape `shape`; leading dims may be symbolic: the Reshapes keep
    them with 0). On the last axis every tile must share one matrix (one MatMul over all windows);
    `emit_band_transposed` handles per-tile matrices there."""
    a, rank = plan.axis, len(shape)
    keep, rest, m = [0] * a, list(shape[a + 1:]), shape[a]
    if plan.dense:
        if a == rank - 1:
            return em.node("MatMul", [src, em.const(plan.matrices[0].T, "dense")], "dense")
        flat = src if len(rest) == 1 else em.reshape(src, keep + [m, _flat(rest)])
        out = em.node("MatMul", [em.const(plan.matrices[0], "dense"), flat], "dense")
        return out if len(rest) == 1 else em.reshape(out, keep + [plan.tile] + rest)
    if plan.contiguous:
        windows = em.reshape(src, keep + [plan.tiles, plan.width] + rest)
    else:
        index = np.clip(plan.starts[:, None] + np.arange(plan.width), 0, m - 1)
        windows = em.node("Gather", [src, em.const(index, "window", np.int64)], "windows", axis=a)
    if a == rank - 1:                  # (..., tiles, width) @ (width, tile)
        if not plan.shared:
            raise ValueError("a band on the last axis needs one shared matrix (use emit_band_transposed)")
        out = em.node("MatMul", [windows, em.const(plan.matrices[0].T, "band")], "band")
        return em.reshape(out, keep + [plan.tiles * plan.tile])
    if len(rest) != 1:
        windows = em.reshape(windows, keep + [plan.tiles, plan.width, _flat(rest)])
    mats = plan.matrices[0] if plan.shared else plan.matrices
    out = em.node("MatMul", [em.const(mats, "band"), windows], "band")
    return em.reshape(out, keep + [plan.tiles * plan.tile] + rest)


def emit_band_transposed(em: Emitter, src: str, plan: Band, shape: list) -> str:
    """The last axis with per-tile matrices: swap the last two axes, contract, swap back."""
    rank = len(shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    swapped = em.node("Transpose", [src], "swapped", perm=perm)
    moved = Band(rank - 2, plan.tile, plan.width, plan.starts, plan.matrices, plan.cols)
    out = emit_band(em, swapped, moved, [shape[p] for p in perm])
    return em.node("Transpose", [out], "unswapped", perm=perm)


def _flat(dims: list) -> int:
    """The product of trailing dims, or -1 (inferred) when one is known only at run time."""
    return -1 if any(is_symbolic(d) for d in dims) else math.prod(dims)


# ---- the cost model: which spelling to emit --------------------------------------------------
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
MAX_TILE = 64
MAX_BAND_ENTRIES = 1 << 24    # a band's matrices (X rows x window), as constants in the model: 64 MiB in float32


def matmul_cost(rows: float, k: int, n: float, gemms: float, moved: float, itemsize: int) -> float:
    """rows x k times k x n (summed over `gemms` matrices), reading and writing `moved` values."""
    macs = rows * k * max(n, MLAS_COLUMNS)
    return rows * NS_PER_ROW + gemms * NS_PER_GEMM + max(moved * itemsize * NS_PER_BYTE * PIPELINE,
                                                          macs * NS_PER_MAC) + NS_PER_NODE


def gather_cost(source: float, out: float, blocks: float, itemsize: int) -> float:
    """The cost model of a gather/band contraction in ns: bytes moved, blocks and one node's overhead."""
    return (source + out) * itemsize * NS_PER_BYTE * PIPELINE + blocks * NS_PER_BLOCK + NS_PER_NODE


def _swapped(shape: list) -> list:
    return list(shape[:-2]) + [shape[-1], shape[-2]]


def _band_cost(plan: Band, shape: list, n: int, itemsize: int) -> float:
    """Windows (a Gather unless they are a Reshape) + one MatMul, on a tensor of `shape`."""
    a, m = plan.axis, shape[plan.axis]
    lead, trail = math.prod(shape[:a]), math.prod(shape[a + 1:])
    windows = lead * plan.tiles * plan.width * trail
    gathered = not (plan.dense or plan.contiguous)
    cost = gather_cost(lead * m * trail, windows, lead * plan.tiles * plan.width, itemsize) if gathered else 0.0
    moved = windows + lead * n * trail + plan.matrices.size
    if a == len(shape) - 1:
        return cost + matmul_cost(lead * plan.tiles, plan.width, plan.tile, 1, moved, itemsize)
    return cost + matmul_cost(lead * n, plan.width, trail, lead * plan.tiles, moved, itemsize)


@dataclass(frozen=True)
class AxisPlan:
    """How one axis is contracted: a band (dense when one tile), transposed around it on the last axis
    when its tiles have different matrices, or the gather form."""
    axis: int
    kind: str                 # "band", "band-t" or "gather"
    band: Band | None
    cost: float

    def name(self) -> str:
        """The form name the report prints for this axis."""
        if self.kind == "gather":
            return "gather"
        return self.band.name() + (", transposed" if self.kind == "band-t" else "")


def axis_options(taps: Taps, axis: int, shape: list, itemsize: int) -> list:
    """Every spelling of one axis's contraction on a tensor of `shape`, each with its estimated cost."""
    m, n, last = shape[axis], taps.rows, axis == len(shape) - 1
    rest = math.prod(shape) / m
    light, piles = split_piles(taps)       # Gather + Mul + ReduceSum over K taps: measured ~12 passes of K x dX
    gathered = rest * (m + 12 * n * light.width + n) + 2 * light.index.size + sum(len(w) for _, _, w in piles)
    out = [AxisPlan(axis, "gather", None, gathered * itemsize * NS_PER_BYTE + (3 + 6 * len(piles)) * NS_PER_NODE)]
    swap = 2 * rest * (m + n) * itemsize * NS_PER_BYTE * 3 * PIPELINE + 2 * NS_PER_NODE    # two Transposes
    tiles = {n} | {t for t in range(1, min(n, MAX_TILE) + 1) if n % t == 0}
    for tile in sorted(tiles, reverse=True):           # on a tie, the larger tile (fewer, larger GEMMs) wins
        for plan in (shared_band(taps, axis, tile), band(taps, axis, tile)):
            if plan is None:
                continue
            direct = not last or plan.shared
            if not direct and len(shape) < 2:
                continue
            costed = plan if direct else replace(plan, axis=len(shape) - 2)
            cost = _band_cost(costed, shape if direct else _swapped(shape), n, itemsize) + (0 if direct else swap)
            out.append(AxisPlan(axis, "band" if direct else "band-t", plan, cost))
    return out


def plan_axes(res: Resampling, itemsize: int = 4) -> tuple:
    """(per-axis plans in the order to apply them, estimated ns): the cheapest order and spelling."""
    if not res.resized_axes:
        return [], 0.0
    best = (None, math.inf)
    taps = {a: gradient_taps(res.axes[a], res) for a in res.resized_axes}
    options = {}
    for order in itertools.permutations(res.resized_axes):
        shape, plans, total = list(res.out_shape), [], 0.0
        for a in order:
            key = (a, tuple(shape))
            if key not in options:
                options[key] = min(axis_options(taps[a], a, shape, itemsize), key=lambda p: p.cost)
            plans.append(options[key])
            total += plans[-1].cost
            shape[a] = res.in_shape[a]
        last = plans[-1]
        if last.kind == "band" and not last.band.dense:      # a Reshape writing dX is a full copy
            total += 2 * math.prod(res.in_shape) * itemsize * NS_PER_BYTE
        if total < best[1]:
            best = (plans, total)
    return best


def emit_plan(em: Emitter, src: str, res: Resampling, plans: list) -> tuple:
    """Emit each axis's plan (band, transposed band or gather) in turn; returns (dX's name, form names)."""
    shape, cur, names = list(res.out_shape), src, []
    for p in plans:
        if p.kind == "gather":
            cur, name = emit_axis(em, cur, gradient_taps(res.axes[p.axis], res), p.axis, len(shape))
        else:
            emit = emit_band if p.kind == "band" else emit_band_transposed
            cur, name = emit(em, cur, p.band, shape), p.name()
        names.append(name)
        shape[p.axis] = res.in_shape[p.axis]
    return cur, tuple(names)


def resize_cost(res: Resampling, cand: Resampling, itemsize: int = 4) -> float:
    """One onnxruntime Resize: its input and output once, plus every filter tap (separable passes)."""
    taps, shape = 0.0, list(res.out_shape)
    for a in reversed(res.resized_axes):
        shape[a] = res.in_shape[a]
        taps += math.prod(shape) * forward_taps(cand.axes[a], cand).width
    moved = (math.prod(res.out_shape) + math.prod(res.in_shape)) * itemsize
    return moved * NS_PER_BYTE + taps * NS_PER_TAP + 2 * NS_PER_NODE   # moved is in bytes


def kron_cost(res: Resampling, form: KronForm, itemsize: int = 4) -> float:
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
