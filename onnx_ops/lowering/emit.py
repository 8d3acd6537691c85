"""Emitting one ResizeGrad node's lowering: the static forms (the cost model's choice among the forms the taps
prove equal, onnx_ops.forms / onnx_ops.bridge), the shape-generic forms (onnx_ops.lowering.generic_forms) and the
dynamic path (onnx_ops.forms.dynamic), each named after the node, with the `Rewrite` saying what was done.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError, require

from .calibration import signature as calibration_signature
from ..forms import PREFER_RESIZE, Emitter, cast_wrapped, contract, is_symbolic  # noqa: F401 (PREFER_RESIZE: public here)
from ..forms.generic_emit import dims_of_x_checked
from ..forms.registry import GENERIC, RUN_TIME_WALK, RunTimeGradient, pick, ranked, scopes
from .generic_forms import generic_form
from .walk import fresh_prefix, graphs, subgraphs
from ..model import LOWERING_OPSET
from .plan import NP_OF, DynamicRead
from .validate import check_resize_grad, readable


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
    dynamic: bool = False    # taps computed at run time (onnx_ops.forms.dynamic)
    semantics: str = ""      # the ONNX semantics the taps follow (dml_desc.conventions.onnx.SEMANTICS)
    notes: tuple = ()        # where the taps follow onnxruntime rather than the ONNX formulas (docs/adjoint.md)
    signature: str = ""      # a shape-generic node's calibration key (onnx_ops.lowering.calibration.signature)
    candidates: tuple = ()   # the forms `dml-desc calibrate` measures for it (generic kinds and "general")

    def __str__(self):
        how = "kept native (CUDA)" if self.kept_native else ", ".join(f"axis {a}: {f}" for a, f in
                                                                       zip(self.axes, self.forms))
        return f"{self.scope}{self.node}: {self.mode}; {how}" + (f" [{'; '.join(self.notes)}]" if self.notes else "")


def lower_node(node, k: int, info, providers, scope: str):
    """(nodes, initializers, Rewrite) replacing one ResizeGrad (the k-th of its graph); every new node is named
    after it."""
    base, prefix = node_prefix(node, k, info.taken)
    try:
        check_resize_grad(node, info.types, info.opset, info.consts)    # arity, types, outputs (lowering.validate)
        read = readable(f"node {node.name or node.op_type}", info.read, node)
    except DescError as e:            # name where the node is: a subgraph or a function
        raise DescError(f"{scope}{e.field}", e.value, e.rule) from None
    if isinstance(read, DynamicRead):
        require(info.semantics != "onnx-spec" or read.plan.attrs.get("mode", "nearest") != "nearest",
                f"{scope}node {node.name or node.op_type}.semantics", info.semantics,
                "cannot be followed with shapes or scales known only at run time: the dynamic path uses the "
                "executing onnxruntime's Resize and so its nearest tie rule")
        g, sig = _run_time_gradient(node, read, info)
        new, inits, forms = _emit_run_time(node, g, read.elem, prefix, info.choices.get(sig))
        rewrite = Rewrite(node.name, read.plan.attrs.get("mode", "nearest"), tuple(a for a, _ in read.plan.axes),
                          forms, scope=scope, dynamic=True, signature=sig,
                          candidates=ranked(RUN_TIME_WALK, g) if sig else ())
    else:
        r, res, elem = read
        if "CUDAExecutionProvider" in providers and native_cuda_fits(r, res):
            return [node], [], Rewrite(node.name, res.mode.value, res.resized_axes, (), kept_native=True,
                                       scope=scope)
        new, inits, forms = emit_gradient(node, res, elem, prefix, info.opset, info.choices)
        rewrite = Rewrite(node.name, res.mode.value, res.resized_axes, forms, scope=scope, notes=tuple(res.notes))
    name_after(new, base)
    return new, inits, rewrite


def native_cuda_fits(r: onnx_conv.OnnxResize, res) -> bool:
    """onnxruntime's CUDA ResizeGrad: linear, 4-D, half_pixel or align_corners, no antialias or axes."""
    ctm = r.attr("coordinate_transformation_mode", "half_pixel")
    return (res.mode.value == "linear" and len(res.axes) == 4 and ctm in ("half_pixel", "align_corners")
            and not r.attr("antialias", 0) and r.attr("axes") is None
            and r.attr("keep_aspect_ratio_policy", "stretch") == "stretch" and set(res.resized_axes) <= {2, 3}
            and not any(is_symbolic(n) for n in res.in_shape + res.out_shape))


def _run_time_gradient(node, read, info) -> tuple:
    """(RunTimeGradient, calibration signature) of a node with run-time lengths: its form proven for every length
    where its scales are constant (onnx_ops.lowering.generic_forms: float / float16 / double), the signature where
    a shape-generic spelling applies, else ""."""
    acc = np.float64 if read.elem == TensorProto.DOUBLE else np.float32
    form = None
    if read.elem in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
        dims = info.dims(node.input[1]) or info.dims(node.input[0]) or [None] * read.plan.rank
        form = generic_form(read.plan.attrs, read.plan.axes, info.const(node, 3)[0], dims, info.opset)
    g = RunTimeGradient(read.plan, form, node.input[1], node.input[0], info.opset, acc)
    if not any(scope.applies(g) is not None for scope in scopes((GENERIC,))):
        return g, ""
    assert form is not None                 # a shape-generic scope applies only to a form
    factors = {a: f.factor for a, f in form.axes.items()}
    return g, calibration_signature(read.plan.attrs, factors, form.rank, form.channels, info.opset, read.elem)


def _emit_run_time(node, g: RunTimeGradient, elem, prefix: str, named: str | None):
    """(nodes, initializers, forms) of a node with run-time lengths in the scope `named` (a calibration) where it
    applies, else the rule's: a shape-generic spelling or the run-time path; dX written by the last node."""
    em = Emitter(prefix, g.opset, g.acc)
    scope, proof = pick(RUN_TIME_WALK, g, named)
    forms = cast_wrapped(em, node, elem, lambda dy: scope.emit(em, dy, g, proof))
    return em.nodes, em.inits, forms


def emit_gradient(node, res, elem: int, prefix: str, opset: int = LOWERING_OPSET,
                  choices: dict | None = None):
    """(nodes, initializers, forms) computing `node`'s dX from dY for a static map `res`: the fastest form the
    taps prove equal. Every lowered static gradient comes from here: `lower` / `lower_file` for a model's nodes,
    and onnx_ops.build.build_lowered for `build --lowered`, `dml-desc run` and the conformance suite."""
    em = Emitter(prefix, opset, NP_OF[elem], dims_from=node.input[0])   # run-time dims read from dY
    forms = cast_wrapped(em, node, elem,
                         lambda dy: contract(em, _symbolic_dims_checked(em, dy, node.input[1], res), res, choices))
    return em.nodes, em.inits, forms


def _symbolic_dims_checked(em: Emitter, dy: str, x: str, res) -> str:
    """dY where its dims on X's symbolic axes (a static map never resizes them: a batch, channels) are X's, else a
    Reshape onnxruntime refuses: the static forms read those dims from dY, so a dY of another batch gave a dX of
    that batch. No node where every dim is known (onnxruntime checks the inputs' shapes)."""
    known = [not is_symbolic(n) for n in res.in_shape]
    return dy if all(known) else dims_of_x_checked(em, dy, x, known)


def node_prefix(node, k: int, taken: set) -> tuple[str, str]:
    """(base, prefix) for the lowering of the k-th node of a graph: its nodes are named `<base>/lowered/...`,
    its tensors start with the fresh `prefix` (reserved in `taken`)."""
    base = node.name or f"ResizeGrad_{k}"
    return base, fresh_prefix(f"{base}_{k}" if node.name else base, taken)


def name_after(nodes: list, base: str) -> None:
    """Name each unnamed new node after the ResizeGrad it replaces: `<base>/lowered/<op>_<i>`; the nodes of an
    `If` branch after their `If`: `<If name>/<op>_<j>`."""
    for i, n in enumerate(nodes):
        n.name = n.name or f"{base}/lowered/{n.op_type}_{i}"
        for j, inner in enumerate(m for g in subgraphs(n) for sub in graphs(g) for m in sub.node):
            inner.name = inner.name or f"{n.name}/{inner.op_type}_{j}"
