"""The three named ONNX Resize semantics, and the one place that reads the installed onnxruntime.

How a nearest coordinate becomes an index differs between runtimes (docs/decisions.md):
- "ort-1.19": onnxruntime 1.19 to 1.26. x in float32; only an exact float32 k + 0.5 is a tie.
- "ort-1.27": onnxruntime 1.27 and later (microsoft/onnxruntime#28291): the same float32 x, but
  |x - floor(x) - 0.5| <= 1e-6 is a tie, for round_prefer_floor / round_prefer_ceil.
- "onnx-spec": the formulas as onnx's reference evaluator computes them, in exact rational arithmetic
  (the unrounded output length scale * in where it reads it; no onnxruntime copy rules), and its output
  lengths: floor(scale * in) of the float32 scale in float64 (X [5], scales [2.6]: 12, where onnxruntime's
  float32 product gives 13), int(r * in + 0.5) in float64 with keep_aspect_ratio_policy.

The library's ONNX functions take the semantics as an argument (`check_semantics`): their results do not depend
on what is installed. `installed_semantics()` / `resolve_semantics(None)` are the documented default the CLI and
the conformance suite use when `--semantics` is not given; nothing else in the library calls them.
"""
from __future__ import annotations

import functools
import re
from typing import Optional

from ..errors import one_of, require

SEMANTICS = ("ort-1.19", "ort-1.27", "onnx-spec")
ORT_TIE_TOLERANCE = {"ort-1.19": 0.0, "ort-1.27": 1e-6}     # onnxruntime >= 1.27: |x - k - 0.5| <= 1e-6 is a tie
NO_RUNTIME_SEMANTICS = "ort-1.27"     # what `pip install 'dml-desc[ort]'` installs today
# For reads that use only a node's validation and shapes (the same under every semantics), or whose result the
# caller proves under every semantics (onnx_ops' stand-in maps): never for weights a caller keeps.
STAND_IN_SEMANTICS = "ort-1.27"


def check_semantics(semantics: Optional[str]) -> str:
    """`semantics`, one of SEMANTICS; omitting it (None) is refused by name: the library never guesses it from
    the installed onnxruntime (pass `installed_semantics()` to follow that one)."""
    require(semantics is not None, "semantics", semantics, f"is required: one of {list(SEMANTICS)} "
            "(installed_semantics() gives the installed onnxruntime's, the CLI's default)")
    return one_of(semantics, list(SEMANTICS), "semantics")


@functools.lru_cache(maxsize=1)
def installed_runtime() -> Optional[str]:
    """The version of the onnxruntime package that `import onnxruntime` would load, read from its files without
    importing it (the training builds install the same package); None when there is none."""
    import importlib.util
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.origin:
        return None
    try:
        text = open(spec.origin, encoding="utf-8").read()
    except OSError:
        return None
    found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
    return found.group(1) if found else None


def semantics_of(version: Optional[str]) -> str:
    """The semantics of an onnxruntime version ("1.19.2" -> "ort-1.19"); NO_RUNTIME_SEMANTICS for None."""
    if version is None:
        return NO_RUNTIME_SEMANTICS
    parts = re.findall(r"\d+", version)[:2]
    return "ort-1.27" if tuple(int(p) for p in parts) >= (1, 27) else "ort-1.19"


def installed_semantics() -> str:
    """The semantics of the installed onnxruntime, or NO_RUNTIME_SEMANTICS when none is installed."""
    return semantics_of(installed_runtime())


def resolve_semantics(semantics: Optional[str] = None) -> str:
    """The CLI's and conformance's default: an explicit choice (checked), else the installed onnxruntime's."""
    if semantics is None:
        return installed_semantics()
    return check_semantics(semantics)


def describe_semantics(semantics: Optional[str] = None) -> str:
    """One line for reports: which semantics, and why ("ort-1.27 (installed onnxruntime 1.32.0)")."""
    chosen = resolve_semantics(semantics)
    if semantics is not None:
        return f"{chosen} (chosen)"
    version = installed_runtime()
    return f"{chosen} (installed onnxruntime {version})" if version else f"{chosen} (no onnxruntime installed)"
