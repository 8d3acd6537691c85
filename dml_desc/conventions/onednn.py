"""oneDNN Graph Interpolate / InterpolateBackward (JSON serialisation) <-> canonical.

Nearest is half_pixel with ties rounded up (round_prefer_ceil); the dnnl backend uses the
factor dst/src from the shapes, so the canonical scale is the exact ratio out/in. oneDNN computes
the coordinate as ((o + 0.5f) * in / out) - 0.5f in float32 steps (src/cpu/resampling_utils.hpp);
where those steps change the weights (large axes), the axis carries them as explicit `coords`.
Its backward kernels find the outputs of each input by an inverse rule of their own
(`backward_kernel_map`): the jit:avx512_core kernel rounds some exact nearest ties down.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..canonical import AxisMap, Mode, Resampling, Rounding, ratio
from ..errors import ConversionError, DescError, did_you_mean, float32_number, int_list, one_of, require, short_key
from ..weights import Taps, forward_taps, sorted_unique
from .common import align_corners_axis, check_budget, first_exact, half_pixel_axis, place, refuse, spatial_axes

MODES = {"nearest": Mode.NEAREST, "linear": Mode.LINEAR, "bilinear": Mode.LINEAR, "trilinear": Mode.LINEAR}
SPATIAL_FOR_MODE = {"bilinear": 2, "trilinear": 3}
CTMS = ("half_pixel", "align_corners")
WRITTEN_CTMS = ("half_pixel",)     # oneDNN's dnnl backend rejects align_corners (is_supported: unimplemented)
FORMATS = ("NCX", "NXC")
ONEDNN_DTYPES = ("f32", "bf16", "f16")
KINDS = ("Interpolate", "InterpolateBackward")
F32 = np.float32
JsonObject = dict[str, Any]      # an object of a oneDNN Graph JSON document (parsed JSON: the values are checked)


def find_op(doc: Any, kinds: Sequence[str] = KINDS) -> JsonObject:     # Any: parsed JSON, checked here
    """The single op of a oneDNN Graph JSON document (or the op object itself)."""
    require(isinstance(doc, dict), "onednn", doc, "must be a JSON object")
    ops = doc.get("graph", [doc])
    require(isinstance(ops, list) and len(ops) == 1, "graph", len(ops) if isinstance(ops, list) else ops,
            "must hold exactly one op")
    op: JsonObject = ops[0]
    require(isinstance(op, dict), "graph[0]", op, "must be an op object")
    one_of(op.get("kind"), kinds, "kind")
    return op


def attrs_of(op: JsonObject) -> JsonObject:
    """An op's attributes as {name: value}, from oneDNN Graph's {"name": {"type": ..., "value": ...}} form."""
    attrs = op.get("attrs", {})
    require(isinstance(attrs, dict), "attrs", attrs, "must be an object")
    out: JsonObject = {}
    for name, a in attrs.items():
        require(isinstance(a, dict) and "value" in a, f"attrs.{name}", a, 'must be {"type": ..., "value": ...}')
        out[name] = a["value"]
    return out


def shape_of(tensors: Any, index: int, field: str) -> list[int]:     # Any: parsed JSON, checked here
    """The shape of logical tensor `index` of an op's inputs or outputs (a DescError naming `field` if absent)."""
    require(isinstance(tensors, list) and len(tensors) > index and isinstance(tensors[index], dict), field, tensors,
            f"needs a logical tensor object at index {index}")
    shape = tensors[index].get("shape")
    return int_list(shape, f"{field}[{index}].shape")


INTERPOLATE_ATTRS = ("mode", "coordinate_transformation_mode", "sizes", "scales", "data_format")


def known_attrs(a: JsonObject, known: Sequence[str]) -> JsonObject:
    """Refuse an attribute this op does not read (it would be dropped silently)."""
    unknown = [name for name in a if name not in known]
    require(not unknown, f"attrs.{short_key(unknown[0]) if unknown else ''}", None,
            f"is not an attribute of this op{did_you_mean(unknown[0], known) if unknown else ''} "
            f"(it reads {list(known)})")
    return a


def to_canonical(doc: object) -> Resampling:
    """The canonical map of a oneDNN Graph JSON document with one Interpolate or InterpolateBackward op.
    Shapes are read in the op's data_format (NCX: channels first, NXC: channels last); the scale is the
    exact ratio out/in of the shapes, as the dnnl backend uses it.
    """
    op = find_op(doc)
    a = known_attrs(attrs_of(op), INTERPOLATE_ATTRS)
    src = shape_of(op.get("inputs"), 0, "inputs")
    dst = shape_of(op.get("inputs"), 1, "inputs") if op["kind"] == "InterpolateBackward" \
        else shape_of(op.get("outputs"), 0, "outputs")
    mode = one_of(a.get("mode"), list(MODES), "mode")
    ctm = one_of(a.get("coordinate_transformation_mode", "half_pixel"), CTMS, "coordinate_transformation_mode")
    fmt = one_of(a.get("data_format", "NXC"), FORMATS, "data_format")
    require(3 <= len(src) <= 5, "inputs[0].shape", src, "oneDNN interpolation takes 1 to 3 spatial axes")
    require(len(dst) == len(src), "inputs[1].shape" if op["kind"] == "InterpolateBackward" else "outputs[0].shape",
            dst, f"must have the rank of src ({len(src)})")
    check_dtypes(op)
    check_budget(src, dst, "inputs[0].shape", "inputs[1].shape" if op["kind"] == "InterpolateBackward"
                 else "outputs[0].shape")
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
    maps = [float_steps(half_pixel_axis(src[i], dst[i], ratio(dst[i], src[i]), rounding), MODES[mode])
            if ctm == "half_pixel" else align_corners_axis(src[i], dst[i], rounding) for i in spatial]
    res = Resampling(place(src, spatial, maps), MODES[mode])
    if ctm == "align_corners":
        res = res.noted("oneDNN's dnnl backend rejects align_corners; the op definition allows it")
    return res


def _spatial_out(a: JsonObject, ins: list[int]) -> list[int]:
    has_sizes, has_scales = a.get("sizes") not in (None, []), a.get("scales") not in (None, [])
    require(has_sizes != has_scales, "sizes/scales", {"sizes": a.get("sizes"), "scales": a.get("scales")},
            "exactly one of sizes and scales must be given")
    if has_sizes:
        return int_list(a["sizes"], "sizes", length=len(ins))
    scales = a["scales"]
    require(isinstance(scales, list) and len(scales) == len(ins), "scales", scales,
            f"must be {len(ins)} positive numbers (spatial axes only)")
    for i, (s, n) in enumerate(zip(scales, ins)):
        float32_number(s, f"scales[{i}]", positive=True)       # an f32[] attribute
        require(s * n < 2 ** 63, f"scales[{i}]", s, f"gives an output too large to count from {n}")
    return [scaled_size(s, n) for s, n in zip(scales, ins)]


def check_dtypes(op: JsonObject) -> None:
    """Every logical tensor's dtype, when given, is one of ONEDNN_DTYPES, and all of them agree."""
    seen: list[tuple[str, str]] = []
    for role in ("inputs", "outputs"):
        tensors = op.get(role) or []
        require(isinstance(tensors, list), role, tensors, "must be a list of logical tensor objects")
        for i, t in enumerate(tensors):
            if isinstance(t, dict) and "dtype" in t:
                one_of(t["dtype"], ONEDNN_DTYPES, f"{role}[{i}].dtype")
                seen.append((f"{role}[{i}].dtype", t["dtype"]))
    for name, dt in seen[1:]:
        require(dt == seen[0][1], name, dt, f"must equal {seen[0][0]}={seen[0][1]} (one dtype per op)")


def scaled_size(scale: float, n_in: int) -> int:
    """oneDNN Graph's output size for a float32 scale: the float32 product, truncated."""
    return int(F32(scale) * F32(n_in))


def scale_for(n_in: int, n_out: int) -> float:
    """The float32 scale nearest out/in that oneDNN turns back into n_out (7 -> 31: one float32 step up)."""
    s = F32(n_out / n_in)
    for _ in range(64):
        got = scaled_size(s, n_in)
        if got == n_out:
            return float(s)
        s = np.nextafter(s, F32(np.inf) if got < n_out else F32(0))
    raise DescError("scales", n_out / n_in, f"no float32 scale gives {n_out} from {n_in} in oneDNN")


def stepped_coords(n_in: int, n_out: int) -> np.ndarray:
    """oneDNN's pixel_shift_scale in its float32 steps: ((o + 0.5f) * in / out) - 0.5f."""
    o = np.arange(n_out, dtype=F32)
    coords: np.ndarray = (o + F32(0.5)) * F32(n_in) / F32(n_out) - F32(0.5)
    return coords


def float_steps(ax: AxisMap, mode: Mode) -> AxisMap:
    """The axis with oneDNN's float32 coordinates where they change its weights (large axes), else as is."""
    if ax.is_identity:
        return ax
    stepped = ax.with_(coords=tuple(stepped_coords(ax.in_size, ax.out_size)))
    probe = Resampling((ax,), mode)
    same = all(np.array_equal(a, b) for a, b in zip(forward_taps(ax, probe).merged(),
                                                    forward_taps(stepped, probe).merged()))
    return ax if same else stepped


def backward_starts(n_in: int, n_out: int, kernel: str) -> np.ndarray:
    """First output of each input (and n_out at the end) by a nearest backward kernel's inverse rule:
    jit:avx512_core: ceil(i * float(out / in) - 0.5f); ref and simple: ceil(i * out / in - 0.5f), float steps."""
    i = np.arange(n_in + 1, dtype=F32)
    if kernel.startswith("jit:avx512"):
        x = i * (F32(n_out) / F32(n_in)) - F32(0.5)
    else:
        x = i * F32(n_out) / F32(n_in) - F32(0.5)
    starts: np.ndarray = np.clip(np.ceil(x.astype(np.float64)), 0, n_out).astype(np.int64)
    return starts


def backward_kernel_map(res: Resampling, kernel: str) -> Resampling:
    """The map a oneDNN backward kernel actually transposes. Nearest: each output goes to the input whose
    [start, end) range holds it; linear: the forward map (its ranges agree wherever its weights are not 0)."""
    if res.mode is not Mode.NEAREST:
        return res
    axes = []
    for ax in res.axes:
        if ax.is_identity:
            axes.append(ax)
            continue
        owner = np.searchsorted(backward_starts(ax.in_size, ax.out_size, kernel), np.arange(ax.out_size),
                                side="right") - 1
        axes.append(ax.with_(coords=tuple(float(i) for i in owner)))
    return res.with_(axes=tuple(axes))


def backward_linear_taps(n_in: int, n_out: int) -> Taps:
    """The linear backward of oneDNN's ref, simple and jit kernels (bwd_linear_coeffs_t), rows = inputs.
    Input i takes weight 1 - frac(s_o) from the outputs in [ceil(f(i)), ceil(f(i+1))) and frac(s_o) from
    those in [trunc(f(i-1)) + 1, trunc(f(i)) + 1), f(i) = (i + 0.5f) * out / in - 0.5f and s_o the forward
    coordinate, all in float32 steps. On large axes these ranges can disagree with the forward's taps."""
    s = stepped_coords(n_in, n_out)
    right_w = s - np.floor(s).astype(F32)
    left_w = F32(1) - right_w
    i = np.arange(-1, n_in + 1, dtype=F32)
    f = ((i + F32(0.5)) * F32(n_out) / F32(n_in) - F32(0.5)).astype(np.float64)   # f[k] = f(k - 1)
    ceil_idx = np.where(f < 0, 0, np.ceil(f)).astype(np.int64)
    after = np.where(f < 0, 0, np.trunc(f) + 1).astype(np.int64)
    rows = np.arange(n_in)
    start0, end0 = np.where(rows == 0, 0, ceil_idx[1:-1]), np.minimum(ceil_idx[2:], n_out)
    start1, end1 = after[:-2], np.where(rows == n_in - 1, n_out, np.minimum(after[1:-1], n_out))
    taps = [[(o, left_w[o]) for o in range(a, b)] + [(o, right_w[o]) for o in range(c, d)]
            for a, b, c, d in zip(start0, end0, start1, end1)]
    width = max(1, max(len(t) for t in taps))
    index, weight = np.zeros((n_in, width), np.int64), np.zeros((n_in, width))
    for r, t in enumerate(taps):
        for k, (o, w) in enumerate(t):
            index[r, k], weight[r, k] = o, w
    return Taps(index, weight, n_out)


def backward_kernel_taps(res: Resampling, kernel: str) -> list[Taps | None]:
    """Per axis, the gradient table (rows = inputs) a oneDNN backward kernel computes (None: identity)."""
    from ..weights import gradient_taps
    if res.mode is Mode.LINEAR:
        return [None if ax.is_identity else backward_linear_taps(ax.in_size, ax.out_size) for ax in res.axes]
    kernel_res = backward_kernel_map(res, kernel)
    return [None if ax.is_identity else gradient_taps(ax, kernel_res) for ax in kernel_res.axes]


def departures(res: Resampling, kernel: str) -> dict[int, list[int]]:
    """{axis: [inputs whose gradient row differs]} between the transpose of `res` and what `kernel` computes
    (weights compared to 1e-6, so linear's float32 weights do not count); empty when it is the transpose."""
    from ..weights import gradient_taps
    out: dict[int, list[int]] = {}
    for a, (ax, taps) in enumerate(zip(res.axes, backward_kernel_taps(res, kernel))):
        rows: list[int] | np.ndarray = [] if taps is None else _rows_that_differ(gradient_taps(ax, res), taps)
        if len(rows):
            out[a] = [int(r) for r in rows]
    return out


def _rows_that_differ(a: Taps, b: Taps) -> np.ndarray:
    (ra, ca, wa), (rb, cb, wb) = a.merged(), b.merged()
    ka, kb = ra * a.cols + ca, rb * b.cols + cb
    keys = sorted_unique(np.concatenate((ka, kb)))
    va, vb = np.zeros(len(keys)), np.zeros(len(keys))
    va[np.searchsorted(keys, ka)], vb[np.searchsorted(keys, kb)] = wa, wb
    return sorted_unique(keys[np.abs(va - vb) > 1e-6] // a.cols)


def from_canonical(res: Resampling, backward: bool = True, data_format: str | None = None, dtype: str = "f32",
                   use_scales: bool = False, tolerance: float = 0.0) -> tuple[JsonObject, tuple[str, ...]]:
    """A oneDNN Graph JSON document for `res` (InterpolateBackward when `backward`, else Interpolate) and the
    notes; refuses cubic, antialias and maps oneDNN rounds differently (e.g. nearest ties round up).
    data_format=None guesses NCX or NXC from which axes are resized.
    """
    require(dtype in ONEDNN_DTYPES, "dtype", dtype, f"must be one of {list(ONEDNN_DTYPES)}")
    require(data_format in (None,) + FORMATS, "data_format", data_format, f"must be one of {list(FORMATS)}")
    if res.mode not in (Mode.NEAREST, Mode.LINEAR):
        refuse("mode", res.mode.value, "oneDNN interpolation has nearest and linear only")
    if res.antialias:
        refuse("antialias", True, "oneDNN interpolation has no antialias")
    require(3 <= len(res.axes) <= 5, "rank", len(res.axes), "oneDNN interpolation takes 3- to 5-D tensors")
    docs = (_document(res, backward, fmt, ctm, dtype, use_scales)
            for fmt in ([data_format] if data_format else ["NXC", "NCX"]) for ctm in WRITTEN_CTMS)
    try:
        return first_exact(res, docs, to_canonical, "oneDNN Graph", tolerance)
    except ConversionError as e:
        if any(a.scale == ratio(a.out_size - 1, a.in_size - 1) and a.in_offset == 0 and a.out_offset == 0
               for a in res.axes if not a.is_identity and a.in_size > 1 and a.out_size > 1):
            refuse(e.field, e.value, f"{e.rule}; align_corners is in oneDNN's op definition, but its CPU (dnnl) "
                   "backend has no kernel for it, so it is not written")
        raise


def _document(res: Resampling, backward: bool, fmt: str, ctm: str, dtype: str, use_scales: bool) -> JsonObject:
    src, dst = list(res.in_shape), list(res.out_shape)
    spatial = list(spatial_axes(len(src), fmt))
    attrs: dict[str, dict[str, object]] = {"mode": {"type": "string", "value": res.mode.value},
                                           "coordinate_transformation_mode": {"type": "string", "value": ctm},
                                           "data_format": {"type": "string", "value": fmt}}
    if use_scales:
        attrs["scales"] = {"type": "f32[]", "value": [scale_for(src[i], dst[i]) for i in spatial]}
    else:
        attrs["sizes"] = {"type": "s64[]", "value": [dst[i] for i in spatial]}
    ins = [logical_tensor(0, src, dtype)] + ([logical_tensor(1, dst, dtype)] if backward else [])
    outs = [logical_tensor(2 if backward else 1, src if backward else dst, dtype)]
    op = {"id": 0, "name": "RESAMPLING_0", "kind": KINDS[backward], "attrs": attrs, "inputs": ins, "outputs": outs}
    return graph_document(op)


def graph_document(op: JsonObject) -> JsonObject:
    """A oneDNN Graph JSON document holding one op."""
    return {"version": "3.0.0", "engine_kind": "cpu", "fpmath_mode": "strict", "graph": [op]}


def logical_tensor(tid: int, shape: list[int], dtype: str) -> JsonObject:
    """A dense (strided, row-major) logical tensor of oneDNN Graph's JSON form."""
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return {"id": tid, "dtype": dtype, "shape": list(shape), "stride": strides,
            "layout_type": "strided", "property_type": "undef"}
