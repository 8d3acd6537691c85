"""ONNX Resize / com.microsoft ResizeGrad attributes and roi/scales/sizes (opsets 10-19) -> canonical: the reader.

Scale semantics follow onnxruntime's CPU kernel: with a scales input the coordinate uses that
float32 scale; with sizes it uses float32(out / in).

Three named semantics decide how a nearest coordinate becomes an index (SEMANTICS, onnx_semantics.py): every
function here takes one; none reads the installed onnxruntime. The writer, canonical -> ONNX, is onnx_writer.py;
dml_desc.conventions.onnx holds both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence, SupportsFloat, TypedDict

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding, Scale, fraction, ratio
from .. import budget
from ..errors import DescError, float32_number, is_number, one_of, require
from .common import dataclass_from_json
from .onnx_semantics import (NO_RUNTIME_SEMANTICS, ORT_TIE_TOLERANCE, SEMANTICS, STAND_IN_SEMANTICS,  # noqa: F401
                             check_semantics,
                             describe_semantics, installed_runtime, installed_semantics, resolve_semantics,
                             semantics_of)

CTM_BY_OPSET = {
    10: ("asymmetric",),
    11: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
         "tf_crop_and_resize"),
    13: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"),
    18: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"),
    19: ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_crop_and_resize"),
}
ATTRS_BY_OPSET = {
    10: {"mode"},
    11: {"mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
         "extrapolation_value", "nearest_mode"},
}
ATTRS_BY_OPSET[13] = ATTRS_BY_OPSET[11]
ATTRS_BY_OPSET[18] = ATTRS_BY_OPSET[11] | {"antialias", "axes", "keep_aspect_ratio_policy"}
ATTRS_BY_OPSET[19] = ATTRS_BY_OPSET[18]
MODES = {"nearest": Mode.NEAREST, "linear": Mode.LINEAR, "cubic": Mode.CUBIC}
NEAREST_MODES = {r.value: r for r in Rounding}
POLICIES = ("stretch", "not_larger", "not_smaller")
# The ai.onnx opset an ONNX description (Resize, or the deconv's Conv) is written at, and read at when it names none:
# 19, where Resize-19 (the newest Resize schema) begins.
DEFAULT_OPSET = 19
MAX_OPSET = 28      # Resize-19 is still the newest Resize schema at ai.onnx opset 28 (onnx 1.23)
# Read, not written: modes onnxruntime runs at opsets whose Resize schema lacks them ({mode: (from opset, why)}):
# tf_half_pixel_for_nn after Resize-13 dropped it; half_pixel_symmetric at opsets 13-18, before Resize-19 added it
# (onnxruntime 1.19.2 and 1.32 run both; the checker refuses half_pixel_symmetric in a Resize-11 model).
RUNTIME_ONLY_CTM = {"tf_half_pixel_for_nn": (12, "the ONNX spec dropped it at opset 13"),
                    "half_pixel_symmetric": (13, "the ONNX spec added it at opset 19")}


def schema_opset(opset: int) -> int:
    """The Resize schema version in force at ai.onnx `opset` (10, 11, 13, 18 or 19); opsets 10 to MAX_OPSET."""
    require(isinstance(opset, int) and not isinstance(opset, bool) and 10 <= opset <= MAX_OPSET, "opset", opset,
            f"Resize is defined for opsets 10 to {MAX_OPSET} (Resize-19 from opset 19 on)")
    return max(v for v in CTM_BY_OPSET if v <= opset)


@dataclass
class OnnxResize:
    """A Resize (or ResizeGrad) node's attributes and constant inputs, plus the shape of X."""
    input_shape: Sequence[int]
    attributes: dict[str, Any] = field(default_factory=dict)    # Any: JSON values, checked by to_canonical
    roi: Optional[Sequence[float]] = None
    scales: Optional[Sequence[float]] = None
    sizes: Optional[Sequence[int]] = None
    opset: int = DEFAULT_OPSET
    op_type: str = "Resize"

    def attr(self, name: str, default: Any = None) -> Any:
        """The node attribute `name`, or `default` when it is not set."""
        return self.attributes.get(name, default)

    def to_json(self) -> dict[str, object]:
        """The JSON form read by `dml-desc convert --from onnx` (op_type, opset, input_shape, attributes, and
        roi / scales / sizes when set).
        """
        out: dict[str, object] = {"op_type": self.op_type, "opset": self.opset,
                                  "input_shape": list(self.input_shape), "attributes": dict(self.attributes)}
        for name in ("roi", "scales", "sizes"):
            if getattr(self, name) is not None:
                out[name] = [float(v) if name != "sizes" else int(v) for v in getattr(self, name)]
        return out

    @classmethod
    def from_json(cls, obj: object) -> "OnnxResize":
        """An OnnxResize from its JSON form; unknown keys are refused by name."""
        node = dataclass_from_json(cls, obj, "onnx")
        require(bool(node.input_shape), "input_shape", node.input_shape, "is required (the shape of X)")
        return node


def _validate(node: OnnxResize) -> tuple[int, str, str, str, str]:
    opset = schema_opset(node.opset)
    require(node.op_type in ("Resize", "ResizeGrad"), "op_type", node.op_type, "must be Resize or ResizeGrad")
    shape = node.input_shape
    require(isinstance(shape, (list, tuple)) and len(shape) >= 1 and
            all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape),
            "input_shape", shape, "must be a non-empty list of integers >= 1")
    budget.check_shape(shape, "input_shape")
    require(isinstance(node.attributes, dict), "attributes", node.attributes, "must be an object")
    for name in node.attributes:
        require(name in ATTRS_BY_OPSET[opset], name, node.attributes[name],
                f"is not a Resize-{opset} attribute (it has {sorted(ATTRS_BY_OPSET[opset])})")
    mode = one_of(node.attr("mode", "nearest"), list(MODES) if opset > 10 else ["nearest", "linear"], "mode")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel" if opset > 10 else "asymmetric")
    runtime_only = isinstance(ctm, str) and ctm in RUNTIME_ONLY_CTM and opset >= RUNTIME_ONLY_CTM[ctm][0]
    require(ctm in CTM_BY_OPSET[opset] or runtime_only,
            "coordinate_transformation_mode", ctm, f"Resize-{opset} allows {list(CTM_BY_OPSET[opset])}")
    nearest = one_of(node.attr("nearest_mode", "round_prefer_floor"), list(NEAREST_MODES), "nearest_mode")
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    require(policy in POLICIES, "keep_aspect_ratio_policy", policy, f"must be one of {list(POLICIES)}")
    for name in ("antialias", "exclude_outside"):
        require(node.attr(name, 0) in (0, 1) and not isinstance(node.attr(name, 0), (bool, float)), name,
                node.attr(name), "must be the integer 0 or 1")
    for name in ("cubic_coeff_a", "extrapolation_value"):
        float32_number(node.attr(name, 0.0), name)        # an ONNX float attribute
    return opset, mode, ctm, nearest, policy


def _axes(node: OnnxResize) -> tuple[int, ...]:
    rank = len(node.input_shape)
    axes = node.attr("axes")
    if axes is None:
        return tuple(range(rank))
    require(isinstance(axes, (list, tuple)) and all(isinstance(a, int) and not isinstance(a, bool)
                                                                and -rank <= a < rank for a in axes),
            "axes", axes, f"every axis must be an integer in [-{rank}, {rank - 1}]")
    norm = tuple(a % rank for a in axes)
    require(len(set(norm)) == len(norm), "axes", axes, "must not repeat an axis")
    return norm


def _f32(v: SupportsFloat) -> float:
    return float(np.float32(v))


def _sizes_and_scales(node: OnnxResize, axes: Sequence[int], policy: str) -> tuple[list[int], list[float]]:
    """Per resized axis: (output size, float32 scale the coordinate uses)."""
    for name in ("scales", "sizes", "roi"):
        value = getattr(node, name)
        require(value is None or isinstance(value, (list, tuple)), name, value, "must be a list")
    given_scales, given_sizes = node.scales or (), node.sizes or ()
    has_scales, has_sizes = len(given_scales) > 0, len(given_sizes) > 0
    require(has_scales != has_sizes, "scales/sizes", {"scales": node.scales, "sizes": node.sizes},
            "exactly one of the scales and sizes inputs must be given")
    ins = [node.input_shape[a] for a in axes]
    if has_scales:
        require(len(given_scales) == len(axes), "scales", list(given_scales),
                f"must have {len(axes)} entries (one per resized axis)")
        for i, v in enumerate(given_scales):
            float32_number(v, f"scales[{i}]", positive=True)      # a float32 tensor: no overflow to inf
        require(policy == "stretch" or schema_opset(node.opset) < 18, "keep_aspect_ratio_policy", policy,
                "applies only with the sizes input")
        scales = [_f32(s) for s in given_scales]
        require(all(s * float(np.float32(n)) < 2 ** 63 for s, n in zip(scales, ins)), "scales", list(given_scales),
                "give an output too large to count")
        outs = [int(np.floor(np.float32(s) * np.float32(n))) for s, n in zip(scales, ins)]
        _check_budget(node, axes, outs, "scales")
        for a, o in zip(axes, outs):
            require(o >= 1, "scales", list(given_scales), f"give an empty output on axis {a}")
        return outs, scales
    require(len(given_sizes) == len(axes), "sizes", list(given_sizes), f"must have {len(axes)} entries")
    require(all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in given_sizes), "sizes",
            list(given_sizes), "every size must be an integer >= 1")
    _check_budget(node, axes, given_sizes, "sizes")
    if policy == "stretch":
        return list(given_sizes), [_f32(np.float32(o) / np.float32(n)) for o, n in zip(given_sizes, ins)]
    pick = min if policy == "not_larger" else max
    s = pick(_f32(np.float32(o) / np.float32(n)) for o, n in zip(given_sizes, ins))
    # onnxruntime: std::round(float(scale * in)), halves away from zero (np.round would go to even)
    return [math.floor(float(np.float32(s) * np.float32(n)) + 0.5) for n in ins], [s] * len(ins)


def _check_budget(node: OnnxResize, axes: Sequence[int], outs: Sequence[int], field: str) -> None:
    """The size budget on the output shape, before any map or table is built (dml_desc.budget)."""
    out_shape = list(node.input_shape)
    for a, o in zip(axes, outs):
        out_shape[a] = o
    budget.check_shape(out_shape, field)
    for k, (a, o) in enumerate(zip(axes, outs)):
        if o != node.input_shape[a]:
            budget.check_axis(o, f"{field}[{k}]")
            budget.check_axis(node.input_shape[a], f"input_shape[{a}]")


def _roi(node: OnnxResize, axes: Sequence[int]) -> list[tuple[float, float]]:
    rank = len(axes)
    require(node.roi is not None and len(node.roi) == 2 * rank and all(is_number(v) for v in node.roi),
        "roi", node.roi, f"tf_crop_and_resize needs roi with 2*{rank} finite numbers [starts..., ends...]")
    roi = node.roi or ()            # checked above: 2 * rank numbers
    for i, v in enumerate(roi):
        float32_number(v, f"roi[{i}]")          # a float tensor: no overflow to inf
    return [(_f32(roi[i]), _f32(roi[rank + i])) for i in range(rank)]


def _axis(ctm: str, n_in: int, n_out: int, scale: Scale, rounding: Rounding,
          roi_pair: tuple[float, float] | None = None) -> AxisMap:
    """One ONNX coordinate_transformation_mode as a canonical axis map (onnxruntime's arithmetic)."""
    if n_in == n_out == 1:
        return AxisMap.identity(1)          # every coordinate lands on index 0 (tf_crop's x is 0 too)
    if ctm == "tf_half_pixel_for_nn" and scale == 1.0:
        return AxisMap.identity(n_in)       # onnxruntime copies scale-1 axes (the formula would shift by 0.5)
    if ctm == "tf_crop_and_resize" and scale == 1.0:
        return AxisMap.identity(n_in)       # onnxruntime leaves scale-1 axes alone and ignores their roi
    if ctm in ("half_pixel", "pytorch_half_pixel"):
        if ctm == "pytorch_half_pixel" and n_out <= 1:
            return AxisMap(n_in, n_out, math.inf, 0.0, 0.0, rounding, aa_scale=scale)
        return AxisMap(n_in, n_out, scale, 0.5, -0.5, rounding)
    if ctm == "asymmetric":
        return AxisMap(n_in, n_out, scale, 0.0, 0.0, rounding)
    if ctm == "tf_half_pixel_for_nn":
        return AxisMap(n_in, n_out, scale, 0.0, -0.5, rounding)
    if ctm == "align_corners":
        s = math.inf if n_out == 1 or n_in == 1 else ratio(n_out - 1, n_in - 1)
        return AxisMap(n_in, n_out, s, 0.0, 0.0, rounding, aa_scale=scale)
    if ctm == "half_pixel_symmetric":
        adjustment = _f32(np.float32(n_out) / np.float32(_f32(np.float32(scale) * np.float32(n_in))))
        offset = _f32(np.float32(n_in / 2) * np.float32(1 - adjustment))
        return AxisMap(n_in, n_out, scale, 0.5 - offset, -0.5, rounding, single_rounding=True)  # ORT: in double
    assert roi_pair is not None  # tf_crop_and_resize: to_canonical reads one per axis (_roi)
    start, end = roi_pair
    if n_out == 1:
        return AxisMap(n_in, n_out, math.inf, -0.5 * (start + end) * (n_in - 1), 0.0, rounding,
                       extrapolate=True, aa_scale=scale)
    span = fraction(_f32(end - start)) * (n_in - 1)
    s = math.inf if span == 0 else Fraction(n_out - 1) / abs(span)   # a flipped roi (end < start): coords say it
    return AxisMap(n_in, n_out, s, -start * (n_in - 1), 0.0, rounding, extrapolate=True, aa_scale=scale,
                   coords=_tf_crop_coords(n_in, n_out, start, end))


def _exact_axis(ctm: str, n_in: int, n_out: int, scale: Scale, rounding: Rounding,
                roi_pair: tuple[float, float] | None = None) -> AxisMap:
    """The ONNX spec's formulas evaluated exactly ("onnx-spec"): the float32 scale as given (sizes: out / in),
    no float32 rounding of x. Only the arithmetic differs from `_axis`."""
    ax = _axis(ctm, n_in, n_out, scale, rounding, roi_pair)
    if ax.is_identity:
        return ax
    if ctm == "half_pixel_symmetric":
        adjustment = Fraction(n_out) / (fraction(scale) * n_in)
        return ax.with_(in_offset=Fraction(1, 2) - Fraction(n_in, 2) * (1 - adjustment), single_rounding=False,
                        exact=True)
    if ctm == "tf_crop_and_resize" and n_out > 1:
        assert roi_pair is not None  # tf_crop_and_resize: to_canonical reads one per axis (_roi)
        start, end = (fraction(v) for v in roi_pair)
        span = (end - start) * (n_in - 1)
        if span < 0:        # a flipped roi: the coordinates, exact up to float64, run backwards
            return ax.with_(coords=tuple(float(start * (n_in - 1) + o * span / (n_out - 1)) for o in range(n_out)),
                            exact=True)
        return ax.with_(scale=math.inf if span == 0 else Fraction(n_out - 1) / span, coords=None, exact=True)
    return ax.with_(exact=True)


def _spec_axis(ctm: str, n_in: int, n_out: int, scale: Scale, rounding: Rounding,
               roi_pair: tuple[float, float] | None = None) -> AxisMap:
    """onnx-spec: the formulas as onnx's reference evaluator (onnx.reference) evaluates them, exactly. Where they
    differ from onnxruntime: align_corners, tf_crop_and_resize and pytorch_half_pixel read the unrounded output
    length L = scale * in (X [1, 2], scales [1, 1.6]: L = 3.2, three outputs at x = o / 2.2), pytorch_half_pixel
    with L == 1 reads x = -0.5, and an axis is copied only when its scale is 1 (and, tf_crop_and_resize, its roi
    is [0, 1]): onnxruntime's copy rules (same output shape, antialias, scale-1 crops) are not the spec's."""
    # The offsets below are exact Fractions, which canonical.AxisMap types as float (hence their type: ignore).
    length = fraction(scale) * n_in
    if ctm == "align_corners":
        s = math.inf if length == 1 or n_in == 1 else (length - 1) / (n_in - 1)
        return AxisMap(n_in, n_out, s, 0.0, 0.0, rounding, aa_scale=scale, exact=True)
    if ctm == "pytorch_half_pixel" and length == 1:
        return AxisMap(n_in, n_out, math.inf, Fraction(1, 2),  # type: ignore[arg-type]  # a Fraction offset
                       0.0, rounding, aa_scale=scale, exact=True)
    if ctm == "pytorch_half_pixel" and not (n_in == n_out and scale == 1):    # L > 1: half_pixel, even for 1 output
        return AxisMap(n_in, n_out, scale, 0.5, -0.5, rounding, exact=True)
    if ctm == "tf_crop_and_resize":
        assert roi_pair is not None  # tf_crop_and_resize: to_canonical reads one per axis (_roi)
        start, end = (fraction(v) for v in roi_pair)
        if scale == 1 and start == 0 and end == 1:
            return AxisMap.identity(n_in)
        span = (end - start) * (n_in - 1)
        if length == 1:
            return AxisMap(n_in, n_out, math.inf,
                           -(start + end) / 2 * (n_in - 1),  # type: ignore[arg-type]  # a Fraction offset
                           0.0, rounding, extrapolate=True, aa_scale=scale, exact=True)
        if span < 0:        # a flipped roi: the coordinates, exact up to float64, run backwards
            return AxisMap(n_in, n_out, 1.0, 0.0, 0.0, rounding, extrapolate=True, aa_scale=scale, exact=True,
                           coords=tuple(float(start * (n_in - 1) + o * span / (length - 1)) for o in range(n_out)))
        return AxisMap(n_in, n_out, math.inf if span == 0 else (length - 1) / span,
                       -start * (n_in - 1),  # type: ignore[arg-type]  # a Fraction offset
                       0.0, rounding, extrapolate=True, aa_scale=scale, exact=True)
    if n_in == n_out and scale == 1:
        return AxisMap.identity(n_in)
    return _exact_axis(ctm, n_in, n_out, scale, rounding, roi_pair)


def _tf_crop_coords(n_in: int, n_out: int, start: float, end: float) -> tuple[float, ...]:
    """onnxruntime's float32 evaluation: start*(in-1) + (o*(end-start)*(in-1)) / (out-1), step by step."""
    f = np.float32
    o = np.arange(n_out, dtype=f)
    x = f(start) * f(n_in - 1) + ((o * (f(end) - f(start))) * f(n_in - 1)) / f(n_out - 1)
    return tuple(x.astype(np.float64))


class _Options(TypedDict):
    """The Resampling options a node's attributes give."""
    cubic_coeff_a: float
    exclude_outside: bool
    antialias: bool
    extrapolation_value: float


def to_canonical(node: OnnxResize, semantics: Optional[str] = None) -> Resampling:
    """The canonical map of a Resize / ResizeGrad under `semantics`, one of SEMANTICS: required (None is refused
    by name; `installed_semantics()` gives the installed onnxruntime's)."""
    semantics = check_semantics(semantics)
    opset, mode, ctm, nearest, policy = _validate(node)
    if semantics != "onnx-spec":
        _refuse_ort_exclude_outside(node, mode)
    axes = _axes(node)
    outs, scales = _sizes_and_scales(node, axes, policy)
    if semantics == "onnx-spec":
        outs = _spec_lengths(node, axes, policy, outs)
    rois = _roi(node, axes) if ctm == "tf_crop_and_resize" else [None] * len(axes)
    maps = [AxisMap.identity(n) for n in node.input_shape]
    notes: tuple[str, ...] = () if ctm in CTM_BY_OPSET[opset] else (
        f"coordinate_transformation_mode {ctm} is not in Resize-{opset} ({RUNTIME_ONLY_CTM[ctm][1]}); "
        "onnxruntime still runs it, and this map follows onnxruntime",)
    kwargs = _Options(cubic_coeff_a=float(node.attr("cubic_coeff_a", -0.75)),
                      exclude_outside=bool(node.attr("exclude_outside", 0)), antialias=bool(node.attr("antialias", 0)),
                      extrapolation_value=float(node.attr("extrapolation_value", 0.0)))
    spec = semantics == "onnx-spec"
    if not spec and all(node.input_shape[a] == o for a, o in zip(axes, outs)) and any(s != 1 for s in scales):
        return Resampling(tuple(maps), MODES[mode], **kwargs).noted(*notes,
            "onnxruntime copies the input when the output shape equals the input shape, whatever the "
            "scales; this map follows it (the ONNX formulas would resample)")
    for a, n_out, s, roi_pair in zip(axes, outs, scales, rois):
        rounding = NEAREST_MODES[nearest]
        if opset == 10:   # onnxruntime's Resize-10 rule: ceil when downsampling, truncate otherwise
            rounding = Rounding.CEIL if s < 1 else Rounding.FLOOR
        if spec:
            maps[a] = _spec_axis(ctm, node.input_shape[a], n_out, _spec_scale(node, a, n_out, s), rounding, roi_pair)
        else:
            maps[a] = _axis(ctm, node.input_shape[a], n_out, s, rounding, roi_pair)
            if mode == "nearest" and rounding in (Rounding.ROUND_PREFER_FLOOR, Rounding.ROUND_PREFER_CEIL) \
                    and not maps[a].is_identity:
                maps[a] = maps[a].with_(tie_tolerance=ORT_TIE_TOLERANCE[semantics])
        if not spec and kwargs["antialias"] and mode != "nearest" and n_out == node.input_shape[a]:
            maps[a] = _antialias_copy(maps[a])     # onnxruntime's antialias kernels copy same-length axes
        elif not spec and n_out == node.input_shape[a] and \
                nhwc_cubic(len(node.input_shape), mode, kwargs["antialias"], dict(zip(axes, scales))):
            maps[a] = AxisMap.identity(n_out)      # onnxruntime 1.32's NHWC cubic kernel copies same-length axes
            notes += (f"axis {a} keeps its length with scale {s}: onnxruntime's NHWC cubic kernel copies it (the "
                      "ONNX formulas and its NCHW kernels would resample it); this map follows onnxruntime",)
    if not spec and kwargs["antialias"] and mode != "nearest" and ctm == "tf_crop_and_resize":
        _refuse_nhwc_crop(node.input_shape, dict(zip(axes, scales)), maps, node.roi or ())   # _roi checked it
    return Resampling(tuple(maps), MODES[mode], **kwargs).noted(*notes)


def _refuse_ort_exclude_outside(node: OnnxResize, mode: str) -> None:
    """onnxruntime (1.19.2 and 1.32, measured) refuses to create a Resize with exclude_outside=1 unless the mode is
    cubic or antialias is on: no forward runs, so there is no gradient to describe (onnx-spec reads it)."""
    require(not node.attr("exclude_outside", 0) or mode == "cubic" or node.attr("antialias", 0), "exclude_outside",
            1, f"with mode {mode} and no antialias is refused by onnxruntime (exclude_outside applies to cubic, or to "
            "linear with antialias=1): drop it, or read the node with semantics onnx-spec")


def nhwc_cubic(rank: int, mode: str, antialias: bool, scales: dict[int, float]) -> bool:
    """True where onnxruntime (1.32, measured) runs its 4-D NHWC cubic kernel: scales [1, h, w, 1] with h, w >= 1,
    no antialias. That kernel copies an axis that keeps its length whatever its scale (shape [1, 3, 1, 1],
    scales [1, 1.1, 2, 1]: axis 1 is copied), where the NCHW kernels resample it. (1.19.2 refuses this forward.)"""
    return (rank == 4 and mode == "cubic" and not antialias and scales.get(0, 1.0) == 1.0
            and scales.get(3, 1.0) == 1.0 and scales.get(1, 1.0) >= 1.0 and scales.get(2, 1.0) >= 1.0)


def _refuse_nhwc_crop(shape: Sequence[int], scales: dict[int, float], maps: Sequence[AxisMap],
                      roi: Sequence[float]) -> None:
    """onnxruntime's 4-D antialias kernel for scales [1, h, w, 1] (its NHWC path) extrapolates with weights that
    depend on the last axis (measured on 1.19.2 and 1.32: shape [1, 3, 1, 2] -> [1, 2, 1, 2], roi
    [0, -0.2, 0, 0, 1, 1, 1, 1]); that forward is not separable, and no per-axis map is its transpose."""
    from ..weights import coordinates
    if len(shape) != 4 or shape[3] == 1 or scales.get(0, 1.0) != 1.0 or scales.get(3, 1.0) != 1.0:
        return
    for a in (1, 2):
        x = coordinates(maps[a]) if maps[a].extrapolate else None
        if x is not None and bool(((x < 0) | (x > maps[a].in_size - 1)).any()):
            raise DescError("roi", list(roi), f"with antialias on 4-D input whose axes 0 and 3 keep scale 1 and "
                            f"axis 3 of size {shape[3]} > 1, onnxruntime's forward writes extrapolated outputs (here "
                            f"on axis {a}) with weights that depend on axis 3: not a separable resize, so no gradient "
                            "here is its transpose (docs/adjoint.md); crop inside the input, or move the channels "
                            "off the last axis")


def _antialias_copy(ax: AxisMap) -> AxisMap:
    """The copy onnxruntime's antialias kernels make of a same-length axis. Under tf_crop_and_resize they still
    write extrapolation_value where the axis's own roi coordinate leaves [0, in-1] (measured on 1.19.2 and 1.32):
    such rows keep that coordinate, the others read x = o, which the filter copies with weight 1."""
    if not ax.extrapolate:
        return AxisMap.identity(ax.out_size)
    from ..weights import coordinates
    x = coordinates(ax)
    outside = (x < 0) | (x > ax.in_size - 1)
    if not outside.any():
        return AxisMap.identity(ax.out_size)
    return AxisMap(ax.in_size, ax.out_size, 1.0, extrapolate=True,
                   coords=tuple(np.where(outside, x, np.arange(ax.out_size, dtype=np.float64))))


def _spec_lengths(node: OnnxResize, axes: Sequence[int], policy: str, outs: list[int]) -> list[int]:
    """onnx-spec's output lengths, as onnx's reference evaluator computes them (onnx 1.17 to 1.23), where
    onnxruntime rounds through float32: with scales, floor(scale * in) of the float32 scale in float64 (exact:
    X [5], scales [2.6] gives 12, onnxruntime 13; onnx's shape inference says 12 too); with sizes and a
    keep_aspect_ratio_policy, int(r * in + 0.5) in float64 of the smallest / largest ratio r = out / in (ratio
    199/198 on length 99 gives 99, where the exact 99.5 rounds to 100). The spec's roi factor is read by neither."""
    ins = [node.input_shape[a] for a in axes]
    if node.scales:
        lengths = [math.floor(_f32(s) * n) for s, n in zip(node.scales, ins)]
        for a, o in zip(axes, lengths):
            require(o >= 1, "scales", list(node.scales), f"give an empty output on axis {a} (onnx-spec: floor of "
                    "scale * in, unrounded)")
        return lengths
    if policy == "stretch":
        return outs
    ratios = [int(o) / n for o, n in zip(node.sizes or (), ins)]     # no scales: sizes (checked)
    r = min(ratios) if policy == "not_larger" else max(ratios)
    return [int(r * n + 0.5) for n in ins]


def _spec_scale(node: OnnxResize, axis: int, n_out: int, scale: float) -> Scale:
    """The spec's scale: the scales input as given (already float32), or exactly out / in from sizes
    (keep_aspect_ratio_policy: the min / max of those ratios)."""
    if node.scales:
        return scale
    axes = _axes(node)
    ratios = [Fraction(int(o), node.input_shape[a]) for o, a in zip(node.sizes or (), axes)]   # no scales: sizes
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return ratios[axes.index(axis)]
    return (min if policy == "not_larger" else max)(ratios)

