"""The band form of one axis on the dynamic path: windows and weight blocks cut from the run-time matrix.

The dynamic path (onnx_ops.dynamic) builds each axis's matrix R (n X rows x m dY rows) in the graph. Contracting
an axis with all of R costs O(n * m) per row, although each X row reads a few dY rows only. The band form is
the static one (onnx_ops.forms.Band) with its plan computed at run time, once per run from R alone:

- the X rows are cut into tiles of TILE rows (R padded with zero rows to a whole number of tiles; the caller
  slices the padding off dX at the end);
- each tile reads the window of `width` consecutive dY rows that holds every nonzero of its rows, width the
  widest tile's span (at least 1, at most m), a window clamped to start in [0, m - width] like the static band's;
- per tile, the (TILE x width) block of R under its window is gathered (GatherElements), dY's windows are
  gathered (Gather), and one batched MatMul contracts them all.

Cost O(n * width) per row instead of O(n * m); the plan itself costs O(n * m) once per run (R's size). Every
sum runs in a fixed order (MatMul over the window), so results are bitwise identical across runs and thread
counts. The ops are from opset 12 (Min / Max on int64; Range, GatherElements and a run-time pads input from 11).
"""
from __future__ import annotations

import numpy as np

from .forms import Emitter

TILE = 16             # X rows per tile: windows of about TILE * m / n + taps dY rows
BAND_MIN_OPSET = 12   # Range, GatherElements, Pad's pads input (11), Min / Max on int64 (12)


def _int(em: Emitter, values, what: str) -> str:
    return em.const(values, what, np.int64)


def _reduce(em: Emitter, op: str, src: str, axes: list) -> str:
    """ReduceMin / ReduceMax over `axes` without keeping them (axes an input from opset 18, an attribute before)."""
    if em.opset >= 18:
        return em.node(op, [src, _int(em, axes, "axes")], "reduced", keepdims=0)
    return em.node(op, [src], "reduced", axes=axes, keepdims=0)


def band_plan(em: Emitter, matrix: str, max_tile: int = TILE) -> tuple:
    """(blocks, index, m) of R = `matrix` (n x m, float32): blocks R padded with zero rows to whole tiles, as
    [tiles, tile, m] (tiles = ceil(n / max_tile), tile = ceil(n / tiles)); index [tiles, width] the dY rows
    each tile's window reads; m as a [1] tensor."""
    dims = em.node("Shape", [matrix], "rdims")
    n = em.node("Slice", [dims, _int(em, [0], "start"), _int(em, [1], "end")], "n")
    m = em.node("Slice", [dims, _int(em, [1], "start"), _int(em, [2], "end")], "m")
    tiles = em.node("Max", [_ceil_div(em, n, _int(em, [max_tile], "max_tile")), _int(em, [1], "one")], "tiles")
    tile = _ceil_div(em, n, tiles)                     # padding < tiles rows: under 1 / max_tile of n
    extra = em.node("Sub", [em.node("Mul", [tiles, tile], "padded_n"), n], "extra")
    pads = em.node("Concat", [_int(em, [0, 0], "zeros"), extra, _int(em, [0], "zero")], "pads", axis=0)
    padded = em.node("Pad", [matrix, pads], "padded")
    blocks = em.node("Reshape", [padded, em.node("Concat", [tiles, tile, m], "block_shape", axis=0)], "blocks")
    return blocks, _windows(em, blocks, m), m


def _windows(em: Emitter, blocks: str, m: str) -> str:
    """[tiles, width]: the dY rows each tile reads, from the first to the last nonzero weight of its rows
    (width the widest span, at least 1, at most m; starts clamped to [0, m - width])."""
    m_scalar = em.node("Squeeze", [m], "m_scalar", **_squeeze_axes(em))
    cols = em.node("Range", [_int(em, 0, "zero"), m_scalar, _int(em, 1, "one")], "cols")
    used = em.node("Not", [em.node("Equal", [blocks, em.const(0.0, "zero", np.float32)], "unused")], "used")
    first = _reduce(em, "ReduceMin", em.node("Where", [used, cols, m], "first_col"), [1, 2])
    last = _reduce(em, "ReduceMax", em.node("Where", [used, cols, _int(em, [-1], "none")], "last_col"), [1, 2])
    span = _reduce(em, "ReduceMax", em.node("Sub", [last, first], "span"), [0])
    width = em.node("Min", [em.node("Max", [em.node("Add", [span, _int(em, 1, "one")], "width"),
                                            _int(em, 1, "one")], "width"), m_scalar], "width")
    starts = em.node("Max", [em.node("Min", [first, em.node("Sub", [m, width], "last_start")], "starts"),
                             _int(em, 0, "zero")], "starts")
    steps = em.node("Range", [_int(em, 0, "zero"), width, _int(em, 1, "one")], "steps")
    return em.node("Add", [em.node("Reshape", [starts, _int(em, [-1, 1], "column")], "starts"), steps], "index")


def _ceil_div(em: Emitter, a: str, b: str) -> str:
    """ceil(a / b) of int64 tensors, a >= 0 and b > 0: (a + b - 1) / b."""
    up = em.node("Sub", [em.node("Add", [a, b], "sum"), _int(em, [1], "one")], "rounded_up")
    return em.node("Div", [up, b], "ceil")


def _squeeze_axes(em: Emitter) -> dict:
    """Squeeze's axes: an attribute before opset 13 (an input after, where a missing one squeezes every 1)."""
    return {"axes": [0]} if em.opset < 13 else {}


def band_weights(em: Emitter, blocks: str, index: str) -> str:
    """[tiles, tile, width]: each tile's rows of R under its window."""
    per_row = em.node("Reshape", [index, _int(em, [0, 1, -1], "per_row")], "index")
    tiles_by_rows = em.node("Shape", [blocks], "block_shape", end=2) if em.opset >= 15 else \
        em.node("Slice", [em.node("Shape", [blocks], "block_shape"), _int(em, [0], "start"), _int(em, [2], "end")],
                "tiles_by_rows")
    rows = em.node("Concat", [tiles_by_rows, _int(em, [1], "one")], "rows", axis=0)
    spread = em.node("Expand", [per_row, rows], "index")                   # [tiles, tile, width]
    return em.node("GatherElements", [blocks, spread], "weights", axis=2)


def contract_band(em: Emitter, cur: str, weights: str, index: str, m: str, axis: int, rank: int) -> str:
    """cur's `axis` (size m, not the last) contracted into tiles * tile rows (n plus the padding). A cur whose
    axis is not m long fails in onnxruntime, as a dense MatMul would (_checked)."""
    shape = em.node("Shape", [cur], "shape")
    index = _checked(em, index, em.node("Slice", [shape, _int(em, [axis], "start"), _int(em, [axis + 1], "end")],
                                        "length"), m)
    windows = em.node("Gather", [cur, index], "windows", axis=axis)        # [..., tiles, width, rest...]
    flat = em.node("Reshape", [windows, _int(em, [0] * (axis + 2) + [-1], "fold")], "windows")
    product = em.node("MatMul", [weights, flat], "band")                     # [..., tiles, tile, R]
    rest = em.node("Slice", [shape, _int(em, [axis + 1], "start"), _int(em, [rank], "end")], "rest")
    back = em.node("Concat", [_int(em, [0] * axis + [-1], "lead"), rest], "unfold", axis=0)
    return em.node("Reshape", [product, back], "unfolded")


def _checked(em: Emitter, index: str, length: str, m: str) -> str:
    """index plus a zero that onnxruntime computes only where dY's axis is m long: a one-element Reshape to
    [1], or to [2] (an error) on a mismatch. Shapes only, and no graph optimizer removes it (a Reshape of dY
    to a shape with m in it was removed as a no-op)."""
    target = em.node("Where", [em.node("Equal", [length, m], "matches"), _int(em, [1], "one"), _int(em, [2], "two")],
                     "guard_shape")
    return em.node("Add", [index, em.node("Reshape", [_int(em, [0], "zero"), target], "guard")], "index")
