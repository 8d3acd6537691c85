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
from typing import Any, Optional, Tuple, Union

from . import budget
from .errors import DescError, is_number, require

Scale = Union[float, Fraction]


class Mode(str, Enum):
    """The interpolation mode of a whole map: nearest, linear (bi/trilinear per axis; the triangle filter) or cubic
    (Keys), the modes ONNX, DirectML and oneDNN share; and the filters only the framework resizes have
    (docs/conventions-torch-tf.md): lanczos1/3/5, gaussian, mitchellcubic and box (TF's ScaleAndTranslate, JAX, torch's
    lanczos), area (the exact overlap of each output pixel with the input pixels: TF's resize_area, JAX's area)
    and pool (torch's mode='area', adaptive average pooling: whole input pixels, equal weights)."""
    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"
    LANCZOS1 = "lanczos1"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"
    BOX = "box"
    AREA = "area"
    POOL = "pool"


INTERPOLATION_MODES = (Mode.NEAREST, Mode.LINEAR, Mode.CUBIC)   # the modes an ONNX Resize (and DML, oneDNN) states


class Rounding(str, Enum):
    """How nearest turns a coordinate x into an input index (ties are x = k + 0.5)."""
    ROUND_PREFER_FLOOR = "round_prefer_floor"   # ceil(x - 0.5): ties go down
    ROUND_PREFER_CEIL = "round_prefer_ceil"     # floor(x + 0.5): ties go up
    FLOOR = "floor"
    CEIL = "ceil"


@dataclass(frozen=True)
class AxisMap:
    """One axis of the canonical form: output index o reads input coordinate
    x = (o - out_offset) / scale - in_offset, in pixels (index units), with scale = out/in for a plain
    resize (a float, an exact Fraction, or inf when every output reads x = -in_offset). Sizes are element
    counts. `rounding` applies to nearest; the other fields cover runtime quirks (see the comments).
    """
    in_size: int
    out_size: int
    scale: Scale = 1.0
    in_offset: float = 0.0
    out_offset: float = 0.0
    rounding: Rounding = Rounding.ROUND_PREFER_FLOOR
    extrapolate: bool = False   # outside [0, in-1] the forward writes a constant: zero gradient
    zero_outside: bool = False  # a sample outside [-0.5, in-0.5] (outside every input pixel) writes 0 (TF's, JAX's
                                # scale_and_translate with a translation)
    aa_scale: Optional[Scale] = None   # antialias filter scale when it differs from `scale`
    single_rounding: bool = False      # x computed in double, rounded to float32 once (not after the division)
    coords: Optional[Tuple[float, ...]] = None   # explicit x per output, where a runtime's float order matters
    # How a nearest coordinate becomes an index (see weights.nearest_index, the one place that applies these):
    # a float32 x within this of k + 0.5 rounds as the exact tie (onnxruntime >= 1.27: 1e-6)
    tie_tolerance: float = 0.0
    exact: bool = False          # x evaluated in exact rational arithmetic, no float32 rounding (the ONNX spec)

    def __post_init__(self) -> None:
        for name in ("in_size", "out_size"):
            v = getattr(self, name)
            require(isinstance(v, int) and not isinstance(v, bool) and v >= 1, name, v,
                    "must be an integer >= 1")
        s = self.scale
        require(isinstance(s, (int, float, Fraction)) and not isinstance(s, bool) and s > 0
                and not (isinstance(s, float) and math.isnan(s)), "scale", s, "must be positive")
        for name in ("in_offset", "out_offset"):
            require(is_number(getattr(self, name)), name, getattr(self, name), "must be a finite number")
        require(isinstance(self.tie_tolerance, (int, float)) and 0 <= self.tie_tolerance < 0.5, "tie_tolerance",
                self.tie_tolerance, "must be a number in [0, 0.5)")
        require(self.rounding in tuple(Rounding), "rounding", self.rounding,
                f"must be one of {[r.value for r in Rounding]}")
        object.__setattr__(self, "rounding", Rounding(self.rounding))
        if not self.is_identity:     # a resized axis's tables are O(size): the size budget (dml_desc.budget)
            budget.check_axis(self.in_size, "in_size")
            budget.check_axis(self.out_size, "out_size")
        if self.coords is not None:
            import numpy as np            # one vectorised pass: an axis may carry millions of coordinates
            arr = np.asarray(self.coords) if isinstance(self.coords, (list, tuple)) else None
            require(arr is not None and arr.ndim == 1 and arr.dtype.kind in "fiu", "coords",
                    type(self.coords).__name__, "must be a sequence of finite numbers")
            arr = arr.astype(np.float64)
            require(len(arr) == self.out_size and bool(np.isfinite(arr).all()), "coords",
                    tuple(arr[:8].tolist()), f"must be {self.out_size} finite coordinates")
            object.__setattr__(self, "coords", tuple(arr.tolist()))

    @property
    def filter_scale(self) -> float:
        """The scale the antialias filter stretches by: `aa_scale` when set, else `scale`."""
        return float(self.scale if self.aa_scale is None else self.aa_scale)

    @classmethod
    def identity(cls, size: int) -> "AxisMap":
        """An axis of `size` elements that is copied unchanged."""
        return cls(size, size)

    @property
    def is_identity(self) -> bool:
        """True when the axis is copied unchanged (same size, scale 1, offsets cancel, no explicit coordinates)."""
        return (self.in_size == self.out_size and self.scale == 1 and self.coords is None
                and self.in_offset + self.out_offset == 0)

    def with_(self, **changes: Any) -> "AxisMap":
        """A copy with the given fields replaced (the map is frozen)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Resampling:
    """The canonical form of a resize: one AxisMap per tensor axis (in the tensor's own layout, NCHW or
    NHWC as the convention reads it) plus the mode and its cubic/antialias options. Every convention
    converts to and from this; `notes` carry conditions such as "equal only for these shapes".
    """
    axes: Tuple[AxisMap, ...]
    mode: Mode = Mode.NEAREST
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation_value: float = 0.0
    notes: Tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        require(isinstance(self.axes, (list, tuple)) and all(isinstance(a, AxisMap) for a in self.axes), "axes",
                self.axes, "must be a sequence of AxisMap")
        object.__setattr__(self, "axes", tuple(self.axes))
        require(self.mode in tuple(Mode), "mode", self.mode, f"must be one of {[m.value for m in Mode]}")
        object.__setattr__(self, "mode", Mode(self.mode))
        require(1 <= len(self.axes) <= 8, "axes", len(self.axes), "rank must be between 1 and 8")
        budget.check_shape(self.in_shape, "in_shape")
        budget.check_shape(self.out_shape, "out_shape")
        require(is_number(self.cubic_coeff_a), "cubic_coeff_a", self.cubic_coeff_a, "must be a finite number")

    @property
    def in_shape(self) -> Tuple[int, ...]:
        """The forward input's shape (= dX's shape), one size per axis."""
        return tuple(a.in_size for a in self.axes)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        """The forward output's shape (= dY's shape), one size per axis."""
        return tuple(a.out_size for a in self.axes)

    @property
    def resized_axes(self) -> Tuple[int, ...]:
        """The indices of the axes that are not copied unchanged."""
        return tuple(i for i, a in enumerate(self.axes) if not a.is_identity)

    def with_(self, **changes: Any) -> "Resampling":
        """A copy with the given fields replaced (the map is frozen)."""
        return replace(self, **changes)

    def normalized(self) -> "Resampling":
        """One spelling per map: identity axes as AxisMap.identity, floor/ceil as shifted
        round-half rules, rounding reset where the mode ignores it."""
        def norm(a: AxisMap) -> AxisMap:
            if a.is_identity:
                return AxisMap.identity(a.in_size)
            if self.mode is not Mode.NEAREST:
                a = a.with_(rounding=Rounding.ROUND_PREFER_FLOOR, tie_tolerance=0.0)
            elif a.rounding in (Rounding.CEIL, Rounding.FLOOR):   # ceil(x) == ceil((x+.5)-.5)
                up = a.rounding is Rounding.CEIL
                a = a.with_(rounding=Rounding.ROUND_PREFER_FLOOR if up else Rounding.ROUND_PREFER_CEIL,
                            in_offset=a.in_offset + Fraction(-1 if up else 1, 2))   # exact for Fraction offsets
            return AxisMap.identity(a.in_size) if a.is_identity else a
        return replace(self, axes=tuple(norm(a) for a in self.axes))

    def noted(self, *notes: str) -> "Resampling":
        """A copy with `notes` appended (conditions a conversion holds under)."""
        return replace(self, notes=self.notes + tuple(notes))


def fraction(value: int | float | Fraction) -> Fraction:
    """An exact Fraction of an int, float (its exact binary value) or Fraction."""
    return value if isinstance(value, Fraction) else Fraction(value)


def ratio(num: int, den: int) -> Scale:
    """An exact ratio num/den, or inf when den is 0."""
    return math.inf if den == 0 else Fraction(num, den)


__all__ = ["AxisMap", "Resampling", "Mode", "INTERPOLATION_MODES", "Rounding", "fraction", "ratio", "DescError"]
