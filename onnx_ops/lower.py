"""Rewrite com.microsoft ResizeGrad nodes into standard ai.onnx ops.

Each node becomes the spelling that a small cost model estimates fastest among those the shared
gradient taps (dml_desc.weights) prove equal to it (onnx_ops.forms, onnx_ops.bridge): per-axis
band / dense MatMuls (tiles of X reading windows of dY; the general form), the kron form for
integer factors, a depthwise Conv or ConvTranspose, one onnxruntime Resize where the gradient is
another Resize, or per-axis Gather + Mul + ReduceSum. The sums run in a fixed order, so results
are deterministic.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import onnx
from onnx import helper

from dml_desc.errors import did_you_mean, require

from .lowering.calibration import choices as calibrated_choices
from .lowering.walk import all_nodes, is_resize_grad, scoped_graphs
from .model import LOWERING_OPSET
from .lowering.files import lower_model_file
from .lowering.emit import PREFER_RESIZE, Rewrite, lower_node, native_cuda_fits  # noqa: F401 (public here)
from .lowering.plan import graph_info
from .lowering.validate import check_text, readable, save_atomic

RUN_TIME_SEMANTICS = "onnxruntime at run time"


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


def lower(model: onnx.ModelProto, providers: Sequence[str] = ("CPUExecutionProvider",),
          semantics: str | None = None, calibration=None, machine: str | None = None) -> Lowered:
    """A copy of `model` with every ResizeGrad node lowered (or kept where native CUDA fits): in the main
    graph, in If / Loop / Scan bodies and in model-local functions. The report lists every one.
    `calibration` (a cache path from `dml-desc calibrate`, or {signature: form}) lets measured choices replace the
    rule for shape-generic nodes, read for `machine` (default: this CPU and onnxruntime;
    onnx_ops.lowering.calibration)."""
    require(isinstance(model, onnx.ModelProto), "model", type(model).__name__, "must be an onnx.ModelProto")
    providers = check_providers(providers)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if not _holds_resize_grad(out):
        return Lowered(out, [])
    if not any(o.domain in ("", "ai.onnx") for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("", LOWERING_OPSET))     # the standard ops need an ai.onnx import
    check_text(out)
    choices = calibrated_choices(calibration, machine)   # {} by default: the output depends on the model alone
    info = readable("model", graph_info, out, semantics, choices)   # a corrupt model is a DescError, not onnx's own
    report: list[Rewrite] = []
    _lower_graph(out.graph, info, providers, report, "")
    for function in out.functions:
        _lower_function(function, out, info, providers, report)
    for rewrite in report:      # the dynamic path runs the executing onnxruntime's own Resize: its tie rule
        rewrite.semantics = RUN_TIME_SEMANTICS if rewrite.dynamic else info.semantics
    return Lowered(out, report)


def lower_file(src: str, dst: str, providers: Sequence[str] = ("CPUExecutionProvider",),
               semantics: str | None = None, calibration=None) -> list[Rewrite]:
    """Lower a model file; `dst` may equal `src`. Written atomically, after onnx's full check and an onnxruntime
    load; external data is kept, and read relative to the model file (not the working directory), only from
    regular files inside the model's folder (onnx_ops.lowering.validate.check_external_data, for every tensor anywhere
    in the model). Into the same folder, every reference to the input's data files is kept. Into another folder, the
    external tensors are copied into one new file `<dst name>.data` beside `dst` (a name the project chooses,
    never the model), staged and checked with the model before either replaces anything. `dst` and that file may
    not be a file the input reads. A refusal never shows values read from external data. An
    onnxruntime training or eval graph also gets prepare_artifacts's repairs (training.repair.repair_for_lowering:
    MaxPoolGrad with symbolic dims, eval BatchNorm), listed in the report's `repairs`. Raises only DescError
    subclasses (FileError for the file system)."""
    check_providers(providers)
    return lower_model_file(lower, src, dst, providers, semantics, calibration)


def _holds_resize_grad(model: onnx.ModelProto) -> bool:
    return any(is_resize_grad(n) for n in all_nodes(model))


def _lower_graph(graph, info, providers, report: list, scope: str) -> None:
    """Lower the ResizeGrad nodes of one graph and of its subgraphs in place (the bodies first)."""
    for g, where in scoped_graphs(graph, scope, children_first=True):
        _rewrite_nodes(g.node, info, providers, report, where,
                       lambda node, k, inits, g=g: g.initializer.extend(inits))


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
        new, inits, rewrite = lower_node(node, k, info, providers, scope)
        out.extend(place_constants(node, k, inits) or [])
        out.extend(new)
        report.append(rewrite)
    del nodes[:]
    nodes.extend(out)
