"""The conformance suite's randomized adjoint section: the adjoint cases as checks, on the project's paths and
on any other backend, a failure shrunk and written as a description file."""
from __future__ import annotations

import functools
import json

import numpy as np

from .oracles import AdjointCase, adjoint_cases, onednn_cases, torch_cases
from .paths import ADJOINT_TOL, PATHS, error, gradient, judge
from .shrink import description, shrink


# The backend each path is recorded as: the NumPy reference is "numpy" here as everywhere ("numpy-reference" is
# its name as an oracle, never a backend's)
BACKEND_OF = {"static": "ort-cpu-lowered", "dynamic": "ort-cpu-dynamic", "reference": "numpy",
              "native": "onednn-interpolate-bwd"}
DEFAULT_N, DEFAULT_SEED = 12, 0
# Refusals that are the documented behaviour (docs/adjoint.md): a user field and the reason, at lowering time
ACCEPTED_REFUSALS = ("keep_aspect_ratio_policy", ".roi=", "roi=", ".antialias=")


def accepted_refusal(message: str) -> bool:
    """True for a refusal the project documents as the answer (not a defect): an ambiguous
    keep_aspect_ratio_policy without sizes, onnxruntime's channel-dependent antialias crop."""
    return message.startswith("refused") and any(k in message for k in ACCEPTED_REFUSALS)


def adjoint_checks(n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> list:
    """The suite's randomized adjoint section: each case on the static and dynamic lowering and the reference."""
    from ..catalog import Check, Skip
    from onnx_ops.run import onnxruntime
    try:
        onnxruntime()
    except Exception as e:
        def skip(e=e):
            raise Skip(f"onnxruntime (the oracle's forward) is not installed: {e}")
        return [Check("adjoint", "onnx", "ort-cpu-lowered", "f32", skip)]
    checks = []
    onnx, torch, onednn = drawn(n, seed)
    for case in onnx:
        for path in PATHS:
            checks.append(Check(f"adjoint/{case.name}", "onnx", BACKEND_OF[path], case.dtype,
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    for case in torch:                      # torch's own forward transposed, where torch is installed
        for path in ("static", "reference"):
            checks.append(Check(f"adjoint/{case.name}", "torch", BACKEND_OF[path], "f32",
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    for case in onednn:                     # oneDNN's forward transposed, where the library is
        for path in ("native", "reference"):
            checks.append(Check(f"adjoint/{case.name}", "onednn", BACKEND_OF[path], "f32",
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    return checks


def drawn(n: int, seed: int) -> tuple:
    """(ONNX, torch, oneDNN cases) of the section: n ONNX configurations, n / 3 torch calls and n / 6 oneDNN
    problems (at least one of each for n >= 1, none for n = 0), drawn once per (n, seed) for every backend."""
    return _drawn(n, seed)


@functools.lru_cache(maxsize=4)
def _drawn(n: int, seed: int) -> tuple:
    def share(k: int) -> int:
        return min(n, max(1, n // k))
    return (tuple(adjoint_cases(n, seed)), tuple(torch_cases(share(3), seed)),
            tuple(onednn_cases(share(6), seed)))


def may_match(pattern: str, n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> bool:
    """Whether `-k pattern` can select an adjoint check, from the names the drawing can give (no case is drawn):
    `-k` on another case then costs no onnxruntime forward."""
    import fnmatch
    kinds = ("", "torch-", "onednn-")
    names = (f"adjoint/adjoint-{k}s{seed}-{t}" for k in kinds for t in range(1, 20 * n + 21))
    return any(pattern in name or fnmatch.fnmatch(name, pattern) for name in names)


def backend_adjoint_checks(backends, n: int = DEFAULT_N, seed: int = DEFAULT_SEED, semantics=None) -> list:
    """The adjoint cases on other backends (py:MODULE:NAME plug-ins, onnxruntime:PROVIDER ...): the ONNX cases on
    every backend, the torch and oneDNN cases on backends of that convention. Each case is converted into the
    backend's convention and judged against the oracle's J^T dY, as any kernel case is."""
    if not backends:
        return []
    from onnx_ops.run import onnxruntime
    from ..backends import resolve
    from ..cases import backend_checks
    try:
        onnxruntime()
    except Exception:
        return []                       # adjoint_checks already records the skip and its reason
    onnx, torch, onednn = drawn(n, seed)
    offered = {"torch": torch, "onednn": onednn}       # each runtime's own cases, to kernels of its convention
    out = []
    for b in backends:
        backend = resolve(b, semantics) if isinstance(b, str) else b
        cases = [c for c in onnx + offered.get(backend.convention, ()) if c.res is not None]
        out += backend_checks(backend, cases, semantics)
    return out


def _suite_run(case: AdjointCase, path: str):
    from dml_desc.errors import DescError
    from ..catalog import Skip
    try:
        got = gradient(case, path)
    except DescError as e:
        message = f"refused: {e}"
        if accepted_refusal(message):
            raise Skip(f"documented as unsupported (docs/adjoint.md): {message}"[:300]) from None
        raise DescError(e.field, e.value, e.rule + "; " + _shrunk_report(case, path, message)) from None
    return got, case.expected, lambda g, w: _suite_judge(case, path, g)


def _suite_judge(case: AdjointCase, path: str, got):
    err = error(case, got)
    ok = err <= ADJOINT_TOL[case.dtype]
    why = "" if ok else f"error {err:.3g} > {ADJOINT_TOL[case.dtype]} of the gradient's scale vs {case.oracle}; " + \
        _shrunk_report(case, path, "wrong")
    return ok, float(np.max(np.abs(got - case.expected), initial=0)), err, why


def _shrunk_report(case: AdjointCase, path: str, message: str) -> str:
    """Shrink the failure and write it as a description file; the text names the file and holds the JSON."""
    import os
    import tempfile
    kind = message.split(":")[0]
    small = shrink(case, lambda c: (judge(c, path) or "").split(":")[0] == kind)
    folder = os.path.join(tempfile.gettempdir(), "dml-desc-adjoint")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{case.name}-{path}.json")
    with open(target, "w") as f:
        f.write(description(small, path) + "\n")
    return f"shrunk to {target} (dml-desc run / convert --from {case.convention}): {json.dumps(small.description)}"

