"""filter conv: an integer-factor linear or cubic gradient as a strided correlation per axis, spelled as one
depthwise Conv with the outer-product kernel or one depthwise Conv per axis (separable). One spelling serves the
static lowering (a registry form, checked at the node's lengths) and the shape-generic one
(onnx_ops.lowering.generic_forms, proven for every length).

Per axis, dX[i] = sum_j kernel[j] * P(dY)[f * i + j]: P pads dY by (pad_begin, pad_end) with zeros (the Conv's own
`pads`, no copy), or mirrors its edge (a Pad or reversed Slices: a copy of dY). Two cheaper spellings of a mirror:
- edge scaled: where the mirrored rows feed only the output that already reads dY's edge row, scaling that row
  by s (one Mul of dY by a small per-axis table) and zero padding give the same matrix: measured 7.6 ms against
  10.6 for the edge Pad (bilinear x2, X 6x40x96^2, 2 threads, docs/dynamic-forms.md);
- folded: the correlation runs over q virtual rows beyond each edge and adds them onto the edge rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from onnx import TensorProto, numpy_helper

from dml_desc.canonical import Mode, Resampling
from dml_desc.weights import gradient_taps

from .deconv import row_kernel
from .emitter import Emitter, is_symbolic

FILTER_FACTORS = (2, 4, 8)   # linear / cubic factors taken (float32 coordinates exact: onnx_ops.lowering.generic_forms)
SEPARABLE_TAPS = 16   # above this many taps per output the separable conv beats the one Conv (docs/dynamic-forms.md)
VARIANTS = ((False, 0), (True, 0), (False, 1), (False, 2), (False, 3))   # (symmetric, fold), in the order tried
NAME = "filter-conv"
EDGE_SCALE_MIN_OPSET = 10   # the run-time edge table is cut to its length (Slice's inputs)


@dataclass(frozen=True)
class AxisForm:
    """One axis: dX[i] = sum_j kernel[j] * P(dY)[factor * i + j], P padding dY by (pad_begin, pad_end) with
    zeros or symmetrically (P[-k] = dY[k-1]: the edge mirrored, edge replication for pads of 1). With `fold` = q > 0
    (zero padding) the correlation runs over the q virtual rows beyond each edge too and folds them onto the edge
    rows: dX = E^T C^T dY, where the forward reads X through E, X's edge replicated by q (index clamping, as cubic
    does). `edge_scale` = (s, t): dY's first row times s and its last times t before a zero-padded correlation."""
    factor: int
    kernel: tuple
    pad_begin: int
    pad_end: int
    symmetric: bool
    fold: int = 0
    edge_scale: tuple = ()

    @property
    def block(self) -> bool:
        """True for a plain block sum of `factor` entries with one weight (no padding)."""
        return self.pad_begin == self.pad_end == self.fold == 0 and len(set(self.kernel)) == 1

    def entries(self, n: int) -> tuple:
        """(row, col, weight) of the (n, f*n) matrix this form computes for length n: each pair once, sorted (as
        dml_desc.weights.Taps.merged)."""
        f, k, m = self.factor, np.asarray(self.kernel, float), self.factor * n
        i = np.arange(-self.fold, n + self.fold)
        col = f * i[:, None] - self.pad_begin + np.arange(len(k))[None, :]
        if self.symmetric:
            col = np.where(col < 0, -col - 1, np.where(col >= m, 2 * m - 1 - col, col))
        weight = np.broadcast_to(k, col.shape).copy()
        if self.edge_scale:
            weight = weight * np.where(col == 0, self.edge_scale[0], 1) * np.where(col == m - 1, self.edge_scale[1], 1)
        row = np.broadcast_to(np.clip(i, 0, n - 1)[:, None], col.shape)
        keep = (col >= 0) & (col < m) & (weight != 0)
        uniq, inv = np.unique(row[keep] * m + col[keep], return_inverse=True)
        return uniq // m, uniq % m, np.bincount(inv.ravel(), weights=weight[keep], minlength=len(uniq))

    def matrix(self, n: int) -> np.ndarray:
        """The dense (n, f*n) matrix (the oracle the shape-generic proof compares)."""
        out = np.zeros((n, self.factor * n))
        row, col, weight = self.entries(n)
        out[row, col] = weight
        return out

    def name(self) -> str:
        """e.g. 'conv x2 (zero pad 1+1, edge rows scaled)', 'conv x2 (zero pad 3+3, fold 2)'."""
        text = f"conv x{self.factor} ({'symmetric' if self.symmetric else 'zero'} pad {self.pad_begin}+{self.pad_end}"
        return text + (f", fold {self.fold}" if self.fold else "") + (", edge rows scaled)" if self.edge_scale else ")")


def variants(base: AxisForm) -> list:
    """The candidate spellings of one kernel: zero or symmetric padding, then folds of 1-3 rows."""
    return [replace(base, symmetric=s, fold=q) for s, q in VARIANTS]


def emitted(form: AxisForm, holds, opset: int) -> AxisForm:
    """The spelling emitted for a proven `form`: a mirror becomes edge scaling, else (wider than 1) zero padding
    with a fold, where `holds(candidate)` proves the candidate's matrix equal; otherwise the mirror itself."""
    if not form.symmetric:
        return form
    scaled = edge_scaled(form) if opset >= EDGE_SCALE_MIN_OPSET else None
    folded = replace(form, symmetric=False, fold=1) if max(form.pad_begin, form.pad_end) > 1 else None
    return next((c for c in (scaled, folded) if c is not None and holds(c)), form)


def edge_scaled(form: AxisForm, n: int = 16) -> AxisForm | None:
    """The mirrored `form` as zero padding with dY's edge rows scaled, where at length `n` each edge column of the
    mirrored matrix is a multiple of the zero-padded one's (the caller proves the whole matrix)."""
    zero, mirrored = replace(form, symmetric=False).matrix(n), form.matrix(n)
    scales = []
    for c in (0, form.factor * n - 1):
        rows = np.flatnonzero(zero[:, c])
        if not len(rows) or not np.array_equal(rows, np.flatnonzero(mirrored[:, c])):
            return None
        ratio = mirrored[rows, c] / zero[rows, c]
        if not np.allclose(ratio, ratio[0], rtol=0, atol=1e-12):
            return None
        scales.append(float(ratio[0]))
    return replace(form, symmetric=False, edge_scale=tuple(scales))


# ---- the static registry form --------------------------------------------------------------------------

@dataclass(frozen=True)
class FilterConv:
    """A whole gradient as filter convs: the emitted AxisForm of each resized axis, the rank, X's channels (None
    when known only at run time) and the spelling (`split`: one Conv per axis; None: by SEPARABLE_TAPS)."""
    axes: dict
    rank: int
    channels: int | None
    split: bool | None = None

    @property
    def taps(self) -> int:
        """Multiply-adds per output of the one-Conv spelling: the outer product's size."""
        return math.prod(len(f.kernel) for f in self.axes.values())

    @property
    def edge_scaled(self) -> bool:
        """True when some axis scales dY's edge rows (one Mul of dY)."""
        return any(f.edge_scale for f in self.axes.values())

    @property
    def folds(self) -> int:
        """The number of folded axes."""
        return sum(1 for f in self.axes.values() if f.fold)

    @property
    def separable(self) -> bool:
        """One Conv per axis (by rule: more than SEPARABLE_TAPS taps per output), else one Conv."""
        return self.taps > SEPARABLE_TAPS if self.split is None else self.split

    def names(self, prefix: str = "") -> tuple:
        """The per-axis report names, e.g. 'separable conv x2 (zero pad 3+3, fold 2)'."""
        kind = "separable " if self.separable else ""
        return tuple(f"{prefix}{kind}{f.name()}" for _, f in sorted(self.axes.items()))


def filter_conv_form(res: Resampling, opset: int) -> FilterConv | None:
    """The static filter-conv form: every resized axis spatial (2.. of a 3-5-D map) with an integer factor in
    FILTER_FACTORS and a correlation whose matrix equals the gradient taps at this length; None otherwise."""
    rank = len(res.axes)
    if res.mode is Mode.NEAREST or res.antialias or not 3 <= rank <= 5 or not res.resized_axes \
            or min(res.resized_axes) < 2:
        return None
    axes = {}
    for a in res.resized_axes:
        form = _axis_form(res, a, opset)
        if form is None:
            return None
        axes[a] = form
    channels = res.in_shape[1]
    return FilterConv(axes, rank, None if is_symbolic(channels) else int(channels))


def _axis_form(res: Resampling, a: int, opset: int) -> AxisForm | None:
    ax = res.axes[a]
    n, m = ax.in_size, ax.out_size
    if is_symbolic(n) or n < 1 or m % n or m // n not in FILTER_FACTORS:
        return None
    taps = gradient_taps(ax, res).merged()
    base = _middle_row_form(taps, n, m // n)
    if base is None:
        return None

    def holds(form: AxisForm) -> bool:
        return _same(form.entries(n), taps)
    form = next((v for v in variants(base) if holds(v)), None)
    return form and emitted(form, holds, opset)


def _middle_row_form(taps: tuple, n: int, f: int) -> AxisForm | None:
    """The kernel and pads read from the middle row of a sparse table (rows = X, cols = dY), zero padded."""
    row, col, weight = taps
    found = row_kernel(col[row == n // 2], weight[row == n // 2], n // 2, f)
    return AxisForm(f, tuple(float(w) for w in found[0]), found[1], found[2], False) if found else None


def _same(a: tuple, b: tuple) -> bool:
    return (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
            and np.allclose(a[2], b[2], rtol=0, atol=1e-12))


def emit_static(em: Emitter, src: str, res: Resampling, form: FilterConv) -> tuple:
    """(dX, per-axis report names) of the registry form."""
    return emit_filter_conv(em, src, res.in_shape, form), form.names()


# ---- emission (static and shape-generic) ---------------------------------------------------------------

def emit_filter_conv(em: Emitter, dy: str, x, form: FilterConv) -> str:
    """dY contracted by `form`: the edge scales (one Mul), the remaining mirrors (one Pad or Slices + Concat), the
    Convs with their zero pads, then the folds. `x`: X's name, or its dims (static)."""
    rank = form.rank
    src = _mirrored(em, _edge_scaled(em, dy, x, form.axes, rank), form.axes, rank)
    spatial = range(2, rank)
    if form.separable:
        convs = [(np.asarray(f.kernel).reshape([len(f.kernel) if b == a else 1 for b in spatial]),
                  [f.factor if b == a else 1 for b in spatial], _conv_pads({a: f}, rank))
                 for a, f in sorted(form.axes.items())]
    else:
        kernel, strides = np.ones(()), []
        for a in spatial:
            f = form.axes.get(a)
            kernel = np.multiply.outer(kernel, np.asarray(f.kernel) if f else np.ones(1))
            strides.append(f.factor if f else 1)
        convs = [(kernel, strides, _conv_pads(form.axes, rank))]
    return _convolved(em, src, dy, x, form, convs)


def _conv_pads(axes: dict, rank: int) -> list:
    """A Conv's `pads` for the zero-padded axes (the folds' virtual rows included)."""
    pads = [0] * (2 * (rank - 2))
    for a, f in axes.items():
        if not f.symmetric:
            pads[a - 2], pads[rank - 2 + a - 2] = f.pad_begin + f.factor * f.fold, f.pad_end + f.factor * f.fold
    return pads


def _convolved(em: Emitter, src: str, dy: str, x, form, convs: list) -> str:
    """The Convs (kernel, strides, pads) in turn on src, depthwise (C static) or on one channel; the folds."""
    rank, channels = form.rank, form.channels
    groups = channels if isinstance(channels, int) else 1
    if groups == 1 and channels != 1:         # C symbolic: one channel, N*C as the batch
        view = em.node("Concat", [em.const([-1, 1], "lead", np.int64),
                                  dims(em, em.node("Shape", [src], "padshape"), 2, rank)], "one_channel", axis=0)
        src = em.node("Reshape", [src, view], "viewed")
    out = src
    for kernel, strides, pads in convs:
        weights = np.broadcast_to(kernel, (groups, 1) + kernel.shape).astype(em.acc)
        out = em.node("Conv", [out, em.const(weights, "generic_kernel")], "conv", kernel_shape=list(kernel.shape),
                      strides=strides, group=groups, **({"pads": pads} if any(pads) else {}))
    if groups == 1 and channels != 1:       # back to [N, C, conv's spatial dims] (longer than X's where folded)
        back = em.node("Concat", [dims(em, em.node("Shape", [dy], "dyshape"), 0, 2),
                                  dims(em, em.node("Shape", [out], "convshape"), 2, rank)], "unview", axis=0)
        out = em.node("Reshape", [out, back], "unviewed")
    for a, f in sorted(form.axes.items()):
        if f.fold:
            out = _fold(em, out, x, a, f.fold, rank)
    return out


def dims(em: Emitter, shape: str, start: int, end: int) -> str:
    """shape[start:end] (a Slice of a shape tensor)."""
    return em.node("Slice", [shape, em.const([start], "start", np.int64), em.const([end], "end", np.int64)], "dims")


def _length(em: Emitter, x, axis: int) -> str:
    """[X's length on `axis`]: a constant where `x` is static dims, else read from Shape(x)."""
    if isinstance(x, (tuple, list)) and not is_symbolic(x[axis]):
        return em.const([int(x[axis])], "length", np.int64)
    return dims(em, em.node("Shape", [x], "xshape"), axis, axis + 1)


def _fold(em: Emitter, z: str, x, axis: int, q: int, rank: int) -> str:
    """z (length n + 2q along `axis`: q virtual rows beyond each edge) folded to length n: the first row is the sum
    of z's first q + 1 rows, the last row of its last q + 1, the rows between are copied once (Slice + Concat: two
    passes over dX). Where n is 1 (known only at run time) the first row sums all of z and the last is cut away."""
    big = np.iinfo(np.int64).max

    def rows(start, end):
        ends = end if isinstance(end, str) else em.const([end], "end", np.int64)
        return em.node("Slice", [z, em.const([start], "start", np.int64), ends, em.const([axis], "axis", np.int64)],
                       "part")

    if isinstance(x, (tuple, list)) and not is_symbolic(x[axis]):
        if int(x[axis]) == 1:
            return em.reduce_sum(z, [axis], keepdims=1)
        first, last = em.reduce_sum(rows(0, q + 1), [axis], keepdims=1), em.reduce_sum(rows(-q - 1, big), [axis], 1)
        return em.node("Concat", [first, rows(q + 1, -q - 1), last], "folded", axis=axis)
    n = _length(em, x, axis)
    single = em.node("Cast", [em.node("Equal", [n, em.const([1], "one", np.int64)], "n_is_1")], "n_is_1",
                     to=TensorProto.INT64)
    first_end = em.node("Add", [em.const([q + 1], "end", np.int64),
                                em.node("Mul", [single, em.const([q], "q", np.int64)], "more")], "first_end")
    # cut to n rows in all: the first row where n >= 1, the last where n >= 2 (Slice clamps; none where n is 0)
    first = _cut(em, em.reduce_sum(rows(0, first_end), [axis], keepdims=1), n, axis)
    last = _cut(em, em.reduce_sum(rows(-q - 1, big), [axis], keepdims=1),
                em.node("Sub", [n, em.const([1], "one", np.int64)], "n_minus_1"), axis)
    return em.node("Concat", [first, rows(q + 1, -q - 1), last], "folded", axis=axis)


def _cut(em: Emitter, src: str, end: str, axis: int) -> str:
    """src[:end] along `axis` (`end` a [1] tensor: 0 or negative leaves nothing of a one-row src)."""
    return em.node("Slice", [src, em.const([0], "start", np.int64), end, em.const([axis], "axis", np.int64)], "cut")


def _edge_scaled(em: Emitter, src: str, x, axes: dict, rank: int) -> str:
    """src times the edge-row scales of every edge-scaled axis: one Mul by their outer product, a table over the
    spatial axes (per axis [s, 1, ..., 1, t]): constants where X's dims are static, else built from Shape(src) at
    run time."""
    tables, known, shape, big = [], np.ones((), em.acc), None, np.iinfo(np.int64).max
    for a, f in sorted(axes.items()):
        if not f.edge_scale:
            continue
        if isinstance(x, (tuple, list)) and not is_symbolic(x[a]):
            m = int(x[a]) * f.factor
            row = np.ones(m, em.acc)
            row[0], row[-1] = f.edge_scale
            known = known * row.reshape([m] + [1] * (rank - a - 1))       # in em.acc, as the run-time tables
            continue
        shape = shape or em.node("Shape", [src], "dyshape")
        m = dims(em, shape, a, a + 1)
        ones = em.node("ConstantOfShape", [m], "ones", value=numpy_helper.from_array(np.ones(1, em.acc)))
        inner = em.node("Slice", [ones, em.const([2], "start", np.int64), em.const([big], "end", np.int64)], "inner")
        table = em.node("Concat", [em.const([f.edge_scale[0]], "edge_scale"), inner,
                                   em.const([f.edge_scale[1]], "edge_scale")], "edge_table", axis=0)
        table = _cut(em, table, m, 0)          # m long (m >= 2; an empty axis: empty)
        tables.append(em.node("Reshape", [table, em.const([-1] + [1] * (rank - a - 1), "shape", np.int64)],
                              "edge_table"))
    if known.ndim:
        tables.append(em.const(known, "edge_table"))
    if not tables:
        return src
    table = tables[0]
    for t in tables[1:]:
        table = em.node("Mul", [table, t], "edge_table")
    return em.node("Mul", [src, table], "edge_scaled")


def _mirrored(em: Emitter, src: str, axes: dict, rank: int) -> str:
    """src with the mirrored axes padded: edge replication (pads of 1) in one Pad, wider mirrors by Slices."""
    pads = [0] * (2 * rank)
    for a, f in sorted(axes.items()):
        if f.symmetric and max(f.pad_begin, f.pad_end) <= 1:
            pads[a], pads[rank + a] = f.pad_begin, f.pad_end
    if any(pads):
        src = em.node("Pad", [src, em.const(pads, "pads", np.int64)], "padded", mode="edge") if em.opset >= 11 \
            else em.node("Pad", [src], "padded", pads=pads, mode="edge")
    for a, f in sorted(axes.items()):
        if f.symmetric and max(f.pad_begin, f.pad_end) > 1:
            src = _mirror(em, src, a, f.pad_begin, f.pad_end)
    return src


def _mirror(em: Emitter, src: str, axis: int, before: int, after: int) -> str:
    """src with its first `before` entries along `axis` mirrored in front and its last `after` behind."""
    big = np.iinfo(np.int64).max
    parts = [src]
    if before:     # src[before-1], ..., src[0]
        parts.insert(0, _reversed(em, src, axis, before - 1, -big))
    if after:      # src[-1], ..., src[-after]
        parts.append(_reversed(em, src, axis, -1, -after - 1))
    return em.node("Concat", parts, "mirrored", axis=axis)


def _reversed(em: Emitter, src: str, axis: int, start: int, end: int) -> str:
    return em.node("Slice", [src, em.const([start], "start", np.int64), em.const([end], "end", np.int64),
                             em.const([axis], "axis", np.int64), em.const([-1], "step", np.int64)], "mirror")
