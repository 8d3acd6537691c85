"""Repairs that make ORT's training artifacts load and train on the CPU training build.

- repair_eval_model: inference BatchNormalization in the eval model.
- repair_training_model: MaxPoolGrad with symbolic dims -> standard ops (any float type); ConvTransposeGrad ->
  Conv (dX), ConvGrad (dW), ReduceSum (dB).
- repair_optimizer_model: the optimizer's update flag declared as it is inferred (no shape-merge warning).
- drop_unused_initializers: no initializer or Constant that no node reads (onnxruntime warns about each at every
  session).
- restamp: IR <= 10 and ai.onnx <= 21 (what onnxruntime-training 1.19.2 loads), only where no op or type changes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper

from dml_desc.errors import require

from ..forms import Emitter
from ..lowering.validate import load_model, save_atomic
from ..lowering.walk import fresh_prefix, graphs, model_names
from ..model import TRAINING_MAX_IR, TRAINING_MAX_OPSET

# the last element type IR 10 knows (INT4 = 22); later ones (FLOAT4E2M1, ...) need IR 11 or later
_IR10_MAX_ELEM = onnx.TensorProto.INT4



def repair_eval_file(path: str) -> list:
    """repair_eval_model on a file, rewritten atomically (only when something changed); returns its notes."""
    model = load_model(path)             # its external data checked to stay in its folder
    repaired, notes = repair_eval_model(model)
    if notes:
        save_atomic(repaired, path)
    return notes


def repair_eval_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy of an ORT eval model whose BatchNorm nodes load: inference BatchNormalization, one output.

    ORT writes the eval graph's BatchNormalization with training_mode=0 but keeps the training-only outputs
    (running_mean, running_var), which onnx's schema refuses ("number of op outputs should be 1 when
    Training_mode = False"); a com.microsoft BatchNormInternal has no inference kernel at all. Inference
    BatchNormalization reads only X, scale, B and the running statistics, exactly the inputs these nodes already
    have, so the repair keeps every input and the Y output and drops the outputs that only training writes. Those
    must be unused; if the eval graph reads one, this refuses instead of guessing.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    used = {i for n in out.graph.node for i in n.input} | {o.name for o in out.graph.output}
    notes = []
    for k, node in enumerate(out.graph.node):
        if not _needs_repair(node):
            continue
        where = f"node {node.name or node.op_type}"
        extra = [o for o in node.output[1:] if o]
        read = [o for o in extra if o in used]
        require(not read, f"{where}.outputs", read, "are training statistics that the eval graph reads; an "
                "inference BatchNormalization has only Y, so this eval model cannot be repaired")
        epsilon = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "epsilon"), 1e-5)
        fixed = helper.make_node("BatchNormalization", list(node.input[:5]), [node.output[0]], name=node.name,
                                 epsilon=epsilon)
        out.graph.node[k].CopyFrom(fixed)
        notes.append(f"{node.name or node.op_type}: {node.domain + '::' if node.domain else ''}{node.op_type} -> "
                     f"inference BatchNormalization; dropped unused training outputs {extra}")
    if notes:
        _drop_value_info(out.graph, {o for n in model.graph.node if _needs_repair(n) for o in n.output[1:]})
    return out, notes


def _needs_repair(node) -> bool:
    """BatchNormInternal (training-only) or a BatchNormalization in inference mode with the training outputs."""
    if node.op_type == "BatchNormInternal" and node.domain == "com.microsoft":
        return True
    if node.op_type != "BatchNormalization" or node.domain not in ("", "ai.onnx"):
        return False
    training = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "training_mode"), 0)
    return not training and len(node.output) > 1


def _drop_value_info(graph, names: set) -> None:
    keep = [v for v in graph.value_info if v.name not in names]
    del graph.value_info[:]
    graph.value_info.extend(keep)


# -------------------------------------------------------------------------------------------- optimizer repair

def repair_optimizer_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy of an ORT optimizer model whose update flag merges its shapes quietly: onnxruntime declares the
    optimizer node's bool flag as shape [1], its schema infers a scalar and its kernel writes [1], so every
    Optimizer warned "Error merging shape info for output". The node now writes an undeclared tensor that a
    Reshape to [1] turns into the declared output (same name, same value)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    declared = {v.name: v for v in out.graph.output}
    taken = model_names(out)
    notes, added = [], []
    for node in out.graph.node:
        if node.domain != "com.microsoft" or "Optimizer" not in node.op_type:
            continue
        for k, name in enumerate(node.output):
            v = declared.get(name)
            dims: Sequence[onnx.TensorShapeProto.Dimension] = v.type.tensor_type.shape.dim if v is not None else ()
            if v is None or v.type.tensor_type.elem_type != onnx.TensorProto.BOOL or len(dims) != 1 \
                    or dims[0].dim_value != 1:
                continue
            base = fresh_prefix(name, taken)
            raw, shape = base + "_scalar", base + "_shape"
            node.output[k] = raw
            added += [helper.make_node("Constant", [], [shape], value=helper.make_tensor("", onnx.TensorProto.INT64,
                                                                                           [1], [1])),
                      helper.make_node("Reshape", [raw, shape], [name])]
            notes.append(f"{node.name or node.op_type}: {name} written as a scalar and reshaped to its declared [1]")
    for i, n in enumerate(added):
        n.name = f"update_flag/{n.op_type}_{i}"
    out.graph.node.extend(added)
    return out, notes


# --------------------------------------------------------------------------------------------- training repair

def repair_training_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy of an ORT training model whose pooling gradients run with symbolic dims and whose ConvTransposeGrad
    runs at all (conv_transpose_grad: the CPU build has no kernel for it).

    onnxruntime's CPU MaxPoolGrad and AveragePoolGrad take dX's shape from the graph when the session is built
    (pool_gradient_op.h, InferOutputShapes), so with a symbolic batch or image size they read the wrong shape
    (onnxruntime 1.19: a segmentation fault). MaxPoolGrad(dY, Indices) is rewritten into standard ops: the
    forward MaxPool's Indices are flat indices into X, so dX = Reshape(ScatterElements(zeros(Size(X)),
    Indices, dY, reduction="add"), Shape(X)), summed in a fixed order (overlapping windows add up as in
    onnxruntime's kernel; float16 adds up in float32). AveragePoolGrad with symbolic dims is refused. Static shapes
    keep the native kernels.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    static = {v.name for v in out.graph.value_info if _is_static(v)}
    taken = model_names(out)
    opset = next((o.version for o in out.opset_import if o.domain in ("", "ai.onnx")), 1)
    nodes, notes = [], []
    for node in out.graph.node:
        if node.op_type == "ConvTransposeGrad" and node.domain == "com.microsoft":
            nodes.extend(conv_transpose_grad(node, fresh_prefix(node.name or "ConvTransposeGrad", taken), opset))
            notes.append(f"{node.name or node.op_type}: ConvTransposeGrad (no CPU kernel) -> dX Conv, dW ConvGrad, "
                         "dB ReduceSum")
            continue
        if node.domain not in ("", "com.microsoft") or node.op_type not in ("MaxPoolGrad", "AveragePoolGrad") \
                or node.output[0] in static:        # onnxruntime registers both in the ai.onnx domain
            nodes.append(node)
            continue
        where = f"node {node.name or node.op_type}"
        require(node.op_type == "MaxPoolGrad", f"{where}.dX", node.output[0], "has symbolic dims; onnxruntime's "
                "CPU AveragePoolGrad needs static shapes (fix the input dims before generate_artifacts)")
        require(opset >= 16, f"{where}.opset", opset, "rewriting MaxPoolGrad for symbolic dims needs "
                "ScatterElements with reduction (ai.onnx opset 16 or later)")
        pool = next((n for n in out.graph.node if n.op_type == "MaxPool" and node.input[1] in n.output[1:]), None)
        require(pool is not None, f"{where}.Indices", node.input[1], "must be the Indices output of a MaxPool")
        assert pool is not None                 # require raised otherwise
        order = next((a.i for a in pool.attribute if a.name == "storage_order"), 0)
        require(order == 0, f"node {pool.name or 'MaxPool'}.storage_order", order,
                "must be 0 (row-major Indices) for the MaxPoolGrad rewrite")
        nodes.extend(_scatter_max_pool_grad(node, pool.input[0], fresh_prefix(node.name or "MaxPoolGrad", taken), opset,
                                             _elem_of(out, pool.input[0])))
        notes.append(f"{node.name or node.op_type}: MaxPoolGrad with symbolic dims -> ScatterElements(add)")
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, notes


def conv_transpose_grad(node, prefix: str, opset: int) -> list:
    """ConvTransposeGrad(dY, X, W) -> (dX, dW, dB) in ops the CPU training build runs (it has no kernel for
    ConvTransposeGrad). A ConvTranspose is the adjoint of the Conv with the same weights, strides, pads, dilations
    and groups, so dX = Conv(dY, W) (the ConvTransposeBackwardData of dml_desc.conventions.deconv); its weight
    gradient is that Conv's weight gradient with the roles of input and output swapped: dW = ConvGrad(dY'=X,
    X'=dY, W)'s dW (the training build's own Conv weight-gradient kernel); dB sums dY over every axis but C.
    output_padding only adds trailing dY rows that no Conv window of X's size reads."""
    where = f"node {node.name or node.op_type}"
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    require(auto_pad == "NOTSET" and "output_shape" not in attrs, f"{where}.auto_pad", auto_pad,
            "must be NOTSET with explicit pads (no output_shape) for the ConvTransposeGrad rewrite; torch's "
            "exporters write explicit pads")
    conv = {k: attrs[k] for k in ("strides", "pads", "dilations", "group", "kernel_shape") if k in attrs}
    dy, x, w = node.input[:3]
    outputs = list(node.output) + [""] * (3 - len(node.output))
    em = Emitter(prefix, opset, np.float32)
    if outputs[0]:
        em.nodes.append(helper.make_node("Conv", [dy, w], [outputs[0]], **conv))
    if outputs[1]:
        em.nodes.append(helper.make_node("ConvGrad", [x, dy, w], ["", outputs[1]], domain="com.microsoft", **conv))
    if outputs[2]:
        require(opset >= 13, f"{where}.opset", opset, "the bias gradient needs ReduceSum with axes as an input "
                "(ai.onnx opset 13 or later)")
        rank = em.node("Size", [em.node("Shape", [dy], "shape")], "rank")     # axes 0, 2, 3, ...: all but C
        spatial = em.node("Range", [em.const(2, "two", np.int64), rank, em.const(1, "one", np.int64)], "spatial")
        axes = em.node("Concat", [em.const([0], "batch", np.int64), spatial], "axes", axis=0)
        em.nodes.append(helper.make_node("ReduceSum", [dy, axes], [outputs[2]], keepdims=0))
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in em.inits] + em.nodes
    for i, n in enumerate(nodes):
        n.name = f"{node.name or 'ConvTransposeGrad'}/lowered/{n.op_type}_{i}"
    return nodes


def _is_static(value_info) -> bool:
    dims = value_info.type.tensor_type.shape.dim
    return value_info.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims)


def _scatter_max_pool_grad(node, x: str, prefix: str, opset: int, elem) -> list:
    """dX = Reshape(ScatterElements(zeros, flat Indices, flat dY, add), Shape(X)) in X's float type `elem`.
    float32 and float64 scatter in their own type. onnxruntime's CPU ScatterElements cannot add float16, so
    float16 / bfloat16 add up in float32 and are cast back once; an unknown type adds up in float64, cast back
    like dY (CastLike)."""
    acc = elem if elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE) else \
        onnx.TensorProto.FLOAT if elem in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16) else \
        onnx.TensorProto.DOUBLE
    em = Emitter(prefix, opset, np.float32)
    flat = em.const([-1], "flat", np.int64)
    shape = em.node("Shape", [x], "xshape")
    size = em.node("Reshape", [em.node("Size", [x], "xsize"), flat], "size")      # a scalar made a [1] shape
    zeros = em.node("ConstantOfShape", [size], "zeros", value=helper.make_tensor("", acc, [1], [0.0]))
    dy = node.input[0] if acc == elem else em.node("Cast", [node.input[0]], "dyacc", to=acc)
    indices, grads = em.node("Reshape", [node.input[1], flat], "indices"), em.node("Reshape", [dy, flat], "dy")
    summed = em.node("ScatterElements", [zeros, indices, grads], "scatter", axis=0, reduction="add")
    if acc != elem:
        summed = em.node("CastLike", [summed, node.input[0]], "dxcast")
    em.nodes.append(helper.make_node("Reshape", [summed, shape], [node.output[0]]))
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in em.inits] + em.nodes
    for i, n in enumerate(nodes):            # named after the node they replace, as onnx_ops.lower names its own
        n.name = f"{node.name or 'MaxPoolGrad'}/lowered/{n.op_type}_{i}"
    return nodes


def _elem_of(model, name: str):
    """The element type of tensor `name` (declared, or from onnx's shape inference of the standard ops), or None."""
    for g in (model.graph, None):
        if g is None:
            try:
                g = onnx.shape_inference.infer_shapes(model).graph
            except Exception:           # noqa: BLE001 - ORT's training ops are unknown to onnx: no inference
                return None
        found = [v.type.tensor_type.elem_type for v in list(g.input) + list(g.value_info) + list(g.output)
                 if v.name == name] + [t.data_type for t in g.initializer if t.name == name]
        if found and found[0]:
            return found[0]
    return None


# ----------------------------------------------------------------------------------------- for `dml-desc lower`

class RepairedRewrites(list):
    """onnx_ops.lower_file's report: the ResizeGrad rewrites, and in `repairs` the training-graph repairs."""

    def __init__(self, rewrites, repairs):
        super().__init__(rewrites)
        self.repairs = repairs


def repair_for_lowering(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """The repairs prepare_artifacts makes, for a training or eval model lowered on its own (`dml-desc lower`):
    MaxPoolGrad with symbolic dims rewritten (or AveragePoolGrad refused), eval BatchNorm repaired. A graph with
    neither comes back unchanged."""
    if _is_training_graph(model):
        return repair_training_model(model)
    return repair_eval_model(model)


def _is_training_graph(model) -> bool:
    """ORT's training graphs output the parameters' gradients (`<name>_grad`) and hold gradient ops."""
    return any(o.name.endswith("_grad") for o in model.graph.output) or \
        any(n.op_type.endswith("Grad") for n in model.graph.node)


# ------------------------------------------------------------------------------------------ unused initializers

def drop_unused_initializers(model: onnx.ModelProto) -> list:
    """Remove (in place) the main graph's initializers that no node of any graph or function reads and that are
    neither graph inputs nor outputs, and the Constant nodes of any graph (If / Loop / Scan bodies too) whose
    output nothing reads; returns their names. onnxruntime makes every Constant an initializer and drops the
    unused ones, with a warning each time a session is made."""
    read = {i for g in graphs(model.graph) for n in g.node for i in n.input}
    read |= {i for f in model.functions for n in f.node for i in n.input}
    read |= {v.name for g in graphs(model.graph) for v in list(g.input) + list(g.output)}
    unused = _drop_dead_constants(model.graph, read)
    unused += [t.name for t in model.graph.initializer if t.name not in read]
    if unused:
        keep = [t for t in model.graph.initializer if t.name in read]
        del model.graph.initializer[:]
        model.graph.initializer.extend(keep)
        _drop_value_info(model.graph, set(unused))
    return unused


def _drop_dead_constants(graph, read: set) -> list:
    """Remove the Constant nodes (in `graph` and its bodies) whose output is not in `read`; returns the names."""
    dropped = []
    for g in graphs(graph):
        dead = [k for k, n in enumerate(g.node) if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
                and not any(o in read for o in n.output)]
        for k in reversed(dead):
            dropped.append(g.node[k].output[0])
            del g.node[k]
    return dropped


# ---------------------------------------------------------------------------------------------------- restamp

def restamp(model: onnx.ModelProto, where: str, max_ir: int = TRAINING_MAX_IR,
            max_opset: int = TRAINING_MAX_OPSET) -> list:
    """Lower (in place) the model's IR version and ai.onnx opset import to what the training build loads, where
    that changes nothing: every ai.onnx op must have the same schema at `max_opset` as at the stamped opset, and
    every element type must exist at IR `max_ir`. Refuses (DescError naming the op or type) otherwise. Returns
    one line per change. A newer onnx stamps newer versions by default (onnx 1.17: opset 22, 1.18+: IR 11+) on
    graphs whose content the older runtime runs unchanged."""
    notes = []
    opset = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is not None and opset.version > max_opset:
        known = onnx.defs.onnx_opset_version()
        require(opset.version <= known, f"{where}.opset_import", opset.version, f"is newer than this onnx "
                f"({onnx.__version__}, opset {known}) knows, so it cannot tell whether the ops are the same at "
                f"opset {max_opset} that onnxruntime-training 1.19.2 loads; export at opset {max_opset}")
        for g in graphs(model.graph):
            for n in g.node:
                if n.domain in ("", "ai.onnx"):
                    _same_schema(n, opset.version, max_opset, where)
        for f in model.functions:
            for n in f.node:
                if n.domain in ("", "ai.onnx"):
                    _same_schema(n, opset.version, max_opset, where)
        notes.append(f"{where}: ai.onnx opset {opset.version} -> {max_opset} (every op has the same schema)")
        opset.version = max_opset
        for f in model.functions:
            for o in f.opset_import:
                if o.domain in ("", "ai.onnx") and o.version > max_opset:
                    o.version = max_opset
    if model.ir_version > max_ir:
        newer = sorted({t for t in _elem_types(model) if t > _IR10_MAX_ELEM})
        require(not newer, f"{where}.ir_version", model.ir_version, f"cannot become {max_ir} (the training "
                f"build's limit): the model uses element types {[onnx.TensorProto.DataType.Name(t) for t in newer]}"
                f" that IR {max_ir} does not have")
        require(not _has_ir11_fields(model), f"{where}.ir_version", model.ir_version, f"cannot become {max_ir}: "
                "the model uses IR 11 fields (configuration / device placement)")
        notes.append(f"{where}: IR {model.ir_version} -> {max_ir} (no newer type or field used)")
        model.ir_version = max_ir
    return notes


def _same_schema(node, stamped: int, target: int, where: str) -> None:
    try:
        since = onnx.defs.get_schema(node.op_type, stamped, node.domain).since_version
    except onnx.defs.SchemaError:
        return                                  # not an onnx op (onnxruntime registers its own here): unchanged
    require(since <= target, f"{where}: node {node.name or node.op_type}", node.op_type,
            f"is ai.onnx {node.op_type}-{since}, newer than opset {target} that onnxruntime-training 1.19.2 loads; "
            f"export the model at opset {target} or lower (torch.onnx.export(..., opset_version={target}))")


def _elem_types(model) -> set:
    types = set()
    for g in graphs(model.graph):
        types |= {t.data_type for t in g.initializer}
        types |= {v.type.tensor_type.elem_type for v in list(g.input) + list(g.output) + list(g.value_info)}
        for n in g.node:
            types |= {a.t.data_type for a in n.attribute if a.HasField("t")}
    return types


def _has_ir11_fields(model) -> bool:
    """IR 11 added ModelProto.configuration and NodeProto.device_configurations."""
    if "configuration" in [f.name for f in model.DESCRIPTOR.fields] and len(model.configuration):
        return True
    return any(len(getattr(n, "device_configurations", ())) for g in graphs(model.graph) for n in g.node)
