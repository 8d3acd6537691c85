"""ORT training artifacts that run on the CPU: generate_artifacts, lower every ResizeGrad, repair the models.

onnxruntime.training imports torch, so it is imported only when used (`PixelCrossEntropyLoss` too). The repairs
live in onnx_ops.training.repair, the export checks and op decompositions in onnx_ops.training.export.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from dml_desc.errors import DescError, require

from ..lower import lower
from . import inputs as training_input
from .inputs import external_bytes, generate_from_path, read_model, with_external_data
from .export import (check_torch_export, decompose_for_gradients, missing_parameters_hint,
                              no_gradient_error)
from .repair import (drop_unused_initializers, repair_eval_file, repair_eval_model,
                              repair_optimizer_model, repair_training_model, restamp)
from ..lowering.validate import load_model, save_atomic

LOSSES = ("MSELoss", "CrossEntropyLoss", "BCEWithLogitsLoss", "L1Loss")
OPTIMIZERS = ("SGD", "AdamW", "TorchAdamW")
# torch.optim.AdamW's defaults, as AdamWOptimizer attributes; adam_mode 0 is onnxruntime's PyTorch form
# (decoupled weight decay p -= lr * wd * p, then the bias-corrected step), 1 (onnxblock's AdamW) the HuggingFace one
TORCH_ADAMW = {"alpha": 0.9, "beta": 0.999, "epsilon": 1e-8, "weight_decay": 1e-2, "correct_bias": 1,
               "adam_mode": 0}
MODEL_FILES = ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx")
# the default `semantics` of the training entry points: the installed onnxruntime's (the training build that will
# load and train the artifacts), resolved when called
INSTALLED = "installed"


@dataclass
class ArtifactReport:
    """What generate_cpu_artifacts wrote and changed."""
    rewrites: list                                       # onnx_ops.lower.Rewrite, one per ResizeGrad
    eval_repairs: list = field(default_factory=list)     # one line per repaired eval node
    training_repairs: list = field(default_factory=list)  # one line per rewritten gradient node (MaxPoolGrad, ...)
    files: list = field(default_factory=list)            # the model files written, in out_dir
    decompositions: list = field(default_factory=list)   # one line per op rewritten before the gradient graph
    restamped: list = field(default_factory=list)        # IR / opset lowered for the training build
    dropped: list = field(default_factory=list)          # unused initializers removed from the written graphs
    attention: list = field(default_factory=list)        # what the user should know (frozen BatchNorm statistics)
    statistics: list = field(default_factory=list)       # BatchNorm running statistics added to frozen_params
    semantics: str = ""                                   # the Resize semantics the ResizeGrad lowering followed

    def __str__(self):
        lines = [f"{len(self.rewrites)} ResizeGrad node(s) lowered"] + [f"  {r}" for r in self.rewrites]
        if self.decompositions:
            lines += [f"model: {len(self.decompositions)} op(s) without a gradient decomposed"]
            lines += [f"  {d}" for d in self.decompositions]
        if self.training_repairs:
            lines += [f"training model: {len(self.training_repairs)} gradient op(s) rewritten "
                      "(MaxPoolGrad, ConvTransposeGrad)"]
            lines += [f"  {t}" for t in self.training_repairs]
        lines += [f"eval model: {len(self.eval_repairs)} node(s) repaired"] + [f"  {e}" for e in self.eval_repairs]
        if self.statistics:
            lines += [f"BatchNorm running statistics kept in the checkpoint (updated by each training step): "
                      f"{self.statistics}"]
        lines += [f"restamped: {r}" for r in self.restamped]
        lines += [f"attention: {a}" for a in self.attention]
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
                           semantics: str | None = INSTALLED, adamw: dict | None = None) -> ArtifactReport:
    """onnxruntime.training.artifacts.generate_artifacts, then make the artifacts load and train on the CPU.

    model: an onnx.ModelProto or a path, with or without external data (read from the model file's folder);
        works from any working folder and writes nothing outside out_dir (see docs/training.md).
    requires_grad / frozen_params: parameter (initializer) names that train / stay fixed.
    loss: a LossType, its name ("MSELoss", "CrossEntropyLoss", "BCEWithLogitsLoss", "L1Loss"), an onnxblock
        loss Block (e.g. `PixelCrossEntropyLoss()` for per-pixel segmentation labels) or None (no loss node).
    optimizer: an OptimType, its name, an onnxblock optimizer Block, or None (no optimizer model). "SGD" is
        torch.optim.SGD(lr); "TorchAdamW" is torch.optim.AdamW with its defaults (betas (0.9, 0.999), eps 1e-8,
        weight_decay 1e-2); "AdamW" is onnxruntime's (HuggingFace form, eps 1e-6, weight decay 0).
    adamw: with "TorchAdamW", torch.optim.AdamW arguments to change: {"betas": (b1, b2), "eps": e,
        "weight_decay": w} (the learning rate is set at run time: Optimizer.set_learning_rate).
    additional_output_names, loss_input_names, prefix, custom_op_library, nominal_checkpoint: passed through.
    semantics: which runtime's Resize semantics the lowered ResizeGrad follows (onnx_ops.lower). The default,
        "installed" (None means the same), is the installed onnxruntime's: the training build that trains these
        artifacts. One of "ort-1.19", "ort-1.27", "onnx-spec" overrides it.
    ort_format: also write .ort files. They are converted from the lowered and repaired models, because an .ort
        file cannot be lowered after the fact (and a graph with ResizeGrad cannot be converted for the CPU).

    Before the gradient graph is built, ops without a gradient in the training build (HardSwish, HardSigmoid,
    ...) are decomposed (export.decompose_for_gradients). Afterwards prepare_artifacts lowers every
    ResizeGrad, rewrites MaxPoolGrad, repairs the eval model, drops unused initializers and restamps IR / opset.
    Returns an ArtifactReport.
    """
    from ..run import onnxruntime_training
    artifacts = onnxruntime_training("artifacts")      # a DescError naming the extra when it is missing
    semantics = training_semantics(semantics)
    proto, folder = read_model(model)
    _check_params(proto, requires_grad, frozen_params)
    loss = _pick(loss, artifacts.LossType, LOSSES, "loss")
    torch_adamw = _torch_adamw(optimizer, adamw)
    optimizer = _pick("AdamW" if torch_adamw else optimizer, artifacts.OptimType, OPTIMIZERS, "optimizer")
    frozen_params, statistics = _with_running_statistics(proto, requires_grad, frozen_params)
    source = proto
    proto, decomposed = decompose_for_gradients(proto)
    proto = _restamped_copy(proto, "model")
    out_dir = os.path.abspath(out_dir)
    require(not os.path.exists(out_dir) or os.path.isdir(out_dir), "out_dir", out_dir, "must be a folder")
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.", suffix=".partial",
                               dir=os.path.dirname(out_dir))
    try:
        report = _generate(artifacts, proto, source, folder, staging, semantics, torch_adamw, ort_format, dict(
            requires_grad=requires_grad, frozen_params=frozen_params, loss=loss, optimizer=optimizer,
            artifact_directory=staging, prefix=prefix, ort_format=False, custom_op_library=custom_op_library,
            additional_output_names=additional_output_names, nominal_checkpoint=nominal_checkpoint,
            loss_input_names=loss_input_names))
        check_artifacts_load(staging, prefix, custom_op_library, nominal_checkpoint, ort_format)
        report.files = _move_into(staging, out_dir, report.files)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report.decompositions = decomposed
    report.statistics = statistics
    return report


def _generate(artifacts, proto, source, folder, staging, semantics, torch_adamw, ort_format,
              kwargs) -> ArtifactReport:
    """onnxruntime's generate_artifacts into `staging`, then the CPU repairs (prepare_artifacts). `source` is the
    model before decompose_for_gradients (errors name its nodes)."""
    with quiet_onnxruntime(), one_line_gradient_errors(source):
        if external_bytes(proto) >= training_input.PROTO_LIMIT:
            generate_from_path(artifacts, proto, folder, kwargs)
        else:
            artifacts.generate_artifacts(with_external_data(proto, folder), **kwargs)
    prefix = kwargs["prefix"]
    if torch_adamw:
        _set_adamw(os.path.join(staging, prefix + "optimizer_model.onnx"), torch_adamw)
    report = prepare_artifacts(staging, prefix, semantics)
    if ort_format:
        report.files += _to_ort(report.files, staging, kwargs["custom_op_library"])
    return report


def check_artifacts_load(folder: str, prefix: str = "", custom_op_library: str | None = None,
                         nominal_checkpoint: bool = False, ort_format: bool = False) -> None:
    """Every model of an artifact folder loads in onnxruntime's training Module (training and eval models) and
    Optimizer, the .ort forms too; a DescError naming the file and onnxruntime's reason otherwise. A nominal
    checkpoint holds no parameter data, so only the models' sessions are checked against it."""
    import onnxruntime
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    options = None
    if custom_op_library:
        options = onnxruntime.SessionOptions()
        options.register_custom_ops_library(custom_op_library)
    for ext in (".onnx", ".ort") if ort_format else (".onnx",):
        path = {m: os.path.join(folder, f"{prefix}{m}_model{ext}") for m in ("training", "eval", "optimizer")}
        where = path["training"]
        try:
            state = CheckpointState.load_checkpoint(os.path.join(folder, prefix + "checkpoint"))
            with quiet_onnxruntime(drop=r"\[W:onnxruntime:"):       # the user's own session shows its warnings
                module = Module(path["training"], state, path["eval"] if os.path.isfile(path["eval"]) else None,
                                device="cpu", session_options=options)
                if os.path.isfile(path["optimizer"]):
                    where = path["optimizer"]
                    Optimizer(path["optimizer"], module)
        except RuntimeError as e:
            hint = ("; onnxruntime's CPU training build trains float32 models (its gradient accumulators, Conv and "
                    "MatMul gradients have no float64 kernel): export the model in float32") \
                if "(1) node" in str(e) and "Could not find an implementation" in str(e) and \
                _holds_float64(path["training"]) else ""
            raise DescError("artifacts", os.path.basename(where), "does not load in onnxruntime's training Module / "
                            f"Optimizer: {_ort_reason(e)}{hint}; nothing was written to out_dir") from None


def _holds_float64(path: str) -> bool:
    model = onnx.load(path, load_external_data=False)
    return any(t.data_type == onnx.TensorProto.DOUBLE for t in model.graph.initializer) or \
        any(v.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE for v in model.graph.input)


def _ort_reason(error: Exception) -> str:
    """The sentence of an onnxruntime error after its C++ location and status code."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    found = re.search(r"\[ONNXRuntimeError\] : \d+ : \w+ : (.*)", text)
    return (found.group(1) if found else text)[:300]


def _move_into(staging: str, out_dir: str, files: list) -> list:
    """Move every file of `staging` into out_dir (created if need be), each by one rename; returns `files` as
    paths in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(staging)):
        os.replace(os.path.join(staging, name), os.path.join(out_dir, name))
    return [os.path.join(out_dir, os.path.relpath(f, staging)) for f in files]


def prepare_artifacts(out_dir: str, prefix: str = "", semantics: str | None = INSTALLED) -> ArtifactReport:
    """Make an existing artifact folder (from generate_artifacts, ONNX files) train on the CPU training build:
    lower every ResizeGrad, rewrite MaxPoolGrad with symbolic dims (repair_training_model), repair the eval
    model, drop unused initializers and restamp IR <= 10 / opset <= 21 where the content allows (repair).
    Each file is rewritten atomically, only when something changed. semantics: as in generate_cpu_artifacts
    (default: the installed onnxruntime's)."""
    semantics = training_semantics(semantics)
    paths = {name: os.path.join(out_dir, prefix + name) for name in MODEL_FILES}
    require(os.path.isfile(paths["training_model.onnx"]), "out_dir", out_dir,
            f"must hold {prefix}training_model.onnx (an artifact folder from generate_artifacts)")
    report = ArtifactReport([], semantics=semantics)
    for name, path in paths.items():
        if not os.path.isfile(path):
            continue
        original = load_model(path)       # its external data checked to stay in the artifacts' folder
        model = original
        if name == "training_model.onnx":
            model, report.training_repairs = repair_training_model(model)
            model, rewrites = lower(model, semantics=semantics)
            report.rewrites = list(rewrites)
            report.attention += _frozen_statistics(model)
        elif name == "eval_model.onnx":
            model, report.eval_repairs = repair_eval_model(model)
        else:
            model, _ = repair_optimizer_model(model)
        if model is original:
            model = copy.deepcopy(original)
        report.dropped += [f"{prefix}{name}: {n}" for n in drop_unused_initializers(model)]
        report.restamped += restamp(model, prefix + name)
        if model != original:
            # checked against the file ORT wrote: onnx does not know ORT's training ops (MaxPoolGrad even sits
            # in ai.onnx)
            save_atomic(model, path, baseline=path)
        report.files.append(path)
    return report


def training_semantics(semantics: str | None) -> str:
    """The Resize semantics a training entry point lowers with: the installed onnxruntime's for "installed" or
    None (the runtime that trains), else the named one (checked)."""
    from dml_desc.conventions.onnx import check_semantics, installed_semantics
    return installed_semantics() if semantics in (None, INSTALLED) else check_semantics(semantics)


def _restamped_copy(proto, where):
    stamped = copy.deepcopy(proto)
    return stamped if restamp(stamped, where) else proto


@contextlib.contextmanager
def quiet_onnxruntime(drop: str = r"\[[IV]:onnxruntime:"):
    """onnxruntime-training logs dozens of INFO lines (one per graph transformer) to the process's stderr while
    it builds the gradient graph, whatever the default logger severity: stderr goes to a temporary file for the
    duration, and only its other lines (those not matching `drop`: warnings, errors) are written back."""
    import sys
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught.read().decode(errors="replace").splitlines(keepends=True)
                    if not re.search(drop, line)]
            if kept:
                sys.stderr.write("".join(kept))


@contextlib.contextmanager
def one_line_gradient_errors(model=None):
    """onnxruntime's gradient-builder errors as one-line DescErrors (export.no_gradient_error), naming
    the nodes of `model` (the model as exported, before decompose_for_gradients) and their torch modules."""
    try:
        yield
    except RuntimeError as e:
        short = no_gradient_error(e, model)
        if short is None:
            raise
        raise short from None


def _frozen_statistics(training) -> list:
    """BatchNorm running statistics that are constants of the training graph (not in the checkpoint): training
    never updates them (torch does in train()), so the eval model after training still uses them."""
    constants = {t.name for t in training.graph.initializer}
    names = [s for n in training.graph.node if n.op_type in ("BatchNormInternal", "BatchNormalization")
             for s in n.input[3:5] if s in constants]
    if not names:
        return []
    return [f"BatchNorm running statistics {names[:4]}{' ...' if len(names) > 4 else ''} are constants of the "
            "training graph: they stay at their export values, so the eval model after training differs from "
            "torch's eval(); name them in frozen_params (generate_cpu_artifacts does so by default) to have "
            "each training step update them"]


def _with_running_statistics(model, requires_grad, frozen_params) -> tuple[list | None, list]:
    """frozen_params plus the BatchNorm running statistics it lacks (initializers that no list names): in the
    checkpoint, onnxruntime's training BatchNorm updates them at every step (momentum as exported), as torch's
    train() does; as constants they would stay at their export values."""
    constants = {t.name for t in model.graph.initializer}
    named = set(requires_grad or []) | set(frozen_params or [])
    added = [s for n in model.graph.node if n.op_type == "BatchNormalization" and n.domain in ("", "ai.onnx")
             for s in n.input[3:5] if s in constants and s not in named]
    added = list(dict.fromkeys(added))
    return (list(frozen_params or []) + added if added else frozen_params), added


def _torch_adamw(optimizer, options) -> dict | None:
    """The AdamWOptimizer attributes for "TorchAdamW" (None for any other optimizer)."""
    require(options is None or optimizer == "TorchAdamW", "adamw", options, 'applies to optimizer="TorchAdamW" only')
    if optimizer != "TorchAdamW":
        return None
    options = dict(options or {})
    unknown = sorted(set(options) - {"betas", "eps", "weight_decay"})
    require(not unknown, "adamw", unknown, "takes only betas, eps and weight_decay (torch.optim.AdamW's names)")
    attrs = dict(TORCH_ADAMW)
    if "betas" in options:
        attrs["alpha"], attrs["beta"] = (float(b) for b in options["betas"])
    attrs["epsilon"] = float(options.get("eps", attrs["epsilon"]))
    attrs["weight_decay"] = float(options.get("weight_decay", attrs["weight_decay"]))
    return attrs


def _set_adamw(path: str, attrs: dict) -> None:
    """Set the AdamWOptimizer node's attributes in the optimizer model onnxruntime wrote."""
    model = onnx.load(path)
    (node,) = [n for n in model.graph.node if n.op_type == "AdamWOptimizer"]
    kept = [a for a in node.attribute if a.name not in attrs]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(k, v) for k, v in attrs.items()])
    save_atomic(model, path, baseline=path)


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
        require(not missing, field_name, missing, missing_parameters_hint(model, missing))
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


# PixelCrossEntropyLoss comes from __getattr__ (built on first use), which ruff cannot see.
__all__ = ["ArtifactReport", "LOSSES", "OPTIMIZERS", "PixelCrossEntropyLoss", "check_torch_export",  # noqa: F822
           "decompose_for_gradients", "drop_unused_initializers", "generate_cpu_artifacts", "prepare_artifacts",
           "repair_eval_file", "repair_eval_model", "repair_training_model", "restamp"]
