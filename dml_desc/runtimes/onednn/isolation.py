"""The parent's side: a batch of jobs runs in one child Python process (dml_desc.runtimes.onednn.child).

oneDNN can abort the process (an uncaught dnnl::error), so the parent never opens the library (in_process,
for benchmarks, is the one exception): an abort or a oneDNN error status becomes an OnednnError for that
job, with oneDNN's status name and the field at fault, and the jobs after it run in a fresh child."""
from __future__ import annotations

import ctypes as C
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from ...errors import DescError
from .bindings import Context
from .child import blame
from .library import open_library, require_library
from .primitives import resampling_prepare


class OnednnError(DescError):
    """oneDNN returned an error status or aborted; `status` is oneDNN's status name (or the signal)."""

    def __init__(self, field: str, value: object, rule: str, status: str) -> None:
        self.status = status
        super().__init__(field, value, rule)


JobResult = dict[str, Any] | OnednnError       # a job's result dict, or the error of that job


def run_jobs(jobs: list[dict[str, Any]], max_isa: str | None = None, timeout: float = 300) -> list[JobResult]:
    """Run the jobs in one child process. Each result is a dict, or the OnednnError of that job.

    A job is {"kind": "resampling_bwd" | "resampling_fwd" | "deconv_bwd_d" | "graph", ...} (built in
    jobs.py). A child that dies (abort, signal) yields an OnednnError for the job it was running and reruns the
    jobs after it."""
    lib = require_library()
    results: list[JobResult] = []
    while len(results) < len(jobs):
        done = _run_child(jobs[len(results):], lib, max_isa, timeout)
        results += done
    return results


def _run_child(jobs: list[dict[str, Any]], lib: Path, max_isa: str | None, timeout: float) -> list[JobResult]:
    env = dict(os.environ, ONEDNN_VERBOSE="1", **({"ONEDNN_MAX_CPU_ISA": max_isa} if max_isa else {}))
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    with tempfile.TemporaryDirectory(prefix="dml-desc-onednn-") as tmp:
        src, dst = Path(tmp) / "jobs.pkl", Path(tmp) / "results.pkl"
        src.write_bytes(pickle.dumps(jobs))
        code = "from dml_desc.runtimes.onednn.child import main; main()"
        try:
            proc = subprocess.run([sys.executable, "-c", code, str(lib), str(src), str(dst)], env=env,
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DescError("backend", "onednn", f"the oneDNN child process ran past {timeout:.0f} s") from None
        results = _read_results(dst)
    if not results and proc.returncode > 0:        # the child did not start (not an abort inside oneDNN)
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise DescError("backend", "onednn", f"the oneDNN child process failed to start: {' | '.join(tail)}")
    if len(results) < len(jobs):
        job = jobs[len(results)]
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        sig = -proc.returncode if proc.returncode < 0 else None
        status = f"{_signal_name(sig)} (signal {sig})" if sig else f"exit status {proc.returncode}"
        field, value = blame(job)
        results.append(OnednnError(field, value, f"oneDNN aborted the process ({status}) while running this op"
                                   + (f": {' | '.join(tail)}" if tail else ""), status))
    return results


def _signal_name(sig: int) -> str:
    import signal
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal"


def _read_results(path: Path) -> list[JobResult]:
    out: list[JobResult] = []
    if not path.exists():
        return out
    with open(path, "rb") as f:
        while True:
            try:
                item = pickle.load(f)
            except EOFError:
                break
            except pickle.UnpicklingError:
                break
            out.append(OnednnError(**item["error"]) if "error" in item else item)
    return out


def run_one(job: dict[str, Any], max_isa: str | None = None) -> dict[str, Any]:
    """One job; its OnednnError is raised."""
    result = run_jobs([job], max_isa)[0]
    if isinstance(result, Exception):
        raise result
    return result


_LOCAL: list[Context] = []


def in_process(job: dict[str, Any], threads: int | None = None) -> tuple[Callable[[], None], dict[str, Any]]:
    """(run, result) for timing a resampling job: first a contained run in a child (oneDNN's errors and aborts
    stay there), then the same primitive built in this process; run() executes it. For benchmarks only."""
    result = run_one(job)
    if not _LOCAL:
        _LOCAL.append(Context(open_library(require_library())))
    if threads:
        gomp = C.CDLL("libgomp.so.1")
        gomp.omp_set_num_threads.argtypes, gomp.omp_set_num_threads.restype = [C.c_int], None
        gomp.omp_set_num_threads(threads)
    execute, _, _ = resampling_prepare(_LOCAL[0], job)
    return execute, result
