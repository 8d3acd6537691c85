"""ONNX models with com.microsoft ResizeGrad nodes, and their lowering to standard ai.onnx ops."""
from .build import build_resize, build_resize_grad, OPSET, IR_VERSION
from .lower import lower, lower_file
from .run import run_model

__all__ = ["build_resize", "build_resize_grad", "lower", "lower_file", "run_model", "OPSET", "IR_VERSION"]
