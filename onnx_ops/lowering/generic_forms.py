"""Shape-generic forms: ResizeGrad with constant integer (or, nearest, rational) scales and axis lengths known only at
run time.

A real export has symbolic N / H / W and constant scales (torch's `scale_factor=2`). The general dynamic path
(onnx_ops.forms.dynamic) builds a dense matrix per axis at run time. With a constant integer factor f the gradient
depends on f, not on the length n, and one graph serves every n.

Why (the proof, per axis). For the coordinate modes taken here (half_pixel, pytorch_half_pixel,
half_pixel_symmetric, asymmetric, tf_half_pixel_for_nn) the forward reads, for output o = f*i + r,

    x(o) = (o - a) / f - b = i + c_r          (c_r = (r - a) / f - b depends on r only)

so the unclamped taps of block i are those of block 0 moved by i rows: a strided correlation
dX[i] = sum_j k[j] * dY[f*i - p + j] with one kernel k. Clamping (edge replication of X's indices)
changes only the rows within the kernel's reach of an edge, and how it changes them depends on the
distance to that edge, not on n. Padding dY by p (front) and K - f - p (back) with zeros or symmetrically
(the edge mirrored) reproduces those rows for some maps; where X's indices clamp (cubic), the correlation runs
over q virtual rows beyond each edge and folds them onto the edge rows (dX = E^T C^T dY, E the forward's edge
replication). `proven_axis_form` reads (k, p, padding) from one length and checks the whole table (within 1e-12:
the taps' float64 sums) for every n in FAMILY (all n up to 24, where the two edges interact, and longer axes),
under every tie semantics (ort-1.19, ort-1.27, onnx-spec); a map that fails any n is left to the general path.
Beyond n = 24 the table is the checked pattern by the argument above.

Float32: the runtimes compute x in float32. For f a power of two, (o + 0.5) / f and the subtraction are exact
while 2 f n <= 2**24, so c_r, the weights and nearest's picks are the same in every block (up to
n = 2**23 / f). Linear and cubic are taken for f in {2, 4, 8} only. Nearest picks an index: its coordinates
stay at least 0.5 / f from a rounding boundary (or on an exact tie, e.g. asymmetric with f even, which float32
represents exactly), so float32 errors (below ulp(n)) cannot move a pick while n * f < 2**21: nearest takes
f in 2..8.

Spellings (one graph for every n; run-time shapes from Shape(dY) / Shape(X)), the generic scopes of the registry
(onnx_ops.forms.registry), walked in its order by rule, named as calibration records them:
- pool:   nearest block sums by the static pool rule (windows of 2 on the last 2-3 axes, opset <= 18): one
          AveragePool x block size.
- conv:   one depthwise Conv with the outer-product kernel and stride f (groups = C when C is static, else viewed
          as one channel), its zero pads in the Conv's own `pads`; a mirror of 1 as a Mul of dY's edge rows, a wider
          one as a fold, where proven (onnx_ops.forms.filter_conv, shared with the static lowering); for nearest the
          Conv of ones (the static conv(ones) form, C static).
- sepconv: the separable conv, taken where the outer product has more than SEPARABLE_TAPS taps (trilinear,
          bicubic, factors 4 and 8): one depthwise Conv per resized axis with its 1-D kernel, the first axis first,
          the same edges; the folds last, on the smallest tensor.
- kronpairs: nearest block sums as the static kron-pairs form (onnx_ops.kron_pairs_form): the last axis by one
          MatMul of rows of f*k values (k = `pair_columns`, dividing every dY's size / f), then AveragePool (the pool
          rule) or Split + Add per other axis; by rule where `kron_pairs_faster` (nearest x2).
- block:  nearest otherwise: Reshape (X's dims and the factors) + ReduceSum (also float64).
- resize: one Resize (antialias, scales 1/f) where the static lowering takes that form and it is proven.
- scatter: integer downsampling (scales 1/k; DownsampleForm, onnx_ops.forms.scatter) where each dY row reaches
          only its own block of k X rows, with one weight (linear half_pixel x1/2: both rows 1/2; nearest: one
          row): dY times the weights, one nearest Resize x k, a 0/1 mask of the block rows dY reaches, X's rows
          past the last whole block padded with zeros, where onnxruntime's Resize has its fast 2x kernel (4-D, H
          and W by the same 1/2, 1/4 or 1/8, one Resize x2 per halving: `resize_fits`); elsewhere, and where
          blocks have unreached rows at 1/4 and 1/8 (at 1/2 on a tail), the gathered spelling: one blocked MatMul
          on the last axis, a Gather of rows from a zero row per other axis. Proven as the others, for every n in
          FAMILY.
- periodic: nearest at a constant rational scale p/q (PeriodicForm, onnx_ops.forms.periodic), where no form above is
          proven: X rows q*i + r read dY rows p*i + c with one block of weights for every period i; dY zero-padded to
          whole tiles at run time, one constant band per axis, one Slice (proven_periodic_axis).
Emission is in onnx_ops.forms.generic_emit (the scatter's in onnx_ops.forms.scatter, the periodic form's in
onnx_ops.forms.periodic). Each starts with a check that
dY's shape is X's times the factors (over them: floor(n / k), downsampling).
`dml-desc calibrate` (onnx_ops.calibrate) may replace the rule's choice among the applicable spellings and the
general path (the registry's `ranked`) by measurements, when asked.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError
from dml_desc.weights import gradient_taps

from ..bridge import middle_row_kernel
from ..forms import POOL_MAX_OPSET, POOL_WINDOW
from ..forms.filter_conv import FILTER_FACTORS, AxisForm, FilterConv, emitted, variants
from ..forms.kron_pairs import COLUMNS
from ..forms.periodic import PeriodicAxis, PeriodicForm
from ..forms.scatter import DOWN_FACTORS, SCATTER_RESIZE, DownAxis, DownsampleForm, block_of, resize_fits
from ..model import resize_reader_opset

GENERIC_CTMS = ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric", "asymmetric", "tf_half_pixel_for_nn")
NEAREST_FACTORS = range(2, 9)
FAMILY = tuple(range(1, 25)) + (31, 33, 64, 97, 128, 255)
PROBE_N = 16          # the length the kernel is read from (its middle row is interior for every kernel here)
IGNORED = ("axes", "keep_aspect_ratio_policy", "extrapolation_value")
ORT_SEMANTICS = tuple(s for s in onnx_conv.SEMANTICS if s != "onnx-spec")   # onnxruntime's tie rules
PERIODIC_MAX_PERIOD = 16      # X rows per period of a periodic axis at most (the scale's denominator)
PERIODIC_MAX_FACTOR = 8       # a periodic axis's scale between 1/8 and 8
PAIR_COLUMNS = COLUMNS + (1,)   # the kron-pairs MatMul's blocks per row: the first dividing every dY's size


@dataclass(frozen=True)
class GenericForm:
    """A whole node's shape-generic form: per resized axis an AxisForm; `resize` the attributes of one
    onnxruntime Resize (scales 1/f) whose taps are the gradient's up to f, where the static lowering takes
    that form and it is proven for every length; `channels` X's dim 1 when static."""
    axes: dict          # axis -> AxisForm
    rank: int
    channels: int | None = None
    resize: dict | None = None      # a proven Resize spelling (float32 / float16 only)
    prefer_resize: bool = False     # the static lowering takes that Resize at the stand-in shape
    emit_axes: dict | None = None   # axis -> the AxisForm the convs emit (`emitted`: proven), None: `axes`
    down = False                    # upsampling (DownsampleForm: downsampling)

    @property
    def block(self) -> bool:
        """True when every resized axis is a block sum (nearest)."""
        return all(f.block for f in self.axes.values())

    @property
    def spatial(self) -> bool:
        """The resized axes are spatial (2..) of a 3-5-D tensor: a Conv can take them."""
        return 3 <= self.rank <= 5 and min(self.axes) >= 2

    @property
    def conv_ok(self) -> bool:
        """Nearest block sums as one depthwise Conv of ones (the static "conv(ones)" form, measured faster than
        Reshape + ReduceSum, README): spatial axes and a static channel count."""
        return self.spatial and self.channels is not None

    def filter_conv(self, kind: str) -> FilterConv:
        """The "conv" or "sepconv" spelling: the emitted AxisForms (edge scaling or folds for mirrors, where
        proven for every length), one Conv or one per axis."""
        return FilterConv(self.emit_axes or self.axes, self.rank, self.channels, split=kind == "sepconv")

    def pool_fits(self, opset: int) -> bool:
        """The static pool rule: windows of 2 on all of the last 2 or 3 axes, opset <= 18."""
        return _pool_fits(self, opset)

    @property
    def pair_columns(self) -> int:
        """Blocks per MatMul row of the kron-pairs spelling: the first of kron_pairs_form.COLUMNS dividing
        every dY's size over the last axis's factor (the static dims not resized, the other resized axes'
        factors), 0 where the last axis is not resized."""
        last = self.axes.get(self.rank - 1)
        if last is None:
            return 0
        known = math.prod(f.factor for a, f in self.axes.items() if a != self.rank - 1)
        known *= self.channels if isinstance(self.channels, int) and 1 not in self.axes else 1
        return next(k for k in PAIR_COLUMNS if known % k == 0)

    def kron_pairs_faster(self, opset: int) -> bool:
        """Where the kron-pairs spelling measured faster (docs/dynamic-forms.md): nearest x2 on the last axis and
        at least one other, under the pool rule (opsets <= 18) only on 2 axes (one thread: the pool is faster on 3;
        where rows of 32 do not fit dY at run time, the spelling takes the pool itself); and, from 2026-11-27 (2
        threads, `dml-desc calibrate`), every other factor and the last axis alone: 1.3 to 2.5 x faster than the
        Conv of ones or Reshape + ReduceSum (x3, x4, x8, x4 by 2, x4 on 5-D, x2 or x4 on the last axis only)."""
        if len(self.axes) < 2 or any(f.factor != 2 for f in self.axes.values()):
            return True
        return not self.pool_fits(opset) or len(self.axes) == 2

    @property
    def taps(self) -> int:
        """Multiply-adds per output of the one-Conv form: the outer product's size."""
        return math.prod(len(f.kernel) for f in self.axes.values())

    def names(self, kind: str, opset: int) -> tuple:
        """The per-axis form names the lowering report prints, e.g. 'generic conv x2 (symmetric pad 1+1)'."""
        def name(a: int, f: AxisForm) -> str:
            if kind == "resize":
                assert self.resize is not None      # the resize kind is named only where one is proven
                return f"generic Resize({self.resize['mode']}, antialias) x1/{f.factor}"
            if kind in ("conv", "sepconv") and not f.block:
                return "generic " + self.filter_conv(kind).names()[sorted(self.axes).index(a)]
            if kind == "kronpairs":
                k = self.pair_columns
                narrow = "avgpool" if len(self.axes) > 1 and self.pool_fits(opset) else f"{f.factor * k}->{k}"
                rows = f"{f.factor * k}->{k}" if k >= COLUMNS[0] else \
                    f"{f.factor * COLUMNS[0]}->{COLUMNS[0]} or {narrow}"     # chosen at run time
                return f"generic kron-pairs matmul {rows}" if a == self.rank - 1 else f"generic kron-pairs x{f.factor}"
            return f"generic {dict(pool='avgpool', conv='conv', block='block-sum')[kind]} x{f.factor}"
        return tuple(name(a, f) for a, f in self.axes.items())       # in the order of the Rewrite's axes


def generic_form(attrs: dict, axes: tuple, scales, dims,
                 opset: int) -> GenericForm | DownsampleForm | PeriodicForm | None:
    """The shape-generic form of a ResizeGrad with constant `scales` (None: run time) on `axes` ((axis, position
    in scales) per axis it may resize), X's `dims` (ints or symbolic); None where no form is proven."""
    if scales is None or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    if any(pos >= len(scales) for _, pos in axes):      # an empty scales (sizes gave the forward): shapes decide
        return None
    opset = resize_reader_opset(opset)
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel" if opset > 10 else "asymmetric")
    if ctm not in GENERIC_CTMS:
        return None
    key = tuple(sorted((k, str(v)) for k, v in attrs.items() if k not in IGNORED))
    factors = {axis: float(np.float32(scales[pos])) for axis, pos in axes}
    if factors and all(f < 1 for f in factors.values()):
        return _downsample_form(key, factors, dims, opset) or periodic_form(key, factors, dims, opset)
    forms = {}
    for axis, pos in axes:
        factor = float(np.float32(scales[pos]))
        axis_form = proven_axis_form(key, factor, opset) if factor != 1 else None
        if axis_form is None:
            return periodic_form(key, factors, dims, opset)
        forms[axis] = axis_form
    if not forms:
        return None
    if opset < 10 and any(f.fold for f in forms.values()):
        return None                  # the fold cuts rows at run time (Slice's inputs, from opset 10)
    channels = dims[1] if len(dims) > 1 and isinstance(dims[1], int) else None
    emit_axes = {a: emitted(f, lambda c, f=f: proven_same(c, f), opset) for a, f in forms.items()}
    form = GenericForm(forms, len(dims), channels, emit_axes=emit_axes)
    if not (form.block or form.spatial):
        return None
    resize, prefer = _proven_resize(attrs, forms, dims, opset)
    return replace(form, resize=resize, prefer_resize=prefer) if resize is not None else form


def _downsample_form(key: tuple, factors: dict, dims, opset: int) -> DownsampleForm | None:
    """The DownsampleForm of scales 1/k on every resized axis, each axis proven for every length; else None."""
    ks = {axis: round(1 / factor) for axis, factor in factors.items()}
    if any(k not in DOWN_FACTORS or float(np.float32(1 / k)) != factors[a] for a, k in ks.items()):
        return None
    forms = {}
    for axis, k in ks.items():
        form = proven_down_axis(key, k, opset)
        if form is None:
            return None
        forms[axis] = form
    return DownsampleForm(forms, len(dims), dims[1] if len(dims) > 1 and isinstance(dims[1], int) else None,
                          resize_fits(len(dims), ks))


@lru_cache(maxsize=256)
def proven_down_axis(key: tuple, k: int, opset: int) -> DownAxis | None:
    """The DownAxis of one axis scaled by 1/k (node attributes `key`): the block read from one length's middle
    column, checked for every n in FAMILY under every tie semantics; None where any differs, or where a nearest
    Resize x2 (the scatter's, log2(k) of them) does not repeat each row twice for every length."""
    attrs = {name: _parse(v) for name, v in key}
    factor = float(np.float32(1 / k))
    if opset < 11 or not _nearest_repeats(2, opset):        # the scatter's Resizes double
        return None
    lengths = [n for n in FAMILY if n >= k for _ in onnx_conv.SEMANTICS]     # n < k: an empty dY, refused
    try:
        tables = [resize_grad_taps(attrs, factor, n, opset, s) for n in FAMILY if n >= k for s in onnx_conv.SEMANTICS]
    except DescError:
        return None
    probe = onnx_conv.to_canonical(onnx_conv.OnnxResize([PROBE_N], attrs, scales=[factor], opset=opset,
                                                        op_type="ResizeGrad"), onnx_conv.SEMANTICS[0])
    form = block_of(gradient_taps(probe.axes[0], probe), k)
    if form is not None and all(t.shape == (n, n // k) and np.allclose(t, form.matrix(n), rtol=0, atol=1e-12)
                                for t, n in zip(tables, lengths)):
        return form
    return None


@lru_cache(maxsize=16)
def _nearest_repeats(k: int, opset: int) -> bool:
    """The scatter's Resize (nearest, asymmetric, floor, scale k) reads row o // k for output o, every length."""
    from dml_desc.weights import forward_taps
    for m in FAMILY:
        for semantics in onnx_conv.SEMANTICS:
            r = onnx_conv.to_canonical(onnx_conv.OnnxResize([m], dict(SCATTER_RESIZE), scales=[float(k)],
                                                            opset=opset), semantics)
            if r.out_shape != (k * m,) or not np.array_equal(forward_taps(r.axes[0], r).dense(),
                                                             np.repeat(np.eye(m), k, axis=0)):
                return False
    return True



def periodic_form(key: tuple, factors: dict, dims, opset: int) -> PeriodicForm | None:
    """The PeriodicForm of nearest at constant rational scales, every resized axis proven for every length; else
    None."""
    axes = {}
    for axis, factor in factors.items():
        form = proven_periodic_axis(key, factor, opset) if factor != 1 else None
        if form is None:
            return None
        axes[axis] = form
    channels = dims[1] if len(dims) > 1 and isinstance(dims[1], int) else None
    return PeriodicForm(axes, len(dims), channels) if axes else None


@lru_cache(maxsize=256)
def proven_periodic_axis(key: tuple, factor: float, opset: int) -> PeriodicAxis | None:
    """The PeriodicAxis of one nearest axis scaled by `factor` (node attributes `key`) = p/q exactly (float32 holds
    it: q a power of two, at most PERIODIC_MAX_PERIOD): the block read from the middle period of one length, then
    the whole table checked for every n in periodic_lengths(q) under onnxruntime's tie semantics (the run-time path
    follows onnxruntime, so onnx-spec never reaches here): every entry the form's, and no dY row reaching an X row
    past the last (the Slice would drop it). None where any differs. Beyond those lengths the table is the checked
    pattern: X rows q*i + r read dY rows p*i + c (the coordinates move by q per p rows, exactly in float32 while
    n * p < 2**21, the nearest argument of this module's docstring), and the end's rows depend only on n mod q."""
    attrs = {k: _parse(v) for k, v in key}
    ratio = Fraction(factor)
    p, q = ratio.numerator, ratio.denominator
    if attrs.get("mode", "nearest") != "nearest" or opset < 10 or q > PERIODIC_MAX_PERIOD or \
            not 1 / PERIODIC_MAX_FACTOR <= ratio <= PERIODIC_MAX_FACTOR:
        return None
    if q > 1 and attrs.get("coordinate_transformation_mode") == "half_pixel_symmetric":
        return None     # its adjustment, floor(n p / q) / (n p / q), moves the coordinates with n: no one pattern
    try:
        probe = _axis_table(attrs, factor, 9 * q, opset, ORT_SEMANTICS[0])
        block = tuple(tuple(float(w) for w in row) for row in probe[4 * q:5 * q, 4 * p:5 * p])
        form = PeriodicAxis(p, q, block)
        copies = False
        for n in periodic_lengths(q):
            m = n * p // q
            for semantics in ORT_SEMANTICS if m else ():
                table = _axis_table(attrs, factor, n, opset, semantics)
                if table.shape != (n, m) or form.lost(n, m) or \
                        not np.allclose(form.dense(n, m), table, rtol=0, atol=1e-12):
                    return None
            copies |= m == n and not np.array_equal(form.dense(n, m), np.eye(n))
    except DescError:
        return None
    return replace(form, copies=copies)


def periodic_lengths(q: int) -> tuple:
    """The lengths a periodic axis is checked on: every n up to 4 q + 31 (both edges and every residue mod q, where
    they interact), and three long ones."""
    return tuple(range(1, 4 * q + 32)) + (255, 256, 257)


def _axis_table(attrs: dict, factor: float, n: int, opset: int, semantics: str) -> np.ndarray:
    """The (n, m) gradient table of an axis of n rows scaled by `factor`, beside an axis doubled (onnxruntime
    copies a whole Resize whose shape stays the same: the run-time spelling has its own branch for that)."""
    node = onnx_conv.OnnxResize([n, 2], attrs, scales=[factor, 2.0], opset=opset, op_type="ResizeGrad")
    res = onnx_conv.to_canonical(node, semantics)
    return gradient_taps(res.axes[0], res).dense()


@lru_cache(maxsize=256)
def proven_axis_form(key: tuple, factor: float, opset: int) -> AxisForm | None:
    """The AxisForm of one axis scaled by `factor` (node attributes `key`), checked for every n in FAMILY."""
    attrs = {k: _parse(v) for k, v in key}
    mode = attrs.get("mode", "nearest")
    f = int(factor)
    if f != factor or f not in (NEAREST_FACTORS if mode == "nearest" else FILTER_FACTORS):
        return None
    if attrs.get("antialias", 0) and mode != "nearest":
        return None                 # not proven here: the general path keeps it
    try:
        taps = {(n, s): resize_grad_taps(attrs, factor, n, opset, s) for n in FAMILY for s in onnx_conv.SEMANTICS}
    except DescError:
        return None
    base = _derive(taps[(PROBE_N, onnx_conv.SEMANTICS[0])], f)
    for form in variants(base) if base is not None else ():
        if all(np.allclose(form.matrix(n), t, rtol=0, atol=1e-12) for (n, _), t in taps.items()):
            return form
    return None


@lru_cache(maxsize=256)
def proven_same(candidate: AxisForm, form: AxisForm) -> bool:
    """True when `candidate` (another spelling of the proven `form`: edge scaled, or zero padded and folded)
    computes the same matrix for every n in FAMILY, so it is proven as well."""
    return all(np.allclose(candidate.matrix(n), form.matrix(n), rtol=0, atol=1e-12) for n in FAMILY)


STAND_IN = 96          # symbolic spatial dims in the stand-in shape that asks the static cost model for its choice


def _proven_resize(attrs: dict, forms: dict, dims, opset: int) -> tuple:
    """(attributes, static prefers it) of the Resize whose taps are the gradient's (onnx_ops.forms.find_resize)
    on a stand-in shape (symbolic dims: 1 for N, 16 for C, STAND_IN elsewhere), when its scales are 1/f and it is
    proven for every length in FAMILY; (None, False) otherwise. The static lowering prefers it unless the band
    plan is estimated PREFER_RESIZE x cheaper."""
    from ..forms import find_resize, plan_axes, resize_cost
    from ..forms import PREFER_RESIZE
    if any(f.block for f in forms.values()) or opset < 18:
        return None, False
    shape = [d if isinstance(d, int) else (1, 16)[a] if a < 2 else STAND_IN for a, d in enumerate(dims)]
    scales = [float(forms[a].factor) if a in forms else 1.0 for a in range(len(dims))]
    clean = {k: v for k, v in attrs.items() if k not in IGNORED}
    try:
        res = onnx_conv.to_canonical(onnx_conv.OnnxResize(shape, clean, scales=scales, opset=resize_reader_opset(opset),
                                                          op_type="ResizeGrad"), onnx_conv.STAND_IN_SEMANTICS)
    except DescError:
        return None, False
    found = find_resize(res, opset)
    if found is None:
        return None, False
    spelling = found[1]
    if spelling.scales is None or "axes" in spelling.attributes:
        return None, False
    if any(not np.isclose(spelling.scales[a] * forms[a].factor, 1) if a in forms else spelling.scales[a] != 1
           for a in range(len(dims))):
        return None, False
    resize = dict(spelling.attributes)
    key = tuple(sorted((k, str(v)) for k, v in clean.items()))
    rkey = tuple(sorted((k, str(v)) for k, v in resize.items()))
    if not all(_resize_proven(key, rkey, f.factor, resize_reader_opset(opset)) for f in forms.values()):
        return None, False
    return resize, resize_cost(res, found[0]) <= PREFER_RESIZE * plan_axes(res)[1]


@lru_cache(maxsize=64)
def _resize_proven(key: tuple, resize_key: tuple, f: int, opset: int) -> bool:
    """Resize(scales 1/f, `resize_key`) of a length f*n equals f x the gradient taps of length n, for every n in
    FAMILY (weights within float32 rounding, the static form's test) and every tie semantics."""
    from ..forms import taps_close
    from dml_desc.weights import forward_taps
    attrs = {k: _parse(v) for k, v in key}
    resize = {k: _parse(v) for k, v in resize_key}
    try:
        for n in FAMILY:
            for semantics in onnx_conv.SEMANTICS:
                g = onnx_conv.to_canonical(onnx_conv.OnnxResize([n], attrs, scales=[float(f)], opset=opset,
                                                                op_type="ResizeGrad"), semantics)
                r = onnx_conv.to_canonical(onnx_conv.OnnxResize([f * n], resize, scales=[float(np.float32(1 / f))],
                                                                opset=opset), semantics)
                if r.out_shape != (n,) or not taps_close(gradient_taps(g.axes[0], g), forward_taps(r.axes[0], r), f):
                    return False
    except DescError:
        return False
    return True


def _parse(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def resize_grad_taps(attrs: dict, factor: float, n: int, opset: int, semantics: str) -> np.ndarray:
    """The dense gradient table (n, f*n) of a 1-D ResizeGrad with these attributes (dml_desc's taps)."""
    node = onnx_conv.OnnxResize([n], attrs, scales=[factor], opset=opset, op_type="ResizeGrad")
    res = onnx_conv.to_canonical(node, semantics)
    return gradient_taps(res.axes[0], res).dense()


def _derive(dense: np.ndarray, f: int) -> AxisForm | None:
    """Kernel and pads read from the middle row of one table (rows = X, cols = dY), zero padded."""
    found = middle_row_kernel(dense, f)
    if found is None:
        return None
    kernel, pad_begin, pad_end = found
    return AxisForm(f, tuple(float(w) for w in kernel), pad_begin, pad_end, False)


def _pool_fits(form: GenericForm, opset: int) -> bool:
    """The static pool rule (onnx_ops.forms.pool_form): windows of 2 on all of the last 2 or 3 axes, opset <= 18."""
    lead = form.rank - len(form.axes)
    return (opset <= POOL_MAX_OPSET and 2 <= len(form.axes) <= 3
            and sorted(form.axes) == list(range(lead, form.rank))
            and all(f.factor == POOL_WINDOW for f in form.axes.values()))
