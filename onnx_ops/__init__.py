"""ONNX models with com.microsoft ResizeGrad nodes, and their lowering to standard ai.onnx ops.

`run_model` loads onnxruntime on first use, so building, lowering and `dml-desc convert` do not.
"""
from .build import IR_VERSION, OPSET, build_gradient, build_lowered, build_resize, build_resize_grad
from .lower import Lowered, lower, lower_file

__all__ = ["build_gradient", "build_lowered", "build_resize", "build_resize_grad", "lower", "lower_file", "Lowered",
           "run_model", "OPSET", "IR_VERSION"]


def __getattr__(name):
    if name == "run_model":
        from .run import run_model
        return run_model
    raise AttributeError(f"module 'onnx_ops' has no attribute {name!r}")
