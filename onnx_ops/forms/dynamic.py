"""ResizeGrad whose sizes or scales are known only at run time: per-axis taps read inside the graph.

For each axis the node may resize, onnxruntime's own Resize gives the taps, in the runtime's float32 arithmetic
(its coordinates per coordinate_transformation_mode, its nearest ties, cubic_coeff_a, exclude_outside, antialias
and the roi of tf_crop_and_resize; extrapolated outputs read weight 0, also on an axis that antialias copies). From
opset 12 it resizes combs (onnx_ops.forms.dynamic_taps: [P, m] tables of X rows and weights, O((n + m) * P) memory),
and dX is dY contracted with them axis by axis, every sum in a fixed order (deterministic on every run and thread
count): every axis but the last by the band form built from the taps (onnx_ops.forms.dynamic_band: windows of dY rows
per tile of X rows, one batched MatMul); the last axis, where a Gather would move single values, by one MatMul with
the dense matrix where it is small (n * m <= DENSE_LAST_MAX), else by the band between two Transposes. Banded axes
from 2 up go first, then the last axis, then axes 0 and 1, which are seldom resized: an If skips them where their
taps are the identity (a symbolic batch that keeps its size; both Ifs with dY's type known). The bands' padding rows
are sliced off dX at the end (a copy of dX), except where an If finds none (every banded length a multiple of its
tile) and the last axis's contraction writes dX directly. An outer If returns zeros for a dY with an empty
axis, where the probes and reshapes would fail.

Before opset 12 (no Unique, Range or int64 Min / Max in the schemas the model imports), the path resizes the
identity matrix I(n), viewed as [n, 1, 1, n], which gives the n x m weight matrix R, and contracts each axis with
all of R by MatMul: O(n * max(n, m)) memory, refused by the size budget where the lengths are known
(onnx_ops.lowering.plan).

onnxruntime copies its input, without resampling, when the whole output shape equals the input shape.
An axis whose size does not change (a scale in (1, 2)) while another one does is resampled, so the probe
then also stretches its size-1 axis to h = 2 (value-exact for every mode but plain cubic, whose
weights sum to 1 within a float32 rounding).

Cost per row: O(window) on banded axes, O(m) on a small last axis. The taps cost O((n + m) * P) per run, their
band plan O(m * P log(m * P) + n * width). An inf or NaN in dY reaches the dX rows whose window holds it on a
banded axis, the whole dX line on a dense last axis (0 x inf).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from .dynamic_band import (BAND_MIN_OPSET, all_true, band_entries, band_plan, contract_band, plain_windows,
                           scatter_flat)
from .dynamic_taps import (RunTaps, axis_taps, dy_rows, identity_where, is_identity, period, probe_entries,
                           unsqueeze)
from .emitter import Emitter

DENSE_LAST_MAX = 2 ** 16   # n * m up to which the last axis takes one dense MatMul (a 256 KB matrix)
PROBE_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
               "antialias")


@dataclass(frozen=True)
class DynamicPlan:
    """What the in-graph taps need: where scales / roi come from and which axes may be resized."""
    rank: int
    axes: tuple            # (axis, position in scales / roi) for every axis the node may resize
    attrs: dict            # the node's attributes
    scales: str = ""       # the scales tensor (constant or run-time); "" when dY's shape gives the sizes
    roi: str = ""          # the roi tensor (tf_crop_and_resize only)
    n_scaled: int = 0      # entries in scales (len(axes) attribute or the rank)
    stretch_probe: bool = False   # h = 2 when some axis changes size (an axis may keep its size, scale != 1)
    convert: bool = True   # dY is float / double with a known type (else CastLike to dY)
    # onnxruntime's 4-D NHWC cubic kernel copies same-length axes (conventions.onnx.nhwc_cubic): "" never,
    # "always" when the constant scales select that kernel, "run time" when the scales decide it at run time
    nhwc_cubic: str = ""

    @property
    def probe_attrs(self) -> dict:
        """The node attributes the probe Resize copies (mode, coordinate transformation, rounding, cubic, antialias)."""
        return {k: v for k, v in self.attrs.items() if k in PROBE_ATTRS}


def emit_dynamic(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    """dX from dY (float32 or float64 as em.acc): one probe Resize per axis; the last axis contracted with a
    MatMul, the others with the band form (onnx_ops.forms.dynamic_band) from opset 12, a dense MatMul before.
    From opset 12 (dY's type known), a dY with an empty axis (a scale that rounds a length down to 0) gives
    zeros, an empty X an empty dX: an If around the path, whose probes and reshapes cannot take empty axes."""
    if em.opset < BAND_MIN_OPSET or not plan.convert:
        return _emit_nonempty(em, dy, x, plan)
    dims = em.node("Concat", [em.node("Shape", [dy], "dyshape"), em.node("Shape", [x], "xshape")], "dims", axis=0)
    empty = em.node("Equal", [em.node("ReduceMin", [dims], "shortest", keepdims=1), em.const([0], "zero", np.int64)],
                    "empty")
    elem = _elem(em)
    zero = helper.make_tensor("zero", elem, [1], [0.0])
    zeros = _branch(em, lambda: em.node("ConstantOfShape", [em.node("Shape", [x], "xshape")], "zeros", value=zero),
                    elem, plan.rank)
    return em.node("If", [empty], "dx", then_branch=zeros, else_branch=_branch(
        em, lambda: _emit_nonempty(em, dy, x, plan), elem, plan.rank))


def _emit_nonempty(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    if em.opset < BAND_MIN_OPSET:
        return _emit_identity_probes(em, dy, x, plan)
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    scales = _checked_scales(em, plan) if plan.scales else ""
    h = _probe_height(em, plan, sx, sdy)
    taps = {a: _axis_taps(em, plan, a, pos, sx, sdy, scales, h) for a, pos in plan.axes}
    banded, last = banded_axes(plan, em.opset), plan.rank - 1
    late = [a for a in banded if a < 2] if plan.convert else []
    early = [a for a in banded if a not in late]
    cur = dy
    for a in early:
        cur = _banded(em, plan, cur, taps[a], a)
    if not late:
        return _last_unpadded(em, plan, cur, taps.get(last), sx, early)
    # batch and channels (axes 0, 1) are seldom resized: last, where the data is smallest, and skipped when
    # their run-time taps are the identity (an If whose branches both contract the last axis: no copy of dX
    # where that axis is resized and no banded axis has padding rows)
    identity = [is_identity(em, taps[a]) for a in late]
    cond = identity[0] if len(identity) == 1 else em.node("And", identity, "identity")

    def resized():
        out = _last_axis(em, plan, cur, taps[last]) if last in taps else cur
        for a in late:
            out = _banded(em, plan, out, taps[a], a)
        return _unpadded(em, out, sx, banded)
    keep = _branch(em, lambda: _last_unpadded(em, plan, cur, taps.get(last), sx, early), _elem(em), plan.rank)
    return em.node("If", [cond], "axes_done", then_branch=keep, else_branch=_branch(em, resized, _elem(em), plan.rank))


def _last_unpadded(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps | None, sx: str, early: list) -> str:
    """The last axis contracted (where resized), then the banded axes' padding rows dropped. Where the last axis is
    resized, an If skips the Slice (a copy of dX) when no banded axis has padding rows (n a multiple of its tile)."""
    if taps is None or not early:
        return _unpadded(em, _last_axis(em, plan, cur, taps) if taps is not None else cur, sx, early)
    axes = em.const(early, "banded", np.int64)
    rows = [em.node("ReduceSum", [em.node("Gather", [shape, axes], "rows")], "total", keepdims=1)
            for shape in (em.node("Shape", [cur], "padded_shape"), sx)]
    exact = em.node("Equal", rows, "no_padding")       # padded lengths are at least n: equal sums, equal lengths
    return em.node("If", [exact], "unpadded", then_branch=_branch(em, lambda: _last_axis(em, plan, cur, taps),
                                                                  _elem(em), plan.rank),
                   else_branch=_branch(em, lambda: _unpadded(em, _last_axis(em, plan, cur, taps), sx, early),
                                       _elem(em), plan.rank))


def largest_table(plan: DynamicPlan, axis: int, n: int, m: int, opset: int) -> tuple:
    """(entries, what) of the largest table the path builds at run time for one axis whose lengths n (X) and m (dY)
    are known when lowering (dml_desc.budget.check_table compares it with the budget)."""
    if opset < BAND_MIN_OPSET:
        return n * max(n, m), "the identity probe and the weight matrix (the dynamic path before opset 12)"
    probes = (probe_entries(plan, n, m), "the probes of its taps")
    if axis == plan.rank - 1 and n * m <= DENSE_LAST_MAX:
        return probes
    return max(probes, (band_entries(n, m, period(plan, n, m)), "its band"))


def banded_axes(plan: DynamicPlan, opset: int) -> list:
    """The axes contracted with the run-time band form: every resized axis but the last, from opset 12."""
    return sorted(a for a, _ in plan.axes if a != plan.rank - 1) if opset >= BAND_MIN_OPSET else []


LAST_AXIS_FORM = f"dense (n * m <= {DENSE_LAST_MAX}) or band"


def axis_forms(plan: DynamicPlan, opset: int) -> tuple:
    """The form each of plan.axes takes, as the lowering report prints it."""
    if opset < BAND_MIN_OPSET:
        return ("dynamic: Resize(identity) + MatMul",) * len(plan.axes)
    last = LAST_AXIS_FORM if plan.convert else "band"
    return tuple("dynamic: Resize(comb) + " + (last if a == plan.rank - 1 else "band") for a, _ in plan.axes)


def _elem(em: Emitter) -> int:
    return TensorProto.FLOAT if em.acc is np.float32 else TensorProto.DOUBLE


def _axis_taps(em: Emitter, plan: DynamicPlan, axis: int, pos: int, sx: str, sdy: str, scales: str, h: str) -> RunTaps:
    """One axis's run-time taps (onnx_ops.forms.dynamic_taps), the identity where onnxruntime's NHWC cubic kernel
    copies the axis."""
    # Gather, not Slice: onnxruntime warns that it cannot rename a Slice of a shape read inside an If branch
    n, m = (em.node("Gather", [s, em.const([axis], "axis", np.int64)], "length") for s in (sx, sdy))
    scale = _slice(em, scales, pos, pos + 1) if plan.scales else ""
    taps = axis_taps(em, plan, pos, n, m, scale, _probe_roi(em, plan, pos), h)
    if plan.nhwc_cubic and axis in (1, 2):
        taps = identity_where(em, taps, _nhwc_copies(em, plan, n, m, scales))
    return taps


def _banded(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, axis: int, band: tuple = ()) -> str:
    """cur's `axis` (not the last) contracted by the band form (`band`, else band_plan's): tiles * tile rows (n and
    the padding)."""
    weights, index, m = band or band_plan(em, taps)
    return contract_band(em, cur, _converted(em, plan, weights, cur), index, m, axis, plan.rank,
                         _elem(em) if plan.convert else None)


def _last_axis(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps) -> str:
    """cur's last axis contracted into n: the shared band where the run-time map is periodic in the tiles
    (_is_shared), else one MatMul with the dense m x n matrix where n * m <= DENSE_LAST_MAX, else the band between
    two Transposes (Ifs; the band alone where dY's type is not known)."""
    if not plan.convert:
        return _band_last(em, plan, cur, taps)
    band = band_plan(em, taps)
    first = em.node("Slice", [band[0], em.const([0], "start", np.int64), em.const([1], "end", np.int64)], "first_tile")

    def general() -> str:
        small = em.node("LessOrEqual", [em.node("Mul", [taps.n, taps.m], "entries"),
                                        em.const([DENSE_LAST_MAX], "dense_max", np.int64)], "small")
        dense = _branch(em, lambda: em.node("MatMul", [cur, _converted(em, plan, _dense_t(em, taps), cur)],
                                            "contracted"), _elem(em), plan.rank)
        banded = _branch(em, lambda: _band_last(em, plan, cur, taps, band), _elem(em), plan.rank)
        return em.node("If", [small], "last_axis", then_branch=dense, else_branch=banded)
    shared = _branch(em, lambda: _shared_last(em, plan, cur, taps, band[1], first), _elem(em), plan.rank)
    return em.node("If", [_is_shared(em, band, first, taps.n)], "last_axis", then_branch=shared,
                   else_branch=_branch(em, general, _elem(em), plan.rank))


def _is_shared(em: Emitter, band: tuple, first: str, n: str) -> str:
    """[1] bool: the band's windows read dY's rows in order, each once, every tile has tile 0's weights (`first`)
    and the tiles hold n rows exactly (a map periodic in tiles: nearest 1.5x, linear 0.5x, ...)."""
    weights, index, m = band
    same = all_true(em, em.node("Equal", [weights, first], "same_weights"))
    dims = em.node("Shape", [weights], "block_shape")
    tiles_tile = em.node("Slice", [dims, em.const([0], "start", np.int64), em.const([2], "end", np.int64)], "tiles")
    rows = em.node("ReduceProd", [tiles_tile], "rows", keepdims=1)
    exact = em.node("Equal", [rows, n], "exact_rows")
    return em.node("And", [em.node("And", [plain_windows(em, index, m), same], "plain_same"), exact], "shared")


def _shared_last(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, index: str, first: str) -> str:
    """The last axis of cur (m long) viewed as the band's windows [tiles, width] (`index`'s shape) and contracted by
    one MatMul with tile 0's weights (`first`) transposed [width, tile]: the static shared band's spelling
    (onnx_ops.forms.bands), where _is_shared holds."""
    matrix = _first_tile_t(em, first)
    lead = em.node("Slice", [em.node("Shape", [cur], "shape"), em.const([0], "start", np.int64),
                             em.const([plan.rank - 1], "end", np.int64)], "lead")
    viewed = em.node("Reshape", [cur, em.node("Concat", [lead, em.node("Shape", [index], "windows_shape")], "split",
                                              axis=0)], "windows")
    product = em.node("MatMul", [viewed, _converted(em, plan, matrix, cur)], "shared_band")
    return em.node("Reshape", [product, em.node("Concat", [lead, taps.n], "dx_shape", axis=0)], "contracted")


def _dense_t(em: Emitter, taps: RunTaps) -> str:
    """[m, n] float32: R^T, the taps' weights at (dY row, X row)."""
    rows = unsqueeze(em, dy_rows(em, taps), 0)
    position = em.node("Add", [em.node("Mul", [rows, taps.n], "row_start"), taps.index], "position")
    size = em.node("Mul", [taps.m, taps.n], "size")
    flat = scatter_flat(em, em.node("Where", [taps.used, position, size], "position"), taps.weight, size)
    return em.node("Reshape", [flat, em.node("Concat", [taps.m, taps.n], "matrix_shape", axis=0)], "matrix_t")


def _first_tile_t(em: Emitter, first: str) -> str:
    """[width, tile]: tile 0 of the band's weights ([1, tile, width]), transposed by a Gather of its entries (a
    Transpose before the MatMul becomes onnxruntime's FusedMatMul, which has no double kernel)."""
    dims = em.node("Shape", [first], "block_shape")
    tile, width = (em.node("Gather", [dims, em.const(k, "dim", np.int64)], "dim") for k in (1, 2))   # scalars
    one, zero = em.const(1, "one", np.int64), em.const(0, "zero", np.int64)
    rows = unsqueeze(em, em.node("Range", [zero, width, one], "w"), 1)
    cols = unsqueeze(em, em.node("Range", [zero, tile, one], "t"), 0)
    at = em.node("Add", [em.node("Mul", [cols, width], "row_start"), rows], "at")             # [width, tile]
    flat = em.node("Reshape", [first, em.const([-1], "flat", np.int64)], "tile0")
    return em.node("Gather", [flat, at], "shared_t")


def _band_last(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, band: tuple = ()) -> str:
    """The last axis by the band form: moved to the front, contracted, the padding rows dropped, moved back."""
    rank = plan.rank
    if rank > 1:
        cur = em.node("Transpose", [cur], "axis_first", perm=[rank - 1] + list(range(rank - 1)))
    out = em.node("Slice", [_banded(em, plan, cur, taps, 0, band), em.const([0], "start", np.int64), taps.n,
                            em.const([0], "axis", np.int64)], "unpadded")
    return em.node("Transpose", [out], "axis_last", perm=list(range(1, rank)) + [0]) if rank > 1 else out


def _nhwc_copies(em: Emitter, plan: DynamicPlan, n: str, m: str, scales: str) -> str:
    """[1] bool: onnxruntime's NHWC cubic kernel copies this axis: its length is unchanged (and, for run-time
    scales, those scales are [1, >= 1, >= 1, 1])."""
    cond = em.node("Equal", [n, m], "same_length")
    if plan.nhwc_cubic == "run time":
        one = em.const([1.0], "one", np.float32)
        for axis, pos in plan.axes:
            s = _slice(em, scales, pos, pos + 1)
            test = em.node("Equal", [s, one], "is_one") if axis in (0, 3) else \
                em.node("Not", [em.node("Less", [s, one], "below_one")], "at_least_one")
            cond = em.node("And", [cond, test], "nhwc")
    return cond


def _emit_identity_probes(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    """Before opset 12: each axis contracted with all of R = Resize(I(n)) by a dense MatMul, the last axis first."""
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    scales = _checked_scales(em, plan) if plan.scales else ""
    h = _probe_height(em, plan, sx, sdy)
    matrices = {a: _axis_matrix(em, plan, a, pos, sx, sdy, scales, h, transposed=a == plan.rank - 1)
                for a, pos in plan.axes}
    cur = dy
    for a in sorted(matrices, reverse=True):
        cur = _contract(em, cur, _converted(em, plan, matrices[a], cur), a, plan.rank)
    return cur


def _branch(em: Emitter, build, elem: int, rank: int):
    """A subgraph of the nodes `build` emits, its output of `rank` (Emitter.subgraph). The lowering names its
    nodes after the If's."""
    return em.subgraph(lambda: [(build(), elem, rank)])


def _unpadded(em: Emitter, cur: str, sx: str, axes: list) -> str:
    """cur without the banded axes' padding rows: their first n rows (an Identity when `axes` is empty)."""
    if not axes:
        return em.node("Identity", [cur], "kept")
    ends = em.node("Gather", [sx, em.const(axes, "banded", np.int64)], "ends")
    return em.node("Slice", [cur, em.const([0] * len(axes), "starts", np.int64), ends,
                             em.const(axes, "axes", np.int64)], "unpadded")


def _converted(em: Emitter, plan: DynamicPlan, weights: str, like: str) -> str:
    """float32 weights in dY's type."""
    if not plan.convert:
        return em.node("CastLike", [weights, like], "weights")
    return weights if em.acc is np.float32 else em.node("Cast", [weights], "weights", to=TensorProto.DOUBLE)


def _slice(em: Emitter, src: str, start: int, end: int) -> str:
    return em.node("Slice", [src, em.const([start], "start", np.int64), em.const([end], "end", np.int64)], "part")


def _checked_scales(em: Emitter, plan: DynamicPlan) -> str:
    """scales reshaped to its expected length: a run-time scales of another length fails in onnxruntime."""
    return em.node("Reshape", [plan.scales, em.const([plan.n_scaled], "scales_len", np.int64)], "scales")


def _probe_height(em: Emitter, plan: DynamicPlan, sx: str, sdy: str) -> str:
    if not plan.stretch_probe:
        return em.const([1.0], "h", np.float32)
    changed = em.node("Cast", [em.node("Not", [em.node("Equal", [sx, sdy], "same")], "changed")], "changed",
                      to=TensorProto.FLOAT)
    return em.node("Add", [em.node("ReduceMax", [changed], "any", keepdims=1), em.const([1.0], "one", np.float32)],
                   "h")


def _axis_matrix(em: Emitter, plan: DynamicPlan, axis: int, pos: int, sx: str, sdy: str, scales: str, h: str,
                 transposed: bool) -> str:
    """R (n x m) of one axis, or R^T: onnxruntime's Resize of the identity matrix I(n), in float32.
    R^T is transposed as a 4-D tensor: onnxruntime fuses a 2-D Transpose (even through a Cast) into MatMul
    as FusedMatMul, which has no double kernel."""
    n, m = _slice(em, sx, axis, axis + 1), _slice(em, sdy, axis, axis + 1)
    eye = em.node("EyeLike", [em.node("ConstantOfShape", [em.node("Concat", [n, n], "square", axis=0)], "zeros")],
                  "eye")
    probe = em.node("Reshape", [eye, em.const([0, 1, 1, -1], "probe_shape", np.int64)], "probe")
    roi = _probe_roi(em, plan, pos)
    if plan.scales:
        s = _slice(em, scales, pos, pos + 1)
        factors = em.node("Concat", [em.const([1.0, 1.0], "ones", np.float32), h, s], "probe_scales", axis=0)
        inputs = [probe, factors] if em.opset < 11 else [probe, roi, factors]
    else:
        sizes = em.node("Concat", [n, em.const([1, 1], "ones", np.int64), m], "probe_sizes", axis=0)
        inputs = [probe, roi, em.const([], "no_scales", np.float32) if em.opset < 13 else "", sizes]
    resized = em.node("Resize", inputs, "weights", **plan.probe_attrs)
    row = _slice_axis2(em, resized)                    # [n, 1, 1, m]
    if transposed:      # [m, 1, 1, n]: a 4-D Transpose that onnxruntime does not fuse into MatMul
        row = em.node("Transpose", [row], "matrix_t", perm=[3, 1, 2, 0])
    matrix = em.node("Reshape", [row, em.const([0, -1], "matrix_shape", np.int64)], "matrix")
    if plan.nhwc_cubic and axis in (1, 2):
        eye = em.node("EyeLike", [em.node("ConstantOfShape", [em.node("Concat", [n, m], "rect", axis=0)], "zeros")],
                      "eye")
        matrix = em.node("Where", [_nhwc_copies(em, plan, n, m, scales), eye, matrix], "copied")
    return matrix


def _slice_axis2(em: Emitter, src: str) -> str:
    """The probe's row h = 0 (axis 2)."""
    return em.node("Slice", [src, em.const([0], "start", np.int64), em.const([1], "end", np.int64),
                             em.const([2], "axis", np.int64)], "row")


def _probe_roi(em: Emitter, plan: DynamicPlan, pos: int) -> str:
    """[0, 0, 0, start, 1, 1, 1, end] for tf_crop_and_resize; otherwise no roi (an empty one before opset 13)."""
    if plan.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return em.const([], "no_roi", np.float32) if em.opset < 13 else ""
    roi = em.node("Cast", [plan.roi], "roi", to=TensorProto.FLOAT)
    start = _slice(em, roi, pos, pos + 1)
    end = _slice(em, roi, plan.n_scaled + pos, plan.n_scaled + pos + 1)
    return em.node("Concat", [em.const([0.0] * 3, "zeros", np.float32), start,
                              em.const([1.0] * 3, "ones", np.float32), end], "probe_roi", axis=0)


def _contract(em: Emitter, cur: str, matrix: str, axis: int, rank: int) -> str:
    """cur's `axis` (size m) contracted with matrix (n x m; m x n for the last axis) into size n."""
    if axis == rank - 1:
        return em.node("MatMul", [cur, matrix], "contracted")
    if axis == rank - 2:
        return em.node("MatMul", [matrix, cur], "contracted")
    shape = em.node("Shape", [cur], "shape")
    folded = em.node("Reshape", [cur, em.const([0] * (axis + 1) + [-1], "fold", np.int64)], "folded")
    product = em.node("MatMul", [matrix, folded], "contracted")
    back = em.node("Concat", [_slice(em, shape, 0, axis), em.const([-1], "minus_one", np.int64),
                              _slice(em, shape, axis + 1, rank)], "unfold", axis=0)
    return em.node("Reshape", [product, back], "unfolded")
