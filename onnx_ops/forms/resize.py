"""resize: the gradient taps equal (out/in) x the taps of another Resize (e.g. bilinear x2's gradient is 4 x an
antialiased linear /2 Resize): one onnxruntime Resize node and a Mul."""
from __future__ import annotations

import math

import numpy as np

from dml_desc.canonical import AxisMap, Mode, Resampling, Rounding
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import ConversionError
from dml_desc.weights import Taps, forward_taps, gradient_taps

from ..model import resize_reader_opset
from .emitter import Emitter, is_symbolic


def taps_close(a: Taps, b: Taps, factor: float = 1.0) -> bool:
    """True when `a` and `factor` * `b` have the same sparsity and weights equal within float32 rounding.
    A few rows at each end and in the middle are compared first: most candidates differ there, and the whole
    tables (a sort of every tap, seconds on a 2^22 axis) are then never merged."""
    if a.rows != b.rows or not all(_close(_rows(a, part), _rows(b, part), factor) for part in _sample(a.rows)):
        return False
    return _close(a, b, factor)


SAMPLE_ROWS = 64     # rows per sampled slice of taps_close's first look


def _sample(rows: int) -> list:
    mid = max(0, rows // 2 - SAMPLE_ROWS // 2)
    return [slice(0, SAMPLE_ROWS), slice(mid, mid + SAMPLE_ROWS), slice(max(0, rows - SAMPLE_ROWS), rows)]


def _rows(t: Taps, part: slice) -> Taps:
    return Taps(t.index[part], t.weight[part], t.cols)


def _close(a: Taps, b: Taps, factor: float) -> bool:
    (ra, ca, wa), (rb, cb, wb) = a.merged(), b.merged()
    return (np.array_equal(ra, rb) and np.array_equal(ca, cb)
            and np.allclose(wa, factor * wb, rtol=2e-6, atol=1e-12))



def _reverse(ax: AxisMap, rounding=Rounding.ROUND_PREFER_FLOOR) -> AxisMap:
    """A half-pixel map from the gradient's side (out -> in) with onnxruntime's float32 scale."""
    return AxisMap(ax.out_size, ax.in_size, float(np.float32(ax.in_size / ax.out_size)), 0.5, -0.5, rounding)


def resize_candidates(res: Resampling):
    """Canonical maps whose Resize, scaled by a constant, may equal the gradient of `res` (checked by the caller)."""
    rank = len(res.axes)
    ident = [AxisMap.identity(n) for n in res.out_shape]
    for rounding in Rounding:
        axes = list(ident)
        for a in res.resized_axes:
            axes[a] = _reverse(res.axes[a], rounding)
        yield Resampling(tuple(axes), Mode.NEAREST)
    if res.mode not in (Mode.LINEAR, Mode.CUBIC) or res.antialias or not set(res.resized_axes) <= set(range(2, rank)):
        return
    if rank == 5:       # onnxruntime's CUDA provider computes 5-D antialiased Resizes wrong (docs/cuda.md); on the
        return          # CPU the other forms measured as fast or faster (trilinear x2: 23.9 ms both; 1x8x16x32^2: 3x)
    axes = list(ident)
    for a in res.resized_axes:
        axes[a] = _reverse(res.axes[a])
    yield Resampling(tuple(axes), res.mode, cubic_coeff_a=res.cubic_coeff_a, antialias=True)


def find_resize(res: Resampling, opset: int):
    """A Resize (canonical, ONNX spelling) whose taps are the gradient's, axis by axis, up to out/in."""
    if opset < 11:                     # Resize-10 has no coordinate_transformation_mode
        return None
    for cand in resize_candidates(res):
        if cand.antialias and opset < 18:
            continue
        if all(taps_close(gradient_taps(res.axes[a], res), forward_taps(cand.axes[a], cand),
                          res.axes[a].out_size / res.axes[a].in_size) for a in res.resized_axes):
            # spelled at the Resize version a ResizeGrad of this opset is read as (opset >= 11 here), under the
            # stand-in semantics: exact under every entry of SEMANTICS (proven on nearest maps with ties,
            # tests/test_resize_form_semantics.py)
            try:
                spelling, _ = onnx_conv.from_canonical(cand, opset=resize_reader_opset(opset),
                                                       semantics=onnx_conv.STAND_IN_SEMANTICS)
            except ConversionError:        # no ONNX spelling states this map exactly
                continue
            if spelling.sizes is not None and any(is_symbolic(n) for n in spelling.sizes):
                continue                   # sizes would bake a run-time dim
            return cand, spelling
    return None


def emit_resize(em: Emitter, src: str, res: Resampling, spelling) -> str:
    """Emit one ONNX Resize of `src` as `spelling` (an OnnxResize: scales or sizes) at the emitter's opset."""
    inputs = [src, "", em.const(spelling.scales, "scales", np.float32)] if spelling.scales is not None else \
        [src, "", "", em.const(spelling.sizes, "sizes", np.int64)]
    if em.opset < 13:
        inputs[1] = em.const([], "roi", np.float32)
    factor = math.prod(res.axes[a].out_size / res.axes[a].in_size for a in res.resized_axes)
    if math.prod(res.out_shape) < math.prod(res.in_shape):      # scale on the smaller side
        inputs[0] = em.scale(src, factor)
        return em.node("Resize", inputs, "resized", **spelling.attributes)
    return em.scale(em.node("Resize", inputs, "resized", **spelling.attributes), factor)

