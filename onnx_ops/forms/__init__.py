"""ONNX spellings of one gradient contraction, each proven against the shared taps, one module per family:

- emitter:        the Emitter the forms write nodes with; SymbolicDim for dims known only at run time
- kron:           every resized axis is I (x) K: one small MatMul on the last axis, ReduceSum / Gather elsewhere
- block:          block sums (nearest, integer factor): Reshape + ReduceSum, or one AveragePool (pool)
- resize:         the gradient taps equal (out/in) x another Resize's: one Resize node and a Mul
- bands, axis:    per axis, tiles of X rows reading windows of dY (band / dense MatMuls) or the gather form,
                  planned axis by axis in the cheapest order (the general form: covers every map)
- deconv:         integer upsampling as a depthwise Conv per axis (ConvTransposeBackwardData) plus border rows
- conv_transpose: integer downsampling as one depthwise ConvTranspose
- filter_conv:    integer-factor linear / cubic as depthwise Convs (static, and the shape-generic forms' spelling)
- cost:           the cost model: every constant, with its measurement, and every cost function
- registry:       one Form per spelling in an ordered list; `contract` picks and emits one (onnx_ops.lower)
"""
from .axis import DENSE_MAX_COLS, MAX_TILE, AxisPlan, axis_options, emit_axis, emit_plan, plan_axes, split_piles
from .bands import (BAND_CHECK_ROWS, MAX_BAND_ENTRIES, Band, band, band_dense, band_taps, emit_band,
                    emit_band_transposed, shared_band)
from .block import PoolForm, block_factors, emit_block, emit_pool, pool_form
from .conv_transpose import conv_transpose_form, conv_transpose_kernel, emit_conv_transpose
from .cost import (MLAS_COLUMNS, NS_PER_BLOCK, NS_PER_BYTE, NS_PER_GEMM, NS_PER_MAC, NS_PER_NODE, NS_PER_ROW,
                   NS_PER_TAP, PIPELINE, POOL_MAX_OPSET, POOL_WINDOW, PREFER_RESIZE, band_cost, conv_cost,
                   copy_cost, gather_cost, gather_form_cost, kron_cost, matmul_cost, pool_cost, resize_cost,
                   transposes_cost)
from .deconv import AxisDeconv, axis_deconv, build_bridge_model, combined, deconv_form, emit_conv, emit_deconv
from .emitter import Emitter, SymbolicDim, cast_wrapped, is_symbolic, symbolic_dim
from .filter_conv import AxisForm, FilterConv, emit_filter_conv, filter_conv_form
from .kron import CHUNK, KronForm, emit_kron, kron_form
from .registry import FORMS, REGISTRY, RENAMED, Form, Gradient, candidates, choose, contract, signature
from .resize import emit_resize, find_resize, resize_candidates, taps_close

__all__ = [name for name in dir() if not name.startswith("_") and name not in (
    "axis", "bands", "block", "conv_transpose", "cost", "deconv", "emitter", "filter_conv", "kron", "registry",
    "resize")]
