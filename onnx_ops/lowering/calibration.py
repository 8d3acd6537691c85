"""The calibration cache (`dml-desc calibrate` writes it, `lower(calibration=...)` reads it): its format and
checks, the machine key, the node signature a choice is keyed by, and `choices`, the {signature: form} a lowering
takes. Below the lowering (onnx_ops.lower reads it); the measuring that fills it is onnx_ops.calibrate, above.
"""
from __future__ import annotations

import json
import os
import platform

from dml_desc.errors import did_you_mean, is_number, require, short_key

from ..forms import FORMS, RENAMED
from ..forms.registry import RUN_TIME_WALK, names
from .generic_forms import IGNORED

CACHE_VERSION = 1
KINDS = names(RUN_TIME_WALK)           # the spellings of nodes with run-time lengths: shape-generic, "general"
FORM_NAMES = KINDS + tuple(FORMS)      # the names a cache entry may hold: those, and the static forms


def default_cache() -> str:
    """$DML_DESC_CALIBRATION, else ~/.cache/dml-desc/calibration.json."""
    return os.environ.get("DML_DESC_CALIBRATION") or os.path.join(os.path.expanduser("~"), ".cache", "dml-desc",
                                                                   "calibration.json")


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (platform.processor() where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            found = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        found = ""
    return found or platform.processor() or platform.machine() or "unknown CPU"


def machine_key() -> str:
    """The cache key of this machine: CPU model and onnxruntime version, e.g. 'AMD EPYC | onnxruntime 1.19.2'."""
    from dml_desc.conventions.onnx import installed_runtime
    return f"{cpu_model()} | onnxruntime {installed_runtime()}"


MAX_CACHE_BYTES = 2 ** 26        # 64 MiB: an entry is under 1 kB; a cache past this is no cache dml-desc wrote
CACHE_KEYS, ENTRY_KEYS = {"version", "entries"}, {"form", "ms"}


def read_cache(path: str) -> dict:
    """The cache file's entries ({machine key: {signature: {"form": kind, "ms": {kind: ms}}}}); {} when absent.
    Only a regular file of at most MAX_CACHE_BYTES is read (a FIFO or /dev/zero is refused without blocking),
    as strict JSON, and every entry is checked (check_cache): a one-line DescError names the file and entry."""
    from dml_desc.errors import parse_json
    from dml_desc.files import read_regular
    if not os.path.exists(path):
        return {}
    data = read_regular(path, MAX_CACHE_BYTES, "calibration cache", field="calibration")
    return check_cache(parse_json(data, f"calibration {path}"), path)


def check_cache(doc, path: str) -> dict:
    """The entries of a cache document, each checked: {"version": CACHE_VERSION, "entries": {machine key (text):
    {signature (JSON object text): {"form": a form name, "ms": {form name: a finite time >= 0}}}}}, no other
    keys. A DescError naming `path` and the entry otherwise."""
    def check(ok: bool, where: str, value, rule: str) -> None:
        require(ok, "calibration", path, f"{where} = {_shown(value)}: {rule}")
    check(isinstance(doc, dict) and set(doc) == CACHE_KEYS, "the document", doc, "is not a dml-desc calibration "
          f"cache (an object of {sorted(CACHE_KEYS)})")
    check(type(doc["version"]) is int and doc["version"] == CACHE_VERSION, "version", doc["version"],
          f"this dml-desc reads version {CACHE_VERSION}; run dml-desc calibrate again")
    check(isinstance(doc["entries"], dict), "entries", doc["entries"], "must be an object of machine keys")
    for machine, entry in doc["entries"].items():
        where = f"entries[{_shown(machine)}]"
        check(isinstance(machine, str) and bool(machine), where, machine, "a machine key must be non-empty text")
        check(isinstance(entry, dict), where, entry, "must be an object of node signatures")
        for sig, record in entry.items():
            at = f"{where}[{_shown(sig)}]"
            check(_is_signature(sig), at, sig, "a signature must be the text of a JSON object")
            check(isinstance(record, dict) and "form" in record and set(record) <= ENTRY_KEYS, at, record,
                  f'must be an object {{"form": ..., "ms": ...}} (keys {sorted(ENTRY_KEYS)})')
            _check_form(record["form"], lambda ok, v, rule, at=at: check(ok, f"{at}.form", v, rule))
            times = record.get("ms", {})
            check(isinstance(times, dict), f"{at}.ms", times, "must be an object {form: milliseconds}")
            for kind, ms in times.items():
                _check_form(kind, lambda ok, v, rule, at=at: check(ok, f"{at}.ms", v, rule))
                check(is_number(ms) and ms >= 0, f"{at}.ms[{_shown(kind)}]", ms, "a time must be a finite "
                      "number >= 0")
    return doc["entries"]


def _check_form(name, check) -> None:
    check(isinstance(name, str) and (name in FORM_NAMES or name in RENAMED), name,
          f"is no form dml-desc knows{did_you_mean(name, FORM_NAMES)} (one of {', '.join(FORM_NAMES)})")


def _is_signature(sig) -> bool:
    try:
        return isinstance(json.loads(sig), dict)
    except (TypeError, ValueError, RecursionError):
        return False


def _shown(value) -> str:
    """A user's value in a message, cut to 60 characters: a text's repr, an object's keys, a list's length."""
    if isinstance(value, dict):
        return short_key(f"an object with keys {sorted(map(str, value))}")
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    text = repr(value) if isinstance(value, str) else short_key(value)
    return text if len(text) <= 60 else text[:57] + "..."


def choices(calibration, machine: str | None = None) -> dict:
    """{signature: kind} for `machine` (default: this one) from a cache path, or from a {signature: kind} dict
    (checked: text keys, known form names); a form's former name (forms.RENAMED) is read as its current one."""
    if calibration is None:
        return {}
    if isinstance(calibration, dict):
        for sig, kind in calibration.items():
            require(isinstance(sig, str), "calibration", sig, "keys must be node signatures (text)")
            _check_form(kind, lambda ok, v, rule, sig=sig: require(ok, f"calibration[{_shown(sig)}]", v, rule))
        return {sig: RENAMED.get(kind, kind) for sig, kind in calibration.items()}
    require(isinstance(calibration, (str, os.PathLike)), "calibration", type(calibration).__name__,
            "must be a cache file path or a {signature: form} dict")
    entry = read_cache(os.fspath(calibration)).get(machine or machine_key(), {})
    return {sig: RENAMED.get(v["form"], v["form"]) for sig, v in entry.items()}


def signature(attrs: dict, factors: dict, rank: int, channels, opset: int, elem: int) -> str:
    """The key of one calibrated choice: the attributes that shape the gradient, the factors, rank, opset, C."""
    kept = {k: v for k, v in sorted(attrs.items()) if k not in IGNORED}
    return json.dumps({"attrs": kept, "factors": {str(a): f for a, f in sorted(factors.items())}, "rank": rank,
                       "channels": channels, "opset": opset, "elem": elem}, sort_keys=True)
