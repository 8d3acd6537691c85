"""The ONNX convention: Resize / com.microsoft ResizeGrad attributes and roi/scales/sizes (opsets 10-19) <->
canonical. The reader (ONNX -> canonical, `to_canonical`, `OnnxResize`) is onnx_reader.py, the writer (canonical ->
ONNX, `from_canonical`) onnx_writer.py, which reads with the reader; this module holds the names of both.
"""
from .onnx_reader import *  # noqa: F401,F403 (the convention's public names: the reader's)
from .onnx_writer import from_canonical  # noqa: F401 (and the writer's)
