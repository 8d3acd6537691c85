"""Rewrite com.microsoft ResizeGrad nodes into standard ai.onnx ops.

Each node becomes the fastest spelling that the shared gradient taps (dml_desc.weights) prove
equal to it (onnx_ops.forms, onnx_ops.bridge): for integer factors the kron form (one small
block-diagonal MatMul on the last axis, ReduceSum / Gather on the others) or else a depthwise Conv
or ConvTranspose, one onnxruntime Resize where the gradient is another Resize, otherwise per-axis
Gather + Mul + ReduceSum (a tiny dense MatMul only for axes of at most 16 columns). Cost is
linear in the tensor size and the sums run in a fixed order, so results are deterministic.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError, require
from dml_desc.weights import gradient_taps

from .build import save_atomic
from .bridge import combined, deconv_form, emit_conv, emit_spread, spread_form
from .forms import Emitter, block_factors, emit_axis, emit_block, emit_kron, emit_resize, find_resize, kron_form

NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float32, TensorProto.DOUBLE: np.float64}


@dataclass
class Rewrite:
    node: str
    mode: str
    axes: tuple
    forms: tuple
    kept_native: bool = False

    def __str__(self):
        how = "kept native (CUDA)" if self.kept_native else ", ".join(f"axis {a}: {f}" for a, f in
                                                                       zip(self.axes, self.forms))
        return f"{self.node}: {self.mode}; {how}"


def is_resize_grad(node) -> bool:
    return node.op_type == "ResizeGrad" and node.domain == "com.microsoft"


def lower(model: onnx.ModelProto, providers=("CPUExecutionProvider",)) -> tuple[onnx.ModelProto, list]:
    """A copy of `model` with every ResizeGrad node lowered (or kept where native CUDA fits)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    _refuse_nested(out.graph)
    if not any(is_resize_grad(n) for n in out.graph.node):
        return out, []
    if not any(o.domain in ("", "ai.onnx") for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("", 19))     # the standard ops need an ai.onnx import
    info = _GraphInfo(out)
    taken = _names(out.graph)
    nodes, report = [], []
    for k, node in enumerate(out.graph.node):
        if not is_resize_grad(node):
            nodes.append(node)
            continue
        r, res, elem = info.read(node)
        if "CUDAExecutionProvider" in providers and native_cuda_fits(r, res):
            nodes.append(node)
            report.append(Rewrite(node.name, res.mode.value, res.resized_axes, (), kept_native=True))
            continue
        new, inits, forms = _emit(node, res, elem, _fresh(f"{node.name or 'ResizeGrad'}_{k}", taken), info.opset)
        nodes.extend(new)
        out.graph.initializer.extend(inits)
        report.append(Rewrite(node.name, res.mode.value, res.resized_axes, forms))
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, report


def _names(graph) -> set:
    names = {t.name for t in graph.initializer} | {v.name for v in list(graph.input) + list(graph.output)}
    return names | {o for n in graph.node for o in n.output} | {i for n in graph.node for i in n.input}


def _fresh(prefix: str, taken: set) -> str:
    """A prefix no existing name starts with, so generated tensor names cannot collide."""
    candidate, k = prefix, 0
    while any(name.startswith(candidate + "_") for name in taken):
        k += 1
        candidate = f"{prefix}_{k}"
    taken.add(candidate + "_")
    return candidate


def _refuse_nested(graph) -> None:
    """ResizeGrad inside a subgraph (If / Loop / Scan bodies) is not lowered: say so instead of skipping it."""
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                hit = next((n for n in sub.node if is_resize_grad(n)), None)
                require(hit is None, f"node {node.name or node.op_type}.{attr.name}", hit.name if hit else None,
                        "holds a ResizeGrad in a subgraph; lowering rewrites the main graph only")
                _refuse_nested(sub)


def native_cuda_fits(r: onnx_conv.OnnxResize, res) -> bool:
    """onnxruntime's CUDA ResizeGrad: linear, 4-D, half_pixel or align_corners, no antialias or axes."""
    ctm = r.attr("coordinate_transformation_mode", "half_pixel")
    return (res.mode.value == "linear" and len(res.axes) == 4 and ctm in ("half_pixel", "align_corners")
            and not r.attr("antialias", 0) and r.attr("axes") is None
            and r.attr("keep_aspect_ratio_policy", "stretch") == "stretch" and set(res.resized_axes) <= {2, 3})


class _GraphInfo:
    """Static shapes, element types and constant inputs of a model."""

    def __init__(self, model: onnx.ModelProto):
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 19)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        g = inferred.graph
        self.types = {v.name: v.type.tensor_type for v in list(g.input) + list(g.value_info) + list(g.output)}
        self.consts = {t.name: t for t in model.graph.initializer}
        for n in model.graph.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                value = next((a.t for a in n.attribute if a.name == "value"), None)
                if value is not None:
                    self.consts[n.output[0]] = value

    def shape(self, node, index: int, role: str, static: bool = True) -> list:
        name = node.input[index] if len(node.input) > index else ""
        where = f"node {node.name or node.op_type}.{role}"
        require(bool(name) and name in self.types, where, name, "needs a known type and shape (run shape inference)")
        dims = self.types[name].shape.dim
        shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
        require(not static or all(isinstance(d, int) for d in shape), where, shape,
                "has symbolic dims; lowering needs static shapes (fix the dims, e.g. with "
                "onnxruntime.tools.make_dynamic_shape_fixed)")
        return shape

    def const(self, node, index: int, role: str):
        name = node.input[index] if len(node.input) > index else ""
        if not name:
            return None
        require(name in self.consts, f"node {node.name or node.op_type}.{role}", name,
                "must be a constant (initializer or Constant node) to be lowered")
        values = numpy_helper.to_array(self.consts[name]).ravel().tolist()
        return values or None

    def read(self, node):
        where = node.name or node.op_type
        require(len(node.input) >= 2, f"node {where}.inputs", list(node.input), "ResizeGrad needs dY and X")
        x = self.shape(node, 1, "X")
        roi, scales = self.const(node, 2, "roi"), self.const(node, 3, "scales")
        dy = self.shape(node, 0, "dY", static=not scales)      # with scales, X alone fixes the shapes
        require(len(dy) == len(x), f"node {where}.dY", dy, f"rank must equal X's rank {len(x)}")
        attrs = {a.name: _attr(a) for a in node.attribute}
        axes = attrs.get("axes")
        require(bool(scales) or attrs.get("keep_aspect_ratio_policy", "stretch") == "stretch",
                f"node {where}.keep_aspect_ratio_policy", attrs.get("keep_aspect_ratio_policy"),
                "needs the scales input: without it the scale comes from the shapes of X and dY, "
                "which cannot recover the forward's single aspect-preserving scale")
        sizes = None if scales else ([dy[a] for a in axes] if axes else dy)
        r = onnx_conv.OnnxResize(x, attrs, roi, scales, sizes, opset=max(self.opset, 10), op_type="ResizeGrad")
        try:
            res = onnx_conv.to_canonical(r)
        except DescError as e:
            raise DescError(f"node {where}.{e.field}", e.value, e.rule) from None
        require(all(not isinstance(d, int) or d == o for d, o in zip(dy, res.out_shape)), f"node {where}.dY", dy,
                f"must have the forward output shape {list(res.out_shape)}")
        elem = self.types[node.input[1]].elem_type
        require(elem in NP_OF, f"node {where}.X", TensorProto.DataType.Name(elem),
                "ResizeGrad takes float16, float or double")
        return r, res, elem


def _attr(a):
    v = helper.get_attribute_value(a)
    return v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, (list, tuple)) else v)


def _emit(node, res, elem: int, prefix: str, opset: int = 19):
    """Nodes and initializers computing dX from dY: the fastest form the taps prove equal."""
    em = Emitter(prefix, opset, NP_OF[elem])
    cur = node.input[0]
    if elem == TensorProto.FLOAT16:
        cur = em.node("Cast", [cur], "f32", to=TensorProto.FLOAT)
    cur, forms = _contract(em, cur, res)
    if elem == TensorProto.FLOAT16:
        em.nodes.append(helper.make_node("Cast", [cur], [node.output[0]], to=TensorProto.FLOAT16))
    else:                     # the last node writes dX itself: no trailing copy
        em.rename(cur, node.output[0])
    return em.nodes, em.inits, forms


def _contract(em: Emitter, cur: str, res):
    kron = kron_form(res)
    if kron is not None:     # measured faster than the Conv / ConvTranspose forms (README, benchmark)
        return emit_kron(em, cur, res, kron), kron.names(len(res.axes))
    f32 = em.acc is np.float32             # onnxruntime's CPU Conv, ConvTranspose and Resize are float32 here
    blocks = block_factors(res)
    parts = deconv_form(res) if f32 and blocks else None
    single = combined(res, parts) if parts else None
    if single:         # measured faster than Reshape + ReduceSum on onnxruntime CPU (README, benchmark)
        return emit_conv(em, cur, *single), ("deconv(ones)",) * len(parts)
    spread = spread_form(res) if f32 else None
    if spread is not None:   # integer downsampling: measured faster than a nearest Resize (README)
        return emit_spread(em, cur, res, spread), ("conv_transpose",) * len(res.resized_axes)
    if blocks:
        return emit_block(em, cur, res, blocks), ("block-sum",) * len(blocks)
    found = find_resize(res, em.opset) if f32 else None
    if found:
        cand, spelling = found
        form = f"Resize({cand.mode.value}{', antialias' if cand.antialias else ''})"
        return emit_resize(em, cur, res, spelling), (form,) * len(res.resized_axes)
    forms = []
    for axis in res.resized_axes:
        cur, form = emit_axis(em, cur, gradient_taps(res.axes[axis], res), axis, len(res.axes))
        forms.append(form)
    return cur, tuple(forms)


def lower_file(src: str, dst: str, providers=("CPUExecutionProvider",)) -> list:
    """Lower a model file; `dst` may equal `src`. Written atomically; external data is kept."""
    model = onnx.load(src, load_external_data=False)
    lowered, report = lower(model, providers)
    src_dir, dst_dir = os.path.dirname(os.path.abspath(src)), os.path.dirname(os.path.abspath(dst))
    has_external = any(t.data_location == TensorProto.EXTERNAL for t in lowered.graph.initializer)
    if has_external and src_dir != dst_dir:
        onnx.external_data_helper.load_external_data_for_model(lowered, src_dir)
        locations = {t.name: _location(t) for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}
        onnx.external_data_helper.convert_model_to_external_data(lowered, all_tensors_to_one_file=True,
                                                                 location=sorted(set(locations.values()))[0])
    save_atomic(lowered, dst)
    return report


def _location(tensor) -> str:
    return next(e.value for e in tensor.external_data if e.key == "location")
