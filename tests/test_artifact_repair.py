"""The artifact repairs of onnx_ops.training, with plain onnx + onnxruntime (no torch, no onnxruntime.training),
so this runs in every environment:
- repair_eval_model: ORT's eval models of BatchNorm networks load and compute inference BatchNorm;
- repair_training_model: MaxPoolGrad with symbolic dims becomes ScatterElements(add), equal to NumPy's gradient."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from dml_desc.errors import DescError
from onnx_ops.training import repair_eval_model, repair_training_model

RNG = np.random.default_rng(0)
STATS = {"scale": RNG.uniform(0.5, 1.5, 4), "bias": RNG.standard_normal(4), "mean": RNG.standard_normal(4),
         "var": RNG.uniform(0.5, 1.5, 4)}
W = (RNG.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)


def eval_like(bn_node, extra_nodes=(), extra_outputs=()):
    """Conv -> BatchNorm -> Relu, shaped like an ORT eval model (parameters as graph inputs)."""
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]), bn_node,
             helper.make_node("Relu", ["bn"], ["y"], name="relu"), *extra_nodes]
    params = [helper.make_tensor_value_info(n, 1, [4]) for n in STATS]
    g = helper.make_graph(nodes, "eval", [helper.make_tensor_value_info("x", 1, ["N", 3, "H", "W"]),
                                          helper.make_tensor_value_info("W", 1, [4, 3, 3, 3]), *params],
                          [helper.make_tensor_value_info("y", 1, ["N", 4, "H", "W"]), *extra_outputs])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    model.metadata_props.add(key="kept", value="yes")
    return model


def ort_bn(training_mode=0):
    return helper.make_node("BatchNormalization", ["c", *STATS], ["bn", "running_mean_out", "running_var_out"],
                            name="bn0", epsilon=1e-3, momentum=0.9, training_mode=training_mode)


def bn_internal():
    return helper.make_node("BatchNormInternal", ["c", *STATS], ["bn", "rm", "rv", "saved_mean", "saved_inv_std"],
                            name="bn0", domain="com.microsoft", epsilon=1e-3, momentum=0.9, training_mode=1)


def feeds(n=2, h=5, w=7):
    x = RNG.standard_normal((n, 3, h, w)).astype(np.float32)
    return {"x": x, "W": W, **{k: v.astype(np.float32) for k, v in STATS.items()}}


def expected(f):
    """Inference BatchNorm in NumPy (float64) after the same Conv run by onnxruntime."""
    conv = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1])], "c",
                             [helper.make_tensor_value_info("x", 1, ["N", 3, "H", "W"]),
                              helper.make_tensor_value_info("W", 1, [4, 3, 3, 3])],
                             [helper.make_tensor_value_info("c", 1, ["N", 4, "H", "W"])])
    c = run(helper.make_model(conv, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
            {"x": f["x"], "W": f["W"]})[0].astype(np.float64)
    s = {k: v.astype(np.float64)[:, None, None] for k, v in STATS.items()}
    return np.maximum((c - s["mean"]) / np.sqrt(s["var"] + np.float32(1e-3)) * s["scale"] + s["bias"], 0)


def run(model, f):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, f)


@pytest.mark.parametrize("make", [ort_bn, bn_internal], ids=["BatchNormalization", "BatchNormInternal"])
def test_repaired_eval_model_loads_and_computes_inference_batchnorm(make):
    model = eval_like(make())
    if make is ort_bn:       # the failure the repair exists for
        with pytest.raises(Exception, match="should be 1 when Training_mode = False"):
            run(model, feeds())
    repaired, notes = repair_eval_model(model)
    assert len(notes) == 1 and "bn0" in notes[0]
    onnx.checker.check_model(repaired, full_check=True)
    (bn,) = [n for n in repaired.graph.node if n.name == "bn0"]
    assert (bn.domain, bn.op_type, list(bn.input), list(bn.output)) == ("", "BatchNormalization", ["c", *STATS], ["bn"])
    assert helper.get_attribute_value(bn.attribute[0]) == pytest.approx(1e-3)
    for shape in [(2, 5, 7), (3, 6, 4)]:                  # symbolic N, H, W stay symbolic
        f = feeds(*shape)
        np.testing.assert_allclose(run(repaired, f)[0], expected(f), rtol=1e-5, atol=1e-5)


def test_every_other_node_and_the_metadata_are_kept():
    model = eval_like(ort_bn())
    repaired, _ = repair_eval_model(model)
    before = [n for n in model.graph.node if n.name != "bn0"]
    after = [n for n in repaired.graph.node if n.name != "bn0"]
    assert before == after and repaired.metadata_props == model.metadata_props
    assert repaired.graph.input == model.graph.input and repaired.graph.output == model.graph.output
    assert repair_eval_model(repaired) == (repaired, [])          # idempotent: nothing left to repair


def test_a_read_training_output_is_refused_not_dropped():
    model = eval_like(ort_bn(), extra_outputs=[helper.make_tensor_value_info("running_mean_out", 1, [4])])
    with pytest.raises(DescError, match="bn0.*running_mean_out.*cannot be repaired"):
        repair_eval_model(model)


def test_training_mode_batchnorm_is_left_alone():
    model = eval_like(ort_bn(training_mode=1))
    assert repair_eval_model(model) == (model, [])


def max_pool_grad_model(kernel, stride, opset=17, domain="", op="MaxPoolGrad", elem=1):
    """MaxPool (with Indices) -> onnxruntime's MaxPoolGrad, as ORT's gradient builder writes it, symbolic dims;
    `elem` is the float type (1 float32, 10 float16, 11 float64)."""
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=kernel, strides=stride),
             helper.make_node(op, ["dy", "idx"], ["dx"], name=f"/pool_Grad/{op}_0", domain=domain,
                              kernel_shape=kernel, strides=stride, pads=[0, 0, 0, 0])]
    g = helper.make_graph(nodes, "train", [helper.make_tensor_value_info("x", elem, ["N", "C", "H", "W"]),
                                           helper.make_tensor_value_info("dy", elem, ["N", "C", "h", "w"])],
                          [helper.make_tensor_value_info("dx", elem, ["N", "C", "H", "W"])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def max_pool_grad_numpy(x, dy, k, s):
    """dX of MaxPool: each window's dY goes to its (first) maximum; overlapping windows add up."""
    dx = np.zeros_like(x, np.float64)
    n, c, h, w = x.shape
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            win = x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].reshape(n, c, -1)
            a, b = np.divmod(win.argmax(-1), k[1])
            for p in range(n):
                for q in range(c):
                    dx[p, q, i * s[0] + a[p, q], j * s[1] + b[p, q]] += dy[p, q, i, j]
    return dx


@pytest.mark.parametrize("kernel,stride", [([2, 2], [2, 2]), ([3, 3], [2, 2])], ids=["2x2/2", "3x3/2-overlapping"])
def test_max_pool_grad_with_symbolic_dims_becomes_standard_ops(kernel, stride):
    repaired, notes = repair_training_model(max_pool_grad_model(kernel, stride))
    assert notes == ["/pool_Grad/MaxPoolGrad_0: MaxPoolGrad with symbolic dims -> ScatterElements(add)"]
    onnx.checker.check_model(repaired, full_check=True)
    assert all(n.name.startswith("/pool_Grad/MaxPoolGrad_0/") for n in repaired.graph.node[1:])
    sess = ort.InferenceSession(repaired.SerializeToString(), providers=["CPUExecutionProvider"])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    two_threads = ort.InferenceSession(repaired.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for shape in [(2, 3, 8, 8), (1, 2, 11, 7), (3, 4, 40, 33)]:
        x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32)     # no ties
        y_shape = [(d - k) // s + 1 for d, k, s in zip(shape[2:], kernel, stride)]
        dy = RNG.standard_normal(shape[:2] + tuple(y_shape)).astype(np.float32)
        dx = sess.run(["dx"], {"x": x, "dy": dy})[0]
        np.testing.assert_allclose(dx, max_pool_grad_numpy(x, dy, kernel, stride), rtol=1e-6, atol=1e-6)
        assert np.array_equal(dx, sess.run(["dx"], {"x": x, "dy": dy})[0])         # bitwise on a rerun ...
        assert np.array_equal(dx, two_threads.run(["dx"], {"x": x, "dy": dy})[0])  # ... and on 2 threads


def test_static_max_pool_grad_keeps_the_native_kernel_and_old_opsets_are_refused():
    static = max_pool_grad_model([2, 2], [2, 2])
    static.graph.value_info.append(helper.make_tensor_value_info("dx", 1, [2, 3, 8, 8]))
    assert repair_training_model(static) == (static, [])
    with pytest.raises(DescError, match="MaxPoolGrad_0.opset=15.*opset 16"):
        repair_training_model(max_pool_grad_model([2, 2], [2, 2], opset=15))
    average = max_pool_grad_model([2, 2], [2, 2], op="AveragePoolGrad")
    with pytest.raises(DescError, match="AveragePoolGrad_0.dX=.*symbolic dims"):
        repair_training_model(average)


@pytest.mark.parametrize("elem,dtype,tol", [(10, np.float16, 1e-3), (11, np.float64, 1e-12)],
                         ids=["float16", "float64"])
def test_max_pool_grad_rewrite_keeps_the_graphs_float_type(elem, dtype, tol):
    """Issue 21: the rewrite once made float32 zeros, so float16 / float64 graphs got an invalid ScatterElements.
    Now the zeros take dY's type (CastLike); the gradient equals NumPy's in that type."""
    repaired, notes = repair_training_model(max_pool_grad_model([3, 3], [2, 2], elem=elem))
    assert len(notes) == 1
    onnx.checker.check_model(repaired, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(repaired, strict_mode=True)
    assert inferred.graph.output[0].type.tensor_type.elem_type == elem
    sess = ort.InferenceSession(repaired.SerializeToString(), providers=["CPUExecutionProvider"])
    shape = (2, 3, 9, 8)
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(dtype)          # distinct values: no ties
    dy = RNG.integers(-8, 8, (2, 3, 4, 3)).astype(dtype) / 4                   # exact in float16, sums exact too
    dx = sess.run(["dx"], {"x": x, "dy": dy})[0]
    assert dx.dtype == dtype
    np.testing.assert_allclose(dx.astype(np.float64), max_pool_grad_numpy(x, dy, [3, 3], [2, 2]), rtol=tol,
                               atol=tol)


def relu_conv(opset, ir=10, op="Relu"):
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv")] if op == "Conv" else []
    nodes.append(helper.make_node("Relu", ["c" if nodes else "x"], ["y"], name="relu"))
    inits = [onnx.numpy_helper.from_array(W, "W")] if op == "Conv" else []
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", 1, [1, 4, 2, 2] if inits else [1, 3, 4, 4])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    model.metadata_props.add(key="kept", value="yes")
    return model


@pytest.mark.skipif(onnx.defs.onnx_opset_version() < 22, reason="this onnx does not know opset 22")
def test_restamp_lowers_opset_and_ir_only_where_every_op_is_unchanged():
    from onnx_ops.training import restamp
    model = relu_conv(22, ir=11)
    notes = restamp(model, "m.onnx")
    assert (model.ir_version, model.opset_import[0].version) == (10, 21) and len(notes) == 2
    assert model.metadata_props[0].value == "yes"
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(model, {"x": x})[0], np.maximum(x, 0))      # loads at IR 10 / opset 21
    with pytest.raises(DescError, match=r"node conv.*Conv-22, newer than opset 21"):
        restamp(relu_conv(22, op="Conv"), "m.onnx")                                 # Conv changed at 22
    assert restamp(relu_conv(21), "m.onnx") == []


@pytest.mark.skipif(not hasattr(onnx.TensorProto, "FLOAT4E2M1"), reason="this onnx has no FLOAT4E2M1 (IR 11)")
def test_restamp_refuses_an_ir_whose_types_the_training_build_lacks():
    from onnx_ops.training import restamp
    model = relu_conv(21, ir=11)
    model.graph.initializer.append(helper.make_tensor("f4", onnx.TensorProto.FLOAT4E2M1, [2], [0.5, 1.0]))
    with pytest.raises(DescError, match="ir_version=11.*FLOAT4E2M1"):
        restamp(model, "m.onnx")


def test_restamp_refuses_an_opset_this_onnx_does_not_know():
    from onnx_ops.training import restamp
    model = relu_conv(onnx.defs.onnx_opset_version() + 1)
    with pytest.raises(DescError, match="opset_import=.*is newer than this onnx"):
        restamp(model, "m.onnx")


def test_unused_initializers_are_dropped_and_used_ones_kept():
    from onnx_ops.training import drop_unused_initializers
    model = relu_conv(17, op="Conv")
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros(3, np.float32), "left_over"))
    model.graph.value_info.append(helper.make_tensor_value_info("left_over", 1, [3]))
    assert drop_unused_initializers(model) == ["left_over"]
    assert [t.name for t in model.graph.initializer] == ["W"] and not model.graph.value_info
    onnx.checker.check_model(model, full_check=True)
    assert drop_unused_initializers(model) == []


def _numpy_activation(op, attrs, x, slope):
    """The ONNX operator documents' formulas, in float64 NumPy (attributes are float32 in ONNX)."""
    attrs = {k: float(np.float32(v)) for k, v in attrs.items() if not isinstance(v, str)}
    a = attrs.get("alpha")
    return {"HardSwish": lambda: x * np.clip(x + 3, 0, 6) / 6,
            "HardSigmoid": lambda: np.clip(x + 3, 0, 6) / 6 if attrs.get("alpha") == float(np.float32(1 / 6))
            else np.clip(attrs.get("alpha", 0.2) * x + attrs.get("beta", 0.5), 0, 1),    # torch's, as torch does
            "Softplus": lambda: np.logaddexp(0, x), "Mish": lambda: x * np.tanh(np.logaddexp(0, x)),
            "Elu": lambda: np.where(x > 0, x, a * np.expm1(x)),
            "Selu": lambda: float(np.float32(1.0507009873554804934193349852946)) * np.where(
                x > 0, x, float(np.float32(1.6732632423543772848170429916717)) * np.expm1(x)),
            "Celu": lambda: np.maximum(0, x) + np.minimum(0, a * np.expm1(x / a)),
            "Softsign": lambda: x / (1 + np.abs(x)), "PRelu": lambda: np.where(x < 0, slope * x, x),
            "ThresholdedRelu": lambda: np.where(x > a, x, 0), "Sign": lambda: np.sign(x),
            "Gelu": lambda: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}[op]()


DECOMPOSED = [("HardSwish", {}), ("HardSigmoid", {}), ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}),
              ("Softplus", {}), ("Mish", {}), ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.3}),
              ("Softsign", {}), ("PRelu", {}), ("ThresholdedRelu", {"alpha": 0.45}), ("Sign", {}),
              ("Gelu", {"approximate": "tanh"})]
OPSET = {"Mish": 18, "Gelu": 20}          # the first opset with the op (17 otherwise)
# absolute tolerances (float32, float64): tanh-GELU is 0.5 * x * (1 + tanh(...)) with tanh near -1 for x < 0
# (torch's formula, so torch rounds there as the decomposition does): a few units of |x| * eps off onnxruntime's
# kernel and NumPy's tanh
ATOL = {"Gelu": (6e-7, 1e-14)}


@pytest.mark.parametrize("op,attrs", DECOMPOSED, ids=[f"{o}{a or ''}" for o, a in DECOMPOSED])
@pytest.mark.parametrize("elem,dtype", [(1, np.float32), (11, np.float64)], ids=["f32", "f64"])
def test_decompositions_compute_what_onnxruntime_computes_for_the_op(op, attrs, elem, dtype):
    """The oracle is onnxruntime's own kernel for the op in float32 (it has few float64 activations) and the
    operator document's formula in float64 NumPy; values span both sides of every kink, and +-80 (where a naive
    softplus or an unguarded exp would overflow)."""
    from onnx_ops.training import decompose_for_gradients
    inputs = ["x", "slope"] if op == "PRelu" else ["x"]
    g = helper.make_graph([helper.make_node(op, inputs, ["y"], name="act", **attrs)], "g",
                          [helper.make_tensor_value_info("x", elem, ["N", 3])],
                          [helper.make_tensor_value_info("y", elem, ["N", 3])],
                          [onnx.numpy_helper.from_array(np.array([0.25, -0.5, 2.0], dtype), "slope")]
                          if op == "PRelu" else [])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET.get(op, 17))], ir_version=8)
    decomposed, notes = decompose_for_gradients(model)
    assert len(notes) == 1 and notes[0].startswith(f"act: {op} ") and op not in [n.op_type for n in
                                                                               decomposed.graph.node]
    onnx.checker.check_model(decomposed, full_check=True)
    x = np.concatenate([np.linspace(-7, 7, 141), [-80, -3, 0, 3, 80, 0.4]]).astype(dtype).repeat(3).reshape(-1, 3)
    ours = run(decomposed, {"x": x})[0]
    assert ours.dtype == dtype and np.isfinite(ours).all()
    if dtype == np.float32:
        np.testing.assert_allclose(ours, run(model, {"x": x})[0], rtol=4e-7, atol=ATOL.get(op, (1e-7,))[0])
    theirs = _numpy_activation(op, attrs, x.astype(np.float64), np.array([0.25, -0.5, 2.0]))
    np.testing.assert_allclose(ours, theirs, rtol=3e-7 if dtype == np.float32 else 1e-13,
                               atol=ATOL.get(op, (1e-7, 1e-15))[dtype == np.float64])


def test_decomposition_refuses_a_non_float_input():
    from onnx_ops.training import decompose_for_gradients
    g = helper.make_graph([helper.make_node("HardSwish", ["x"], ["y"], name="act")], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.INT32, [2])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [2])])
    with pytest.raises(DescError, match="node act.X=.*float16, float32 or float64"):
        decompose_for_gradients(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


@pytest.mark.parametrize("like", [onnx.TensorProto.FLOAT16, onnx.TensorProto.INT64], ids=["float16", "int64"])
def test_castlike_becomes_a_cast_to_the_type_it_reads(like):
    from onnx_ops.training import decompose_for_gradients
    g = helper.make_graph([helper.make_node("CastLike", ["x", "t"], ["y"], name="cl")], "g",
                          [helper.make_tensor_value_info("x", 1, [3]), helper.make_tensor_value_info("t", like, [2])],
                          [helper.make_tensor_value_info("y", like, [3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    decomposed, notes = decompose_for_gradients(model)
    assert [(n.op_type, helper.get_attribute_value(n.attribute[0])) for n in decomposed.graph.node] == [("Cast", like)]
    x = np.array([1.5, -2.0, 7.0], np.float32)
    t = np.zeros(2, helper.tensor_dtype_to_np_dtype(like))
    np.testing.assert_array_equal(run(decomposed, {"x": x, "t": t})[0], run(model, {"x": x, "t": t})[0])
