"""Rewrite com.microsoft ResizeGrad nodes into standard ai.onnx ops.

Each node becomes the spelling that a small cost model estimates fastest among those the shared
gradient taps (dml_desc.weights) prove equal to it (onnx_ops.forms, onnx_ops.bridge): per-axis
band / dense MatMuls (tiles of X reading windows of dY; the general form), the kron form for
integer factors, a depthwise Conv or ConvTranspose, one onnxruntime Resize where the gradient is
another Resize, or per-axis Gather + Mul + ReduceSum. The sums run in a fixed order, so results
are deterministic.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml_desc.canonical import AxisMap
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError, did_you_mean, is_number, require

from .model import graphs
from .validate import check_resize_grad, check_text, readable, save_atomic
from .bridge import combined, deconv_form, emit_conv, emit_spread, spread_form
from .dynamic import DynamicPlan, emit_dynamic
from .calibrate import choices as calibrated_choices, signature as calibration_signature
from .generic_forms import emit_generic_node, generic_form
from .forms import (Emitter, block_factors, emit_block, emit_kron, emit_plan, emit_pool, emit_resize, find_resize,
                    conv_cost, is_symbolic, kron_cost, kron_form, plan_axes, pool_form, resize_cost,
                    symbolic_dim)

PREFER_RESIZE = 2.0   # one node, no intermediates, the reference's non-finite pattern: kept unless 2x dearer

RUN_TIME_SEMANTICS = "onnxruntime at run time"
NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float32, TensorProto.DOUBLE: np.float64}


@dataclass
class Rewrite:
    """What `lower` did to one ResizeGrad node: its name, mode, resized axes and the form chosen per axis
    (or kept_native for CUDA). str() gives the one-line report `dml-desc lower` prints.
    """
    node: str
    mode: str
    axes: tuple
    forms: tuple
    kept_native: bool = False
    scope: str = ""          # "" for the main graph, else the subgraph attribute or function path
    dynamic: bool = False    # taps computed at run time (onnx_ops.dynamic)
    semantics: str = ""      # the ONNX semantics the taps follow (dml_desc.conventions.onnx.SEMANTICS)
    notes: tuple = ()        # where the taps follow onnxruntime rather than the ONNX formulas (docs/adjoint.md)
    signature: str = ""      # a shape-generic node's calibration key (onnx_ops.calibrate.signature)
    candidates: tuple = ()   # the forms `dml-desc calibrate` measures for it (generic kinds and "general")

    def __str__(self):
        how = "kept native (CUDA)" if self.kept_native else ", ".join(f"axis {a}: {f}" for a, f in
                                                                       zip(self.axes, self.forms))
        return f"{self.scope}{self.node}: {self.mode}; {how}" + (f" [{'; '.join(self.notes)}]" if self.notes else "")


class Lowered(NamedTuple):
    """What `lower` returns: the rewritten model and one `Rewrite` per ResizeGrad node.
    Unpacks like a pair (`model, rewrites = lower(m)`); `.save(path)` writes the model atomically."""
    model: onnx.ModelProto
    rewrites: list

    def save(self, path: str) -> None:
        """Write the model to `path` (through a temporary file in the same folder)."""
        save_atomic(self.model, path)


KNOWN_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider",
                   "ROCMExecutionProvider", "MIGraphXExecutionProvider", "DmlExecutionProvider",
                   "OpenVINOExecutionProvider", "CoreMLExecutionProvider", "QNNExecutionProvider",
                   "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider",
                   "AzureExecutionProvider", "NnapiExecutionProvider", "ACLExecutionProvider",
                   "ArmNNExecutionProvider", "VitisAIExecutionProvider", "JsExecutionProvider")


def check_providers(providers) -> tuple:
    """The execution providers a lowering targets: a list or tuple of known onnxruntime provider names (a bare
    string is refused: it is not a list of names)."""
    require(isinstance(providers, (list, tuple)) and len(providers) > 0, "providers", providers,
            "must be a non-empty list of onnxruntime execution provider names, e.g. ['CPUExecutionProvider']")
    for name in providers:
        require(isinstance(name, str) and name in KNOWN_PROVIDERS, "providers", name,
                f"is not an onnxruntime execution provider{did_you_mean(name, KNOWN_PROVIDERS)}")
    return tuple(providers)


def is_resize_grad(node: onnx.NodeProto) -> bool:
    """True for a com.microsoft ResizeGrad node (the node `lower` rewrites)."""
    return node.op_type == "ResizeGrad" and node.domain == "com.microsoft"


def lower(model: onnx.ModelProto, providers: Sequence[str] = ("CPUExecutionProvider",),
          semantics: str | None = None, calibration=None, machine: str | None = None) -> Lowered:
    """A copy of `model` with every ResizeGrad node lowered (or kept where native CUDA fits): in the main
    graph, in If / Loop / Scan bodies and in model-local functions. The report lists every one.
    `calibration` (a cache path from `dml-desc calibrate`, or {signature: form}) lets measured choices replace the
    rule for shape-generic nodes, read for `machine` (default: this CPU and onnxruntime; onnx_ops.calibrate)."""
    require(isinstance(model, onnx.ModelProto), "model", type(model).__name__, "must be an onnx.ModelProto")
    providers = check_providers(providers)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if not _holds_resize_grad(out):
        return Lowered(out, [])
    if not any(o.domain in ("", "ai.onnx") for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("", 19))     # the standard ops need an ai.onnx import
    check_text(out)
    info = readable("model", _GraphInfo, out)      # a corrupt model is a DescError, not onnx's own exception
    info.semantics = onnx_conv.check_semantics(semantics)   # required: never the installed onnxruntime's
    info.choices = calibrated_choices(calibration, machine)   # {} by default: the output depends on the model alone
    report = []
    _lower_graph(out.graph, info, providers, report, "")
    for function in out.functions:
        _lower_function(function, out, info, providers, report)
    for rewrite in report:      # the dynamic path runs the executing onnxruntime's own Resize: its tie rule
        rewrite.semantics = RUN_TIME_SEMANTICS if rewrite.dynamic else info.semantics
    return Lowered(out, report)


def _holds_resize_grad(model: onnx.ModelProto) -> bool:
    return any(is_resize_grad(n) for g in graphs(model.graph) for n in g.node) or \
        any(is_resize_grad(n) for f in model.functions for n in f.node)


def _lower_graph(graph, info, providers, report: list, scope: str) -> None:
    """Lower the ResizeGrad nodes of one graph (and of its subgraphs) in place."""
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _lower_graph(sub, info, providers, report, f"{scope}{node.name or node.op_type}.{attr.name}/")
    _rewrite_nodes(graph.node, info, providers, report, scope, lambda node, k, inits: graph.initializer.extend(inits))


def _lower_function(function, model, info, providers, report: list) -> None:
    """A model-local function's ResizeGrad nodes, lowered in its body (constants as Constant nodes)."""
    if not any(is_resize_grad(n) for n in function.node):
        return
    scope = f"function {function.domain}:{function.name}/" if function.domain else f"function {function.name}/"
    local = info.for_function(function, model)
    if not any(o.domain in ("", "ai.onnx") for o in function.opset_import):
        function.opset_import.append(helper.make_opsetid("", local.opset))

    def as_constants(node, k, inits):      # functions hold no initializers: Constant nodes
        base = node.name or f"ResizeGrad_{k}"
        return [helper.make_node("Constant", [], [t.name], value=t, name=f"{base}/lowered/Constant_{j}")
                for j, t in enumerate(inits)]
    _rewrite_nodes(function.node, local, providers, report, scope, as_constants)


def _rewrite_nodes(nodes, info, providers, report: list, scope: str, place_constants) -> None:
    """Replace each ResizeGrad in the repeated field `nodes` by its lowering, in place and in order.
    `place_constants(node, k, inits)` stores the initializers and returns nodes to put before the lowering."""
    out = []
    for k, node in enumerate(nodes):
        if not is_resize_grad(node):
            out.append(node)
            continue
        new, inits, rewrite = _lower_node(node, k, info, providers, scope)
        out.extend(place_constants(node, k, inits) or [])
        out.extend(new)
        report.append(rewrite)
    del nodes[:]
    nodes.extend(out)


def _lower_node(node, k: int, info, providers, scope: str):
    """(nodes, initializers, Rewrite) replacing one ResizeGrad; every new node is named after it."""
    base = node.name or f"ResizeGrad_{k}"
    prefix = _fresh(f"{base}_{k}" if node.name else base, info.taken)
    try:
        check_resize_grad(node, info.types, info.opset, info.consts)    # arity, types, outputs (onnx_ops.validate)
        read = readable(f"node {node.name or node.op_type}", info.read, node)
    except DescError as e:            # name where the node is: a subgraph or a function
        raise DescError(f"{scope}{e.field}", e.value, e.rule) from None
    if isinstance(read, DynamicRead):
        require(info.semantics != "onnx-spec" or read.plan.attrs.get("mode", "nearest") != "nearest",
                f"{scope}node {node.name or node.op_type}.semantics", info.semantics,
                "cannot be followed with shapes or scales known only at run time: the dynamic path uses the "
                "executing onnxruntime's Resize and so its nearest tie rule")
        generic, kinds, sig = _generic(node, read, info)     # constant integer scales: one graph for every length
        kind = info.choices.get(sig)
        if generic is not None and kind != "general":
            new, inits, forms = emit_generic_node(node, generic, read.elem, prefix, info.opset,
                                                  kind if kind in kinds else None)
        else:
            new, inits = _emit_dynamic(node, read.plan, read.elem, prefix, info.opset)
            forms = ("dynamic: Resize(identity) + MatMul",) * len(read.plan.axes)
        rewrite = Rewrite(node.name, read.plan.attrs.get("mode", "nearest"), tuple(a for a, _ in read.plan.axes),
                          forms, scope=scope, dynamic=True, signature=sig, candidates=kinds + ("general",) * bool(sig))
    else:
        r, res, elem = read
        if "CUDAExecutionProvider" in providers and native_cuda_fits(r, res):
            return [node], [], Rewrite(node.name, res.mode.value, res.resized_axes, (), kept_native=True,
                                       scope=scope)
        new, inits, forms = _emit(node, res, elem, prefix, info.opset)
        rewrite = Rewrite(node.name, res.mode.value, res.resized_axes, forms, scope=scope, notes=tuple(res.notes))
    for i, n in enumerate(new):
        n.name = n.name or f"{base}/lowered/{n.op_type}_{i}"
    return new, inits, rewrite


def _names(graph) -> set:
    names = {t.name for t in graph.initializer} | {v.name for v in list(graph.input) + list(graph.output)}
    return names | {o for n in graph.node for o in n.output} | {i for n in graph.node for i in n.input}


def _model_names(model: onnx.ModelProto) -> set:
    names = set().union(*(_names(g) for g in graphs(model.graph)))
    for f in model.functions:
        names |= set(f.input) | set(f.output) | {o for n in f.node for o in list(n.output) + list(n.input)}
    return names


def _fresh(prefix: str, taken: set) -> str:
    """A prefix no existing name starts with, so generated tensor names cannot collide."""
    candidate, k = prefix, 0
    while any(name.startswith(candidate + "_") for name in taken):
        k += 1
        candidate = f"{prefix}_{k}"
    taken.add(candidate + "_")
    return candidate


def native_cuda_fits(r: onnx_conv.OnnxResize, res) -> bool:
    """onnxruntime's CUDA ResizeGrad: linear, 4-D, half_pixel or align_corners, no antialias or axes."""
    ctm = r.attr("coordinate_transformation_mode", "half_pixel")
    return (res.mode.value == "linear" and len(res.axes) == 4 and ctm in ("half_pixel", "align_corners")
            and not r.attr("antialias", 0) and r.attr("axes") is None
            and r.attr("keep_aspect_ratio_policy", "stretch") == "stretch" and set(res.resized_axes) <= {2, 3}
            and not any(is_symbolic(n) for n in res.in_shape + res.out_shape))


def _generic(node, read, info):
    """(form, its spellings, calibration signature) of a dynamic ResizeGrad's shape-generic form
    (onnx_ops.generic_forms: float / float16 / double, constant scales), or (None, (), "")."""
    if read.elem not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
        return None, (), ""
    dims = info.dims(node.input[1]) or info.dims(node.input[0]) or [None] * read.plan.rank
    form = generic_form(read.plan.attrs, read.plan.axes, info.const(node, 3)[0], dims, info.opset)
    kinds = form.kinds(info.opset, np.float64 if read.elem == TensorProto.DOUBLE else np.float32) if form else ()
    if not kinds:
        return None, (), ""
    factors = {a: f.factor for a, f in form.axes.items()}
    return form, kinds, calibration_signature(read.plan.attrs, factors, form.rank, form.channels, info.opset,
                                              read.elem)


@dataclass
class DynamicRead:
    """A ResizeGrad whose shapes are symbolic: the plan computing its taps at run time, and the element type."""
    plan: DynamicPlan
    elem: int | None


def _constants(nodes) -> dict:
    """Outputs of ai.onnx Constant nodes holding a tensor (value) or a float / int list."""
    out = {}
    for n in nodes:
        if n.op_type != "Constant" or n.domain not in ("", "ai.onnx"):
            continue
        for a in n.attribute:
            if a.name == "value":
                out[n.output[0]] = numpy_helper.to_array(a.t)
            elif a.name in ("value_floats", "value_float"):
                out[n.output[0]] = np.asarray(helper.get_attribute_value(a), np.float32)
            elif a.name in ("value_ints", "value_int"):
                out[n.output[0]] = np.asarray(helper.get_attribute_value(a), np.int64)
    return out


class _GraphInfo:
    """Shapes, element types and constant inputs of a model (or of one function body)."""

    def __init__(self, model: onnx.ModelProto | None = None):
        self.choices = {}    # calibrated {signature: form} (onnx_ops.calibrate); none by default
        self.ranks = {}      # function inputs: the rank every call site gives them
        if model is None:
            return
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 19)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        self.types = {v.name: v.type.tensor_type for g in graphs(inferred.graph)
                      for v in list(g.input) + list(g.value_info) + list(g.output)}
        self.consts = {t.name: numpy_helper.to_array(t) for g in graphs(model.graph) for t in g.initializer
                       if t.data_location != TensorProto.EXTERNAL}
        self.consts.update(_constants(n for g in graphs(model.graph) for n in g.node))
        # an initializer that is also a graph input is a default that a feed replaces: read at run time
        # (before IR 4 every initializer had to be an input, so there it is a constant)
        self.runtime = {v.name for v in model.graph.input} if model.ir_version >= 4 else set()
        self.taken = _model_names(model)

    def for_function(self, function, model) -> "_GraphInfo":
        local = _GraphInfo()
        opsets = {o.domain: o.version for o in function.opset_import}
        local.opset = opsets.get("", opsets.get("ai.onnx", self.opset))
        local.semantics = self.semantics
        local.choices = self.choices
        local.types, local.runtime, local.taken = {}, set(), self.taken
        local.consts = _constants(function.node)
        local.ranks = self._call_ranks(function, model)
        return local

    def _call_ranks(self, function, model) -> dict:
        """{function input: rank} from the shapes at every call site; different ranks are refused."""
        seen = {}
        for g in graphs(model.graph):
            for call in g.node:
                if call.op_type != function.name or call.domain != function.domain:
                    continue
                for formal, actual in zip(function.input, call.input):
                    t = self.types.get(actual)
                    if t is not None and t.HasField("shape"):
                        seen.setdefault(formal, {})[len(t.shape.dim)] = call.name or call.op_type
        for formal, ranks in seen.items():
            require(len(ranks) == 1, f"function {function.name}.{formal}", sorted(ranks),
                    f"is called with inputs of different ranks (by {sorted(ranks.values())}); "
                    "a ResizeGrad in the function is lowered for one rank")
        return {formal: next(iter(ranks)) for formal, ranks in seen.items()}

    def dims(self, name: str):
        """Dims (int, or the dim_param / None when symbolic) of a tensor, or None when its rank is unknown."""
        t = self.types.get(name)
        if t is None or not t.HasField("shape"):
            return [None] * self.ranks[name] if name in self.ranks else None
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]

    def const(self, node, index: int):
        """(values, name): a constant's values, (None, name) when read at run time, (None, "") when absent."""
        name = node.input[index] if len(node.input) > index else ""
        if not name or name in self.runtime or name not in self.consts:
            return None, name
        return self.consts[name].ravel().tolist(), name

    def read(self, node):
        """The static (OnnxResize, Resampling, elem) of a node, or a DynamicRead when something is run time."""
        where = f"node {node.name or node.op_type}"
        require(len(node.input) >= 2 and node.input[0] and node.input[1], f"{where}.inputs", list(node.input),
                "ResizeGrad needs dY and X")
        attrs = {a.name: _attr(a) for a in node.attribute}
        (roi, roi_name), (scales, scales_name) = self.const(node, 2), self.const(node, 3)
        x, dy = self.dims(node.input[1]), self.dims(node.input[0])
        rank = _rank(where, x, dy, attrs, scales, roi)
        x, dy = x or [None] * rank, dy or [None] * rank
        require(len(dy) == len(x), f"{where}.dY", dy, f"rank must equal X's rank {len(x)}")
        has_scales = bool(scales_name) and (scales is None or len(scales) > 0)
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        axes = _checked(where, lambda: _axes_of(attrs, x, scales, roi, roi_name, has_scales, self.opset))
        require(has_scales or policy == "stretch" or all(isinstance(d, int) for d in x + dy),
                f"{where}.keep_aspect_ratio_policy", policy,
                "needs X and dY with known shapes (or the scales input): the forward's single aspect-preserving "
                "scale is recovered from both shapes when the model is lowered")
        elem = self._elem(node)
        kinds = [_axis_kind(a, pos, x, dy, scales if has_scales else None, has_scales, roi, attrs)
                 for pos, a in enumerate(axes)]
        if "dynamic" not in kinds:
            return self._static(node, where, attrs, x, dy, axes, kinds, roi, scales if has_scales else None, elem)
        _refuse_dynamic_nhwc_crop(where, attrs, x, axes, kinds, scales if has_scales else None, roi)
        return DynamicRead(_plan(where, attrs, rank, axes, kinds, scales, scales_name if has_scales else "",
                                 roi_name, elem, self.opset), elem)

    def _elem(self, node):
        for name in (node.input[1], node.input[0]):
            t = self.types.get(name)
            if t is not None and t.elem_type:
                require(t.elem_type in NP_OF, f"node {node.name or node.op_type}.X",
                        TensorProto.DataType.Name(t.elem_type), "ResizeGrad takes float16, float or double")
                return t.elem_type
        return None

    def _static(self, node, where, attrs, x, dy, axes, kinds, roi, scales, elem):
        """Static taps: every resized axis has static sizes; unresized run-time dims become placeholders."""
        unresized = {a for a, kind in zip(axes, kinds) if kind == "same"} | set(range(len(x))) - set(axes)
        for a in sorted(unresized):           # an unresized axis keeps X's length: dY must agree before it stands in
            require(not (isinstance(x[a], int) and isinstance(dy[a], int)) or x[a] == dy[a], f"{where}.dY", dy,
                    f"axis {a} is not resized (scale 1 or not in axes), so its length must be X's {x[a]}")
        same = {a: next((d for d in (x[a], dy[a]) if isinstance(d, int)), None) for a in unresized}
        run_time = [a for a, d in same.items() if d is None]          # 1 stands in, then a SymbolicDim
        x = [(same[a] or 1) if a in same else d for a, d in enumerate(x)]
        dy = [(same[a] or 1) if a in same else d for a, d in enumerate(dy)]
        require(scales is not None or all(isinstance(d, int) for d in dy), f"{where}.dY", dy,
                "needs a known shape (run shape inference)")
        sizes = None if scales is not None else [dy[a] for a in axes] if "axes" in attrs else dy
        if sizes is not None and attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            sizes = _policy_sizes(where, attrs, x, dy, axes, roi, self.opset)
        r = onnx_conv.OnnxResize(x, attrs, roi, scales, sizes, opset=min(max(self.opset, 10), 21),
                                 op_type="ResizeGrad")
        res = _checked(where, lambda: onnx_conv.to_canonical(r, self.semantics))
        require(all(not isinstance(d, int) or d == o for d, o in zip(dy, res.out_shape)), f"{where}.dY", dy,
                f"must have the forward output shape {list(res.out_shape)}")
        require(elem is not None, f"{where}.X", node.input[1], "needs a known element type (run shape inference)")
        if run_time:
            res = res.with_(axes=tuple(AxisMap.identity(symbolic_dim(a)) if a in run_time else m
                                       for a, m in enumerate(res.axes)))
        return r, res, elem


def _policy_sizes(where, attrs, x, dy, axes, roi, opset) -> list:
    """Sizes for which keep_aspect_ratio_policy gives dY's shape with the forward's scale. The gradient builder
    drops the forward's sizes; the scale it picked is float32(dY / X) of the axis that decided it, so each axis
    is tried; every candidate that reproduces dY's shape must give the same map."""
    policy = attrs["keep_aspect_ratio_policy"]
    found = {}
    for k in axes:
        s = float(np.float32(dy[k]) / np.float32(x[k]))
        sizes = [dy[a] if a == k else (math.ceil(s * x[a]) + 1 if policy == "not_larger"
                                       else max(1, math.floor(s * x[a]) - 1)) for a in axes]
        node = onnx_conv.OnnxResize(x, attrs, roi, sizes=sizes, opset=min(max(opset, 10), 21), op_type="ResizeGrad")
        try:
            res = onnx_conv.to_canonical(node, onnx_conv.STAND_IN_SEMANTICS)    # shapes only
        except DescError:
            continue
        if list(res.out_shape) == list(dy):
            found.setdefault(res.axes, sizes)
    require(len(found) == 1, f"{where}.keep_aspect_ratio_policy", policy,
            f"with X {list(x)} and dY {list(dy)} " + ("no single aspect-preserving scale gives dY's shape"
                                                      if not found else "two scales give dY's shape (the gradient "
                                                      "node has no sizes): give the forward the scales input instead "
                                                      "of sizes, the one scale on every resized axis"))
    return next(iter(found.values()))


def _checked(where: str, read):
    try:
        return read()
    except DescError as e:
        raise DescError(f"{where}.{e.field}", e.value, e.rule) from None


def _rank(where, x, dy, attrs, scales, roi) -> int:
    """X's rank: from the shapes, else from scales / roi without an axes attribute (a function body)."""
    for dims in (x, dy):
        if dims is not None:
            return len(dims)
    if "axes" not in attrs and scales:
        return len(scales)
    if "axes" not in attrs and roi:
        return len(roi) // 2
    raise DescError(f"{where}.X", None, "has no known rank: give X a shape (shape inference), or a constant "
                    "scales input, or call the function with inputs of known shape")


def _axes_of(attrs, x, scales, roi, roi_name, has_scales, opset):
    """The axes the scales / sizes / roi entries refer to (validated by the ONNX convention reader)."""
    rank = len(x)
    dummy = onnx_conv.OnnxResize(list(x), attrs, opset=min(max(opset, 10), 21), op_type="ResizeGrad")
    axes = dummy.attr("axes")
    n = len(axes) if isinstance(axes, list) else rank
    dummy.input_shape = _stand_in(x, attrs, scales if has_scales else None, n)
    if dummy.attr("coordinate_transformation_mode") == "tf_crop_and_resize":
        dummy.roi = roi if roi is not None or not roi_name else [0.0] * n + [1.0] * n
    if has_scales:
        dummy.scales = scales if scales is not None else [1.0] * n
    else:
        dummy.sizes = [2] * n
    onnx_conv.to_canonical(dummy, onnx_conv.STAND_IN_SEMANTICS)  # every attribute and constant input checked, by name
    return [a % rank for a in axes] if axes is not None else list(range(rank))


def _stand_in(x, attrs, scales, n) -> list:
    """X's shape with run-time dims replaced by sizes that keep every constant scale's output non-empty and
    in the size budget (dml_desc.budget), so that only the user's own values can be refused."""
    rank = len(x)
    axes = attrs.get("axes")
    axes = [a % rank if isinstance(a, int) and -rank <= a < rank else None for a in axes] \
        if isinstance(axes, list) else list(range(rank))
    shape = [d if isinstance(d, int) else 2 ** min(10, 30 // rank) for d in x]
    for pos, a in enumerate(axes[:n]):
        if a is None or isinstance(x[a], int) or scales is None or pos >= len(scales):
            continue
        s = float(np.float32(scales[pos])) if is_number(scales[pos]) else 1.0
        if 0 < s < 1:             # large enough for at least one output, small enough for the budget
            shape[a] = max(shape[a], min(2 ** 21, math.ceil(1 / s)))
        elif s > 1:
            shape[a] = max(1, min(shape[a], int(2 ** 21 // s)))
    return shape


def _axis_kind(a, pos, x, dy, scales, has_scales, roi, attrs) -> str:
    """'same' (not resized), 'static' (resized, sizes known now) or 'dynamic' (decided at run time)."""
    tf_crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    if has_scales:
        if scales is None:
            return "dynamic"
        if np.float32(scales[pos]) == 1:
            return "same"
        return "static" if isinstance(x[a], int) and (roi is not None or not tf_crop) else "dynamic"
    if isinstance(x[a], int) and isinstance(dy[a], int):
        if x[a] == dy[a]:
            return "same"
        return "static" if roi is not None or not tf_crop else "dynamic"
    return "same" if x[a] is not None and x[a] == dy[a] else "dynamic"     # one dim_param: equal sizes


def _refuse_dynamic_nhwc_crop(where, attrs, x, axes, kinds, scales, roi) -> None:
    """onnxruntime's 4-D antialias kernel with scales [1, h, w, 1] extrapolates tf_crop_and_resize outputs with
    weights that depend on the last axis (dml_desc.conventions.onnx._refuse_nhwc_crop); where shapes or scales
    known only at run time cannot exclude that case, it is refused here, not at run time."""
    if len(x) != 4 or not attrs.get("antialias") or attrs.get("mode", "nearest") == "nearest" \
            or attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize" or x[3] == 1 \
            or "static" in (dict(zip(axes, kinds)).get(0), dict(zip(axes, kinds)).get(3)):
        return
    pos = {a: i for i, a in enumerate(axes)}
    if scales is not None:
        s = {a: float(np.float32(scales[i])) for a, i in pos.items()}
        if s.get(0, 1.0) != 1.0 or s.get(3, 1.0) != 1.0 or (s.get(1, 1.0) == 1.0 and s.get(2, 1.0) == 1.0):
            return                       # not that kernel, or nothing it resamples
    if roi is not None and all(0 <= roi[pos[a]] <= 1 and 0 <= roi[len(axes) + pos[a]] <= 1
                               for a in (1, 2) if a in pos):
        return                           # the crop stays inside the input: nothing extrapolates
    raise DescError(f"{where}.antialias", attrs["antialias"], "with tf_crop_and_resize on 4-D input whose shape or "
                    "scales are known only at run time: where axes 0 and 3 keep scale 1 and axis 3 is longer than 1, "
                    "onnxruntime's forward extrapolates with weights that depend on axis 3, which no gradient is the "
                    "transpose of (docs/adjoint.md); give X's last dim (1) or constant scales and shapes")


def _plan(where, attrs, rank, axes, kinds, scales, scales_name, roi_name, elem, opset) -> DynamicPlan:
    require(bool(scales_name) or opset >= 11, f"{where}.scales", None,
            "Resize-10 has no sizes input: a ResizeGrad at opset 10 needs scales")
    require(elem is not None or opset >= 15, f"{where}.X", None,
            f"needs a known element type at opset {opset} (CastLike, opset 15, would read it at run time)")
    moved = [(a, pos) for pos, (a, kind) in enumerate(zip(axes, kinds)) if kind != "same"]
    # onnxruntime copies when the whole shape is unchanged: an axis with a scale in (1, 2) may keep its size
    # while another changes, and must then be resampled (sizes give scale 1 exactly to unchanged axes)
    stretch = bool(scales_name) and (scales is None or any(1 < np.float32(scales[pos]) < 2 for _, pos in moved))
    return DynamicPlan(rank, tuple(moved), attrs, scales_name, roi_name, len(axes), stretch, elem is not None,
                       _nhwc_cubic(attrs, rank, axes, scales, bool(scales_name)))


def _nhwc_cubic(attrs, rank, axes, scales, has_scales) -> str:
    """How the dynamic path meets onnxruntime's NHWC cubic kernel (onnx_ops.dynamic.DynamicPlan.nhwc_cubic).
    With sizes, a same-length axis has scale 1 and every kernel copies it."""
    if not has_scales or rank != 4 or attrs.get("mode") != "cubic" or attrs.get("antialias"):
        return ""
    if scales is None:
        return "run time"
    chosen = onnx_conv.nhwc_cubic(rank, "cubic", False, {a: float(np.float32(v)) for a, v in zip(axes, scales)})
    return "always" if chosen else ""


def _emit_dynamic(node, plan: DynamicPlan, elem, prefix: str, opset: int):
    """Nodes and initializers of the dynamic path (onnx_ops.dynamic) with dX written by the last node."""
    em = Emitter(prefix, opset, np.float64 if elem == TensorProto.DOUBLE else np.float32)
    cur = node.input[0]
    if elem == TensorProto.FLOAT16:
        cur = em.node("Cast", [cur], "f32", to=TensorProto.FLOAT)
    cur = emit_dynamic(em, cur, node.input[1], plan)
    if elem == TensorProto.FLOAT16:
        em.nodes.append(helper.make_node("Cast", [cur], [node.output[0]], to=TensorProto.FLOAT16))
    else:
        em.rename(cur, node.output[0])
    return em.nodes, em.inits


def _attr(a):
    v = helper.get_attribute_value(a)
    return v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, (list, tuple)) else v)


def _emit(node, res, elem: int, prefix: str, opset: int = 19):
    """Nodes and initializers computing dX from dY: the fastest form the taps prove equal."""
    em = Emitter(prefix, opset, NP_OF[elem], dims_from=node.input[0])   # run-time dims read from dY
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
    """dX from dY in the form the cost model (onnx_ops.forms) estimates fastest among those the taps prove:
    the band / dense / gather plan, kron, AveragePool, the one-node Conv forms, or a Resize (README "Lowering")."""
    kron = kron_form(res)
    plans, cost = plan_axes(res, np.dtype(em.acc).itemsize)    # band / dense MatMuls or gathers, by cost
    blocks = block_factors(res)
    pool = pool_form(res, blocks, em.opset) if em.acc is np.float32 else None   # AveragePool: float32 here
    if pool is not None:                   # by rule, where it measured fastest (onnx_ops.forms, README)
        return emit_pool(em, cur, res, pool), ("avgpool",) * len(blocks)
    if kron is not None and kron_cost(res, kron) <= cost:   # measured faster than Conv / ConvTranspose (README)
        return emit_kron(em, cur, res, kron), kron.names(len(res.axes))
    f32 = em.acc is np.float32             # onnxruntime's CPU Conv, ConvTranspose and Resize are float32 here
    f32 = f32 and kron is None and conv_cost(res) <= cost
    parts = deconv_form(res) if f32 and blocks else None
    single = combined(res, parts) if parts else None
    if single:         # measured faster than Reshape + ReduceSum on onnxruntime CPU (README, benchmark)
        return emit_conv(em, cur, *single), ("deconv(ones)",) * len(parts)
    spread = spread_form(res) if f32 else None
    if spread is not None:   # integer downsampling: measured faster than a nearest Resize (README)
        return emit_spread(em, cur, res, spread), ("conv_transpose",) * len(res.resized_axes)
    if blocks and f32:
        return emit_block(em, cur, res, blocks), ("block-sum",) * len(blocks)
    found = find_resize(res, em.opset) if em.acc is np.float32 else None
    if found and resize_cost(res, found[0]) <= PREFER_RESIZE * cost:
        cand, spelling = found
        form = f"Resize({cand.mode.value}{', antialias' if cand.antialias else ''})"
        return emit_resize(em, cur, res, spelling), (form,) * len(res.resized_axes)
    cur, names = emit_plan(em, cur, res, plans)
    order = {p.axis: name for p, name in zip(plans, names)}
    return cur, tuple(order[a] for a in res.resized_axes)


def lower_file(src: str, dst: str, providers: Sequence[str] = ("CPUExecutionProvider",),
               semantics: str | None = None, calibration=None) -> list[Rewrite]:
    """Lower a model file; `dst` may equal `src`. Written atomically, after onnx's full check and an onnxruntime
    load; external data is kept, and read relative to the model file (not the working directory), only from
    regular files inside the model's folder (onnx_ops.validate.check_external_data). Into another folder, the
    external data is written as a new file beside `dst` (never appended to, never through a symlink); `dst` and
    that file may not be a file the input reads. An
    onnxruntime training or eval graph also gets prepare_artifacts's repairs (training_repair.repair_for_lowering:
    MaxPoolGrad with symbolic dims, eval BatchNorm), listed in the report's `repairs`. Raises only DescError
    subclasses (FileError for the file system)."""
    check_providers(providers)
    try:
        return _lower_file(src, dst, providers, semantics, calibration)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:    # onnx's own, reworded
        raise DescError("IN", src, f"is not a valid ONNX model: {str(e).strip().splitlines()[0][:200]}") from e
    except OSError as e:
        if isinstance(e, DescError):
            raise
        from dml_desc.files import FileError
        raise FileError(e.filename or src, e, f"cannot be read or written ({e.strerror or e})") from e


def _lower_file(src, dst, providers, semantics, calibration=None) -> list[Rewrite]:
    from .validate import check_external_data, load_model
    require(isinstance(dst, (str, os.PathLike)) and bool(os.fspath(dst)), "dst", dst, "must be a file path")
    model = load_model(src)           # a DescError for a folder, an empty, truncated or non-ONNX file
    src_dir, dst_dir = os.path.dirname(os.path.abspath(src)), os.path.dirname(os.path.abspath(dst))
    reads = {os.path.realpath(f) for f in check_external_data(model, src_dir)}
    require(os.path.realpath(dst) not in reads, "OUT", os.fspath(dst), "is a data file the input model reads; "
            "name another file")
    external = {t.name: t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    reading = _with_resize_grad_constants(model, external, src_dir)
    from .training_repair import RepairedRewrites, repair_for_lowering
    reading, repairs = repair_for_lowering(reading)     # an ORT training / eval graph: what prepare_artifacts does
    lowered, report = lower(reading, providers, semantics, calibration)
    report = RepairedRewrites(report, repairs)
    if external and os.path.realpath(src_dir) == os.path.realpath(dst_dir):
        for t in lowered.graph.initializer:       # the data file stays as it is: keep every reference to it
            if t.name in external:
                t.CopyFrom(external[t.name])
    elif external:
        _move_external_data(lowered, external, src_dir, dst_dir, reads | {os.path.realpath(src)})
    save_atomic(lowered, dst, baseline=src)     # failures the input already has are not ours
    return report


def _move_external_data(lowered, external: dict, src_dir: str, dst_dir: str, reads: set) -> None:
    """Copy the external tensors `lowered` keeps into one new data file in `dst_dir` (named like the input's
    first), written atomically, and point the model at it."""
    from dml_desc.files import write_atomic
    location = sorted(_location(t) for t in external.values())[0]
    target = os.path.join(dst_dir, location)
    require(os.path.realpath(target) not in reads, "OUT", target, "the external data would overwrite a file the "
            "input model reads; write the model to another folder")
    blob, offset = bytearray(), 0
    for t in lowered.graph.initializer:
        if t.name not in external:
            continue
        data = _read_external(external[t.name], src_dir)
        pad = -offset % 4096                      # onnx's own alignment for mmap
        blob += b"\0" * pad
        offset += pad
        blob += data
        del t.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
            t.external_data.add(key=key, value=value)
        offset += len(data)
    write_atomic(target, bytes(blob))


def _read_external(tensor, folder: str) -> bytes:
    """The bytes of one external tensor (its reference already checked by check_external_data)."""
    from dml_desc.files import FileError
    info = {e.key: e.value for e in tensor.external_data}
    path = os.path.join(folder, info["location"])
    try:
        with open(path, "rb") as f:
            f.seek(int(info.get("offset", 0)))
            return f.read(int(info["length"])) if "length" in info else f.read()
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror})", f"initializer {tensor.name}.location") from e


def _with_resize_grad_constants(model, external: dict, folder: str):
    """A copy of `model` whose external roi / scales tensors (those ResizeGrad nodes read) are loaded from
    `folder`, the model file's own folder, so they lower as the constants they are."""
    wanted = {n.input[i] for g in graphs(model.graph) for n in g.node if is_resize_grad(n)
              for i in (2, 3) if len(n.input) > i} & set(external)
    if not wanted:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        if t.name in wanted:
            t.raw_data = _read_external(t, folder)
            t.data_location = TensorProto.DEFAULT
            del t.external_data[:]
    return copy


def _location(tensor) -> str:
    return next(e.value for e in tensor.external_data if e.key == "location")
