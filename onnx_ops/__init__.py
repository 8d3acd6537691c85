"""ONNX models with com.microsoft ResizeGrad nodes, and their lowering to standard ai.onnx ops.

Exports load on first use, so `dml-desc convert` never imports onnxruntime.
"""
from importlib import import_module

_EXPORTS = {"build_resize": "build", "build_resize_grad": "build", "OPSET": "build", "IR_VERSION": "build",
            "lower": "lower", "lower_file": "lower", "run_model": "run"}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'onnx_ops' has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
