"""kron: every resized axis is I (x) K (integer factors, the same weights in every block): the last axis as one
MatMul by a small block-diagonal matrix, the others as ReduceSum (sums) or a repeating Gather (each dY entry
feeds p dX entries; phases of weight 0 read an appended zero row)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.weights import gradient_taps

from .emitter import Emitter

CHUNK = 16           # columns per MatMul row in the kron form: measured fastest on onnxruntime CPU (README)


@dataclass(frozen=True)
class KronForm:
    """The kron form of a gradient: per resized axis a block kernel K (p, q), the other axes' constant weight
    folded into one scale, and the number of last-axis blocks one MatMul row covers.
    """
    kernels: dict        # axis -> K (p, q): block b of p dX entries reads block b of q dY entries
    scale: float         # constant weights of the other axes, folded into the MatMul
    chunk: int           # blocks of the last axis per MatMul row (0: the last axis is not resized)

    def names(self, rank: int) -> tuple:
        """The per-axis form names the lowering report prints (kron-matmul, kron-sum, kron-gather)."""
        def name(a, k):
            p, q = k.shape
            if a == rank - 1:
                return f"kron-matmul {self.chunk * q}->{self.chunk * p}"
            return "kron-sum" if q > 1 else "kron-gather"
        return tuple(name(a, k) for a, k in sorted(self.kernels.items()))


def kron_form(res: Resampling) -> KronForm | None:
    """The kron form, when every resized axis is I (x) K and the axes other than the last have one weight
    per axis (repeats may also skip phases: weight 0). 1x1 kernels only scale."""
    last = len(res.axes) - 1
    found = {a: gradient_taps(res.axes[a], res).block_kernel() for a in res.resized_axes}
    kernels = {a: k for a, k in found.items() if k is not None}
    if len(kernels) < len(found):
        return None
    scale = 1.0
    for a, k in list(kernels.items()):
        if a == last and k.size > 1:
            continue
        nonzero = k[k != 0]
        if min(k.shape) > 1 or not len(nonzero) or np.ptp(nonzero) or (k.shape[1] > 1 and len(nonzero) < k.size):
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
    """Emit the kron form of the gradient of `res` on `src` (dY): one MatMul on the last axis by a small
    block-diagonal matrix, ReduceSum / Gather on the other resized axes; returns dX's name.
    """
    last = len(res.axes) - 1
    shape, cur, flat = list(res.out_shape), src, False
    late = last not in form.kernels and math.prod(res.in_shape) < math.prod(res.out_shape)   # scale the smaller side
    if last in form.kernels:
        cur, flat = _kron_matmul(em, cur, res, form)
        shape[last] = res.in_shape[last]
    elif not late:
        cur = em.scale(cur, form.scale)
    for repeat, a in sorted((k.shape[1] == 1, a) for a, k in form.kernels.items() if a != last):   # sums first
        k = form.kernels[a]
        if repeat:
            cur = _repeat(em, em.reshape(cur, shape) if flat else cur, k[:, 0], a, shape)
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


def _repeat(em: Emitter, src: str, weights: np.ndarray, axis: int, shape: list) -> str:
    """kron-gather: each entry along `axis` is repeated p times (a Gather); phases of weight 0 read an appended
    zero row."""
    p = len(weights)
    index = np.arange(shape[axis] * p) // p
    if np.any(weights == 0):
        pads = [0] * (2 * len(shape))
        pads[len(shape) + axis] = 1
        src = em.pad(src, pads)
        index = np.where(np.tile(weights, shape[axis]) == 0, shape[axis], index)
    return em.node("Gather", [src, em.const(index, "index", np.int64)], "kron_gather", axis=axis)

