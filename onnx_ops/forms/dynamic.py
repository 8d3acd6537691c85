"""ResizeGrad whose sizes or scales are known only at run time: per-axis taps read inside the graph.

For each axis the node may resize, onnxruntime's own Resize gives the taps, in the runtime's float32 arithmetic
(its coordinates per coordinate_transformation_mode, its nearest ties, cubic_coeff_a, exclude_outside, antialias
and the roi of tf_crop_and_resize; extrapolated outputs read weight 0, also on an axis that antialias copies). From
opset 12 it resizes combs (onnx_ops.forms.dynamic_taps: [P, m] tables of X rows and weights, O((n + m) * P) memory),
and dX is dY contracted with them axis by axis, every sum in a fixed order (deterministic on every run and thread
count). Every axis but the last is contracted from the band built from the taps (onnx_ops.forms.dynamic_band:
windows of dY rows per tile of X rows), and an If picks its spelling at run time: a Gather and a Mul where each X
row reads one dY row (downsampling), the dense matrix where the cost model finds it cheaper (short axes), else
the band (one batched MatMul). The last axis, where a Gather would move single values, takes the shared band
where the map is periodic, one MatMul with the dense matrix where it is small (n * m <= DENSE_LAST_MAX), else the
band between two Transposes. The banded axes from 2 up and the last axis go in the order that keeps the data
small (the last axis first where the banded axes grow in dX: known when lowering from constant scales, else an
If), then axes 0 and 1, which are seldom resized: an If skips them where they are copied (a symbolic batch that
keeps its size; every If needs dY's type known). The bands' padding rows are sliced off dX at the end (a copy
of dX), except where an If finds none. Each If branch ends in a node that computes (onnxruntime copies a Reshape
that writes a branch's output): views back to a tensor's rank are outside the Ifs. An outer If returns zeros for
a dY with an empty axis, where the probes and reshapes would fail.

Before opset 12 (no Unique, Range or int64 Min / Max in the schemas the model imports), the path resizes the
identity matrix I(n), viewed as [n, 1, 1, n], which gives the n x m weight matrix R, and contracts each axis with
all of R by MatMul: O(n * max(n, m)) memory, refused by the size budget where the lengths are known
(onnx_ops.lowering.plan).

onnxruntime copies its input, without resampling, when the whole output shape equals the input shape.
An axis whose size does not change (a scale in (1, 2)) while another one does is resampled, so the probe
then also stretches its size-1 axis to h = 2 (value-exact for every mode but plain cubic, whose
weights sum to 1 within a float32 rounding).

Cost per row: O(window) on banded axes, O(m) on a small last axis. The taps cost O((n + m) * P) per run, their
band plan O(m * P log(m * P) + n * width), run only where a branch may take the band (_choices: each axis's flags
are computed once, outside the Ifs that contract it). An inf or NaN in dY reaches the dX rows whose window holds it
on a banded axis (on a one-tap one, the rows reading it, and where dY row 0 holds it, those with no tap), the whole
dX line on a dense axis (0 x inf).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from .dynamic_band import (BAND_MIN_OPSET, all_true, band_entries, band_plan, band_possible, contract_band, dense_terms,
                           dense_wins, fold, gather_one_tap, one_tap, plain_windows, taps_matrix, tiles_of, unfold)
from .dynamic_taps import RunTaps, axis_taps, identity_where, is_identity, period, probe_entries, unsqueeze
from .emitter import Emitter
from .generic_emit import dims_of_x_checked, refused_unless, zeros_where_empty

DENSE_LAST_MAX = 2 ** 16   # n * m up to which the last axis takes one dense MatMul (a 256 KB matrix)
PROBE_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
               "antialias")


@dataclass(frozen=True)
class DynamicPlan:
    """What the in-graph taps need: where scales / roi come from and which axes may be resized."""
    rank: int
    axes: tuple            # (axis, position in scales / roi) for every axis the node may resize
    attrs: dict            # the node's attributes
    scales: str = ""       # the scales tensor (constant or run-time); "" when dY's shape gives the sizes
    roi: str = ""          # the roi tensor (tf_crop_and_resize only)
    n_scaled: int = 0      # entries in scales (len(axes) attribute or the rank)
    stretch_probe: bool = False   # h = 2 when some axis changes size (an axis may keep its size, scale != 1)
    convert: bool = True   # dY is float / double with a known type (else CastLike to dY)
    # onnxruntime's 4-D NHWC cubic kernel copies same-length axes (conventions.onnx.nhwc_cubic): "" never,
    # "always" when the constant scales select that kernel, "run time" when the scales decide it at run time
    nhwc_cubic: str = ""
    scale_of: tuple = ()   # the constant scale of each of `axes` (float32 values), () where the scales are run-time

    @property
    def probe_attrs(self) -> dict:
        """The node attributes the probe Resize copies (mode, coordinate transformation, rounding, cubic, antialias)."""
        return {k: v for k, v in self.attrs.items() if k in PROBE_ATTRS}


@dataclass(frozen=True)
class AxisChoice:
    """One axis's run-time choices, computed once, outside the Ifs that contract it: the flags its branches test
    and its band, planned only where a branch may take it (else a stand-in no branch reads: _planned)."""
    weights: str          # the band's weights [tiles, tile, width] (band_plan)
    index: str            # its windows [tiles, width]
    shared: str = ""      # the last axis: [1] bool, the shared band applies (_planned)
    large: str = ""       # the last axis: [1] bool, n * m > DENSE_LAST_MAX (no dense matrix)
    one: str = ""         # a banded axis: [1] bool, one tap per X row (one_tap)
    terms: tuple = ()     # a banded axis: dense_terms


def emit_dynamic(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    """dX from dY (float32 or float64 as em.acc): one probe Resize per axis; the last axis contracted with a
    MatMul, the others with the band form (onnx_ops.forms.dynamic_band) from opset 12, a dense MatMul before.
    Where dY's type is known, a dY with an empty axis (a scale that rounds a length down to 0) gives zeros, an
    empty X an empty dX: an If around the path, whose probes and reshapes cannot take empty axes.
    dY's shape is checked first (_dy_checked)."""
    dy = _dy_checked(em, dy, x, plan)
    if not plan.convert:
        return _emit_nonempty(em, dy, x, plan)
    return zeros_where_empty(em, em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape"),
                             lambda: _emit_nonempty(em, dy, x, plan), plan.rank)


def _dy_checked(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    """dY where its shape is the forward's output for X, else a Reshape onnxruntime refuses: on the axes the node
    never resizes X's dims; on the resized ones, given scales, floor(float32(n) * scale) (the reader's rule,
    onnxruntime's). The taps read the resized axes' lengths alone, so a dY of another batch gave a dX of that
    batch, and the empty-tensor If took any empty dY (zeros, never an error). With sizes, dY's lengths are the
    sizes: they are not checked here."""
    resized = dict(plan.axes)                   # axis -> its position in scales / roi
    free = [a in resized for a in range(plan.rank)]
    if not plan.scales:
        return dy if all(free) else dims_of_x_checked(em, dy, x, free)
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    mask = em.const(free, "resized", np.bool_)
    ones = em.node("Concat", [em.const([1.0], "one", np.float32), _checked_scales(em, plan)], "with_one", axis=0)
    per_axis = em.node("Gather", [ones, em.const([resized[a] + 1 if a in resized else 0 for a in range(plan.rank)],
                                                 "scale_of_axis", np.int64)], "axis_scales")
    scaled = em.node("Floor", [em.node("Mul", [em.node("Cast", [sx], "xf", to=TensorProto.FLOAT), per_axis],
                                       "scaled")], "floored")
    expected = em.node("Where", [mask, em.node("Cast", [scaled], "out_len", to=TensorProto.INT64), sx], "expected")
    return refused_unless(em, dy, em.node("Equal", [sdy, expected], "same"), sdy)


def _emit_nonempty(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    if em.opset < BAND_MIN_OPSET:
        return _emit_identity_probes(em, dy, x, plan)
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    scales = _checked_scales(em, plan) if plan.scales else ""
    h = _probe_height(em, plan, sx, sdy)
    banded, last = banded_axes(plan, em.opset), plan.rank - 1
    late = [a for a in banded if a < 2] if plan.convert else []
    early = [a for a in banded if a not in late]
    kept = _kept_where_same_length(plan)
    taps, lengths, same = _all_taps(em, plan, sx, sdy, scales, h, late, kept)
    choices = _choices(em, plan, taps, early, same) if plan.convert else {}
    if not late:
        return _ordered(em, plan, dy, taps, choices, sx, early)
    # batch and channels (axes 0, 1) are seldom resized: last, where the data is smallest, and skipped when
    # they are copied (an If): where their length is unchanged and their scale 1 (_kept_where_same_length), else
    # where their run-time taps are the identity
    identity = [_same_length(em, *lengths[a]) if kept else is_identity(em, taps[a]) for a in late]
    cond = identity[0] if len(identity) == 1 else em.node("And", identity, "identity")

    def resized():      # the band alone on the banded axes: a rare branch, kept small (each If costs at start-up)
        out = dy
        for a in early:
            out = _banded(em, plan, out, taps[a], a)
        out = _last_axis(em, plan, out, taps[last], choices.get(last)) if last in taps else out
        for a in late:
            out = _banded(em, plan, out, taps[a]() if callable(taps[a]) else taps[a], a)
        return _unpadded(em, out, sx, banded)
    keep = _branch(em, lambda: _ordered(em, plan, dy, taps, choices, sx, early), _elem(em), plan.rank)
    return em.node("If", [cond], "axes_done", then_branch=keep, else_branch=_branch(em, resized, _elem(em), plan.rank))


def _all_taps(em: Emitter, plan: DynamicPlan, sx: str, sdy: str, scales: str, h: str, late: list, lazy: bool) -> tuple:
    """({axis: RunTaps} of every axis the node may resize, {axis: (n, m, scale)}, {axis: [1] bool where it reuses
    the axis before's taps}). The `late` axes' taps are their own, and where `lazy`, a function that emits them
    where it is called (inside an If branch). An axis of the same lengths and scale as the axis before it (a square
    image) reuses that axis's taps (an If): the taps depend on nothing else (the node's attributes are the same for
    every axis; not for an roi or onnxruntime's NHWC cubic kernel, which are computed per axis)."""
    taps: dict = {}
    lengths: dict = {}
    same: dict = {}
    before = None
    for a, pos in plan.axes:
        n, m = (em.node("Gather", [s, em.const([a], "axis", np.int64)], "length") for s in (sx, sdy))
        scale = _slice(em, scales, pos, pos + 1) if plan.scales else ""
        lengths[a] = (n, m, scale)

        def computed(a=a, pos=pos, n=n, m=m, scale=scale) -> RunTaps:
            return _axis_taps(em, plan, a, pos, n, m, scale, scales, h)
        if a in late:
            taps[a] = computed if lazy else computed()
        elif before is None or plan.roi or plan.nhwc_cubic or not plan.convert:
            taps[a] = computed()
        else:
            taps[a], same[a] = _reused(em, taps[before], lengths[a], lengths[before][2], computed)
        before = before if a in late else a
    return taps, lengths, same


def _kept_where_same_length(plan: DynamicPlan) -> bool:
    """onnxruntime copies an axis whose length is unchanged and whose scale is 1 (given, or m / n from sizes): every
    coordinate transformation but tf_half_pixel_for_nn (o + 0.5) and tf_crop_and_resize (the roi) maps dY row o
    to X row o exactly, where nearest picks it and the linear, cubic and antialiased filters weigh it 1 and every
    other row 0; with keep_aspect_ratio_policy other than stretch, sizes give another scale."""
    return plan.attrs.get("coordinate_transformation_mode", "half_pixel") not in (
        "tf_half_pixel_for_nn", "tf_crop_and_resize") and plan.attrs.get("keep_aspect_ratio_policy",
                                                                        "stretch") == "stretch"


def _same_length(em: Emitter, n: str, m: str, scale: str) -> str:
    """[1] bool: n == m and (where given) scale == 1."""
    same = em.node("Equal", [n, m], "same_length")
    if not scale:
        return same
    return em.node("And", [same, em.node("Equal", [scale, em.const([1.0], "one", np.float32)], "unit")], "kept")


def _reused(em: Emitter, taps: RunTaps, own: tuple, scale_before: str, computed) -> tuple:
    """(RunTaps, [1] bool same) of an axis of lengths and scale `own` (n, m, scale): an If returns `taps` (the axis
    before's, of scale `scale_before`) where it has the same lengths and scale, else `computed()`'s."""
    n, m, scale = own
    same = em.node("And", [em.node("Equal", [n, taps.n], "same_n"), em.node("Equal", [m, taps.m], "same_m")], "same")
    if scale:
        same = em.node("And", [same, em.node("Equal", [scale, scale_before], "same_scale")], "same")
    kinds = (TensorProto.INT64, TensorProto.FLOAT, TensorProto.BOOL)

    def outputs(tensors) -> list:
        return [(t, kind, 2) for t, kind in zip(tensors, kinds)]

    def fresh() -> list:
        new = computed()
        return outputs([new.index, new.weight, new.used])
    shared = lambda: outputs([em.node("Identity", [t], "shared") for t in (taps.index, taps.weight,  # noqa: E731
                                                                          taps.used)])
    names = _multi_if(em, same, ("tap",) * 3, shared, fresh)
    return RunTaps(names[0], names[1], names[2], n, m), same


def _multi_if(em: Emitter, cond: str, whats: tuple, then_build, else_build) -> list:
    """The output names (one per `whats`) of an If on `cond` whose branches then_build and else_build emit (each
    returns its outputs as Emitter.subgraph's (name, element type, rank))."""
    names = [em.name(what) for what in whats]
    em.nodes.append(helper.make_node("If", [cond], names, then_branch=em.subgraph(then_build),
                                     else_branch=em.subgraph(else_build)))
    return names


def _constant(em: Emitter, value, dtype, what: str) -> str:
    """An Identity of a [1] constant: a branch output that is a constant (a subgraph output must be a node's)."""
    return em.node("Identity", [em.const([value], what, dtype)], what)


def _choices(em: Emitter, plan: DynamicPlan, taps: dict, early: list, same: dict) -> dict:
    """{axis: AxisChoice} of the banded axes (`early`) and the last one: each banded axis's one_tap and dense_terms,
    the last axis's band where the shared band may apply (_fits_tiles) or the axis is too long for the dense matrix,
    a banded axis's where the band may be taken (band_possible). An axis that reuses the axis before's taps (`same`)
    reuses its band too: that band is planned where either needs it."""
    last = plan.rank - 1
    axes = early + ([last] if last in taps else [])
    itemsize = np.dtype(em.acc).itemsize
    one = {a: _maybe_one_tap(em, taps[a]) for a in early if not _grows(plan, a)}
    need, terms = {}, {}
    for a in early:
        computed = lambda a=a: dense_terms(em, taps[a], DENSE_LAST_MAX, itemsize)     # noqa: E731
        if a in one:
            need[a], *rest = _several_taps(em, one[a], computed)
            terms[a] = tuple(rest)
        else:
            terms[a] = computed()
            need[a] = band_possible(em, terms[a])
    fits: dict = {}                                # where the shared band's test runs on this axis's band
    large = ""
    if last in taps:
        t = taps[last]
        entries = em.node("Mul", [t.n, t.m], "entries")
        large = em.node("Less", [em.const([DENSE_LAST_MAX], "dense_max", np.int64), entries], "large")
        fits[last] = _fits_tiles(em, t)
        need[last] = em.node("Or", [fits[last], large], "band_needed")
    group: dict = {}
    for i in reversed(range(len(axes))):          # a band reused by the next axis is planned where it needs it too
        a, following = axes[i], axes[i + 1] if i + 1 < len(axes) else None
        if following not in same:
            group[a] = need[a]
            continue
        group[a] = em.node("Or", [need[a], em.node("And", [same[following], group[following]], "reused_needs")],
                           "band_needed")
        if following in fits:
            fits[a] = em.node("And", [same[following], fits[following]], "reused_fits")
    bands: dict = {}
    for i, a in enumerate(axes):
        plan_it = lambda a=a: _planned(em, taps[a], group[a], fits.get(a, ""))   # noqa: E731
        bands[a] = plan_it() if a not in same else _passed(em, same[a], bands[axes[i - 1]], plan_it)
    return {a: AxisChoice(bands[a][1], bands[a][2], bands[a][0] if a == last else "", large if a == last else "",
                          one.get(a, ""), terms.get(a, ())) for a in axes}


def _grows(plan: DynamicPlan, axis: int) -> bool:
    """True where the axis's constant scale is above 1: its X rows read several dY rows (or one, n = m = 1), so the
    one-tap Gather is not tried at run time."""
    scale = dict(zip((a for a, _ in plan.axes), plan.scale_of))
    return scale.get(axis, 0.0) > 1


def _maybe_one_tap(em: Emitter, taps: RunTaps) -> str:
    """[1] bool one_tap, tested where m <= n: more dY rows than X rows put two taps on some X row."""
    return em.node("If", [em.node("LessOrEqual", [taps.m, taps.n], "shrinks")], "one_tap",
                   then_branch=_branch(em, lambda: one_tap(em, taps), TensorProto.BOOL, 1),
                   else_branch=_branch(em, lambda: _constant(em, False, np.bool_, "no"), TensorProto.BOOL, 1))


def _several_taps(em: Emitter, one: str, terms) -> list:
    """[band_possible, *dense_terms] of a banded axis, computed where it reads several taps per X row (an If on
    `one`, one_tap's): a one-tap axis takes the Gather and needs neither (false, and zeros)."""
    kinds = (TensorProto.BOOL, TensorProto.BOOL, TensorProto.FLOAT, TensorProto.FLOAT)

    def several() -> list:
        computed = terms()
        return list(zip([band_possible(em, computed), *computed], kinds, (1,) * 4))

    def single() -> list:
        values = [_constant(em, v, dtype, "none") for v, dtype in ((False, np.bool_),) * 2 + ((0.0, np.float32),) * 2]
        return list(zip(values, kinds, (1,) * 4))
    return _multi_if(em, one, ("band_possible", "small", "saved", "blocks"), single, several)


def _fits_tiles(em: Emitter, taps: RunTaps) -> str:
    """[1] bool: the lengths allow a shared band of several tiles (_planned): the tiles (tiles_of) divide n (tiles *
    tile = n) and m (the windows cover m rows). One tile is the dense matrix (the same MatMul)."""
    tiles = tiles_of(em, taps.n)
    left = em.node("ReduceMax", [em.node("Mod", [em.node("Concat", [taps.n, taps.m], "lengths", axis=0), tiles],
                                         "left")], "left", keepdims=1)
    whole = em.node("Equal", [left, em.const([0], "zero", np.int64)], "whole")
    return em.node("And", [whole, em.node("Less", [em.const([1], "one", np.int64), tiles], "tiled")], "fits")


BAND_OUTPUTS = ((TensorProto.BOOL, 1), (TensorProto.FLOAT, 3), (TensorProto.INT64, 2))   # shared, weights, index


def _planned(em: Emitter, taps: RunTaps, cond: str, fits: str) -> tuple:
    """(shared, weights, index): an If plans the band where `cond` holds, and where the last axis may read it and
    `fits` (_fits_tiles: the tiles hold n rows exactly) holds, tests whether its windows read dY's rows in order,
    each once, and every tile has tile 0's weights (a map periodic in tiles: nearest 1.5x, linear 0.5x, ...);
    elsewhere false and a stand-in band that no branch reads at run time."""
    not_shared = lambda: _constant(em, False, np.bool_, "not_shared")   # noqa: E731

    def planned() -> list:
        weights, index, m = band_plan(em, taps)

        def periodic() -> str:
            same = all_true(em, em.node("Equal", [weights, _first_tile(em, weights)], "same_weights"))
            return em.node("And", [plain_windows(em, index, m), same], "shared")
        shared = em.node("If", [fits], "shared", then_branch=_branch(em, periodic, TensorProto.BOOL, 1),
                         else_branch=_branch(em, not_shared, TensorProto.BOOL, 1)) if fits else not_shared()
        return _band_outputs(shared, weights, index)

    def unplanned() -> list:      # a stand-in band of one tile of one row, valid in every consumer's shapes
        return _band_outputs(not_shared(),
                             em.node("Identity", [em.const(np.zeros((1, 1, 1)), "no_weights", np.float32)], "weights"),
                             em.node("Identity", [em.const(np.zeros((1, 1)), "no_index", np.int64)], "index"))
    return tuple(_multi_if(em, cond, ("shared", "weights", "index"), planned, unplanned))


def _passed(em: Emitter, same: str, band: tuple, planned) -> tuple:
    """The axis before's band (shared, weights, index) where `same`, else `planned()`'s (an If)."""
    return tuple(_multi_if(em, same, ("shared", "weights", "index"),
                           lambda: _band_outputs(*(em.node("Identity", [t], "passed") for t in band)),
                           lambda: _band_outputs(*planned())))


def _band_outputs(*tensors) -> list:
    return [(t, elem, rank) for t, (elem, rank) in zip(tensors, BAND_OUTPUTS)]


def _ordered(em: Emitter, plan: DynamicPlan, dy: str, taps: dict, choices: dict, sx: str, early: list) -> str:
    """The banded axes and the last one contracted, in the order that keeps the data small: the last axis first
    where the banded axes grow in dX (downsampling, whose last-axis MatMul then runs on dY's fewer rows), else the
    banded axes first; decided when lowering where the constant scales tell (_known_growth), else by an If on
    n > m over their product."""
    last = plan.rank - 1

    def banded_first() -> str:
        cur = dy
        for a in early:
            cur = _banded(em, plan, cur, taps[a], a, choices.get(a))
        return _last_unpadded(em, plan, cur, taps.get(last), choices.get(last), sx, early)
    if last not in taps or not early or not plan.convert:
        return banded_first()
    known = _known_growth(plan, early)
    if known is not None:
        return _last_first(em, plan, dy, taps, choices, sx, early) if known else banded_first()
    grows = em.node("Greater", [_product(em, [taps[a].n for a in early]), _product(em, [taps[a].m for a in early])],
                    "grows")
    return em.node("If", [grows], "ordered", then_branch=_branch(
        em, lambda: _last_first(em, plan, dy, taps, choices, sx, early), _elem(em), plan.rank),
        else_branch=_branch(em, banded_first, _elem(em), plan.rank))


def _known_growth(plan: DynamicPlan, early: list) -> bool | None:
    """Whether the banded axes grow in dX, where the constant scales decide it when lowering: every scale below 1
    (m = floor(n * s) < n) or every one at least 1 (m >= n); None where the scales are run-time input, mixed, or
    tf_crop_and_resize's roi enters the output's length."""
    if not plan.scale_of or plan.attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        return None
    scale = dict(zip((a for a, _ in plan.axes), plan.scale_of))
    below = [scale[a] < 1 for a in early]
    return True if all(below) else False if not any(below) else None


def _last_first(em: Emitter, plan: DynamicPlan, dy: str, taps: dict, choices: dict, sx: str, early: list) -> str:
    """The last axis contracted, then the banded axes, the final one into its n rows; an If skips the Slice of the
    other bands' padding rows (a copy of dX) where there are none."""
    cur = _last_axis(em, plan, dy, taps[plan.rank - 1], choices.get(plan.rank - 1))
    for a in early[:-1]:
        cur = _banded(em, plan, cur, taps[a], a, choices.get(a))
    final = early[-1]
    if len(early) == 1:
        return _banded(em, plan, cur, taps[final], final, choices.get(final), final=True)
    exact = _no_padding(em, cur, sx, early[:-1])
    contract = lambda ends: _banded(em, plan, cur, taps[final], final, choices.get(final), final=ends)  # noqa: E731
    return em.node("If", [exact], "unpadded", then_branch=_branch(em, lambda: contract(True), _elem(em), plan.rank),
                   else_branch=_branch(em, lambda: _unpadded(em, contract(False), sx, early), _elem(em), plan.rank))


def _no_padding(em: Emitter, cur: str, sx: str, axes: list) -> str:
    """[1] bool: cur's `axes` are X's lengths (no band left padding rows on them)."""
    at = em.const(axes, "banded", np.int64)
    rows = [em.node("ReduceSum", [em.node("Gather", [shape, at], "rows")], "total", keepdims=1)
            for shape in (em.node("Shape", [cur], "padded_shape"), sx)]
    return em.node("Equal", rows, "no_padding")       # padded lengths are at least n: equal sums, equal lengths


def _product(em: Emitter, factors: list) -> str:
    """The product of `factors` ([1] int64 each)."""
    out = factors[0]
    for f in factors[1:]:
        out = em.node("Mul", [out, f], "product")
    return out


def _last_unpadded(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps | None, choice: AxisChoice | None, sx: str,
                   early: list) -> str:
    """The last axis contracted (where resized), then the banded axes' padding rows dropped. Where the last axis is
    resized, an If skips the Slice (a copy of dX) when no banded axis has padding rows (n a multiple of its tile)."""
    if taps is None:
        return _unpadded(em, cur, sx, early)
    if not early:
        return _last_axis(em, plan, cur, taps, choice, final=True)
    exact = _no_padding(em, cur, sx, early)
    return em.node("If", [exact], "unpadded",
                   then_branch=_branch(em, lambda: _last_axis(em, plan, cur, taps, choice, final=True), _elem(em),
                                       plan.rank),
                   else_branch=_branch(em, lambda: _unpadded(em, _last_axis(em, plan, cur, taps, choice), sx, early),
                                       _elem(em), plan.rank))


def largest_table(plan: DynamicPlan, axis: int, n: int, m: int, opset: int) -> tuple:
    """(entries, what) of the largest table the path builds at run time for one axis whose lengths n (X) and m (dY)
    are known when lowering (dml_desc.budget.check_table compares it with the budget)."""
    if opset < BAND_MIN_OPSET:
        return n * max(n, m), "the identity probe and the weight matrix (the dynamic path before opset 12)"
    probes = (probe_entries(plan, n, m), "the probes of its taps")
    if axis == plan.rank - 1 and n * m <= DENSE_LAST_MAX:
        return probes
    return max(probes, (band_entries(n, m, period(plan, n, m)), "its band"))


def banded_axes(plan: DynamicPlan, opset: int) -> list:
    """The axes contracted with the run-time band form: every resized axis but the last, from opset 12."""
    return sorted(a for a, _ in plan.axes if a != plan.rank - 1) if opset >= BAND_MIN_OPSET else []


LAST_AXIS_FORM = f"dense (n * m <= {DENSE_LAST_MAX}) or band"
BANDED_AXIS_FORM = "gather (one tap), dense (cheaper) or band"


def axis_forms(plan: DynamicPlan, opset: int) -> tuple:
    """The form each of plan.axes takes, as the lowering report prints it."""
    if opset < BAND_MIN_OPSET:
        return ("dynamic: Resize(identity) + MatMul",) * len(plan.axes)
    last, other = (LAST_AXIS_FORM, BANDED_AXIS_FORM) if plan.convert else ("band", "band")
    return tuple("dynamic: Resize(comb) + " + (last if a == plan.rank - 1 else other) for a, _ in plan.axes)


def _elem(em: Emitter) -> int:
    return TensorProto.FLOAT if em.acc is np.float32 else TensorProto.DOUBLE


def _axis_taps(em: Emitter, plan: DynamicPlan, axis: int, pos: int, n: str, m: str, scale: str, scales: str,
               h: str) -> RunTaps:
    """One axis's run-time taps (onnx_ops.forms.dynamic_taps) for lengths n, m ([1] int64, Gathers of the shapes:
    onnxruntime warns that it cannot rename a Slice of a shape read inside an If branch) and its `scale` ("" where
    dY's shape gives the size), the identity where onnxruntime's NHWC cubic kernel copies the axis."""
    taps = axis_taps(em, plan, pos, n, m, scale, _probe_roi(em, plan, pos), h)
    if plan.nhwc_cubic and axis in (1, 2):
        taps = identity_where(em, taps, _nhwc_copies(em, plan, n, m, scales))
    return taps


def _banded(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, axis: int, choice: AxisChoice | None = None,
            final: bool = False, band: tuple = (), viewed: bool = True) -> str:
    """cur's `axis` (not the last) contracted by its taps into n rows, or where the band is taken and not `final`,
    tiles * tile (n and the padding, which the caller drops). With the axis's `choice` (dY's type known), an If takes
    the one-tap Gather (one_tap), the dense matrix (dense_wins) or the band (the choice's); without, the band
    (`band`, else planned here; its windows a view of cur where plain, an If, unless not `viewed`). Each branch's
    last node computes: onnxruntime copies a Reshape that writes a branch's output, so the branches give their
    product with the later axes flattened (R of them: [..., rows, R], the band's [..., tiles, tile, R]) and the view
    back to cur's rank is outside the If; a `final` branch writes its n rows in cur's rank itself (a view only where
    the dense matrix contracts an axis before the last two)."""
    rank, shape, rows = plan.rank, em.node("Shape", [cur], "shape"), taps.n if final else ""
    elem = _elem(em) if plan.convert and viewed else None

    def banded(unfolded: bool) -> str:
        weights, index, m = band or ((choice.weights, choice.index, taps.m) if choice else band_plan(em, taps))
        product = contract_band(em, cur, _converted(em, plan, weights, cur), index, m, axis, elem)
        if not unfolded and not final:
            return product
        out = unfold(em, product, shape, axis, rank)
        return _first_rows(em, out, rows, axis) if final else out
    if choice is None:
        return banded(True)
    out_rank = rank if final else None        # the branches' ranks differ where not final (the view back is outside)

    def gathered() -> str:
        return gather_one_tap(em, cur, taps, axis, rank, final, None if em.acc is np.float32 else _elem(em))

    def dense() -> str:
        matrix = _converted(em, plan, taps_matrix(em, taps), cur)
        if final:
            return _contract(em, cur, matrix, axis, rank)
        return em.node("MatMul", [matrix, fold(em, cur, axis)], "dense")           # [..., n, R]

    def dense_or_band() -> str:
        return em.node("If", [dense_wins(em, choice.terms, _later(em, shape, axis, rank))], "axis_done",
                       then_branch=_branch(em, dense, _elem(em), out_rank),
                       else_branch=_branch(em, lambda: banded(False), _elem(em), out_rank))
    out = dense_or_band() if not choice.one else em.node(
        "If", [choice.one], "axis_done", then_branch=_branch(em, gathered, _elem(em), out_rank),
        else_branch=_branch(em, dense_or_band, _elem(em), out_rank))
    return out if final else unfold(em, out, shape, axis, rank)


def _later(em: Emitter, shape: str, axis: int, rank: int) -> str:
    """[1] int64: the product of the dims after `axis` (1 for the last axis)."""
    return em.node("ReduceProd", [em.node("Concat", [_slice(em, shape, axis + 1, rank), em.const([1], "one", np.int64)],
                                          "later", axis=0)], "later", keepdims=1)


def _first_rows(em: Emitter, cur: str, rows: str, axis: int) -> str:
    """cur's first `rows` ([1] int64) along `axis` (a Slice: the padding rows dropped)."""
    return em.node("Slice", [cur, em.const([0], "start", np.int64), rows, em.const([axis], "axis", np.int64)], "rows")


def _last_axis(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, choice: AxisChoice | None,
               final: bool = False) -> str:
    """cur's last axis contracted into n: the shared band where the run-time map is periodic in the tiles (the
    choice's shared flag), else one MatMul with the dense m x n matrix where n * m <= DENSE_LAST_MAX, else the band
    between two Transposes (Ifs; the band alone, planned here, where dY's type is not known: no choice). Where not
    `final`, the branches give one more axis (a 1, or the shared band's tiles) and the view back is outside the Ifs
    (_banded: onnxruntime copies a Reshape that writes a branch's output)."""
    if choice is None:
        return _band_last(em, plan, cur, taps)
    rank = plan.rank if final else plan.rank + 1
    band = (choice.weights, choice.index, taps.m)

    def dense() -> str:
        rows = cur if final else unsqueeze(em, cur, plan.rank - 1)
        return em.node("MatMul", [rows, _converted(em, plan, taps_matrix(em, taps, transposed=True), cur)],
                       "contracted")

    def general() -> str:         # the choice's large flag: n * m > DENSE_LAST_MAX
        return em.node("If", [choice.large], "last_axis",
                       then_branch=_branch(em, lambda: _band_last(em, plan, cur, taps, band, final), _elem(em), rank),
                       else_branch=_branch(em, dense, _elem(em), rank))
    then = _branch(em, lambda: _shared_last(em, plan, cur, taps, choice.index, _first_tile(em, choice.weights), final),
                   _elem(em), rank)
    out = em.node("If", [choice.shared], "last_axis", then_branch=then,
                  else_branch=_branch(em, general, _elem(em), rank))
    return out if final else em.node("Reshape", [out, em.const([0] * (plan.rank - 1) + [-1], "unfold", np.int64)],
                                     "unfolded")


def _first_tile(em: Emitter, weights: str) -> str:
    """[1, tile, width]: tile 0 of the band's weights."""
    return em.node("Slice", [weights, em.const([0], "start", np.int64), em.const([1], "end", np.int64)], "first_tile")


def _shared_last(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, index: str, first: str,
                 final: bool = True) -> str:
    """The last axis of cur (m long) viewed as the band's windows [tiles, width] (`index`'s width) and contracted by
    one MatMul with tile 0's weights (`first`) transposed [width, tile]: the static shared band's spelling
    (onnx_ops.forms.bands), where the choice's shared flag holds (_planned). [..., tiles, tile] where not `final`.
    The views read the tiles as -1, so that shape inference accepts _planned's stand-in band (one tile of one row)
    where static shapes fold the branch away."""
    matrix = _first_tile_t(em, first)
    lead = em.node("Slice", [em.node("Shape", [cur], "shape"), em.const([0], "start", np.int64),
                             em.const([plan.rank - 1], "end", np.int64)], "lead")
    width = em.node("Slice", [em.node("Shape", [index], "windows_shape"), em.const([1], "start", np.int64),
                              em.const([2], "end", np.int64)], "width")
    viewed = em.node("Reshape", [cur, em.node("Concat", [lead, em.const([-1], "tiles", np.int64), width], "split",
                                              axis=0)], "windows")
    product = em.node("MatMul", [viewed, _converted(em, plan, matrix, cur)], "shared_band")
    if not final:
        return product
    return em.node("Reshape", [product, em.node("Concat", [lead, em.const([-1], "rows", np.int64)], "dx_shape",
                                                axis=0)], "contracted")


def _first_tile_t(em: Emitter, first: str) -> str:
    """[width, tile]: tile 0 of the band's weights ([1, tile, width]), transposed by a Gather of its entries (a
    Transpose before the MatMul becomes onnxruntime's FusedMatMul, which has no double kernel)."""
    dims = em.node("Shape", [first], "block_shape")
    tile, width = (em.node("Gather", [dims, em.const(k, "dim", np.int64)], "dim") for k in (1, 2))   # scalars
    one, zero = em.const(1, "one", np.int64), em.const(0, "zero", np.int64)
    rows = unsqueeze(em, em.node("Range", [zero, width, one], "w"), 1)
    cols = unsqueeze(em, em.node("Range", [zero, tile, one], "t"), 0)
    at = em.node("Add", [em.node("Mul", [cols, width], "row_start"), rows], "at")             # [width, tile]
    flat = em.node("Reshape", [first, em.const([-1], "flat", np.int64)], "tile0")
    return em.node("Gather", [flat, at], "shared_t")


def _band_last(em: Emitter, plan: DynamicPlan, cur: str, taps: RunTaps, band: tuple = (), final: bool = True) -> str:
    """The last axis by the band form (a long axis: n * m > DENSE_LAST_MAX, no dense matrix), moved to the front,
    contracted into its n rows, moved back (a 1 before it where not `final`). Its windows are gathered, never viewed
    (no If reads the moved axis: onnxruntime, 1.19.2 and 1.32 alike, inlines the branch that holds this where static
    shapes fold its condition, and an If nested there then lost its input, the Transpose's output)."""
    rank = plan.rank
    if rank == 1:
        return _banded(em, plan, cur, taps, 0, final=True, band=band, viewed=False)
    cur = em.node("Transpose", [cur], "axis_first", perm=[rank - 1] + list(range(rank - 1)))
    out = _banded(em, plan, cur, taps, 0, final=True, band=band, viewed=False)
    if final:
        return em.node("Transpose", [out], "axis_last", perm=list(range(1, rank)) + [0])
    return em.node("Transpose", [unsqueeze(em, out, rank)], "axis_last", perm=list(range(1, rank)) + [rank, 0])


def _nhwc_copies(em: Emitter, plan: DynamicPlan, n: str, m: str, scales: str) -> str:
    """[1] bool: onnxruntime's NHWC cubic kernel copies this axis: its length is unchanged (and, for run-time
    scales, those scales are [1, >= 1, >= 1, 1])."""
    cond = em.node("Equal", [n, m], "same_length")
    if plan.nhwc_cubic == "run time":
        one = em.const([1.0], "one", np.float32)
        for axis, pos in plan.axes:
            s = _slice(em, scales, pos, pos + 1)
            test = em.node("Equal", [s, one], "is_one") if axis in (0, 3) else \
                em.node("Not", [em.node("Less", [s, one], "below_one")], "at_least_one")
            cond = em.node("And", [cond, test], "nhwc")
    return cond


def _emit_identity_probes(em: Emitter, dy: str, x: str, plan: DynamicPlan) -> str:
    """Before opset 12: each axis contracted with all of R = Resize(I(n)) by a dense MatMul, the last axis first."""
    sx, sdy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    scales = _checked_scales(em, plan) if plan.scales else ""
    h = _probe_height(em, plan, sx, sdy)
    matrices = {a: _axis_matrix(em, plan, a, pos, sx, sdy, scales, h, transposed=a == plan.rank - 1)
                for a, pos in plan.axes}
    cur = dy
    for a in sorted(matrices, reverse=True):
        cur = _contract(em, cur, _converted(em, plan, matrices[a], cur), a, plan.rank)
    return cur


def _branch(em: Emitter, build, elem: int, rank: int | None):
    """A subgraph of the nodes `build` emits, its output of `rank` (Emitter.subgraph). The lowering names its
    nodes after the If's."""
    return em.subgraph(lambda: [(build(), elem, rank)])


def _unpadded(em: Emitter, cur: str, sx: str, axes: list) -> str:
    """cur without the banded axes' padding rows: their first n rows (an Identity when `axes` is empty)."""
    if not axes:
        return em.node("Identity", [cur], "kept")
    ends = em.node("Gather", [sx, em.const(axes, "banded", np.int64)], "ends")
    return em.node("Slice", [cur, em.const([0] * len(axes), "starts", np.int64), ends,
                             em.const(axes, "axes", np.int64)], "unpadded")


def _converted(em: Emitter, plan: DynamicPlan, weights: str, like: str) -> str:
    """float32 weights in dY's type."""
    if not plan.convert:
        return em.node("CastLike", [weights, like], "weights")
    return weights if em.acc is np.float32 else em.node("Cast", [weights], "weights", to=TensorProto.DOUBLE)


def _slice(em: Emitter, src: str, start: int, end: int) -> str:
    return em.node("Slice", [src, em.const([start], "start", np.int64), em.const([end], "end", np.int64)], "part")


def _checked_scales(em: Emitter, plan: DynamicPlan) -> str:
    """scales reshaped to its expected length: a run-time scales of another length fails in onnxruntime."""
    return em.node("Reshape", [plan.scales, em.const([plan.n_scaled], "scales_len", np.int64)], "scales")


def _probe_height(em: Emitter, plan: DynamicPlan, sx: str, sdy: str) -> str:
    if not plan.stretch_probe:
        return em.const([1.0], "h", np.float32)
    changed = em.node("Cast", [em.node("Not", [em.node("Equal", [sx, sdy], "same")], "changed")], "changed",
                      to=TensorProto.FLOAT)
    return em.node("Add", [em.node("ReduceMax", [changed], "any", keepdims=1), em.const([1.0], "one", np.float32)],
                   "h")


def _axis_matrix(em: Emitter, plan: DynamicPlan, axis: int, pos: int, sx: str, sdy: str, scales: str, h: str,
                 transposed: bool) -> str:
    """R (n x m) of one axis, or R^T: onnxruntime's Resize of the identity matrix I(n), in float32.
    R^T is transposed as a 4-D tensor: onnxruntime fuses a 2-D Transpose (even through a Cast) into MatMul
    as FusedMatMul, which has no double kernel."""
    n, m = _slice(em, sx, axis, axis + 1), _slice(em, sdy, axis, axis + 1)
    eye = em.node("EyeLike", [em.node("ConstantOfShape", [em.node("Concat", [n, n], "square", axis=0)], "zeros")],
                  "eye")
    probe = em.node("Reshape", [eye, em.const([0, 1, 1, -1], "probe_shape", np.int64)], "probe")
    roi = _probe_roi(em, plan, pos)
    if plan.scales:
        s = _slice(em, scales, pos, pos + 1)
        factors = em.node("Concat", [em.const([1.0, 1.0], "ones", np.float32), h, s], "probe_scales", axis=0)
        inputs = [probe, factors] if em.opset < 11 else [probe, roi, factors]
    else:
        sizes = em.node("Concat", [n, em.const([1, 1], "ones", np.int64), m], "probe_sizes", axis=0)
        inputs = [probe, roi, em.const([], "no_scales", np.float32) if em.opset < 13 else "", sizes]
    resized = em.node("Resize", inputs, "weights", **plan.probe_attrs)
    row = _slice_axis2(em, resized)                    # [n, 1, 1, m]
    if transposed:      # [m, 1, 1, n]: a 4-D Transpose that onnxruntime does not fuse into MatMul
        row = em.node("Transpose", [row], "matrix_t", perm=[3, 1, 2, 0])
    matrix = em.node("Reshape", [row, em.const([0, -1], "matrix_shape", np.int64)], "matrix")
    if plan.nhwc_cubic and axis in (1, 2):
        eye = em.node("EyeLike", [em.node("ConstantOfShape", [em.node("Concat", [n, m], "rect", axis=0)], "zeros")],
                      "eye")
        matrix = em.node("Where", [_nhwc_copies(em, plan, n, m, scales), eye, matrix], "copied")
    return matrix


def _slice_axis2(em: Emitter, src: str) -> str:
    """The probe's row h = 0 (axis 2)."""
    return em.node("Slice", [src, em.const([0], "start", np.int64), em.const([1], "end", np.int64),
                             em.const([2], "axis", np.int64)], "row")


def _probe_roi(em: Emitter, plan: DynamicPlan, pos: int) -> str:
    """[0, 0, 0, start, 1, 1, 1, end] for tf_crop_and_resize; otherwise no roi (an empty one before opset 13)."""
    if plan.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return em.const([], "no_roi", np.float32) if em.opset < 13 else ""
    roi = em.node("Cast", [plan.roi], "roi", to=TensorProto.FLOAT)
    start = _slice(em, roi, pos, pos + 1)
    end = _slice(em, roi, plan.n_scaled + pos, plan.n_scaled + pos + 1)
    return em.node("Concat", [em.const([0.0] * 3, "zeros", np.float32), start,
                              em.const([1.0] * 3, "ones", np.float32), end], "probe_roi", axis=0)


def _contract(em: Emitter, cur: str, matrix: str, axis: int, rank: int) -> str:
    """cur's `axis` (size m) contracted with matrix (n x m; m x n for the last axis) into size n."""
    if axis == rank - 1:
        return em.node("MatMul", [cur, matrix], "contracted")
    if axis == rank - 2:
        return em.node("MatMul", [matrix, cur], "contracted")
    shape = em.node("Shape", [cur], "shape")
    product = em.node("MatMul", [matrix, fold(em, cur, axis)], "contracted")
    back = em.node("Concat", [_slice(em, shape, 0, axis), em.const([-1], "minus_one", np.int64),
                              _slice(em, shape, axis + 1, rank)], "unfold", axis=0)
    return em.node("Reshape", [product, back], "unfolded")
