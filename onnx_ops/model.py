"""ONNX models as this package makes them: the stamp, the gradient graph's signature and the walk over
subgraphs. The modules that build, lower and check models build on this one; it imports none of them."""
from __future__ import annotations

import onnx
from onnx import helper

from dml_desc.canonical import Resampling

# Models built from scratch are stamped explicitly, whatever onnx is installed (onnx 1.18+ would stamp IR 11+):
OPSET = 19          # Resize-19; onnxruntime-training 1.19.2 loads ai.onnx <= 21
IR_VERSION = 9      # onnxruntime-training 1.19.2 loads IR <= 10

def grad_graph(nodes, name: str, res: Resampling, elem: int, inits, with_x: bool = True):
    """A gradient graph: inputs dY (forward output shape) and X (forward input shape), output dX."""
    inputs = [helper.make_tensor_value_info("dY", elem, list(res.out_shape))]
    if with_x:
        inputs.append(helper.make_tensor_value_info("X", elem, list(res.in_shape)))
    return helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("dX", elem, list(res.in_shape))],
                             inits)


def stamped(graph, with_ms: bool) -> onnx.ModelProto:
    """A model around `graph`, stamped IR 9 / ai.onnx 19 (and com.microsoft 1 when it holds ResizeGrad)."""
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("com.microsoft", 1)] if with_ms else [])
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION, producer_name="dml-desc")
    return model


def graphs(graph):
    """The graph and every If / Loop / Scan body in it, depth first."""
    yield graph
    for node in graph.node:
        for sub in subgraphs(node):
            yield from graphs(sub)


def subgraphs(node) -> list:
    """The graph attributes of one node (If branches, Loop / Scan bodies)."""
    return [g for a in node.attribute for g in ([a.g] if a.HasField("g") else []) + list(a.graphs)]
