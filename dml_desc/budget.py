"""The size budget every loader, converter, builder and lowering checks before it allocates.

Two limits, both settable (a process-wide setting, or the environment at import time):

- elements: the most elements one tensor may have (default 2**40, DML_DESC_MAX_ELEMENTS);
- axis: the most entries of one per-axis table that is materialised (coordinates and taps of a
  resized axis, cost O(size) time and memory; default 2**22, DML_DESC_MAX_AXIS). This keeps e.g.
  TF bicubic `size: [10**8, 4]` from costing 30 s and 8 GB just to load.

From the axis limit follows the bound on one table a lowered model builds per axis at run time (the dynamic
path's probes, taps and band weights): max_table() = axis * TABLE_WIDTH entries (2^28, 1 GiB of float32, by
default). `check_table` refuses, before anything is built, a lowering whose estimated table is larger
(docs/limits.md).
"""
from __future__ import annotations

import math
import os
from typing import TypeGuard

from .errors import DescError

DEFAULT_ELEMENTS = 2 ** 40
DEFAULT_AXIS = 2 ** 22
TABLE_WIDTH = 64      # entries per axis element one run-time per-axis table may hold (max_table)


def _from_env(name: str, default: int) -> int:
    """A limit from the environment: decimal digits only (no 1e3, no sign), at least 1; a DescError otherwise,
    raised where the limit is first used (inside the CLI's error boundary), never at import."""
    text = os.environ.get(name, "")
    if not text:
        return default
    if not (text.isascii() and text.strip().isdigit() and int(text) >= 1):
        raise DescError(name, text, "must be a positive integer (decimal digits, e.g. 4194304)")
    return int(text)


_ENV = {"elements": ("DML_DESC_MAX_ELEMENTS", DEFAULT_ELEMENTS), "axis": ("DML_DESC_MAX_AXIS", DEFAULT_AXIS)}
_limits: dict[str, int] = {}


def _limit(name: str) -> int:
    if name not in _limits:
        _limits[name] = _from_env(*_ENV[name])
    return _limits[name]


def max_elements() -> int:
    """The largest tensor (in elements) a description may have; DML_DESC_MAX_ELEMENTS overrides it."""
    return _limit("elements")


def max_axis() -> int:
    """The largest size of one resized axis; DML_DESC_MAX_AXIS overrides it."""
    return _limit("axis")


def max_table() -> int:
    """The most entries one per-axis table built at run time may hold: max_axis() * TABLE_WIDTH."""
    return max_axis() * TABLE_WIDTH


def set_limits(elements: int | None = None, axis: int | None = None) -> dict[str, int | None]:
    """Change the limits (None keeps one); returns the previous ones, e.g. to restore them."""
    previous: dict[str, int | None] = {}
    for name in _ENV:
        try:
            previous[name] = _limit(name)
        except DescError:        # a bad environment value: nothing to restore
            previous[name] = None
    for name, value in (("elements", elements), ("axis", axis)):
        if value is None:
            continue
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise DescError(name, value, "must be a positive integer")
        _limits[name] = value
    return previous


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def check_shape(shape: object, field: str) -> None:
    """A tensor shape whose element count fits the budget (non-integer entries are left to the caller)."""
    entries = shape if isinstance(shape, (list, tuple)) else ()
    dims = [d for d in entries if _is_int(d)]
    if any(d <= 0 for d in dims):
        return
    count = math.prod(dims)
    if count > max_elements():
        raise DescError(field, list(entries), f"has {_count(count)} elements, more than the size budget of "
                        f"{_count(max_elements())} (dml_desc.budget.set_limits or DML_DESC_MAX_ELEMENTS)")


def check_axis(size: object, field: str) -> None:
    """One resized axis whose per-axis tables (coordinates, taps) fit the budget."""
    if _is_int(size) and size > max_axis():
        raise DescError(field, size, f"is more than the per-axis budget of {_count(max_axis())} entries for "
                        "a resized axis (dml_desc.budget.set_limits or DML_DESC_MAX_AXIS)")


def check_table(entries: int, field: str, value: object, what: str) -> None:
    """A per-axis table of `entries` entries (`what` it is, for the message) that a lowered model would build at
    run time: refused past max_table(), naming the user's field and value."""
    if entries > max_table():
        raise DescError(field, value, f"{what} would hold about {_count(entries)} entries, more than the budget of "
                        f"{_count(max_table())} for one axis (DML_DESC_MAX_AXIS x {TABLE_WIDTH}; docs/limits.md)")


def _count(n: int) -> str:
    if n >= 2 ** 20 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n) if n < 10 ** 15 else f"about 2^{n.bit_length() - 1}"
