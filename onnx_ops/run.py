"""Run a model with onnxruntime, deterministically."""
from __future__ import annotations

import onnxruntime as ort


def available_providers() -> list:
    return ort.get_available_providers()


def session(model, provider: str = "CPUExecutionProvider", threads: int = 0) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    data = model if isinstance(model, (bytes, str)) else model.SerializeToString()
    return ort.InferenceSession(data, opts, providers=[provider])


def run_model(model, feeds: dict, provider: str = "CPUExecutionProvider", threads: int = 0) -> list:
    return session(model, provider, threads).run(None, feeds)
