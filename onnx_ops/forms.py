"""ONNX spellings of one gradient contraction. Each form is proven against the shared taps.

- kron:    every resized axis is I (x) K (integer factors, the same weights in every block): the last axis
           as one MatMul with a small block-diagonal matrix, the others as ReduceSum (sums) or Gather (spreads)
- block:   every resized axis sums blocks of F outputs (nearest, integer factor): Reshape + ReduceSum
- resize:  the gradient taps equal (out/in) x the taps of another Resize (e.g. bilinear x2's gradient
           is 4 x an antialiased linear /2 Resize): one onnxruntime Resize node and a Mul
- gather / dense: per axis, the general sparse form (or a tiny dense MatMul)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from onnx import helper, numpy_helper

from dml_desc.canonical import AxisMap, Mode, Resampling, Rounding
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.weights import Taps, forward_taps, gradient_taps

DENSE_MAX_COLS = 16
CHUNK = 16           # columns per MatMul row in the kron form: measured fastest on onnxruntime CPU (README)


@dataclass
class Emitter:
    """Accumulates nodes and initializers under one name prefix."""
    prefix: str
    opset: int
    acc: type
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    count: int = 0

    def name(self, what: str) -> str:
        self.count += 1
        return f"{self.prefix}_{what}{self.count}"

    def const(self, value, what: str, dtype=None) -> str:
        name = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype or self.acc), name))
        return name

    def node(self, op: str, inputs: list, what: str, **attrs) -> str:
        out = self.name(what)
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def rename(self, src: str, final: str) -> None:
        """Make the node that produced `src` write `final` directly (no trailing copy)."""
        last = next(n for n in reversed(self.nodes) if src in n.output)
        last.output[list(last.output).index(src)] = final

    def reduce_sum(self, src: str, axes: list, keepdims: int = 0) -> str:
        if self.opset >= 13:
            return self.node("ReduceSum", [src, self.const(axes, "axes", np.int64)], "sum", keepdims=keepdims)
        return self.node("ReduceSum", [src], "sum", axes=axes, keepdims=keepdims)

    def pad(self, src: str, pads: list) -> str:
        """Zero padding; the pads input exists from opset 11, an attribute before."""
        if self.opset >= 11:
            return self.node("Pad", [src, self.const(pads, "pads", np.int64)], "padded")
        return self.node("Pad", [src], "padded", pads=pads)

    def reshape(self, src: str, shape: list) -> str:
        return self.node("Reshape", [src, self.const(shape, "shape", np.int64)], "view")

    def scale(self, src: str, factor: float) -> str:
        return src if factor == 1 else self.node("Mul", [src, self.const(factor, "factor")], "scaled")


def taps_close(a: Taps, b: Taps, factor: float = 1.0) -> bool:
    (ra, ca, wa), (rb, cb, wb) = a.merged(), b.merged()
    return (np.array_equal(ra, rb) and np.array_equal(ca, cb)
            and np.allclose(wa, factor * wb, rtol=2e-6, atol=1e-12))


# ---- kron: one small MatMul on the last axis, ReduceSum / Gather on the others ----------------

@dataclass(frozen=True)
class KronForm:
    kernels: dict        # axis -> K (p, q): block b of p dX entries reads block b of q dY entries
    scale: float         # constant weights of the other axes, folded into the MatMul
    chunk: int           # blocks of the last axis per MatMul row (0: the last axis is not resized)

    def names(self, rank: int) -> tuple:
        def name(a, k):
            p, q = k.shape
            if a == rank - 1:
                return f"kron-matmul {self.chunk * q}->{self.chunk * p}"
            return "kron-sum" if q > 1 else "kron-gather"
        return tuple(name(a, k) for a, k in sorted(self.kernels.items()))


def kron_form(res: Resampling) -> KronForm | None:
    """The kron form, when every resized axis is I (x) K and the axes other than the last have one weight
    per axis (spreads may also skip phases: weight 0). 1x1 kernels only scale."""
    last = len(res.axes) - 1
    kernels = {a: gradient_taps(res.axes[a], res).block_kernel() for a in res.resized_axes}
    if any(k is None for k in kernels.values()):
        return None
    scale = 1.0
    for a, k in list(kernels.items()):
        if a == last and k.size > 1:
            continue
        nonzero = k[k != 0]
        if not len(nonzero) or np.ptp(nonzero) or (k.shape[1] > 1 and len(nonzero) < k.size):
            return None
        scale *= float(nonzero[0])
        if k.size == 1:
            del kernels[a]
    if not kernels:
        return None
    chunk = 0
    if last in kernels:
        chunk = _chunk(res.axes[last].in_size // kernels[last].shape[0], max(kernels[last].shape))
        if not chunk:
            return None
    return KronForm(kernels, scale, chunk)


def _chunk(blocks: int, width: int) -> int:
    """Blocks per MatMul row: the whole axis when it is short, else a divisor giving about CHUNK columns."""
    if blocks * width <= CHUNK:
        return blocks
    b = max(d for d in range(1, max(1, CHUNK // width) + 1) if blocks % d == 0)
    return b if b * width >= CHUNK // 2 else 0


def emit_kron(em: Emitter, src: str, res: Resampling, form: KronForm) -> str:
    last = len(res.axes) - 1
    shape, cur, flat = list(res.out_shape), src, False
    late = last not in form.kernels and math.prod(res.in_shape) < math.prod(res.out_shape)   # scale the smaller side
    if last in form.kernels:
        cur, flat = _kron_matmul(em, cur, res, form)
        shape[last] = res.in_shape[last]
    elif not late:
        cur = em.scale(cur, form.scale)
    for spread, a in sorted((k.shape[1] == 1, a) for a, k in form.kernels.items() if a != last):   # sums first
        k = form.kernels[a]
        if spread:
            cur = _spread(em, em.reshape(cur, shape) if flat else cur, k[:, 0], a, shape)
            shape[a] *= k.shape[0]
        else:
            q = k.shape[1]
            cur = em.reduce_sum(em.reshape(cur, shape[:a] + [shape[a] // q, q] + shape[a + 1:]), [a + 1])
            shape[a] //= q
        flat = False
    if late:
        cur = em.scale(cur, form.scale)
    return em.reshape(cur, list(res.in_shape)) if flat else cur


def _kron_matmul(em: Emitter, src: str, res: Resampling, form: KronForm) -> tuple[str, bool]:
    """The last axis: dY rows of `chunk` blocks times kron(I, K^T). Returns (tensor, flattened?)."""
    kernel = form.kernels[len(res.axes) - 1]
    matrix = np.kron(np.eye(form.chunk), kernel.T) * form.scale
    whole = form.chunk * kernel.shape[1] == res.out_shape[-1]
    rows = src if whole else em.reshape(src, [-1, matrix.shape[0]])
    return em.node("MatMul", [rows, em.const(matrix, "kron")], "kron"), not whole


def _spread(em: Emitter, src: str, weights: np.ndarray, axis: int, shape: list) -> str:
    """Each entry along `axis` feeds p outputs; phases of weight 0 read an appended zero row."""
    p = len(weights)
    index = np.arange(shape[axis] * p) // p
    if np.any(weights == 0):
        pads = [0] * (2 * len(shape))
        pads[len(shape) + axis] = 1
        src = em.pad(src, pads)
        index = np.where(np.tile(weights, shape[axis]) == 0, shape[axis], index)
    return em.node("Gather", [src, em.const(index, "index", np.int64)], "spread", axis=axis)


# ---- block: Reshape + ReduceSum -------------------------------------------------------------

def block_factors(res: Resampling) -> dict | None:
    """{axis: (F, weight)} when every resized axis's gradient sums aligned blocks of F outputs, one weight."""
    out = {}
    for a in res.resized_axes:
        k = gradient_taps(res.axes[a], res).block_kernel()
        if k is None or k.shape[0] != 1 or np.ptp(k) != 0:
            return None
        out[a] = (k.shape[1], float(k[0, 0]))
    return out


def emit_block(em: Emitter, src: str, res: Resampling, blocks: dict) -> str:
    shape, sum_axes = [], []
    for a, n in enumerate(res.out_shape):
        if a in blocks:
            f = blocks[a][0]
            shape += [n // f, f]
            sum_axes.append(len(shape) - 1)
        else:
            shape.append(n)
    split = em.reshape(src, shape)
    return em.scale(em.reduce_sum(split, sum_axes), math.prod(w for _, w in blocks.values()))


# ---- resize: one Resize node ----------------------------------------------------------------

def _reverse(ax: AxisMap, rounding=Rounding.ROUND_PREFER_FLOOR) -> AxisMap:
    """A half-pixel map from the gradient's side (out -> in) with onnxruntime's float32 scale."""
    return AxisMap(ax.out_size, ax.in_size, float(np.float32(ax.in_size / ax.out_size)), 0.5, -0.5, rounding)


def resize_candidates(res: Resampling):
    rank = len(res.axes)
    ident = [AxisMap.identity(n) for n in res.out_shape]
    for rounding in Rounding:
        axes = list(ident)
        for a in res.resized_axes:
            axes[a] = _reverse(res.axes[a], rounding)
        yield Resampling(tuple(axes), Mode.NEAREST)
    if res.mode is Mode.NEAREST or res.antialias or not set(res.resized_axes) <= set(range(2, rank)):
        return
    axes = list(ident)
    for a in res.resized_axes:
        axes[a] = _reverse(res.axes[a])
    yield Resampling(tuple(axes), res.mode, cubic_coeff_a=res.cubic_coeff_a, antialias=True)


def find_resize(res: Resampling, opset: int):
    """A Resize (canonical, ONNX spelling) whose taps are the gradient's, axis by axis, up to out/in."""
    if opset < 11:                     # Resize-10 has no coordinate_transformation_mode
        return None
    for cand in resize_candidates(res):
        if cand.antialias and opset < 18:
            continue
        if all(taps_close(gradient_taps(res.axes[a], res), forward_taps(cand.axes[a], cand),
                          res.axes[a].out_size / res.axes[a].in_size) for a in res.resized_axes):
            try:
                spelling, _ = onnx_conv.from_canonical(cand, opset=max(opset, 11) if opset < 18 else opset)
            except Exception:
                continue
            return cand, spelling
    return None


def emit_resize(em: Emitter, src: str, res: Resampling, spelling) -> str:
    inputs = [src, "", em.const(spelling.scales, "scales", np.float32)] if spelling.scales is not None else \
        [src, "", "", em.const(spelling.sizes, "sizes", np.int64)]
    if em.opset < 13:
        inputs[1] = em.const([], "roi", np.float32)
    factor = math.prod(res.axes[a].out_size / res.axes[a].in_size for a in res.resized_axes)
    if math.prod(res.out_shape) < math.prod(res.in_shape):      # scale on the smaller side
        inputs[0] = em.scale(src, factor)
        return em.node("Resize", inputs, "resized", **spelling.attributes)
    return em.scale(em.node("Resize", inputs, "resized", **spelling.attributes), factor)


# ---- gather / dense: one axis at a time -----------------------------------------------------

def split_piles(taps: Taps) -> tuple[Taps, list]:
    """Rows far wider than the rest (outputs piled on an edge by clamping) come out as (row, first, weights)
    so the gather table keeps its typical width and the cost stays linear."""
    counts = (taps.weight != 0).sum(axis=1)
    typical = int(np.median(counts[counts > 0])) if np.any(counts) else 1
    heavy = np.flatnonzero(counts > 4 * typical + 4)
    if not len(heavy):
        return taps, []
    piles = []
    index, weight = taps.index.copy(), taps.weight.copy()
    for r in heavy:
        cols = index[r][weight[r] != 0]
        first, last = int(cols.min()), int(cols.max())
        dense = np.zeros(last - first + 1)
        np.add.at(dense, cols - first, weight[r][weight[r] != 0])
        piles.append((int(r), first, dense))
        weight[r] = 0
    order = np.argsort(weight == 0, axis=1, kind="stable")       # nonzero entries first
    index, weight = np.take_along_axis(index, order, 1), np.take_along_axis(weight, order, 1)
    width = max(int((weight != 0).sum(axis=1).max()), 1)
    return Taps(index[:, :width], weight[:, :width], taps.cols), piles


def emit_axis(em: Emitter, src: str, taps: Taps, axis: int, rank: int) -> tuple[str, str]:
    light, piles = split_piles(taps)
    out, form = _emit_gather(em, src, light, axis, rank)
    for row, first, weights in piles:
        cols = em.const(np.arange(first, first + len(weights)), "pile_index", np.int64)
        shape = [len(weights)] + [1] * (rank - axis - 1)
        part = em.node("Mul", [em.node("Gather", [src, cols], "pile", axis=axis), em.const(weights.reshape(shape),
                                                                                          "pile_weight")], "piled")
        pads = [0] * (2 * rank)
        pads[axis], pads[rank + axis] = row, taps.rows - row - 1
        out = em.node("Add", [out, em.pad(em.reduce_sum(part, [axis], keepdims=1), pads)], "unpiled")
    return out, form + (f" + {len(piles)} edge pile(s)" if piles else "")


def _emit_gather(em: Emitter, src: str, taps: Taps, axis: int, rank: int) -> tuple[str, str]:
    if axis == rank - 1 and taps.cols <= DENSE_MAX_COLS and taps.cols <= 2 * taps.width:
        return em.node("MatMul", [src, em.const(taps.dense().T, "matrix")], "dense"), "dense"
    if taps.width == 1:
        g = em.node("Gather", [src, em.const(taps.index[:, 0], "index", np.int64)], "gathered", axis=axis)
        if np.all(taps.weight == 1):
            return g, "gather"
        weight = taps.weight[:, 0].reshape([taps.rows] + [1] * (rank - axis - 1))
        return em.node("Mul", [g, em.const(weight, "weight")], "weighted"), "gather"
    g = em.node("Gather", [src, em.const(taps.index, "index", np.int64)], "gathered", axis=axis)
    weight = taps.weight.reshape([taps.rows, taps.width] + [1] * (rank - axis - 1))
    w = em.node("Mul", [g, em.const(weight, "weight")], "weighted")
    return em.reduce_sum(w, [axis + 1]), f"gather-sum x{taps.width}"
