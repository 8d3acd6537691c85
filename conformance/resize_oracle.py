"""onnxruntime's own forward Resize, transposed: the oracle of the kernel cases run on an ONNX backend.

The description the backend runs (a ResizeGrad node) is also a forward Resize. Resize is separable, so J is
built one axis at a time: the same node on a tensor that is 1 long on every other axis (and not resized
there), run on every basis vector of the axis. dX = dY contracted with each axis' J transposed. A case whose
forward onnxruntime refuses, or whose scale depends on every axis (keep_aspect_ratio_policy), has no such
oracle here: the caller falls back to the NumPy reference and says so.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Optional

import numpy as np

ORACLE = "onnxruntime-Resize-transposed"


def forward_transposed(description: dict, dy: np.ndarray) -> Optional[np.ndarray]:
    """dX = J^T dY (float64) from onnxruntime's forward Resize of the ResizeGrad `description`, or None where
    onnxruntime has no forward for it (not installed, or it refuses the node)."""
    from dml_desc.conventions.onnx import OnnxResize
    r = OnnxResize.from_json(description)
    if r.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    g = np.asarray(dy, np.float64)
    for k in range(len(r.input_shape)):
        j = axis_matrix(json.dumps(description, sort_keys=True), k)
        if j is None:
            return None
        g = np.moveaxis(np.tensordot(j.T, np.moveaxis(g, k, 0), axes=1), 0, k)
    return g


@lru_cache(maxsize=4096)
def axis_matrix(description_json: str, k: int) -> Optional[np.ndarray]:
    """J of axis k (out_k x in_k, float64) from onnxruntime's Resize, or None where it refuses."""
    from dml_desc.errors import DescError
    from onnx_ops import build_resize
    from onnx_ops.run import run_model
    r = one_axis(json.loads(description_json), k)
    n = r.input_shape[0]
    try:
        rows = run_model(build_resize(r, np.float32), {"X": np.eye(n, dtype=np.float32).reshape(r.input_shape)},
                         threads=1)[0]
    except DescError:
        raise                       # onnxruntime not installed: the suite's usual skip
    except Exception:               # onnxruntime refuses this forward
        return None
    return rows.reshape(n, -1).T.astype(np.float64)         # row i of the batch: J's column i


def one_axis(description: dict, k: int):
    """The forward Resize of `description` on axis k alone, as an n x 1 x 1 x n tensor (the layout whose every
    mode onnxruntime's CPU Resize implements; the n basis inputs batched along N): its scale or size, roi and
    attributes; no `axes`."""
    from dml_desc.conventions.onnx import OnnxResize
    r = OnnxResize.from_json(dict(description, op_type="Resize"))
    rank = len(r.input_shape)
    listed = [a % rank for a in r.attr("axes", list(range(rank)))]
    r.attributes.pop("extrapolation_value", None)        # the constant fill is not part of the linear map
    r.attributes.pop("axes", None)
    at = listed.index(k) if k in listed else None
    n = r.input_shape[k]
    r.input_shape = [n, 1, 1, n]
    if r.scales is not None:
        r.scales = [1.0, 1.0, 1.0, r.scales[at] if at is not None else 1.0]
    if r.sizes is not None:
        r.sizes = [n, 1, 1, r.sizes[at] if at is not None else n]
    if r.roi:
        m = len(listed)
        r.roi = [0.0] * 3 + [r.roi[at] if at is not None else 0.0] + [1.0] * 3 + \
            [r.roi[m + at] if at is not None else 1.0]
    return r
