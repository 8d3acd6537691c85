"""Random Resize configurations: our forward (and so our gradient's transpose) equals onnxruntime's CPU kernel."""
import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from onnx import helper, numpy_helper

from conformance.reference import resize
from dml_desc.conventions.onnx import OnnxResize, to_canonical

CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric",
        "tf_crop_and_resize"]


def ort_resize(r: OnnxResize, x: np.ndarray) -> np.ndarray:
    inits, names = [], ["X", "", "", ""]
    for i, (name, value, dt) in enumerate((("roi", r.roi, np.float32), ("scales", r.scales, np.float32),
                                           ("sizes", r.sizes, np.int64)), 1):
        if value is not None:
            inits.append(numpy_helper.from_array(np.asarray(value, dt), name))
            names[i] = name
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["Y"], **r.attributes)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", 1, list(x.shape))],
                          [helper.make_tensor_value_info("Y", 1, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", r.opset)], ir_version=9)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]


@st.composite
def resizes(draw):
    spatial = draw(st.integers(1, 2))
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 2))] + [draw(st.integers(1, 9)) for _ in range(spatial)]
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    ctm = draw(st.sampled_from(CTMS))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
        attrs["exclude_outside"] = draw(st.sampled_from([0, 1]))
    if mode != "nearest" and ctm != "tf_crop_and_resize":
        attrs["antialias"] = draw(st.sampled_from([0, 1]))
    r = OnnxResize(shape, attrs, opset=19)
    if draw(st.booleans()):
        r.sizes = shape[:2] + [draw(st.integers(1, 12)) for _ in range(spatial)]
    else:
        r.scales = [1.0, 1.0] + [draw(st.sampled_from([0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0]))
                                 for _ in range(spatial)]
    if ctm == "tf_crop_and_resize":
        starts = [0.0, 0.0] + [draw(st.sampled_from([0.0, 0.1, 0.25])) for _ in range(spatial)]
        ends = [1.0, 1.0] + [draw(st.sampled_from([0.6, 0.9, 1.0])) for _ in range(spatial)]
        r.roi = starts + ends
        attrs["extrapolation_value"] = draw(st.sampled_from([0.0, 10.0]))
    return r


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resizes(), st.integers(0, 1000))
def test_forward_matches_onnxruntime(r, seed):
    try:
        res = to_canonical(r)
    except Exception:
        assume(False)                                 # invalid draws (e.g. an empty output) are refused
    x = np.random.default_rng(seed).standard_normal(r.input_shape).astype(np.float32)
    try:
        theirs = ort_resize(r, x)
    except Exception:                                 # configurations onnxruntime does not implement
        assume(False)
    ours = resize(x.astype(np.float64), res)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.6], [1, 1, 0.75, 1.5], [1, 1, 2.5, 0.4], [1, 1, 0.35, 0.9]])
def test_resize10_rules_match_onnxruntime(mode, scales):
    """Resize-10: asymmetric only; onnxruntime rounds nearest up when downsampling, truncates otherwise."""
    r = OnnxResize([1, 2, 7, 9], {"mode": mode}, scales=scales, opset=10)
    x = np.random.default_rng(0).standard_normal(r.input_shape).astype(np.float32)
    node = helper.make_node("Resize", ["X", "s"], ["Y"], mode=mode)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", 1, r.input_shape)],
                          [helper.make_tensor_value_info("Y", 1, None)],
                          [numpy_helper.from_array(np.array(scales, np.float32), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)], ir_version=7)
    theirs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    np.testing.assert_allclose(resize(x.astype(np.float64), to_canonical(r)), theirs, rtol=1e-6, atol=1e-6)
