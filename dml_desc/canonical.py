"""The canonical form: one affine map per axis plus an interpolation mode.

For output index o the continuous input coordinate is

    x = (o - out_offset) / scale - in_offset        (DirectML's equation solved for x)

`scale` may be a float, a Fraction (an exact ratio such as (out-1)/(in-1)) or inf
(every output reads x = -in_offset). Every convention converts to and from this form.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum
from fractions import Fraction
from typing import Optional, Tuple, Union

from .errors import DescError, require

Scale = Union[float, Fraction]


class Mode(str, Enum):
    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"


class Rounding(str, Enum):
    ROUND_PREFER_FLOOR = "round_prefer_floor"   # ceil(x - 0.5): ties go down
    ROUND_PREFER_CEIL = "round_prefer_ceil"     # floor(x + 0.5): ties go up
    FLOOR = "floor"
    CEIL = "ceil"


@dataclass(frozen=True)
class AxisMap:
    in_size: int
    out_size: int
    scale: Scale = 1.0
    in_offset: float = 0.0
    out_offset: float = 0.0
    rounding: Rounding = Rounding.ROUND_PREFER_FLOOR
    extrapolate: bool = False   # outside [0, in-1] the forward writes a constant: zero gradient
    aa_scale: Optional[float] = None   # antialias filter scale when it differs from `scale`
    single_rounding: bool = False      # x computed in double, rounded to float32 once (not after the division)
    coords: Optional[Tuple[float, ...]] = None   # explicit x per output, where a runtime's float order matters

    def __post_init__(self):
        for name in ("in_size", "out_size"):
            v = getattr(self, name)
            require(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v,
                    "must be an integer >= 1")
        s = self.scale
        require(isinstance(s, (int, float, Fraction)) and not isinstance(s, bool) and s > 0
                and not (isinstance(s, float) and math.isnan(s)), "scale", s, "must be positive")
        for name in ("in_offset", "out_offset"):
            require(math.isfinite(getattr(self, name)), name, getattr(self, name), "must be finite")
        object.__setattr__(self, "rounding", Rounding(self.rounding))
        if self.coords is not None:
            object.__setattr__(self, "coords", tuple(float(c) for c in self.coords))
            require(len(self.coords) == self.out_size and all(math.isfinite(c) for c in self.coords), "coords",
                    self.coords[:8], f"must be {self.out_size} finite coordinates")

    @property
    def filter_scale(self) -> float:
        return float(self.scale if self.aa_scale is None else self.aa_scale)

    @classmethod
    def identity(cls, size: int) -> "AxisMap":
        return cls(size, size)

    @property
    def is_identity(self) -> bool:
        return (self.in_size == self.out_size and self.scale == 1 and self.coords is None
                and self.in_offset + self.out_offset == 0)

    def with_(self, **changes) -> "AxisMap":
        return replace(self, **changes)


@dataclass(frozen=True)
class Resampling:
    axes: Tuple[AxisMap, ...]
    mode: Mode = Mode.NEAREST
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation_value: float = 0.0
    notes: Tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):
        object.__setattr__(self, "axes", tuple(self.axes))
        object.__setattr__(self, "mode", Mode(self.mode))
        require(1 <= len(self.axes) <= 8, "axes", len(self.axes), "rank must be between 1 and 8")
        require(math.isfinite(self.cubic_coeff_a), "cubic_coeff_a", self.cubic_coeff_a, "must be finite")

    @property
    def in_shape(self) -> Tuple[int, ...]:
        return tuple(a.in_size for a in self.axes)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(a.out_size for a in self.axes)

    @property
    def resized_axes(self) -> Tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.axes) if not a.is_identity)

    def with_(self, **changes) -> "Resampling":
        return replace(self, **changes)

    def normalized(self) -> "Resampling":
        """One spelling per map: identity axes as AxisMap.identity, floor/ceil as shifted
        round-half rules, rounding reset where the mode ignores it."""
        def norm(a: AxisMap) -> AxisMap:
            if a.is_identity:
                return AxisMap.identity(a.in_size)
            if self.mode is not Mode.NEAREST:
                a = a.with_(rounding=Rounding.ROUND_PREFER_FLOOR)
            elif a.rounding in (Rounding.CEIL, Rounding.FLOOR):   # ceil(x) == ceil((x+.5)-.5)
                up = a.rounding is Rounding.CEIL
                a = a.with_(rounding=Rounding.ROUND_PREFER_FLOOR if up else Rounding.ROUND_PREFER_CEIL,
                            in_offset=a.in_offset + (-0.5 if up else 0.5))
            return AxisMap.identity(a.in_size) if a.is_identity else a
        return replace(self, axes=tuple(norm(a) for a in self.axes))

    def noted(self, *notes: str) -> "Resampling":
        return replace(self, notes=self.notes + tuple(notes))


def fraction(value) -> Fraction:
    """An exact Fraction of an int, float (its exact binary value) or Fraction."""
    return value if isinstance(value, Fraction) else Fraction(value)


def ratio(num: int, den: int) -> Scale:
    """An exact ratio num/den, or inf when den is 0."""
    return math.inf if den == 0 else Fraction(num, den)


def check_positive_int_list(values, field_name: str, length=None):
    require(isinstance(values, (list, tuple)), field_name, values, "must be a list")
    if length is not None:
        require(len(values) == length, field_name, values, f"must have {length} entries")
    for v in values:
        require(isinstance(v, int) and not isinstance(v, bool) and v >= 1, field_name, values,
                "every entry must be an integer >= 1")
    return tuple(values)


def as_float_list(values, field_name: str, length=None):
    require(isinstance(values, (list, tuple)), field_name, values, "must be a list of numbers")
    if length is not None:
        require(len(values) == length, field_name, values, f"must have {length} entries")
    for v in values:
        require(isinstance(v, (int, float)) and not isinstance(v, bool), field_name, values,
                "every entry must be a number")
    return tuple(float(v) for v in values)


__all__ = ["AxisMap", "Resampling", "Mode", "Rounding", "fraction", "ratio", "DescError"]
