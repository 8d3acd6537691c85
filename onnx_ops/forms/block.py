"""block sums (nearest, integer factor): Reshape + ReduceSum, or the same sums as one AveragePool (pool)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.weights import gradient_taps

from .cost import POOL_MAX_OPSET, POOL_WINDOW
from .emitter import Emitter


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
    """Emit the Reshape + ReduceSum form: each resized axis sums blocks of `blocks[axis][0]` dY entries."""
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


# ---- pool: one AveragePool ------------------------------------------------------------------

@dataclass(frozen=True)
class PoolForm:
    """Block sums as one AveragePool times the block size: dY viewed as [lead dims, 1, *pooled] (one channel, so
    onnxruntime's NCHWc rewrite, measured 1.5x slower here, leaves it alone), a window on each pooled axis."""
    lead: int            # the axes before the pooled ones, folded into the pool's batch
    kernel: tuple        # the window on each pooled (resized) axis
    scale: float         # prod(F * weight): the mean back to the weighted sum


def pool_form(res: Resampling, blocks: dict | None, opset: int) -> PoolForm | None:
    """The pool form of block sums (`block_factors`) where it measured fastest (the rule above the constants):
    windows of 2 on the last 2 or 3 axes, all of them resized, at an opset whose AveragePool runs on MLAS."""
    if not blocks or opset > POOL_MAX_OPSET or not 2 <= len(blocks) <= 3:
        return None
    lead = len(res.axes) - len(blocks)
    if sorted(blocks) != list(range(lead, len(res.axes))) or any(f != POOL_WINDOW for f, _ in blocks.values()):
        return None
    return PoolForm(lead, (POOL_WINDOW,) * len(blocks), math.prod(f * w for f, w in blocks.values()))


def emit_pool(em: Emitter, src: str, res: Resampling, form: PoolForm) -> str:
    """Emit Reshape + AveragePool + Mul (+ Reshape): exact up to float32 rounding of the mean and the scaling
    (none when the block size is a power of two: it divides and multiplies exactly)."""
    viewed = em.reshape(src, [-1, 1] + list(res.out_shape[form.lead:]))
    mean = em.node("AveragePool", [viewed], "mean", kernel_shape=list(form.kernel), strides=list(form.kernel))
    return em.reshape(em.scale(mean, form.scale), list(res.in_shape))

