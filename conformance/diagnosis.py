"""What a wrong dX is: its worst element, and the porting bug that explains it exactly.

For a numerical failure the suite recomputes the case's gradient under the alternatives a porting bug produces
(the other coordinate modes, rounding directions and tie rules, swapped, missing or negated pixel offsets,
align_corners' length-1 rule, clamped vs dropped edge taps, float32 vs float64 coordinates, a channels-last vs
channels-first layout, the other cubic coefficient, antialias on or off) with the NumPy reference, and judges the
backend's dX against each by the case's own rule. The first that explains it is named in the kernel's own
convention's terms: the keys of its description that change (`align_corners=True on axes 2, 3` for torch,
`coordinate_transformation_mode='asymmetric'` for ONNX, `InputPixelOffsets=[...]` for DirectML), else in words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import numpy as np

from dml_desc.canonical import AxisMap, Mode, Resampling, Rounding
from dml_desc.conventions.common import align_corners_axis
from dml_desc.reference import resize_grad

MAX_ALTERNATIVES = 80       # a failure costs at most this many reference gradients


@dataclass
class Alternative:
    """One porting bug: `label` in words, the axes it changes, and the map it computes (or its gradient)."""
    label: str
    axes: tuple
    res: Optional[Resampling] = None             # the alternative canonical map, when it is one
    grad: Optional[Callable] = None              # dy -> dX, when it is no canonical map (a layout, dropped taps)

    def gradient(self, dy: np.ndarray) -> np.ndarray:
        """dX of `dy` under this alternative."""
        if self.grad is not None:
            return self.grad(dy)
        assert self.res is not None              # an alternative is a map or a gradient
        return resize_grad(dy, self.res)


class Diagnosis:
    """Called with a backend's wrong dX: 'matches <alternative>' where one explains it, else None."""

    def __init__(self, case, convention: str, description, judge, semantics=None):
        self.case, self.convention, self.description, self.judge = case, convention, description, judge
        self.semantics = semantics

    def __call__(self, got: np.ndarray) -> Optional[str]:
        res = getattr(self.case, "res", None)
        if res is None:
            return None
        dy = np.asarray(self.case.dy, np.float64)
        expected = np.asarray(self.case.expected, np.float64)
        found: list[str] = []
        for k, alt in enumerate(alternatives(res)):
            if k >= MAX_ALTERNATIVES or len(found) >= 3:
                break
            try:
                want = np.asarray(alt.gradient(dy), np.float64)
            except Exception:            # an alternative the reference cannot compute explains nothing
                continue
            if want.shape != got.shape or self.judge(expected, want)[0]:
                continue                 # the same gradient as the case's on these shapes: it tells nothing
            if self.judge(got, want)[0]:
                found.append(self.name(alt))
        if not found:
            return None
        return "matches " + found[0] + ("" if len(found) == 1 else " (also: " + "; ".join(found[1:]) + ")")

    def name(self, alt: Alternative) -> str:
        """The alternative in the convention's terms where its description states it, else in words."""
        where = f" on axes {', '.join(str(a) for a in alt.axes)}" if alt.axes else ""
        spelling = self.spelling(alt.res) if alt.res is not None else None
        return f"{spelling}{where} ({alt.label})" if spelling else f"{alt.label}{where}"

    def spelling(self, res) -> Optional[str]:
        """The keys of the convention's description of `res` that differ from the case's: 'align_corners=True'."""
        if not isinstance(self.description, dict):
            return None
        other = self._described(res)
        if other is None:
            return None
        mine, theirs = _flat(self.description), _flat(other)
        keys = [k for k in list(theirs) + [k for k in mine if k not in theirs] if mine.get(k) != theirs.get(k)]
        keys = [k for k in keys if k not in ("Operator",)] or keys
        if not keys or len(keys) > 4:
            return None
        return ", ".join(f"{k}={_py(theirs[k])}" if k in theirs else f"{k} unset" for k in keys)


    def _described(self, res):
        """`res` in the convention: exact, else (where the convention has float32 spellings) within 1e-6 a weight."""
        from dml_desc import conventions
        from .backends import to_description
        try:
            return to_description(res, self.convention, self.semantics)
        except Exception:
            pass
        if self.convention in ("dml", "canonical"):
            return None
        try:
            options = {"semantics": conventions.onnx.resolve_semantics(self.semantics)}
            return conventions.dump(self.convention, res, backward=True, tolerance=1e-6, **options)[0]
        except Exception:
            return None


def _flat(obj, out=None) -> dict:
    """A description's leaves by their own key (nested dicts such as ONNX's attributes flattened)."""
    out = {} if out is None else out
    for k, v in obj.items():
        if isinstance(v, dict) and k not in ("InputGradientTensor", "OutputGradientTensor"):
            _flat(v, out)
        else:
            out[k] = v
    return out


def _py(v) -> str:
    """A value as Python prints it (True, 'nearest-exact', [0.5, 0.5])."""
    return repr(v)


# ---- the alternatives --------------------------------------------------------------------------------------

def alternatives(res) -> Iterator[Alternative]:
    """Every alternative map for `res`, simplest first: each family on all resized axes, then on one axis."""
    resized = tuple(i for i, a in enumerate(res.axes) if not a.is_identity)
    if not resized:
        return
    groups = [resized] + ([(i,) for i in resized] if len(resized) > 1 else [])
    for label, change in _axis_changes(res):
        for group in groups:
            axes = list(res.axes)
            for i in group:
                new = change(res.axes[i])
                if new is not None:
                    axes[i] = new
            if tuple(axes) != tuple(res.axes):
                yield Alternative(label, group, res.with_(axes=tuple(axes)))
    yield from _map_changes(res, resized)
    yield from _layouts(res)
    if res.mode is Mode.LINEAR and not res.antialias:
        for group in groups:
            yield Alternative("edge taps dropped, not clamped", group, grad=_dropped_taps(res, group))


def _axis_changes(res):
    """(label, AxisMap -> AxisMap or None) for each per-axis porting bug that applies to `res`'s mode."""
    nearest = res.mode is Mode.NEAREST
    out = [("the coordinate mode half_pixel", lambda a: a.with_(in_offset=0.5, out_offset=-0.5)),
           ("the coordinate mode asymmetric: no pixel offsets", lambda a: a.with_(in_offset=0.0, out_offset=0.0)),
           ("the coordinate mode align_corners", lambda a: align_corners_axis(a.in_size, a.out_size, a.rounding)),
           ("the coordinate mode pytorch_half_pixel (0 where the output has length 1)",
            lambda a: a.with_(scale=math.inf, in_offset=0.0, out_offset=0.0) if a.out_size == 1 else
            a.with_(in_offset=0.5, out_offset=-0.5)),
           ("the coordinate mode tf_half_pixel_for_nn", lambda a: a.with_(in_offset=0.0, out_offset=-0.5)),
           ("align_corners' length-1 rule read as the centre", _centre_if_length_1),
           ("the scale out / in instead of the given scale", _scale_from_sizes),
           ("the input and output pixel offsets swapped",
            lambda a: a.with_(in_offset=a.out_offset, out_offset=a.in_offset)),
           ("the pixel offsets negated", lambda a: a.with_(in_offset=-a.in_offset, out_offset=-a.out_offset)),
           ("the input pixel offset missing", lambda a: a.with_(in_offset=0.0)),
           ("the output pixel offset missing", lambda a: a.with_(out_offset=0.0)),
           ("float64 coordinates (no float32 rounding)", lambda a: a.with_(exact=True, coords=None)),
           ("float32 coordinates", lambda a: a.with_(exact=False, coords=None, single_rounding=False))]
    if nearest:
        out += [(f"the rounding {r.value}", lambda a, r=r: a.with_(rounding=r, tie_tolerance=0.0)) for r in Rounding] \
            + [("ties detected within 1e-6 (onnxruntime >= 1.27)", lambda a: a.with_(tie_tolerance=1e-6)),
               ("exact ties only", lambda a: a.with_(tie_tolerance=0.0))]
    return out


def _centre_if_length_1(a: AxisMap):
    """align_corners with one output: the spec reads x = 0; a port may read the centre (in - 1) / 2."""
    if a.scale == math.inf and a.out_size == 1:
        return a.with_(scale=1, in_offset=-(a.in_size - 1) / 2, out_offset=0.0)
    return None


def _scale_from_sizes(a: AxisMap):
    from fractions import Fraction
    if a.scale == math.inf:
        return None
    return a.with_(scale=Fraction(a.out_size, a.in_size))


def _map_changes(res, resized) -> Iterator[Alternative]:
    """Whole-map porting bugs: the other cubic coefficient, exclude_outside, antialias, the other mode."""
    if res.mode is Mode.CUBIC:
        for a in (-0.75, -0.5):
            if a != res.cubic_coeff_a:
                yield Alternative(f"cubic_coeff_a {a}", (), res.with_(cubic_coeff_a=a))
        yield Alternative(f"exclude_outside {int(not res.exclude_outside)}", (),
                          res.with_(exclude_outside=not res.exclude_outside))
    if res.mode is not Mode.NEAREST:
        yield Alternative(f"antialias {'off' if res.antialias else 'on'}", (), res.with_(antialias=not res.antialias))
    for mode in Mode:
        if mode is not res.mode:
            yield Alternative(f"mode {mode.value}", (), res.with_(mode=mode, antialias=False))


def _layouts(res) -> Iterator[Alternative]:
    """The tensor read channels-last where it is channels-first, and the reverse (rank >= 3)."""
    rank = len(res.axes)
    if rank < 3:
        return
    last = (0,) + tuple(range(2, rank)) + (1,)           # NCX -> NXC
    first = tuple(int(i) for i in np.argsort(last))      # NXC -> NCX
    for perm, label in ((last, "dY and dX read as channels-last (NXC) memory"),
                        (first, "dY and dX read as channels-first (NCX) memory")):
        yield Alternative(label, (), grad=lambda dy, p=perm: _permuted_memory(res, p, dy))


def _permuted_memory(res, perm, dy):
    """A kernel that indexes the buffers as the axes `perm`: it reads dY's memory in that order, applies the map
    to the permuted axes, and writes dX's memory in that order; the suite reads it in the description's."""
    permuted = res.with_(axes=tuple(res.axes[p] for p in perm))
    dy_seen = np.ascontiguousarray(dy).reshape(permuted.out_shape)
    return resize_grad(dy_seen, permuted).reshape(res.in_shape)


def _dropped_taps(res, group):
    """Linear taps outside the input dropped (zero padding) instead of clamped to the edge, on `group`."""
    from dml_desc.weights import coordinates

    def matrix(a: AxisMap) -> np.ndarray:
        x = coordinates(a)
        m = np.zeros((a.out_size, a.in_size))
        i0 = np.floor(x).astype(np.int64)
        f = x - i0
        for o in range(a.out_size):
            for i, w in ((i0[o], 1 - f[o]), (i0[o] + 1, f[o])):
                if 0 <= i < a.in_size:
                    m[o, i] += w
        return m

    def grad(dy):
        dx = np.asarray(dy, np.float64)
        for k, a in enumerate(res.axes):
            if k in group:
                dx = np.moveaxis(np.tensordot(matrix(a).T, np.moveaxis(dx, k, 0), axes=1), 0, k)
            elif not a.is_identity:
                dx = np.moveaxis(np.tensordot(_axis_matrix(res, a).T, np.moveaxis(dx, k, 0), axes=1), 0, k)
        return dx
    return grad


def _axis_matrix(res, a: AxisMap) -> np.ndarray:
    """One axis' forward matrix A (out x in) under `res`'s mode: the gradient of dY = e_o is row o of A."""
    one = res.with_(axes=(AxisMap.identity(a.out_size), a))
    return resize_grad(np.eye(a.out_size), one)


# ---- the worst element -------------------------------------------------------------------------------------

def worst_element(got: np.ndarray, want: np.ndarray) -> Optional[dict]:
    """The element with the largest |got - want|: its index, the expected and the got value, where it sits
    (first / last on an axis), and the axis the error lies along when one index of it holds all of the error."""
    diff = np.abs(got - want)
    if diff.size == 0:
        return None
    flat = int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff)))
    index = tuple(int(i) for i in np.unravel_index(flat, diff.shape))
    edges = {k: ("first" if i == 0 else "last") for k, (i, n) in enumerate(zip(index, diff.shape))
             if n > 1 and i in (0, n - 1)}
    out = {"index": list(index), "expected": float(want[index]), "got": float(got[index]),
           "edges": {str(k): v for k, v in edges.items()}}
    bad = diff > 0.5 * float(diff[index]) if np.isfinite(diff[index]) else ~np.isfinite(diff)
    for k, n in enumerate(diff.shape):
        if n < 2:
            continue
        where = np.flatnonzero(bad.any(axis=tuple(j for j in range(diff.ndim) if j != k)))
        if len(where) == 1:
            out["axis"], out["axis_index"] = k, int(where[0])
            break
    return out


def describe_worst(w: Optional[dict]) -> str:
    """'worst dX[0, 1, 5, 9]: expected 0.812, got 0 (last on axes 2, 3; all the error at index 5 of axis 2)'."""
    if not w:
        return ""
    where = []
    by_kind: dict = {}
    for k, kind in w["edges"].items():
        by_kind.setdefault(kind, []).append(k)
    where += [f"{kind} on {'axes' if len(ks) > 1 else 'axis'} {', '.join(ks)}" for kind, ks in by_kind.items()]
    if "axis" in w:
        where.append(f"all of the error at index {w['axis_index']} of axis {w['axis']}")
    tail = f" ({'; '.join(where)})" if where else ""
    return (f"worst dX[{', '.join(str(i) for i in w['index'])}]: expected {w['expected']:.6g}, "
            f"got {w['got']:.6g}{tail}")
