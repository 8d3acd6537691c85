"""oneDNN Graph Interpolate / InterpolateBackward (JSON serialisation) <-> canonical.

Nearest is half_pixel with ties rounded up (round_prefer_ceil); the dnnl backend uses the
factor dst/src from the shapes, so the canonical scale is the exact ratio out/in.
"""
from __future__ import annotations

import math

import numpy as np

from ..canonical import Mode, Resampling, Rounding, ratio
from ..errors import int_list, one_of, require
from .common import align_corners_axis, first_exact, half_pixel_axis, place, refuse, spatial_axes

MODES = {"nearest": Mode.NEAREST, "linear": Mode.LINEAR, "bilinear": Mode.LINEAR, "trilinear": Mode.LINEAR}
SPATIAL_FOR_MODE = {"bilinear": 2, "trilinear": 3}
CTMS = ("half_pixel", "align_corners")
FORMATS = ("NCX", "NXC")
DTYPES = ("f32", "bf16", "f16")
KINDS = ("Interpolate", "InterpolateBackward")


def find_op(doc: dict, kinds=KINDS) -> dict:
    """The single op of a oneDNN Graph JSON document (or the op object itself)."""
    require(isinstance(doc, dict), "onednn", doc, "must be a JSON object")
    ops = doc.get("graph", [doc])
    require(isinstance(ops, list) and len(ops) == 1, "graph", len(ops) if isinstance(ops, list) else ops,
            "must hold exactly one op")
    op = ops[0]
    require(isinstance(op, dict), "graph[0]", op, "must be an op object")
    one_of(op.get("kind"), kinds, "kind")
    return op


def attrs_of(op: dict) -> dict:
    attrs = op.get("attrs", {})
    require(isinstance(attrs, dict), "attrs", attrs, "must be an object")
    out = {}
    for name, a in attrs.items():
        require(isinstance(a, dict) and "value" in a, f"attrs.{name}", a, 'must be {"type": ..., "value": ...}')
        out[name] = a["value"]
    return out


def shape_of(tensors: list, index: int, field: str) -> list:
    require(isinstance(tensors, list) and len(tensors) > index and isinstance(tensors[index], dict), field, tensors,
            f"needs a logical tensor object at index {index}")
    shape = tensors[index].get("shape")
    return int_list(shape, f"{field}[{index}].shape")


def to_canonical(doc: dict) -> Resampling:
    op = find_op(doc)
    a = attrs_of(op)
    src = shape_of(op.get("inputs"), 0, "inputs")
    dst = shape_of(op.get("inputs"), 1, "inputs") if op["kind"] == "InterpolateBackward" \
        else shape_of(op.get("outputs"), 0, "outputs")
    mode = one_of(a.get("mode"), list(MODES), "mode")
    ctm = one_of(a.get("coordinate_transformation_mode", "half_pixel"), CTMS, "coordinate_transformation_mode")
    fmt = one_of(a.get("data_format", "NXC"), FORMATS, "data_format")
    require(3 <= len(src) <= 5, "inputs[0].shape", src, "oneDNN interpolation takes 1 to 3 spatial axes")
    require(len(dst) == len(src), "inputs[1].shape" if op["kind"] == "InterpolateBackward" else "outputs[0].shape",
            dst, f"must have the rank of src ({len(src)})")
    spatial = list(spatial_axes(len(src), fmt))
    want = SPATIAL_FOR_MODE.get(mode)
    require(want is None or want == len(spatial), "mode", mode, f"needs {want} spatial axes, src has {len(spatial)}")
    outs = _spatial_out(a, [src[i] for i in spatial])
    for i, o in zip(spatial, outs):
        require(dst[i] == o, "sizes/scales", a.get("sizes", a.get("scales")),
                f"give {o} on axis {i} but the diff_dst/dst shape has {dst[i]}")
    for i in set(range(len(src))) - set(spatial):
        require(dst[i] == src[i], "shape", dst, f"axis {i} is not spatial in {fmt}; it must keep size {src[i]}")
    rounding = Rounding.ROUND_PREFER_CEIL
    maps = [half_pixel_axis(src[i], dst[i], ratio(dst[i], src[i]), rounding) if ctm == "half_pixel"
            else align_corners_axis(src[i], dst[i], rounding) for i in spatial]
    res = Resampling(place(src, spatial, maps), MODES[mode])
    if ctm == "align_corners":
        res = res.noted("oneDNN's dnnl backend rejects align_corners; the op definition allows it")
    return res


def _spatial_out(a: dict, ins: list) -> list:
    has_sizes, has_scales = a.get("sizes") not in (None, []), a.get("scales") not in (None, [])
    require(has_sizes != has_scales, "sizes/scales", {"sizes": a.get("sizes"), "scales": a.get("scales")},
            "exactly one of sizes and scales must be given")
    if has_sizes:
        return int_list(a["sizes"], "sizes", length=len(ins))
    scales = a["scales"]
    require(isinstance(scales, list) and len(scales) == len(ins) and all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s > 0 for s in scales),
        "scales", scales, f"must be {len(ins)} positive numbers (spatial axes only)")
    return [int(np.float32(s) * np.float32(n)) for s, n in zip(scales, ins)]


def from_canonical(res: Resampling, backward: bool = True, data_format=None, dtype: str = "f32",
                   use_scales: bool = False) -> tuple:
    require(dtype in DTYPES, "dtype", dtype, f"must be one of {list(DTYPES)}")
    require(data_format in (None,) + FORMATS, "data_format", data_format, f"must be one of {list(FORMATS)}")
    if res.mode is Mode.CUBIC:
        refuse("mode", "cubic", "oneDNN interpolation has nearest and linear only")
    if res.antialias:
        refuse("antialias", True, "oneDNN interpolation has no antialias")
    require(3 <= len(res.axes) <= 5, "rank", len(res.axes), "oneDNN interpolation takes 3- to 5-D tensors")
    docs = (_document(res, backward, fmt, ctm, dtype, use_scales)
            for fmt in ([data_format] if data_format else ["NXC", "NCX"]) for ctm in CTMS)
    return first_exact(res, docs, to_canonical, "oneDNN Graph")


def _document(res: Resampling, backward: bool, fmt: str, ctm: str, dtype: str, use_scales: bool) -> dict:
    src, dst = list(res.in_shape), list(res.out_shape)
    spatial = list(spatial_axes(len(src), fmt))
    attrs = {"mode": {"type": "string", "value": res.mode.value},
             "coordinate_transformation_mode": {"type": "string", "value": ctm},
             "data_format": {"type": "string", "value": fmt}}
    if use_scales:
        attrs["scales"] = {"type": "f32[]", "value": [dst[i] / src[i] for i in spatial]}
    else:
        attrs["sizes"] = {"type": "s64[]", "value": [dst[i] for i in spatial]}
    ins = [logical_tensor(0, src, dtype)] + ([logical_tensor(1, dst, dtype)] if backward else [])
    outs = [logical_tensor(2 if backward else 1, src if backward else dst, dtype)]
    op = {"id": 0, "name": "RESAMPLING_0", "kind": KINDS[backward], "attrs": attrs, "inputs": ins, "outputs": outs}
    return graph_document(op)


def graph_document(op: dict) -> dict:
    """A oneDNN Graph JSON document holding one op."""
    return {"version": "3.0.0", "engine_kind": "cpu", "fpmath_mode": "strict", "graph": [op]}


def logical_tensor(tid: int, shape: list, dtype: str) -> dict:
    """A dense (strided, row-major) logical tensor of oneDNN Graph's JSON form."""
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return {"id": tid, "dtype": dtype, "shape": list(shape), "stride": strides,
            "layout_type": "strided", "property_type": "undef"}
