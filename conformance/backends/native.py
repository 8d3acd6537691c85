"""A native kernel as a backend: `--backend c:LIB.so:SYMBOL` (docs/native-kernel.md).

SYMBOL is `int SYMBOL(const DML_RESAMPLE_GRAD_OPERATOR_DESC *desc, const void *input_gradient,
void *output_gradient)` with directml.h's struct layouts (conformance/native/dml_resample_grad.h, shipped with the
package: `header_path()`). Cases go through the `dml` convention: the suite's DML JSON description becomes the
structs, dY a packed buffer in the case's dtype (FLOAT32 or FLOAT16), and dX is read back from a buffer that
arrives filled with NaN. A non-zero return is "unsupported by this kernel".
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Optional

import numpy as np

from dml_desc.errors import DescError, require

from .base import Backend

HEADER = Path(__file__).resolve().parent.parent / "native" / "dml_resample_grad.h"
EXAMPLE = HEADER.parent / "example_resample_grad.c"
DATA_TYPES = {"f32": (1, np.float32), "f16": (2, np.float16)}      # DML_TENSOR_DATA_TYPE_FLOAT32 / FLOAT16
DML_TENSOR_TYPE_BUFFER = 1
MODES = {"NEAREST_NEIGHBOR": 0, "LINEAR": 1, "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR": 0,
         "DML_INTERPOLATION_MODE_LINEAR": 1}


def header_path() -> Path:
    """The header to compile a kernel against (`-I` its folder)."""
    return HEADER


class DML_BUFFER_TENSOR_DESC(ctypes.Structure):
    """directml.h's DML_BUFFER_TENSOR_DESC."""
    _fields_ = [("DataType", ctypes.c_int), ("Flags", ctypes.c_int), ("DimensionCount", ctypes.c_uint32),
                ("Sizes", ctypes.POINTER(ctypes.c_uint32)), ("Strides", ctypes.POINTER(ctypes.c_uint32)),
                ("TotalTensorSizeInBytes", ctypes.c_uint64), ("GuaranteedBaseOffsetAlignment", ctypes.c_uint32)]


class DML_TENSOR_DESC(ctypes.Structure):
    """directml.h's DML_TENSOR_DESC (Type DML_TENSOR_TYPE_BUFFER, Desc a DML_BUFFER_TENSOR_DESC)."""
    _fields_ = [("Type", ctypes.c_int), ("Desc", ctypes.c_void_p)]


class DML_RESAMPLE_GRAD_OPERATOR_DESC(ctypes.Structure):
    """directml.h's DML_RESAMPLE_GRAD_OPERATOR_DESC, what SYMBOL receives."""
    _fields_ = [("InputGradientTensor", ctypes.POINTER(DML_TENSOR_DESC)),
                ("OutputGradientTensor", ctypes.POINTER(DML_TENSOR_DESC)),
                ("InterpolationMode", ctypes.c_int), ("DimensionCount", ctypes.c_uint32),
                ("Scales", ctypes.POINTER(ctypes.c_float)), ("InputPixelOffsets", ctypes.POINTER(ctypes.c_float)),
                ("OutputPixelOffsets", ctypes.POINTER(ctypes.c_float))]


SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DML_RESAMPLE_GRAD_OPERATOR_DESC), ctypes.c_void_p,
                             ctypes.c_void_p)


def native_backend(name: str, flag: str = "--backend") -> "NativeBackend":
    """`c:LIB.so:SYMBOL` -> the backend; a library that does not load, or has no SYMBOL, is a DescError naming it."""
    body = name[2:]
    require(":" in body, flag, name, "must be c:LIB.so:SYMBOL (e.g. c:./libmykernel.so:resample_grad)")
    library, symbol = body.rsplit(":", 1)
    require(library != "" and symbol.isidentifier(), flag, name, "must be c:LIB.so:SYMBOL with a C identifier SYMBOL")
    path = library if os.path.isabs(library) or os.sep in library else os.path.join(".", library)
    require(os.path.isfile(path), flag, name, f"names no file {library!r}")
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as e:
        raise DescError(flag, name, f"cannot load {library!r}: {e}") from None
    require(hasattr(lib, symbol), flag, name, f"{library!r} exports no symbol {symbol!r}")
    return NativeBackend(SIGNATURE((symbol, lib)), name)


class NativeBackend(Backend):
    """A C function over DirectML's RESAMPLE_GRAD structs (see the module docstring)."""
    convention, dtypes = "dml", ("f32", "f16")

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def available(self) -> Optional[str]:
        """None: a library that loaded runs here."""
        return None

    def run(self, description, dy, dtype):
        """dX from the C function; NotImplementedError when it returns non-zero."""
        from ..catalog import Skip
        op = description.get("Operator", "")
        if not op.endswith("RESAMPLE_GRAD"):
            raise Skip(f"documented as unsupported by the native entry point, which takes "
                       f"DML_RESAMPLE_GRAD_OPERATOR_DESC (this case needs {op}, for its RoundingDirection)")
        code, numpy_type = DATA_TYPES[dtype]
        dy_sizes, dx_sizes = description["InputGradientTensor"]["Sizes"], description["OutputGradientTensor"]["Sizes"]
        n = len(dy_sizes)
        keep: list = []                 # every ctypes buffer the structs point at, alive until the call returns

        def floats(values):
            arr = (ctypes.c_float * n)(*[_float(v) for v in values])
            keep.append(arr)
            return arr

        def tensor(sizes):
            array = (ctypes.c_uint32 * n)(*sizes)
            buffer = DML_BUFFER_TENSOR_DESC(code, 0, n, array, None, _total_bytes(sizes, numpy_type), 0)
            t = DML_TENSOR_DESC(DML_TENSOR_TYPE_BUFFER, ctypes.cast(ctypes.pointer(buffer), ctypes.c_void_p))
            keep.extend([array, buffer, t])
            return ctypes.pointer(t)
        desc = DML_RESAMPLE_GRAD_OPERATOR_DESC(tensor(dy_sizes), tensor(dx_sizes),
                                               MODES[description["InterpolationMode"]], n,
                                               floats(description["Scales"]), floats(description["InputPixelOffsets"]),
                                               floats(description["OutputPixelOffsets"]))
        g = np.ascontiguousarray(np.asarray(dy, np.float64).astype(numpy_type))
        out = np.full(dx_sizes, np.nan, numpy_type)
        rc = self.fn(ctypes.byref(desc), g.ctypes.data, out.ctypes.data)
        if rc != 0:
            raise NotImplementedError(f"{self.name.rsplit(':', 1)[1]} returned {rc}")
        return out

    def info(self) -> str:
        """What runs, for `dml-desc run`."""
        return f"{self.name}: a native DML_RESAMPLE_GRAD kernel"


def _float(v) -> float:
    """A DML JSON float ('FLT_MAX' or a number)."""
    return float(np.finfo(np.float32).max) if v in ("FLT_MAX", "inf", float("inf")) else float(v)


def _total_bytes(sizes, numpy_type) -> int:
    """DMLCalcBufferTensorSize of a packed tensor, rounded up to 4 bytes as DirectML requires."""
    size = int(np.prod(sizes)) * np.dtype(numpy_type).itemsize
    return (size + 3) & ~3
