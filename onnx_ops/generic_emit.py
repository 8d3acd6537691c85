"""Emission of the shape-generic forms (onnx_ops.generic_forms): one graph for every length, per spelling
("resize", "pool", "conv", "sepconv", "kronpairs", "block"), then a check of dY's shape; and their edges: dY padded
(zeros, edge, mirrored), run-time dims read from a Shape, the fold of virtual rows beyond an edge onto the edge
rows."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto, helper

from .forms import POOL_WINDOW, Emitter, cast_wrapped
from .forms.kron_pairs import COLUMNS

if TYPE_CHECKING:
    from .generic_forms import GenericForm


def emit_generic(em: Emitter, dy: str, x: str, form: GenericForm, kind: str | None = None) -> tuple[str, str]:
    """dX from dY in `form`, spelled as `kind` (one of form.kinds() but "kronpairs", which checks dY's shape in
    its own views: emit_generic_node; None: by rule); returns (dX, the kind), dX still to be shape-checked."""
    kind = kind or form.kind(em)
    emit = {"resize": _emit_resize, "pool": _emit_pool, "conv": _emit_conv, "block": _emit_block,
            "sepconv": _emit_sepconv}[kind]
    return emit(em, dy, x, form), kind


def _emit_resize(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """One onnxruntime Resize with scales 1/f on the resized axes (attributes proven for every length), times
    the product of the factors (on the smaller side: after the Resize)."""
    scales = [float(np.float32(1 / form.axes[a].factor)) if a in form.axes else 1.0 for a in range(form.rank)]
    roi = em.const([], "roi", np.float32) if em.opset < 13 else ""
    resized = em.node("Resize", [dy, roi, em.const(scales, "scales", np.float32)], "resized", **form.resize)
    return em.scale(resized, float(math.prod(f.factor for f in form.axes.values())))


def _block_weight(form: GenericForm) -> float:
    return math.prod(f.kernel[0] for f in form.axes.values())


def _emit_block(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """Reshape dY to X's dims with each resized axis split as [n, f], ReduceSum the f axes (into X's shape)."""
    sx = em.node("Shape", [x], "xshape")
    parts, sum_axes = [], []
    for a in range(form.rank):
        parts.append(_dims(em, sx, a, a + 1))
        if a in form.axes:
            parts.append(em.const([form.axes[a].factor], "factor", np.int64))
            sum_axes.append(len(parts) - 1)
    split = em.node("Reshape", [dy, em.node("Concat", parts, "split_shape", axis=0)], "split")
    return em.scale(em.reduce_sum(split, sum_axes), _block_weight(form))


def _emit_pool(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """dY viewed as [-1, 1, pooled dims], AveragePool with windows of 2, times the block size, X's shape."""
    lead = form.rank - len(form.axes)
    viewed_shape = em.node("Concat", [em.const([-1, 1], "lead", np.int64),
                                      _dims(em, em.node("Shape", [dy], "dyshape"), lead, form.rank)], "pool_shape",
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
    narrow = (lambda: em.node("Reshape", [_emit_pool(em, dy, x, form), checked], "checked")) \
        if len(form.axes) > 1 and form.pool_fits(em.opset) else (lambda: _kron_pairs(em, dy, x, form, checked, k))
    return _if(em, fits, lambda: _kron_pairs(em, dy, x, form, checked, widest), narrow)


def _if(em: Emitter, cond: str, then_branch, else_branch) -> str:
    """One If node on `cond`: each branch's nodes emitted by its function into a subgraph (constants stay in the
    outer graph, read from the outer scope)."""
    outer, graphs = em.nodes, []
    for emit in (then_branch, else_branch):
        em.nodes = []
        out = emit()
        graphs.append(helper.make_graph(em.nodes, em.name("branch"), [],
                                        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]))
        em.nodes = outer
    return em.node("If", [cond], "kron_pairs", then_branch=graphs[0], else_branch=graphs[1])


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
    view = em.node("Concat", [em.const([-1, 1], "lead", np.int64), _dims(em, em.node("Shape", [dy], "dyshape"),
                                                                         lead, last),
                              _dims(em, em.node("Shape", [checked], "xshape"), last, rank)], "pool_shape", axis=0)
    pooled = em.node("AveragePool", [em.node("Reshape", [src, view], "viewed")], "pairs", kernel_shape=window,
                     strides=window)
    return em.node("Reshape", [pooled, checked], "checked")


def _sum_blocks(em: Emitter, src: str, sx: str, axis: int, f: int, shape: str | None) -> str:
    """src's blocks of f consecutive entries along `axis` summed (the axes after it already at X's dims, the
    Shape `sx`): viewed as [-1, f, X's dims after axis], Split into f, the parts added in order; the parts
    viewed at `shape` first where given (so the Add writes that shape)."""
    view = em.node("Concat", [em.const([-1, f], "lead", np.int64), _dims(em, sx, axis + 1, np.iinfo(np.int64).max)],
                   "block_shape", axis=0)
    parts = [em.name("part") for _ in range(f)]
    counted = {"num_outputs": f} if em.opset >= 18 else {}
    em.nodes.append(helper.make_node("Split", [em.node("Reshape", [src, view], "blocks")], parts, axis=1, **counted))
    if shape is not None:
        parts = [em.node("Reshape", [part, shape], "part_view") for part in parts]
    out = parts[0]
    for part in parts[1:]:
        out = em.node("Add", [out, part], "blocksum")
    return out


def _emit_conv(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """Padding (one Pad per mode; symmetric pads wider than 1 as reversed Slices + Concat) and one depthwise Conv
    with the outer-product kernel, stride f per resized axis. With C symbolic the spatial axes are viewed as one
    channel ([-1, 1, spatial]) and viewed back."""
    kernel, strides = _outer_kernel(form)
    return _convolved(em, _padded(em, dy, form), dy, x, form, [(kernel, strides, [])])


def _emit_sepconv(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """One depthwise Conv per resized axis (its 1-D kernel, stride f), the first axis first (measured faster than
    the last first), then the folds on the smallest tensor: K multiply-adds per output and axis instead of the
    outer product's K^d. Edge pads (1) are one Pad first; zero pads are each Conv's own `pads`, no copy of dY."""
    rank, spatial = form.rank, range(2, form.rank)
    convs = []
    form = replace(form, axes=form.separable_axes)
    for a in sorted(form.axes):
        f = form.axes[a]
        pads = [0] * (2 * (rank - 2))
        if not f.symmetric:
            pads[a - 2], pads[rank - 2 + a - 2] = f.pad_begin + f.factor * f.fold, f.pad_end + f.factor * f.fold
        kernel = np.asarray(f.kernel).reshape([len(f.kernel) if b == a else 1 for b in spatial])
        convs.append((kernel, [f.factor if b == a else 1 for b in spatial], pads))
    mirrored = replace(form, axes={a: f for a, f in form.axes.items() if f.symmetric})
    return _convolved(em, _padded(em, dy, mirrored), dy, x, form, convs)


def _outer_kernel(form: GenericForm) -> tuple:
    """(the outer product of the axes' kernels over the spatial axes, the strides)."""
    kernel, strides = np.ones(()), []
    for a in range(2, form.rank):
        f = form.axes.get(a)
        kernel = np.multiply.outer(kernel, np.asarray(f.kernel) if f else np.ones(1))
        strides.append(f.factor if f else 1)
    return kernel, strides


def _convolved(em: Emitter, src: str, dy: str, x: str, form: GenericForm, convs: list) -> str:
    """The Convs (kernel, strides, pads) in turn on src, depthwise (C static) or on one channel; the folds."""
    rank, channels = form.rank, form.channels
    groups = channels if isinstance(channels, int) else 1
    if groups == 1 and channels != 1:         # C symbolic: one channel, N*C as the batch
        view = em.node("Concat", [em.const([-1, 1], "lead", np.int64),
                                  _dims(em, em.node("Shape", [src], "padshape"), 2, rank)], "one_channel", axis=0)
        src = em.node("Reshape", [src, view], "viewed")
    out = src
    for kernel, strides, pads in convs:
        weights = np.broadcast_to(kernel, (groups, 1) + kernel.shape).astype(em.acc)
        out = em.node("Conv", [out, em.const(weights, "generic_kernel")], "conv", kernel_shape=list(kernel.shape),
                      strides=strides, group=groups, **({"pads": pads} if any(pads) else {}))
    if groups == 1 and channels != 1:       # back to [N, C, conv's spatial dims] (longer than X's where folded)
        back = em.node("Concat", [_dims(em, em.node("Shape", [dy], "dyshape"), 0, 2),
                                  _dims(em, em.node("Shape", [out], "convshape"), 2, rank)], "unview", axis=0)
        out = em.node("Reshape", [out, back], "unviewed")
    for a, f in sorted(form.axes.items()):
        if f.fold:
            out = _fold(em, out, x, a, f.fold, rank)
    return out


# ---- edges ----------------------------------------------------------------------------------------------

def _dims(em: Emitter, shape: str, start: int, end: int) -> str:
    return em.node("Slice", [shape, em.const([start], "start", np.int64), em.const([end], "end", np.int64)], "dims")


def _fold(em: Emitter, z: str, x: str, axis: int, q: int, rank: int) -> str:
    """z (length n + 2q along `axis`: q virtual rows beyond each edge) folded to length n: the virtual rows are
    added onto rows 0 and n - 1 (each placed by a Pad of n - 1 read from X's shape: right for every n >= 1)."""
    big = np.iinfo(np.int64).max

    def part(start, end):
        return em.node("Slice", [z, em.const([start], "start", np.int64), em.const([end], "end", np.int64),
                                 em.const([axis], "axis", np.int64)], "part")

    def summed(start, end):
        p = part(start, end)
        return p if q == 1 else em.reduce_sum(p, [axis], keepdims=1)

    n1 = em.node("Sub", [_dims(em, em.node("Shape", [x], "xshape"), axis, axis + 1), em.const([1], "one", np.int64)],
                 "n_minus_1")

    def placed(edge, last_row):      # edge (length 1) padded by n - 1 after it (row 0) or before it (row n - 1)
        before, after = (axis, 2 * rank - axis - 1) if last_row else (rank + axis, rank - axis - 1)
        pads = em.node("Concat", [em.const([0] * before, "zeros", np.int64), n1,
                                  em.const([0] * after, "zeros", np.int64)], "fold_pads", axis=0)
        return em.node("Pad", [edge, pads], "edge_row")
    out = em.node("Add", [part(q, -q), placed(summed(0, q), last_row=False)], "folded")
    return em.node("Add", [out, placed(summed(-q, big), last_row=True)], "folded")


def _padded(em: Emitter, src: str, form: GenericForm) -> str:
    """dY padded per AxisForm: zeros, edge (symmetric by 1) in one Pad each, wider symmetric pads mirrored."""
    rank = form.rank
    by_mode = {"constant": [0] * (2 * rank), "edge": [0] * (2 * rank)}
    mirrored = []
    for a, f in sorted(form.axes.items()):
        if f.symmetric and max(f.pad_begin, f.pad_end) > 1:
            mirrored.append((a, f))
            continue
        pads = by_mode["edge" if f.symmetric else "constant"]
        pads[a], pads[rank + a] = f.pad_begin + f.factor * f.fold, f.pad_end + f.factor * f.fold
    for mode, pads in by_mode.items():
        if any(pads):
            if em.opset >= 11:
                src = em.node("Pad", [src, em.const(pads, "pads", np.int64)], "padded", mode=mode)
            else:
                src = em.node("Pad", [src], "padded", pads=pads, mode=mode)
    for a, f in mirrored:
        src = _mirror(em, src, a, f.pad_begin, f.pad_end)
    return src


def _mirror(em: Emitter, src: str, axis: int, before: int, after: int) -> str:
    """src with its first `before` entries along `axis` mirrored in front and its last `after` behind."""
    big = np.iinfo(np.int64).max
    parts = [src]
    if before:     # src[before-1], ..., src[0]
        parts.insert(0, _reversed(em, src, axis, before - 1, -big))
    if after:      # src[-1], ..., src[-after]
        parts.append(_reversed(em, src, axis, -1, -after - 1))
    return em.node("Concat", parts, "mirrored", axis=axis)


def _reversed(em: Emitter, src: str, axis: int, start: int, end: int) -> str:
    return em.node("Slice", [src, em.const([start], "start", np.int64), em.const([end], "end", np.int64),
                             em.const([axis], "axis", np.int64), em.const([-1], "step", np.int64)], "mirror")


def _shape_checked(em: Emitter, dx: str, dy: str, x: str, form: GenericForm) -> str:
    """dX reshaped to X's shape when dY's shape is X's times the factors, else to an invalid shape: a dY of
    another shape fails in onnxruntime's Reshape (as the general path's MatMul fails), never a silent result."""
    return em.node("Reshape", [dx, _checked_shape(em, dy, x, form)], "checked")


def _checked_shape(em: Emitter, dy: str, x: str, form: GenericForm) -> str:
    """X's shape when dY's shape is X's times the factors, else every dim -2 (a shape Reshape refuses)."""
    factors = [form.axes[a].factor if a in form.axes else 1 for a in range(form.rank)]
    sx = em.node("Shape", [x], "xshape")
    expected = em.node("Mul", [sx, em.const(factors, "factors", np.int64)], "expected")
    differs = em.node("Not", [em.node("Equal", [em.node("Shape", [dy], "dyshape"), expected], "same")], "differs")
    bad = em.node("ReduceMax", [em.node("Cast", [differs], "flags", to=TensorProto.FLOAT)], "bad", keepdims=1)
    ok = em.node("Cast", [em.node("Sub", [em.const([1.0], "one", np.float32), bad], "ok")], "ok",
                 to=TensorProto.INT64)
    # X's shape when ok, else every dim -2 (Reshape refuses it; 0 would copy the input's dim)
    return em.node("Sub", [em.node("Mul", [em.node("Add", [sx, em.const([2], "two", np.int64)], "shifted"), ok],
                                   "kept"), em.const([2], "two", np.int64)], "checked_shape")


def emit_generic_node(node, form: GenericForm, elem, prefix: str, opset: int, kind: str | None = None):
    """(nodes, initializers, form names) of a ResizeGrad node in `form`, dX written by the last node;
    float16 runs in float32 (as the static forms do); double takes the block form in double."""
    em = Emitter(prefix, opset, np.float64 if elem == TensorProto.DOUBLE else np.float32)
    dy, x = node.input[0], node.input[1]

    def compute(cur):
        if (kind or form.kind(em)) == "kronpairs":         # checks dY's shape in its own views
            return _emit_kron_pairs(em, cur, x, form, _checked_shape(em, dy, x, form)), "kronpairs"
        cur, chosen = emit_generic(em, cur, x, form, kind)
        return _shape_checked(em, cur, dy, x, form), chosen
    return em.nodes, em.inits, form.names(cast_wrapped(em, node, elem, compute), opset)
