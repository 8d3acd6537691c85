"""Peak extra memory of an onnxruntime session's first run, measured in a fresh child process (the benchmark's
`mem` column): the rise of the peak resident set (VmHWM, reset before the run) over the resident set before it."""
from __future__ import annotations

import multiprocessing
import os

from onnx_ops.run import session


def _memory_child(model_bytes, feeds, threads, queue):
    sess = session(model_bytes, threads=threads)
    status = "/proc/self/status"

    def kib(key):
        with open(status) as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key))
    with open("/proc/self/clear_refs", "w") as f:     # reset VmHWM to the current resident set
        f.write("5")
    before = kib("VmRSS:")
    sess.run(None, feeds)
    queue.put((kib("VmHWM:") - before) * 1024)


def peak_extra_memory(model, feeds, threads) -> float:
    """Bytes: peak resident set during the first run minus the resident set before it (fresh child)."""
    if not os.path.exists("/proc/self/clear_refs"):
        return float("nan")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=_memory_child, args=(model.SerializeToString(), feeds, threads, queue))
    p.start()
    try:
        return float(queue.get(timeout=300))
    except Exception:
        return float("nan")
    finally:
        p.join()
