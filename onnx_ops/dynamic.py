"""ResizeGrad whose sizes or scales are known only at run time: per-axis matrices built inside the graph.

For each axis the node may resize, onnxruntime's own Resize is run on an identity matrix. The probe
I(n) viewed as [n, 1, 1, n] and resized by scales [1, 1, h, s] (or sizes [n, 1, 1, m]) gives
R[j, 0, 0, o] = the weight of input j in output o, in the runtime's float32 arithmetic: its coordinates
per coordinate_transformation_mode, its nearest ties, cubic_coeff_a, exclude_outside, antialias and the
roi of tf_crop_and_resize (extrapolated outputs read weight 0, also on an axis that antialias copies).
dX is dY contracted with R axis by axis, every sum in a fixed order (deterministic on every run and
thread count): the last axis by one MatMul with R^T (what the static lowering does there too), every other
axis, from opset 12, by the band form built from R at run time (onnx_ops.dynamic_band: windows of dY rows
per tile of X rows, one batched MatMul; opset 10-11 keep a dense MatMul). Banded axes from 2 up go first,
then the last axis, then axes 0 and 1, which are seldom resized: an If skips them where their run-time
matrix is the identity (a symbolic batch that keeps its size) at the cost of one copy of the final dX,
which also drops the band's padding rows (both Ifs from opset 12 with dY's type known). An outer If
returns zeros for a dY with an empty axis, where the probes and reshapes would fail.

onnxruntime copies its input, without resampling, when the whole output shape equals the input shape.
An axis whose size does not change (a scale in (1, 2)) while another one does is resampled, so the probe
then also stretches its size-1 axis to h = 2 (value-exact for every mode but plain cubic, whose
weights sum to 1 within a float32 rounding).

Cost per row: O(n * window) on banded axes, O(n * m) on the last axis; building R costs O(n * m) once
per run (onnxruntime's cubic Resize is the slow part there: about 4 ms per 96-long probe on one core).
An inf or NaN in dY reaches the dX rows whose window holds it on a banded axis, the whole dX line on the
last axis (0 x inf).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from .dynamic_band import BAND_MIN_OPSET, band_plan, band_weights, contract_band
from .forms import Emitter

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
    MatMul, the others with the band form (onnx_ops.dynamic_band) from opset 12, a dense MatMul before.
    From opset 12 (dY's type known), a dY with an empty axis (a scale that rounds a length down to 0) gives
    zeros, an empty X an empty dX: an If around the path, whose probes and reshapes cannot take empty axes."""
    if em.opset < BAND_MIN_OPSET or not plan.convert:
        return _emit_nonempty(em, dy, x, plan)
    dims = em.node("Concat", [em.node("Shape", [dy], "dyshape"), em.node("Shape", [x], "xshape")], "dims", axis=0)
    empty = em.node("Equal", [em.node("ReduceMin", [dims], "shortest", keepdims=1), em.const([0], "zero", np.int64)],
                    "empty")
    elem = TensorProto.FLOAT if em.acc is np.float32 else TensorProto.DOUBLE
    zero = helper.make_tensor("zero", elem, [1], [0.0])
    zeros = _branch(em, lambda: em.node("ConstantOfShape", [em.node("Shape", [x], "xshape")], "zeros", value=zero),
                    elem, plan.rank)
    return em.node("If", [empty], "dx", then_branch=zeros, else_branch=_branch(
        em, lambda: _emit_nonempty(em, dy, x, plan), elem, plan.rank))


def _emit_nonempty(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    scales = _checked_scales(em, plan) if plan.scales else ""
    h = _probe_height(em, plan, sx, sdy)
    banded, last = banded_axes(plan, em.opset), plan.rank - 1
    matrices = {a: _axis_matrix(em, plan, a, pos, sx, sdy, scales, h, transposed=a == last) for a, pos in plan.axes}

    def contract(src: str, axes: list) -> str:
        for a in axes:
            src = _contract_axis(em, plan, src, matrices[a], a, a in banded)
        return src

    if not banded:                  # the last axis first, as before bands
        return contract(dy, sorted(matrices, reverse=True))
    late = [a for a in banded if a < 2] if plan.convert else []
    early = [a for a in banded if a not in late]
    cur = contract(dy, early + [last] * (last in matrices))
    if not late:
        return _unpadded(em, cur, sx, early)
    # batch and channels (axes 0, 1) are seldom resized: last, where the data is smallest, and skipped when
    # their run-time matrices are the identity (an If: one copy, which also drops the other axes' padding)
    identity = [_is_identity(em, matrices[a]) for a in late]
    cond = identity[0] if len(identity) == 1 else em.node("And", identity, "identity")
    elem = TensorProto.FLOAT if em.acc is np.float32 else TensorProto.DOUBLE
    keep = _branch(em, lambda: _unpadded(em, cur, sx, early), elem, plan.rank)
    resized = _branch(em, lambda: _unpadded(em, contract(cur, late), sx, banded), elem, plan.rank)
    return em.node("If", [cond], "axes_done", then_branch=keep, else_branch=resized)


def banded_axes(plan: DynamicPlan, opset: int) -> list:
    """The axes contracted with the run-time band form: every resized axis but the last, from opset 12."""
    return sorted(a for a, _ in plan.axes if a != plan.rank - 1) if opset >= BAND_MIN_OPSET else []


def axis_forms(plan: DynamicPlan, opset: int) -> tuple:
    """The form each of plan.axes takes, as the lowering report prints it."""
    banded = banded_axes(plan, opset)
    return tuple("dynamic: Resize(identity) + " + ("band" if a in banded else "MatMul") for a, _ in plan.axes)


def _contract_axis(em: Emitter, plan: DynamicPlan, cur: str, matrix: str, axis: int, band: bool) -> str:
    """cur's `axis` contracted with the float32 matrix: the band form, or a dense MatMul."""
    if not band:
        return _contract(em, cur, _converted(em, plan, matrix, cur), axis, plan.rank)
    blocks, index, m = band_plan(em, matrix)
    weights = _converted(em, plan, band_weights(em, blocks, index), cur)
    return contract_band(em, cur, weights, index, m, axis, plan.rank)


def _is_identity(em: Emitter, matrix: str) -> str:
    """[1] bool: the run-time matrix is square and the identity."""
    dims = em.node("Shape", [matrix], "mdims")
    square = em.node("Equal", [em.node("ReduceMin", [dims], "n_or_m", keepdims=1),
                               em.node("ReduceMax", [dims], "n_or_m", keepdims=1)], "square")
    eye = em.node("Cast", [em.node("Equal", [matrix, em.node("EyeLike", [matrix], "eye")], "eye_entry")], "eye_entry",
                  to=TensorProto.INT32)
    every = em.node("Cast", [em.node("ReduceMin", [eye], "all_eye", keepdims=1)], "all_eye", to=TensorProto.BOOL)
    return em.node("And", [square, em.node("Reshape", [every, em.const([1], "one", np.int64)], "all_eye")],
                   "identity")


def _branch(em: Emitter, build, elem: int, rank: int):
    """A subgraph of the nodes `build` emits, its output of `rank`. The constants it made become Constant
    nodes inside it: every initializer of the model stays used by a node of the main graph (tools that prune
    initializers look there only). The lowering names its nodes after the If's."""
    outer, em.nodes, first_init = em.nodes, [], len(em.inits)
    try:
        out = build()
        nodes = em.nodes
    finally:
        em.nodes = outer
    consts = [helper.make_node("Constant", [], [t.name], value=t) for t in em.inits[first_init:]]
    del em.inits[first_init:]
    return helper.make_graph(consts + nodes, em.name("branch"), [],
                             [helper.make_tensor_value_info(out, elem, [None] * rank)])


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
        matrix = _copy_same_length(em, plan, matrix, n, m, scales)
    return matrix


def _copy_same_length(em: Emitter, plan: DynamicPlan, matrix: str, n: str, m: str, scales: str) -> str:
    """The identity where onnxruntime's NHWC cubic kernel copies this axis: its length is unchanged (and, for
    run-time scales, those scales are [1, >= 1, >= 1, 1])."""
    cond = em.node("Equal", [n, m], "same_length")
    if plan.nhwc_cubic == "run time":
        one = em.const([1.0], "one", np.float32)
        for axis, pos in plan.axes:
            s = _slice(em, scales, pos, pos + 1)
            test = em.node("Equal", [s, one], "is_one") if axis in (0, 3) else \
                em.node("Not", [em.node("Less", [s, one], "below_one")], "at_least_one")
            cond = em.node("And", [cond, test], "nhwc")
    eye = em.node("EyeLike", [em.node("ConstantOfShape", [em.node("Concat", [n, m], "rect", axis=0)], "zeros")],
                  "eye")
    return em.node("Where", [cond, eye, matrix], "copied")


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
