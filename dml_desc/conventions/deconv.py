"""ConvTransposeBackwardData: oneDNN Graph op <-> canonical ConvSpec <-> DML convolution <-> ONNX Conv.

The data gradient of a transposed convolution is a forward cross-correlation of diff_dst with the
same weights. In oneDNN's IOX layout, (IC, OC/groups, X...), those weights are already ONNX Conv's
(M, C/groups, X...) layout; XOI and NXC need transposes. Follows oneDNN's shape inference
(src/graph/interface/shape_infer.cpp): weights O == diff_dst channels / groups, auto_pad from diff_dst.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Tuple

from ..convolution import DML_CONVOLUTION_OPERATOR_DESC, conv_out_size, deconv_out_size
from ..enums import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE, DML_TENSOR_DATA_TYPE
from ..errors import DescError, integer, int_list, one_of, require, short_key
from ..tensor import DML_BUFFER_TENSOR_DESC
from .common import check_numbers, refuse
from .reading import Convention, Reading, Writing
from .onnx import DEFAULT_OPSET
from .onednn import (JsonObject, attrs_of, check_dtypes, find_op, known_attrs, graph_document, logical_tensor,
                     shape_of)

AUTO_PADS = {"none": "None", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}
WEIGHTS_FORMATS = {"IOX": "IOX", "XOI": "XOI", "OIX": "IOX", "XIO": "XOI"}   # the seed's table names alias
DATA_FORMATS = ("NCX", "NXC")
DECONV_ATTRS = ("strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups",
                "data_format", "weights_format")
DML_DATA_TYPE_OF = {"f32": DML_TENSOR_DATA_TYPE.FLOAT32, "f16": DML_TENSOR_DATA_TYPE.FLOAT16, "bf16": None}


@dataclass(frozen=True)
class ConvSpec:
    """diff_src = cross_correlation(diff_dst, weights), both NCX, weights (IC, OC/groups, K...)."""
    batch: int
    dst_channels: int                 # OC: channels of diff_dst
    src_channels: int                 # IC: channels of diff_src
    dst_spatial: Tuple[int, ...]
    kernel: Tuple[int, ...]
    strides: Tuple[int, ...]
    dilations: Tuple[int, ...]
    pads_begin: Tuple[int, ...]
    pads_end: Tuple[int, ...]
    groups: int = 1
    output_padding: Tuple[int, ...] = field(default=(), compare=False)   # forward metadata only

    def __post_init__(self) -> None:
        """Every writer's output must load again: positive dims, a kernel that fits, the size budget."""
        from .. import budget
        for name in ("batch", "dst_channels", "src_channels", "groups"):
            integer(getattr(self, name), name, 1)
        n = len(self.dst_spatial) if isinstance(self.dst_spatial, tuple) else 0
        require(1 <= n <= 3, "diff_dst shape", self.diff_dst_shape, "must have 1 to 3 spatial axes")
        for name, minimum in (("dst_spatial", 1), ("kernel", 1), ("strides", 1), ("dilations", 1),
                              ("pads_begin", 0), ("pads_end", 0)):
            int_list(getattr(self, name), name, minimum, length=n)
        require(self.dst_channels % self.groups == 0 and self.src_channels % self.groups == 0, "groups",
                self.groups, f"must divide both channel counts ({self.dst_channels}, {self.src_channels})")
        budget.check_shape(self.diff_dst_shape, "diff_dst shape")
        budget.check_shape(self.weights_shape, "weights shape")
        for i, (d, k, dl, b, e) in enumerate(zip(self.dst_spatial, self.kernel, self.dilations, self.pads_begin,
                                                 self.pads_end)):
            require(dl * (k - 1) + 1 <= d + b + e, "kernel", list(self.kernel),
                    f"spatial axis {i}: the dilated kernel {dl * (k - 1) + 1} is larger than diff_dst {d} plus "
                    f"pads {b}+{e}: diff_src would be empty")
        budget.check_shape(self.diff_src_shape, "diff_src shape")

    @property
    def src_spatial(self) -> Tuple[int, ...]:
        """diff_src's spatial sizes (oneDNN's shape inference for ConvTransposeBackwardData)."""
        return tuple(conv_out_size(*a) for a in zip(self.dst_spatial, self.kernel, self.strides, self.dilations,
                                                    self.pads_begin, self.pads_end))

    @property
    def diff_dst_shape(self) -> Tuple[int, ...]:
        """diff_dst's shape, NCX: (N, OC, spatial...)."""
        return (self.batch, self.dst_channels) + self.dst_spatial

    @property
    def diff_src_shape(self) -> Tuple[int, ...]:
        """diff_src's shape, NCX: (N, IC, spatial...)."""
        return (self.batch, self.src_channels) + self.src_spatial

    @property
    def weights_shape(self) -> Tuple[int, ...]:
        """The weights' shape in IOX: (IC, OC/groups, kernel...)."""
        return (self.src_channels, self.dst_channels // self.groups) + self.kernel


def _ints(a: JsonObject, name: str, n: int, minimum: int, required: bool = True, default: Sequence[int] = ()
          ) -> tuple[int, ...]:
    """One per-spatial-axis integer attribute; `default` when it is optional and absent."""
    require(name in a or not required, name, None, "is required")
    return tuple(int_list(a[name], name, minimum, length=n)) if name in a else tuple(default)


def auto_pads(mode: str, n_in: int, k: int, s: int, d: int) -> Tuple[int, int]:
    """oneDNN's infer_auto_pad on diff_dst: SAME keeps ceil(in / stride) outputs."""
    if mode == "VALID":
        return 0, 0
    total = max(0, (math.ceil(n_in / s) - 1) * s + d * (k - 1) + 1 - n_in)
    small = total // 2
    return (small, total - small) if mode == "SAME_UPPER" else (total - small, small)


def _read_onednn(doc: object) -> Reading:
    """A oneDNN Graph JSON document's ConvSpec, its layout (data_format, weights_format, dtype) and notes."""
    op = find_op(doc, ("ConvTransposeBackwardData",))
    a = known_attrs(attrs_of(op), DECONV_ATTRS)
    dd = shape_of(op.get("inputs"), 0, "inputs")
    w = shape_of(op.get("inputs"), 1, "inputs")
    fmt = one_of(a.get("data_format", "NXC"), DATA_FORMATS, "data_format")
    wfmt_in = one_of(a.get("weights_format", "XOI"), list(WEIGHTS_FORMATS), "weights_format")
    wfmt = WEIGHTS_FORMATS[wfmt_in]
    notes: tuple[str, ...] = () if wfmt == wfmt_in else (
        f"weights_format {wfmt_in} read as {wfmt} (oneDNN's ConvTranspose schema accepts XOI/IOX; the seed table's "
        "OIX/XIO name the same layouts)",)
    require(3 <= len(dd) <= 5, "inputs[0].shape", dd, "diff_dst must be 3- to 5-D (1 to 3 spatial axes)")
    require(len(w) == len(dd), "inputs[1].shape", w, f"weights must have the rank of diff_dst ({len(dd)})")
    n = len(dd) - 2
    oc, sp = (dd[1], dd[2:]) if fmt == "NCX" else (dd[-1], dd[1:-1])
    ic, o_per_g, k = (w[0], w[1], w[2:]) if wfmt == "IOX" else (w[-1], w[-2], w[:-2])
    g = a.get("groups", 1)
    require(isinstance(g, int) and not isinstance(g, bool) and g >= 1, "groups", g, "must be an integer >= 1")
    require(oc % g == 0, "groups", g, f"diff_dst channels {oc} are not divisible by groups")
    require(ic % g == 0, "groups", g, f"diff_src channels {ic} (weights I) are not divisible by groups")
    require(o_per_g == oc // g, "inputs[1].shape", w,
            f"{wfmt} weights need O = diff_dst channels / groups = {oc // g}, got {o_per_g}")
    strides = _ints(a, "strides", n, 1)
    dilations = _ints(a, "dilations", n, 1)
    pb, pe = _ints(a, "pads_begin", n, 0), _ints(a, "pads_end", n, 0)
    out_pad = _ints(a, "output_padding", n, 0, required=False, default=[0] * n)
    mode = a.get("auto_pad", "None")
    require(isinstance(mode, str) and mode.isascii() and mode.lower() in AUTO_PADS, "auto_pad", mode,
            f"must be one of {list(AUTO_PADS.values())} (ASCII, either case)")
    if mode not in AUTO_PADS.values():
        notes += (f"auto_pad {mode!r} read as {AUTO_PADS[mode.lower()]!r} (oneDNN's add_op accepts only "
                  f"{list(AUTO_PADS.values())})",)
    mode = AUTO_PADS[mode.lower()]
    if mode != "None":
        pb, pe = zip(*(auto_pads(mode, *args) for args in zip(sp, k, strides, dilations)))
    spec = ConvSpec(dd[0], oc, ic, tuple(sp), tuple(k), strides, dilations, tuple(pb), tuple(pe), g, out_pad)
    _check_output(op, spec, fmt, "output_padding" in a)
    return Reading(spec, True, notes, {"data_format": fmt, "weights_format": wfmt, "dtype": _dtype(op)})


def _check_output(op: JsonObject, spec: ConvSpec, fmt: str, check_padding: bool) -> None:
    for i, n in enumerate(spec.src_spatial):
        require(n >= 1, "pads/strides", spec.dst_spatial, f"give an empty diff_src on spatial axis {i}")
        if not check_padding:
            continue
        fwd = deconv_out_size(n, spec.kernel[i], spec.strides[i], spec.dilations[i], spec.pads_begin[i],
                              spec.pads_end[i], spec.output_padding[i])
        require(fwd == spec.dst_spatial[i], "output_padding", list(spec.output_padding),
                f"the transposed convolution of diff_src would have {fwd} on spatial axis {i}, "
                f"diff_dst has {spec.dst_spatial[i]}")
    outs = op.get("outputs") or []
    require(isinstance(outs, list) and all(isinstance(o, dict) for o in outs), "outputs", outs,
            "must be a list of logical tensor objects")
    if outs and outs[0].get("shape") not in (None, [], -1):
        want = list(spec.diff_src_shape) if fmt == "NCX" else \
            [spec.batch, *spec.src_spatial, spec.src_channels]
        require(outs[0]["shape"] == want, "outputs[0].shape", outs[0]["shape"],
                f"must be {want} by oneDNN's formula floor((diff_dst + pb + pe - (d*(k-1)+1)) / s) + 1")


def _dtype(op: JsonObject) -> str:
    check_dtypes(op)
    first = (op.get("inputs") or [{}])[0]
    dtype: str = first.get("dtype", "f32") if isinstance(first, dict) else "f32"     # check_dtypes: one of ours
    return dtype


def to_onednn(spec: ConvSpec, data_format: str = "NCX", weights_format: str = "IOX", dtype: str = "f32") -> JsonObject:
    """A oneDNN Graph JSON document with one ConvTransposeBackwardData op for `spec`, in the given data
    layout (NCX or NXC), weights layout (IOX or XOI) and dtype ('f32', 'f16', 'bf16').
    """
    require(data_format in DATA_FORMATS, "data_format", data_format, f"must be one of {list(DATA_FORMATS)}")
    require(weights_format in ("IOX", "XOI"), "weights_format", weights_format, "must be IOX or XOI")
    # No output_padding: oneDNN's add_op refuses it ("attribute output_padding is not defined in spec").
    per_axis = {"strides": spec.strides, "pads_begin": spec.pads_begin, "pads_end": spec.pads_end,
                "dilations": spec.dilations}
    attrs: dict[str, dict[str, object]] = {k: {"type": "s64[]", "value": list(v)} for k, v in per_axis.items()}
    attrs.update({"auto_pad": {"type": "string", "value": "None"}, "groups": {"type": "s64", "value": spec.groups},
                  "data_format": {"type": "string", "value": data_format},
                  "weights_format": {"type": "string", "value": weights_format}})
    w = list(spec.weights_shape)
    if weights_format == "XOI":
        w = w[2:] + [w[1], w[0]]
    tensors = [logical_tensor(0, to_layout(spec.diff_dst_shape, data_format), dtype), logical_tensor(1, w, dtype)]
    out = logical_tensor(2, to_layout(spec.diff_src_shape, data_format), dtype)
    return graph_document({"id": 0, "name": "DECONV_0", "kind": "ConvTransposeBackwardData", "attrs": attrs,
                           "inputs": tensors, "outputs": [out]})


def to_layout(ncx: Sequence[int], data_format: str) -> list[int]:
    """An NCX shape written in `data_format` ('NCX' unchanged, 'NXC' channels last)."""
    ncx = list(ncx)
    return ncx if data_format == "NCX" else [ncx[0]] + ncx[2:] + [ncx[1]]


def to_dml(spec: ConvSpec, dtype: str = "f32") -> DML_CONVOLUTION_OPERATOR_DESC:
    """The forward DML convolution that computes diff_src (cross-correlation, Direction FORWARD)."""
    dt = DML_DATA_TYPE_OF[dtype]
    if dt is None:
        refuse("dtype", dtype, "DirectML convolution supports FLOAT32 and FLOAT16, not bf16")
    n = len(spec.kernel)
    return DML_CONVOLUTION_OPERATOR_DESC(
        input_tensor=DML_BUFFER_TENSOR_DESC.packed(dt, spec.diff_dst_shape),
        filter_tensor=DML_BUFFER_TENSOR_DESC.packed(dt, spec.weights_shape),
        output_tensor=DML_BUFFER_TENSOR_DESC.packed(dt, spec.diff_src_shape),
        strides=spec.strides, dilations=spec.dilations, start_padding=spec.pads_begin,
        end_padding=spec.pads_end, output_padding=(0,) * n, group_count=spec.groups)


def from_dml(desc: DML_CONVOLUTION_OPERATOR_DESC) -> ConvSpec:
    """The ConvSpec of a DML convolution (FORWARD, CROSS_CORRELATION, NCHW/NCDHW); refuses other modes."""
    if desc.mode is not DML_CONVOLUTION_MODE.CROSS_CORRELATION:
        refuse("Mode", desc.mode.name, "only CROSS_CORRELATION maps onto oneDNN/ONNX convolution; CONVOLUTION "
               "flips the filter, which changes the weights, not the descriptor")
    if desc.direction is not DML_CONVOLUTION_DIRECTION.FORWARD:
        refuse("Direction", desc.direction.name, "the data gradient of a transposed convolution is a FORWARD "
               "convolution; a BACKWARD descriptor describes the transposed convolution itself")
    if desc.bias_tensor is not None:
        refuse("BiasTensor", desc.bias_tensor.sizes, "the data gradient of a transposed convolution has no bias; "
               "oneDNN's ConvTransposeBackwardData and this ONNX Conv form cannot carry it")
    for t in (desc.input_tensor, desc.filter_tensor, desc.output_tensor):
        if t.strides is not None and tuple(t.strides) != _packed_strides(t.sizes):
            refuse(f"{t.name}.Strides", list(t.strides), f"must be packed {list(_packed_strides(t.sizes))} (NCX): "
                   "oneDNN's and ONNX's forms here describe dense tensors only")
    x, w = desc.input_tensor.sizes, desc.filter_tensor.sizes
    return ConvSpec(x[0], x[1], w[0], tuple(x[2:]), tuple(w[2:]), desc.strides, desc.dilations,
                    desc.start_padding, desc.end_padding, desc.group_count, (0,) * len(desc.strides))


def _packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    return tuple(math.prod(sizes[i + 1:]) for i in range(len(sizes)))


def to_onnx_attrs(spec: ConvSpec) -> dict[str, object]:
    """ONNX Conv attributes for NCX data and (IC, OC/groups, K...) weights."""
    return {"kernel_shape": list(spec.kernel), "strides": list(spec.strides), "dilations": list(spec.dilations),
            "pads": list(spec.pads_begin) + list(spec.pads_end), "group": spec.groups}


ONNX_CONV_ATTRS = ("kernel_shape", "strides", "dilations", "pads", "group", "auto_pad")
ONNX_FORM_KEYS = ("op_type", "opset", "input_shape", "weights_shape", "attributes", "layout")


def from_onnx(attrs: Any, x_shape: Any, w_shape: Any) -> ConvSpec:       # Any: parsed JSON, checked here
    """An ONNX Conv node (explicit or auto pads) as the spec of the same cross-correlation."""
    require(isinstance(attrs, dict), "attributes", attrs, "must be an object")
    unknown = [a for a in attrs if a not in ONNX_CONV_ATTRS]
    require(not unknown, f"attributes.{short_key(unknown[0]) if unknown else ''}", None,
            f"is not a Conv attribute this form reads ({list(ONNX_CONV_ATTRS)})")
    x_shape = int_list(x_shape, "input_shape")
    require(3 <= len(x_shape) <= 5, "input_shape", x_shape, "must be 3- to 5-D NCX (1 to 3 spatial axes)")
    n = len(x_shape) - 2
    w_shape = int_list(w_shape, "weights_shape", length=n + 2)
    g = integer(attrs.get("group", 1), "group", 1)
    require(x_shape[1] == w_shape[1] * g, "weights_shape", list(w_shape), f"needs W[1] = C/group = {x_shape[1]}/{g}")
    k = tuple(int_list(attrs.get("kernel_shape", w_shape[2:]), "kernel_shape", length=n))
    require(k == tuple(w_shape[2:]), "kernel_shape", list(k), f"must equal W's spatial shape {list(w_shape[2:])}")
    s = tuple(int_list(attrs.get("strides", [1] * n), "strides", length=n))
    d = tuple(int_list(attrs.get("dilations", [1] * n), "dilations", length=n))
    pads = int_list(attrs.get("pads", [0] * 2 * n), "pads", 0, length=2 * n)
    pb, pe = tuple(pads[:n]), tuple(pads[n:])
    mode = one_of(attrs.get("auto_pad", "NOTSET"), ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"), "auto_pad")
    if mode != "NOTSET":
        pb, pe = zip(*(auto_pads(mode, *a) for a in zip(x_shape[2:], k, s, d)))
    return ConvSpec(x_shape[0], x_shape[1], w_shape[0], tuple(x_shape[2:]), k, s, d, tuple(pb), tuple(pe), g,
                    (0,) * n)


# ---- the JSON forms `dml-desc convert` reads and writes ------------------------------------

def is_deconv(fmt: str, obj: object) -> bool:
    """True when `obj` in format `fmt` describes ConvTransposeBackwardData (not a resize)."""
    if not isinstance(obj, dict):
        return False
    if fmt == "onednn":
        ops = obj.get("graph", [obj])
        return isinstance(ops, list) and len(ops) == 1 and isinstance(ops[0], dict) and \
            ops[0].get("kind") == "ConvTransposeBackwardData"
    if fmt == "dml":
        return obj.get("Operator") == DML_CONVOLUTION_OPERATOR_DESC.OPERATOR
    return fmt == "onnx" and obj.get("op_type") == "Conv"


FORMATS = ("onednn", "dml", "onnx")


class OnednnDeconvConvention:
    """ConvTransposeBackwardData as a oneDNN Graph document: `read` gives a Reading (a ConvSpec, backward) whose
    layout keeps data_format / weights_format / dtype; `write` gives a Writing in that layout."""
    name = "onednn"

    def read(self, obj: object) -> Reading:
        """The document's ConvSpec and layout."""
        return _read_onednn(obj)

    def write(self, spec: ConvSpec, backward: bool = True, layout: object = None, data_format: str | None = None
              ) -> Writing:
        """The document of `spec` in `layout` (deconv has a gradient form only: `backward` is ignored);
        data_format overrides the layout's."""
        checked = _checked_layout(spec, layout)
        return Writing(to_onednn(spec, data_format or checked.get("data_format", "NCX"),
                                 checked.get("weights_format", "IOX"), checked.get("dtype", "f32")))


class DmlDeconvConvention:
    """ConvTransposeBackwardData as a DML FORWARD CROSS_CORRELATION convolution descriptor (dmljson's form)."""
    name = "dml"

    def read(self, obj: Any) -> Reading:          # Any: parsed JSON, checked by dmljson
        """The descriptor's ConvSpec; layout: its dtype."""
        return _read_dml(obj)

    def write(self, spec: ConvSpec, backward: bool = True, layout: object = None) -> Writing:
        """The descriptor of `spec` in the layout's dtype (`backward` is ignored)."""
        from .. import dmljson
        checked = _checked_layout(spec, layout)
        return Writing(dmljson.to_json(to_dml(spec, checked.get("dtype", "f32"))))


class OnnxDeconvConvention:
    """ConvTransposeBackwardData as an ONNX Conv node (NCX data, (IC, OC/groups, K...) weights)."""
    name = "onnx"

    def read(self, obj: Any) -> Reading:          # Any: parsed JSON, checked here
        """The Conv node's ConvSpec."""
        return Reading(_read_onnx(obj), True)

    def write(self, spec: ConvSpec, backward: bool = True, layout: object = None) -> Writing:
        """The Conv node of `spec` at DEFAULT_OPSET (`backward` and the layout are ignored: the form is NCX)."""
        _checked_layout(spec, layout)
        return Writing({"op_type": "Conv", "opset": DEFAULT_OPSET, "input_shape": list(spec.diff_dst_shape),
                        "weights_shape": list(spec.weights_shape), "attributes": to_onnx_attrs(spec),
                        "layout": "NCX data, (IC, OC/groups, K...) weights: transpose NXC / XOI inputs first"})


def _checked_layout(spec: object, layout: Any) -> dict[str, Any]:    # Any: a Reading's layout, checked here
    """The layout dict of a deconv Reading ({} for None), `spec` checked to be a ConvSpec."""
    require(isinstance(spec, ConvSpec), "spec", type(spec).__name__, "must be a ConvSpec (a deconv Reading's)")
    checked: dict[str, Any] = {} if layout is None else layout
    require(isinstance(checked, dict), "layout", checked, "must be the layout dict of a deconv Reading")
    return checked


# one convention object per format (the registry's ("deconv", fmt) entries)
CONVENTIONS: dict[str, Convention] = {c.name: c for c in (OnednnDeconvConvention(), DmlDeconvConvention(),
                                                          OnnxDeconvConvention())}


def _read_dml(obj: Any) -> Reading:                # Any: parsed JSON, checked by dmljson
    from .. import dmljson
    desc = dmljson.from_json(obj)
    if not isinstance(desc, DML_CONVOLUTION_OPERATOR_DESC):
        raise DescError("Operator", desc.OPERATOR,
                        f"must be {DML_CONVOLUTION_OPERATOR_DESC.OPERATOR} for ConvTransposeBackwardData")
    dtype = "f16" if desc.input_tensor.data_type is DML_TENSOR_DATA_TYPE.FLOAT16 else "f32"
    return Reading(from_dml(desc), True, (), {"dtype": dtype})


def _read_onnx(obj: Any) -> ConvSpec:              # Any: parsed JSON, checked here
    require(isinstance(obj, dict), "onnx", obj, "must be a JSON object")
    unknown = [key for key in obj if key not in ONNX_FORM_KEYS]
    require(not unknown, short_key(unknown[0]) if unknown else "", None, f"unknown key; the onnx Conv form has "
            f"{list(ONNX_FORM_KEYS)}")
    require(obj.get("op_type", "Conv") == "Conv", "op_type", obj.get("op_type"), "must be Conv")
    opset = obj.get("opset", DEFAULT_OPSET)
    require(isinstance(opset, int) and not isinstance(opset, bool) and 1 <= opset <= 23, "opset", opset,
            "must be an ai.onnx opset from 1 to 23")
    for key in ("input_shape", "weights_shape"):
        require(isinstance(obj.get(key), list), key, obj.get(key), "is required (NCX diff_dst / Conv weights)")
    return from_onnx(obj.get("attributes", {}), obj["input_shape"], obj["weights_shape"])


def read(fmt: str, obj: object) -> Reading:
    """ConvTransposeBackwardData read from format `fmt` (the registry's deconv convention for it)."""
    convention = _convention(fmt)
    check_numbers(obj)
    return convention.read(obj)


def write(fmt: str, reading: Reading, **options: Any) -> Writing:
    """`reading` (a deconv Reading) written in format `fmt`, keeping its layout; options: data_format (onednn)."""
    require(isinstance(reading, Reading), "reading", type(reading).__name__, "must be a Reading (deconv.read's)")
    if fmt not in FORMATS:
        refuse("to", fmt, "ConvTransposeBackwardData has no torch or tf form here (use onednn, dml or onnx)")
    return CONVENTIONS[fmt].write(reading.canonical, layout=reading.layout, **options)


def _convention(fmt: str) -> Convention:
    require(fmt in FORMATS, "format", fmt, f"ConvTransposeBackwardData converts between {list(FORMATS)}")
    return CONVENTIONS[fmt]
