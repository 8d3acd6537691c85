"""The taps of one axis on the dynamic path, read from onnxruntime's own Resize in O((n + m) * P) memory.

The dynamic path (onnx_ops.forms.dynamic) needs, for one axis whose lengths or scale are known only at run time, the
weight R[o, j] of X row j in dY row o, in the executing onnxruntime's float32 arithmetic (its coordinates, nearest
ties, cubic_coeff_a, exclude_outside, antialias, roi). Resizing the identity matrix I(n) gave all of R, O(n * m)
memory and time (10,000 X rows: 4 GB). Each dY row reads at most P consecutive X rows (its window: 1 for
nearest, 2 linear, 4 cubic, 2 * ceil(support) + 1 antialiased, onnxruntime's `window_size`), so resizing combs
gives every weight:

- comb r (r < P) holds 1 at the X rows j = r (mod P), 0 elsewhere. A window of P consecutive rows holds one such
  row, so Resize(comb r)[o] is R[o, j] for that j, computed by the same float32 operations on the same values as
  Resize(I(n))'s row j (the other terms of o's sum are 0 in both): bitwise the identity probe's weight;
- which j: two more combs hold k mod 4096 and k div 4096 (k = j div P) instead of 1, so that their outputs divided
  by the weight are those digits (below 4096: exact after rounding, the float32 quotient is off by < 0.002);
- so 3P probe rows of n values give the taps as [P, m] tables: `index` (j), `weight` (R[o, j]), `used` (weight
  != 0, where index is meaningful).

P is a constant for nearest, linear and cubic. Antialiased, it grows as the axis shrinks (support / scale), and the
combs are probed LOOP_RESIDUES at a time in a Loop, so memory stays O(n + P * m) (time O(P * n)). Ops from opset 12.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from .emitter import Emitter

WINDOW = {"nearest": 1, "linear": 2, "cubic": 4}   # X rows one dY row reads without antialias
RADIUS = {"linear": 1.0, "cubic": 2.0}             # the filter's support radius (antialias stretches it)
ANTIALIAS_MARGIN = 2      # extra residues beyond onnxruntime's window_size, for float32 roundings of the support
DIGIT = 4096              # the base the X row's block number k is probed in (two digits: k < 2^24)
LOOP_RESIDUES = 8         # antialias: combs probed per Loop iteration


@dataclass(frozen=True)
class RunTaps:
    """Tensor names of one axis's run-time taps, [P, m] each, entry (r, o): dY row o's weight on the X row
    index[r, o] = r (mod P)."""
    index: str     # int64 X rows, in [0, n)
    weight: str    # float32 weights (0 where no X row of that residue is read)
    used: str      # bool: weight != 0
    n: str         # [1] int64: X rows
    m: str         # [1] int64: dY rows


def period(plan, n: int, m: int) -> int:
    """P for lengths n, m known when lowering (scale m / n): the residues axis_taps probes."""
    mode = plan.attrs.get("mode", "nearest")
    if not (plan.attrs.get("antialias") and mode != "nearest"):
        return WINDOW[mode]
    return 2 * math.ceil(RADIUS[mode] * max(n / m, 1.0)) + 1 + ANTIALIAS_MARGIN


def probe_entries(plan, n: int, m: int) -> int:
    """Entries of the largest table axis_taps builds for lengths n, m: the probe rows of n values (and their Resize
    outputs, h <= 2), or the [P, m] tables of the three kinds."""
    residues = period(plan, n, m)
    looped = plan.attrs.get("antialias") and plan.attrs.get("mode", "nearest") != "nearest"
    group = LOOP_RESIDUES if looped else residues
    return max(3 * group * (n + 2 * m), 3 * math.ceil(residues / group) * group * m)


def ints(em: Emitter, values, what: str) -> str:
    """An int64 constant."""
    return em.const(values, what, np.int64)


def dy_rows(em: Emitter, taps: "RunTaps") -> str:
    """[m] int64: 0 .. m - 1, the dY row of each column of the taps' tables."""
    return em.node("Range", [ints(em, 0, "zero"), em.node("Squeeze", [taps.m], "m", **squeeze_axes(em)),
                             ints(em, 1, "one")], "dy_rows")


def axis_taps(em: Emitter, plan, pos: int, n: str, m: str, scale: str, roi: str, h: str) -> RunTaps:
    """The taps of the axis at `pos` of plan's scales / roi: n, m [1] int64 lengths; scale [1] float32 (or "" when
    dY's shape gives the size); roi the probe's roi input; h the probe's height scale (onnx_ops.forms.dynamic)."""
    mode = plan.attrs.get("mode", "nearest")
    if plan.attrs.get("antialias") and mode != "nearest":
        period = _antialias_period(em, mode, n, m, scale)
        probed = _looped_probes(em, plan, n, m, scale, roi, h, period)
    else:
        period = ints(em, [WINDOW[mode]], "period")
        probed = _probes(em, plan, n, m, scale, roi, h, period, ints(em, 0, "first"), WINDOW[mode])
    return _decoded(em, probed, period, n, m)


def _antialias_period(em: Emitter, mode: str, n: str, m: str, scale: str) -> str:
    """[1] int64: onnxruntime's antialias window_size = 2 * ceil(support) + 1, support = radius * max(1 / scale, 1)
    (scale m / n from sizes), plus ANTIALIAS_MARGIN."""
    if not scale:
        scale = em.node("Div", [em.node("Cast", [m], "m_f", to=TensorProto.FLOAT),
                                em.node("Cast", [n], "n_f", to=TensorProto.FLOAT)], "scale")
    one = em.const([1.0], "one", np.float32)
    stretch = em.node("Max", [em.node("Div", [one, scale], "inverse"), one], "stretch")
    support = em.node("Mul", [stretch, em.const([RADIUS[mode]], "radius", np.float32)], "support")
    half = em.node("Cast", [em.node("Ceil", [support], "half")], "half", to=TensorProto.INT64)
    return em.node("Add", [em.node("Mul", [half, ints(em, [2], "two")], "window"),
                           ints(em, [1 + ANTIALIAS_MARGIN], "centre")], "period")


def _probes(em: Emitter, plan, n: str, m: str, scale: str, roi: str, h: str, period: str, first: str,
            count: int) -> str:
    """[3, count, m] float32: Resize of the combs of residues first .. first + count - 1 (rows of residues >= P
    are all zero): their weights, then the low and the high digit of each read X row's block number."""
    n_scalar = em.node("Squeeze", [n], "n_scalar", **squeeze_axes(em))
    rows = em.node("Range", [ints(em, 0, "zero"), n_scalar, ints(em, 1, "one")], "rows")      # [n]
    block = em.node("Div", [rows, period], "block")
    residues = em.node("Add", [em.node("Range", [ints(em, 0, "zero"), ints(em, count, "count"), ints(em, 1, "one")],
                                       "residue"), first], "residue")
    comb = em.node("Cast", [em.node("Equal", [unsqueeze(em, em.node("Mod", [rows, period], "residue"), 0),
                                              unsqueeze(em, residues, 1)],
                                    "comb")], "comb", to=TensorProto.FLOAT)                   # [count, n]
    digits = [em.node("Cast", [em.node(op, [block, ints(em, [DIGIT], "digit")], "digit")], "digit",
                      to=TensorProto.FLOAT) for op in ("Mod", "Div")]
    combs = em.node("Concat", [comb] + [em.node("Mul", [comb, d], "digit_comb") for d in digits], "combs", axis=0)
    if not columns_probe(plan):
        return _plane_probes(em, plan, combs, m, scale, roi, h, count)
    if not plan.stretch_probe:
        return _column_probes(em, plan, combs, m, scale, roi, count)
    # the probe's shape may equal its input's only where n == m: there the planes, which stretch h

    def branch(probed):
        return em.subgraph(lambda: [(probed(), TensorProto.FLOAT, 3)])
    return em.node("If", [em.node("Equal", [n, m], "kept")], "probed",
                   then_branch=branch(lambda: _plane_probes(em, plan, combs, m, scale, roi, h, count)),
                   else_branch=branch(lambda: _column_probes(em, plan, combs, m, scale, roi, count)))


def _plane_probes(em: Emitter, plan, combs: str, m: str, scale: str, roi: str, h: str, count: int) -> str:
    """[3, count, m]: the combs [3 count, n] resized as 3 count planes [1, n] (h rows where the probe stretches)."""
    probe = em.node("Reshape", [combs, ints(em, [0, 1, 1, -1], "probe_shape")], "probe")       # [3 count, 1, 1, n]
    if scale:
        factors = em.node("Concat", [em.const([1.0, 1.0], "ones", np.float32), h, scale], "probe_scales", axis=0)
        inputs = [probe, roi, factors]
    else:
        sizes = em.node("Concat", [ints(em, [3 * count, 1, 1], "probe_rows"), m], "probe_sizes", axis=0)
        inputs = [probe, roi, em.const([], "no_scales", np.float32) if em.opset < 13 else "", sizes]
    resized = em.node("Resize", inputs, "probed", **plan.probe_attrs)                         # [3 count, 1, h, m]
    row = em.node("Slice", [resized, ints(em, [0], "start"), ints(em, [1], "end"), ints(em, [2], "axis")], "row")
    return em.node("Reshape", [row, em.node("Concat", [ints(em, [3, count], "split"), m], "by_kind", axis=0)],
                   "probed")


def columns_probe(plan) -> bool:
    """Plain cubic probes its combs as the columns of one [n, 3P] matrix, resizing its rows (scale 1 on the
    columns), not as 3P planes of [1, n]: onnxruntime's bicubic kernel caches per plane, and the planes cost 4 x
    the time (2 threads, 1.19.2: 12 combs of 97 -> 263 rows 644 against 165 us). Bitwise the same weights: a
    scale-1 axis reads x = o, whose cubic coefficients are (0, 1, 0, 0) exactly where cubic_coeff_a is a multiple
    of 1/64 (every product and sum exact), so each column is its own comb; the resized axis's terms are
    (1 * c) / sum there, c / sum * 1 in the planes. Where the probe stretches h (an axis with a scale in (1, 2)
    may keep its size), an If takes the planes for n == m. Not for the coordinate modes whose scale-1 axis does
    not read x = o."""
    a = float(np.float32(plan.attrs.get("cubic_coeff_a", -0.75)))
    return (plan.attrs.get("mode") == "cubic" and not plan.attrs.get("antialias")
            and plan.attrs.get("coordinate_transformation_mode", "half_pixel") not in (
                "tf_half_pixel_for_nn", "tf_crop_and_resize") and (a * 64).is_integer() and abs(a) <= 16)


def _column_probes(em: Emitter, plan, combs: str, m: str, scale: str, roi: str, count: int) -> str:
    """[3, count, m]: the combs [3 count, n] resized as the columns of an [n, 3 count] matrix (columns_probe; roi
    the empty one of its coordinate modes)."""
    probe = em.node("Transpose", [combs], "probe", perm=[1, 0])                                  # [n, 3 count]
    if scale:
        inputs = [probe, roi, em.node("Concat", [scale, em.const([1.0], "one", np.float32)], "probe_scales", axis=0)]
    else:
        sizes = em.node("Concat", [m, ints(em, [3 * count], "probe_columns")], "probe_sizes", axis=0)
        inputs = [probe, roi, em.const([], "no_scales", np.float32) if em.opset < 13 else "", sizes]
    resized = em.node("Resize", inputs, "probed", **plan.probe_attrs)                           # [m, 3 count]
    by_kind = em.node("Concat", [ints(em, [3, count], "split"), m], "by_kind", axis=0)
    return em.node("Reshape", [em.node("Transpose", [resized], "probed", perm=[1, 0]), by_kind], "probed")


def _looped_probes(em: Emitter, plan, n: str, m: str, scale: str, roi: str, h: str, period: str) -> str:
    """[3, rounds * LOOP_RESIDUES, m]: the combs LOOP_RESIDUES at a time (a Loop of ceil(P / LOOP_RESIDUES)
    rounds), so that no more than 3 * LOOP_RESIDUES probe rows of n values exist at once. The body reads the
    lengths, scale, roi, h and P as loop-carried values, not from the enclosing graph: onnxruntime (1.19.2) inlines
    an If branch whose condition it folds (static shapes), and a Loop there reading the branch's values failed when
    the session started (std::length_error)."""
    group = ints(em, [LOOP_RESIDUES], "group")
    rounds = em.node("Div", [em.node("Add", [period, ints(em, [LOOP_RESIDUES - 1], "round_up")], "rounded"), group],
                     "rounds")
    outer = {"n": n, "m": m, "period": period, "h": h, "scale": scale, "roi": roi}
    outer = {k: v for k, v in outer.items() if v}
    inner = {k: em.name(k) for k in outer}
    step, cond = em.name("round"), em.name("cond")

    def body():
        first = em.node("Mul", [step, ints(em, LOOP_RESIDUES, "group")], "first")
        probed = _probes(em, plan, inner["n"], inner["m"], inner.get("scale", ""), inner.get("roi", ""), inner["h"],
                         inner["period"], first, LOOP_RESIDUES)
        carried = [(em.node("Identity", [inner[k]], k), _elem_of(k), 1) for k in outer]
        return [(em.node("Identity", [cond], "cond"), TensorProto.BOOL, 0)] + carried + [(probed, TensorProto.FLOAT, 3)]

    graph = em.subgraph(body, [helper.make_tensor_value_info(step, TensorProto.INT64, []),
                               helper.make_tensor_value_info(cond, TensorProto.BOOL, [])] +
                        [helper.make_tensor_value_info(inner[k], _elem_of(k), [None if k == "roi" else 1])
                         for k in outer])
    rounds_scalar = em.node("Squeeze", [rounds], "rounds", **squeeze_axes(em))
    stacked = em.name("probed")                                                    # [rounds, 3, group, m]
    em.nodes.append(helper.make_node("Loop", [rounds_scalar, ""] + list(outer.values()),
                                     [em.name("carried") for _ in outer] + [stacked], body=graph))
    kinds_first = em.node("Transpose", [stacked], "probed", perm=[1, 0, 2, 3])
    return em.node("Reshape", [kinds_first, em.node("Concat", [ints(em, [3, -1], "split"), m], "by_kind", axis=0)],
                   "probed")


def _elem_of(carried: str) -> int:
    return TensorProto.INT64 if carried in ("n", "m", "period") else TensorProto.FLOAT


def _decoded(em: Emitter, probed: str, period: str, n: str, m: str) -> RunTaps:
    """The [P', m] tables from the probes' weights and digits (P' >= P rows; residues >= P are unused)."""
    weight, low, high = (em.node("Gather", [probed, ints(em, k, "kind")], "probe", axis=0) for k in range(3))
    used = em.node("Not", [em.node("Equal", [weight, em.const(0.0, "zero", np.float32)], "unused")], "used")
    safe = em.node("Where", [used, weight, em.const(1.0, "one", np.float32)], "divisor")
    low, high = (em.node("Cast", [em.node("Round", [em.node("Div", [d, safe], "digit")], "digit")], "digit",
                         to=TensorProto.INT64) for d in (low, high))
    block = em.node("Add", [low, em.node("Mul", [high, ints(em, DIGIT, "digit")], "high")], "block")
    residues = em.node("Range", [ints(em, 0, "zero"), _first_dim(em, weight), ints(em, 1, "one")], "residue")
    column = unsqueeze(em, residues, 1)
    row = em.node("Add", [em.node("Mul", [block, period], "block_start"), column], "x_row")
    last = em.node("Sub", [n, ints(em, [1], "one")], "last_row")
    index = em.node("Where", [used, em.node("Min", [em.node("Max", [row, ints(em, 0, "zero")], "x_row"), last],
                                             "x_row"), ints(em, 0, "zero")], "index")
    return RunTaps(index, weight, used, n, m)


def _first_dim(em: Emitter, src: str) -> str:
    """src's first dim as an int64 scalar."""
    dims = em.node("Shape", [src], "dims")
    return em.node("Squeeze", [em.node("Slice", [dims, ints(em, [0], "start"), ints(em, [1], "end")], "count")],
                   "count", **squeeze_axes(em))


def identity_where(em: Emitter, taps: RunTaps, cond: str) -> RunTaps:
    """The taps of a copied axis (dY row o reads X row o with weight 1, residue row 0) where `cond` holds."""
    cols = dy_rows(em, taps)
    first = em.node("Equal", [em.node("Range", [ints(em, 0, "zero"), _first_dim(em, taps.weight),
                                                ints(em, 1, "one")], "residue"), ints(em, 0, "zero")], "first")
    first = unsqueeze(em, first, 1)                                                          # [P, 1]
    eye_used = em.node("Expand", [first, em.node("Shape", [taps.weight], "shape")], "eye_used")
    eye_weight = em.node("Cast", [eye_used], "eye_weight", to=TensorProto.FLOAT)
    eye_index = em.node("Expand", [cols, em.node("Shape", [taps.weight], "shape")], "eye_index")
    weight = em.node("Where", [cond, eye_weight, taps.weight], "weight")
    used = em.node("Not", [em.node("Equal", [weight, em.const(0.0, "zero", np.float32)], "unused")], "used")
    return RunTaps(em.node("Where", [cond, eye_index, taps.index], "index"), weight, used, taps.n, taps.m)


def is_identity(em: Emitter, taps: RunTaps) -> str:
    """[1] bool: the axis is copied (n == m, every dY row o reads X row o alone, with weight 1)."""
    cols = dy_rows(em, taps)
    one = em.node("And", [em.node("Equal", [taps.index, cols], "diagonal"),
                          em.node("Equal", [taps.weight, em.const(1.0, "one", np.float32)], "unit")], "one")
    fine = em.node("Cast", [em.node("Or", [em.node("Not", [taps.used], "unused"), one], "fine")], "fine",
                   to=TensorProto.INT32)
    count = em.node("ReduceSum", [em.node("Cast", [taps.used], "used", to=TensorProto.INT64)], "count", keepdims=1)
    every = em.node("Cast", [em.node("ReduceMin", [fine], "every", keepdims=1)], "every", to=TensorProto.BOOL)
    square = em.node("Equal", [taps.n, taps.m], "square")
    counted = em.node("Equal", [em.node("Reshape", [count, ints(em, [1], "one")], "count"), taps.m], "counted")
    return em.node("And", [em.node("And", [square, counted], "square"),
                           em.node("Reshape", [every, ints(em, [1], "one")], "every")], "identity")


def squeeze_axes(em: Emitter) -> dict:
    """Squeeze's axes: an attribute before opset 13 (an input after, where a missing one squeezes every 1)."""
    return {"axes": [0]} if em.opset < 13 else {}


def unsqueeze(em: Emitter, src: str, axis: int) -> str:
    """`src` with a new axis of 1 at `axis` (axes an attribute before opset 13, an input from 13)."""
    if em.opset < 13:
        return em.node("Unsqueeze", [src], "unsqueezed", axes=[axis])
    return em.node("Unsqueeze", [src, ints(em, [axis], "axis")], "unsqueezed")
