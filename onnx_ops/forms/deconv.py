"""deconv: integer-factor upsampling gradients as ConvTransposeBackwardData (a depthwise Conv) with fixed kernels.

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

from ..model import OPSET, grad_graph, stamped
from .axis import emit_axis
from .bands import MAX_BAND_ENTRIES
from .emitter import Emitter, is_symbolic

MAX_CORRECTED_ROWS = 4


@dataclass(frozen=True)
class AxisDeconv:
    """One axis of an integer-factor resize gradient written as a ConvTransposeBackwardData: stride `factor`,
    a fixed `kernel` with its pads, plus `corrections` for the border rows where resampling clamps and a
    deconvolution zero-pads.
    """
    axis: int
    factor: int
    kernel: np.ndarray          # (K,)
    pad_begin: int
    pad_end: int
    corrections: Taps           # rows = the corrected input indices (row_ids), cols = outputs
    row_ids: tuple

    def conv_spec(self, res: Resampling) -> ConvSpec:
        """The depthwise ConvTransposeBackwardData (groups = channels) of this axis on an NCX tensor."""
        return self.depthwise(res)[0]

    def weights(self, res: Resampling) -> np.ndarray:
        """The depthwise weights (C, 1, K...) of this axis's correlation."""
        return self.depthwise(res)[1]

    def depthwise(self, res: Resampling) -> tuple:
        """(ConvSpec, weights) of this axis's depthwise correlation on the tensor as it is when the axis is reached."""
        shape = [res.in_shape[a] if a in res.resized_axes and a < self.axis else n
                 for a, n in enumerate(res.out_shape)]      # earlier axes are already contracted
        return _depthwise(shape, [self])


def spatial_only(res: Resampling) -> bool:
    """3- to 5-D NCX maps that resize spatial axes only: the shapes depthwise Conv / ConvTranspose take.
    Their weights are sized by the channel count, so C must be static."""
    return (3 <= len(res.axes) <= 5 and bool(res.resized_axes) and min(res.resized_axes) >= 2
            and not is_symbolic(res.out_shape[1]))


def outer_kernel(kernels: dict, rank: int) -> np.ndarray:
    """The outer product over spatial axes 2..rank-1 of per-axis kernels (ones(1) where an axis has none)."""
    kernel = np.ones(())
    for a in range(2, rank):
        kernel = np.multiply.outer(kernel, kernels.get(a, np.ones(1)))
    return kernel


def _depthwise(shape: list, parts: list) -> tuple:
    """(ConvSpec, weights) of one depthwise correlation applying every part's kernel, stride and pads."""
    n = len(shape) - 2
    s, pb, pe = [1] * n, [0] * n, [0] * n
    for p in parts:
        i = p.axis - 2
        s[i], pb[i], pe[i] = p.factor, p.pad_begin, p.pad_end
    kernel = outer_kernel({p.axis: p.kernel for p in parts}, len(shape))
    c = shape[1]
    spec = ConvSpec(shape[0], c, c, tuple(shape[2:]), kernel.shape, tuple(s), (1,) * n, tuple(pb), tuple(pe), c,
                    (0,) * n)
    return spec, np.broadcast_to(kernel, spec.weights_shape).copy()


def middle_row_kernel(dense: np.ndarray, f: int):
    """(kernel, pad_begin, pad_end) of a stride-f correlation read from the middle row of a dense gradient table
    (rows = X, cols = dY), or None where that row is empty or the pads would be negative. The caller proves the
    whole table equal to it."""
    mid = dense.shape[0] // 2
    cols = np.flatnonzero(dense[mid])
    return row_kernel(cols, dense[mid, cols], mid, f)


def row_kernel(cols: np.ndarray, weights: np.ndarray, row: int, f: int):
    """(kernel, pad_begin, pad_end) of a stride-f correlation whose output `row` reads dY's `cols` with `weights`,
    or None where the row is empty or the pads would be negative."""
    if not len(cols):
        return None
    first, last = int(cols.min()), int(cols.max())
    kernel = np.zeros(last - first + 1)
    kernel[cols - first] = weights
    pad_begin = f * row - first
    pad_end = len(kernel) - f - pad_begin
    return None if pad_begin < 0 or pad_end < 0 else (kernel, pad_begin, pad_end)


def axis_deconv(res: Resampling, axis: int) -> AxisDeconv | None:
    """The AxisDeconv of axis `axis` of `res` when its gradient fits one (an integer upsampling factor, at
    least 3 inputs, a shared kernel), else None.
    """
    ax = res.axes[axis]
    n, m = ax.in_size, ax.out_size
    if m % n or n < 3:
        return None
    f = m // n
    if n * m > MAX_BAND_ENTRIES:        # the proof below is dense: skip axes too long for it
        return None
    dense = gradient_taps(ax, res).dense()
    found = middle_row_kernel(dense, f)
    if found is None:
        return None
    kernel, pb, pe = found
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
    if not spatial_only(res):
        return None
    parts = [axis_deconv(res, a) for a in res.resized_axes]
    return None if any(p is None for p in parts) else parts


def combined(res: Resampling, parts: list) -> tuple | None:
    """All axes uncorrected (nearest): one ConvTransposeBackwardData with the outer-product kernel."""
    return None if any(p.row_ids for p in parts) else _depthwise(list(res.out_shape), parts)


def emit_conv(em: Emitter, src: str, spec: ConvSpec, weights: np.ndarray) -> str:
    """Emit one depthwise Conv computing `spec` with `weights` on `src`; returns the output name."""
    return em.node("Conv", [src, em.const(weights, "conv_weights")], "conv", kernel_shape=list(spec.kernel),
                   strides=list(spec.strides), pads=list(spec.pads_begin) + list(spec.pads_end), group=spec.groups)


def emit_deconv(em: Emitter, src: str, res: Resampling, parts: list) -> str:
    """Emit the bridge for `parts` (one AxisDeconv per axis): a Conv per axis plus its border corrections."""
    cur = src
    for part in parts:
        conv = emit_conv(em, cur, *part.depthwise(res))
        cur = _corrected(em, cur, conv, part, len(res.axes)) if part.row_ids else conv
    return cur


def _corrected(em: Emitter, src: str, conv: str, part: AxisDeconv, rank: int) -> str:
    """conv + the border corrections, each edge block computed in gather form and zero-padded to size."""
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


def build_bridge_model(res: Resampling):
    """dX = ResizeGrad(dY) spelled as per-axis ConvTransposeBackwardData (for tests and the benchmark)."""
    from onnx import TensorProto
    parts = deconv_form(res)
    if parts is None:
        return None
    em = Emitter("bridge", OPSET, np.float32)
    em.rename(emit_deconv(em, "dY", res, parts), "dX")
    return stamped(grad_graph(em.nodes, "bridge", res, TensorProto.FLOAT, em.inits, with_x=False), False)
