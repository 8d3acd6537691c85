"""Vision ops that onnxruntime-training 1.19.2 cannot differentiate on the CPU, written before the gradient graph is
built as standard ops it can (training.export.decompose_for_gradients calls these with its _Builder `b`).

Each is the op's own formula, so the gradient onnxruntime builds from it is exact:
- InstanceNormalization (torch's InstanceNorm and GroupNorm): (x - mean) / sqrt(var + eps) * scale + B, the biased
  variance of the two-pass form, over every axis after C.
- DepthToSpace / SpaceToDepth (PixelShuffle / PixelUnshuffle): Reshape, Transpose, Reshape, the dims read at run
  time (dynamic N / H / W).
- AveragePool with a symbolic dim (onnxruntime's CPU AveragePoolGrad takes dX's shape from the graph): a Conv
  over the (N*C, 1, ...) planes with the weights 1 / kernel size, or (count_include_pad=0 with pads) a sum Conv
  divided by the count of inputs each window reads, itself a Conv of ones. Conv's gradient (ConvGrad) takes every
  shape at run time.
- GridSample (torch's grid_sample): per spatial axis the linear taps of torch's formulas at the data-dependent
  coordinate (i0 = floor(x), weights (i0 + 1 - x, x - i0), nearest: round half to even), padding_mode zeros /
  border / reflection with torch's gradient conventions, every corner gathered with GatherElements and summed
  in torch's corner order. The integer paths (floor, round, bounds) go through int64, which has no gradient, so
  the gradient reaches X (GatherElementsGrad: a scatter-add, sequential on the CPU) and the grid through the
  weights only, as in torch.
"""
from __future__ import annotations

import itertools

import numpy as np
import onnx
from onnx import helper

from dml_desc.errors import require

INT64 = onnx.TensorProto.INT64


def _attr(node, name, default):
    value = next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)
    return value.decode() if isinstance(value, bytes) else value


def _where(b) -> str:
    return f"node {b.node.name or b.node.op_type}"


def _rank(b, name: str) -> int:
    dims = b.shapes.get(name)
    require(dims is not None, f"{_where(b)}.{name}", name, f"has no known rank, which the {b.node.op_type} rewrite "
            "for training needs (export with shapes, or run onnx.shape_inference on the model)")
    return len(dims)


def _dims(b, x: str, first: int, last: int) -> str:
    """Shape(x)[first:last] as a 1-D int64 tensor (Gather: every opset)."""
    return b.op("Gather", b.op("Shape", x), b.i64(list(range(first, last))), axis=0)


def _reduce_mean(b, x: str, axes: list) -> str:
    """ReduceSum / count: onnxruntime's ReduceMean gradient scales by the count in float32, a float64 graph too."""
    total = b.op("ReduceSum", x, b.i64(axes), keepdims=1) if b.opset >= 13 else \
        b.op("ReduceSum", x, axes=axes, keepdims=1)
    count = b.op("Cast", b.op("ReduceProd", _dims(b, x, axes[0], axes[-1] + 1), keepdims=1), to=b.like)
    return b.op("Div", total, count)


# ------------------------------------------------------------------------------------------- InstanceNormalization

def instance_norm(b, x, y):
    """(x - mean) / sqrt(var + eps) * scale + B per (n, c), as torch computes it."""
    rank = _rank(b, x)
    eps = _attr(b.node, "epsilon", 1e-5)
    mean = _reduce_mean(b, x, list(range(2, rank)))
    d = b.op("Sub", x, mean)
    var = _reduce_mean(b, b.op("Mul", d, d), list(range(2, rank)))
    normed = b.op("Div", d, b.op("Sqrt", b.op("Add", var, b.c(eps))))
    per_channel = b.i64([-1] + [1] * (rank - 2))
    scale = b.op("Reshape", b.node.input[1], per_channel)
    bias = b.op("Reshape", b.node.input[2], per_channel)
    return b.op("Add", b.op("Mul", normed, scale), bias, out=y)


# ----------------------------------------------------------------------------------- DepthToSpace / SpaceToDepth

def depth_to_space(b, x, y):
    """(N, C*k*k, H, W) -> (N, C, H*k, W*k); CRD (torch's pixel_shuffle) reads channel c*k*k + i*k + j, DCR
    (i*k + j)*C + c."""
    require(_rank(b, x) == 4, f"{_where(b)}.input rank", _rank(b, x), "must be 4 (DepthToSpace)")
    k = _attr(b.node, "blocksize", None)
    n, h, w = _dims(b, x, 0, 1), _dims(b, x, 2, 3), _dims(b, x, 3, 4)
    if _attr(b.node, "mode", "DCR") == "CRD":
        split, perm = b.op("Concat", n, b.i64([-1, k, k]), h, w, axis=0), [0, 1, 4, 2, 5, 3]
    else:
        split, perm = b.op("Concat", n, b.i64([k, k, -1]), h, w, axis=0), [0, 3, 4, 1, 5, 2]
    moved = b.op("Transpose", b.op("Reshape", x, split), perm=perm)
    hk, wk = b.op("Mul", h, b.i64([k])), b.op("Mul", w, b.i64([k]))
    return b.op("Reshape", moved, b.op("Concat", n, b.i64([-1]), hk, wk, axis=0), out=y)


def space_to_depth(b, x, y):
    """(N, C, H*k, W*k) -> (N, k*k*C, H, W), output channel (i*k + j)*C + c (torch's pixel_unshuffle is CRD and
    exports as Reshape / Transpose already)."""
    require(_rank(b, x) == 4, f"{_where(b)}.input rank", _rank(b, x), "must be 4 (SpaceToDepth)")
    k = _attr(b.node, "blocksize", None)
    nc, n = _dims(b, x, 0, 2), _dims(b, x, 0, 1)
    h, w = (b.op("Div", _dims(b, x, a, a + 1), b.i64([k])) for a in (2, 3))
    split = b.op("Concat", nc, h, b.i64([k]), w, b.i64([k]), axis=0)
    moved = b.op("Transpose", b.op("Reshape", x, split), perm=[0, 3, 5, 1, 2, 4])
    return b.op("Reshape", moved, b.op("Concat", n, b.i64([-1]), h, w, axis=0), out=y)


# ------------------------------------------------------------------------------------------------- AveragePool

def average_pool(b, x, y):
    """A Conv with one input channel over (N*C, 1, spatial...) where X has a symbolic dim (kept as it is where every
    dim is known). One channel, not a depthwise (group=C) Conv: onnxruntime 1.19's CPU ConvGrad of a grouped 3-D
    Conv writes out of bounds (wrong losses, heap corruption) at some run-time shapes."""
    dims = b.shapes.get(x)
    if dims is not None and all(d is not None for d in dims):
        return None
    where = _where(b)
    rank = _rank(b, x)
    require(_attr(b.node, "auto_pad", "NOTSET") == "NOTSET", f"{where}.auto_pad", _attr(b.node, "auto_pad", ""),
            "must be NOTSET (explicit pads) for AveragePool with symbolic dims; torch writes explicit pads")
    require(_attr(b.node, "ceil_mode", 0) == 0, f"{where}.ceil_mode", 1, "with symbolic dims onnxruntime's CPU "
            "AveragePoolGrad cannot run and the window count depends on the run-time size: use ceil_mode=False in "
            "torch (avg_pool / AvgPool), or export with static shapes")
    kernel = list(_attr(b.node, "kernel_shape", []))
    n = rank - 2
    conv = dict(kernel_shape=kernel, strides=list(_attr(b.node, "strides", [1] * n)),
                pads=list(_attr(b.node, "pads", [0] * 2 * n)), dilations=list(_attr(b.node, "dilations", [1] * n)))
    spatial = _dims(b, x, 2, rank)
    planes = b.op("Reshape", x, b.op("Concat", b.i64([-1, 1]), spatial, axis=0))      # (N*C, 1, spatial...)
    if _attr(b.node, "count_include_pad", 0) or not any(conv["pads"]):
        pooled = b.op("Conv", planes, b.c(np.full([1, 1] + kernel, 1.0 / np.prod(kernel))), **conv)
    else:
        total = b.op("Conv", planes, b.c(np.ones([1, 1] + kernel)), **conv)
        ones = b.op("ConstantOfShape", b.op("Concat", b.i64([1, 1]), spatial, axis=0),
                    value=helper.make_tensor("", b.like, [1], [1.0]))
        pooled = b.op("Div", total, b.op("Conv", ones, b.c(np.ones([1, 1] + kernel)), **conv))
    shape = b.op("Concat", _dims(b, x, 0, 2), _dims(b, pooled, 2, rank), axis=0)
    return b.op("Reshape", pooled, shape, out=y)


# -------------------------------------------------------------------------------------------------- GridSample

def grid_sample(b, x, y):
    """torch.nn.functional.grid_sample (bilinear / nearest, zeros / border / reflection, align_corners) in
    standard ops, 4-D and 5-D."""
    where = _where(b)
    grid = b.node.input[1]
    mode = _attr(b.node, "mode", "linear" if b.opset >= 20 else "bilinear")
    require(mode in ("linear", "bilinear", "nearest"), f"{where}.mode", mode, "has no gradient in "
            "onnxruntime-training and no rewrite here (only bilinear and nearest): use grid_sample(mode='bilinear')")
    padding = _attr(b.node, "padding_mode", "zeros")
    require(padding in ("zeros", "border", "reflection"), f"{where}.padding_mode", padding,
            "must be zeros, border or reflection")
    corners = bool(_attr(b.node, "align_corners", 0))
    rank = _rank(b, x)
    d = rank - 2
    sizes_i = [_dims(b, x, 2 + a, 3 + a) for a in range(d)]          # (1,) int64 each
    sizes = [b.op("Cast", s, to=b.like) for s in sizes_i]
    axes = []
    for a in range(d):          # grid[..., 0] is the last axis (x), grid[..., d-1] the first spatial one
        g = b.op("Reshape", b.op("Gather", grid, b.i64(d - 1 - a), axis=d + 1), b.i64([0, 1, -1]))   # (N, 1, P)
        coord = _source_index(b, g, sizes[a], padding, corners)
        axes.append(_nearest_taps(b, coord, sizes_i[a]) if mode == "nearest" else
                    _linear_taps(b, coord, sizes_i[a]))
    strides = [None] * d        # row-major strides of the flattened spatial axes, int64 (1,)
    for a in reversed(range(d)):
        strides[a] = b.i64([1]) if a == d - 1 else b.op("Mul", strides[a + 1], sizes_i[a + 1])
    flat = b.op("Reshape", x, b.i64([0, 0, -1]))                                                     # (N, C, S)
    channels = b.op("Concat", b.i64([1]), _dims(b, x, 1, 2), b.i64([1]), axis=0)
    out = None
    for corner in itertools.product(*[range(len(t)) for t in axes]):   # torch's order: the last axis fastest
        index, weight = None, None
        for a in range(d):
            i, _ = axes[a][corner[a]]
            term = b.op("Mul", i, strides[a])
            index = term if index is None else b.op("Add", index, term)
        for a in reversed(range(d)):                                   # torch multiplies x's weight first
            _, w = axes[a][corner[a]]
            weight = w if weight is None else b.op("Mul", weight, w)
        value = b.op("GatherElements", flat, b.op("Expand", index, channels), axis=2)
        term = b.op("Mul", value, weight)
        out = term if out is None else b.op("Add", out, term)
    shape = b.op("Concat", _dims(b, x, 0, 2), _dims(b, grid, 1, rank - 1), axis=0)
    return b.op("Reshape", out, shape, out=y)


def _no_grad(b, value: str) -> str:
    """`value` (integral float) through int64 and back: the same number, with no gradient path."""
    return b.op("Cast", b.op("Cast", value, to=INT64), to=b.like)


def _source_index(b, g: str, size: str, padding: str, corners: bool) -> str:
    """torch's grid_sampler_compute_source_index: unnormalize, then clip or reflect (with torch's gradients)."""
    if corners:
        coord = b.op("Mul", b.op("Div", b.op("Add", g, b.c(1.0)), b.c(2.0)), b.op("Sub", size, b.c(1.0)))
    else:
        coord = b.op("Div", b.op("Sub", b.op("Mul", b.op("Add", g, b.c(1.0)), size), b.c(1.0)), b.c(2.0))
    if padding == "zeros":
        return coord
    if padding == "reflection":
        low, span = (b.c(0.0), b.op("Sub", size, b.c(1.0))) if corners else (b.c(-0.5), size)
        coord = _reflect(b, coord, low, span)
    return _clip(b, coord, b.op("Sub", size, b.c(1.0)))


def _clip(b, coord: str, top: str) -> str:
    """torch's clip_coordinates_set_grad: 0 where coord <= 0, top where coord >= top (no gradient at either)."""
    low = b.op("Where", b.op("LessOrEqual", coord, b.c(0.0)), b.c(0.0), coord)
    return b.op("Where", b.op("GreaterOrEqual", coord, top), top, low)


def _reflect(b, coord: str, low: str, span: str) -> str:
    """torch's reflect_coordinates_set_grad over [low, low + span]: |coord - low| folded by span; 0 (no gradient)
    where span is 0 (one input with align_corners)."""
    d = b.op("Sub", coord, low)
    a = b.op("Where", b.op("Less", d, b.c(0.0)), b.op("Neg", d), d)
    empty = b.op("Equal", span, b.c(0.0))
    safe = b.op("Where", empty, b.c(1.0), span)
    flips = _no_grad(b, b.op("Floor", b.op("Div", a, safe)))
    extra = b.op("Sub", a, b.op("Mul", flips, safe))
    even = b.op("Equal", b.op("Mod", b.op("Cast", flips, to=INT64), b.i64(2)), b.i64(0))
    folded = b.op("Where", even, b.op("Add", extra, low), b.op("Add", b.op("Sub", safe, extra), low))
    return b.op("Where", empty, b.c(0.0), folded)


def _inside(b, i: str, size: str) -> tuple:
    """(index clamped into [0, size) as int64, 1.0 where i was inside else 0.0) for an int64 index."""
    ok = b.op("And", b.op("GreaterOrEqual", i, b.i64(0)), b.op("Less", i, size))
    return b.op("Where", ok, i, b.i64(0)), b.op("Cast", ok, to=b.like)


def _linear_taps(b, coord: str, size: str) -> list:
    """[(i0, (i0 + 1 - x) * inside), (i0 + 1, (x - i0) * inside)] with i0 = floor(x)."""
    lo = _no_grad(b, b.op("Floor", coord))
    hi = b.op("Add", lo, b.c(1.0))
    taps = []
    for index, weight in ((lo, b.op("Sub", hi, coord)), (hi, b.op("Sub", coord, lo))):
        i, ok = _inside(b, b.op("Cast", index, to=INT64), size)
        taps.append((i, b.op("Mul", weight, ok)))
    return taps


def _nearest_taps(b, coord: str, size: str) -> list:
    """[(round half to even (torch's nearbyint), inside)]: no gradient reaches the grid, as in torch."""
    i, ok = _inside(b, b.op("Cast", b.op("Round", coord), to=INT64), size)
    return [(i, ok)]


VISION_DECOMPOSITIONS = {"InstanceNormalization": instance_norm, "DepthToSpace": depth_to_space,
                         "SpaceToDepth": space_to_depth, "AveragePool": average_pool, "GridSample": grid_sample}
# why each is rewritten, where it is not "no gradient in onnxruntime-training"
WHY = {"AveragePool": "onnxruntime's CPU AveragePoolGrad needs static shapes"}
