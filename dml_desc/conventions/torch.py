"""PyTorch F.interpolate arguments <-> canonical (torch's own float32 scale arithmetic)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding
from ..errors import flag, int_list, is_number, one_of, require
from .common import align_corners_axis, check_budget, dataclass_from_json, first_exact, place, refuse, reciprocal_f32

SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear")
INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


@dataclass
class TorchInterpolate:
    """The arguments of torch.nn.functional.interpolate(input, size, scale_factor, mode, align_corners,
    recompute_scale_factor, antialias) plus the input's shape, (N, C, spatial...) channels first.
    It describes a forward call; its gradient is what autograd computes.
    """
    input_shape: Sequence[int]
    mode: str = "nearest"
    size: Optional[Union[int, Sequence[int]]] = None
    scale_factor: Optional[Union[float, Sequence[float]]] = None
    align_corners: Optional[bool] = None
    recompute_scale_factor: Optional[bool] = None
    antialias: bool = False

    def to_json(self) -> dict:
        """The JSON form (the keyword arguments that are set, plus input_shape)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, obj: dict) -> "TorchInterpolate":
        """A TorchInterpolate from its JSON form; unknown keys are refused by name."""
        return dataclass_from_json(cls, obj, "torch")

    def kwargs(self) -> dict:
        """The keyword arguments to pass to F.interpolate (everything but input_shape)."""
        return {k: v for k, v in self.to_json().items() if k != "input_shape"}


def _validate(t: TorchInterpolate):
    one_of(t.mode, MODES, "mode")
    shape = int_list(t.input_shape, "input_shape")
    require(3 <= len(shape) <= 5, "input_shape", shape, "F.interpolate takes 3- to 5-D inputs of positive sizes")
    n = len(shape) - 2
    require(SPATIAL.get(t.mode, n) == n, "mode", t.mode, f"needs {SPATIAL.get(t.mode)} spatial axes, input has {n}")
    for name in ("align_corners", "recompute_scale_factor"):
        if getattr(t, name) is not None:
            flag(getattr(t, name), name)
    flag(t.antialias, "antialias")
    require(t.align_corners is None or t.mode in INTERPOLATING, "align_corners", t.align_corners,
            "can only be set with the interpolating modes (linear, bilinear, bicubic, trilinear)")
    require(not t.antialias or t.mode in ("bilinear", "bicubic"), "antialias", t.antialias,
            "is only available for bilinear and bicubic")
    require((t.size is None) != (t.scale_factor is None), "size/scale_factor",
            {"size": t.size, "scale_factor": t.scale_factor}, "exactly one of size and scale_factor must be given")
    return shape, n


def _per_axis(value, n, field, kind):
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    require(len(values) == n, field, value, f"must have {n} entries (one per spatial axis)")
    for i, v in enumerate(values):
        name = f"{field}[{i}]" if isinstance(value, (list, tuple)) else field
        require(isinstance(v, kind) and is_number(v) and v > 0, name, v, "must be a positive number")
    return values


def to_canonical(t: TorchInterpolate) -> Resampling:
    """The canonical map of an F.interpolate call, as torch 2.x's CPU kernels compute it (scales in float32;
    see the README's torch findings for the axes torch copies).
    """
    shape, n = _validate(t)
    ins = shape[2:]
    if t.size is not None:
        outs, factors = _per_axis(t.size, n, "size", int), [None] * n
    else:
        factors = _per_axis(t.scale_factor, n, "scale_factor", (int, float))
        products = [i * float(f) for i, f in zip(ins, factors)]
        require(all(math.isfinite(p) for p in products), "scale_factor", t.scale_factor, "gives an output "
                "too large to count")
        outs = [int(math.floor(p)) for p in products]
        require(all(o >= 1 for o in outs), "scale_factor", t.scale_factor, "gives an empty output")
        if t.recompute_scale_factor:
            factors = [None] * n
    by = "size" if t.size is not None else "scale_factor"
    check_budget(shape, shape[:2] + list(outs), "input_shape", by, lambda i: f"{by}[{i - 2}]")
    maps = [_axis(t, i, o, f) for i, o, f in zip(ins, outs, factors)]
    if _copies_same_length_axes(t, n):
        maps = [AxisMap.identity(i) if i == o else m for i, o, m in zip(ins, outs, maps)]
    mode = {"bicubic": Mode.CUBIC, "nearest": Mode.NEAREST, "nearest-exact": Mode.NEAREST}.get(t.mode, Mode.LINEAR)
    aa = bool(t.antialias)
    return Resampling(place(shape, range(2, len(shape)), maps), mode,
                      cubic_coeff_a=-0.5 if aa and mode is Mode.CUBIC else -0.75,
                      exclude_outside=aa, antialias=aa)


def _copies_same_length_axes(t: TorchInterpolate, n: int) -> bool:
    """torch's CPU kernels copy an axis whose output length equals its input length, whatever scale_factor says:
    linear/bilinear/trilinear and every antialiased mode do; bicubic does not; legacy nearest only in 2-D."""
    return t.mode in ("linear", "bilinear", "trilinear") or bool(t.antialias) or (t.mode == "nearest" and n == 2)


def _axis(t: TorchInterpolate, n_in: int, n_out: int, factor) -> AxisMap:
    """torch's area_pixel_compute_source_index / nearest_idx as a canonical axis."""
    source_scale = (1.0 / factor) if factor else n_in / n_out    # float32 in torch
    if t.mode in ("nearest", "nearest-exact"):
        return AxisMap(n_in, n_out, reciprocal_f32(source_scale), 0.0, -0.5 if t.mode == "nearest-exact" else 0.0,
                       Rounding.FLOOR)
    if t.align_corners and t.antialias:    # torch's antialias kernel: half-pixel centers, align-corners scale
        return AxisMap(n_in, n_out, reciprocal_f32((n_in - 1) / (n_out - 1)) if n_out > 1 else math.inf, 0.5, -0.5)
    if t.align_corners:
        if n_out == 1:
            return align_corners_axis(n_in, n_out)
        return align_corners_axis(n_in, n_out, scale=reciprocal_f32((n_in - 1) / (n_out - 1)))
    return AxisMap(n_in, n_out, reciprocal_f32(source_scale), 0.5, -0.5)


def from_canonical(res: Resampling) -> tuple:
    """The first F.interpolate spelling whose map equals `res` -> (TorchInterpolate, notes); refuses maps
    that resize N or C, or that torch cannot state exactly.
    """
    require(3 <= len(res.axes) <= 5, "rank", len(res.axes), "F.interpolate takes 3- to 5-D inputs")
    for i in (0, 1):
        if not res.normalized().axes[i].is_identity:
            refuse(f"axes[{i}]", "resized", "F.interpolate resizes spatial axes only (N and C stay)")
    if res.mode is Mode.NEAREST and res.antialias:
        refuse("antialias", True, "torch has no antialiased nearest")
    n = len(res.axes) - 2
    modes = {Mode.NEAREST: ["nearest", "nearest-exact"], Mode.CUBIC: ["bicubic"],
             Mode.LINEAR: [{1: "linear", 2: "bilinear", 3: "trilinear"}[n]]}[res.mode]
    return first_exact(res, _candidates(res, modes, n), to_canonical, "torch F.interpolate")


def _candidates(res: Resampling, modes, n):
    outs = list(res.out_shape[2:])
    for mode in modes:
        for ac in ([False, True] if mode in INTERPOLATING else [None]):
            yield TorchInterpolate(list(res.in_shape), mode, size=outs, align_corners=ac,
                                   antialias=res.antialias)
            factors = [float(a.scale) if a.scale != math.inf else 1.0 for a in res.axes[2:]]
            if all(np.isfinite(factors)):
                yield TorchInterpolate(list(res.in_shape), mode, scale_factor=factors, align_corners=ac,
                                       antialias=res.antialias)
