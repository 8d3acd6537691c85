"""The kron-pairs form of nearest block-sum gradients (f x ... x f blocks, f from 2 to 8 per axis), static shapes:
measured faster than the pool and band forms on onnxruntime CPU for x2 (docs/benchmarks.md, "Static nearest 2x"),
and than the kron-sum and conv(ones) forms for the other factors (docs/dynamic-forms.md, the shape-generic
spelling's measurements, 2026-11-27).

Two passes, each a kernel onnxruntime runs at memory speed:
1. the last axis: dY flattened into rows of f*k values times kron(I_k, ones(f, 1)) (one MatMul; 32 -> 16 where the
   size allows for x2). Every row of dY has a length divisible by f, so the blocks never straddle a row.
2. every other resized axis (blocks of f consecutive entries): for x2 at opsets up to 18 one AveragePool with
   windows of 2 on those axes and 1 on the last (MLAS pooling; the MatMul's matrix holds 2^(d-1) so the mean is the
   sum); otherwise a Split of each block and f - 1 Adds per axis.
The sums are exact up to float32 rounding: the matrix and the pool's division scale by powers of two. Like every
MatMul form, a non-finite dY entry turns the other outputs of its MatMul row into NaN (0 * inf); the pairs pass
does not spread them. The registry shape: `NAME`, `applies(res, opset, itemsize)`, `cost(res, opset, itemsize)`,
`emit(em, src, res) -> (dX, per-axis form names)`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnx import helper

from dml_desc.canonical import Resampling

from .block import block_factors, pool_form
from .cost import NS_PER_BYTE, NS_PER_NODE
from .emitter import Emitter, is_symbolic

NAME = "kron-pairs"
MAX_FACTOR = 8               # the shape-generic spelling's largest measured factor (docs/dynamic-forms.md)
COLUMNS = (16, 8, 4, 2)      # outputs per MatMul row: the first dividing dY's size / f (2 always does for x2)
MIN_VALUES = 1 << 16         # dY values: measured faster than the band, kron and deconv forms from 118k (2x8x50x37)
POOL_BEATEN_AT = 1 << 21     # dY values: faster than the pool form from 4x32x64^2 (2.1M), slower at 1M (8x32x32^2)


def _known(n) -> int:
    return 1 if is_symbolic(n) else int(n)


def columns(res: Resampling) -> int:
    """Outputs per MatMul row: the first of COLUMNS dividing dY's size over the last axis's factor (symbolic dims
    as 1); 0 if none."""
    part = math.prod(_known(n) for n in res.out_shape) // _factor(res, len(res.axes) - 1)
    return next((k for k in COLUMNS if part % k == 0), 0)


def _factor(res: Resampling, axis: int) -> int:
    """The block factor of a resized axis: dY's length over X's."""
    return _known(res.out_shape[axis]) // _known(res.in_shape[axis])


def pooled(res: Resampling, opset: int) -> bool:
    """True where the pairs pass is one AveragePool: where the pool form applies (opset <= 18, windows of 2 on
    the last 2 or 3 axes)."""
    return pool_form(res, block_factors(res), opset) is not None


def applies(res: Resampling, opset: int, itemsize: int) -> bool:
    """Nearest block sums (weight 1, factors 2 to 8) on the last axis and at least one other, float32, where it
    measured fastest (one thread for x2, docs/benchmarks.md): from MIN_VALUES dY values; where the pool form
    applies (x2, opsets <= 18), only on 2 axes and from POOL_BEATEN_AT values (the pool form is faster below, and
    on 3 axes)."""
    if itemsize != 4:
        return False
    blocks = block_factors(res)
    last = len(res.axes) - 1
    if not blocks or last not in blocks or len(blocks) < 2 or any(w != 1.0 or not 2 <= f <= MAX_FACTOR
                                                                  for f, w in blocks.values()):
        return False
    if any(is_symbolic(n) for n in res.out_shape[min(blocks):]):     # the views multiply the dims after it
        return False
    values = math.prod(_known(n) for n in res.out_shape)
    if pooled(res, opset) and (len(blocks) != 2 or values < POOL_BEATEN_AT):
        return False
    return values >= MIN_VALUES and columns(res) > 0


def cost(res: Resampling, opset: int, itemsize: int = 4) -> float:
    """Estimated ns: the MatMul reads dY and writes half of it; the pairs pass reads that and writes dX (the
    Split form copies the half once more). Measured: 5.2 ms for X 6x40x96^2, one thread (docs/benchmarks.md)."""
    dy, dx = math.prod(res.out_shape), math.prod(res.in_shape)
    moved = dy + dy / 2 + dy / 2 + dx
    if not pooled(res, opset):
        moved += dy
    return moved * itemsize * NS_PER_BYTE * 1.4 + 2 * NS_PER_NODE


def emit(em: Emitter, src: str, res: Resampling) -> tuple[str, tuple]:
    """dX from dY (`src`): the block MatMul on the last axis, then the other axes' blocks (AveragePool or Split +
    Adds)."""
    axes = [a for a in res.resized_axes if a != len(res.axes) - 1]
    k, pool, f = columns(res), pooled(res, em.opset), _factor(res, len(res.axes) - 1)
    matrix = np.kron(np.eye(k), np.ones((f, 1))) * (2.0 ** len(axes) if pool else 1.0)
    rows = em.reshape(src, [-1, f * k])
    cur = em.node("MatMul", [rows, em.const(matrix, "pairs")], "kron")
    shape = list(res.out_shape[:-1]) + [res.in_shape[-1]]
    if pool:
        lead = len(res.axes) - len(res.resized_axes)
        viewed = em.reshape(cur, [-1, 1] + shape[lead:])
        window = [2] * len(axes) + [1]
        cur = em.node("AveragePool", [viewed], "pairs", kernel_shape=window, strides=window)
        names = ("kron-pairs avgpool",) * len(axes)
    else:
        for a in sorted(axes, reverse=True):
            cur, shape = _add_pairs(em, cur, shape, a, _factor(res, a))
        names = ("kron-pairs add",) * len(axes)
    return em.reshape(cur, list(res.in_shape)) if pool else cur, names + (f"kron-pairs matmul {f * k}->{k}",)


def _add_pairs(em: Emitter, src: str, shape: list, axis: int, f: int = 2) -> tuple[str, list]:
    """Sum the blocks of f consecutive entries along `axis`: view (rows, f, inner), Split, then Add the parts in
    order, each viewed at the result's shape (so the last Add writes it: no copy when it is dX)."""
    viewed = em.reshape(src, [-1, f, math.prod(shape[axis + 1:])])
    parts = [em.name("half") for _ in range(f)]         # the x2 form's names: its lowered bytes stay the same
    counted: dict[str, Any] = {"num_outputs": f} if em.opset >= 18 else {}     # Split-18 wants the count or the sizes
    em.nodes.append(helper.make_node("Split", [viewed], parts, axis=1, **counted))
    summed = shape[:axis] + [shape[axis] // f] + shape[axis + 1:]
    out = em.reshape(parts[0], summed)
    for part in parts[1:]:
        out = em.node("Add", [out, em.reshape(part, summed)], "pairsum")
    return out, summed
