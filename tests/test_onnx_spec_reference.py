"""onnx-spec is onnx's reference evaluator (onnx.reference), evaluated exactly: random Resize nodes against it, and
the forwards onnxruntime refuses refused here with the project's own error."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from conformance.reference import resize
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from dml_desc.errors import DescError
from dml_desc.weights import exact_coordinates

CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize", "half_pixel_symmetric"]


def reference(node: OnnxResize, x: np.ndarray) -> np.ndarray:
    inputs = ["X", "roi" if node.roi else "", "scales" if node.scales else "", "sizes" if node.sizes else ""]
    while inputs[-1] == "":
        inputs.pop()
    inits = [helper.make_tensor(name, TensorProto.INT64 if name == "sizes" else TensorProto.FLOAT,
                                [len(getattr(node, name))], getattr(node, name)) for name in inputs[1:] if name]
    graph = helper.make_graph([helper.make_node("Resize", inputs, ["Y"], **node.attributes)], "g",
                              [helper.make_tensor_value_info("X", TensorProto.DOUBLE, list(x.shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, None)], inits)
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])).run(
        None, {"X": x})[0]


def random_node(rng) -> OnnxResize:
    n = int(rng.integers(1, 3))
    shape = [int(rng.integers(1, 6)) for _ in range(n)]
    mode, ctm = str(rng.choice(["nearest", "linear", "cubic"])), str(rng.choice(CTMS))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "cubic" and rng.random() < 0.5:
        attrs["exclude_outside"] = 1
    if mode != "nearest" and rng.random() < 0.3:
        attrs["antialias"] = 1
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    roi = None
    if ctm == "tf_crop_and_resize":
        roi = [round(float(rng.uniform(-0.3, 0.5)), 2) for _ in range(n)] + \
              [round(float(rng.uniform(0.5, 1.3)), 2) for _ in range(n)]
    if rng.random() < 0.5:
        return OnnxResize(shape, attrs, roi=roi, scales=[round(float(rng.uniform(0.3, 3)), 1) for _ in range(n)])
    if n == 2 and rng.random() < 0.3:
        attrs["keep_aspect_ratio_policy"] = str(rng.choice(["not_larger", "not_smaller"]))
    return OnnxResize(shape, attrs, roi=roi, sizes=[int(rng.integers(1, 9)) for _ in range(n)])


def on_a_boundary(res) -> bool:
    """A nearest coordinate on or within float32 rounding of a rounding boundary (an integer, where the crop's edge
    is too, or k + 1/2): the reference evaluates it in float32 / float64 (onnx 1.17 computes scale * in in float32),
    which may land on either side; onnx-spec decides it exactly."""
    if res.mode.value != "nearest":
        return False
    for ax in res.axes:
        if ax.exact and ax.coords is None and not ax.is_identity:
            if any(abs(2 * x - round(2 * x)) < 1e-5 for x in exact_coordinates(ax) if x == x):
                return True
    return False


@pytest.mark.parametrize("seed", range(3))
def test_onnx_spec_is_the_reference_evaluator(seed):
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(300):
        node = random_node(rng)
        try:
            res = to_canonical(node, "onnx-spec")
        except DescError:
            continue
        x = rng.standard_normal(node.input_shape)
        try:
            want = reference(node, x)
        except Exception:           # the reference refuses some (e.g. antialias with nearest); not our oracle then
            continue
        assert want.shape == res.out_shape, node        # the evaluator's output lengths, not onnxruntime's
        if on_a_boundary(res):
            continue
        # the evaluator computes cubic and antialias coefficients, roi products and (onnx 1.17) scale * in in float32
        tol = 1e-5 if node.attr("mode") == "cubic" or node.attr("antialias") else 1e-6 if node.roi or node.scales \
            else 1e-9
        np.testing.assert_allclose(resize(x, res), want, atol=tol, err_msg=str(node))
        compared += 1
    assert compared > 150


@pytest.mark.parametrize("node,spec,ort", [
    # scales: floor(float64(float32(2.6)) * 5) = 12; onnxruntime floors the float32 product, 13
    (OnnxResize([5], {"mode": "linear"}, scales=[2.6]), (12,), (13,)),
    # keep_aspect_ratio_policy: int(25/6 * 15 + 0.5) in float64 = 63; onnxruntime's float32 product gives 62
    (OnnxResize([6, 15], {"mode": "nearest", "keep_aspect_ratio_policy": "not_larger"}, sizes=[25, 100]),
     (25, 63), (25, 62)),
])
def test_output_lengths_are_the_evaluators(node, spec, ort):
    assert to_canonical(node, "onnx-spec").out_shape == spec
    assert to_canonical(node, "ort-1.27").out_shape == to_canonical(node, "ort-1.19").out_shape == ort
    assert reference(node, np.zeros(node.input_shape)).shape == spec
    if node.scales:             # onnx's shape inference: float32 (onnxruntime's) in onnx 1.17, the evaluator's in 1.23
        import onnx
        from onnx import shape_inference
        graph = helper.make_graph([helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode="linear")], "g",
                                  [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(node.input_shape))],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                                  [helper.make_tensor("scales", TensorProto.FLOAT, [1], node.scales)])
        inferred = shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
        dims = inferred.graph.output[0].type.tensor_type.shape.dim
        newer = tuple(int(p) for p in onnx.__version__.split(".")[:2]) >= (1, 23)
        assert tuple(d.dim_value for d in dims) == (spec if newer else ort)


def test_an_output_the_evaluator_leaves_empty_is_refused():
    node = OnnxResize([25], {"mode": "linear"}, scales=[0.04])     # float64(float32(0.04)) * 25 < 1: no output
    assert to_canonical(node, "ort-1.27").out_shape == (1,)        # onnxruntime's float32 product is 1.0
    with pytest.raises(DescError, match="empty output"):
        to_canonical(node, "onnx-spec")


@pytest.mark.parametrize("ctm,scales,want", [
    # the example: the evaluator's output length is 3.2, so x = o / 2.2 (onnxruntime: o / 2)
    ("align_corners", [1, 1.6], [0.0, 1 / 2.2, 2 / 2.2]),
    # pytorch_half_pixel reads L = 1.5 > 1: half_pixel, x = 0.5 (onnxruntime: one output reads x = 0)
    ("pytorch_half_pixel", [1, 0.5], [0.5]),
])
def test_unrounded_output_length(ctm, scales, want):
    node = OnnxResize([1, 2] if ctm == "align_corners" else [1, 3],
                      {"mode": "linear", "coordinate_transformation_mode": ctm}, scales=scales)
    x = np.arange(float(node.input_shape[1])).reshape(node.input_shape)
    np.testing.assert_allclose(resize(x, to_canonical(node, "onnx-spec")).ravel(), want, atol=1e-12)
    np.testing.assert_allclose(reference(node, x).ravel(), want, atol=1e-6)


def test_same_length_axis_resamples_under_the_spec_and_is_copied_by_onnxruntime():
    node = OnnxResize([4], {"mode": "linear"}, scales=[1.2])        # 4 -> 4 with scale 1.2
    x = np.arange(4.0) ** 2
    np.testing.assert_allclose(resize(x, to_canonical(node, "onnx-spec")), reference(node, x), atol=1e-12)
    assert to_canonical(node, "ort-1.27").axes[0].is_identity


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("semantics", ["ort-1.19", "ort-1.27"])
def test_exclude_outside_without_cubic_or_antialias_is_refused(mode, semantics):
    node = OnnxResize([1, 1, 4, 4], {"mode": mode, "exclude_outside": 1}, scales=[1, 1, 0.5, 0.5])
    with pytest.raises(DescError, match="exclude_outside.*refused by onnxruntime"):
        to_canonical(node, semantics)
    to_canonical(node, "onnx-spec")          # the spec reads it
    ok = OnnxResize([1, 1, 4, 4], {"mode": "linear", "exclude_outside": 1, "antialias": 1}, scales=[1, 1, 0.5, 0.5])
    to_canonical(ok, semantics)


def test_exclude_outside_refused_on_the_dynamic_path():
    lower = pytest.importorskip("onnx_ops.lower")
    grad = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", mode="linear",
                            exclude_outside=1)
    graph = helper.make_graph([grad], "g",
                              [helper.make_tensor_value_info("dY", TensorProto.FLOAT, ["N", 1, "H2", "W2"]),
                               helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1, "H", "W"])],
                              [helper.make_tensor_value_info("dX", TensorProto.FLOAT, None)],
                              [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19),
                                                    helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(DescError, match="exclude_outside"):
        lower.lower(model, semantics="ort-1.27")


def test_a_gradient_with_onnxruntimes_length_is_refused_under_onnx_spec():
    lower = pytest.importorskip("onnx_ops.lower")
    grad = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", mode="linear")
    graph = helper.make_graph([grad], "g", [helper.make_tensor_value_info("dY", TensorProto.FLOAT, [1, 1, 13]),
                                            helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 5])],
                              [helper.make_tensor_value_info("dX", TensorProto.FLOAT, None)],
                              [helper.make_tensor("scales", TensorProto.FLOAT, [3], [1, 1, 2.6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19),
                                                    helper.make_opsetid("com.microsoft", 1)])
    lower.lower(model, semantics="ort-1.27")          # onnxruntime's 13
    with pytest.raises(DescError, match=r"dY.*must have the forward output shape \[1, 1, 12\]"):
        lower.lower(model, semantics="onnx-spec")
