"""One axis at a time: the gather form (Gather + Mul + ReduceSum, with MatMul piles for edge rows), and the
per-axis plan: for each resized axis, in the cheapest order, a band, a transposed band or the gather form."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.weights import Taps, gradient_taps

from .bands import Band, band, emit_band, emit_band_transposed, shared_band
from .cost import band_cost, copy_cost, gather_form_cost, pads_zero_row, swapped, transposes_cost
from .emitter import Emitter

DENSE_MAX_COLS = 16  # the gather form's last axis as one dense MatMul up to this many dY columns
MAX_TILE = 64        # the largest band tile tried
# Tiles that do not divide the axis (the last one padded with zero rows, then sliced off), tried only where the plan
# without them takes a dense MatMul on an axis of at least PADDED_MIN_ROWS X rows that dY has PADDED_MIN_GROWTH times
# as many rows: there they measured faster; elsewhere the cost model misjudged them (docs/benchmarks.md, "Padded
# band tiles").
PADDED_TILES = (8, 16, 32, 64)
PADDED_MIN_ROWS = 96
PADDED_MIN_GROWTH = 1.4


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
    """Emit the gather form for one axis: per input index the few dY entries touching it (Gather + Mul +
    ReduceSum, plus MatMul piles); returns (output name, form name).
    """
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
        index, weight, padded = taps.index[:, 0], taps.weight[:, 0], pads_zero_row(taps)
        if padded:                         # nearest: rows of weight 0 read a zero row appended to src, no Mul
            pads = [0] * (2 * rank)
            pads[rank + axis] = 1
            src, index = em.pad(src, pads), np.where(weight == 0, taps.cols, index)
        g = em.node("Gather", [src, em.const(index, "index", np.int64)], "gathered", axis=axis)
        if padded or np.all(weight == 1):
            return g, "gather"
        weight = weight.reshape([taps.rows] + [1] * (rank - axis - 1))
        return em.node("Mul", [g, em.const(weight, "weight")], "weighted"), "gather"
    g = em.node("Gather", [src, em.const(taps.index, "index", np.int64)], "gathered", axis=axis)
    weight = taps.weight.reshape([taps.rows, taps.width] + [1] * (rank - axis - 1))
    w = em.node("Mul", [g, em.const(weight, "weight")], "weighted")
    return em.reduce_sum(w, [axis + 1]), f"gather-sum x{taps.width}"



@dataclass(frozen=True)
class AxisPlan:
    """How one axis is contracted: a band (dense when one tile), transposed around it on the last axis
    when its tiles have different matrices, or the gather form."""
    axis: int
    kind: str                 # "band", "band-t" or "gather"
    band: Band | None
    cost: float

    def name(self) -> str:
        """The form name the report prints for this axis."""
        if self.kind == "gather":
            return "gather"
        assert self.band is not None        # every kind but gather has its band
        return self.band.name() + (", transposed" if self.kind == "band-t" else "")


def axis_options(taps: Taps, axis: int, shape: list, itemsize: int, padded: bool = False) -> list:
    """Every spelling of one axis's contraction on a tensor of `shape`, each with its estimated cost (with `padded`,
    the bands whose tiles do not divide the axis too)."""
    m, n = shape[axis], taps.rows
    rest = math.prod(shape) / m
    light, piles = split_piles(taps)
    out = [AxisPlan(axis, "gather", None, gather_form_cost(rest, m, light, [len(w) for _, _, w in piles], itemsize,
                                                           math.prod(shape[axis + 1:])))]
    tiles = {n} | {t for t in range(1, min(n, MAX_TILE) + 1) if n % t == 0}
    return out + _band_options(taps, axis, shape, tiles | ({t for t in PADDED_TILES if n % t} if padded else set()),
                               itemsize)


def _band_options(taps: Taps, axis: int, shape: list, tiles: set, itemsize: int) -> list:
    """The band spellings of one axis with each of `tiles` X rows per tile (shared or per tile; on the last axis,
    per-tile matrices between two Transposes), each with its estimated cost."""
    m, n, last = shape[axis], taps.rows, axis == len(shape) - 1
    swap = transposes_cost(math.prod(shape) / m, m, n, itemsize)
    out = []
    for tile in sorted(tiles, reverse=True):           # on a tie, the larger tile (fewer, larger GEMMs) wins
        for plan in (shared_band(taps, axis, tile), band(taps, axis, tile)):
            if plan is None:
                continue
            direct = not last or plan.shared
            if not direct and len(shape) < 2:
                continue
            costed = plan if direct else replace(plan, axis=len(shape) - 2)
            cost = band_cost(costed, shape if direct else swapped(shape), n, itemsize) + (0 if direct else swap)
            out.append(AxisPlan(axis, "band" if direct else "band-t", plan, cost))
    return out


def plan_axes(res: Resampling, itemsize: int = 4) -> tuple:
    """(per-axis plans in the order to apply them, estimated ns): the cheapest order and spelling; then, where that
    plan takes a dense MatMul on an axis that admits padded tiles (PADDED_MIN_ROWS, PADDED_MIN_GROWTH), the
    cheapest with padded bands there too."""
    if not res.resized_axes:
        return [], 0.0
    taps = {a: gradient_taps(res.axes[a], res) for a in res.resized_axes}
    options: dict = {}                  # each axis's cheapest spelling per (axis, shape, padded): both passes share it
    plans, cost = _cheapest(res, taps, frozenset(), itemsize, options)
    plans = last_axis_first(plans, res)
    padded = frozenset(p.axis for p in plans if p.band is not None and p.band.dense and
                       p.band.tile >= PADDED_MIN_ROWS and p.band.cols >= PADDED_MIN_GROWTH * p.band.tile)
    if not padded:
        return plans, cost
    return min((plans, cost), _cheapest(res, taps, padded, itemsize, options), key=lambda pc: pc[1])


def last_axis_first(plans: list, res: Resampling) -> list:
    """Where every axis is a shared band of several tiles (a rational scale's period: nearest x1.5, the padded form's
    longer map), the last axis's moved first when it shrinks the tensor (more dY rows than X rows): its MatMul has
    the data on the left, which onnxruntime multiplies faster per value than the other axes' (the data on the right,
    packed by MLAS; 2 threads, 2026-11-27: 0.31 against 0.50 ns per value read), so the slower one reads the smaller
    tensor. Nearest x1.5 on 4x48x112^2 took 0.73-0.76 x the time, x1.5 on 8x32x64^2 0.64-0.66 (docs/benchmarks.md)."""
    last = len(res.axes) - 1
    if not all(p.kind == "band" and p.band.shared and p.band.tiles > 1 for p in plans) or \
            res.out_shape[last] <= res.in_shape[last]:
        return plans
    return sorted(plans, key=lambda p: p.axis != last)      # stable: the others keep their order


def _cheapest(res: Resampling, taps: dict, padded: frozenset, itemsize: int, options: dict) -> tuple:
    """(plans, estimated ns) of the cheapest order and spelling, with padded tiles on the axes in `padded`; `options`
    caches each axis's cheapest spelling."""
    best: tuple[list[AxisPlan], float] = ([], math.inf)
    for order in itertools.permutations(res.resized_axes):
        shape, plans, total = list(res.out_shape), [], 0.0
        for a in order:
            key = (a, tuple(shape), a in padded)
            if key not in options:
                options[key] = min(axis_options(taps[a], a, shape, itemsize, a in padded), key=lambda p: p.cost)
            plans.append(options[key])
            total += plans[-1].cost
            shape[a] = res.in_shape[a]
        last = plans[-1]
        if last.kind == "band" and not (last.band.dense or last.band.padding):    # a Reshape writing dX: a copy
            total += copy_cost(math.prod(res.in_shape), itemsize)
        if total < best[1]:
            best = (plans, total)
    return best


def emit_plan(em: Emitter, src: str, res: Resampling, plans: list, start=None, before=None) -> tuple:
    """Emit each axis's plan (band, transposed band or gather) in turn; returns (dX's name, form names). `src` has
    dY's shape, or `start` where given (onnx_ops.forms.padded: fewer rows on some axes); `before(em, tensor, axis,
    shape)`, where given, runs before each axis's contraction and returns the tensor with that axis at the map's dY
    rows, updating `shape` (the tensor's) in place."""
    shape, cur, names = list(res.out_shape if start is None else start), src, []
    for p in plans:
        if before is not None:
            cur = before(em, cur, p.axis, shape)
        if p.kind == "gather":
            cur, name = emit_axis(em, cur, gradient_taps(res.axes[p.axis], res), p.axis, len(shape))
        else:
            emit = emit_band if p.kind == "band" else emit_band_transposed
            cur, name = emit(em, cur, p.band, shape), p.name()
        names.append(name)
        shape[p.axis] = res.in_shape[p.axis]
    return cur, tuple(names)

