"""TensorFlow resize <-> canonical, NHWC: the v1 ops (align_corners, half_pixel_centers; `TfResize`), TF2's
tf.image.resize (`TfImageResize`) and tf.raw_ops.ScaleAndTranslate (`TfScaleAndTranslate`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterator
from typing import Any, Sequence, Union

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding
from ..errors import flag, int_list, one_of, require
from .common import align_corners_axis, check_budget, dataclass_from_json, first_exact, place, refuse, reciprocal_f32

METHODS = {"bilinear": Mode.LINEAR, "nearest": Mode.NEAREST, "bicubic": Mode.CUBIC}


@dataclass
class TfResize:
    """A TF v1 image resize: tf.compat.v1.image.resize_{bilinear,nearest_neighbor,bicubic}(images, size,
    align_corners, half_pixel_centers) on an NHWC input of shape input_shape; size = [new_height, new_width].
    """
    input_shape: Sequence[int]          # NHWC
    size: Sequence[int]
    method: str = "bilinear"
    align_corners: bool = False
    half_pixel_centers: bool = False

    def to_json(self) -> dict[str, object]:
        """The JSON form (every field)."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: object) -> "TfResize":
        """A TfResize from its JSON form; unknown keys are refused by name."""
        return dataclass_from_json(cls, obj, "tf")


def to_canonical(t: TfResize) -> Resampling:
    """The canonical map of a TF v1 resize, NHWC (axes 1 and 2 are resized), scales in float32 as TF computes them."""
    one_of(t.method, METHODS, "method")
    shape = int_list(t.input_shape, "input_shape")
    require(len(shape) == 4, "input_shape", shape, "TF image resize takes NHWC tensors of positive sizes")
    int_list(t.size, "size", length=2)
    check_budget(shape, [shape[0], *t.size, shape[3]], "input_shape", "size", lambda i: f"size[{i - 1}]")
    flag(t.align_corners, "align_corners")
    flag(t.half_pixel_centers, "half_pixel_centers")
    require(not (t.align_corners and t.half_pixel_centers), "half_pixel_centers", True,
            "TF requires align_corners=False when half_pixel_centers=True")
    maps = [_axis(t, n_in, n_out) for n_in, n_out in zip(shape[1:3], t.size)]
    if t.method == "bicubic":         # TF's table: A and edges per half_pixel_centers, delta quantized to 1/1024
        maps = [m if m.is_identity else m.with_(coords=_table_coords(m)) for m in maps]
        keys = t.half_pixel_centers
        return Resampling(place(shape, (1, 2), maps), Mode.CUBIC, cubic_coeff_a=-0.5 if keys else -0.75,
                          exclude_outside=keys)
    return Resampling(place(shape, (1, 2), maps), METHODS[t.method])


def _table_coords(m: AxisMap) -> tuple[float, ...]:
    """resize_bicubic looks weights up in a 1024-entry table: x = floor(x) + lrint(frac(x) * 1024) / 1024."""
    import numpy as np
    from ..weights import coordinates
    x = coordinates(m)
    base = np.floor(x)
    return tuple(base + np.rint((x - base) * 1024) / 1024)


def _axis(t: TfResize, n_in: int, n_out: int) -> AxisMap:
    """CalculateResizeScale in float32, then the legacy or half-pixel scaler."""
    nearest = t.method == "nearest"
    if t.align_corners and n_out > 1:
        rounding = Rounding.ROUND_PREFER_CEIL if nearest else Rounding.ROUND_PREFER_FLOOR
        return align_corners_axis(n_in, n_out, rounding, scale=reciprocal_f32((n_in - 1) / (n_out - 1)))
    scale = reciprocal_f32(n_in / n_out)
    if nearest:
        return AxisMap(n_in, n_out, scale, 0.0, -0.5 if t.half_pixel_centers else 0.0, Rounding.FLOOR)
    offset = 0.5 if t.half_pixel_centers else 0.0
    return AxisMap(n_in, n_out, scale, offset, -offset)


def from_canonical(res: Resampling, tolerance: float = 0.0) -> tuple[TfResize, tuple[str, ...]]:
    """The first TF v1 resize spelling whose map equals `res` -> (TfResize, notes). `res` must be NHWC:
    only axes 1 and 2 may be resized.
    """
    if len(res.axes) != 4:              # a refusal (ConversionError), as every map TF cannot state
        refuse("rank", len(res.axes), "TF image resize takes NHWC (4-D) tensors")
    norm = res.normalized()
    for i in (0, 3):
        if not norm.axes[i].is_identity:
            refuse(f"axes[{i}]", "resized", "TF image resize keeps N and C: the tensor was read as NHWC (axes 1 "
                   "and 2 are H and W); an NCHW source resizes axes 2 and 3, which TF cannot express")
    if res.antialias:
        refuse("antialias", True, "the TF v1 resize ops have no antialias")
    if res.mode not in METHODS.values():
        refuse("mode", res.mode.value, "the TF v1 resize ops have bilinear, nearest and bicubic only")
    method = {v: k for k, v in METHODS.items()}[res.mode]
    cands = (TfResize(list(res.in_shape), list(res.out_shape[1:3]), method, ac, hp)
             for ac, hp in ((False, True), (False, False), (True, False)))
    return first_exact(res, cands, to_canonical, "TF resize", tolerance)


# --- TF2: tf.image.resize and tf.raw_ops.ScaleAndTranslate -------------------------------------------------------

V2_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")
KERNEL_TYPES = ("lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic")
OPS = ("image.resize", "ScaleAndTranslate")


@dataclass
class TfImageResize:
    """tf.image.resize(images, size, method, preserve_aspect_ratio, antialias) (TF2) on an NHWC input. Without
    antialias, bilinear / nearest / bicubic are the v1 ops with half_pixel_centers; area is ResizeArea; with
    antialias (bilinear: triangle, bicubic: keyscubic) and for lanczos3/5, gaussian, mitchellcubic, TF runs
    ScaleAndTranslate with scale = size / input size."""
    op: str
    input_shape: Sequence[int]
    size: Sequence[int]
    method: str = "bilinear"
    antialias: bool = False
    preserve_aspect_ratio: bool = False

    def to_json(self) -> dict[str, object]:
        """The JSON form (every field)."""
        return dict(self.__dict__)


@dataclass
class TfScaleAndTranslate:
    """tf.raw_ops.ScaleAndTranslate(images, size, scale, translation, kernel_type, antialias) on an NHWC input:
    output (y, x) samples the input at ((y + 0.5 - translation) / scale - 0.5) per spatial axis."""
    op: str
    input_shape: Sequence[int]
    size: Sequence[int]
    scale: Sequence[float]
    translation: Sequence[float] = (0.0, 0.0)
    kernel_type: str = "lanczos3"
    antialias: bool = True

    def to_json(self) -> dict[str, object]:
        """The JSON form (every field; lists for the sequences)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


TfCall = Union[TfResize, TfImageResize, TfScaleAndTranslate]     # any TF call this module reads


def call_from_json(obj: Any) -> TfCall:         # Any: parsed JSON, checked here
    """A TF call from its JSON form: the v1 op (no "op" key), or "op": "image.resize" / "ScaleAndTranslate"."""
    require(isinstance(obj, dict), "tf", obj, "must be a JSON object")
    if "op" not in obj:
        return TfResize.from_json(obj)
    op = one_of(obj["op"], OPS, "op")
    cls: type[TfImageResize | TfScaleAndTranslate] = TfImageResize if op == "image.resize" else TfScaleAndTranslate
    return dataclass_from_json(cls, obj, f"tf {op}")


def read(call: TfCall) -> Resampling:
    """The canonical map of any TF call (v1 op, tf.image.resize, ScaleAndTranslate)."""
    if isinstance(call, TfImageResize):
        return image_resize_canonical(call)
    if isinstance(call, TfScaleAndTranslate):
        return scale_and_translate_canonical(call)
    return to_canonical(call)


def _nhwc(input_shape: object, size: object) -> list[int]:
    shape = int_list(input_shape, "input_shape")
    require(len(shape) == 4, "input_shape", shape, "TF image resize takes NHWC tensors of positive sizes")
    int_list(size, "size", length=2)
    return shape


def image_resize_canonical(t: TfImageResize) -> Resampling:
    """tf.image.resize (TF 2.x image_ops_impl.resize_images_v2) as a canonical map."""
    from .filters import filtered, scale_translate_axis, KERNELS
    one_of(t.method, V2_METHODS, "method")
    shape = _nhwc(t.input_shape, t.size)
    flag(t.antialias, "antialias")
    flag(t.preserve_aspect_ratio, "preserve_aspect_ratio")
    size = list(t.size)
    if t.preserve_aspect_ratio:        # min of the float32 ratios, round half to even (math_ops.round)
        f = np.float32
        s = min(f(size[0]) / f(shape[1]), f(size[1]) / f(shape[2]))
        size = [int(np.round(f(s) * f(n))) for n in shape[1:3]]
        require(min(size) >= 1, "size", list(t.size), f"with preserve_aspect_ratio gives an empty output {size}")
    check_budget(shape, [shape[0], *size, shape[3]], "input_shape", "size", lambda i: f"size[{i - 1}]")
    scaled = t.method not in ("nearest", "area") and (t.antialias or t.method not in ("bilinear", "bicubic"))
    if not scaled and t.method != "area":
        return to_canonical(TfResize(shape, size, t.method, False, True))
    if t.method == "area":             # ResizeArea: in / out in float32, outside pixels clamped to the edge
        maps = [AxisMap(n, o, reciprocal_f32(n / o), 0.5, -0.5) for n, o in zip(shape[1:3], size)]
        return Resampling(place(shape, (1, 2), maps), Mode.AREA)
    kernel = {"bilinear": "triangle", "bicubic": "keyscubic"}.get(t.method, t.method)
    mode = KERNELS[kernel]
    f = np.float32
    maps = [scale_translate_axis(n, o, f(1) / (f(o) / f(n)), 0.0, mode) for n, o in zip(shape[1:3], size)]
    return filtered(place(shape, (1, 2), maps), mode, t.antialias)


def scale_and_translate_canonical(t: TfScaleAndTranslate) -> Resampling:
    """tf.raw_ops.ScaleAndTranslate (scale_and_translate_op.cc: inv_scale = 1.0f / scale, float32) as a map."""
    from .filters import filtered, scale_translate_axis, KERNELS
    from ..errors import float32_number
    one_of(t.kernel_type, KERNEL_TYPES, "kernel_type")
    shape = _nhwc(t.input_shape, t.size)
    flag(t.antialias, "antialias")
    for name in ("scale", "translation"):
        v = getattr(t, name)
        require(isinstance(v, (list, tuple)) and len(v) == 2, name, v, "must have 2 entries (height, width)")
        for i, x in enumerate(v):
            float32_number(x, f"{name}[{i}]", positive=name == "scale")
    check_budget(shape, [shape[0], *t.size, shape[3]], "input_shape", "size", lambda i: f"size[{i - 1}]")
    mode = KERNELS[t.kernel_type]
    f = np.float32
    maps = [scale_translate_axis(n, o, f(1) / f(s), tr, mode)
            for n, o, s, tr in zip(shape[1:3], t.size, t.scale, t.translation)]
    return filtered(place(shape, (1, 2), maps), mode, t.antialias)


def write(res: Resampling, tolerance: float = 0.0) -> tuple[TfCall, tuple[str, ...]]:
    """The first TF spelling of `res`: the v1 ops (as before), else tf.image.resize, else ScaleAndTranslate."""
    from ..errors import ConversionError
    try:
        return from_canonical(res, tolerance)
    except ConversionError as first:
        if res.mode in METHODS.values() and not res.antialias and not res.exclude_outside:
            raise
        try:
            return first_exact(res, _v2_candidates(res), read, "TF resize", tolerance)
        except ConversionError:
            raise first from None


def _v2_candidates(res: Resampling) -> Iterator[TfImageResize | TfScaleAndTranslate]:
    from .filters import kernel_of
    shape, size = list(res.in_shape), list(res.out_shape[1:3])
    if len(shape) != 4 or not all(res.normalized().axes[i].is_identity for i in (0, 3)):
        return
    for method in V2_METHODS:
        for aa in (False, True):
            yield TfImageResize("image.resize", shape, size, method, aa)
    kernel = {"linear": "triangle", "cubic": "keyscubic"}.get(res.mode.value, kernel_of(res))
    if kernel in KERNEL_TYPES:
        axes = res.axes[1:3]
        scales = [float(np.float32(a.scale)) if a.scale != math.inf else 1.0 for a in axes]
        shifts = [0.0 if a.is_identity else float(a.out_offset) + 0.5 for a in axes]
        for aa in (res.antialias, not res.antialias):
            yield TfScaleAndTranslate("ScaleAndTranslate", shape, size, scales, shifts, kernel, aa)
