"""Jobs for the child process, built from the library's descriptions (parent side), and their results read.

A job is a dict: {"kind": "resampling_bwd" | "resampling_fwd" | "deconv_bwd_d" | "graph", ...}, with the
arrays in the description's own layout, and "blame" (field, value) for an error."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...errors import DescError
from .isolation import run_one

if TYPE_CHECKING:
    from ...canonical import Resampling
    from ...conventions.deconv import ConvSpec


def _cast(array: npt.ArrayLike, dtype: str) -> np.ndarray:
    import ml_dtypes
    target = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    return np.ascontiguousarray(np.asarray(array, np.float64).astype(np.float32).astype(target))


def interpolate_job(op: dict[str, Any], dy: npt.ArrayLike, api: str = "graph") -> dict[str, Any]:
    """A job for one InterpolateBackward op of a oneDNN Graph document; dy in the op's data_format layout."""
    from ...conventions.onednn import attrs_of
    a = attrs_of(op)
    dtype = op["inputs"][0].get("dtype", "f32")
    src = op["inputs"][0]["shape"]
    dd = _cast(dy, dtype)
    blame = ("mode", a.get("mode"))
    if api == "graph":
        return {"kind": "graph", "op": op, "inputs": {op["inputs"][0]["id"]: np.zeros(src, dd.dtype),
                                                      op["inputs"][1]["id"]: dd},
                "primitive": ("resampling",), "blame": blame}
    mode = "linear" if a.get("mode") in ("linear", "bilinear", "trilinear") else a.get("mode")
    return {"kind": "resampling_bwd", "mode": mode, "data_format": a.get("data_format", "NXC"), "diff_dst": dd,
            "diff_src_shape": tuple(src), "blame": blame}


def deconv_job(spec: ConvSpec, dd: npt.ArrayLike, w: npt.ArrayLike, data_format: str, weights_format: str,
               dtype: str = "f32", api: str = "graph") -> dict[str, Any]:
    """A ConvTransposeBackwardData job; dd in data_format, w in weights_format layout. The Graph API ignores
    dilations (src/graph/backend/dnnl/executables/deconv.cpp), so a dilated op must take the primitive API."""
    from ...conventions.deconv import to_layout, to_onednn
    dd, w = _cast(dd, dtype), _cast(w, dtype)
    blame = ("strides/pads/dilations", {"strides": list(spec.strides), "pads_begin": list(spec.pads_begin),
                                        "pads_end": list(spec.pads_end), "dilations": list(spec.dilations)})
    if api == "graph":
        if any(d != 1 for d in spec.dilations):
            raise DescError("dilations", list(spec.dilations), "oneDNN Graph's ConvTransposeBackwardData ignores "
                            "dilations (its backward-data primitive is created without them); use the primitive API")
        op = to_onednn(spec, data_format, weights_format, dtype)["graph"][0]
        return {"kind": "graph", "op": op, "inputs": {0: dd, 1: w}, "primitive": ("deconvolution", "convolution"),
                "blame": blame}
    pads_end = [(n - 1) * s + dl * (k - 1) + 1 - b - d for n, s, dl, k, b, d in zip(
        spec.src_spatial, spec.strides, spec.dilations, spec.kernel, spec.pads_begin, spec.dst_spatial)]
    return {"kind": "deconv_bwd_d", "diff_dst": dd, "weights": w, "data_format": data_format,
            "weights_format": weights_format, "groups": spec.groups, "strides": list(spec.strides),
            "dilations": list(spec.dilations), "pads_begin": list(spec.pads_begin), "pads_end": pads_end,
            "diff_src_shape": tuple(to_layout(spec.diff_src_shape, data_format)), "blame": blame}


def accepts_job(doc: dict[str, Any]) -> dict[str, Any]:
    """Does oneDNN's add_op (and partitioning) accept this one-op document? The job's error says why not."""
    from ...conventions.onednn import find_op
    op = find_op(doc, ("Interpolate", "InterpolateBackward", "ConvTransposeBackwardData"))
    return {"kind": "graph", "op": op, "blame": ("kind", op["kind"])}


def describe(result: dict[str, Any]) -> str:
    """'onednn 3.2.0, Graph API, kernel jit:avx512_core (max ISA avx512_core_bf16)' for a job's result."""
    return (f"onednn {result['version']}, {result['api']} API, kernel {result.get('kernel') or 'unknown'} "
            f"(max ISA {result.get('isa')})")


def interpolate_backward(res: Resampling, dy: npt.ArrayLike, dtype: str = "f32", api: str = "graph",
                         data_format: str | None = None) -> tuple[np.ndarray, dict[str, Any], tuple[str, ...]]:
    """(diff_src, result, notes): the gradient of canonical `res` on oneDNN, through the oneDNN Graph document
    the converter writes (a map oneDNN cannot express is refused with the converter's reason)."""
    from ...conventions.onednn import from_canonical
    doc, notes = from_canonical(res, backward=True, data_format=data_format, dtype=dtype)
    result = run_one(interpolate_job(doc["graph"][0], dy, api))
    return result["out"], result, notes


def axis_forward_job(mode: str, data_format: str, rank: int, axis: int, in_size: int, out_size: int
                     ) -> dict[str, Any]:
    """oneDNN's forward resampling on every basis input of one spatial axis at once: N = in_size identity
    inputs, C = 1, the axis resized in_size -> out_size and every other spatial axis 1 -> 1, in a tensor of
    `rank` dims (spatial `axis` counts from 0). axis_matrix(result) is the axis's J."""
    spatial_in, spatial_out = [1] * (rank - 2), [1] * (rank - 2)
    spatial_in[axis], spatial_out[axis] = in_size, out_size
    src = np.eye(in_size, dtype=np.float32).reshape([in_size, 1] + spatial_in)
    if data_format == "NXC":
        src = np.ascontiguousarray(np.moveaxis(src, 1, -1))
    dst = [in_size, 1] + spatial_out if data_format == "NCX" else [in_size] + spatial_out + [1]
    return {"kind": "resampling_fwd", "mode": mode, "data_format": data_format, "src": src, "dst_shape": tuple(dst),
            "blame": ("mode", mode)}


def axis_matrix(result: dict[str, Any]) -> npt.NDArray[np.float64]:
    """J (out_size x in_size, float64) of an axis_forward_job: row o holds output o's response to each input."""
    out: npt.NDArray[np.float64] = np.asarray(result["out"], np.float64)
    matrix: npt.NDArray[np.float64] = out.reshape(out.shape[0], -1).T      # numpy's stubs: .T is Any
    return matrix
