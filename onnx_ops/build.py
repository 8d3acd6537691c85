"""Build single-node Resize / ResizeGrad models, wired as onnxruntime's gradient builder wires them."""
from __future__ import annotations

import numpy as np
import onnx
from numpy.typing import DTypeLike
from onnx import TensorProto, helper, numpy_helper

from dml_desc.canonical import Resampling
from dml_desc.conventions import check_tolerance, onnx as onnx_conv
from dml_desc.errors import ConversionError, flag, require

from .model import IR_VERSION, LOWERING_OPSET, OPSET, grad_graph, stamped  # noqa: F401 (IR_VERSION: exported)
from .lowering.emit import emit_gradient, name_after, node_prefix

ONNX_ELEM_OF_NUMPY = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
          np.dtype(np.float64): TensorProto.DOUBLE}


def as_onnx_resize(spec: onnx_conv.OnnxResize | Resampling, backward: bool = True,
                   semantics: str | None = None, tolerance: float = 0.0) -> onnx_conv.OnnxResize:
    """Accept an OnnxResize or any canonical Resampling (converted exactly under `semantics`, or within
    `tolerance` when one is given, or refused)."""
    return _spelled(spec, backward, semantics, tolerance)[0]


def _spelled(spec, backward: bool, semantics: str | None, tolerance: float = 0.0, closest: bool = True) -> tuple:
    """(OnnxResize, notes) for an OnnxResize or a Resampling; `closest` False: a refusal skips naming the closest
    spelling (for callers that only ask whether one exists)."""
    tolerance = check_tolerance(tolerance)
    if isinstance(spec, onnx_conv.OnnxResize):
        onnx_conv.to_canonical(spec, semantics or onnx_conv.STAND_IN_SEMANTICS)            # validates
        return spec, ()
    require(isinstance(spec, Resampling), "spec", type(spec).__name__, "must be an OnnxResize or a Resampling")
    return onnx_conv.from_canonical(spec, opset=OPSET, op_type="ResizeGrad" if backward else "Resize",
                                    semantics=semantics, tolerance=tolerance, closest=closest)


GRAD_NODE = "ResizeGrad_0"               # the gradient node's name (its lowering's nodes are named after it)
TOLERANCE_KEY = "dml_desc.tolerance"     # metadata_props entry of a model built within --tolerance


def _record(model: onnx.ModelProto, notes) -> onnx.ModelProto:
    """Write a tolerance note into the model's metadata_props (the bound travels with the file)."""
    for note in notes:
        if "--tolerance" in note:
            onnx.helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props},
                                                TOLERANCE_KEY: note})
    return model


def build_gradient(res: Resampling, dtype: DTypeLike = np.float32, lowered: bool = False,
                   semantics: str | None = None, tolerance: float = 0.0) -> tuple[onnx.ModelProto, tuple]:
    """(gradient model, notes) for any canonical map. ResizeGrad needs an ONNX spelling: exact, or within
    `tolerance` (recorded in a note and in metadata_props under TOLERANCE_KEY), else refused with the closest
    spelling and its weight difference. `lowered` builds from the exact spelling when there is one, else
    straight from the canonical map (build_lowered), with a note: a standard-op model needs no spelling."""
    require(isinstance(res, Resampling), "res", type(res).__name__, "must be a Resampling")
    lowered = flag(lowered, "lowered")
    tolerance = check_tolerance(tolerance)           # also where --lowered leaves it unused
    if not lowered:
        node, notes = _spelled(res, True, semantics, tolerance)
        return _record(build_resize_grad(node, dtype, semantics=semantics), notes), tuple(notes)
    try:
        node, notes = _spelled(res, True, semantics, closest=False)      # only whether a spelling exists
    except ConversionError as e:
        note = (f"no ONNX Resize spelling states this map exactly (a candidate differs in {e.field}); the lowered "
                "model is built straight from the canonical map")
        return build_lowered(res, dtype), (note,)
    return build_resize_grad(node, dtype, lowered=True, semantics=semantics), tuple(notes)


def element_type(dtype) -> int:
    """The ONNX element type of a gradient's `dtype` (float16, float32 or float64; else the project's error)."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    require(dt in ONNX_ELEM_OF_NUMPY, "dtype", str(dt if dt is not None else dtype),
            "ResizeGrad takes float16, float32 or float64")
    return ONNX_ELEM_OF_NUMPY[dt]


def _consts(r: onnx_conv.OnnxResize, dtype) -> tuple[list, list]:
    """roi (T) and scales (float) as initializers or empty names, as ORT's builder does."""
    inits, names = [], []
    for name, values, dt in (("roi", r.roi, dtype), ("scales", r.scales, np.float32)):
        if values is None or len(values) == 0:
            names.append("")
            continue
        inits.append(numpy_helper.from_array(np.asarray(values, dt), name))
        names.append(name)
    return inits, names


def build_resize_grad(spec: onnx_conv.OnnxResize | Resampling, dtype: DTypeLike = np.float32, lowered: bool = False,
                      semantics: str | None = None) -> onnx.ModelProto:
    """dX = ResizeGrad(dY, X, roi, scales) with graph inputs dY, X and output dX. `semantics`
    (dml_desc.conventions.onnx.SEMANTICS) spells a Resampling and decides the nearest tie rule of `lowered`:
    required for those (None is refused by name), unused for an OnnxResize built as is. `lowered` gives
    build_lowered's model of the node's map: the one lowered model, whichever way it is asked for."""
    flag(lowered, "lowered")
    r = as_onnx_resize(spec, backward=True, semantics=semantics)
    if lowered:
        return build_lowered(onnx_conv.to_canonical(r, onnx_conv.check_semantics(semantics)), dtype)
    res = onnx_conv.to_canonical(r, semantics or onnx_conv.STAND_IN_SEMANTICS)     # shapes
    elem = element_type(dtype)
    inits, (roi, scales) = _consts(r, dtype)
    node = helper.make_node("ResizeGrad", ["dY", "X", roi, scales], ["dX"], domain="com.microsoft",
                            name=GRAD_NODE, **r.attributes)
    model = stamped(grad_graph([node], "resize_grad", res, elem, inits), True)
    onnx.checker.check_model(model)
    return model


def build_resize(spec: onnx_conv.OnnxResize | Resampling, dtype: DTypeLike = np.float32,
                 tolerance: float = 0.0, semantics: str | None = None) -> onnx.ModelProto:
    """Y = Resize(X, roi, scales[, sizes]): the forward that ResizeGrad differentiates. A Resampling needs an
    exact spelling, or one within `tolerance` (recorded in metadata_props under TOLERANCE_KEY)."""
    r, notes = _spelled(spec, False, semantics, tolerance)
    res = onnx_conv.to_canonical(r, semantics or onnx_conv.STAND_IN_SEMANTICS)     # shapes
    elem = element_type(dtype)
    inits, (roi, scales) = _consts(r, dtype)
    inputs = ["X", roi, scales]
    if r.sizes is not None:
        inits.append(numpy_helper.from_array(np.asarray(r.sizes, np.int64), "sizes"))
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["Y"], name="Resize_0", **r.attributes)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", elem, list(res.in_shape))],
                              [helper.make_tensor_value_info("Y", elem, list(res.out_shape))], inits)
    model = _record(stamped(graph, False), notes)
    onnx.checker.check_model(model)
    return model


def build_lowered(res: Resampling, dtype: DTypeLike = np.float32) -> onnx.ModelProto:
    """The standard-op gradient straight from a canonical map (no ONNX Resize spelling needed), emitted by
    lowering.emit.emit_gradient and named as `lower` names the lowering of build_resize_grad's node: the model
    `build --lowered`, `dml-desc run` and the conformance suite's onnxruntime checks all run."""
    elem = element_type(dtype)
    node = helper.make_node("ResizeGrad", ["dY", "X"], ["dX"], domain="com.microsoft", name=GRAD_NODE)
    base, prefix = node_prefix(node, 0, {"dY", "X", "dX"})
    nodes, inits, _ = emit_gradient(node, res, elem, prefix, LOWERING_OPSET)
    name_after(nodes, base)
    model = stamped(grad_graph(nodes, "resize_grad_lowered", res, elem, inits), False)
    onnx.checker.check_model(model)
    return model
