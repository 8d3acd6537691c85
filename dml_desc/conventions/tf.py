"""TensorFlow resize (align_corners, half_pixel_centers; NHWC) <-> canonical."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

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

    def to_json(self) -> dict:
        """The JSON form (every field)."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict) -> "TfResize":
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


def _table_coords(m: AxisMap) -> tuple:
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


def from_canonical(res: Resampling, tolerance: float = 0.0) -> tuple:
    """The first TF v1 resize spelling whose map equals `res` -> (TfResize, notes). `res` must be NHWC:
    only axes 1 and 2 may be resized.
    """
    require(len(res.axes) == 4, "rank", len(res.axes), "TF image resize takes NHWC (4-D) tensors")
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
