"""Build ConvTransposeBackwardData as an ONNX model: inputs diff_dst and weights, output diff_src."""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from numpy.typing import DTypeLike
from onnx import TensorProto, helper

from dml_desc.conventions.deconv import DATA_FORMATS, ConvSpec, to_layout, to_onnx_attrs
from dml_desc.errors import one_of, require

from .build import IR_VERSION, OPSET, element_type


def _perm_to_ncx(rank: int) -> list:
    return [0, rank - 1] + list(range(1, rank - 1))


def build_conv_data_grad(spec: ConvSpec, data_format: str = "NCX", weights_format: str = "IOX",
                         dtype: DTypeLike = np.float32) -> onnx.ModelProto:
    """Conv(diff_dst, weights) with the transposes NXC and XOI need; runs on any onnxruntime build."""
    require(isinstance(spec, ConvSpec), "spec", type(spec).__name__, "must be a ConvSpec (deconv.load gives one)")
    one_of(data_format, DATA_FORMATS, "data_format")
    one_of(weights_format, ("IOX", "XOI"), "weights_format")
    elem = element_type(dtype)
    require(elem != TensorProto.DOUBLE, "dtype", "float64", "onnxruntime's CPU Conv has no double kernel: "
            "build ConvTransposeBackwardData in float32 or float16")
    rank = len(spec.kernel) + 2
    nodes, x, w = [], "diff_dst", "weights"
    if data_format == "NXC":
        nodes.append(helper.make_node("Transpose", [x], ["diff_dst_ncx"], perm=_perm_to_ncx(rank)))
        x = "diff_dst_ncx"
    if weights_format == "XOI":        # (K..., OC/g, IC) -> (IC, OC/g, K...)
        nodes.append(helper.make_node("Transpose", [w], ["weights_iox"],
                                      perm=[rank - 1, rank - 2] + list(range(rank - 2))))
        w = "weights_iox"
    y = "diff_src" if data_format == "NCX" else "diff_src_ncx"
    attrs: dict[str, Any] = to_onnx_attrs(spec)      # ints and int lists: make_node's attributes
    nodes.append(helper.make_node("Conv", [x, w], [y], name="ConvTransposeBackwardData", **attrs))
    if data_format == "NXC":
        nodes.append(helper.make_node("Transpose", [y], ["diff_src"], perm=[0] + list(range(2, rank)) + [1]))
    w_shape = list(spec.weights_shape)
    if weights_format == "XOI":
        w_shape = w_shape[2:] + [w_shape[1], w_shape[0]]
    diff_dst = helper.make_tensor_value_info("diff_dst", elem, to_layout(spec.diff_dst_shape, data_format))
    diff_src = helper.make_tensor_value_info("diff_src", elem, to_layout(spec.diff_src_shape, data_format))
    graph = helper.make_graph(nodes, "conv_transpose_backward_data",
                              [diff_dst, helper.make_tensor_value_info("weights", elem, w_shape)], [diff_src])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="dml-desc")
    onnx.checker.check_model(model)
    return model
