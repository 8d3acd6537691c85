"""Lowering with shapes or scales known only at run time: symbolic batch / channels keep the static forms,
symbolic resized dims and run-time scales take the in-graph path (onnx_ops.forms.dynamic); every opset, functions,
subgraphs, node names, determinism and bad input (the band form: test_dynamic_band.py). Real onnxruntime
sessions, onnx's checker."""
import os

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from conformance.reference import resize, resize_grad
from dml_desc import DescError
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from onnx_ops import lower, run_model
from onnx_ops.model import graphs
from onnx_ops.run import session
from tests.helpers_dynamic import F32, GENERAL_PATH_OPS, grad_model, ops, out_shape, reference
from tests.helpers_skips import empty_output, refuses_opset

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

PROBE_OPS = {"EyeLike", "Resize", "MatMul"}


# ---- symbolic dims the node does not resize: the static forms, one model for every batch size --------

STATIC = [  # (mode, scales, X's dims: strings are symbolic)
    ("linear", [1, 1, 2, 2], ["N", 3, 6, 8]),
    ("nearest", [1, 1, 2, 2], ["N", "C", 6, 8]),
    ("nearest", [1, 1, 0.5, 0.5], ["N", "C", 6, 8]),     # C symbolic: no depthwise Conv / ConvTranspose
    ("nearest", [1, 1, 0.5, 0.5], ["N", 3, 6, 8]),
    ("linear", [1, 1, 3, 3], ["N", 3, 6, 8]),
    ("cubic", [1, 1, 1.5, 0.75], ["N", "C", 6, 8]),
]


@pytest.mark.parametrize("mode,scales,x_dims", STATIC)
def test_symbolic_batch_and_channels_keep_the_static_forms(mode, scales, x_dims):
    attrs = {"mode": mode}
    dy_dims = [d if isinstance(d, str) else None for d in x_dims[:2]] + ["H2", "W2"]
    model, report = lower(grad_model(attrs, x_dims, dy_dims, scales), semantics=INSTALLED)
    onnx.checker.check_model(model, full_check=True)
    fixed = [2 if isinstance(d, str) else d for d in x_dims]
    _, static_report = lower(grad_model(attrs, fixed, list(out_shape(attrs, fixed, scales)), scales),
                             semantics=INSTALLED)
    assert not report[0].dynamic and not ops(model) & GENERAL_PATH_OPS
    if isinstance(x_dims[1], int):
        assert report[0].forms == static_report[0].forms          # the same fast forms as fully static shapes
    else:
        assert not {"Conv", "ConvTranspose"} & ops(model)         # their weights would bake C
    sess, rng = session(model), np.random.default_rng(0)
    for n, c in ((1, 3), (4, 3), (2, 5)):
        if x_dims[1] == 3 and c != 3:
            continue
        shape = [n, c] + x_dims[2:]
        dy = rng.standard_normal(out_shape(attrs, shape, scales)).astype(np.float32)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(got, reference(attrs, shape, dy, scales), rtol=1e-5, atol=1e-5)


# ---- symbolic resized dims: the in-graph taps against the reference (property test) -------------------

CTMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_crop_and_resize"]
SCALES = [0.25, 1 / 3, 0.5, 0.6, 0.75, 1.0, 1.1, 1.25, 1.5, 2.0, 7 / 3, 3.0]


@st.composite
def dynamic_cases(draw):
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": draw(st.sampled_from(CTMS))}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    else:
        attrs["antialias"] = draw(st.integers(0, 1))
    if mode == "cubic":
        attrs["exclude_outside"] = draw(st.integers(0, 1))
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
    rank = draw(st.sampled_from([3, 4]))
    by = draw(st.sampled_from(["scales", "run-time scales", "sizes"]))
    resized = [rank - 2, rank - 1] if rank == 4 else [rank - 1]
    scales = [1.0] * rank
    for a in resized:
        scales[a] = draw(st.sampled_from(SCALES))
    roi = None
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        starts = [0.0] * rank
        ends = [1.0] * rank
        for a in resized:
            starts[a] = draw(st.sampled_from([0.0, 0.1, 0.25, -0.2]))
            ends[a] = draw(st.sampled_from([1.0, 0.8, 0.6, 1.3]))
        roi = starts + ends
    shapes = []
    for _ in range(2):    # two run-time shapes through the same model
        shape = [draw(st.integers(1, 3)) for _ in range(rank - len(resized))] + \
            [draw(st.integers(1, 13)) for _ in resized]
        sizes = None
        if by == "sizes":
            sizes = list(shape)
            for a in resized:
                sizes[a] = draw(st.integers(1, 13))
        shapes.append((shape, sizes))
    return attrs, rank, by, scales, roi, shapes


def run_dynamic_case(attrs, rank, by, scales, roi, shapes, threads=0):
    x_dims = [f"d{a}" for a in range(rank)]
    dy_dims = [f"d{a}" if by != "sizes" and scales[a] == 1 else f"o{a}" for a in range(rank)]
    model = grad_model(attrs, x_dims, dy_dims, None if by == "sizes" else scales, roi,
                       run_time=("scales",) if by == "run-time scales" else ())
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].dynamic == (by != "scales" or scales != [1.0] * rank)
    sess = session(lowered, threads=threads)
    results = []
    for shape, sizes in shapes:
        s = None if by == "sizes" else scales
        try:
            dy_shape = out_shape(attrs, shape, s, roi, sizes)
        except DescError as e:    # an empty output on some axis: no forward to differentiate; any other fails
            if not empty_output(e, "scales"):
                raise
            continue
        rng = np.random.default_rng(len(results))
        dy = rng.integers(-8, 9, dy_shape).astype(np.float32)         # sums exact in float32
        feeds = {"dY": dy, "X": np.zeros(shape, np.float32)}
        if by == "run-time scales":
            feeds["scales"] = np.asarray(scales, np.float32)
        got = sess.run(None, feeds)[0]
        results.append((got, reference(attrs, shape, dy, s, roi, sizes)))
    return results


@settings(max_examples=int(os.environ.get("H9A_EXAMPLES", 70)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(dynamic_cases())
def test_dynamic_path_is_the_reference_gradient(case):
    attrs = case[0]
    try:
        results = run_dynamic_case(*case)
    except DescError as e:
        # issue 25: 4-D antialias tf_crop_and_resize where run-time scales or shapes cannot exclude onnxruntime's
        # channel-dependent NHWC kernel is refused at lowering time, by name (docs/adjoint.md)
        # (named by the roi where a crop outside the input makes onnxruntime extrapolate)
        assert case[1] == 4 and attrs.get("antialias") and e.field.endswith((".antialias", ".roi")), e
        return
    assume(results)           # every run-time shape empty: nothing was compared, so the example does not count
    for got, ref in results:
        if attrs["mode"] == "nearest":          # each dY entry lands on exactly one dX entry: exact placement
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-5 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("shape", [[2, 3, 17, 23], [4, 8, 61, 47]])     # one tile; several tiles and padding
def test_dynamic_path_is_bitwise_deterministic_across_runs_and_threads(shape):
    case = ({"mode": "cubic"}, 4, "scales", [1, 1, 1.7, 0.6], None, [(shape, None)])
    runs = [run_dynamic_case(*case, threads=t)[0][0] for t in (1, 2, 4, 1, 4, 2)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs[1:])


def _forward_jacobian(attrs, shape, scales, opset):
    """onnxruntime's own Resize on every basis input: J[o, j], dY entry o's weight on X entry j."""
    graph = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)], "f",
                              [helper.make_tensor_value_info("x", F32, None)],
                              [helper.make_tensor_value_info("y", F32, None)],
                              [numpy_helper.from_array(np.asarray(scales, np.float32), "s")])
    sess = session(helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", opset)]))
    basis = np.eye(int(np.prod(shape)), dtype=np.float32)
    return np.stack([sess.run(None, {"x": e.reshape(shape)})[0].ravel() for e in basis], axis=1)


@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"])
@pytest.mark.parametrize("exclude_outside, a", [(0, -0.75), (1, -0.5)])
@pytest.mark.parametrize("scale", [1.25, 1.5, 1.7])
def test_cubic_taps_are_the_forwards_own_weights_bit_for_bit(ctm, exclude_outside, a, scale):
    """Plain cubic on one axis with a scale in (1, 2): the probe reads the weights without stretching another axis
    (dynamic_taps.columns_probe; the planes stretched h to 2, whose cubic weights moved them by a rounding), so the
    gradient of each one-hot dY is the forward's Jacobian row, bit for bit, edges included."""
    attrs = {"mode": "cubic", "coordinate_transformation_mode": ctm, "exclude_outside": exclude_outside,
             "cubic_coeff_a": a}
    scales, opset = [1, 1, 1, scale], 19
    lowered, _ = lower(grad_model(attrs, ["N", "C", "H", "W"], ["N", "C", "H", "W2"], scales, opset=opset),
                       semantics=INSTALLED)
    sess = session(lowered)
    for shape in ([1, 1, 2, 7], [1, 1, 1, 13]):
        jac = _forward_jacobian(attrs, shape, scales, opset)
        dy_shape = out_shape(attrs, shape, scales)
        for o in range(jac.shape[0]):
            dy = np.zeros(jac.shape[0], np.float32)
            dy[o] = 1
            got = sess.run(None, {"dY": dy.reshape(dy_shape), "X": np.zeros(shape, np.float32)})[0]
            assert got.ravel().tobytes() == jac[o].tobytes(), (shape, o, got.ravel(), jac[o])


# ---- scales read at run time ------------------------------------------------------------------------

def test_scales_graph_input_is_read_at_run_time_not_baked():
    """An initializer that is also a graph input is a default: the value fed at run time wins."""
    attrs = {"mode": "linear"}
    model = grad_model(attrs, [1, 2, 6, 6], [1, 2, "H", "W"], [1, 1, 2, 2])
    model.graph.input.append(helper.make_tensor_value_info("scales", F32, [4]))
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].dynamic
    sess = session(lowered)
    for scales in ([1, 1, 2, 2], [1, 1, 0.5, 1.5]):
        shape = [1, 2, 6, 6]
        dy = np.random.default_rng(1).standard_normal(out_shape(attrs, shape, scales)).astype(np.float32)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32), "scales": np.float32(scales)})[0]
        np.testing.assert_allclose(got, reference(attrs, shape, dy, scales), rtol=1e-5, atol=1e-5)


def test_scales_computed_in_the_graph_are_read_at_run_time():
    attrs = {"mode": "nearest"}
    model = grad_model(attrs, [1, 1, 4, 4], [1, 1, "H", "W"], [1, 1, 1, 1], run_time=("scales",))
    model.graph.input[2].name = "s"
    model.graph.node.insert(0, helper.make_node("Mul", ["s", "two"], ["scales"]))
    model.graph.initializer.append(numpy_helper.from_array(np.float32([1, 1, 2, 3]), "two"))
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].dynamic
    dy = np.arange(8 * 12, dtype=np.float32).reshape(1, 1, 8, 12)
    got = run_model(lowered, {"dY": dy, "X": np.zeros((1, 1, 4, 4), np.float32), "s": np.float32([1, 1, 1, 1])})[0]
    np.testing.assert_array_equal(got, reference(attrs, [1, 1, 4, 4], dy, [1, 1, 2, 3]))


def test_constant_value_floats_scales_are_a_constant():
    attrs = {"mode": "nearest"}
    model = grad_model(attrs, ["N", 2, 4, 4], ["N", 2, 8, 8], [1, 1, 2, 2], scales_as_constant=True)
    lowered, report = lower(model, semantics=INSTALLED)
    assert not report[0].dynamic and not ops(lowered) & GENERAL_PATH_OPS
    dy = np.arange(2 * 2 * 64, dtype=np.float32).reshape(2, 2, 8, 8)
    got = run_model(lowered, {"dY": dy, "X": np.zeros((2, 2, 4, 4), np.float32)})[0]
    np.testing.assert_array_equal(got, reference(attrs, [2, 2, 4, 4], dy, [1, 1, 2, 2]))


# ---- every opset; node names ----------------------------------------------------------------------

def _opsets():
    newest = onnx.defs.onnx_opset_version()
    return sorted({10, 11, 13, 17, 20, 21, newest})


def _runnable(opset: int) -> bool:
    import onnxruntime as ort
    from packaging.version import Version
    return opset <= 21 or Version(ort.__version__) >= Version("1.20")


OPSET_CASES = [("linear", [1, 1, 2, 1.5]), ("nearest", [1, 1, 2, 2]), ("cubic", [1, 1, 0.5, 0.5]),
               ("linear", [1, 1, 2, 2])]        # gather / dense, kron (ReduceSum), ConvTranspose, Resize forms


@pytest.mark.parametrize("opset", _opsets())
@pytest.mark.parametrize("dynamic,case", [(True, 0)] + [(False, k) for k in range(len(OPSET_CASES))])
def test_every_opset_lowers_checks_and_runs(opset, dynamic, case):
    mode, scales = OPSET_CASES[case]
    if opset == 10 and mode == "cubic":
        mode = "linear"                              # Resize-10 has nearest and linear only
    attrs = {"mode": mode}
    x_dims = ["N", 2, "H", "W"] if dynamic else ["N", 2, 6, 8]
    dy_dims = ["N", 2, "H2", "W2"] if dynamic else ["N", 2] + [int(n * s) for n, s in zip((6, 8), scales[2:])]
    ir = max(7, helper.find_min_ir_version_for([helper.make_opsetid("", opset)], ignore_unknown=True))
    model = grad_model(attrs, x_dims, dy_dims, scales, opset=opset, ir=ir)
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].dynamic == dynamic
    onnx.checker.check_model(lowered, full_check=True)
    if not _runnable(opset):
        import onnxruntime as ort
        pytest.skip(f"onnxruntime {ort.__version__} loads ai.onnx <= 21 only (the checker passed opset {opset})")
    import onnxruntime as ort
    try:
        sess = session(lowered)
    except ort.capi.onnxruntime_pybind11_state.Fail as e:
        if refuses_opset(e, opset):
            pytest.skip(f"this onnxruntime does not load opset {opset}: {e}")
        raise
    shape = [2, 2, 6, 8]
    r = OnnxResize(shape, attrs, None, scales, opset=min(opset, 21))      # Resize-19 is the newest schema
    dy = np.random.default_rng(0).standard_normal(to_canonical(r, semantics=INSTALLED).out_shape).astype(np.float32)
    got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
    np.testing.assert_allclose(got, resize_grad(dy.astype(np.float64), to_canonical(r, semantics=INSTALLED)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_every_lowered_node_is_named_after_its_resize_grad(dynamic):
    x_dims = [1, 2, "H", "W"] if dynamic else ["N", 2, 5, 6]
    model, _ = lower(grad_model({"mode": "cubic"}, x_dims, [1, 2, "H2", "W2"], [1, 1, 1.5, 0.5]), semantics=INSTALLED)
    names = [n.name for g in graphs(model.graph) for n in g.node]          # If branches included
    assert all(name.startswith("rg/lowered/") for name in names) and len(set(names)) == len(names)


# ---- functions and subgraphs ----------------------------------------------------------------------

def _function_model(x_rank_at_call=4):
    body = [helper.make_node("Constant", [], ["s"], value_floats=[1.0, 1.0, 2.0, 2.0]),
            helper.make_node("ResizeGrad", ["dy", "x", "", "s"], ["dx"], domain="com.microsoft", name="frg",
                             mode="linear")]
    f = helper.make_function("local", "GradUp", ["dy", "x"], ["dx"], body,
                             [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    call = helper.make_node("GradUp", ["dY", "X"], ["dX"], domain="local", name="call")
    dims = ["N", 2, "H", "W"][:x_rank_at_call]
    graph = helper.make_graph([call], "g", [helper.make_tensor_value_info("dY", F32, dims),
                                            helper.make_tensor_value_info("X", F32, dims)],
                              [helper.make_tensor_value_info("dX", F32, dims)])
    return helper.make_model(graph, ir_version=9, functions=[f],
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1),
                                            helper.make_opsetid("local", 1)])


def test_resize_grad_in_a_model_local_function_is_lowered_and_reported():
    lowered, report = lower(_function_model(), semantics=INSTALLED)
    assert [r.node for r in report] == ["frg"] and report[0].scope == "function local:GradUp/"
    assert not any(n.op_type == "ResizeGrad" for f in lowered.functions for n in f.node)
    onnx.checker.check_model(lowered, full_check=True)
    attrs = {"mode": "linear"}
    for shape in ([1, 2, 3, 4], [2, 2, 5, 2]):
        dy = np.random.default_rng(2).standard_normal(out_shape(attrs, shape, [1, 1, 2, 2])).astype(np.float32)
        got = run_model(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(got, reference(attrs, shape, dy, [1, 1, 2, 2]), rtol=1e-5, atol=1e-5)


def test_function_called_with_inputs_of_another_rank_is_refused():
    model = _function_model(3)          # 3-D inputs, but the function's scales have 4 entries
    with pytest.raises(DescError, match=r"function local:GradUp/node frg\.scales"):
        lower(model, semantics=INSTALLED)


def test_resize_grad_in_an_if_branch_is_lowered():
    inner = helper.make_graph([helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX_in"],
                                                domain="com.microsoft", name="inner_rg", mode="nearest")],
                              "body", [], [helper.make_tensor_value_info("dX_in", F32, ["N", 1, "H", "W"])])
    outer = helper.make_node("If", ["cond"], ["dX"], name="branch", then_branch=inner, else_branch=inner)
    graph = helper.make_graph([outer], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                                             helper.make_tensor_value_info("dY", F32, ["N", 1, "H2", "W2"]),
                                             helper.make_tensor_value_info("X", F32, ["N", 1, "H", "W"])],
                              [helper.make_tensor_value_info("dX", F32, ["N", 1, "H", "W"])],
                              [numpy_helper.from_array(np.float32([1, 1, 2, 2]), "scales")])
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17),
                                                                   helper.make_opsetid("com.microsoft", 1)])
    lowered, report = lower(model, semantics=INSTALLED)
    assert len(report) == 2 and {r.scope for r in report} == {"branch.then_branch/", "branch.else_branch/"}
    onnx.checker.check_model(lowered, full_check=True)
    dy = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    got = run_model(lowered, {"cond": np.array(True), "dY": dy, "X": np.zeros((1, 1, 4, 4), np.float32)})[0]
    np.testing.assert_array_equal(got, reference({"mode": "nearest"}, [1, 1, 4, 4], dy, [1, 1, 2, 2]))


# ---- bad input at run time: onnxruntime's own error, never a wrong result ---------------------------

def test_run_time_scales_of_the_wrong_length_fail_in_onnxruntime():
    lowered, _ = lower(grad_model({"mode": "linear"}, [1, 1, "H", "W"], [1, 1, "H2", "W2"], [1, 1, 2, 2],
                                  run_time=("scales",)), semantics=INSTALLED)
    sess = session(lowered)
    feeds = {"dY": np.zeros((1, 1, 8, 8), np.float32), "X": np.zeros((1, 1, 4, 4), np.float32)}
    for bad in ([1, 1, 2, 2, 1], [1, 2, 2]):
        with pytest.raises(Exception, match="(?i)reshape|shape|size"):
            sess.run(None, dict(feeds, scales=np.float32(bad)))


@pytest.mark.parametrize("scale,opset,dy_shape", [
    (2, 19, (1, 1, 8, 9)),                                   # the generic forms
    (1.5, 11, (1, 1, 6, 7)), (1.5, 11, (1, 1, 7, 6)),        # dense MatMuls
    (1.5, 17, (1, 1, 6, 7)), (1.5, 17, (1, 1, 7, 6)), (1.5, 17, (1, 1, 5, 6)),   # the band on H, dense on W
])
def test_dy_that_does_not_match_the_scales_fails_in_onnxruntime(scale, opset, dy_shape):
    lowered, report = lower(grad_model({"mode": "linear"}, [1, 1, "H", "W"], [1, 1, "H2", "W2"],
                                       [1, 1, scale, scale], opset=opset), semantics=INSTALLED)
    assert report[0].forms[0].endswith("or band") == (scale == 1.5 and opset == 17)
    with pytest.raises(Exception, match="(?i)matmul|shape|dimension"):
        run_model(lowered, {"dY": np.zeros(dy_shape, np.float32), "X": np.zeros((1, 1, 4, 4), np.float32)})


@pytest.mark.parametrize("elem,dtype,tol", [(TensorProto.FLOAT16, np.float16, 2e-3), (TensorProto.DOUBLE, np.float64,
                                                                                      1e-6)])
def test_dynamic_path_keeps_float16_and_double(elem, dtype, tol):
    attrs, scales = {"mode": "linear"}, [1, 1, 1.5, 0.5]
    model, report = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"], scales, elem=elem),
                          semantics=INSTALLED)
    assert report[0].dynamic
    onnx.checker.check_model(model, full_check=True)
    shape = [2, 2, 6, 9]
    dy = np.random.default_rng(3).standard_normal(out_shape(attrs, shape, scales)).astype(dtype)
    got = run_model(model, {"dY": dy, "X": np.zeros(shape, dtype)})[0]
    assert got.dtype == dtype      # double: weights are onnxruntime's float32 Resize weights, widened
    np.testing.assert_allclose(got.astype(np.float64), reference(attrs, shape, dy, scales), rtol=tol, atol=tol)


def test_dynamic_path_reports_the_run_time_tie_rule_and_refuses_onnx_spec_nearest():
    """The dynamic path runs the executing onnxruntime's Resize, so it follows that runtime's nearest ties."""
    model = grad_model({"mode": "nearest"}, [1, 1, "H", "W"], [1, 1, "H2", "W2"], [1, 1, 2, 2])
    _, report = lower(model, semantics=INSTALLED)
    assert report[0].semantics == "onnxruntime at run time"
    with pytest.raises(DescError, match=r"node rg\.semantics.*run time"):
        lower(model, semantics="onnx-spec")
    _, report = lower(grad_model({"mode": "linear"}, [1, 1, "H", "W"], [1, 1, "H2", "W2"], [1, 1, 2, 2]),
                      semantics="onnx-spec")              # no ties outside nearest: the same map
    assert report[0].dynamic


def test_function_called_with_different_ranks_is_refused_by_name():
    model = _function_model()
    model.graph.input.extend([helper.make_tensor_value_info("dY3", F32, ["N", 2, "W"]),
                              helper.make_tensor_value_info("X3", F32, ["N", 2, "W"])])
    model.graph.node.append(helper.make_node("GradUp", ["dY3", "X3"], ["dX3"], domain="local", name="call3"))
    model.graph.output.append(helper.make_tensor_value_info("dX3", F32, ["N", 2, "W"]))
    with pytest.raises(DescError, match=r"function GradUp\.dy.*different ranks.*call3"):
        lower(model, semantics=INSTALLED)


def test_tf_crop_antialias_follows_onnxruntime():
    """onnxruntime's antialias kernel copies an axis whose length does not change, but tf_crop_and_resize still
    writes extrapolation_value where that axis's coordinate leaves [0, in-1]. The dynamic path (onnxruntime's own
    Resize), the static lowering and the reference (to_canonical's map) are all its exact adjoint."""
    from onnx_ops import build_resize
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "antialias": 1}
    scales, roi, shape = [1, 1, 0.5, 1.1], [0, 0, 0.1, 0.2, 1, 1, 0.9, 1.1], [1, 2, 5, 6]
    lowered, _ = lower(grad_model(attrs, [1, 2, "H", "W"], [1, 2, "H2", "W2"], scales, roi), semantics=INSTALLED)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    y = run_model(build_resize(OnnxResize(shape, attrs, roi, scales, opset=19)), {"X": x})[0]
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": x})[0]
    lhs, rhs = np.sum(y.astype(np.float64) * dy), np.sum(x.astype(np.float64) * dx)
    assert abs(lhs - rhs) <= 1e-5 * (1 + abs(lhs))
    assert np.any(y[..., -1] == 0)         # onnxruntime extrapolated on the unchanged axis (W: 6 -> 6)
    res = to_canonical(OnnxResize(shape, attrs, roi, scales, opset=19), semantics=INSTALLED)
    np.testing.assert_allclose(resize(x.astype(np.float64), res), y, rtol=1e-5, atol=1e-6)   # the reference's map
    static, report = lower(grad_model(attrs, shape, list(y.shape), scales, roi), semantics=INSTALLED)
    assert not report[0].dynamic
    np.testing.assert_allclose(run_model(static, {"dY": dy, "X": x})[0], dx, rtol=1e-5, atol=1e-6)
