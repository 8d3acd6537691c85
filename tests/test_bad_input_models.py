"""Bad models and Python API calls: a malformed ResizeGrad is refused by name, what is written passes onnx's
checker and onnxruntime, and the public functions refuse wrongly typed arguments by name."""
import numpy as np
import pytest

from dml_desc import DescError, conventions
from dml_desc.conventions.onnx import installed_semantics
from tests.helpers_bad_input import onnx_with, resize_grad_model

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


# ---- lowering: a malformed ResizeGrad is refused by name; what is written passes onnx's checker and onnxruntime --

def graph_outputs(model, *names):
    from onnx import helper
    for name in names:
        model.graph.output.append(helper.make_tensor_value_info(name, 1, [1, 1, 4, 4]))
    return model


LOWERING = [
    (resize_grad_model(outputs=["dX", "second"], graph_outputs=["dX", "second"]), "outputs"),
    (resize_grad_model(outputs=[""], graph_outputs=[]), "outputs"),
    (resize_grad_model(outputs=[], graph_outputs=[]), "outputs"),
    (resize_grad_model(dy_elem=10), "dY"),                       # float16 dY, float X
    (resize_grad_model(elem=7, dy_elem=7), "dY"),                # int64 data
    (resize_grad_model(opset=1), "opset"),
    (resize_grad_model(scales_dtype="int64"), "scales"),
    (resize_grad_model(scales_dtype="float64"), "scales"),
    (resize_grad_model(scales=[[1, 1], [2, 2]]), "scales"),
    (resize_grad_model(extra_inputs=["dY"]), "inputs"),
    (resize_grad_model(attrs={"mode": "nearest_neıghbor"}), "mode"),
    (resize_grad_model(attrs={"mode": b"lin\xe4ar"}), "node rg"),  # a string attribute that is not UTF-8
]


@pytest.mark.parametrize("model,field", LOWERING, ids=[f"{i}-{c[1]}" for i, c in enumerate(LOWERING)])
def test_lowering_refuses_malformed_resize_grad_by_name(model, field):
    from onnx_ops.lower import lower
    with pytest.raises(DescError) as info:
        lower(model, semantics=INSTALLED)
    assert "rg" in info.value.field and field in info.value.field, str(info.value)


def test_valid_float64_identity_gradient_lowers(tmp_path):
    """Output shape equal to input shape in float64: was StopIteration in Emitter.rename."""
    pytest.importorskip("onnxruntime", reason="the lowered model is run on onnxruntime")
    import onnxruntime as ort
    from onnx_ops.lower import lower
    from onnx_ops.lowering.validate import check_written
    model = resize_grad_model(elem=11, dy_elem=11, dy=[1, 1, 4, 4], scales=[1, 1, 1, 1], graph_outputs=["dX"])
    lowered, report = lower(model, semantics=INSTALLED)
    check_written(lowered)
    dy = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    sess = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {"dY": dy, "X": dy})[0], dy)


def test_external_scales_resolve_next_to_the_model_not_the_working_directory(tmp_path, monkeypatch):
    import onnx
    from onnx_ops.lower import lower_file
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(resize_grad_model(), str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = lower_file(str(folder / "m.onnx"), str(folder / "out.onnx"), semantics=INSTALLED)
    assert [r.forms for r in report] and not any(r.dynamic for r in report)     # read as the constants they are
    out = onnx.load(str(folder / "out.onnx"), load_external_data=False)
    kept = {t.name: t.data_location for t in out.graph.initializer}
    assert kept["scales"] == onnx.TensorProto.EXTERNAL                           # still in m.data, untouched


def test_a_written_models_failure_is_excused_only_when_it_is_the_inputs_in_full():
    from onnx import TensorProto, helper
    from onnx_ops.lowering.validate import checker_problem, check_written

    def broken(op):           # two inputs where one is allowed: the same first checker line for Relu and Neg
        g = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"], name="n")], "g",
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2]) for x in "ab"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    relu, neg = broken("Relu"), broken("Neg")
    import onnx
    if onnx.__version__.startswith("1.16."):       # onnx 1.16 names the op only after the first line; later do not
        assert checker_problem(relu).splitlines()[0] == checker_problem(neg).splitlines()[0]
    check_written(relu, baseline=relu)                     # the input's own failure, in full: excused
    with pytest.raises(DescError, match="fails onnx's checker"):
        check_written(neg, baseline=relu)


def test_the_references_nan_pattern_is_the_lowerings():
    """A NaN in dY reaches only the dX entries that depend on it, in the reference as in the lowered model
    (the gradient table's padding taps, weight 0, add nothing)."""
    import onnxruntime as ort
    from conformance.reference import resize_grad
    from onnx_ops.build import build_resize_grad
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    dy = np.ones((1, 1, 12), np.float32)
    dy[0, 0, 0] = np.nan
    model = build_resize_grad(res, np.float32, lowered=True, semantics=INSTALLED)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {i.name: dy if i.name == "dY" else np.zeros((1, 1, 6), np.float32) for i in session.get_inputs()}
    lowered = session.run(None, feed)[0]
    reference = resize_grad(dy, res)
    assert np.flatnonzero(np.isnan(reference)).tolist() == [0] == np.flatnonzero(np.isnan(lowered)).tolist()
    assert np.array_equal(np.isnan(reference), np.isnan(lowered))


def _api_cases():
    from conformance.reference import resize_grad
    from onnx_ops.build import build_resize_grad
    from onnx_ops.lower import lower, lower_file
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    model = build_resize_grad(res, np.float32, semantics=INSTALLED)
    return [
        (lambda: build_resize_grad(res, np.float32, lowered="no", semantics=INSTALLED), "lowered"),
        (lambda: build_resize_grad(res, np.float32, lowered=1, semantics=INSTALLED), "lowered"),
        (lambda: lower(model, providers="CPUExecutionProvider", semantics=INSTALLED), "providers"),
        (lambda: lower(model, providers=["Bogus"], semantics=INSTALLED), "providers"),
        (lambda: lower(model, providers=[], semantics=INSTALLED), "providers"),
        (lambda: lower_file("m.onnx", "o.onnx", providers="CPUExecutionProvider", semantics=INSTALLED), "providers"),
        (lambda: resize_grad(np.ones((1, 1, 12), object), res), "data.dtype"),
        (lambda: resize_grad(np.ones((1, 1, 12)), None), "res"),
        (lambda: lower_file(None, "o.onnx", semantics=INSTALLED), "path"),
        (lambda: conventions.load("torch", {"input_shape": np.array([1, 1, 6]), "mode": "linear", "size": [12]}),
         "input_shape"),
        (lambda: conventions.load("onnx", onnx_with(attributes={"mode": "linear", "axes": [True, 3]},
                                                    scales=[2, 2]), semantics=INSTALLED), "axes"),
        (lambda: conventions.load("onnx", onnx_with(opset=True), semantics=INSTALLED), "opset"),
    ]


@pytest.mark.parametrize("k", range(12))
def test_python_api_types_are_strict(k):
    call, field = _api_cases()[k]
    with pytest.raises(DescError) as e:
        call()
    assert e.value.field == field, str(e.value)


def test_a_known_provider_list_still_lowers():
    from onnx_ops.build import build_resize_grad
    from onnx_ops.lower import lower
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    _, report = lower(build_resize_grad(res, np.float32, semantics=INSTALLED), providers=["CPUExecutionProvider"],
                      semantics=INSTALLED)
    assert len(report) == 1
