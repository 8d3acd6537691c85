"""The skip rules of tests/helpers_skips.py recognise the real refusals they name, and nothing else (issue 21:
a test skips only on a matching message, so a rule that stopped matching would turn skips into failures)."""
import pytest
from onnx import helper

from dml_desc.conventions.onnx import OnnxResize, installed_semantics
from dml_desc.conventions.onnx import to_canonical as onnx_to_canonical
from dml_desc.conventions.torch import TorchInterpolate
from dml_desc.conventions.torch import to_canonical as torch_to_canonical
from dml_desc.errors import DescError
from tests.helpers_skips import empty_output, refuses_opset


def refusal(call) -> DescError:
    with pytest.raises(DescError) as info:
        call()
    return info.value


def test_empty_output_matches_the_onnx_and_torch_refusals_only():
    onnx_empty = refusal(lambda: onnx_to_canonical(OnnxResize([1, 1, 3], {"mode": "linear"}, scales=[1, 1, 0.25]),
                                                   semantics=installed_semantics()))
    torch_empty = TorchInterpolate([1, 1, 3], "nearest")
    torch_empty.scale_factor = [0.25]
    torch_empty = refusal(lambda: torch_to_canonical(torch_empty))
    assert empty_output(onnx_empty, "scales") and empty_output(torch_empty, "scale_factor")
    assert not empty_output(onnx_empty, "scale_factor") and not empty_output(torch_empty, "scales")
    other = refusal(lambda: onnx_to_canonical(OnnxResize([1, 1, 3], {"mode": "bogus"}, scales=[1, 1, 2]),
                                              semantics=installed_semantics()))
    assert not empty_output(other, other.field)


def test_refuses_opset_matches_onnxruntimes_refusal_of_that_opset_only():
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    future = 99                                  # far beyond every released ai.onnx opset
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", 1, [1])],
                              [helper.make_tensor_value_info("Y", 1, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", future)], ir_version=10)
    with pytest.raises(Exception) as info:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert refuses_opset(info.value, future), str(info.value)
    assert not refuses_opset(info.value, future - 1)
    assert not refuses_opset(RuntimeError("unsupported opset or ir version"), future)
