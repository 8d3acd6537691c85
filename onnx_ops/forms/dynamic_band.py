"""The band form of one axis on the dynamic path: windows and weight blocks built from the run-time taps.

The dynamic path (onnx_ops.forms.dynamic) reads each axis's taps in the graph (onnx_ops.forms.dynamic_taps: [P, m]
tables of X rows and weights). Each X row reads a few dY rows, so the band form is the static one (onnx_ops.forms.Band)
with its plan computed at run time, once per run, from the taps alone (never a dense n x m matrix):

- the X rows are cut into tiles of TILE rows (the last tile padded with zero rows; the caller slices the padding
  off dX at the end);
- each tile reads the window of `width` consecutive dY rows that holds every nonzero weight of its rows, width the
  widest tile's span (at least 1, at most m), a window clamped to start in [0, m - width] like the static band's.
  A tile's first and last dY row are found by sorting: each dY row names the tiles its taps reach, and Unique
  gives the first (and, on the reversed list, the last) dY row naming each tile;
- each weight is scattered (ScatterElements, every position written once) into its tile's (TILE x width) block,
  dY's windows are gathered (Gather), and one batched MatMul contracts them all.

Memory and time O(m * P log(m * P) + n * width) per axis, width about TILE * m / n + P: linear in the lengths
(docs/limits.md). The windows and weights are those of the dense matrix the path used to build, so the sums are
the same. Every sum runs in a fixed order (MatMul over the window): results are bitwise identical across runs and
thread counts. The ops are from opset 12 (Min / Max on int64; Range, Unique, ScatterElements and GatherElements
from 11).
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

from .cost import NS_PER_BLOCK, NS_PER_BYTE, NS_PER_MAC, PIPELINE
from .dynamic_taps import RunTaps, dy_rows, squeeze_axes, unsqueeze
from .dynamic_taps import ints as _int
from .emitter import Emitter

TILE = 16             # X rows per tile: windows of about TILE * m / n + taps dY rows
BAND_MIN_OPSET = 12   # Range, GatherElements, Pad's pads input (11), Min / Max on int64 (12)


def band_entries(n: int, m: int, period: int) -> int:
    """Entries of the largest table band_plan builds for lengths n, m known when lowering, where each dY row reads
    `period` X rows and the map is about m / n (its weight blocks; the tiles each dY row names)."""
    tiles = max(math.ceil(n / TILE), 1)
    tile = math.ceil(n / tiles)
    width = min(m, math.ceil(m / n * (tile + period)) + 1)
    return max(tiles * tile * width, m * (math.ceil(period / tile) + 1))


def _reduce(em: Emitter, op: str, src: str, axes: list) -> str:
    """ReduceMin / ReduceMax / ReduceSum over `axes` without keeping them (axes an input from opset 18, from 13
    for ReduceSum; an attribute before)."""
    if em.opset >= (13 if op == "ReduceSum" else 18):
        return em.node(op, [src, _int(em, axes, "axes")], "reduced", keepdims=0)
    return em.node(op, [src], "reduced", axes=axes, keepdims=0)


def band_plan(em: Emitter, taps: RunTaps, max_tile: int = TILE) -> tuple:
    """(weights, index, m) of one axis's taps: weights [tiles, tile, width] float32, the taps' weights in each tile's
    window (tiles = tiles_of(n), tile = ceil(n / tiles); rows past n are zero); index [tiles, width]
    the dY rows each tile's window reads; m as a [1] tensor."""
    tiles = tiles_of(em, taps.n, max_tile)
    tile = _ceil_div(em, taps.n, tiles)                # padding < tiles rows: under 1 / max_tile of n
    tile_of = em.node("Div", [taps.index, tile], "tile_of")                                   # [P, m]
    first, last = _reach(em, taps, tile_of, tiles)
    index, starts, width = _windows(em, first, last, taps.m)
    return _scattered(em, taps, tile_of, starts, width, tiles, tile), index, taps.m


def tiles_of(em: Emitter, n: str, max_tile: int = TILE) -> str:
    """[1] int64: the band's tiles of X rows for n rows, max(ceil(n / max_tile), 1) (each of ceil(n / tiles) rows)."""
    return em.node("Max", [_ceil_div(em, n, _int(em, [max_tile], "max_tile")), _int(em, [1], "one")], "tiles")


def _reach(em: Emitter, taps: RunTaps, tile_of: str, tiles: str) -> tuple:
    """([tiles], [tiles]): the first and the last dY row with a nonzero weight in each tile's X rows (m and -1
    where there is none). Each dY row o names the tiles from its lowest to its highest read row's (reach(o) of them;
    a dY row with no weight, none); Unique finds, per tile, the first naming, and on the reversed list the last."""
    low = _reduce(em, "ReduceMin", em.node("Where", [taps.used, tile_of, tiles], "low"), [0])      # [m]
    high = _reduce(em, "ReduceMax", em.node("Where", [taps.used, tile_of, _int(em, [-1], "none")], "high"), [0])
    reach = em.node("Add", [em.node("Sub", [high, low], "reach"), _int(em, [1], "one")], "reach")
    most = em.node("Max", [_reduce(em, "ReduceMax", reach, [0]), _int(em, 1, "one")], "most")    # scalar >= 1
    steps = em.node("Range", [_int(em, 0, "zero"), most, _int(em, 1, "one")], "steps")
    named = em.node("Add", [unsqueeze(em, low, 1), steps], "named")                           # [m, most]
    reached = em.node("LessOrEqual", [named, unsqueeze(em, high, 1)], "reached")
    named = em.node("Where", [reached, named, tiles], "named")                    # else the spare tile `tiles`
    flat = em.node("Reshape", [named, _int(em, [-1], "flat")], "named")
    backwards = em.node("Slice", [flat, _int(em, [-1], "start"), _int(em, [-2 ** 63], "end"), _int(em, [0], "axis"),
                                  _int(em, [-1], "step")], "reversed")
    total = em.node("Sub", [em.node("Size", [flat], "entries"), _int(em, 1, "one")], "last_entry")
    bound = em.node("Add", [tiles, _int(em, [1], "one")], "slots")
    fill = [em.node("Expand", [v, bound], "fill") for v in (taps.m, _int(em, [-1], "none"))]
    found = []
    for keys, data, backward in ((flat, fill[0], False), (backwards, fill[1], True)):
        named_tiles, at = em.name("tile"), em.name("at")
        em.nodes.append(helper.make_node("Unique", [keys], [named_tiles, at], sorted=1))
        entry = em.node("Sub", [total, at], "entry") if backward else at
        row = em.node("Div", [entry, most], "dy_row")
        found.append(em.node("Slice", [em.node("ScatterElements", [data, named_tiles, row], "reach", axis=0),
                                       _int(em, [0], "start"), tiles], "reach"))
    return found[0], found[1]


def _windows(em: Emitter, first: str, last: str, m: str) -> tuple:
    """(index [tiles, width], starts [tiles], width [1]): each tile's window from its first and last dY row (width
    the widest span, at least 1, at most m; starts clamped to [0, m - width])."""
    m_scalar = em.node("Squeeze", [m], "m_scalar", **squeeze_axes(em))
    span = _reduce(em, "ReduceMax", em.node("Sub", [last, first], "span"), [0])
    width = em.node("Min", [em.node("Max", [em.node("Add", [span, _int(em, 1, "one")], "width"),
                                            _int(em, 1, "one")], "width"), m_scalar], "width")
    starts = em.node("Max", [em.node("Min", [first, em.node("Sub", [m, width], "last_start")], "starts"),
                             _int(em, 0, "zero")], "starts")
    steps = em.node("Range", [_int(em, 0, "zero"), width, _int(em, 1, "one")], "steps")
    index = em.node("Add", [em.node("Reshape", [starts, _int(em, [-1, 1], "column")], "starts"), steps], "index")
    return index, starts, em.node("Reshape", [width, _int(em, [1], "one")], "width")


def _scattered(em: Emitter, taps: RunTaps, tile_of: str, starts: str, width: str, tiles: str, tile: str) -> str:
    """[tiles, tile, width] float32: each tap's weight at (its X row's tile, row in the tile, dY row - window start),
    zero elsewhere; taps of weight 0 go to one spare slot past the end, which is dropped."""
    cols = dy_rows(em, taps)
    offset = em.node("Sub", [cols, em.node("Gather", [starts, tile_of], "start_of")], "offset")
    size = em.node("Mul", [em.node("Mul", [tiles, tile], "padded_n"), width], "size")
    position = em.node("Where", [taps.used, em.node("Add", [em.node("Mul", [taps.index, width], "row_start"), offset],
                                                    "position"), size], "position")
    return em.node("Reshape", [scatter_flat(em, position, taps.weight, size),
                               em.node("Concat", [tiles, tile, width], "block_shape", axis=0)], "weights")


def scatter_flat(em: Emitter, position: str, weight: str, size: str) -> str:
    """[size] float32: zeros with weight[k] at position[k] (each position in [0, size) at most once; positions
    equal to size land in a spare slot that is dropped). The zeros are read from the weights (w - w), not made by
    ConstantOfShape: onnxruntime folds constants in every If branch when the session starts, and a dense matrix
    of lengths known then would be allocated even where its branch is never taken (n = 20,000: 9 GB)."""
    spare = em.node("Add", [size, _int(em, [1], "one")], "slots")
    some = em.node("ReduceMax", [weight], "some_weight", keepdims=1)
    zeros = em.node("Expand", [em.node("Reshape", [em.node("Sub", [some, some], "zero"), _int(em, [1], "one")],
                                       "zero"), spare], "zeros")
    flat = [em.node("Reshape", [t, _int(em, [-1], "flat")], "flat") for t in (position, weight)]
    scattered = em.node("ScatterElements", [zeros] + flat, "scattered", axis=0)
    return em.node("Slice", [scattered, _int(em, [0], "start"), size], "scattered")


def _ceil_div(em: Emitter, a: str, b: str) -> str:
    """ceil(a / b) of int64 tensors, a >= 0 and b > 0: (a + b - 1) / b."""
    up = em.node("Sub", [em.node("Add", [a, b], "sum"), _int(em, [1], "one")], "rounded_up")
    return em.node("Div", [up, b], "ceil")


def contract_band(em: Emitter, cur: str, weights: str, index: str, m: str, axis: int, elem: int | None = None) -> str:
    """cur's `axis` (size m, not the last) contracted into tiles * tile rows (n plus the padding), as the MatMul
    gives them: [..., tiles, tile, R] (R the product of the later axes; unfold views it as cur's rank). A cur whose
    axis is not m long fails in onnxruntime, as a dense MatMul would (_checked). Where the windows are dY's rows
    in order, each once (plain_windows: a periodic map whose period divides the tile), an If reads them as a view
    of cur (a Reshape) instead of copying them (the Gather): the same values into the same MatMul. The If needs
    cur's element type `elem` (without it, the Gather alone)."""
    shape = em.node("Shape", [cur], "shape")
    index = _guarded(em, index, shape, axis, m)
    fold = _int(em, [0] * (axis + 2) + [-1], "fold")

    def product(windows: str) -> str:                                        # [..., tiles, tile, R]
        return em.node("MatMul", [weights, em.node("Reshape", [windows, fold], "windows")], "band")
    if elem is None:
        return product(em.node("Gather", [cur, index], "windows", axis=axis))
    lead = em.node("Slice", [shape, _int(em, [0], "start"), _int(em, [axis], "end")], "lead")
    split = em.node("Concat", [lead, em.node("Shape", [index], "windows_shape"), _int(em, [-1], "rest")],
                    "split", axis=0)
    viewed = em.subgraph(lambda: [(product(em.node("Reshape", [cur, split], "windows")), elem, axis + 3)])
    gathered = em.subgraph(lambda: [(product(em.node("Gather", [cur, index], "windows", axis=axis)), elem,
                                      axis + 3)])
    return em.node("If", [plain_windows(em, index, m)], "band", then_branch=viewed, else_branch=gathered)


def fold(em: Emitter, cur: str, axis: int) -> str:
    """cur viewed with the axes after `axis` flattened into one (a Reshape)."""
    return em.node("Reshape", [cur, _int(em, [0] * (axis + 1) + [-1], "fold")], "folded")


def unfold(em: Emitter, product: str, shape: str, axis: int, rank: int) -> str:
    """A contraction's `product` ([..., rows of `axis`, ...] with the later axes flattened or not) viewed with the
    later axes of `shape` (cur's shape): a Reshape, free where a node of the same graph reads it (onnxruntime
    copies a Reshape that writes a graph's or an If branch's output)."""
    rest = em.node("Slice", [shape, _int(em, [axis + 1], "start"), _int(em, [rank], "end")], "rest")
    back = em.node("Concat", [_int(em, [0] * axis + [-1], "lead"), rest], "unfold", axis=0)
    return em.node("Reshape", [product, back], "unfolded")


def one_tap(em: Emitter, taps: RunTaps) -> str:
    """[1] bool: no X row reads more than one dY row (nearest and linear downsampling by 2 or more: each dY row's
    taps land on X rows of their own). A dY row's taps are distinct X rows (a clamped row's weights are summed in
    one residue), so the used taps' X rows are distinct exactly where Unique finds as many as there are taps
    (the unused entries, all -1, add one value where there are any)."""
    keys = em.node("Reshape", [em.node("Where", [taps.used, taps.index, _int(em, -1, "none")], "tap_rows"),
                               _int(em, [-1], "flat")], "tap_rows")
    distinct = em.node("Size", [em.node("Unique", [keys], "distinct", sorted=0)], "distinct")
    used = em.node("ReduceSum", [em.node("Cast", [taps.used], "used", to=TensorProto.INT64)], "taps", keepdims=0)
    spare = em.node("Cast", [em.node("Less", [used, em.node("Size", [keys], "entries")], "some_unused")], "spare",
                    to=TensorProto.INT64)
    same = em.node("Equal", [distinct, em.node("Add", [used, spare], "expected")], "one_tap")
    return em.node("Reshape", [same, _int(em, [1], "one")], "one_tap")


def gather_one_tap(em: Emitter, cur: str, taps: RunTaps, axis: int, rank: int, ranked: bool = True,
                   to: int | None = None) -> str:
    """cur's `axis` contracted into its n rows where one_tap holds, in cur's rank or (not `ranked`) with the later
    axes flattened: each X row is its one dY row times that tap's weight (cast `to` cur's type where given; an X row
    with no tap reads dY row 0 times 0). A Gather and a Mul instead of a MatMul; the value is the dense or band sum's
    (one term, the others 0)."""
    slots = em.node("Where", [taps.used, taps.index, taps.n], "slot")            # unused taps: a spare slot n
    rows = em.node("Expand", [dy_rows(em, taps), em.node("Shape", [taps.index], "tables")], "dy_row")
    source = scatter_flat(em, slots, rows, taps.n)
    weight = scatter_flat(em, slots, taps.weight, taps.n)
    shape = em.node("Shape", [cur], "shape")
    if not ranked:
        cur, rank = fold(em, cur, axis), axis + 2
    weight = em.node("Reshape", [weight, _int(em, [-1] + [1] * (rank - 1 - axis), "column")], "tap_weight")
    if to is not None:
        weight = em.node("Cast", [weight], "tap_weight", to=to)
    return em.node("Mul", [em.node("Gather", [cur, _guarded(em, source, shape, axis, taps.m)], "tap_rows", axis=axis),
                           weight], "one_tap")


def dense_terms(em: Emitter, taps: RunTaps, most: int, itemsize: int) -> tuple:
    """([1] bool small, [1] float saved, [1] float blocks): the terms of dense_wins, computed once per axis. small:
    the dense matrix (taps_matrix) has at most `most` entries; saved: in the cost model's terms
    (onnx_ops.forms.cost), per value of the later axes, the dense matrix's n * m multiplies less the band's gather
    of m + tiles * width dY values and its tiles * tile * width multiplies; blocks: the band's tiles * width blocks'
    cost. The band's shape is estimated from the lengths and the taps per dY row P (tiles * tile ~ n, tile ~ TILE,
    tiles * width ~ m + (m * P + n) / TILE), so that its plan is built only where the band may be taken."""
    p = em.node("Slice", [em.node("Shape", [taps.index], "tables"), _int(em, [0], "start"), _int(em, [1], "end")],
                "p")
    entries = em.node("Mul", [taps.n, taps.m], "entries")
    counts = em.node("Cast", [em.node("Concat", [entries, taps.m, em.node("Mul", [taps.m, p], "spanned"), taps.n],
                                      "counts", axis=0)], "counts", to=TensorProto.FLOAT)
    read, mac = itemsize * NS_PER_BYTE * PIPELINE, NS_PER_MAC
    # columns: saved (dense - band), blocks; rows: n * m, m, m * P, n
    costs = em.const([[mac, 0.0], [-2 * read - TILE * mac, NS_PER_BLOCK], [-read / TILE - mac, NS_PER_BLOCK / TILE],
                      [-read / TILE - mac, NS_PER_BLOCK / TILE]], "ns", np.float32)
    column = em.node("Reshape", [counts, _int(em, [4, 1], "column")], "counts")
    ns = _reduce(em, "ReduceSum", em.node("Mul", [column, costs], "ns"), [0])                     # [2]
    saved, blocks = (em.node("Slice", [ns, _int(em, [k], "start"), _int(em, [k + 1], "end")], "ns") for k in (0, 1))
    return em.node("LessOrEqual", [entries, _int(em, [most], "most")], "small"), saved, blocks


def dense_wins(em: Emitter, terms: tuple, later: str) -> str:
    """[1] bool: the dense matrix is small and costs less than the band (dense_terms), its blocks' cost shared by
    `later` values ([1] int64)."""
    small, saved, blocks = terms
    per_value = em.node("Div", [blocks, em.node("Cast", [later], "later", to=TensorProto.FLOAT)], "block_ns")
    return em.node("And", [small, em.node("Less", [saved, per_value], "cheaper")], "dense_cheaper")


def band_possible(em: Emitter, terms: tuple) -> str:
    """[1] bool: an axis of several taps per X row may take the band at a call site: the dense matrix is large or
    saves nothing before the blocks' cost (dense_wins is false for some number of later values)."""
    small, saved, _ = terms
    loses = em.node("GreaterOrEqual", [saved, em.const([0.0], "zero", np.float32)], "dense_loses")
    return em.node("Or", [em.node("Not", [small], "large"), loses], "band_possible")


def taps_matrix(em: Emitter, taps: RunTaps, transposed: bool = False) -> str:
    """[n, m] float32: R, the taps' weights at (X row, dY row) (zero elsewhere); [m, n] R^T where `transposed`."""
    rows = unsqueeze(em, dy_rows(em, taps), 0)
    across, along = (taps.n, taps.index) if transposed else (taps.m, rows)
    start = em.node("Mul", [rows if transposed else taps.index, across], "row_start")
    size = em.node("Mul", [taps.m, taps.n], "size")
    position = em.node("Where", [taps.used, em.node("Add", [start, along], "position"), size], "position")
    shape = [taps.m, taps.n] if transposed else [taps.n, taps.m]
    return em.node("Reshape", [scatter_flat(em, position, taps.weight, size),
                               em.node("Concat", shape, "matrix_shape", axis=0)], "matrix")


def plain_windows(em: Emitter, index: str, m: str) -> str:
    """[1] bool: the windows [tiles, width] read dY's m rows in order, each once (index == 0, 1, ..., m - 1)."""
    flat = em.node("Reshape", [index, _int(em, [-1], "flat")], "flat_index")
    size = em.node("Size", [flat], "window_rows")
    in_order = em.node("Equal", [flat, em.node("Range", [_int(em, 0, "zero"), size, _int(em, 1, "one")], "rows")],
                       "in_order")
    return em.node("And", [all_true(em, in_order), em.node("Equal", [em.node("Reshape", [size, _int(em, [1], "one")],
                                                                               "window_rows"), m], "covers")],
                   "plain")


def all_true(em: Emitter, cond: str) -> str:
    """[1] bool: every entry of the bool tensor `cond` is true (and it has at least one)."""
    least = em.node("ReduceMin", [em.node("Cast", [cond], "as_int", to=TensorProto.INT32)], "least", keepdims=1)
    least = em.node("Reshape", [least, _int(em, [1], "one")], "least")
    return em.node("Equal", [least, em.const([1], "one", np.int32)], "all")


def _guarded(em: Emitter, index: str, shape: str, axis: int, m: str) -> str:
    """index, checked (_checked) against the length of `axis` in `shape`."""
    return _checked(em, index, em.node("Slice", [shape, _int(em, [axis], "start"), _int(em, [axis + 1], "end")],
                                       "length"), m)


def _checked(em: Emitter, index: str, length: str, m: str) -> str:
    """index plus a zero that onnxruntime computes only where dY's axis is m long: a one-element Reshape to
    [1], or to [2] (an error) on a mismatch. Shapes only, and no graph optimizer removes it (a Reshape of dY
    to a shape with m in it was removed as a no-op)."""
    target = em.node("Where", [em.node("Equal", [length, m], "matches"), _int(em, [1], "one"), _int(em, [2], "two")],
                     "guard_shape")
    return em.node("Add", [index, em.node("Reshape", [_int(em, [0], "zero"), target], "guard")], "index")
