"""Our forward (and so our gradient's transpose) equals the installed onnxruntime's CPU Resize, under the
semantics `installed_semantics()` picks for it: "ort-1.19" up to 1.26, "ort-1.27" from 1.27 (nearest ties)."""
import re

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install 'dml-desc[ort]')")

from conformance.reference import resize  # noqa: E402
from dml_desc.conventions import onnx as onnx_conv  # noqa: E402
from dml_desc.conventions.onnx import OnnxResize, to_canonical  # noqa: E402
from dml_desc.errors import DescError  # noqa: E402
from onnx_ops import build_resize_grad, lower  # noqa: E402
from onnx_ops.run import run_model  # noqa: E402
from tests.helpers_skips import empty_output, refuses_opset  # noqa: E402

CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric",
        "tf_crop_and_resize"]
INSTALLED = onnx_conv.installed_semantics()
# onnxruntime's CPU Resize implements cubic only on 2-D inputs or 4-D ones resizing the inner two axes (measured
# on 1.19.2 and 1.32: "upsamplebase.h ScalesValidation 'Cubic' mode only support(s) ..."): those draws are skipped
UNSUPPORTED_BY_ORT = re.compile(r"ScalesValidation '\w+' mode only support")
OTHER = {"ort-1.19": "ort-1.27", "ort-1.27": "ort-1.19"}[INSTALLED]


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
        res = to_canonical(r, semantics=INSTALLED)
    except DescError as e:    # only the documented empty-output rule is skipped; any other refusal fails (issue 21)
        if not empty_output(e, "scales"):
            raise
        assume(False)
    x = np.random.default_rng(seed).standard_normal(r.input_shape).astype(np.float32)
    try:
        theirs = ort_resize(r, x)
    except Exception as e:     # only onnxruntime's documented limits are skipped (issue 21); any other error fails
        if not UNSUPPORTED_BY_ORT.search(str(e)):
            raise
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
    np.testing.assert_allclose(resize(x.astype(np.float64), to_canonical(r, semantics=INSTALLED)), theirs,
                               rtol=1e-6, atol=1e-6)


def _probe_session(ctm: str, nearest: str):
    """A 1-D nearest Resize with X, roi and sizes as run-time inputs: one session for many probes."""
    node = helper.make_node("Resize", ["X", "roi", "", "sizes"], ["Y"], mode="nearest",
                            coordinate_transformation_mode=ctm, nearest_mode=nearest, extrapolation_value=-1.0)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n"]),
                                       helper.make_tensor_value_info("roi", TensorProto.FLOAT, [2]),
                                       helper.make_tensor_value_info("sizes", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil"])
@pytest.mark.parametrize("ctm", CTMS)
def test_nearest_tie_rule_matches_installed_onnxruntime(ctm, nearest):
    """Every 1-D nearest resize 1..16 -> 1..24 (tf_crop_and_resize: roi [0.1, 0.9]): the installed runtime's index
    choice equals ours under its semantics. The other runtime rule is wrong somewhere here (so this can fail)."""
    s, roi = _probe_session(ctm, nearest), np.array([0.1, 0.9] if ctm == "tf_crop_and_resize" else [0, 1], np.float32)
    mismatches = {INSTALLED: 0, OTHER: 0}
    for n_in in range(1, 17):
        x = np.arange(n_in, dtype=np.float32)
        for n_out in range(1, 25):
            theirs = s.run(None, {"X": x, "roi": roi, "sizes": np.array([n_out], np.int64)})[0]
            r = OnnxResize([n_in], {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": nearest,
                                    "extrapolation_value": -1.0}, sizes=[n_out],
                           roi=list(map(float, roi)) if ctm == "tf_crop_and_resize" else None)
            for semantics in mismatches:
                ours = resize(x.astype(np.float64), to_canonical(r, semantics))
                mismatches[semantics] += not np.array_equal(ours, theirs)
    assert mismatches[INSTALLED] == 0, f"onnxruntime {ort.__version__} vs {INSTALLED}: {mismatches}"
    if (ctm, nearest) == ("asymmetric", "round_prefer_ceil"):      # e.g. 7 -> 2: x(1) = float32 3.4999998
        assert mismatches[OTHER] > 0, f"the probe grid should tell {INSTALLED} from {OTHER}: {mismatches}"


def test_the_issue_example_20_to_6():
    """half_pixel, round_prefer_ceil, 20 -> 6: x(4) = 14.5 exactly, float32 14.4999995. onnxruntime <= 1.26
    reads 14, >= 1.27 (and the spec) 15; the installed one agrees with its semantics."""
    r = OnnxResize([20], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, sizes=[6])
    x = np.arange(20, dtype=np.float32)
    picks = {sem: resize(x.astype(np.float64), to_canonical(r, sem))[4] for sem in onnx_conv.SEMANTICS}
    assert picks == {"ort-1.19": 14, "ort-1.27": 15, "onnx-spec": 15}
    assert ort_resize(r, x)[4] == picks[INSTALLED]


def test_semantics_follow_the_installed_version():
    assert onnx_conv.installed_runtime() == ort.__version__
    assert [onnx_conv.semantics_of(v) for v in ("1.19.2", "1.26.0", "1.27.0", "1.32.0", "2.0")] == \
        ["ort-1.19", "ort-1.19", "ort-1.27", "ort-1.27", "ort-1.27"]


TIE_CASES = [([20], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, [6], None),
             ([7], {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                    "nearest_mode": "round_prefer_ceil"}, [2], None),
             ([20], {"mode": "nearest", "nearest_mode": "round_prefer_floor"}, [26], None),
             ([12], {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize",
                     "nearest_mode": "round_prefer_ceil"}, [11], [0.1, 0.9])]


@pytest.mark.parametrize("shape,attrs,sizes,roi", TIE_CASES)
def test_lowered_tie_gradient_is_the_transpose_of_the_runtime_resize(shape, attrs, sizes, roi):
    """Entry by entry: the lowered ResizeGrad run on every output basis vector equals the installed runtime's own
    Resize run on every input basis vector, transposed (batched along N, which neither resizes)."""
    n_in, n_out = shape[0], sizes[0]
    full_roi = None if roi is None else [0.0, 0.0, roi[0], 1.0, 1.0, roi[1]]
    fwd = OnnxResize([n_in, 1, n_in], attrs, roi=full_roi, sizes=[n_in, 1, n_out])
    a = ort_resize(fwd, np.eye(n_in, dtype=np.float32).reshape(n_in, 1, n_in)).reshape(n_in, n_out).T   # A[o, i]
    grad = OnnxResize([n_out, 1, n_in], attrs, roi=full_roi, scales=None, sizes=[n_out, 1, n_out],
                      op_type="ResizeGrad")
    model = build_resize_grad(grad, lowered=True, semantics=INSTALLED)
    g = run_model(model, {"dY": np.eye(n_out, dtype=np.float32).reshape(n_out, 1, n_out),
                          "X": np.zeros((n_out, 1, n_in), np.float32)})[0].reshape(n_out, n_in)   # G[i, o] at [o, i]
    np.testing.assert_array_equal(g, a)            # G == A^T


def test_keep_aspect_ratio_lengths_round_halves_up():
    """X [2, 4], sizes [5, 5], not_larger: scale 1.25, 2 * 1.25 = 2.5 -> 3 (onnxruntime's std::round), not 2."""
    r = OnnxResize([2, 4], {"mode": "linear", "keep_aspect_ratio_policy": "not_larger"}, sizes=[5, 5], opset=19)
    assert to_canonical(r, semantics=INSTALLED).out_shape == (3, 5)
    assert ort_resize(r, np.ones((2, 4), np.float32)).shape == (3, 5)


def test_a_model_at_the_newest_opset_lowers_and_runs():
    """ResizeGrad in a model stamped with the installed onnx's newest ai.onnx opset: the lowering keeps the
    model's IR version and opsets, and the runtime runs it when it supports that opset."""
    newest = onnx.defs.onnx_opset_version()
    model = build_resize_grad(OnnxResize([1, 1, 4, 6], {"mode": "linear"}, scales=[1, 1, 2, 1.5],
                                         op_type="ResizeGrad"))
    model.opset_import[0].version = newest
    lowered, report = lower(model, semantics=INSTALLED)
    assert [o.version for o in lowered.opset_import if o.domain == ""] == [newest]
    assert lowered.ir_version == model.ir_version and report[0].semantics == INSTALLED
    onnx.checker.check_model(lowered, full_check=True)
    dy = np.random.default_rng(0).standard_normal((1, 1, 8, 9)).astype(np.float32)
    try:
        got = run_model(lowered, {"dY": dy, "X": np.zeros((1, 1, 4, 6), np.float32)})[0]
    except Exception as e:      # e.g. onnxruntime 1.19.2 loads ai.onnx <= 21 only: skip on that message only
        if not refuses_opset(e, newest):
            raise
        pytest.skip(f"onnxruntime {ort.__version__} does not run ai.onnx {newest}: {str(e)[:120]}")
    want = run_model(lower(build_resize_grad(OnnxResize([1, 1, 4, 6], {"mode": "linear"}, scales=[1, 1, 2, 1.5],
                                                                   op_type="ResizeGrad")), semantics=INSTALLED)[0],
                     {"dY": dy, "X": np.zeros((1, 1, 4, 6), np.float32)})[0]
    np.testing.assert_array_equal(got, want)
