"""DirectML RESAMPLE1/2/3 and RESAMPLE_GRAD/GRAD1 <-> canonical.

Offsets have two readings (docs/semantics.md, decision 1): "forward" (the descriptor carries the
forward Resample's offsets; the default) and "swapped" (tensorflow-directml-plugin's grad).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding
from ..enums import DML_AXIS_DIRECTION as DIR, DML_INTERPOLATION_MODE as DM, DML_TENSOR_DATA_TYPE
from ..errors import require
from ..resample import RESAMPLE_DESCS, ResampleDescriptor, pascal_case as _pascal
from ..tensor import DML_BUFFER_TENSOR_DESC, calc_buffer_tensor_size
from .common import check_budget, exact, refuse

FLT_MAX = float(np.finfo(np.float32).max)
READINGS = ("forward", "swapped")
MODES = {DM.NEAREST_NEIGHBOR: Mode.NEAREST, DM.LINEAR: Mode.LINEAR}
# RESAMPLE2 / GRAD1 round the coordinate itself; round-half rules need a 0.5 input-offset shift.
TO_DIRECTION = {Rounding.CEIL: (DIR.INCREASING, 0.0), Rounding.FLOOR: (DIR.DECREASING, 0.0),
                Rounding.ROUND_PREFER_FLOOR: (DIR.INCREASING, 0.5),
                Rounding.ROUND_PREFER_CEIL: (DIR.DECREASING, -0.5)}


def _f32(v: float) -> float:
    return float(np.float32(v))


def to_canonical(desc: ResampleDescriptor, offset_reading: str = "forward") -> Resampling:
    """The canonical map of a DirectML RESAMPLE1/2/3 or RESAMPLE_GRAD/GRAD1 descriptor. The axes follow the
    descriptor's Sizes (usually NCHW). offset_reading='forward' reads a grad descriptor's offsets as the
    forward's (the default); 'swapped' as tensorflow-directml-plugin writes them.
    """
    require(offset_reading in READINGS, "offset_reading", offset_reading, f"must be one of {READINGS}")
    ins, outs = desc.forward_in.sizes, desc.forward_out.sizes
    fin, fout = _pascal(desc.FORWARD_IN), _pascal(desc.FORWARD_OUT)
    check_budget(ins, outs, f"{fin}.Sizes", f"{fout}.Sizes")
    in_offs, out_offs = desc.input_pixel_offsets, desc.output_pixel_offsets
    if offset_reading == "swapped":
        in_offs, out_offs = out_offs, in_offs
    rounding = Rounding.ROUND_PREFER_FLOOR
    if hasattr(desc, "rounding_direction"):
        rounding = Rounding.CEIL if desc.rounding_direction is DIR.INCREASING else Rounding.FLOOR
    axes = tuple(AxisMap(i, o, math.inf if s >= FLT_MAX else _f32(s), _f32(a), _f32(b), rounding)
                 for i, o, s, a, b in zip(ins, outs, desc.scales, in_offs, out_offs))
    res = Resampling(axes, MODES[desc.interpolation_mode], antialias=bool(getattr(desc, "antialiased", False)))
    return res.noted(*memory_notes(desc))


def memory_notes(desc: ResampleDescriptor) -> tuple[str, ...]:
    """A note for each tensor whose memory fields (strides, flags, size, alignment) are not the packed defaults:
    they describe memory, not the map, and no other convention carries them."""
    notes: list[str] = []
    for name in (desc.FORWARD_IN, desc.FORWARD_OUT):
        t = getattr(desc, name)
        packed = DML_BUFFER_TENSOR_DESC.packed(t.data_type, t.sizes)
        fields = [f for f, mine, default in (
            ("Strides", t.strides, None), ("Flags", t.flags, packed.flags),
            ("TotalTensorSizeInBytes", t.total_tensor_size_in_bytes,
             calc_buffer_tensor_size(t.data_type, t.sizes, t.strides)),
            ("GuaranteedBaseOffsetAlignment", t.guaranteed_base_offset_alignment, 0)) if mine != default]
        if t.strides is not None and list(t.strides) == [math.prod(t.sizes[i + 1:]) for i in range(len(t.sizes))]:
            fields.remove("Strides")
        if fields:
            notes.append(f"{_pascal(name)}: {', '.join(fields)} describe memory, not the map; the other "
                         "conventions take packed tensors and do not carry them")
    return tuple(notes)


def from_canonical(res: Resampling, operator: str = "DML_OPERATOR_RESAMPLE_GRAD",
                   data_type: DML_TENSOR_DATA_TYPE = DML_TENSOR_DATA_TYPE.FLOAT32,
                   offset_reading: str = "forward") -> tuple[ResampleDescriptor, tuple[str, ...]]:
    """A descriptor of class `operator` (a DML_OPERATOR_* name) for `res` -> (descriptor, notes), or
    ConversionError when that operator cannot state the map exactly (e.g. cubic, a round-half rule
    RESAMPLE1/GRAD cannot express, antialias before RESAMPLE3).
    """
    require(operator in RESAMPLE_DESCS, "operator", operator, f"must be one of {sorted(RESAMPLE_DESCS)}")
    cls = RESAMPLE_DESCS[operator]
    _check_expressible(res, cls)
    has_rounding = "rounding_direction" in cls.__dataclass_fields__
    rounding = _rounding(res)
    direction, shift = TO_DIRECTION[rounding] if has_rounding else (None, _dml1_shift(rounding))
    scales = [FLT_MAX if a.scale == math.inf else _f32(float(a.scale)) for a in res.axes]
    in_offs = [a.in_offset + (shift if res.mode is Mode.NEAREST else 0.0) for a in res.axes]
    out_offs = [a.out_offset for a in res.axes]
    if offset_reading == "swapped":
        in_offs, out_offs = out_offs, in_offs
    # Any: the descriptor's fields, keyed by the class's own names
    kwargs: dict[str, Any] = {cls.FORWARD_IN: DML_BUFFER_TENSOR_DESC.packed(data_type, res.in_shape),
                              cls.FORWARD_OUT: DML_BUFFER_TENSOR_DESC.packed(data_type, res.out_shape),
                              "interpolation_mode": DM.NEAREST_NEIGHBOR if res.mode is Mode.NEAREST else DM.LINEAR,
                              "scales": scales, "input_pixel_offsets": in_offs, "output_pixel_offsets": out_offs}
    if has_rounding:
        kwargs["rounding_direction"] = direction
    if "antialiased" in cls.__dataclass_fields__:
        kwargs["antialiased"] = res.antialias
    desc = cls(**kwargs)
    back = to_canonical(desc, offset_reading)
    return desc, exact(res, back, operator).notes


def _dml1_shift(rounding: Rounding) -> float:
    """RESAMPLE1 / GRAD round half down; ceil(x) is that rule with the input offset moved by -0.5."""
    return -0.5 if rounding is Rounding.CEIL else 0.0


def _check_expressible(res: Resampling, cls: type[ResampleDescriptor]) -> None:
    if res.mode not in (Mode.NEAREST, Mode.LINEAR):
        refuse("mode", res.mode.value, f"DirectML resampling has no {res.mode.value} mode (NEAREST_NEIGHBOR and "
               "LINEAR only)")
    require(len(res.axes) <= 4, "rank", len(res.axes), "DirectML resampling supports 1 to 4 dimensions")
    if res.antialias and "antialiased" not in cls.__dataclass_fields__:
        refuse("antialias", True, f"{cls.OPERATOR} has no Antialiased field (DML_OPERATOR_RESAMPLE3 has)")
    for i, a in enumerate(res.axes):
        if a.extrapolate and not a.is_identity:
            refuse(f"axes[{i}].extrapolate", True, "DirectML clamps at the edges; it has no extrapolation value "
                   "(ONNX tf_crop_and_resize)")
    roundings = {a.rounding for a in res.normalized().axes if not a.is_identity}
    if res.mode is Mode.NEAREST and len(roundings) > 1:
        refuse("rounding", sorted(r.value for r in roundings), "DirectML has one rounding rule for all axes")


def _rounding(res: Resampling) -> Rounding:
    resized = [a.rounding for a in res.normalized().axes if not a.is_identity]
    return resized[0] if res.mode is Mode.NEAREST and resized else Rounding.ROUND_PREFER_FLOOR
