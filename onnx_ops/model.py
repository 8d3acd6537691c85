"""ONNX models as this package makes them: the stamp (the opset constants, named here and nowhere else) and the
gradient graph's signature. The modules that build, lower and check models build on this one; it imports none of
them (the walk over subgraphs is onnx_ops.lowering.walk, re-exported here for older callers)."""
from __future__ import annotations

import onnx
from onnx import helper

from dml_desc.canonical import Resampling

from .lowering.walk import graphs, subgraphs  # noqa: F401 (re-exported: onnx_ops.lowering.walk is the one walk)

# Models built from scratch are stamped explicitly, whatever onnx is installed (onnx 1.18+ would stamp IR 11+):
OPSET = 19          # Resize-19; onnxruntime-training 1.19.2 loads ai.onnx <= TRAINING_MAX_OPSET
IR_VERSION = 9      # onnxruntime-training 1.19.2 loads IR <= TRAINING_MAX_IR
# onnxruntime-training 1.19.2 loads models up to these versions (onnx_ops.training.repair restamps down to them)
TRAINING_MAX_IR = 10
TRAINING_MAX_OPSET = 21
# The ai.onnx opset `lower` adds to a model that imports none (a bare com.microsoft graph) and reads such a model
# at, and the opset of the standard ops a gradient is lowered to when built from scratch: the built models' own, so
# a model built here and one lowered from a file use the same op versions.
LOWERING_OPSET = OPSET
# A ResizeGrad's attributes are read as those of the ai.onnx Resize of the model's opset, clamped to the Resize
# versions the reader knows apart: Resize-10 (the first) to TRAINING_MAX_OPSET (no Resize attribute changed after
# 19, and the training build loads opsets up to 21).
RESIZE_READER_OPSETS = (10, TRAINING_MAX_OPSET)


def resize_reader_opset(opset: int) -> int:
    """The Resize version a ResizeGrad of a model at ai.onnx `opset` is read as (RESIZE_READER_OPSETS)."""
    low, high = RESIZE_READER_OPSETS
    return min(max(opset, low), high)

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
