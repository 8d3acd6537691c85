"""The edges of a shape-generic form (onnx_ops.generic_forms): dY padded (zeros, edge, mirrored), run-time dims
read from a Shape, and the fold of virtual rows beyond an edge onto the edge rows. Used by onnx_ops.generic_emit."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .forms import Emitter

if TYPE_CHECKING:
    from .generic_forms import GenericForm


def axis_dims(em: Emitter, shape: str, start: int, end: int) -> str:
    """shape[start:end] (a Shape's output sliced: run-time dims)."""
    return em.node("Slice", [shape, em.const([start], "start", np.int64), em.const([end], "end", np.int64)], "dims")


def fold_edges(em: Emitter, z: str, x: str, axis: int, q: int, rank: int) -> str:
    """z (length n + 2q along `axis`: q virtual rows beyond each edge) folded to length n: the virtual rows are
    added onto rows 0 and n - 1 (each placed by a Pad of n - 1 read from X's shape: right for every n >= 1)."""
    big = np.iinfo(np.int64).max

    def part(start, end):
        return em.node("Slice", [z, em.const([start], "start", np.int64), em.const([end], "end", np.int64),
                                 em.const([axis], "axis", np.int64)], "part")

    def summed(start, end):
        p = part(start, end)
        return p if q == 1 else em.reduce_sum(p, [axis], keepdims=1)

    n1 = em.node("Sub", [axis_dims(em, em.node("Shape", [x], "xshape"), axis, axis + 1), em.const([1], "one", np.int64)],
                 "n_minus_1")

    def placed(edge, last_row):      # edge (length 1) padded by n - 1 after it (row 0) or before it (row n - 1)
        before, after = (axis, 2 * rank - axis - 1) if last_row else (rank + axis, rank - axis - 1)
        pads = em.node("Concat", [em.const([0] * before, "zeros", np.int64), n1,
                                  em.const([0] * after, "zeros", np.int64)], "fold_pads", axis=0)
        return em.node("Pad", [edge, pads], "edge_row")
    out = em.node("Add", [part(q, -q), placed(summed(0, q), last_row=False)], "folded")
    return em.node("Add", [out, placed(summed(-q, big), last_row=True)], "folded")


def padded(em: Emitter, src: str, form: GenericForm) -> str:
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
        src = mirror(em, src, a, f.pad_begin, f.pad_end)
    return src


def mirror(em: Emitter, src: str, axis: int, before: int, after: int) -> str:
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
