"""Build, lower and run ResizeGrad with real onnxruntime sessions, checker and shape inference."""
import os

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from conformance.onnx_cases import case_to_resize, onnx_resize_cases
from conformance.reference import resize_grad
from dml_desc import DescError
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from onnx_ops import build_resize, build_resize_grad, lower, lower_file, run_model

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

CASES = onnx_resize_cases()


def grad_case(case):
    r = case_to_resize(case)
    r.op_type = "ResizeGrad"
    return r


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_grad_is_the_transpose_of_ort_resize(case):
    r = grad_case(case)
    res = to_canonical(r, semantics=INSTALLED)
    # keep_aspect_ratio_policy without sizes (the gradient builder drops them) now lowers, the scale recovered
    # from X's and dY's shapes (issue 25); only a shape pair two scales explain is refused, by name
    try:
        # the node read back (build --lowered: test_one_lowering)
        lowered = lower(build_resize_grad(r), semantics=INSTALLED).model
    except DescError as e:
        assert r.attr("keep_aspect_ratio_policy", "stretch") != "stretch" and "two scales" in str(e), e
        return
    assert not any(n.op_type == "ResizeGrad" for n in lowered.graph.node)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(res.in_shape).astype(np.float32)
    dy = rng.standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": x})[0]
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=1e-5, atol=1e-5)
    r.attributes.pop("extrapolation_value", None)    # a constant fill is not part of the linear map
    y = run_model(build_resize(r), {"X": x})[0]      # onnxruntime's own CPU Resize kernel
    lhs, rhs = np.sum(y.astype(np.float64) * dy), np.sum(x.astype(np.float64) * dx)
    assert abs(lhs - rhs) <= 1e-4 * (1 + abs(lhs))


def test_models_check_and_are_stamped_for_ort_training():
    r = OnnxResize([1, 2, 5, 7], {"mode": "cubic", "exclude_outside": 1}, scales=[1, 1, 1.6, 0.6],
                   op_type="ResizeGrad")
    for model in (build_resize_grad(r), build_resize_grad(r, lowered=True, semantics=INSTALLED), build_resize(r)):
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        assert model.ir_version <= 10
        assert all(o.version <= 21 for o in model.opset_import if o.domain in ("", "ai.onnx"))
        assert [i.name for i in inferred.graph.input][:1] in (["dY"], ["X"])
    node = build_resize_grad(r).graph.node[0]
    assert (node.domain, list(node.input), list(node.output)) == ("com.microsoft", ["dY", "X", "", "scales"], ["dX"])


def test_native_resize_grad_has_no_cpu_kernel_and_lowering_fixes_it():
    import onnxruntime as ort
    model = build_resize_grad(OnnxResize([1, 1, 4, 4], {"mode": "linear"}, scales=[1, 1, 2, 2], op_type="ResizeGrad"))
    with pytest.raises(Exception, match="ResizeGrad"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lowered, report = lower(model, semantics=INSTALLED)
    assert len(report) == 1 and report[0].forms
    out = run_model(lowered, {"dY": np.ones((1, 1, 8, 8), np.float32), "X": np.zeros((1, 1, 4, 4), np.float32)})[0]
    np.testing.assert_allclose(out, np.full((1, 1, 4, 4), 4.0), rtol=1e-6)


@pytest.mark.parametrize("dtype,tol", [(np.float16, 2e-3), (np.float64, 1e-12)])
def test_dtypes(dtype, tol):
    r = OnnxResize([2, 3, 6, 9], {"mode": "linear"}, scales=[1, 1, 1.5, 0.5], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    dy = np.random.default_rng(3).standard_normal(res.out_shape).astype(dtype)
    got = run_model(build_resize_grad(r, dtype, lowered=True,
                                      semantics=INSTALLED), {"dY": dy, "X": np.zeros(res.in_shape, dtype)})[0]
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), resize_grad(dy.astype(np.float64), res), rtol=tol, atol=tol)


def test_bitwise_deterministic_across_runs_and_threads():
    r = OnnxResize([4, 8, 33, 47], {"mode": "cubic"}, sizes=[4, 8, 70, 20], op_type="ResizeGrad")
    model = build_resize_grad(r, lowered=True, semantics=INSTALLED)
    dy = np.random.default_rng(5).standard_normal((4, 8, 70, 20)).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros((4, 8, 33, 47), np.float32)}
    outs = [run_model(model, feeds, threads=t)[0] for t in (1, 2, 1, 2)]
    for o in outs[1:]:
        assert o.tobytes() == outs[0].tobytes()


def _user_model():
    """A user's graph: Relu -> ResizeGrad -> Neg, with metadata and an unrelated initializer."""
    nodes = [helper.make_node("Relu", ["a"], ["dY"], name="relu"),
             helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft",
                              name="rg", mode="nearest"),
             helper.make_node("Neg", ["dX"], ["out"], name="neg")]
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales"),
             numpy_helper.from_array(np.arange(1000, dtype=np.float32), "unused_big")]
    g = helper.make_graph(nodes, "user", [helper.make_tensor_value_info("a", 1, [1, 2, 4, 6]),
                                          helper.make_tensor_value_info("X", 1, [1, 2, 2, 2])],
                          [helper.make_tensor_value_info("out", 1, [1, 2, 2, 2])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=8)
    helper.set_model_props(m, {"author": "me", "note": "keep"})
    return m


def test_lower_keeps_everything_else():
    m = _user_model()
    lowered, report = lower(m, semantics=INSTALLED)
    names = [n.name for n in lowered.graph.node]
    assert names[0] == "relu" and names[-1] == "neg"
    inits = {t.name for t in lowered.graph.initializer}
    assert {"scales", "unused_big"} <= inits
    assert {p.key: p.value for p in lowered.metadata_props} == {"author": "me", "note": "keep"}
    assert list(lowered.opset_import) == list(m.opset_import)
    assert [report[0].node] == ["rg"]
    a = np.random.default_rng(0).standard_normal((1, 2, 4, 6)).astype(np.float32)
    out = run_model(lowered, {"a": a, "X": np.zeros((1, 2, 2, 2), np.float32)})[0]
    res = to_canonical(OnnxResize([1, 2, 2, 2], {"mode": "nearest"}, scales=[1, 1, 2, 3]), semantics=INSTALLED)
    np.testing.assert_allclose(out, -resize_grad(np.maximum(a, 0).astype(np.float64), res), rtol=1e-6)


def test_lower_file_in_place_with_external_data(tmp_path):
    m = _user_model()
    path = tmp_path / "m.onnx"
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="m.data",
              size_threshold=100)
    report = lower_file(str(path), str(path), semantics=INSTALLED)
    assert len(report) == 1
    again = onnx.load(str(path))
    assert np.array_equal(numpy_helper.to_array(next(t for t in again.graph.initializer if t.name == "unused_big")),
                          np.arange(1000, dtype=np.float32))
    other = tmp_path / "sub"
    other.mkdir()
    lower_file(str(path), str(other / "x.onnx"), semantics=INSTALLED)
    assert len(onnx.load(str(other / "x.onnx")).graph.initializer) == len(again.graph.initializer)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("change,field", [
    ({"mode": "bicubic"}, "mode"), ({"coordinate_transformation_mode": "edge"}, "coordinate_transformation_mode"),
    ({"scales": [1, 2]}, "scales"), ({"x_rank": 3}, "dY"),
])
def test_malformed_node_names_node_and_attribute(change, field):
    m = _user_model()
    rg = m.graph.node[1]
    if "mode" in change:
        rg.attribute[0].CopyFrom(helper.make_attribute("mode", change["mode"]))
    if "coordinate_transformation_mode" in change:
        rg.attribute.append(helper.make_attribute("coordinate_transformation_mode", "edge"))
    if "scales" in change:
        m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([1, 2], np.float32), "scales"))
    if "x_rank" in change:
        m.graph.input[1].CopyFrom(helper.make_tensor_value_info("X", 1, [2, 2, 2]))
    with pytest.raises(DescError) as info:
        lower(m, semantics=INSTALLED)
    assert "rg" in str(info.value) and field in str(info.value)


def test_unknown_rank_gives_a_clear_error():
    """Symbolic dims are read at run time (tests/test_dynamic.py); a rank nothing can give is refused."""
    m = _user_model()
    m.graph.input[0].CopyFrom(helper.make_tensor_value_info("a", 1, None))
    m.graph.input[1].CopyFrom(helper.make_tensor_value_info("X", 1, None))
    del m.graph.node[1].input[2:]                  # no scales: nothing gives the rank
    with pytest.raises(DescError, match=r"node rg\.X.*no known rank"):
        lower(m, semantics=INSTALLED)


FORMS = [  # (mode, per-axis scale, shape, the forms the lowering must pick)
    ("nearest", 2.0, [2, 3, 8, 12], {"kron-sum", "kron-matmul 12->6"}),
    ("nearest", 3.0, [2, 3, 8, 12, 4], {"kron-sum", "kron-matmul 12->4"}),
    ("nearest", 2.0, [2, 3, 8, 40], {"kron-sum", "kron-matmul 16->8"}),
    ("nearest", 0.5, [2, 3, 8, 12], {"kron-gather", "kron-matmul 6->12"}),        # phases of weight 0
    ("nearest", 1 / 3, [2, 3, 9, 6], {"kron-gather", "kron-matmul 2->6"}),
    ("linear", 0.5, [2, 3, 8, 12, 4], {"kron-gather", "kron-matmul 2->4"}),
    ("linear", 0.5, [1, 2, 6, 64], {"kron-gather", "kron-matmul 8->16"}),
    ("cubic", 0.25, [2, 3, 12], {"kron-matmul 3->12"}),                           # any kernel on the last axis
    ("nearest", 2.0, [2, 3, 8, 11], {"conv(ones)"}),                            # 11 blocks: no good chunk
    ("cubic", 0.25, [2, 3, 8, 12], {"conv_transpose"}),                            # uneven weights off the last axis
    ("linear", 2.0, [2, 3, 8, 12], {"Resize(linear, antialias)"}),
    ("linear", 3.0, [2, 3, 12], {"Resize(linear, antialias)"}),     # not 5-D: tests/test_cuda_and_portability.py
    ("nearest", 1.5, [2, 3, 8, 12], {"dense 1x12->8", "dense 1x18->12"}),   # cost model: tests/test_forms.py
    ("cubic", 2.0, [2, 3, 8, 12], {"dense 1x16->8", "dense 1x24->12"}),
]


@pytest.mark.parametrize("mode,scale,shape,forms", FORMS)
def test_each_fast_form_is_picked_and_exact(mode, scale, shape, forms):
    r = OnnxResize(shape, {"mode": mode}, scales=[1.0, 1.0] + [scale] * (len(shape) - 2), op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(build_resize_grad(r), semantics=INSTALLED)
    assert set(report[0].forms) == forms
    dy = np.random.default_rng(11).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))   # f32 accumulation


@pytest.mark.parametrize("mode,scale", [("nearest", 2.0), ("nearest", 0.5), ("linear", 2.0), ("linear", 0.5)])
def test_float64_models_use_forms_onnxruntime_implements(mode, scale):
    r = OnnxResize([1, 2, 8, 8], {"mode": mode}, scales=[1.0, 1.0, scale, scale], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    model = build_resize_grad(r, np.float64, lowered=True, semantics=INSTALLED)
    assert not {n.op_type for n in model.graph.node} & {"Conv", "ConvTranspose", "Resize"}
    dy = np.random.default_rng(4).standard_normal(res.out_shape)
    dx = run_model(model, {"dY": dy, "X": np.zeros(res.in_shape)})[0]
    np.testing.assert_allclose(dx, resize_grad(dy, res), rtol=1e-12, atol=1e-12)


def test_directmlx_style_defaults():
    from dml_desc import DML_RESAMPLE_GRAD_OPERATOR_DESC, half_pixel
    d = half_pixel(DML_RESAMPLE_GRAD_OPERATOR_DESC, "LINEAR", [1, 1, 4, 6], [1, 1, 8, 3])
    assert d.scales == (1.0, 1.0, 2.0, 0.5)
    assert d.input_pixel_offsets == (0.5,) * 4 and d.output_pixel_offsets == (-0.5,) * 4
    assert d.output_gradient_tensor.sizes == (1, 1, 4, 6) and d.input_gradient_tensor.sizes == (1, 1, 8, 3)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_edge_piles_keep_the_gather_table_narrow(mode):
    """A DirectML descriptor whose Scales do not match its sizes piles outputs onto the edge input:
    the lowering keeps the table narrow (linear cost) and stays exact."""
    from dml_desc import AxisMap, Resampling
    from onnx_ops.build import build_lowered
    n = 400
    res = Resampling((AxisMap.identity(2), AxisMap(n, n, 0.5, 0.5, -0.5)), mode)
    model = build_lowered(res)
    sizes = [numpy_helper.to_array(t).size for t in model.graph.initializer]
    assert sum(sizes) < 20 * n                     # a padded table would hold ~n*n/2 entries
    dy = np.random.default_rng(2).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(model, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("opset", [10, 11, 12, 17])
@pytest.mark.parametrize("mode,scales", [("nearest", [1, 1, 2, 3]), ("linear", [1, 1, 0.5, 2]),
                                         ("nearest", [1, 1, 400 / 3, 1])])
def test_lowering_emits_ops_valid_at_the_models_opset(opset, mode, scales):
    shape = [1, 2, 3, 4]
    node = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", mode=mode)
    r = OnnxResize(shape, {"mode": mode}, scales=scales, opset=opset)
    res = to_canonical(r, semantics=INSTALLED)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("dY", 1, list(res.out_shape)),
                                        helper.make_tensor_value_info("X", 1, shape)],
                          [helper.make_tensor_value_info("dX", 1, shape)],
                          [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=7)
    lowered, _ = lower(m, semantics=INSTALLED)
    onnx.checker.check_model(lowered)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=1e-5, atol=1e-5)


def test_resize_grad_in_a_subgraph_without_rank_is_refused_by_name():
    inner = helper.make_graph([helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"],
                                                domain="com.microsoft", name="inner_rg", mode="nearest")],
                              "body", [], [helper.make_tensor_value_info("dX", 1, None)])
    outer = helper.make_node("If", ["cond"], ["out"], name="branch", then_branch=inner, else_branch=inner)
    g = helper.make_graph([outer], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("out", 1, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(DescError, match=r"branch\.(then|else)_branch/node inner_rg\.X.*no known rank"):
        lower(m, semantics=INSTALLED)


@pytest.mark.parametrize("mode,scale", [("nearest", 2.0), ("linear", 2.0), ("linear", 0.5), ("nearest", 1.5)])
def test_fast_forms_are_bitwise_deterministic_across_threads(mode, scale):
    r = OnnxResize([4, 16, 24, 24], {"mode": mode}, scales=[1.0, 1.0, scale, scale], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    model = build_resize_grad(r, lowered=True, semantics=INSTALLED)
    dy = np.random.default_rng(9).standard_normal(res.out_shape).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}
    outs = [run_model(model, feeds, threads=t)[0].tobytes() for t in (1, 2, 1, 2)]
    assert len(set(outs)) == 1


def test_lowering_names_never_collide_with_the_users():
    generated = [o for n in lower(_user_model(),
                                  semantics=INSTALLED)[0].graph.node for o in n.output if o not in ("dY", "dX", "out")]
    assert generated
    m = _user_model()                                   # the user already has a tensor of that exact name
    m.graph.node.append(helper.make_node("Identity", ["a"], [generated[0]], name="user_node"))
    m.graph.output.append(helper.make_tensor_value_info(generated[0], 1, [1, 2, 4, 6]))
    lowered, _ = lower(m, semantics=INSTALLED)
    produced = [o for n in lowered.graph.node for o in n.output]
    assert len(produced) == len(set(produced))
    onnx.checker.check_model(lowered)
    a = np.random.default_rng(0).standard_normal((1, 2, 4, 6)).astype(np.float32)
    outs = run_model(lowered, {"a": a, "X": np.zeros((1, 2, 2, 2), np.float32)})
    np.testing.assert_array_equal(outs[1], a)


@pytest.mark.parametrize("mode,scale", [("nearest", 2.0), ("linear", 0.5)])
def test_kron_form_keeps_non_finite_values_non_finite_within_one_chunk(mode, scale):
    """The kron MatMul multiplies by the zeros of its block-diagonal matrix, so an inf or NaN in dY turns
    the other outputs of its chunk into NaN (0 * inf). Nothing non-finite ever becomes finite, and
    nothing leaks past the chunk."""
    r = OnnxResize([1, 2, 8, 40], {"mode": mode}, scales=[1.0, 1.0, scale, scale], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(build_resize_grad(r), semantics=INSTALLED)
    chunk = int(report[0].forms[-1].split("->")[1])            # dX columns per MatMul row
    dy = np.random.default_rng(5).standard_normal(res.out_shape).astype(np.float32)
    dy[0, 0, 2, 3], dy[0, 1, 1, 13] = np.inf, np.nan
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    bad_want, bad_dx = ~np.isfinite(want), ~np.isfinite(dx)
    assert bad_want.any() and np.all(bad_dx[bad_want])
    row_chunks = bad_want.reshape(*want.shape[:-1], -1, chunk).any(axis=-1, keepdims=True)
    assert not np.any(bad_dx & ~np.broadcast_to(row_chunks, (*want.shape[:-1], want.shape[-1] // chunk, chunk))
                      .reshape(want.shape))
    np.testing.assert_allclose(dx[~bad_dx], want[~bad_dx], rtol=0, atol=1e-5)


@st.composite
def integer_factor_grads(draw):
    """ResizeGrads with integer up / down factors on any axes, the kron form's domain, and their near misses."""
    rank = draw(st.integers(1, 5))
    factors = [draw(st.sampled_from([1, 1, 2, 3, 4, 0.5, 1 / 3, 0.25])) for _ in range(rank)]
    blocks = [draw(st.integers(1, 9)) for _ in range(rank)]
    shape = [b * (round(1 / f) if f < 1 else 1) + draw(st.sampled_from([0, 0, 0, 1])) for b, f in zip(blocks, factors)]
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    ctm = draw(st.sampled_from(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    elif draw(st.booleans()):
        attrs["antialias"] = 1
    return OnnxResize(shape, attrs, scales=[float(f) for f in factors], op_type="ResizeGrad")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(integer_factor_grads(), st.integers(0, 1000))
def test_lowering_of_integer_factors_is_the_reference_gradient(r, seed):
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(build_resize_grad(r), semantics=INSTALLED)
    dy = np.random.default_rng(seed).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=2e-6 * max(1.0, np.abs(want).max()), err_msg=str(report))


@pytest.mark.parametrize("mode,scale,shape,form", [
    ("nearest", 2.0, [1, 2, 8, 11], "conv(ones)"), ("cubic", 0.25, [1, 2, 8, 12], "conv_transpose"),
    ("linear", 2.0, [1, 2, 8, 12], "Resize(linear, antialias)")])   # MatMul forms: tests/test_forms.py
def test_other_forms_keep_the_references_non_finite_pattern(mode, scale, shape, form):
    r = OnnxResize(shape, {"mode": mode}, scales=[1.0, 1.0, scale, scale], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(build_resize_grad(r), semantics=INSTALLED)
    assert report[0].forms[0] == form
    dy = np.ones(res.out_shape, np.float32)
    dy[0, 0, 1, 1], dy[0, 1, 1, 1] = np.inf, np.nan
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_array_equal(np.isfinite(dx), np.isfinite(want))


@pytest.mark.parametrize("mode,scales,forms,ops", [
    ("nearest", [1, 1, 2, 1], ("kron-sum",), ["Reshape", "ReduceSum"]),
    ("linear", [1, 1, 0.5, 1], ("kron-gather",), ["Mul", "Gather"]),          # the weight scales dY, the smaller side
    ("linear", [1, 0.5, 1, 0.5], ("kron-gather", "kron-matmul 3->6"), ["MatMul", "Gather"]),
    ("nearest", [1, 1, 2, 0.5], ("kron-sum", "kron-matmul 3->6"), ["MatMul", "Reshape", "ReduceSum"])])
def test_kron_form_on_some_axes(mode, scales, forms, ops):
    r = OnnxResize([2, 4, 8, 6], {"mode": mode}, scales=[float(s) for s in scales], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(build_resize_grad(r), semantics=INSTALLED)
    assert report[0].forms == forms and [n.op_type for n in lowered.graph.node] == ops
    dy = np.random.default_rng(3).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=0, atol=1e-6)
