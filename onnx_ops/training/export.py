"""What a torch export brings into training: ops the training build cannot differentiate, rewritten into ops it
can (before the gradient graph is built), and export-time transformations that change training semantics.

- decompose_for_gradients: HardSwish, HardSigmoid, Softplus, Mish, Elu, Selu, Celu, Softsign, PRelu and
  ThresholdedRelu (onnxruntime-training 1.19.2 registers no gradient for them; probed one op at a time) become
  the standard formulas in ops that have gradients (Clip, Relu, Exp, Log, Abs, Tanh, Where, Min, Mul, Div, ...).
  CastLike (none either; torch's dynamo exporter writes one per bias-free Conv, like an activation) becomes a
  Cast to the type it reads; Sign comparisons and Where (a zero gradient). Gelu(approximate="tanh") becomes
  torch's formula (onnxruntime's gradient is the exact GELU's); LayerNormalization and Dropout get the optional
  outputs onnxruntime's gradient reads, which torch's exporter leaves out.
- missing_parameters_hint: why parameter names are missing from a torch export (BatchNorm folded by the
  dynamo exporter's optimizer) and how to export for training.
- check_torch_export: every trainable parameter, BatchNorm buffer and Dropout of a torch module is in the export.
- no_gradient_error: onnxruntime's 600-character "gradient builder has not been registered" as one line naming
  the torch module (torch_origin: the exporter's node metadata) and what to do; "Cannot compute the partial
  derivative" as one line naming the parameter (and a nearest grid_sample it reaches the loss through).
"""
from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dml_desc.errors import DescError

from ..lowering.walk import fresh_prefix, model_names
from .vision import VISION_DECOMPOSITIONS, WHY as VISION_WHY

NP = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.DOUBLE: np.float64}
TORCH_EXPORT_FIX = ("export for training with torch.onnx.export(model.train(), ..., optimize=False): the dynamo "
                    "exporter's optimizer (optimize=True, the default) folds BatchNorm into the convolution and "
                    "drops its weight, bias and running statistics")


def _attr(node, name, default):
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


class _Builder:
    """Emits the nodes of one decomposition, with constants in the element type of the node's input (or `dtype`).
    `shapes` maps tensor names to their (declared or inferred) dims: ints, or None where symbolic; `opset` is the
    model's ai.onnx opset."""

    nodes: list[onnx.NodeProto]
    like: int       # the element type a CastLike casts to: set by the caller for a CastLike node

    def __init__(self, node, prefix: str, dtype, shapes=None, opset: int = 17):
        self.node, self.prefix, self.dtype, self.nodes, self.k = node, prefix, dtype, [], 0
        self.shapes, self.opset = shapes or {}, opset

    def _name(self, what):
        self.k += 1
        return f"{self.prefix}_{what}{self.k}"

    def c(self, value, dtype=None) -> str:
        name = self._name("c")
        self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.asarray(value, dtype or self.dtype), name)))
        return name

    def i64(self, value) -> str:
        return self.c(value, np.int64)

    def op(self, op_type, *inputs, out=None, **attrs) -> str:
        name = out or self._name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], **attrs))
        return name


def _relu6_over_6(b, x):        # torch's hardsigmoid: relu6(x + 3) / 6, as torch computes it
    return b.op("Div", b.op("Clip", b.op("Add", x, b.c(3.0)), b.c(0.0), b.c(6.0)), b.c(6.0))


def _hard_sigmoid(b, x, y):
    alpha, beta = _attr(b.node, "alpha", 0.2), _attr(b.node, "beta", 0.5)
    if np.float32(alpha) == np.float32(1 / 6) and beta == 0.5:        # torch's hardsigmoid, its own formula
        return b.op("Identity", _relu6_over_6(b, x), out=y)
    return b.op("Clip", b.op("Add", b.op("Mul", x, b.c(alpha)), b.c(beta)), b.c(0.0), b.c(1.0), out=y)


def _hard_swish(b, x, y):       # torch: x * relu6(x + 3) / 6
    return b.op("Div", b.op("Mul", x, b.op("Clip", b.op("Add", x, b.c(3.0)), b.c(0.0), b.c(6.0))), b.c(6.0), out=y)


def _softplus(b, x, y=None):
    """log(1 + exp(x)) = relu(x) + log1p(exp(-|x|)): no overflow for large x, and log1p(u) as Goldberg's
    log(w) * u / (w - 1) with w = 1 + u (u where w rounds to 1), accurate where log(1 + u) is not (x << 0)."""
    u = b.op("Exp", b.op("Neg", b.op("Abs", x)))
    w = b.op("Add", b.c(1.0), u)
    d = b.op("Sub", w, b.c(1.0))                     # exact: w is in [1, 2]
    tiny = b.op("Equal", d, b.c(0.0))
    safe = b.op("Where", tiny, b.c(1.0), d)           # no 0/0 even in the branch not taken (its gradient too)
    log1p = b.op("Where", tiny, u, b.op("Div", b.op("Mul", b.op("Log", w), u), safe))
    return b.op("Add", b.op("Relu", x), log1p, out=y)


def _mish(b, x, y):             # x * tanh(softplus(x))
    return b.op("Mul", x, b.op("Tanh", _softplus(b, x)), out=y)


def _elu_like(b, x, y, alpha, scale_in=1.0, gamma=None):
    """x > 0 ? x : alpha * (exp(x * scale_in) - 1), times gamma; exp reads min(x, 0), so the branch not taken
    never overflows (an inf there would make the gradient NaN)."""
    neg = b.op("Exp", b.op("Mul", b.op("Min", x, b.c(0.0)), b.c(scale_in)))
    out = b.op("Where", b.op("Greater", x, b.c(0.0)), x, b.op("Mul", b.op("Sub", neg, b.c(1.0)), b.c(alpha)))
    return b.op("Mul", out, b.c(gamma), out=y) if gamma is not None else b.op("Identity", out, out=y)


def _elu(b, x, y):
    return _elu_like(b, x, y, _attr(b.node, "alpha", 1.0))


def _selu(b, x, y):
    return _elu_like(b, x, y, _attr(b.node, "alpha", 1.67326319217681884765625),
                     gamma=_attr(b.node, "gamma", 1.05070102214813232421875))


def _celu(b, x, y):
    alpha = _attr(b.node, "alpha", 1.0)
    return _elu_like(b, x, y, alpha, scale_in=1.0 / alpha)


def _softsign(b, x, y):         # x / (1 + |x|)
    return b.op("Div", x, b.op("Add", b.c(1.0), b.op("Abs", x)), out=y)


def _prelu(b, x, y):            # relu(x) - slope * relu(-x)
    slope = b.node.input[1]
    return b.op("Sub", b.op("Relu", x), b.op("Mul", slope, b.op("Relu", b.op("Neg", x))), out=y)


def _thresholded_relu(b, x, y):
    return b.op("Where", b.op("Greater", x, b.c(_attr(b.node, "alpha", 1.0))), x, b.c(0.0), out=y)


def _cast_like(b, x, y):        # the type of `like` is known here: a Cast, which has a gradient
    return b.op("Cast", x, out=y, to=b.like)


def _gelu(b, x, y):
    """approximate="tanh": torch's 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))); onnxruntime's
    gradient of Gelu is the exact (erf) GELU's whatever `approximate` says (2e-4 off). "none" stays."""
    if _attr(b.node, "approximate", b"none") in (b"none", "none"):
        return None
    inner = b.op("Mul", b.op("Add", x, b.op("Mul", b.op("Mul", b.op("Mul", x, x), x), b.c(0.044715))),
                 b.c(np.sqrt(2.0 / np.pi)))
    return b.op("Mul", b.op("Mul", x, b.c(0.5)), b.op("Add", b.c(1.0), b.op("Tanh", inner)), out=y)


def _sign(b, x, y):
    """1, -1 or 0 (NaN stays NaN) through Where and comparisons: the gradient is zero, as torch's sign."""
    sign = b.op("Where", b.op("Greater", x, b.c(0.0)), b.c(1.0),
                b.op("Where", b.op("Less", x, b.c(0.0)), b.c(-1.0), b.c(0.0)))
    return b.op("Where", b.op("IsNaN", x), x, sign, out=y)


def _with_saved_outputs(count):
    """The node itself with its first `count` outputs named: onnxruntime's gradient reads the optional ones the
    forward saves (LayerNormalization's Mean and InvStdDev, Dropout's mask), which torch's exporter leaves out."""
    def rewrite(b, x, y):
        outputs = list(b.node.output) + [""] * (count - len(b.node.output))
        if all(outputs[:count]):
            return None
        node = onnx.NodeProto()
        node.CopyFrom(b.node)
        del node.output[:]
        node.output.extend(o or b._name("saved") for o in outputs)
        b.nodes.append(node)
        return y
    return rewrite


DECOMPOSITIONS = {"CastLike": _cast_like, "Sign": _sign, "Gelu": _gelu, "LayerNormalization": _with_saved_outputs(3),
                  "Dropout": _with_saved_outputs(2), "HardSwish": _hard_swish, "HardSigmoid": _hard_sigmoid,
                  "Softplus": _softplus, "Mish": _mish,
                  "Elu": _elu, "Selu": _selu, "Celu": _celu, "Softsign": _softsign, "PRelu": _prelu,
                  "ThresholdedRelu": _thresholded_relu, **VISION_DECOMPOSITIONS}


# why each is rewritten, where it is not "no gradient in onnxruntime-training"
WHY = {**VISION_WHY, "LayerNormalization": "onnxruntime's gradient reads its Mean and InvStdDev outputs",
       "Dropout": "onnxruntime's gradient reads its mask output",
       "Gelu": "onnxruntime's gradient is the exact GELU's, also for approximate='tanh'"}


def decompose_for_gradients(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy of `model` whose main-graph ops without a gradient in onnxruntime-training (DECOMPOSITIONS) are
    written as their standard formulas; one note per rewritten node. Initializers (and their external data
    references) are untouched. A node whose input element type is unknown or not float is refused."""
    if not any(n.op_type in DECOMPOSITIONS and n.domain in ("", "ai.onnx") for n in model.graph.node):
        return model, []
    out = onnx.ModelProto()
    out.CopyFrom(model)
    types, shapes = _elem_types(out)
    opset = next((o.version for o in out.opset_import if o.domain in ("", "ai.onnx")), 1)
    taken = model_names(out)
    nodes, notes = [], []
    for node in out.graph.node:
        if node.op_type not in DECOMPOSITIONS or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        where = f"node {node.name or node.op_type}"
        data = node.input[1] if node.op_type == "CastLike" else node.input[0]
        elem = types.get(data)
        if node.op_type == "CastLike":          # any known type: a Cast to it
            if not elem:
                raise DescError(f"{where}.target_type", data, "has no known element type, so the CastLike "
                                "cannot become a Cast (CastLike has no gradient in onnxruntime-training)")
        elif elem not in NP:
            raise DescError(f"{where}.X", data, f"has element type {elem} (unknown or not float): the "
                            f"{node.op_type} decomposition needs float16, float32 or float64")
        b = _Builder(node, fresh_prefix(node.name or node.op_type, taken), NP.get(elem, np.float32), shapes, opset)
        b.like = elem
        try:
            DECOMPOSITIONS[node.op_type](b, node.input[0], node.output[0])
        except DescError as e:
            raise DescError(e.field, e.value, e.rule + torch_origin(node, " (written for {})")) from None
        if not b.nodes:             # kept as it is (e.g. an AveragePool whose shapes are static)
            nodes.append(node)
            continue
        for i, n in enumerate(b.nodes):
            n.name = f"{node.name or node.op_type}/decomposed/{n.op_type}_{i}"
        nodes.extend(b.nodes)
        why = WHY.get(node.op_type, "no gradient in onnxruntime-training")
        ops = [n.op_type for n in b.nodes if n.op_type != "Constant"]
        spelled = " ".join(ops) if len(ops) <= 12 else f"{len(ops)} ops: {' '.join(dict.fromkeys(ops))}"
        notes.append(f"{node.name or node.op_type}: {node.op_type} ({why}) -> {spelled}")
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, notes


def _elem_types(model) -> tuple[dict, dict]:
    """Element type and dims (ints, None where symbolic) by tensor name, from the model and onnx's shape inference
    (no data needed)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:           # noqa: BLE001 - inference is a help here, the declared types still count
        inferred = model
    g = inferred.graph
    types = {t.name: t.data_type for t in g.initializer}
    shapes = {t.name: list(t.dims) for t in g.initializer}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
        if v.type.tensor_type.HasField("shape"):
            shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
    return types, shapes


def missing_parameters_hint(model: onnx.ModelProto, missing: list) -> str:
    """The rule for requires_grad / frozen_params names that are no initializer, with the likely export cause."""
    rule = "names no initializer of the model"
    if model.producer_name == "pytorch" and not any(n.op_type == "BatchNormalization" for n in model.graph.node):
        rule += ("; the model has no BatchNormalization: if the torch module has BatchNorm, it was folded "
                 f"at export. {TORCH_EXPORT_FIX}")
    return rule


def check_torch_export(module, model: onnx.ModelProto) -> list:
    """The names of `module`'s trainable parameters and BatchNorm buffers that the exported `model` lacks as
    initializers (empty when the export keeps everything training needs). Raises a DescError naming them and
    the fix when BatchNorm was folded (its parameters or running statistics are missing), or when the module's
    Dropout layers are missing from the export (exported for inference)."""
    names = {t.name for t in model.graph.initializer}
    wanted = [n for n, p in module.named_parameters() if p.requires_grad]
    wanted += [n for n, _ in module.named_buffers() if n.rsplit(".", 1)[-1] in ("running_mean", "running_var")]
    missing = [n for n in wanted if n not in names]
    if any(n.rsplit(".", 1)[-1] in ("running_mean", "running_var") for n in missing):
        raise DescError("model", missing[:6], f"lacks these parameters of the torch module: {TORCH_EXPORT_FIX}")
    dropouts = [n for n, m in module.named_modules() if type(m).__name__.startswith("Dropout") and m.p > 0]
    if dropouts and not any(n.op_type == "Dropout" for n in model.graph.node):
        raise DescError("model", dropouts[:6], "has no Dropout node though the torch module has these: it was "
                        "exported for inference (the module in eval(), or the legacy exporter's default "
                        "training=TrainingMode.EVAL); export with the module in train() (torch's default "
                        "exporter) or training=torch.onnx.TrainingMode.TRAINING")
    return missing


# what to write in the torch model instead of an op that has no gradient here (no_gradient_error)
WORKAROUNDS = {
    "ReduceMax": "AdaptiveMaxPool(1) and torch.amax / max over dims export as ReduceMax: pool with "
                 "AdaptiveAvgPool / mean, or export with static shapes and use F.max_pool2d(x, x.shape[-2:]) (a "
                 "MaxPool, which trains)",
    "GlobalMaxPool": "pool with AdaptiveAvgPool / mean, or export with static shapes and use "
                     "F.max_pool2d(x, x.shape[-2:]) (a MaxPool, which trains)",
}
DEFAULT_WORKAROUND = "write it in differentiable ops in the torch model, or freeze every parameter before it " \
                     "(frozen_params)"


def torch_origin(node, form: str = "{}") -> str:
    """The torch module a node of torch's default exporter came from, from the node's metadata: `form` filled
    with "torch module PATH (CLASS, aten.OP)", or "" where the node has no such metadata."""
    import ast
    meta = {p.key: p.value for p in node.metadata_props}
    try:
        classes = ast.literal_eval(meta.get("pkg.torch.onnx.class_hierarchy", "[]"))
        scopes = ast.literal_eval(meta.get("pkg.torch.onnx.name_scopes", "[]"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ""
    if not isinstance(classes, list) or not isinstance(scopes, list) or not classes:
        return ""
    calls = [c for c in classes if isinstance(c, str) and c.startswith(("aten.", "prims."))]
    modules = [c for c in classes if isinstance(c, str) and c not in calls]
    if not modules:
        return ""
    # each scope is the full path of a module (['', 'a', 'a.b', 'op']): the innermost module's is the path
    path = str(scopes[len(modules) - 1]) if 1 < len(modules) <= len(scopes) else "(the module exported)"
    what = modules[-1].rsplit(".", 1)[-1] + (f", {calls[-1]}" if calls else "")
    return form.format(f"torch module {path} ({what})")


def no_gradient_error(error: Exception, model: onnx.ModelProto | None = None):
    """onnxruntime's "gradient builder has not been registered: OP for node NAME" as a one-line DescError naming
    the torch module the node came from (its metadata in `model`) and what to do; for "Cannot compute the
    partial derivative for 'NAME'" one naming the parameter (and a nearest grid_sample it only reaches the loss
    through); None for any other error."""
    nodes = {n.name: n for n in model.graph.node} if model is not None else {}
    found = re.search(r"gradient builder has not been registered: (\w+) for node (\S*)", str(error))
    if found:
        op, name = found.groups()
        origin = torch_origin(nodes[name], ", from {}") if name in nodes else ""
        return DescError(f"node {name or op}", op, f"has no gradient in onnxruntime-training and no decomposition "
                         f"in dml-desc{origin}: {WORKAROUNDS.get(op, DEFAULT_WORKAROUND)}")
    found = re.search(r"Cannot compute the partial derivative for '([^']*)'", str(error))
    if found:
        return DescError("requires_grad", found.group(1), "does not reach the loss through ops with a gradient"
                         f"{_nearest_grid_hint(model, found.group(1))}: put it in frozen_params instead")
    return None


def _nearest_grid_hint(model, name: str) -> str:
    """Where `name` reaches the grid of a nearest GridSample (torch's grid_sample(mode='nearest')), why its
    gradient is nothing: nearest sampling has a zero gradient with respect to the grid, in torch too."""
    if model is None:
        return ""
    reached = {name}
    for n in model.graph.node:              # topological order: one pass finds everything downstream
        if reached & set(n.input):
            reached |= set(n.output)
    for n in model.graph.node:
        mode = _attr(n, "mode", b"")
        if n.op_type == "GridSample" and mode in (b"nearest", "nearest") and len(n.input) > 1 and \
                n.input[1] in reached:
            return (f"; its path to the loss is the grid of nearest grid_sample node {n.name or n.op_type}"
                    f"{torch_origin(n, ' ({})')}, whose gradient with respect to the grid is zero (in torch too; "
                    "sample with mode='bilinear' to train it)")
    return ""
