"""NumPy reference for ConvTransposeBackwardData: diff_src = cross_correlation(diff_dst, weights)."""
from __future__ import annotations


import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dml_desc.conventions.deconv import ConvSpec


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
    return out.reshape(spec.diff_src_shape).astype(diff_dst.dtype)
