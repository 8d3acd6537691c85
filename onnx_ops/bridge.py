"""Integer-factor resize gradients as ConvTransposeBackwardData with fixed kernels.

Per resized axis with out = F * in, the gradient taps are a strided correlation with one kernel
(nearest: ones(F); half-pixel linear: the bilinear deconvolution kernel) except on a few border
rows, where resampling clamps and deconvolution zero-pads: those rows carry a correction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dml_desc.canonical import Resampling
from dml_desc.conventions.deconv import ConvSpec
from dml_desc.weights import Taps, gradient_taps

from .forms import Emitter

MAX_CORRECTED_ROWS = 4


@dataclass(frozen=True)
class AxisDeconv:
    axis: int
    factor: int
    kernel: np.ndarray          # (K,)
    pad_begin: int
    pad_end: int
    corrections: Taps           # rows = the corrected input indices (row_ids), cols = outputs
    row_ids: tuple

    def conv_spec(self, res: Resampling) -> ConvSpec:
        """The depthwise ConvTransposeBackwardData (groups = channels) of this axis on an NCX tensor."""
        shape = list(res.out_shape)
        for a in res.resized_axes:
            if a < self.axis:
                shape[a] = res.in_shape[a]
        n = len(shape) - 2
        k = [1] * n
        s, pb, pe = [1] * n, [0] * n, [0] * n
        i = self.axis - 2
        k[i], s[i], pb[i], pe[i] = len(self.kernel), self.factor, self.pad_begin, self.pad_end
        c = shape[1]
        return ConvSpec(shape[0], c, c, tuple(shape[2:]), tuple(k), tuple(s), (1,) * n, tuple(pb), tuple(pe), c,
                        (0,) * n)

    def weights(self, res: Resampling) -> np.ndarray:
        spec = self.conv_spec(res)
        shape = [1] * len(spec.kernel)
        shape[self.axis - 2] = len(self.kernel)
        return np.broadcast_to(self.kernel.reshape(shape), spec.weights_shape).copy()


def axis_deconv(res: Resampling, axis: int) -> AxisDeconv | None:
    ax = res.axes[axis]
    n, m = ax.in_size, ax.out_size
    if m % n or n < 3:
        return None
    f = m // n
    taps = gradient_taps(ax, res)
    dense = taps.dense()
    mid = n // 2
    cols = np.flatnonzero(dense[mid])
    first, last = int(cols.min()), int(cols.max())
    kernel = dense[mid, first:last + 1]
    pb = f * mid - first
    pe = len(kernel) - f - pb
    if pe < 0 or pb < 0:
        return None
    conv = _strided(kernel, f, pb, n, m)
    diff = np.flatnonzero(np.any(np.abs(dense - conv) > 1e-6, axis=1))    # float32 coordinates
    if len(diff) > MAX_CORRECTED_ROWS or not _at_edges(diff, n):
        return None
    fix = dense[diff] - conv[diff]
    width = max(int((fix != 0).sum(axis=1).max(initial=0)), 1)
    index = np.zeros((len(diff), width), np.int64)
    weight = np.zeros((len(diff), width))
    for r, row in enumerate(fix):
        nz = np.flatnonzero(row)
        index[r, :len(nz)], weight[r, :len(nz)] = nz, row[nz]
    return AxisDeconv(axis, f, kernel, pb, pe, Taps(index, weight, m), tuple(int(i) for i in diff))


def _at_edges(rows, n: int) -> bool:
    """Corrections must form a leading block [0, a) and a trailing block [n-b, n)."""
    rows = list(rows)
    head = [r for i, r in enumerate(rows) if r == i]
    tail = rows[len(head):]
    return tail == list(range(n - len(tail), n))


def _strided(kernel: np.ndarray, f: int, pb: int, n: int, m: int) -> np.ndarray:
    """The (n, m) matrix of a stride-f correlation with zero padding pb."""
    out = np.zeros((n, m))
    for i in range(n):
        for j, w in enumerate(kernel):
            o = f * i - pb + j
            if 0 <= o < m:
                out[i, o] += w
    return out


def deconv_form(res: Resampling) -> list | None:
    """One AxisDeconv per resized axis, or None when some axis is not an integer-factor correlation."""
    if not (3 <= len(res.axes) <= 5) or not res.resized_axes or min(res.resized_axes) < 2:
        return None
    parts = [axis_deconv(res, a) for a in res.resized_axes]
    return None if any(p is None for p in parts) else parts


def combined(res: Resampling, parts: list) -> tuple | None:
    """All axes uncorrected (nearest): one ConvTransposeBackwardData with the outer-product kernel."""
    if any(p.row_ids for p in parts):
        return None
    n = len(res.axes) - 2
    k, s, pb, pe = [1] * n, [1] * n, [0] * n, [0] * n
    kernel = np.ones(())
    for p in sorted(parts, key=lambda p: p.axis):
        i = p.axis - 2
        k[i], s[i], pb[i], pe[i] = len(p.kernel), p.factor, p.pad_begin, p.pad_end
    for i in range(n):
        part = next((p for p in parts if p.axis == i + 2), None)
        kernel = np.multiply.outer(kernel, part.kernel if part else np.ones(1))
    c = res.out_shape[1]
    spec = ConvSpec(res.out_shape[0], c, c, tuple(res.out_shape[2:]), tuple(k), tuple(s), (1,) * n, tuple(pb),
                    tuple(pe), c, (0,) * n)
    return spec, np.broadcast_to(kernel, spec.weights_shape).copy()


def emit_combined(em: Emitter, src: str, spec: ConvSpec, weights: np.ndarray) -> str:
    return em.node("Conv", [src, em.const(weights, "deconv_weights")], "deconv", kernel_shape=list(spec.kernel),
                   strides=list(spec.strides), pads=list(spec.pads_begin) + list(spec.pads_end), group=spec.groups)


def emit_deconv(em: Emitter, src: str, res: Resampling, parts: list) -> str:
    cur = src
    for part in parts:
        spec = part.conv_spec(res)
        w = em.const(part.weights(res), "deconv_weights")
        conv = em.node("Conv", [cur, w], "deconv", kernel_shape=list(spec.kernel), strides=list(spec.strides),
                       pads=list(spec.pads_begin) + list(spec.pads_end), group=spec.groups)
        cur = _corrected(em, cur, conv, part, len(res.axes)) if part.row_ids else conv
    return cur


def _corrected(em: Emitter, src: str, conv: str, part: AxisDeconv, rank: int) -> str:
    """conv + the border corrections, each edge block computed in gather form and zero-padded to size."""
    from .forms import emit_axis
    size = _axis_size(part)
    out = conv
    for rows, before in _edge_blocks(part.row_ids, size):
        sel = [part.row_ids.index(r) for r in rows]
        taps = Taps(part.corrections.index[sel], part.corrections.weight[sel], part.corrections.cols)
        fix, _ = emit_axis(em, src, taps, part.axis, rank)
        pads = [0] * (2 * rank)
        pads[part.axis], pads[rank + part.axis] = before, size - before - len(rows)
        padded = em.pad(fix, pads)
        out = em.node("Add", [out, padded], "corrected")
    return out


def _axis_size(part: AxisDeconv) -> int:
    return part.corrections.cols // part.factor


def _edge_blocks(rows: tuple, size: int) -> list:
    """Split the corrected rows into a leading and a trailing contiguous block."""
    head = [r for i, r in enumerate(rows) if r == i]
    tail = [r for r in rows if r not in head]
    blocks = [(head, 0)] if head else []
    if tail:
        blocks.append((tail, tail[0]))
    return blocks


# ---- integer downsampling: the gradient is a ConvTranspose (each dX row reads one dY row) -----

def spread_kernel(res: Resampling, axis: int) -> np.ndarray | None:
    """k (length F) when in = F * out and dX[i] = k[i % F] * dY[i // F] on this axis."""
    ax = res.axes[axis]
    if ax.in_size % ax.out_size:
        return None
    f = ax.in_size // ax.out_size
    rows, cols, w = gradient_taps(ax, res).merged()
    if len(np.unique(rows)) != len(rows) or np.any(cols != rows // f):
        return None
    kernel = np.zeros(f)
    kernel[rows % f] = w
    full = np.zeros(ax.in_size)
    full[rows] = w
    return kernel if np.allclose(full, np.tile(kernel, ax.out_size), rtol=2e-6, atol=1e-12) else None


def spread_form(res: Resampling) -> tuple | None:
    """(strides, outer-product kernel) of one depthwise ConvTranspose over every resized axis."""
    if not (3 <= len(res.axes) <= 5) or not res.resized_axes or min(res.resized_axes) < 2:
        return None
    kernels = {a: spread_kernel(res, a) for a in res.resized_axes}
    if any(k is None for k in kernels.values()):
        return None
    kernel, strides = np.ones(()), []
    for a in range(2, len(res.axes)):
        k = kernels.get(a, np.ones(1))
        kernel, strides = np.multiply.outer(kernel, k), strides + [len(k)]
    return strides, kernel


def emit_spread(em: Emitter, src: str, res: Resampling, strides: list, kernel: np.ndarray) -> str:
    c = res.out_shape[1]
    weights = np.broadcast_to(kernel, (c, 1) + kernel.shape).copy()
    return em.node("ConvTranspose", [src, em.const(weights, "spread_weights")], "spread",
                   kernel_shape=list(kernel.shape), strides=strides, group=c)


def build_bridge_model(res: Resampling):
    """dX = ResizeGrad(dY) spelled as per-axis ConvTransposeBackwardData (for tests and the benchmark)."""
    from onnx import helper
    parts = deconv_form(res)
    if parts is None:
        return None
    em = Emitter("bridge", 19, np.float32)
    out = emit_deconv(em, "dY", res, parts)
    graph = helper.make_graph(em.nodes + [helper.make_node("Identity", [out], ["dX"])], "bridge",
                              [helper.make_tensor_value_info("dY", 1, list(res.out_shape))],
                              [helper.make_tensor_value_info("dX", 1, list(res.in_shape))], em.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
