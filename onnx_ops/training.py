"""ORT training artifacts that run on the CPU: generate_artifacts, lower every ResizeGrad, repair the eval model.

onnxruntime.training imports torch, so it is imported only when used (`PixelCrossEntropyLoss` too).
"""
from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from dml_desc.errors import require

from .validate import save_atomic
from .forms import Emitter
from .lower import _fresh, _model_names, lower

LOSSES = ("MSELoss", "CrossEntropyLoss", "BCEWithLogitsLoss", "L1Loss")
OPTIMIZERS = ("SGD", "AdamW")
MODEL_FILES = ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx")


@dataclass
class ArtifactReport:
    """What generate_cpu_artifacts wrote and changed."""
    rewrites: list                                       # onnx_ops.lower.Rewrite, one per ResizeGrad
    eval_repairs: list = field(default_factory=list)     # one line per repaired eval node
    training_repairs: list = field(default_factory=list)  # one line per rewritten training node (MaxPoolGrad)
    files: list = field(default_factory=list)            # the model files written, in out_dir

    def __str__(self):
        lines = [f"{len(self.rewrites)} ResizeGrad node(s) lowered"] + [f"  {r}" for r in self.rewrites]
        if self.training_repairs:
            lines += [f"training model: {len(self.training_repairs)} pooling gradient(s) rewritten"]
            lines += [f"  {t}" for t in self.training_repairs]
        lines += [f"eval model: {len(self.eval_repairs)} node(s) repaired"] + [f"  {e}" for e in self.eval_repairs]
        return "\n".join(lines)

    # the old return value was the list of rewrites: keep len() and iteration working
    def __len__(self):
        return len(self.rewrites)

    def __iter__(self):
        return iter(self.rewrites)

    def __getitem__(self, i):
        return self.rewrites[i]


def generate_cpu_artifacts(model, requires_grad: list | None, out_dir: str, *, frozen_params: list | None = None,
                           loss="MSELoss", optimizer="SGD", additional_output_names: list | None = None,
                           loss_input_names: list | None = None, ort_format: bool = False, prefix: str = "",
                           custom_op_library: str | None = None, nominal_checkpoint: bool = False,
                           semantics: str | None = None) -> ArtifactReport:
    """onnxruntime.training.artifacts.generate_artifacts, then make the artifacts load and train on the CPU.

    model: an onnx.ModelProto or a path (use a path for models over 2 GB).
    requires_grad / frozen_params: parameter (initializer) names that train / stay fixed.
    loss: a LossType, its name ("MSELoss", "CrossEntropyLoss", "BCEWithLogitsLoss", "L1Loss"), an onnxblock
        loss Block (e.g. `PixelCrossEntropyLoss()` for per-pixel segmentation labels) or None (no loss node).
    optimizer: an OptimType, its name ("SGD", "AdamW"), an onnxblock optimizer Block, or None (no optimizer model).
    additional_output_names, loss_input_names, prefix, custom_op_library, nominal_checkpoint: passed through.
    semantics: passed to onnx_ops.lower (which runtime's Resize semantics the lowered gradient follows).
    ort_format: also write .ort files. They are converted from the lowered and repaired models, because an .ort
        file cannot be lowered after the fact (and a graph with ResizeGrad cannot be converted for the CPU).

    Afterwards `training_model.onnx` has every ResizeGrad lowered (onnx_ops.lower) and every MaxPoolGrad with
    symbolic dims rewritten (repair_training_model), and `eval_model.onnx` has its BatchNorm nodes repaired
    (repair_eval_model). Returns an ArtifactReport.
    """
    from .run import onnxruntime_training
    artifacts = onnxruntime_training("artifacts")      # a DescError naming the extra when it is missing
    proto = onnx.load(model, load_external_data=False) if isinstance(model, (str, os.PathLike)) else model
    require(isinstance(proto, onnx.ModelProto), "model", type(model).__name__, "must be an onnx.ModelProto or a path")
    _check_params(proto, requires_grad, frozen_params)
    loss = _pick(loss, artifacts.LossType, LOSSES, "loss")
    optimizer = _pick(optimizer, artifacts.OptimType, OPTIMIZERS, "optimizer")
    os.makedirs(out_dir, exist_ok=True)
    artifacts.generate_artifacts(
        os.fspath(model) if isinstance(model, os.PathLike) else model, requires_grad=requires_grad,
        frozen_params=frozen_params, loss=loss, optimizer=optimizer, artifact_directory=out_dir,
        prefix=prefix, ort_format=False, custom_op_library=custom_op_library,
        additional_output_names=additional_output_names, nominal_checkpoint=nominal_checkpoint,
        loss_input_names=loss_input_names)
    report = prepare_artifacts(out_dir, prefix, semantics)
    if ort_format:
        report.files += _to_ort(report.files, out_dir, custom_op_library)
    return report


def prepare_artifacts(out_dir: str, prefix: str = "", semantics: str | None = None) -> ArtifactReport:
    """Make an existing artifact folder (from generate_artifacts, ONNX files) train on the CPU: lower every
    ResizeGrad, rewrite MaxPoolGrad with symbolic dims (repair_training_model) and repair the eval model."""
    paths = {name: os.path.join(out_dir, prefix + name) for name in MODEL_FILES}
    require(os.path.isfile(paths["training_model.onnx"]), "out_dir", out_dir,
            f"must hold {prefix}training_model.onnx (an artifact folder from generate_artifacts)")
    training, training_repairs = repair_training_model(onnx.load(paths["training_model.onnx"],
                                                                 load_external_data=False))
    training, rewrites = lower(training, semantics=semantics)
    # checked against the file ORT wrote: onnx does not know ORT's training ops (MaxPoolGrad even sits in ai.onnx)
    save_atomic(training, paths["training_model.onnx"], baseline=paths["training_model.onnx"])
    eval_repairs = repair_eval_file(paths["eval_model.onnx"]) if os.path.isfile(paths["eval_model.onnx"]) else []
    return ArtifactReport(list(rewrites), eval_repairs, training_repairs,
                          [p for p in paths.values() if os.path.exists(p)])


def _pick(value, enum, names: tuple, field_name: str):
    """A loss / optimizer given by name maps to ORT's enum; enums, onnxblock Blocks and None pass through."""
    from onnxruntime.training import onnxblock
    if value is None or isinstance(value, (enum, onnxblock.Block)):
        return value
    require(isinstance(value, str) and value in names, field_name, value,
            f"must be one of {list(names)}, an onnxruntime.training.artifacts.{enum.__name__}, "
            "an onnxblock.Block or None")
    return enum[value]


def _check_params(model: onnx.ModelProto, requires_grad, frozen_params) -> None:
    """Parameter names must be initializers, and none may both train and stay frozen."""
    names = {t.name for t in model.graph.initializer}
    for field_name, given in (("requires_grad", requires_grad), ("frozen_params", frozen_params)):
        require(given is None or (isinstance(given, (list, tuple)) and all(isinstance(g, str) for g in given)),
                field_name, given, "must be a list of initializer names or None")
        missing = [g for g in given or [] if g not in names]
        require(not missing, field_name, missing, "names no initializer of the model")
    both = sorted(set(requires_grad or []) & set(frozen_params or []))
    require(not both, "frozen_params", both, "a parameter cannot both require a gradient and be frozen")


def _to_ort(paths: list, out_dir: str, custom_op_library) -> list:
    """The .ort files of the (already lowered) models, as generate_artifacts(ort_format=True) writes them."""
    import pathlib
    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort
    written = []
    for path in paths:
        convert_onnx_models_to_ort(pathlib.Path(path), output_dir=pathlib.Path(out_dir),
                                   custom_op_library_path=pathlib.Path(custom_op_library) if custom_op_library
                                   else None, optimization_styles=[OptimizationStyle.Fixed])
        written.append(os.path.splitext(path)[0] + ".ort")
    return written


# ----------------------------------------------------------------------------------------------- eval repair

def repair_eval_file(path: str) -> list:
    """repair_eval_model on a file, rewritten atomically (only when something changed); returns its notes."""
    model = onnx.load(path, load_external_data=False)
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


# --------------------------------------------------------------------------------------------- training repair

def repair_training_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy of an ORT training model whose pooling gradients run with symbolic dims.

    onnxruntime's CPU MaxPoolGrad and AveragePoolGrad take dX's shape from the graph when the session is built
    (pool_gradient_op.h, InferOutputShapes), so with a symbolic batch or image size they read the wrong shape
    (onnxruntime 1.19: a segmentation fault). MaxPoolGrad(dY, Indices) is rewritten into standard ops: the
    forward MaxPool's Indices are flat indices into X, so dX = Reshape(ScatterElements(zeros(Size(X)),
    Indices, dY, reduction="add"), Shape(X)), summed in a fixed order (overlapping windows add up as in
    onnxruntime's kernel). AveragePoolGrad with symbolic dims is refused. Static shapes keep the native kernels.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    static = {v.name for v in out.graph.value_info if _is_static(v)}
    taken = _model_names(out)
    opset = next((o.version for o in out.opset_import if o.domain in ("", "ai.onnx")), 1)
    nodes, notes = [], []
    for node in out.graph.node:
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
        order = next((a.i for a in pool.attribute if a.name == "storage_order"), 0)
        require(order == 0, f"node {pool.name or 'MaxPool'}.storage_order", order,
                "must be 0 (row-major Indices) for the MaxPoolGrad rewrite")
        nodes.extend(_scatter_max_pool_grad(node, pool.input[0], _fresh(node.name or "MaxPoolGrad", taken), opset))
        notes.append(f"{node.name or node.op_type}: MaxPoolGrad with symbolic dims -> ScatterElements(add)")
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, notes


def _is_static(value_info) -> bool:
    dims = value_info.type.tensor_type.shape.dim
    return value_info.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims)


def _scatter_max_pool_grad(node, x: str, prefix: str, opset: int) -> list:
    em = Emitter(prefix, opset, np.float32)
    flat = em.const([-1], "flat", np.int64)
    shape = em.node("Shape", [x], "xshape")
    size = em.node("Reshape", [em.node("Size", [x], "xsize"), flat], "size")      # a scalar made a [1] shape
    zeros = em.node("ConstantOfShape", [size], "zeros", value=helper.make_tensor("", onnx.TensorProto.FLOAT, [1],
                                                                                 [0.0]))
    indices, grads = em.node("Reshape", [node.input[1], flat], "indices"), em.node("Reshape", [node.input[0], flat],
                                                                                     "dy")
    summed = em.node("ScatterElements", [zeros, indices, grads], "scatter", axis=0, reduction="add")
    em.nodes.append(helper.make_node("Reshape", [summed, shape], [node.output[0]]))
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in em.inits] + em.nodes
    for i, n in enumerate(nodes):            # named after the node they replace, as onnx_ops.lower names its own
        n.name = f"{node.name or 'MaxPoolGrad'}/lowered/{n.op_type}_{i}"
    return nodes


# ------------------------------------------------------------------------------------ per-pixel cross-entropy

def __getattr__(name):
    if name == "PixelCrossEntropyLoss":     # built on first use: onnxblock needs onnxruntime.training (and torch)
        return _pixel_cross_entropy_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _pixel_cross_entropy_class():
    from onnxruntime.training import onnxblock
    from onnxruntime.training.onnxblock import _graph_utils

    class PixelCrossEntropyLoss(onnxblock.Block):
        """Softmax cross-entropy over the class axis 1 of (N, C, d1, ...) scores, labels (N, d1, ...) int64.

        torch.nn.functional.cross_entropy(scores, labels) for segmentation. ORT's CrossEntropyLoss block takes
        the last axis as the class axis when it declares the labels input, so for (N, C, H, W) scores it
        declares (N, C, H) labels and onnxruntime refuses (N, H, W) ones; this block declares (N, H, W).
        weight (one float per class), reduction and ignore_index mean what they mean in torch.
        """

        def __init__(self, weight=None, reduction: str = "mean", ignore_index: int | None = None):
            super().__init__()
            require(reduction in ("mean", "sum", "none"), "reduction", reduction,
                    "must be one of ['mean', 'sum', 'none']")
            self._weight, self._reduction, self._ignore_index = weight, reduction, ignore_index

        def build(self, scores_name: str, labels_name: str = "labels"):
            scores = _graph_utils.get_output_from_output_name(self.base, scores_name)
            rank = len(scores.type.tensor_type.shape.dim)
            require(rank >= 2, f"{scores_name}.rank", rank, "per-pixel cross-entropy needs (N, C, ...) scores")
            if not _graph_utils.node_arg_exists(self.base, labels_name):
                labels = copy.deepcopy(scores)
                labels.name = labels_name
                labels.type.tensor_type.elem_type = onnx.TensorProto.INT64
                del labels.type.tensor_type.shape.dim[1]          # the class axis
                self.base.graph.input.append(labels)
            inputs = [scores_name, labels_name]
            if self._weight is not None:
                inputs.append(_graph_utils.generate_graph_name("pixel_celoss.weight"))
                self.base.graph.initializer.append(onnx.numpy_helper.from_array(
                    np.asarray(self._weight, np.float32), inputs[-1]))
            loss = _graph_utils.generate_graph_name("loss")
            self.base.graph.node.append(helper.make_node(
                "SoftmaxCrossEntropyLoss", inputs, [loss, _graph_utils.generate_graph_name("log_prob")],
                reduction=self._reduction, ignore_index=self._ignore_index,
                name=_graph_utils.generate_graph_name("SoftmaxCrossEntropyLoss")))
            return loss

    return PixelCrossEntropyLoss


__all__ = ["ArtifactReport", "LOSSES", "OPTIMIZERS", "PixelCrossEntropyLoss", "generate_cpu_artifacts",
           "prepare_artifacts", "repair_eval_file", "repair_eval_model", "repair_training_model"]
