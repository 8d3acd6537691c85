"""JAX's jax.image.resize and jax.image.scale_and_translate <-> canonical (jax/_src/image/scale.py: one weight
matrix per axis, float32 arithmetic). The JSON mirrors the call: {"shape_in", "shape", "method", "antialias"} for
resize, plus "spatial_dims", "scale" and "translation" for scale_and_translate."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from collections.abc import Iterable, Iterator
from typing import Optional, Sequence

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding
from ..errors import flag, float32_number, int_list, one_of, require
from .common import check_budget, dataclass_from_json, first_exact, refuse
from .filters import KERNEL_NAMES, filtered, scale_translate_axis

METHODS = {"nearest": Mode.NEAREST, "linear": Mode.LINEAR, "bilinear": Mode.LINEAR, "trilinear": Mode.LINEAR,
           "triangle": Mode.LINEAR, "lanczos3": Mode.LANCZOS3, "lanczos5": Mode.LANCZOS5, "cubic": Mode.CUBIC,
           "bicubic": Mode.CUBIC, "tricubic": Mode.CUBIC, "cubic-pytorch": Mode.CUBIC,
           "bicubic-pytorch": Mode.CUBIC, "area": Mode.AREA}


@dataclass
class JaxResize:
    """jax.image.resize(image, shape, method, antialias) on an array of shape `shape_in`, or, with spatial_dims,
    scale and translation, jax.image.scale_and_translate(image, shape, spatial_dims, scale, translation, method,
    antialias). Both default antialias to True."""
    shape_in: Sequence[int]
    shape: Sequence[int]
    method: str = "linear"
    antialias: bool = True
    spatial_dims: Optional[Sequence[int]] = None
    scale: Optional[Sequence[float]] = None
    translation: Optional[Sequence[float]] = None

    def to_json(self) -> dict[str, object]:
        """The JSON form (the fields that are set)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, obj: object) -> "JaxResize":
        """A JaxResize from its JSON form; unknown keys are refused by name."""
        return dataclass_from_json(cls, obj, "jax")

    @property
    def is_scale_and_translate(self) -> bool:
        """True for a jax.image.scale_and_translate call."""
        return self.spatial_dims is not None or self.scale is not None or self.translation is not None


def to_canonical(t: JaxResize) -> Resampling:
    """The canonical map of a jax.image.resize / scale_and_translate call."""
    one_of(t.method, METHODS, "method")
    shape = int_list(t.shape_in, "shape_in")
    out = int_list(t.shape, "shape", length=len(shape))
    require(1 <= len(shape) <= 8, "shape_in", shape, "must have 1 to 8 axes")
    flag(t.antialias, "antialias")
    check_budget(shape, out, "shape_in", "shape")
    mode = METHODS[t.method]
    pytorch = t.method.endswith("-pytorch") and not t.antialias   # a = -0.75 with edge padding (clamped taps)
    if t.is_scale_and_translate:
        dims, axes = _scale_and_translate_axes(t, shape, out, mode, pytorch)
    else:
        dims = [d for d in range(len(shape)) if shape[d] != out[d]]
        axes = [_resize_axis(shape[d], out[d], mode) for d in dims]
    if mode is Mode.NEAREST:
        maps = _placed(shape, out, dims, axes)
        return Resampling(maps, Mode.NEAREST)
    if pytorch:
        require(not any(a.zero_outside for a in axes), "method", t.method, "without antialias pads the edges in "
                "scale_and_translate, and samples outside the input then read a partial, renormalised window: not "
                "modelled here (keep the samples inside the input, or set antialias)")
        return Resampling(_placed(shape, out, dims, axes), Mode.CUBIC)
    return filtered(_placed(shape, out, dims, axes), mode, t.antialias)


def _placed(shape: Sequence[int], out: Sequence[int], dims: Sequence[int], axes: Iterable[AxisMap]
            ) -> tuple[AxisMap, ...]:
    maps = [AxisMap.identity(n) for n in shape]
    for d, a in zip(dims, axes):
        maps[d] = a
    for d, (n, o) in enumerate(zip(shape, out)):
        require(d in dims or n == o, f"shape[{d}]", o, f"differs from shape_in[{d}]={n} on an axis not in "
                "spatial_dims: scale_and_translate resamples only those")
    return tuple(maps)


def _resize_axis(n_in: int, n_out: int, mode: Mode) -> AxisMap:
    """jax.image.resize: nearest reads floor((o + 0.5) * in / out); the filters scale_translate with scale = out/in
    (inv_scale = 1 / scale in double, used as float32)."""
    if mode is Mode.NEAREST:
        return AxisMap(n_in, n_out, Fraction(n_out, n_in), 0.0, -0.5, Rounding.FLOOR)
    return scale_translate_axis(n_in, n_out, 1.0 / (n_out / n_in), 0.0, mode)


def _scale_and_translate_axes(t: JaxResize, shape: Sequence[int], out: Sequence[int], mode: Mode, pytorch: bool
                              ) -> tuple[list[int], list[AxisMap]]:
    require(mode is not Mode.NEAREST, "method", t.method, "is refused by jax.image.scale_and_translate ('Nearest "
            "neighbor resampling is not currently supported for scale_and_translate')")
    rank = len(shape)
    dims = int_list(t.spatial_dims, "spatial_dims", minimum=-rank)
    for d in dims:
        require(-rank <= d < rank, "spatial_dims", t.spatial_dims, f"every axis must be in [-{rank}, {rank - 1}]")
    dims = [d % rank for d in dims]
    require(len(set(dims)) == len(dims), "spatial_dims", t.spatial_dims, "must not repeat an axis")
    for name in ("scale", "translation"):
        v = getattr(t, name)
        require(isinstance(v, (list, tuple)) and len(v) == len(dims), name, v,
                f"must have {len(dims)} entries (one per spatial dim)")
        for i, x in enumerate(v):
            float32_number(x, f"{name}[{i}]", positive=name == "scale")
    assert t.scale is not None and t.translation is not None        # checked above: lists of len(dims) numbers
    f = np.float32
    axes = [scale_translate_axis(shape[d], out[d], f(1) / f(s), tr, mode)
            for d, s, tr in zip(dims, t.scale, t.translation)]
    return dims, axes


def from_canonical(res: Resampling, tolerance: float = 0.0) -> tuple[JaxResize, tuple[str, ...]]:
    """The first JAX call whose map equals `res` -> (JaxResize, notes): jax.image.resize, else scale_and_translate."""
    names = {Mode.NEAREST: ["nearest"], Mode.LINEAR: ["linear"], Mode.CUBIC: ["cubic", "cubic-pytorch"],
             Mode.LANCZOS3: ["lanczos3"], Mode.LANCZOS5: ["lanczos5"], Mode.AREA: ["area"]}.get(res.mode)
    if names is None:
        refuse("mode", res.mode.value, "JAX's resize methods are nearest, linear, cubic, cubic-pytorch, lanczos3, "
               f"lanczos5 and area (no {KERNEL_NAMES.get(res.mode, res.mode.value)})")
    return first_exact(res, _candidates(res, names), to_canonical, "JAX", tolerance)


def _candidates(res: Resampling, names: list[str]) -> Iterator[JaxResize]:
    shape, out = list(res.in_shape), list(res.out_shape)
    for name in names:
        for aa in (res.antialias, not res.antialias):
            yield JaxResize(shape, out, name, aa)
    dims = list(res.resized_axes)
    if res.mode is Mode.NEAREST or not dims:
        return
    axes = [res.axes[d] for d in dims]
    scales = [float(np.float32(a.scale)) if a.scale != math.inf else 1.0 for a in axes]
    shifts = [float(a.out_offset) + 0.5 for a in axes]
    for name in names:
        for aa in (res.antialias, not res.antialias):
            yield JaxResize(shape, out, name, aa, dims, scales, shifts)
