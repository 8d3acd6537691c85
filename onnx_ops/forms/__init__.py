"""ONNX spellings of one gradient contraction, each proven against the shared taps, one module per family, and the
one registry every planner walks:

- emitter:        the Emitter the forms write nodes with; SymbolicDim for dims known only at run time
- kron:           every resized axis is I (x) K: one small MatMul on the last axis, ReduceSum / Gather elsewhere
- block:          block sums (nearest, integer factor): Reshape + ReduceSum, or one AveragePool (pool)
- resize:         the gradient taps equal (out/in) x another Resize's: one Resize node and a Mul
- bands, axis:    per axis, tiles of X rows reading windows of dY (band / dense MatMuls) or the gather form,
                  planned axis by axis in the cheapest order (the general form: covers every map)
- deconv:         integer upsampling as a depthwise Conv per axis (ConvTransposeBackwardData) plus border rows
- conv_transpose: integer downsampling as one depthwise ConvTranspose
- filter_conv:    integer-factor linear / cubic as depthwise Convs (static, and the shape-generic forms' spelling)
- generic_emit:   the shape-generic spellings (constant integer factors, lengths known at run time; their proof is
                  onnx_ops.lowering.generic_forms): Resize, AveragePool, Conv(s), kron pairs, block sums
- dynamic, dynamic_taps, dynamic_band: the run-time path (taps computed in the graph), for every map
- cost:           the cost model: every constant, with its measurement, and every cost function
- registry:       one Form per spelling in an ordered list, each with its static, shape-generic and run-time scopes;
                  `contract` picks and emits a static one (onnx_ops.lower), `pick` any
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
from .registry import (FORMS, REGISTRY, RENAMED, Form, Gradient, RunTimeGradient, Scope, candidates, choose, contract,
                       pick, ranked, signature)
from .resize import emit_resize, find_resize, resize_candidates, taps_close

__all__ = [
    "axis_deconv", "axis_options", "AxisDeconv", "AxisForm", "AxisPlan", "Band", "band", "BAND_CHECK_ROWS",
    "band_cost", "band_dense", "band_taps", "block_factors", "build_bridge_model", "candidates", "cast_wrapped",
    "choose", "CHUNK", "combined", "contract", "conv_cost", "conv_transpose_form", "conv_transpose_kernel",
    "copy_cost", "deconv_form", "DENSE_MAX_COLS", "emit_axis", "emit_band", "emit_band_transposed",
    "emit_block", "emit_conv", "emit_conv_transpose", "emit_deconv", "emit_filter_conv", "emit_kron",
    "emit_plan", "emit_pool", "emit_resize", "Emitter", "filter_conv_form", "FilterConv", "find_resize", "Form",
    "FORMS", "gather_cost", "gather_form_cost", "Gradient", "is_symbolic", "kron_cost", "kron_form", "KronForm",
    "matmul_cost", "MAX_BAND_ENTRIES", "MAX_TILE", "MLAS_COLUMNS", "NS_PER_BLOCK", "NS_PER_BYTE", "NS_PER_GEMM",
    "NS_PER_MAC", "NS_PER_NODE", "NS_PER_ROW", "NS_PER_TAP", "PIPELINE", "plan_axes", "pool_cost", "pool_form",
    "POOL_MAX_OPSET", "POOL_WINDOW", "PoolForm", "PREFER_RESIZE", "REGISTRY", "RENAMED", "resize_candidates",
    "resize_cost", "shared_band", "signature", "split_piles", "symbolic_dim", "SymbolicDim", "taps_close",
    "transposes_cost",
    "pick", "ranked", "RunTimeGradient", "Scope",   # the registry's walk (onnx_ops.forms.registry)
]
