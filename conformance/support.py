"""What a kernel under test implements: its declaration, and the cases it leaves out.

A kernel says it does not implement a case in two ways, and either makes the case "unsupported by this kernel"
(counted as its coverage, never a failure; `--unsupported-fails` counts them as failures):

- it raises NotImplementedError for the case (the message is the reason recorded);
- it declares what it implements, as an attribute `supports` of the function (or of a backend object):
  a dict with any of these keys, each a tuple of the values it implements, or a bool:

      modes             'nearest', 'linear', 'cubic'
      coordinate_modes  ONNX's names: 'half_pixel', 'half_pixel_symmetric', 'pytorch_half_pixel', 'align_corners',
                        'asymmetric', 'tf_half_pixel_for_nn', 'tf_crop_and_resize' (alias: ctms). For an ONNX
                        description its coordinate_transformation_mode; in any other convention, what each
                        resized axis' map is (align_corners, half_pixel, asymmetric, tf_half_pixel_for_nn)
      nearest_modes     'round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil' (nearest cases only)
      ranks             tensor ranks, e.g. (4,) or (3, 4, 5)
      antialias         False: no antialiased case
      extrapolation     False: no case whose coordinates fall outside the input (tf_crop_and_resize)

  or a function `supports(description, dtype) -> None | reason` deciding it case by case.
"""
from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from typing import Optional

from dml_desc.errors import DescError, require

from .catalog import Unsupported

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
VALUES = {"modes": ("nearest", "linear", "cubic"), "coordinate_modes": COORDINATE_MODES,
          "nearest_modes": ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"), "ranks": None,
          "antialias": bool, "extrapolation": bool}
ALIASES = {"ctms": "coordinate_modes", "coordinate_transformation_modes": "coordinate_modes"}


def declared(value, name: str):
    """A kernel's `supports` attribute checked: None, a function, or a dict of VALUES' keys (aliases resolved);
    anything else is a DescError naming `NAME.supports` and the rule."""
    field = f"{name}.supports"
    if value is None or callable(value):
        return value
    require(isinstance(value, dict), field, value, "must be a dict (modes, coordinate_modes, nearest_modes, "
            "ranks, antialias, extrapolation) or a function (description, dtype) -> None or a reason")
    out = {}
    for key, v in value.items():
        key = ALIASES.get(key, key)
        require(key in VALUES, field, key, f"is no key it takes; the keys are {', '.join(VALUES)}")
        allowed = VALUES[key]
        if allowed is bool:
            require(isinstance(v, bool), f"{field}[{key!r}]", v, "must be True or False")
        elif allowed is None:
            require(isinstance(v, (tuple, list, set)) and all(isinstance(r, int) and r > 0 for r in v),
                    f"{field}[{key!r}]", v, "must be a tuple of tensor ranks, e.g. (4,)")
        else:
            require(isinstance(v, (tuple, list, set)) and all(x in allowed for x in v), f"{field}[{key!r}]", v,
                    f"must be a tuple of {', '.join(allowed)}")
        out[key] = v if isinstance(v, bool) else tuple(v)
    return out


def check_declared(supports, case, convention: str, description) -> None:
    """Unsupported with the reason where the declaration leaves `case` out (a function may return a reason)."""
    supports = declared(supports, "the backend")
    if supports is None:
        return
    if callable(supports):
        reason = supports(description, case.dtype)
        if reason:
            raise Unsupported(f"unsupported by this kernel: {reason}")
        return
    for key, value in supports.items():
        have = features(case.res, convention, description).get(key)
        if have is None:
            continue
        if isinstance(value, bool):
            bad = have and not value
        else:
            bad = any(h not in value for h in (have if isinstance(have, tuple) else (have,)))
        if bad:
            raise Unsupported(f"unsupported by this kernel: it declares {key}={_show(value)}; this case has "
                              f"{key}={_show(have)}")


def _show(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(repr(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def features(res, convention: str, description) -> dict:
    """What the declaration keys see of a case: its mode, coordinate modes, nearest rounding, rank, antialias,
    extrapolation (None where a key does not apply)."""
    resized = [a for a in res.normalized().axes if not a.is_identity]
    nearest = res.mode.value == "nearest"
    return {"modes": res.mode.value, "ranks": len(res.axes), "antialias": bool(res.antialias),
            "extrapolation": any(a.extrapolate for a in resized),
            "coordinate_modes": _coordinate_modes(resized, convention, description),
            "nearest_modes": tuple(sorted({a.rounding.value for a in resized})) if nearest and resized else None}


def _coordinate_modes(resized, convention: str, description) -> Optional[tuple]:
    if convention == "onnx" and isinstance(description, dict):
        attrs = description.get("attributes", {})
        default = "asymmetric" if description.get("opset", 11) < 11 else "half_pixel"
        return (attrs.get("coordinate_transformation_mode", default),)
    return tuple(sorted({coordinate_mode(a) for a in resized})) or None


def coordinate_mode(a) -> str:
    """The coordinate mode one resized axis' map is, in ONNX's names ('other' when none)."""
    if a.extrapolate:
        return "tf_crop_and_resize"
    offsets = (float(a.in_offset), float(a.out_offset))
    if a.scale == math.inf:
        return "align_corners" if offsets == (0.0, 0.0) else "other"
    if offsets == (0.5, -0.5):
        return "half_pixel"
    if offsets == (0.0, -0.5):
        return "tf_half_pixel_for_nn"
    if offsets == (0.0, 0.0):
        aligned = a.in_size > 1 and a.out_size > 1 and Fraction(a.scale) == Fraction(a.out_size - 1, a.in_size - 1)
        return "align_corners" if aligned else "asymmetric"
    return "other"


@contextlib.contextmanager
def unsupported_by_raising():
    """A kernel's NotImplementedError (raised, or reported back by a worker process) as Unsupported."""
    try:
        yield
    except NotImplementedError as e:
        detail = f": {e}" if str(e) else ""
        raise Unsupported(f"unsupported by this kernel: it raised NotImplementedError{detail}") from None
    except DescError as e:            # a worker reports the kernel's NotImplementedError by its type's name
        if "NotImplementedError" not in str(e):
            raise
        raise Unsupported(f"unsupported by this kernel: {e}") from None
