"""PyTorch F.interpolate arguments <-> canonical (torch's own float32 scale arithmetic)."""
from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from collections.abc import Callable, Iterator
from typing import Any, Optional, Sequence, TypeVar, Union

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding
from ..errors import flag, int_list, is_number, one_of, require
from .common import align_corners_axis, check_budget, dataclass_from_json, first_exact, place, refuse, reciprocal_f32

SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area")
ANTIALIASED = ("bilinear", "bicubic", "lanczos")
INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
TORCH_MODES = {"bicubic": Mode.CUBIC, "nearest": Mode.NEAREST, "nearest-exact": Mode.NEAREST, "lanczos": Mode.LANCZOS3,
               "area": Mode.POOL}      # the rest: the linear family
# The input dtypes a description may name. torch computes coordinates in its "opmath" type: double for float64,
# float for the others; nearest and nearest-exact always in float (nearest_idx), whatever the dtype.
INPUT_DTYPES = ("float32", "float64", "float16", "bfloat16")
N = TypeVar("N", int, float)          # a per-axis number: a size or a scale factor


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
    dtype: Optional[str] = None      # the input's dtype: float64 computes coordinates in double (None: float32)

    def to_json(self) -> dict[str, object]:
        """The JSON form (the keyword arguments that are set, plus input_shape)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, obj: object) -> "TorchInterpolate":
        """A TorchInterpolate from its JSON form; unknown keys are refused by name."""
        return dataclass_from_json(cls, obj, "torch")

    def kwargs(self) -> dict[str, Any]:        # Any: F.interpolate's keywords, each its own type
        """The keyword arguments to pass to F.interpolate (everything but input_shape and dtype)."""
        return {k: v for k, v in self.to_json().items() if k not in ("input_shape", "dtype")}

    @property
    def double(self) -> bool:
        """True when torch computes this call's coordinates and weights in double (a float64 input)."""
        return self.dtype == "float64"


def _validate(t: TorchInterpolate) -> tuple[list[int], int]:
    one_of(t.mode, MODES, "mode")
    shape = int_list(t.input_shape, "input_shape")
    require(3 <= len(shape) <= 5, "input_shape", shape, "F.interpolate takes 3- to 5-D inputs of positive sizes")
    n = len(shape) - 2
    require(SPATIAL.get(t.mode, n) == n, "mode", t.mode, f"needs {SPATIAL.get(t.mode)} spatial axes, input has {n}")
    for name in ("align_corners", "recompute_scale_factor"):
        if getattr(t, name) is not None:
            flag(getattr(t, name), name)
    flag(t.antialias, "antialias")
    if t.dtype is not None:
        one_of(t.dtype, INPUT_DTYPES, "dtype")
    require(t.align_corners is None or t.mode in INTERPOLATING, "align_corners", t.align_corners,
            "can only be set with the interpolating modes (linear, bilinear, bicubic, trilinear)")
    require(not t.antialias or t.mode in ANTIALIASED, "antialias", t.antialias,
            "is only available for bilinear, bicubic and lanczos")
    require(t.mode != "lanczos" or t.antialias, "antialias", t.antialias, "must be true with mode lanczos (torch: "
            "'Lanczos mode requires antialias=True')")
    require((t.size is None) != (t.scale_factor is None), "size/scale_factor",
            {"size": t.size, "scale_factor": t.scale_factor}, "exactly one of size and scale_factor must be given")
    require(not (t.size is not None and t.recompute_scale_factor), "recompute_scale_factor", True,
            "is not meaningful with an explicit size (torch refuses it): set it only with scale_factor")
    return shape, n


def _per_axis(value: object, n: int, field: str, kind: type[N] | tuple[type[N], ...]) -> list[N]:
    values: list[Any] = list(value) if isinstance(value, (list, tuple)) else [value] * n    # Any: checked below
    require(len(values) == n, field, value, f"must have {n} entries (one per spatial axis)")
    for i, v in enumerate(values):
        name = f"{field}[{i}]" if isinstance(value, (list, tuple)) else field
        require(isinstance(v, kind) and is_number(v) and v > 0, name, v, "must be a positive number")
    return values


def to_canonical(t: TorchInterpolate) -> Resampling:
    """The canonical map of an F.interpolate call whose transpose is torch 2.x's CPU backward (what autograd
    returns) for the call's `dtype`: scales in float32 as torch computes them for float32, float16 and bfloat16
    tensors; for float64 the coordinates (and the antialias filter's scale) torch computes in double (`_in_double`;
    nearest keeps its float scale in every dtype). Where torch's forward kernel computes another map (same-length
    axes, see `_backward_copies`), a note says so and `forward_map(t)` gives the forward's map.
    """
    gradient, make = _kernel_maps(t, "backward")
    res = make(gradient)
    note = _forward_differs(t, _kernel_maps(t, "forward")[0], gradient)
    return res.noted(note) if note else res


def forward_map(t: TorchInterpolate) -> Resampling:
    """The map torch's own forward kernel computes for `t`. It differs from `to_canonical(t)` where torch's
    forward and backward kernels disagree: on same-length axes (`_backward_copies`, `_forward_copies`); torch's
    antialiased forward with a length-1 spatial axis is broken (it mixes the other axis) and is not modelled."""
    maps, make = _kernel_maps(t, "forward")
    return make(maps)


def _kernel_maps(t: TorchInterpolate, kernel: str
                 ) -> tuple[list[AxisMap], Callable[[Sequence[AxisMap]], Resampling]]:
    """(the spatial axes' maps of torch's "forward" or "backward" kernel, spatial maps -> Resampling)."""
    shape, n = _validate(t)
    ins = shape[2:]
    factors: Sequence[float | None]
    if t.size is not None:
        outs, factors = _per_axis(t.size, n, "size", int), [None] * n
    else:
        scales = _per_axis(t.scale_factor, n, "scale_factor", (int, float))
        products = [i * float(f) for i, f in zip(ins, scales)]
        require(all(math.isfinite(p) for p in products), "scale_factor", t.scale_factor, "gives an output "
                "too large to count")
        outs = [int(math.floor(p)) for p in products]
        require(all(o >= 1 for o in outs), "scale_factor", t.scale_factor, "gives an empty output")
        factors = [None] * n if t.recompute_scale_factor else scales
    by = "size" if t.size is not None else "scale_factor"
    check_budget(shape, shape[:2] + list(outs), "input_shape", by, lambda i: f"{by}[{i - 2}]")
    mode = TORCH_MODES.get(t.mode, Mode.LINEAR)
    aa = bool(t.antialias)

    def make(spatial: Sequence[AxisMap]) -> Resampling:
        return Resampling(place(shape, range(2, len(shape)), spatial), mode,
                          cubic_coeff_a=-0.5 if aa and mode is Mode.CUBIC else -0.75, exclude_outside=aa,
                          antialias=aa)
    halves = kernel == "backward" or n == 2       # nearest_idx's out == 2 * in case: 1-D/3-D forwards lack it
    maps = [_axis(t, i, o, f, halves) for i, o, f in zip(ins, outs, factors)]
    copies = _backward_copies(t) if kernel == "backward" else _forward_copies(t, n)
    return _with_copies(maps, copies), make


def _with_copies(maps: Sequence[AxisMap], copies: str) -> list[AxisMap]:
    """Replace same-length axes by copies: `copies` is "each" (every such axis), "all" (only when every spatial
    axis keeps its length) or "none"."""
    same = [m.in_size == m.out_size for m in maps]
    if copies == "none" or (copies == "all" and not all(same)):
        return list(maps)
    return [AxisMap.identity(m.in_size) if s else m for m, s in zip(maps, same)]


def _backward_copies(t: TorchInterpolate) -> str:
    """How torch's backward kernels copy an axis whose output length equals its input length, whatever
    scale_factor says: nearest (nearest_idx) and the linear family per axis; bicubic only when every spatial axis
    keeps its length; nearest-exact and the antialiased kernels never (they filter it; measured on torch 2.13:
    bilinear antialias, scale_factor 1.3 on length 2: dY [1, 2] -> dX [1.69, 1.31])."""
    if t.mode in ("nearest-exact", "area") or t.antialias:
        return "none"
    return "all" if t.mode == "bicubic" else "each"


def _forward_copies(t: TorchInterpolate, n: int) -> str:
    """torch's forward kernels copy a same-length axis for linear/bilinear/trilinear, every antialiased mode
    (the separable kernel skips it) and 2-D nearest; bicubic, nearest-exact and 1-D/3-D nearest resample it."""
    each = t.mode in ("linear", "bilinear", "trilinear") or bool(t.antialias) or (t.mode == "nearest" and n == 2)
    return "each" if each else "none"


def _forward_differs(t: TorchInterpolate, forward: Sequence[AxisMap], gradient: Sequence[AxisMap]) -> str:
    """A note where torch's forward computes another map than the one its backward transposes."""
    ins, outs = [m.in_size for m in forward], [m.out_size for m in forward]
    differ = [k for k, (f, g) in enumerate(zip(forward, gradient)) if f != g and not (f.is_identity and g.is_identity)]
    broken = t.antialias and 1 in list(ins) + list(outs) and any(i != o for i, o in zip(ins, outs))
    if not differ and not broken:
        return ""
    where = f"on axes {[2 + k for k in differ]}" if differ else "(antialias with a length-1 axis)"
    return (f"torch's forward kernel computes another map than its backward {where}: this map is the one autograd's "
            "gradient transposes (torch's gradient is not the adjoint of its own forward here)")


def _axis(t: TorchInterpolate, n_in: int, n_out: int, factor: float | None, halves: bool = True) -> AxisMap:
    """torch's area_pixel_compute_source_index / nearest_idx as a canonical axis (`halves`: the kernel reads
    output o of a doubled axis at o >> 1, whatever scale_factor says, as nearest_idx does). A float64 call's
    interpolating axes carry torch's double coordinates (`_in_double`)."""
    m = _float_axis(t, n_in, n_out, factor, halves)
    return _in_double(t, m, n_in, n_out, factor) if t.double and t.mode not in ("nearest", "nearest-exact", "area") \
        else m


def _in_double(t: TorchInterpolate, m: AxisMap, n_in: int, n_out: int, factor: float | None) -> AxisMap:
    """The axis as torch computes it for a float64 input: the source scale (1/scale_factor, in/out, or
    (in-1)/(out-1) with align_corners) and x = scale * (o - out_offset) - in_offset, in double, not rounded to
    float32 (area_pixel_compute_scale / _source_index with opmath_t = double)."""
    if m.scale == math.inf:
        return m
    if t.align_corners:
        source = (n_in - 1) / (n_out - 1)
    else:
        source = (1.0 / factor) if factor else n_in / n_out
    o = np.arange(n_out, dtype=np.float64)
    x = source * (o - float(m.out_offset)) - float(m.in_offset)
    return m.with_(scale=1 / Fraction(source), coords=tuple(x.tolist()))


def _float_axis(t: TorchInterpolate, n_in: int, n_out: int, factor: float | None, halves: bool = True) -> AxisMap:
    """The axis as torch computes it in float (every dtype but float64, and nearest always)."""
    source_scale = (1.0 / factor) if factor else n_in / n_out    # float32 in torch
    if t.mode == "area":          # adaptive average pooling: the windows come from the lengths alone
        return AxisMap(n_in, n_out, Fraction(n_out, n_in), 0.5, -0.5)
    if t.mode == "nearest" and n_out == 2 * n_in and halves:    # nearest_idx: output_index >> 1, whatever the scale
        return AxisMap(n_in, n_out, Fraction(2), 0.0, 0.0, Rounding.FLOOR)
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


def from_canonical(res: Resampling, tolerance: float = 0.0) -> tuple[TorchInterpolate, tuple[str, ...]]:
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
    modes = {Mode.NEAREST: ["nearest", "nearest-exact"], Mode.CUBIC: ["bicubic"], Mode.LANCZOS3: ["lanczos"],
             Mode.POOL: ["area"], Mode.LINEAR: [{1: "linear", 2: "bilinear", 3: "trilinear"}[n]]}.get(res.mode)
    if modes is None:
        refuse("mode", res.mode.value, "F.interpolate has no such filter (its modes: nearest, nearest-exact, "
               "linear/bilinear/trilinear, bicubic, lanczos (lanczos3 with antialias), area (pool))")
    return first_exact(res, _candidates(res, modes, n), to_canonical, "torch F.interpolate", tolerance)


def _candidates(res: Resampling, modes: list[str], n: int) -> Iterator[TorchInterpolate]:
    outs = list(res.out_shape[2:])
    # a map with explicit coordinates may be a float64 call's (torch's double arithmetic): those spellings too
    dtypes = [None, "float64"] if any(a.coords is not None for a in res.axes) else [None]
    for dtype in dtypes:
        for mode in modes:
            for ac in ([False, True] if mode in INTERPOLATING else [None]):
                yield TorchInterpolate(list(res.in_shape), mode, size=outs, align_corners=ac,
                                       antialias=res.antialias, dtype=dtype)
                factors = [float(a.scale) if a.scale != math.inf else 1.0 for a in res.axes[2:]]
                if all(np.isfinite(factors)):
                    yield TorchInterpolate(list(res.in_shape), mode, scale_factor=factors, align_corners=ac,
                                           antialias=res.antialias, dtype=dtype)
