"""The project's exception types. Every message names the field, the value and the rule."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NoReturn, cast

if TYPE_CHECKING:
    import re


_UNPRINTABLE: re.Pattern[str] | None = None


def printable(text: str) -> str:
    """`text` safe for a terminal: control characters (C0 but newline and tab, DEL, C1), bidi and other format
    controls (U+202E, U+2066 ...), and line / paragraph separators written as \\xNN / \\uNNNN escapes. Every
    string the project prints passes through here (dml_desc.boundary)."""
    global _UNPRINTABLE
    if _UNPRINTABLE is None:
        import re
        _UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f"
                                  "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
                                  "\U000e0001-\U000e007f\ud800-\udfff]")
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class DescError(ValueError):
    """An invalid descriptor, attribute set or model."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        field = printable(field) if isinstance(field, str) else _short(field)
        field = field if len(field) <= 120 else field[:117] + "..."        # a user's 1 MB key, cut
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"{field}={_short(value)}: {rule}")


class ConversionError(DescError):
    """A conversion that cannot be exact."""


def _short(value: object) -> str:
    """repr(value) cut to 120 characters; never raises (huge ints, deep nesting, odd objects)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= 120 else text[:117] + "..."


def short_key(key: object) -> str:
    """A user's key as it appears in a field name (a 1 MB key is cut like a value)."""
    text = key if isinstance(key, str) else _short(key)
    return text if len(text) <= 60 else text[:57] + "..."


def require(ok: bool, field: str, value: object, rule: str, kind: type[DescError] = DescError) -> None:
    """Raise `kind(field, value, rule)` (a DescError by default) unless `ok`."""
    if not ok:
        raise kind(field, value, rule)


def one_of(value: object, options: Iterable[str], field: str) -> str:
    """A string that must be one of `options` (never hashed before its type is checked)."""
    require(isinstance(value, str) and value in options, field, value, f"must be one of {list(options)}")
    return cast(str, value)


def int_list(value: object, field: str, minimum: int = 1, length: int | None = None) -> list[int]:
    """A list of integers >= minimum (optionally of a given length)."""
    require(isinstance(value, (list, tuple)), field, value, "must be a list of integers")
    items = cast("list[object] | tuple[object, ...]", value)
    if length is not None:
        require(len(items) == length, field, value, f"must be a list of {length} integers")
    require(all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in items), field, value,
            f"every entry must be an integer >= {minimum}")
    return cast("list[int]", list(items))


def flag(value: object, field: str) -> bool:
    """A JSON boolean (true/false, never 0/1); a DescError naming `field` otherwise."""
    require(isinstance(value, bool), field, value, "must be true or false")
    return cast(bool, value)


def did_you_mean(name: object, known: Iterable[object]) -> str:
    """' (did you mean 'X'?)' for the known name closest to a user's misspelt `name`, else ''."""
    import difflib
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def integer(value: object, field: str, minimum: int | None = None) -> int:
    """An integer (never a bool, never a float like 2.0), optionally >= minimum."""
    require(isinstance(value, int) and not isinstance(value, bool), field, value, "must be an integer")
    number = cast(int, value)
    if minimum is not None:
        require(number >= minimum, field, value, f"must be >= {minimum}")
    return number


def parse_json(text: str | bytes, where: str = "json") -> object:
    """Strict JSON: duplicate keys, NaN/Infinity literals, non-UTF-8 bytes and deep nesting are DescErrors."""
    import json
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DescError(where, raw[max(e.start - 10, 0):e.start + 10],
                            f"is not UTF-8 (byte {e.start}): JSON must be UTF-8") from None
    require(isinstance(text, str), where, type(text).__name__, "must be JSON text")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_int_literal)
    except _LongInteger as e:
        pos, digits = text.find(e.literal), len(e.literal) - e.literal.startswith("-")
        line, column = text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
        raise DescError(where, f"<an integer of {digits} digits at line {line} column {column}>", "is longer "
                        f"than any number a description holds ({MAX_INT_DIGITS} digits at most)") from None
    except json.JSONDecodeError as e:
        raise DescError(where, text[max(e.pos - 20, 0):e.pos + 20], f"is not valid JSON ({e.msg} at line "
                        f"{e.lineno} column {e.colno})") from None
    except RecursionError:
        raise DescError(where, text[:40], "is nested too deeply") from None
    except ValueError as e:        # an integer literal of more than 4300 digits
        if isinstance(e, DescError):
            raise
        raise DescError(where, text[:40], f"holds a number Python will not read ({e})") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        require(key not in obj, short_key(key), value, "is given twice in one JSON object (duplicate key)")
        obj[key] = value
    return obj


MAX_INT_DIGITS = 4300     # Python's default int <-> text limit, here on every Python version and setting


class _LongInteger(Exception):
    def __init__(self, literal: str):
        self.literal = literal


def _int_literal(literal: str) -> int:
    """A JSON integer literal; one of more than MAX_INT_DIGITS digits is refused before int() reads it."""
    if len(literal) - literal.startswith("-") > MAX_INT_DIGITS:
        raise _LongInteger(literal)
    return int(literal)


def _no_constant(name: str) -> NoReturn:
    raise DescError("json", name, "is not JSON (NaN and Infinity are not numbers in JSON)")


def is_number(v: object) -> bool:
    """A finite int or float (never a bool; an int too large for a double is not finite)."""
    import math
    import numbers
    if isinstance(v, bool) or not isinstance(v, numbers.Real):      # numpy scalars are Real; numpy bools are not
        return False
    return (bool(abs(v) < 2 ** 1023)  # type: ignore[operator]  # typeshed's Integral protocol lacks __lt__
            if isinstance(v, numbers.Integral) else math.isfinite(v))


def float32_number(v: object, field: str, positive: bool = False) -> float:
    """A number that float32 represents without overflow (and without underflow to 0 when positive)."""
    import numpy as np
    require(is_number(v), field, v, "must be a finite number")
    f = float(cast(float, v))
    require(abs(f) <= float(np.finfo(np.float32).max), field, v,
            "overflows float32 (|value| must be at most 3.4028235e38)")
    if positive:
        require(f > 0, field, v, "must be > 0")
        require(float(np.float32(f)) > 0, field, v, "rounds to 0 in float32")
    return f


# How to install torch, said the same way by every message and the README: the CPU wheel from PyTorch's index (a
# plain `pip install torch` on Linux x86-64 fetches the CUDA build). The `torch` extra names the same wheel.
TORCH_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
