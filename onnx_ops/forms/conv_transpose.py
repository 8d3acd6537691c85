"""conv_transpose: integer downsampling, where each dX row reads one dY row (dX[i] = k[i % F] * dY[i // F] per
axis), as one depthwise ConvTranspose whose stride is its kernel's shape. (Not kron's repeating Gather.)"""
from __future__ import annotations

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.weights import gradient_taps

from .deconv import outer_kernel, spatial_only
from .emitter import Emitter


def conv_transpose_kernel(res: Resampling, axis: int) -> np.ndarray | None:
    """k (length F) when in = F * out and dX[i] = k[i % F] * dY[i // F] on this axis."""
    k = gradient_taps(res.axes[axis], res).block_kernel()
    return k[:, 0] if k is not None and k.shape[1] == 1 else None


def conv_transpose_form(res: Resampling) -> np.ndarray | None:
    """The outer-product kernel of one depthwise ConvTranspose over every resized axis (stride = its shape)."""
    if not spatial_only(res):
        return None
    kernels = {a: conv_transpose_kernel(res, a) for a in res.resized_axes}
    return None if any(k is None for k in kernels.values()) else outer_kernel(kernels, len(res.axes))


def emit_conv_transpose(em: Emitter, src: str, res: Resampling, kernel: np.ndarray) -> str:
    """Emit a depthwise ConvTranspose with stride = kernel shape: spreads each input over a block by `kernel`."""
    c = res.out_shape[1]
    weights = np.broadcast_to(kernel, (c, 1) + kernel.shape).copy()
    return em.node("ConvTranspose", [src, em.const(weights, "conv_transpose_weights")], "conv_transpose",
                   kernel_shape=list(kernel.shape), strides=list(kernel.shape), group=c)
