"""`dml-desc run FILE.json --backend B --dy DY.npy [--weights W.npy] -o OUT.npy`.

Runs the gradient a description states (a resample gradient from any format the library reads, or a
ConvTransposeBackwardData) on one backend, writes dX as .npy and prints the backend, its version and the API.
A resample gradient goes through the same backends as `dml-desc conformance` (conformance/backends):
- numpy: the NumPy reference (dml_desc.reference), float64 accumulation;
- onnxruntime[:PROVIDER]: the model `dml-desc build --lowered` writes (standard ops), on the CPU or PROVIDER;
  onnxruntime-native:PROVIDER: the com.microsoft ResizeGrad node (CUDA);
- onednn: the real oneDNN (the `onednn` extra): the oneDNN Graph op the converter writes, or its primitive;
- torch: autograd through F.interpolate / conv_transpose, where the conversion to torch is exact;
- tensorflow, jax: TF's own gradient kernels (tf.GradientTape) / jax.vjp of the call the tf / jax description
  names, where the conversion is exact (the `tf` / `jax` extras; resample gradients only);
- py:MODULE:NAME: your own kernel (docs/own-kernel.md).
Arrays are in the description's own layout (NXC / XOI where it says so). A backend that cannot run the
description exactly refuses with the converter's reason.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np

from dml_desc.errors import TORCH_INSTALL, DescError, require
from dml_desc.reference import NUMPY_DTYPES

from .backends.base import SUITE_DTYPES

RUN_BACKENDS = ("numpy", "onnxruntime", "onednn", "torch")     # and onnxruntime:PROVIDER, py:MODULE:NAME, ...
RESAMPLE_ONLY = ("tensorflow", "jax")                            # no ConvTransposeBackwardData


def add_command(sub) -> None:
    """Register `run` on the `dml-desc` subcommand parser."""
    from dml_desc.conventions import FORMATS
    import argparse
    r = sub.add_parser("run", help="run the gradient a description states on numpy, onnxruntime, onednn, torch, "
                       "tensorflow or jax",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("file", metavar="FILE.json")
    r.add_argument("--from", dest="src", choices=FORMATS, help="the file's format (default: guessed from its keys)")
    from .backends.registry import backend_name
    r.add_argument("--backend", required=True, metavar="NAME", type=backend_name, help="where the gradient runs: "
                   f"{', '.join(RUN_BACKENDS + RESAMPLE_ONLY)}, onnxruntime:PROVIDER, onnxruntime-native:PROVIDER or "
                   "py:MODULE:NAME "
                   "(see above)")
    r.add_argument("--dy", required=True, metavar="DY.npy", help="the output gradient (diff_dst) in the "
                   "description's layout")
    r.add_argument("--weights", metavar="W.npy", help="ConvTransposeBackwardData: the weights, in the "
                   "description's weights_format (IOX for dml/onnx)")
    r.add_argument("-o", "--output", required=True, metavar="OUT.npy")
    r.add_argument("--dtype", choices=SUITE_DTYPES, help="compute type (default: the description's, else f32); "
                   "bf16 results are written as float32")
    r.add_argument("--api", choices=("graph", "primitive"), help="onednn: the C API (default graph; primitive "
                   "for a dilated ConvTransposeBackwardData, which oneDNN Graph computes undilated)")
    r.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    """`dml-desc run`: read a description and dY (and the weights) as .npy, compute dX on one backend,
    write it as .npy and print which backend and kernel ran.
    """
    from dml_desc.conventions import deconv, load_description, read_description
    from dml_desc.files import regular_target
    regular_target(args.output, "-o")         # refused before any work: not a regular file, or ''
    fmt, obj = read_description(args.file, args.src)
    dy = _load_npy(args.dy, "--dy")
    if deconv.is_deconv(fmt, obj):
        reading = deconv.read(fmt, obj)
        spec, notes = reading.canonical, reading.notes
        layout: dict[str, Any] = reading.layout         # a deconv's: data_format, weights_format, dtype (strs)
        require(args.weights is not None, "--weights", None, "a ConvTransposeBackwardData needs its weights")
        dtype = args.dtype or layout.get("dtype", "f32")
        weights = _load_npy(args.weights, "--weights")
        _note_cast(weights, dtype, "--weights", args.dtype)
        _note_cast(dy, dtype, "--dy", args.dtype)
        out, info = run_deconv(args.backend, spec, layout, dy, weights, dtype, args.api)
    else:
        res, _ = load_description(fmt, obj)
        notes = res.notes
        dtype = args.dtype or _description_dtype(fmt, obj)
        _note_cast(dy, dtype, "--dy", args.dtype)
        out, info = run_resample(args.backend, res, dy, dtype, args.api)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    out = _typed(out, "f32" if dtype == "bf16" else dtype)       # .npy has no bfloat16
    _save_npy(args.output, out)
    print(f"backend: {info}")
    print(f"wrote {args.output}: shape {list(out.shape)}, {dtype}")
    return 0


def _save_npy(path: str, array: np.ndarray) -> None:
    """`array` as .npy at exactly `path`, atomically (dml_desc.files.write_atomic: regular files only)."""
    import io
    from dml_desc.files import write_atomic
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    write_atomic(path, buffer.getvalue(), field="-o")


def _load_npy(path: str, flag: str) -> np.ndarray:
    """One numeric .npy array from a regular file (dml_desc.files.open_regular: a FIFO or device is refused, never
    read), no pickles; its header is checked against the file's size before any data is read or allocated."""
    from dml_desc.files import open_regular
    with open_regular(path, flag) as f:
        try:
            shape, dtype = _npy_header(f, path, flag)
            data = os.fstat(f.fileno()).st_size - f.tell()
            require(dtype.kind in "fiu", flag, str(dtype), "must hold numbers")
            require(data == math.prod(shape) * dtype.itemsize, flag, path, f"holds {data} bytes of data; its "
                    f"header says {list(shape)} {dtype} ({math.prod(shape) * dtype.itemsize} bytes)")
            f.seek(0)
            return np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:      # EOFError: an empty file
            if isinstance(e, DescError):
                raise
            raise DescError(flag, path, f"is not a readable .npy file ({e or type(e).__name__})") from None


def _npy_header(f, path: str, flag: str) -> tuple:
    """(shape, dtype) from an .npy header of format 1.0 or 2.0 (np.save's for numbers); an .npz is refused."""
    from numpy.lib import format as npy
    require(f.read(4) != b"PK\x03\x04", flag, path, "must be one .npy array, not an .npz archive")
    f.seek(0)
    version = npy.read_magic(f)
    require(version in ((1, 0), (2, 0)), flag, path, f"is an .npy file of format {version[0]}.{version[1]}; an "
            "array of numbers is written as 1.0 or 2.0 (np.save)")
    shape, _, dtype = (npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0)(f)
    return shape, dtype


NPY_TYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "float32"}   # .npy has no bfloat16


def _note_cast(a: np.ndarray, dtype: str, flag: str, chosen) -> None:
    """Say so on stderr when an array is cast to the compute type (a float64 .npy for an f32 description)."""
    if str(a.dtype) == NPY_TYPES.get(dtype, str(a.dtype)):
        return
    why = "--dtype" if chosen else "the description's type; --dtype picks another"
    print(f"note: {flag} holds {a.dtype}; it is cast to {dtype} ({why})", file=sys.stderr)


def _description_dtype(fmt: str, obj) -> str:
    if fmt == "onednn":
        from dml_desc.conventions.onednn import find_op
        return (find_op(obj)["inputs"][0] or {}).get("dtype", "f32")
    if fmt == "dml":
        return "f16" if "FLOAT16" in str(obj.get("InputGradientTensor", obj.get("InputTensor", {}))) else "f32"
    return "f32"


def _typed(a, dtype: str) -> np.ndarray:
    return np.asarray(a, np.float64).astype(NUMPY_DTYPES[dtype])


# ---- resample gradients ----------------------------------------------------------------------------------

def run_resample(backend: str, res, dy, dtype: str, api=None) -> tuple:
    """(dX, 'backend version, API') for the gradient of canonical `res` on the backend `backend` names,
    through the description of `res` in that backend's convention (refused with the converter's reason)."""
    from .backends import to_description
    from .backends.worker import close_all, load
    require(tuple(dy.shape) == res.out_shape, "--dy", list(dy.shape), f"must have the output shape "
            f"{list(res.out_shape)} of the description")
    b = load("onednn-primitive" if backend == "onednn" and api == "primitive" else backend, timeout=None)
    try:                                # a plug-in runs in its worker process, with no time limit here
        reason = b.available()
        require(reason is None, "--backend", backend, f"cannot run here: {reason}")
        require(dtype in b.dtypes, "--dtype", dtype, f"{b.name} runs {', '.join(b.dtypes)}")
        if hasattr(b, "run_canonical") and not b.native:    # lowered onnxruntime: built from the map itself
            out, notes = b.run_canonical(res, _typed(dy, dtype), dtype)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
        else:
            out = b.run(to_description(res, b.convention), _typed(dy, dtype), dtype)
        return out, (b.info() if hasattr(b, "info") else b.name)
    finally:
        close_all([b])


def _torch():
    try:
        import torch
    except ImportError:
        raise DescError("--backend", "torch", f"torch is not installed: {TORCH_INSTALL}") from None
    return torch


# ---- ConvTransposeBackwardData ------------------------------------------------------------------------------

def run_deconv(backend: str, spec, layout: dict, dd, w, dtype: str, api=None) -> tuple:
    """(diff_src in the description's layout, 'backend version, API')."""
    from dml_desc.conventions.deconv import to_layout
    require(backend in RUN_BACKENDS, "--backend", backend,
            f"a ConvTransposeBackwardData runs on {', '.join(RUN_BACKENDS)}")
    fmt, wfmt = layout.get("data_format", "NCX"), layout.get("weights_format", "IOX")
    want_w = list(spec.weights_shape) if wfmt == "IOX" else list(spec.kernel) + [spec.dst_channels // spec.groups,
                                                                                 spec.src_channels]
    require(list(dd.shape) == to_layout(spec.diff_dst_shape, fmt), "--dy", list(dd.shape),
            f"must be diff_dst {to_layout(spec.diff_dst_shape, fmt)} ({fmt})")
    require(list(w.shape) == want_w, "--weights", list(w.shape), f"must be {want_w} ({wfmt})")
    if backend == "onednn":
        from dml_desc.runtimes import onednn
        require(dtype != "f64", "--dtype", dtype, "oneDNN takes f32, bf16 or f16")
        dilated = any(d != 1 for d in spec.dilations)
        result = onednn.run_one(onednn.deconv_job(spec, dd, w, fmt, wfmt, dtype,
                                                  api or ("primitive" if dilated else "graph")))
        return result["out"], onednn.describe(result)
    dd_ncx = dd if fmt == "NCX" else np.moveaxis(dd, -1, 1)
    n = len(spec.kernel)
    w_iox = w if wfmt == "IOX" else np.transpose(w, [n + 1, n] + list(range(n)))
    if backend == "numpy":
        from dml_desc.reference import conv_data_grad
        out, info = conv_data_grad(_typed(dd_ncx, dtype), _typed(w_iox, dtype), spec), \
            f"numpy {np.__version__}, NumPy reference correlation (float64 sums)"
    elif backend == "onnxruntime":
        require(dtype in ("f32", "f16", "f64"), "--dtype", dtype, "onnxruntime's Conv takes f16, f32 or f64")
        from onnx_ops.conv import build_conv_data_grad
        from onnx_ops.run import onnxruntime, run_model
        d, ww = _typed(dd, dtype), _typed(w, dtype)
        out = run_model(build_conv_data_grad(spec, fmt, wfmt, d.dtype), {"diff_dst": d, "weights": ww})[0]
        return out, f"onnxruntime {onnxruntime().__version__}, Conv (the data gradient), CPU"
    else:
        from .deconv_suite import torch_data_grad as torch_grad
        torch = _torch()
        out = torch_grad(spec, _typed(dd_ncx, dtype).astype(np.float64), _typed(w_iox, dtype).astype(np.float64))
        info = f"torch {torch.__version__}, autograd through conv_transpose (float64)"
    return (out if fmt == "NCX" else np.moveaxis(out, 1, -1)), info
