"""Forward parity on the 39 Resize backend cases shipped with onnx: expected output and ORT's CPU kernel."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, TensorProto

from conformance.onnx_cases import case_to_resize, onnx_resize_cases
from conformance.reference import resize
from dml_desc.conventions.onnx import to_canonical
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

CASES = onnx_resize_cases()
# onnx's generator computes align_corners with the unfloored length in*scale (x = o*(in-1)/(in*scale-1));
# the spec's formula uses the real output length, and onnxruntime follows the spec. We follow ORT.
ONNX_EXPECTED_IS_WRONG = {"export_resize_downsample_scales_cubic_align_corners",
                          "export_resize_downsample_scales_linear_align_corners"}


def ort_forward(case):
    names = [n for n in case.node.input if n]
    feeds = {names[0]: case.x}
    for name, value, dtype in zip(case.node.input[1:], (case.roi, case.scales, case.sizes),
                                  (np.float32, np.float32, np.int64)):
        if name:
            feeds[name] = np.asarray(value, dtype)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64 if v.dtype == np.int64 else TensorProto.FLOAT,
                                            list(v.shape)) for n, v in feeds.items()]
    graph = helper.make_graph([case.node], "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def test_all_39_cases_are_present():
    assert len(CASES) == 39
    assert len({c.name for c in CASES}) == 39


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_parity(case):
    res = to_canonical(case_to_resize(case), semantics=INSTALLED)
    ours = resize(case.x.astype(np.float64), res)
    theirs = ort_forward(case)
    assert ours.shape == theirs.shape == case.expected.shape
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=2e-6)
    if case.name in ONNX_EXPECTED_IS_WRONG:
        assert np.abs(case.expected - theirs).max() > 0.1
    else:
        np.testing.assert_allclose(ours, case.expected, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_case_round_trips_through_the_onnx_converter(case):
    from dml_desc.conventions.onnx import from_canonical
    from dml_desc.weights import same_weights
    res = to_canonical(case_to_resize(case), semantics=INSTALLED)
    node, _ = from_canonical(res, op_type="Resize", semantics=INSTALLED)
    assert same_weights(res, to_canonical(node, semantics=INSTALLED))
