"""The child process's side: open the library, run each job of a pickled batch, pickle one result per job.

A result is the runner's dict plus the version, the max ISA and the kernel (from the primitive descriptor or
ONEDNN_VERBOSE's exec line), or {"error": ...} with oneDNN's status and the field at fault."""
from __future__ import annotations

import ctypes as C
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from .bindings import Context, Failed, H
from .graph import Refused, attribute_at_fault, run_graph
from .library import open_library, version_of
from .primitives import deconv_bwd_d, resampling_bwd, resampling_fwd

Runner = Callable[[Context, dict[str, Any]], dict[str, Any]]      # (context, job) -> the job's result
RUNNERS: dict[str, Runner] = {"resampling_bwd": resampling_bwd, "resampling_fwd": resampling_fwd,
                              "deconv_bwd_d": deconv_bwd_d, "graph": run_graph}


def blame(job: dict[str, Any]) -> tuple[str, Any]:
    """(field, value) an error of this job is reported against, when no attribute is singled out."""
    given: tuple[str, Any] | None = job.get("blame")
    return given or (("kind", job["op"]["kind"]) if "op" in job else ("op", job["kind"]))


def main() -> None:
    """The child's entry point: argv = library path, jobs pickle, results file."""
    lib_path, src, dst = sys.argv[1:4]
    libc = C.CDLL(None)
    libc.fflush.argtypes, libc.fflush.restype = [H], C.c_int
    ctx = Context(open_library(lib_path))
    jobs = pickle.loads(Path(src).read_bytes())
    with open(dst, "wb") as out:
        for job in jobs:
            pickle.dump(_run_in_child(ctx, libc, job), out)
            out.flush()


def _run_in_child(ctx: Context, libc: C.CDLL, job: dict[str, Any]) -> dict[str, Any]:
    """One job's result, or {"error": ...} with oneDNN's status (or the reason it was not run)."""
    log = _VerboseCapture(libc)
    try:
        result = RUNNERS[job["kind"]](ctx, job)
    except Failed as e:
        field, value = blame(job)
        if e.call == "dnnl_graph_add_op":
            field, value = attribute_at_fault(ctx, job) or (field, value)
        return {"error": {"field": field, "value": value, "status": e.status,
                          "rule": f"oneDNN {e.call} returned {e.status}"}}
    except Refused as e:
        return {"error": {"field": e.field, "value": e.value, "status": "not run", "rule": e.rule}}
    except (KeyError, TypeError, ValueError) as e:      # a malformed job: reported, never a dead child
        field, value = blame(job)
        return {"error": {"field": field, "value": value, "status": "not run",
                          "rule": f"cannot be handed to oneDNN ({type(e).__name__}: {e})"}}
    finally:
        kernel = log.kernel(job.get("primitive", ()))
    result.update(version=version_of(ctx.lib), isa=ctx.isa)
    if result.get("kernel") is None:
        result["kernel"] = kernel
    return result


class _VerboseCapture:
    """The kernel name from ONEDNN_VERBOSE's exec lines, read back from this process's stdout (a temp file)."""

    def __init__(self, libc: C.CDLL) -> None:
        self.libc = libc
        self.file = tempfile.TemporaryFile()
        libc.fflush(None)
        self.saved = os.dup(1)
        os.dup2(self.file.fileno(), 1)

    def kernel(self, primitive: tuple[str, ...]) -> str | None:
        """Restore stdout; the kernel of the first exec line of `primitive` (None when there is none)."""
        self.libc.fflush(None)
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.file.seek(0)
        text = self.file.read().decode(errors="replace")
        self.file.close()
        for line in text.splitlines():
            parts = line.split(",")
            if len(parts) > 5 and parts[0] == "onednn_verbose" and parts[1] == "exec" and parts[3] in primitive:
                return parts[4]
        return None
