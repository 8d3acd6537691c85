"""Helpers every converter shares: exactness checks and half-pixel style axis maps."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, SupportsFloat, TypeVar

from ..canonical import AxisMap, Mode, Resampling, Rounding, Scale, ratio
from ..errors import ConversionError, DescError, require, short_key
from ..weights import same_weights

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C")                                  # a convention's candidate spelling (a node, a call, a descriptor)
D = TypeVar("D", bound="DataclassInstance")


INT_RANGE = (-2 ** 63, 2 ** 64 - 1)      # the widest integers the conventions hold: int64 dims, DML's UINT64 size


def check_numbers(obj: object) -> None:
    """Every number a description holds, wherever it is: an integer within INT_RANGE and a float finite, else a
    DescError naming its place (e.g. InputPixelOffsets[0]), before a converter computes with it. Iterative (no
    recursion limit), each container visited once (a Python object may hold itself)."""
    import numbers
    stack: list[tuple[object, str]] = [(obj, "")]
    seen: set[int] = set()
    while stack:
        value, where = stack.pop()
        if isinstance(value, (dict, list, tuple)):
            if id(value) in seen:
                continue
            seen.add(id(value))
            items: Iterable[tuple[object, object]] = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((item, f"{where}[{key}]" if not isinstance(value, dict) else
                              f"{where}.{short_key(key)}" if where else short_key(key)))
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            require(INT_RANGE[0] <= int(value) <= INT_RANGE[1], where or "description", value, "is out of range: an "
                    "integer in a description must fit in 64 bits (-2^63 .. 2^64-1)")
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            require(_finite(value), where or "description", value, "must be a finite number")


def _finite(value: SupportsFloat) -> bool:
    try:
        return math.isfinite(value)
    except (OverflowError, ValueError):       # a Fraction beyond float64's range
        return False


def check_tolerance(value: Any) -> float:           # Any: a user's value, checked here
    """A --tolerance value: a finite number >= 0 (a bound on max |dw|, the per-axis weight difference)."""
    from ..errors import is_number
    require(is_number(value) and not isinstance(value, bool) and 0 <= value < 1, "tolerance", value,
            "must be a number in [0, 1): the largest weight difference max |dw| to accept")
    return float(value)


def refuse(field: str, value: object, reason: str) -> NoReturn:
    """Raise ConversionError(field, value, reason): the map cannot be written exactly."""
    raise ConversionError(field, value, reason)


def exact(source: Resampling, candidate: Resampling, target: str) -> Resampling:
    """Return `candidate` if it is the same map as `source`; note when only these shapes agree."""
    source, candidate = source.normalized(), candidate.normalized()
    if _same_params(source, candidate):
        return candidate
    if same_weights(probe_head(source), probe_head(candidate)) and same_weights(source, candidate):
        return candidate.noted(f"{target}: equal to the source only for these shapes "
                               f"(in={list(source.in_shape)}, out={list(source.out_shape)}): "
                               f"the parameters differ ({_differing(source, candidate)}) but no rounding tie or "
                               "clamp tells them apart")
    field, ours, theirs = _differences(source, candidate)[0]
    refuse(field, ours, f"{target} cannot express this exactly: the closest spelling it has gives {field}={theirs!r}")


PROBE_ROWS = 256


def probe_head(res: Resampling) -> Resampling:
    """The same map on the first PROBE_ROWS outputs of each axis (a row's taps do not depend on how many rows
    follow it), so a candidate that differs early is refused without building the taps of long axes."""
    if all(a.out_size <= PROBE_ROWS for a in res.axes):
        return res
    def cut(a: AxisMap) -> AxisMap:
        if a.out_size <= PROBE_ROWS or a.is_identity:
            return a
        return a.with_(out_size=PROBE_ROWS, coords=None if a.coords is None else a.coords[:PROBE_ROWS])
    return res.with_(axes=tuple(cut(a) for a in res.axes))


def _same_params(a: Resampling, b: Resampling) -> bool:
    return _weight_params(a) == _weight_params(b)


def _weight_params(r: Resampling) -> tuple[object, ...]:
    """Every parameter the weights may depend on; one that cannot matter is None. A shortcut that skipped a
    parameter here would call two different maps equal without comparing their weights: exclude_outside once
    counted for cubic only, so antialiased linear with and without it (torch vs onnxruntime, 0.08-0.22 apart)
    passed as exact."""
    return (r.axes, r.mode, r.antialias,
            r.cubic_coeff_a if r.mode is Mode.CUBIC else None,
            r.exclude_outside if r.mode is not Mode.NEAREST else None,
            r.extrapolation_value if any(a.extrapolate for a in r.axes) else None)


def _differences(a: Resampling, b: Resampling) -> list[tuple[str, object, object]]:
    out: list[tuple[str, object, object]] = []
    for name in ("mode", "antialias", "cubic_coeff_a", "exclude_outside"):
        if getattr(a, name) != getattr(b, name):
            out.append((name, getattr(a, name), getattr(b, name)))
    for i, (x, y) in enumerate(zip(a.axes, b.axes)):
        for name in ("in_size", "out_size", "scale", "in_offset", "out_offset", "rounding", "extrapolate",
                     "tie_tolerance", "exact"):
            if getattr(x, name) != getattr(y, name):
                out.append((f"axes[{i}].{name}", _show(getattr(x, name)), _show(getattr(y, name))))
    return out or [("weights", "source", "the two forms give different weights")]


def _differing(a: Resampling, b: Resampling) -> str:
    """The differing parameter names, e.g. 'axes[3].tie_tolerance' (a runtime's nearest tie rule)."""
    return ", ".join(sorted({field for field, _, _ in _differences(a, b)}))


def _show(v: object) -> object:
    return v.value if isinstance(v, Rounding) else (str(v) if not isinstance(v, (int, float)) else v)


def half_pixel_axis(n_in: int, n_out: int, scale: Scale, rounding: Rounding = Rounding.ROUND_PREFER_FLOOR) -> AxisMap:
    """An axis with half-pixel centers: x = (o + 0.5) / scale - 0.5."""
    return AxisMap(n_in, n_out, scale, 0.5, -0.5, rounding)


def align_corners_axis(n_in: int, n_out: int, rounding: Rounding = Rounding.ROUND_PREFER_FLOOR,
                       scale: Scale | None = None) -> AxisMap:
    """x = o * (in-1)/(out-1); 0 when out == 1. `scale` overrides the exact ratio (TF's float32 one)."""
    if n_out == 1 or n_in == 1:
        return AxisMap(n_in, n_out, math.inf, 0.0, 0.0, rounding)
    return AxisMap(n_in, n_out, ratio(n_out - 1, n_in - 1) if scale is None else scale, 0.0, 0.0, rounding)


def spatial_axes(rank: int, layout: str) -> range:
    """Spatial axes of an NCX (channels first) or NXC (channels last) tensor."""
    return range(2, rank) if layout == "NCX" else range(1, rank - 1)


def place(shape: Iterable[int], spatial: Iterable[int], maps: Iterable[AxisMap]) -> tuple[AxisMap, ...]:
    """Identity maps everywhere except the spatial axes."""
    axes = [AxisMap.identity(n) for n in shape]
    for i, m in zip(spatial, maps):
        axes[i] = m
    return tuple(axes)


def reciprocal_f32(value: float) -> Scale:
    """The exact scale whose reciprocal is float32(value): for runtimes that multiply by in/out.
    A zero source scale (align_corners with one input element) maps every output to 0: scale inf."""
    import numpy as np
    from fractions import Fraction
    v = float(np.float32(value))
    return math.inf if v == 0 else 1 / Fraction(v)


def first_exact(res: Resampling, candidates: Iterable[C], to_canonical: Callable[[C], Resampling], target: str,
                tolerance: float = 0.0, closest: bool = True) -> tuple[C, tuple[str, ...]]:
    """The first candidate whose canonical form is `res` exactly; else one equal for these shapes; else, with
    `tolerance` > 0, the closest candidate whose weights are within it (with a note giving the bound). Refuses
    with the most telling reason, naming the closest spelling and the weight difference it would make; with
    `closest` False (a caller that only asks whether a spelling exists) the closest is not looked for: that
    compares every candidate's tables, seconds per candidate on a 2^22 axis."""
    tolerance = check_tolerance(tolerance)
    errors: list[DescError] = []
    best: tuple[C, tuple[str, ...]] | None = None
    near: list[tuple[C, Resampling, ConversionError]] = []
    for cand in candidates:
        try:
            mapped = to_canonical(cand)
        except DescError as e:
            errors.append(e)
            continue
        try:
            back = exact(res, mapped, target)
        except ConversionError as e:
            errors.append(e)
            if mapped.in_shape == res.in_shape and mapped.out_shape == res.out_shape:
                near.append((cand, mapped, e))
            continue
        if not back.notes:
            return cand, ()
        best = best or (cand, back.notes)
    if best:
        return best
    found = _closest(res, near) if closest else None
    if found is not None:
        cand, (dw, changed, taps), err = found
        if 0 < tolerance and dw <= tolerance:
            return cand, (f"{target}: not exact, within --tolerance {tolerance:g}: this spelling changes the "
                          f"weights by max |dw| = {dw:.2g} on {changed} of {taps} taps (per axis)",)
        raise ConversionError(err.field, err.value, f"{err.rule}. The closest spelling, {_spelling(cand)}, changes the "
                              f"weights by max |dw| = {dw:.2g} on {changed} of {taps} taps (per axis); "
                              f"--tolerance {_round_up(dw)} accepts it")
    if near and not found:                 # not compared: the first candidate of the same shapes says why
        raise near[0][2]
    errors.sort(key=lambda e: not isinstance(e, ConversionError))
    if not errors:
        refuse("map", "resampling", f"{target} has no spelling for this map")
    raise errors[0]


def _closest(res: Resampling, near: list[tuple[C, Resampling, ConversionError]]
             ) -> tuple[C, tuple[float, int, int], ConversionError] | None:
    """(candidate, (max |dw|, taps changed, taps), error) of the candidate nearest `res`, or None."""
    scored = [(cand, weight_difference(res, mapped), e) for cand, mapped, e in near]
    scored = [s for s in scored if math.isfinite(s[1][0])]
    return min(scored, key=lambda s: s[1][0]) if scored else None


def weight_difference(a: Resampling, b: Resampling) -> tuple[float, int, int]:
    """(max |dw|, taps that differ, taps) between two maps of the same shapes, axis by axis over the forward
    tables of dml_desc.weights (a tap is one (output, input) weight of one axis); inf when the extrapolated rows
    or the constant they write differ."""
    from ..weights import forward_taps, outside_rows, sorted_unique
    import numpy as np
    if a.extrapolation_value != b.extrapolation_value and any(outside_rows(x) for x in a.axes):
        return math.inf, 0, 0
    worst, changed, total = 0.0, 0, 0
    for x, y in zip(a.normalized().axes, b.normalized().axes):
        if outside_rows(x) != outside_rows(y):
            return math.inf, 0, 0
        (ra, ca, wa), (rb, cb, wb) = forward_taps(x, a).merged(), forward_taps(y, b).merged()
        n = max(x.in_size, 1)
        keys = sorted_unique(np.concatenate((ra * n + ca, rb * n + cb)))
        da, db = np.zeros(len(keys)), np.zeros(len(keys))
        da[np.searchsorted(keys, ra * n + ca)] = wa
        db[np.searchsorted(keys, rb * n + cb)] = wb
        diff = np.abs(da - db)
        worst, changed, total = max(worst, float(diff.max(initial=0.0))), changed + int((diff > 0).sum()), \
            total + len(keys)
    return worst, changed, total


def _round_up(v: float) -> str:
    """A short decimal >= v (what to pass to --tolerance)."""
    mantissa, exponent = f"{v:.0e}".split("e")
    bound = float(f"{mantissa}e{exponent}")
    return f"{bound:g}" if bound >= v else f"{float(f'{int(mantissa) + 1}e{exponent}'):g}"


def _spelling(cand: object) -> str:
    """A candidate as the JSON the user would write (to_json when it has one)."""
    import json
    obj = cand.to_json() if hasattr(cand, "to_json") else cand
    try:
        return json.dumps(obj, separators=(", ", ": "))
    except TypeError:
        return repr(obj)


def dataclass_from_json(cls: type[D], obj: Any, label: str) -> D:     # Any: parsed JSON, checked here
    """Build an argument dataclass from a JSON object, refusing unknown keys by name."""
    from ..errors import did_you_mean, require
    require(isinstance(obj, dict), label, obj, "must be a JSON object")
    known = sorted(cls.__dataclass_fields__)
    extra = sorted(set(obj) - set(known))
    require(not extra, extra[0] if extra else "", obj.get(extra[0]) if extra else None,
            f"unknown key{did_you_mean(extra[0], known) if extra else ''}; the {label} form has {known}")
    from dataclasses import MISSING
    for name, f in cls.__dataclass_fields__.items():
        require(name in obj or f.default is not MISSING or f.default_factory is not MISSING, name, None,
                f"is required in the {label} form")
    return cls(**obj)


def check_budget(shape: Sequence[int], out_shape: Sequence[int], shape_field: str, out_field: str,
                 out_index: Callable[[int], str] | None = None) -> None:
    """The size budget on a convention's own fields, before any map or table is built: both shapes' element
    counts, and each resized axis's length (`out_index(i)` names the user's entry for axis i)."""
    from .. import budget
    budget.check_shape(shape, shape_field)
    budget.check_shape(out_shape, out_field)
    for i, (n_in, n_out) in enumerate(zip(shape, out_shape)):
        if n_in != n_out:
            budget.check_axis(n_in, f"{shape_field}[{i}]")
            budget.check_axis(n_out, out_index(i) if out_index else f"{out_field}[{i}]")
