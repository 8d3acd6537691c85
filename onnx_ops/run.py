"""Run a model with onnxruntime, deterministically. onnxruntime is optional: it is imported on first use."""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from dml_desc.errors import TORCH_INSTALL, DescError, did_you_mean, require

if TYPE_CHECKING:
    import numpy as np
    import onnx

EXTRA_HINT = ("running a model needs onnxruntime: pip install 'dml-desc[ort]' (any onnxruntime >= 1.19.2), or "
              "'dml-desc[training]' for the CPU training build; never both, they install the same package")


def onnxruntime():
    """The onnxruntime module, or a DescError that names the extra to install."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise DescError("onnxruntime", None, f"is not installed; {EXTRA_HINT}") from None
    if not hasattr(ort, "InferenceSession"):      # the shell one onnxruntime wheel leaves when another is removed
        raise DescError("onnxruntime", getattr(ort, "__file__", None),
                        "is a broken install (no InferenceSession: two onnxruntime distributions were installed "
                        "and one was removed); reinstall exactly one of them")
    return ort


# float32 exactly: onnxruntime's CUDA provider rounds MatMul and Conv inputs to TF32 by default (Ampere and newer),
# which put the lowered MatMul forms 1e-4 to 8e-4 of dY's scale off the reference on an H100 (docs/cuda.md)
PROVIDER_OPTIONS = {"CUDAExecutionProvider": {"use_tf32": "0"}}


def available_providers() -> list:
    """The execution providers of the installed onnxruntime build (e.g. ['CPUExecutionProvider'])."""
    return onnxruntime().get_available_providers()


def session(model: onnx.ModelProto | bytes | str, provider: str = "CPUExecutionProvider", threads: int = 0):
    """An onnxruntime InferenceSession for `model` (a ModelProto, its bytes or a path) on one provider,
    sequential and deterministic; threads=0 lets onnxruntime choose the intra-op thread count.
    """
    ort = onnxruntime()
    known = ort.get_all_providers()
    require(isinstance(provider, str) and provider in known, "provider", provider,
            f"must be one onnxruntime execution provider name{did_you_mean(str(provider), known)}")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    data = model if isinstance(model, (bytes, str)) else model.SerializeToString()
    sess = ort.InferenceSession(data, opts, providers=[(provider, PROVIDER_OPTIONS.get(provider, {}))])
    started = sess.get_providers()
    require(started[:1] == [provider], "provider", provider,
            f"did not start in this onnxruntime {ort.__version__} (it has {', '.join(ort.get_available_providers())}"
            f"; the session fell back to {', '.join(started)}): a run here would not test {provider}")
    return sess


@lru_cache(maxsize=None)
def native_kernel_missing(provider: str) -> str | None:
    """None where this onnxruntime starts a com.microsoft ResizeGrad session on `provider`, else why not: onnxruntime
    registers the kernel only in its training builds, on CUDA (onnxruntime-gpu has the CUDA provider without it).
    Asked once per provider and process (the suite's backend asks before every case)."""
    import numpy as np

    from dml_desc.conventions.onnx import OnnxResize

    from .build import build_resize_grad
    r = OnnxResize([1, 1, 2, 2], {"mode": "linear"}, scales=[1.0, 1.0, 2.0, 2.0], op_type="ResizeGrad")
    try:
        session(build_resize_grad(r, np.float32), provider)
    except Exception as e:             # onnxruntime's NOT_IMPLEMENTED or FAIL (its exception classes vary by version)
        return (f"this onnxruntime {onnxruntime().__version__} has no com.microsoft ResizeGrad kernel on {provider} "
                f"(onnxruntime registers one only in its training builds, on CUDA): "
                f"{str(e).splitlines()[0][:160]}")
    return None


def run_model(model: onnx.ModelProto | bytes | str, feeds: dict[str, np.ndarray],
              provider: str = "CPUExecutionProvider", threads: int = 0) -> list[np.ndarray]:
    """Run `model` on `feeds` ({input name: numpy array}) -> the list of outputs, as numpy arrays."""
    return session(model, provider, threads).run(None, feeds)


def onnxruntime_training(submodule: str):
    """onnxruntime.training.<submodule> (it imports torch), or a DescError that names what is missing."""
    import importlib
    from importlib.util import find_spec
    onnxruntime()
    if find_spec("onnxruntime.training") is None:
        raise DescError("onnxruntime.training", None, "is not installed: only the CPU training build has it; "
                        f"{TORCH_INSTALL}, then pip install 'dml-desc[training]' (instead of, never beside, "
                        "'dml-desc[ort]')")
    if find_spec("torch") is None:
        raise DescError("torch", None, f"is not installed; onnxruntime.training imports it: {TORCH_INSTALL}")
    return importlib.import_module(f"onnxruntime.training.{submodule}")
