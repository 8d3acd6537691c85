"""Emission of the shape-generic forms (their proof: onnx_ops.lowering.generic_forms.GenericForm): one graph for every
length, per spelling, dY's shape checked first; the registry's generic scopes (onnx_ops.forms.registry) name them
("resize", "pool", "conv", "sepconv", "kronpairs", "block"). The convs and their edges (edge scaling, mirrors,
folds) are onnx_ops.forms.filter_conv's, shared with the static lowering."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import helper

from .cost import POOL_WINDOW
from .emitter import Emitter
from .filter_conv import dims, emit_filter_conv
from .kron_pairs import COLUMNS

if TYPE_CHECKING:
    from ..lowering.generic_forms import GenericForm


def shape_checked(emit):
    """The emitter `(em, dy, g, form) -> dX` of a spelling that reads dY after the shape check (_dy_checked):
    `emit(em, dy, x, form)`, `g` the node's run-time gradient (its X and dY tensors); zeros where a tensor is
    empty (zeros_where_empty)."""
    def checked(em: Emitter, dy: str, g, form: GenericForm) -> str:
        dy = _dy_checked(em, dy, g.x, form)
        return zeros_where_empty(em, em.node("Shape", [g.x], "xshape"), em.node("Shape", [dy], "dyshape"),
                                 lambda: emit(em, dy, g.x, form))
    return checked


def zeros_where_empty(em: Emitter, sx: str, sy: str, build, rank: int | None = None) -> str:
    """`build()`'s dX, or zeros of X's shape `sx` where X or dY (shape `sy`) has an empty axis: a batch of 0, a
    zero-length axis, or a one-row axis that downsampling leaves without dY rows. The spellings' views, pads and
    Convs need rows (onnxruntime refuses a Reshape to a 0 it reads as "copy", and a Conv on an empty axis). The
    If's output has `rank` where given."""
    fewest = em.node("ReduceMin", [em.node("Concat", [sx, sy], "dims", axis=0)], "fewest", keepdims=0)
    empty = em.node("Equal", [fewest, em.const(0, "none", np.int64)], "empty")
    return emit_if(em, empty, lambda: em.zeros(sx), build, "empty", rank)


def emit_resize(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """One onnxruntime Resize with scales 1/f on the resized axes (attributes proven for every length), times
    the product of the factors (on the smaller side: after the Resize)."""
    assert form.resize is not None          # the Resize scope applies only where one is proven
    scales = [float(np.float32(1 / form.axes[a].factor)) if a in form.axes else 1.0 for a in range(form.rank)]
    roi = em.const([], "roi", np.float32) if em.opset < 13 else ""
    resized = em.node("Resize", [dy, roi, em.const(scales, "scales", np.float32)], "resized", **form.resize)
    return em.scale(resized, float(math.prod(f.factor for f in form.axes.values())))


def _block_weight(form: GenericForm) -> float:
    return math.prod(f.kernel[0] for f in form.axes.values())


def emit_block(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """Reshape dY to X's dims with each resized axis split as [n, f], ReduceSum the f axes (into X's shape)."""
    sx = em.node("Shape", [x], "xshape")
    parts, sum_axes = [], []
    for a in range(form.rank):
        parts.append(dims(em, sx, a, a + 1))
        if a in form.axes:
            parts.append(em.const([form.axes[a].factor], "factor", np.int64))
            sum_axes.append(len(parts) - 1)
    split = em.node("Reshape", [dy, em.node("Concat", parts, "split_shape", axis=0)], "split")
    return em.scale(em.reduce_sum(split, sum_axes), _block_weight(form))


def emit_pool(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """dY viewed as [-1, 1, pooled dims], AveragePool with windows of 2, times the block size, X's shape."""
    lead = form.rank - len(form.axes)
    viewed_shape = em.node("Concat", [em.const([-1, 1], "lead", np.int64),
                                      dims(em, em.node("Shape", [dy], "dyshape"), lead, form.rank)], "pool_shape",
                           axis=0)
    viewed = em.node("Reshape", [dy, viewed_shape], "viewed")
    window = [POOL_WINDOW] * len(form.axes)
    mean = em.node("AveragePool", [viewed], "mean", kernel_shape=window, strides=window)
    scale = math.prod(f.factor for f in form.axes.values()) * _block_weight(form)
    return em.node("Reshape", [em.scale(mean, scale), em.node("Shape", [x], "xshape")], "pooled")


def _emit_kron_pairs(em: Emitter, dy: str, x: str, form: GenericForm, checked: str) -> str:
    """The static kron-pairs form (onnx_ops.forms.kron_pairs) with run-time views: the last axis's blocks summed
    by one MatMul of rows of f*k values with kron(I_k, ones(f, 1)) (k divides dY's size over f, so a block never
    straddles a row); then each other resized axis, the last first: at opsets <= 18 under the pool rule one
    AveragePool (the matrix holding the block size), else a Split of its blocks + Add. Where the static dims
    guarantee only k = form.pair_columns < 16, an If takes rows of f*16 when dY's size allows it at run time, else
    rows of f*k, or the pool form under the pool rule (faster than narrow rows: docs/dynamic-forms.md).
    The last node writes dX at `checked` (X's shape, checked against dY's: no trailing Reshape, which copies)."""
    widest, k = COLUMNS[0], form.pair_columns
    if k >= widest:
        return _kron_pairs(em, dy, x, form, checked, widest)
    f = form.axes[form.rank - 1].factor
    rest = em.node("Mod", [em.node("Size", [dy], "size"), em.const(f * widest, "width", np.int64)], "rest")
    fits = em.node("Equal", [rest, em.const(0, "zero", np.int64)], "fits")
    narrow = (lambda: em.node("Reshape", [emit_pool(em, dy, x, form), checked], "checked")) \
        if len(form.axes) > 1 and form.pool_fits(em.opset) else (lambda: _kron_pairs(em, dy, x, form, checked, k))
    return emit_if(em, fits, lambda: _kron_pairs(em, dy, x, form, checked, widest), narrow)


def emit_if(em: Emitter, cond: str, then_branch, else_branch, what: str = "kron_pairs",
            rank: int | None = None) -> str:
    """One If node on `cond`: each branch's nodes emitted by its function into a subgraph (Emitter.subgraph: its
    constants Constant nodes inside it); its output (of the accumulation type, of `rank` where given) named after
    `what`."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(em.acc))
    then_graph, else_graph = (em.subgraph(lambda emit=emit: [(emit(), elem, rank)])
                              for emit in (then_branch, else_branch))
    return em.node("If", [cond], what, then_branch=then_graph, else_branch=else_graph)


def _kron_pairs(em: Emitter, dy: str, x: str, form: GenericForm, checked: str, k: int) -> str:
    """The kron-pairs passes with MatMul rows of f*k values (_emit_kron_pairs)."""
    last = form.rank - 1
    others = sorted((a for a in form.axes if a != last), reverse=True)
    f = form.axes[last].factor
    pool = bool(others) and form.pool_fits(em.opset)
    weight = _block_weight(form) * (math.prod(form.axes[a].factor for a in others) if pool else 1)
    matrix = np.kron(np.eye(k), np.ones((f, 1))) * weight
    rows = em.node("Reshape", [dy, em.const([-1, f * k], "rows", np.int64)], "rows")
    cur = em.node("MatMul", [rows, em.const(matrix, "pairs")], "kron")
    if not others:
        return em.node("Reshape", [cur, checked], "checked")
    if pool:
        return _pooled_pairs(em, cur, dy, form, checked)
    sx = em.node("Shape", [x], "xshape")
    for a in others:
        cur = _sum_blocks(em, cur, sx, a, form.axes[a].factor, checked if a == others[-1] else None)
    return cur


def _pooled_pairs(em: Emitter, src: str, dy: str, form: GenericForm, checked: str) -> str:
    """AveragePool with windows of 2 on the resized axes other than the last: on [N, C, ...] itself (viewed at
    checked x the factors, so the pool writes dX) where there are two leading axes, else on a one-channel view."""
    last, rank = form.rank - 1, form.rank
    lead = rank - len(form.axes)
    window = [POOL_WINDOW if a in form.axes and a != last else 1 for a in range(2 if lead >= 2 else lead, rank)]
    if lead >= 2:
        factors = [form.axes[a].factor if a in form.axes and a != last else 1 for a in range(rank)]
        view = em.node("Mul", [checked, em.const(factors, "factors", np.int64)], "pool_shape")
        viewed = em.node("Reshape", [src, view], "viewed")
        return em.node("AveragePool", [viewed], "pairs", kernel_shape=window, strides=window)
    view = em.node("Concat", [em.const([-1, 1], "lead", np.int64), dims(em, em.node("Shape", [dy], "dyshape"),
                                                                         lead, last),
                              dims(em, em.node("Shape", [checked], "xshape"), last, rank)], "pool_shape", axis=0)
    pooled = em.node("AveragePool", [em.node("Reshape", [src, view], "viewed")], "pairs", kernel_shape=window,
                     strides=window)
    return em.node("Reshape", [pooled, checked], "checked")


def _sum_blocks(em: Emitter, src: str, sx: str, axis: int, f: int, shape: str | None) -> str:
    """src's blocks of f consecutive entries along `axis` summed (the axes after it already at X's dims, the
    Shape `sx`): viewed as [-1, f, X's dims after axis], Split into f, the parts added in order; the parts
    viewed at `shape` first where given (so the Add writes that shape)."""
    view = em.node("Concat", [em.const([-1, f], "lead", np.int64), dims(em, sx, axis + 1, np.iinfo(np.int64).max)],
                   "block_shape", axis=0)
    parts = [em.name("part") for _ in range(f)]
    counted: dict[str, Any] = {"num_outputs": f} if em.opset >= 18 else {}
    em.nodes.append(helper.make_node("Split", [em.node("Reshape", [src, view], "blocks")], parts, axis=1, **counted))
    if shape is not None:
        parts = [em.node("Reshape", [part, shape], "part_view") for part in parts]
    out = parts[0]
    for part in parts[1:]:
        out = em.node("Add", [out, part], "blocksum")
    return out


def emit_conv(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """One depthwise Conv with the outer-product kernel, stride f per resized axis (onnx_ops.forms.filter_conv).
    With C symbolic the spatial axes are viewed as one channel ([-1, 1, spatial]) and viewed back."""
    return emit_filter_conv(em, dy, x, form.filter_conv("conv"))


def emit_sepconv(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """One depthwise Conv per resized axis (its 1-D kernel, stride f), the first axis first (measured faster than
    the last first), then the folds on the smallest tensor: K multiply-adds per output and axis instead of the
    outer product's K^d."""
    return emit_filter_conv(em, dy, x, form.filter_conv("sepconv"))


def _dy_checked(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """dY reshaped to itself when its shape is X's times the factors, else to an invalid shape: a dY of another
    shape fails in onnxruntime's Reshape (as the general path's MatMul fails), never a silent result. Checked on
    the way in (a view of dY) rather than on dX (a Reshape writing a graph output copies it)."""
    sx, expected, same = _shape_test(em, dy, x, form)
    return refused_unless(em, dy, same, expected)


def dims_of_x_checked(em: Emitter, dy: str, x: str, free: list) -> str:
    """dY where its dims are X's on every axis whose `free` entry is False, else a Reshape onnxruntime refuses."""
    sdy = em.node("Shape", [dy], "dyshape")
    same = em.node("Equal", [em.node("Shape", [x], "xshape"), sdy], "same")
    return refused_unless(em, dy, em.node("Or", [same, em.const(free, "free", np.bool_)], "same_dims"), sdy)


def refused_unless(em: Emitter, dy: str, valid: str, shape: str) -> str:
    """dY reshaped to `shape` where every entry of `valid` holds, else to -2 there (a shape onnxruntime's Reshape
    refuses; 0 would copy the input's dim)."""
    return em.node("Reshape", [dy, em.node("Where", [valid, shape, em.const([-2], "refused", np.int64)],
                                           "checked_shape")], "checked")


def _checked_shape(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """X's shape where dY's shape is X's times the factors; a dim that differs reads -2 (a shape Reshape refuses;
    0 would copy the input's dim)."""
    sx, _, same = _shape_test(em, dy, x, form)
    return em.node("Where", [same, sx, em.const([-2], "refused", np.int64)], "checked_shape")


def _shape_test(em: Emitter, dy: str, x: str, form: GenericForm) -> tuple:
    """(Shape(X), X's shape times the factors, per dim: dY's dim equals it)."""
    factors = [(form.axes[a].k if form.down else form.axes[a].factor) if a in form.axes else 1
               for a in range(form.rank)]
    sx = em.node("Shape", [x], "xshape")        # downsampling: floor(n / k) per axis
    expected = em.node("Div" if form.down else "Mul", [sx, em.const(factors, "factors", np.int64)], "expected")
    return sx, expected, em.node("Equal", [em.node("Shape", [dy], "dyshape"), expected], "same")


def emit_kron_pairs(em: Emitter, dy: str, g, form: GenericForm) -> str:
    """The kron-pairs spelling (_emit_kron_pairs), dY's shape checked in its own views: dX at X's checked shape;
    zeros where a tensor is empty (zeros_where_empty)."""
    checked = _checked_shape(em, g.dy, g.x, form)      # its -2 entries fail the zeros too: never a silent result
    return zeros_where_empty(em, checked, em.node("Shape", [dy], "dyshape"),
                             lambda: _emit_kron_pairs(em, dy, g.x, form, checked))
