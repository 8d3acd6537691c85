"""The ONNX convention: Resize / com.microsoft ResizeGrad attributes and roi/scales/sizes (opsets 10-19) <->
canonical. The reader (ONNX -> canonical, `to_canonical`, `OnnxResize`) is onnx_reader.py, the writer (canonical ->
ONNX, `from_canonical`) onnx_writer.py, which reads with the reader; this module holds the names of both.
"""
from .onnx_reader import *  # noqa: F401,F403 (the convention's public names: the reader's)
from .onnx_semantics import (  # noqa: F401 (the semantics names the reader imports, re-exported by name)
    NO_RUNTIME_SEMANTICS as NO_RUNTIME_SEMANTICS, ORT_TIE_TOLERANCE as ORT_TIE_TOLERANCE, SEMANTICS as SEMANTICS,
    STAND_IN_SEMANTICS as STAND_IN_SEMANTICS, check_semantics as check_semantics,
    describe_semantics as describe_semantics, installed_runtime as installed_runtime,
    installed_semantics as installed_semantics, resolve_semantics as resolve_semantics, semantics_of as semantics_of)
from .onnx_writer import from_canonical as from_canonical  # noqa: F401 (and the writer's)
