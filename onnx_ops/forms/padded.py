"""padded dY: zero rows appended to dY on some axes, so that the same map on longer axes tiles them evenly (windows
a Reshape, one matrix for every tile: a rational scale's period), then the per-axis plan of that longer map, each
axis lengthened just before its contraction (a Concat with zeros; the last axis first where it shrinks, as
axis.last_axis_first orders it), and one Slice back to X's rows for every axis together (per-axis padded tiles,
onnx_ops.forms.bands, slice each axis). Exact where the longer map agrees with the real one: every real (X row, dY
row) weight the same, and no real dY row reaching a padded X row (no clamping at the axis's end)."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from dml_desc import DescError, budget
from dml_desc.canonical import AxisMap, Resampling, fraction
from dml_desc.weights import gradient_taps

from .axis import emit_plan, plan_axes
from .cost import padded_copies_cost
from .emitter import Emitter

TILES = (8, 16, 32, 64)     # the tiles whose multiples (with the scale's period) the longer axes are
MAX_PERIOD = 64             # X rows per period of the scale (its denominator) at most
MAX_GROWTH = 1.25           # a longer axis at most this times X's rows
MAX_ROWS = 1 << 14          # X rows per axis at most (the longer map's taps are built per candidate)


@dataclass(frozen=True)
class PaddedPlan:
    """The longer map (dY padded to its out_shape, X cropped from its in_shape), its per-axis plans and the cost
    of the whole: the Concats, the plans and the Slice."""
    longer: Resampling
    plans: list
    cost: float


def longer_axis(ax: AxisMap, res: Resampling, rows: int) -> AxisMap | None:
    """The same map with `rows` X rows (and as many dY rows as the scale gives them), where it agrees with `ax`
    on every real row; None where it does not."""
    f = fraction(ax.scale)
    cols = rows * f.numerator // f.denominator
    if cols < ax.out_size:
        return None
    try:                                                # the longer axis and its table within the budget
        longer = replace(ax, in_size=rows, out_size=cols)
        r, c, w = gradient_taps(longer, res).merged()   # rows: X, cols: dY
    except DescError:
        return None
    real = c < ax.out_size
    if np.any(r[real] >= ax.in_size):                   # a real dY row would reach a padded X row
        return None
    rr, cc, ww = gradient_taps(ax, res).merged()
    keep = real & (r < ax.in_size)
    same = np.array_equal(r[keep], rr) and np.array_equal(c[keep], cc) and np.array_equal(w[keep], ww)
    return longer if same else None


def axis_lengths(ax: AxisMap) -> list:
    """Candidate X lengths for one axis: the next multiple of each tile and the scale's period, within MAX_GROWTH."""
    if ax.coords is not None or ax.scale == math.inf or ax.in_size > MAX_ROWS or ax.in_size == ax.out_size:
        return []
    period = fraction(ax.scale).denominator
    if period > MAX_PERIOD:
        return []
    steps = {math.lcm(period, t) for t in TILES}
    lengths = {-(-ax.in_size // s) * s for s in steps}
    return sorted(n for n in lengths if ax.in_size < n <= MAX_GROWTH * ax.in_size)


def padded_form(res: Resampling, itemsize: int = 4) -> PaddedPlan | None:
    """The cheapest longer map (some resized axes longer, each agreeing with the real one) with its plans and cost,
    or None where no axis has one."""
    options = []
    for ax in res.axes:
        options.append([ax] + [lx for n in axis_lengths(ax) if (lx := longer_axis(ax, res, n)) is not None])
    best: PaddedPlan | None = None
    for axes in itertools.product(*options):
        if axes == res.axes or not within_budget(res, axes):
            continue
        longer = replace(res, axes=tuple(axes))
        plans, cost = plan_axes(longer, itemsize)
        cost += padded_copies_cost(math.prod(res.out_shape), math.prod(longer.out_shape), math.prod(res.in_shape),
                                   itemsize)
        if best is None or cost < best.cost:
            best = PaddedPlan(longer, plans, cost)
    return best


def within_budget(res: Resampling, axes: tuple) -> bool:
    """True where the longer tensors fit the size budget (dml_desc.budget): a map near it pads no rows past it."""
    grown = [a.out_size for a in axes], [a.in_size for a in axes]
    return all(math.prod(shape) <= budget.max_elements() for shape in grown)


def emit_padded(em: Emitter, src: str, res: Resampling, form: PaddedPlan) -> tuple:
    """(dX, per-axis form names): the longer map's plans, each axis padded to its dY rows just before it is contracted
    (a Concat with zeros, which measured faster than a Pad), then one Slice to X's shape."""
    rank, longer = len(res.axes), form.longer

    def lengthen(em: Emitter, cur: str, axis: int, shape: list) -> str:
        extra = longer.out_shape[axis] - shape[axis]
        if not extra:
            return cur
        cur = em.lengthened(cur, em.shape(shape[:axis] + [extra] + shape[axis + 1:]), axis)
        shape[axis] = longer.out_shape[axis]
        return cur

    out, names = emit_plan(em, src, longer, form.plans, start=res.out_shape, before=lengthen)
    cut = [a for a in range(rank) if longer.in_shape[a] != res.in_shape[a]]
    out = em.crop(out, cut, [res.in_shape[a] for a in cut])
    return out, _names(res, form, names)


def _names(res: Resampling, form: PaddedPlan, names: tuple) -> tuple:
    """The report's per-axis names, in the order of the resized axes, each padded axis marked with its dY rows."""
    by_axis = {p.axis: name for p, name in zip(form.plans, names)}
    marked = []
    for a in res.resized_axes:
        extra = form.longer.out_shape[a] - res.out_shape[a]
        marked.append(by_axis[a] + (f", dY padded +{extra}" if extra else ""))
    return tuple(marked)

