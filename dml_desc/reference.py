"""The NumPy reference: forward resample and its exact transpose from the shared per-axis taps, and the
ConvTransposeBackwardData data gradient (a correlation). float64 sums; the result has the input's dtype.

It depends only on the core (canonical map, taps), so `dml-desc run --backend numpy` and users import it
from here; `conformance.reference` re-exports it."""
from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from dml_desc.canonical import AxisMap, Resampling
from dml_desc.conventions.deconv import ConvSpec
from dml_desc.weights import Taps, forward_taps, gradient_taps


def contract(data: np.ndarray, taps: Taps, axis: int, skip_zero: bool = False) -> np.ndarray:
    """dst[..., r, ...] = sum_k weight[r, k] * data[..., index[r, k], ...] along `axis`. With `skip_zero`,
    taps of weight 0 (a gradient table's padding slots) add nothing, not even a NaN or inf they point at."""
    gathered = np.take(data, taps.index, axis=axis)            # axis -> (rows, K)
    shape = [1] * gathered.ndim
    shape[axis], shape[axis + 1] = taps.weight.shape
    weight = taps.weight.reshape(shape)
    terms = gathered * weight
    if skip_zero:
        terms = np.where(weight != 0, terms, 0.0)
    out: np.ndarray = terms.sum(axis=axis + 1)
    return out


def _run(data: npt.ArrayLike, res: Resampling, table: Callable[[AxisMap, Resampling], Taps],
         expected_shape: tuple[int, ...], fill: np.ndarray | None, skip_zero: bool = False) -> np.ndarray:
    from dml_desc.errors import DescError, require
    data = np.asarray(data)
    require(data.dtype.kind not in "OSUbMmc", "data.dtype", str(data.dtype), "must be a real numeric dtype "
            "(float, bfloat16 or integer)")
    if data.shape != expected_shape:
        raise DescError("data.shape", data.shape, f"must be {expected_shape}")
    try:
        acc = data.astype(np.float64)
    except (TypeError, ValueError):
        raise DescError("data.dtype", str(data.dtype), "must be a real numeric dtype") from None
    for axis in res.resized_axes:
        acc = contract(acc, table(res.axes[axis], res), axis, skip_zero)
    if fill is not None:
        acc = acc + fill
    return acc.astype(data.dtype)


def resize(x: np.ndarray, res: Resampling) -> np.ndarray:
    """Forward resample (Resize, DML_RESAMPLE*, Interpolate)."""
    _check_resampling(res)
    return _run(x, res, forward_taps, res.in_shape, _extrapolated_fill(res))


def resize_grad(dy: np.ndarray, res: Resampling) -> np.ndarray:
    """Gradient (ResizeGrad, DML_RESAMPLE_GRAD*, InterpolateBackward): the exact transpose of `resize`."""
    _check_resampling(res)
    return _run(dy, res, gradient_taps, res.out_shape, None, skip_zero=True)    # merged taps: 0 is padding


def _check_resampling(res: object) -> None:
    from dml_desc.errors import require
    require(isinstance(res, Resampling), "res", type(res).__name__, "must be a Resampling (dml_desc.conventions.load)")


def _extrapolated_fill(res: Resampling) -> np.ndarray | None:
    """tf_crop_and_resize: outputs whose coordinate leaves [0, in-1] on any axis hold the constant."""
    if not any(a.extrapolate for a in res.axes) or res.extrapolation_value == 0:
        return None
    from dml_desc.weights import coordinates
    outside = np.zeros(res.out_shape, bool)
    for axis, ax in enumerate(res.axes):
        if ax.extrapolate:
            x = coordinates(ax)
            mask = (x < 0) | (x > ax.in_size - 1)
            shape = [1] * len(res.axes)
            shape[axis] = ax.out_size
            outside |= mask.reshape(shape)
    return np.where(outside, res.extrapolation_value, 0.0)


# The suite's dtype names and their NumPy types (bf16 from ml_dtypes).
NUMPY_DTYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def as_dtype(values: npt.ArrayLike, dtype: str) -> np.ndarray:
    """`values` rounded to the suite dtype `dtype` ('f64', 'f32', 'f16', 'bf16')."""
    return np.asarray(values, np.float64).astype(NUMPY_DTYPES[dtype])

def conv_data_grad(diff_dst: np.ndarray, weights: np.ndarray, spec: ConvSpec) -> np.ndarray:
    """NCX diff_dst and (IC, OC/groups, K...) weights -> NCX diff_src, accumulated in float64."""
    n = len(spec.kernel)
    x = np.pad(diff_dst.astype(np.float64), [(0, 0), (0, 0)] + list(zip(spec.pads_begin, spec.pads_end)))
    extent = [d * (k - 1) + 1 for d, k in zip(spec.dilations, spec.kernel)]
    win = sliding_window_view(x, extent, axis=tuple(range(2, 2 + n)))       # (N, C, *pos, *extent)
    pos = tuple(slice(0, o * s, s) for o, s in zip(spec.src_spatial, spec.strides))
    taps = tuple(slice(None, None, d) for d in spec.dilations)
    win = win[(slice(None), slice(None)) + pos + taps]                      # (N, C, *out, *K)
    g = spec.groups
    win = win.reshape((spec.batch, g, spec.dst_channels // g) + win.shape[2:])
    w = weights.astype(np.float64).reshape((g, spec.src_channels // g, spec.dst_channels // g) + spec.kernel)
    o, k = "pqr"[:n], "PQR"[:n]          # spatial output and kernel letters; no clash with z, g, c, m
    out = np.einsum(f"zgc{o}{k},gmc{k}->zgm{o}", win, w, optimize=True)
    diff_src: np.ndarray = out.reshape(spec.diff_src_shape).astype(diff_dst.dtype)
    return diff_src
