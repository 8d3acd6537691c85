"""Every convention as a pair of pure converters around the canonical form, registered in one table
(registry.CONVENTIONS; one object per format and operator family, each with `read` and `write`).

`read(fmt, obj)` reads a convention's JSON form -> Reading(canonical, backward, notes, layout);
`write(fmt, source)` writes a Reading or a canonical form -> Writing(obj, notes), or raises ConversionError.
`load` / `dump` / `convert` are the same walks with tuple results: (Resampling, backward) and (object, notes).
ONNX needs `semantics=` (one of onnx.SEMANTICS) on every call that reads or writes it: the library never takes
it from the installed onnxruntime (`onnx.installed_semantics()` does, for the CLI; docs/decisions.md).
"""
from __future__ import annotations

from typing import Any

from ..canonical import Resampling
from ..errors import DescError, parse_json, require
from . import deconv, dml, jax, onednn, onnx, tf, torch  # noqa: F401  (the converter modules, by name)
from .common import check_numbers as check_numbers, check_tolerance as check_tolerance  # (check_tolerance: the CLI's)
from .reading import Reading as Reading, Writing as Writing
from .registry import (CONVENTIONS as CONVENTIONS, FORMATS as FORMATS, convention as convention, family as family,
                       family_of as family_of)


def read(fmt: str, obj: object, **options: Any) -> Reading:
    """Read a description in format `fmt` ('dml', 'onednn', 'onnx', 'torch' or 'tf'; the JSON forms of
    `dml-desc convert --help`), a resize or ConvTransposeBackwardData, -> Reading. `backward` is True for a
    gradient description (DML RESAMPLE_GRAD*, oneDNN InterpolateBackward, ONNX ResizeGrad, a deconv), False for
    a forward one. Options: offset_reading='forward'|'swapped' (dml), semantics=... (onnx: required; the other
    formats ignore it). Bad input raises DescError naming the key."""
    require(fmt in FORMATS, "format", fmt, f"must be one of {list(FORMATS)}")
    check_numbers(obj)
    op = family(fmt, obj)
    return convention(fmt, op).read(obj, **_for(fmt, op, options))


def write(fmt: str, source: Reading | Resampling | deconv.ConvSpec, backward: bool = True, **options: Any) -> Writing:
    """Write `source` (a Reading, or a canonical Resampling) in format `fmt` -> Writing. `backward` picks the
    gradient op (ResizeGrad, InterpolateBackward, RESAMPLE_GRAD) or the forward one (a Reading carries its
    own); torch and tf have only the forward call. Exact or refused: a map the format cannot state raises
    ConversionError naming the field; the notes say when the result equals the source only for these shapes.
    Options: operator, offset_reading (dml), data_format (onednn), opset and semantics (onnx: required, the
    other formats ignore it); tolerance=T (onednn, onnx, torch, tf): accept the closest spelling whose weights
    differ by at most T, with a note giving the bound (the default 0 accepts exact spellings only)."""
    require(fmt in FORMATS, "format", fmt, f"must be one of {list(FORMATS)}")
    canonical: object = source
    if isinstance(source, Reading):
        if source.layout:                 # how the source laid its tensors out (deconv), for the writer to keep
            options["layout"] = source.layout
        canonical, backward = source.canonical, source.backward
    op = family_of(canonical)
    require(op != "resize" or isinstance(canonical, Resampling), "res", type(canonical).__name__,
            "must be a Resampling (conventions.read gives one)")
    tolerance = check_tolerance(options.pop("tolerance", 0.0))
    require(tolerance == 0 or fmt != "dml", "tolerance", tolerance, "applies to onednn, onnx, torch and tf (a DML "
            "operator states the map's parameters directly: it is exact or refused)")
    if tolerance:
        options["tolerance"] = tolerance
    return convention(fmt, op).write(canonical, backward, **_for(fmt, op, options))


def _for(fmt: str, op: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options without `semantics` where it cannot matter (any format but an ONNX resize), so one call
    can pass it whatever the format."""
    return options if (op, fmt) == ("resize", "onnx") else {k: v for k, v in options.items() if k != "semantics"}


def load(fmt: str, obj: object, **options: Any) -> tuple[Resampling, bool]:
    """`read` of a resize description, as (Resampling, backward)."""
    require(fmt in FORMATS, "format", fmt, f"must be one of {list(FORMATS)}")
    check_numbers(obj)
    reading = convention(fmt).read(obj, **_for(fmt, "resize", options))
    assert isinstance(reading.canonical, Resampling)       # what every resize convention reads
    return reading.canonical, reading.backward


def dump(fmt: str, res: Resampling, backward: bool = True, **options: Any
         ) -> tuple[dict[str, object], tuple[str, ...]]:
    """`write` of a Resampling, as (JSON object, notes)."""
    require(isinstance(res, Resampling), "res", type(res).__name__, "must be a Resampling (conventions.load gives one)")
    written = write(fmt, res, backward, **options)
    return written.obj, written.notes


def convert(src: str, dst: str, obj: object, semantics: str | None = None, **options: Any
            ) -> tuple[dict[str, object], tuple[str, ...]]:
    """read(src, obj) then write(dst, ...) in the same direction -> (JSON object, every note). `semantics`
    (required where an ONNX resize is read or written) applies to both sides; the options go to `write`."""
    reading = read(src, obj, semantics=semantics)
    written = write(dst, reading, semantics=semantics, **options)
    return written.obj, tuple(reading.notes) + tuple(written.notes)


MAX_JSON_BYTES = 4 * 2 ** 20     # a description is a few kB; a oneDNN graph of many ops well under this


def read_json(path: str) -> object:
    """A JSON file (or "-" for stdin), read strictly: UTF-8, no duplicate keys, bounded nesting, and at most
    MAX_JSON_BYTES (an endless stdin is refused, not read until memory runs out). A file must be a regular one
    (files.read_regular: /dev/zero or a FIFO is refused without blocking; a pipe goes to stdin)."""
    from ..files import read_bounded, read_regular
    read = read_bounded if path == "-" else read_regular
    data = read(path, MAX_JSON_BYTES, "JSON description")
    return parse_json(data, f"FILE {path}")       # strict: UTF-8, no duplicate keys, bounded nesting


def guess_format(obj: object) -> str | None:
    """The format a JSON object looks like, from its keys ('dml', 'onednn', 'onnx', 'jax', 'tf', 'torch'), or None."""
    if not isinstance(obj, dict):
        return None
    for fmt, keys in (("dml", ("Operator",)), ("onednn", ("graph", "kind")), ("onnx", ("op_type", "weights_shape")),
                      ("jax", ("shape_in",)), ("tf", ("method", "kernel_type")), ("torch", ("mode",))):
        if any(k in obj for k in keys):
            return fmt
    return None


def load_description(fmt: str, obj: object, semantics: str | None = None, **options: Any
                     ) -> tuple[Resampling, bool]:
    """The commands' reader: conventions.load, with a hint naming the right --from when the file looks like
    another format. ONNX is read under `semantics`, or (None: no --semantics) the installed onnxruntime's
    (onnx.resolve_semantics, the CLI's documented default)."""
    if fmt == "onnx":
        options["semantics"] = onnx.resolve_semantics(semantics)
    try:
        return load(fmt, obj, **options)
    except DescError as e:
        raise _with_format_hint(e, fmt, obj) from None


def _with_format_hint(e: DescError, fmt: str, obj: object) -> DescError:
    guess = guess_format(obj)
    if guess is None or guess == fmt:
        return e
    return type(e)(e.field, e.value, f"{e.rule}. The file looks like {guess} JSON: try --from {guess}")


def read_description(path: str, fmt: str | None = None) -> tuple[str, object]:
    """(format, JSON object) of a description file; the format is guessed from the keys unless given."""
    obj = read_json(path)
    found = fmt or guess_format(obj)
    if found is None:
        raise DescError("FILE", path, "is no known format (no Operator, graph, op_type, shape_in, method, "
                        "kernel_type or mode key); pass --from dml|onednn|onnx|torch|tf|jax")
    return found, obj
