"""Builders and oracles for the dynamic-path tests (test_dynamic.py, test_dynamic_band.py)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from conformance.reference import resize_grad
from dml_desc.conventions.onnx import OnnxResize, installed_semantics, to_canonical
from onnx_ops.model import graphs

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run
F32 = TensorProto.FLOAT
GENERAL_PATH_OPS = {"Unique", "EyeLike"}   # only the general dynamic path writes these (comb taps; identity probes)


def grad_model(attrs, x_dims, dy_dims, scales=None, roi=None, run_time=(), opset=19, elem=F32, ir=9,
               scales_as_constant=False):
    """dX = ResizeGrad(dY, X, roi, scales); names in `run_time` ("scales", "roi") are graph inputs too."""
    inits, nodes, ins = [], [], ["dY", "X", "", ""]
    inputs = [helper.make_tensor_value_info("dY", elem, dy_dims), helper.make_tensor_value_info("X", elem, x_dims)]
    for k, (name, values) in ((2, ("roi", roi)), (3, ("scales", scales))):
        if values is None:
            continue
        ins[k] = name
        if name in run_time:
            inputs.append(helper.make_tensor_value_info(name, F32, [f"{name}_len"]))
        elif name == "scales" and scales_as_constant:
            nodes.append(helper.make_node("Constant", [], [name], value_floats=[float(v) for v in values]))
        else:
            inits.append(numpy_helper.from_array(np.asarray(values, np.float32), name))
    nodes.append(helper.make_node("ResizeGrad", ins, ["dX"], domain="com.microsoft", name="rg", **attrs))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("dX", elem, x_dims)], inits)
    return helper.make_model(graph, ir_version=ir, opset_imports=[helper.make_opsetid("", opset),
                                                                  helper.make_opsetid("com.microsoft", 1)])


def reference(attrs, shape, dy, scales=None, roi=None, sizes=None):
    res = to_canonical(OnnxResize(list(shape), attrs, roi, scales, sizes, opset=19), semantics=INSTALLED)
    return resize_grad(dy.astype(np.float64), res)


def out_shape(attrs, shape, scales=None, roi=None, sizes=None):
    return to_canonical(OnnxResize(list(shape), attrs, roi, scales, sizes, opset=19), semantics=INSTALLED).out_shape


def ops(model) -> set:
    """Every op type in the model's graph and its subgraphs (the dynamic path's If branches)."""
    return {n.op_type for g in graphs(model.graph) for n in g.node}
