"""`dml-desc calibrate` and `lower(calibration=...)`: measured choices for shape-generic and static nodes, used
only when asked, keyed by machine; the same model and cache give the same bytes. Real onnxruntime sessions (tiny
stand-in shapes: these tests check the mechanism, they measure nothing)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from dml_desc import DescError
from dml_desc.conventions.onnx import installed_semantics
from onnx_ops import lower
from onnx_ops.calibrate import calibrate_model, machine_key, read_cache
from onnx_ops.run import session

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

TINY = (2, 8, 12)


def model(mode="nearest", opset=17, channels=8):
    node = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", name="rg",
                            mode=mode)
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("dY", TensorProto.FLOAT, ["N", channels, "H2", "W2"]),
                               helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", channels, "H", "W"])],
                              [helper.make_tensor_value_info("dX", TensorProto.FLOAT, ["N", channels, "H", "W"])],
                              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", opset),
                                                                 helper.make_opsetid("com.microsoft", 1)])


def test_calibrate_measures_every_candidate_and_caches_the_fastest_under_this_machine(tmp_path):
    path = str(tmp_path / "cal.json")
    results = calibrate_model(model(), path, threads=1, rounds=1, stand_in=TINY)
    assert len(results) == 1
    sig, best, times = results[0]
    assert set(times) == {"pool", "conv", "block", "kronpairs", "general"} and best == min(times, key=times.get)
    entry = read_cache(path)[machine_key()]
    assert entry[sig] == {"form": best, "ms": times}
    assert " | onnxruntime " in machine_key()


@pytest.mark.parametrize("form, name", [("general", "dynamic: Resize(comb)"), ("block", "generic block-sum"),
                                        ("conv", "generic conv"), ("pool", "generic avgpool"),
                                        ("kronpairs", "generic kron-pairs")])
def test_lower_takes_the_cached_form_for_this_machine_and_the_rule_elsewhere(tmp_path, form, name):
    m = model()
    sig = lower(m, semantics=INSTALLED).rewrites[0].signature
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": form, "ms": {}}}}}))
    first, report = lower(m, calibration=str(path), semantics=INSTALLED)
    assert report[0].forms[0].startswith(name)
    assert first.SerializeToString() == lower(m, calibration=str(path),
                                              semantics=INSTALLED).model.SerializeToString()  # reproducible
    assert lower(m, calibration=str(path), machine="another CPU | onnxruntime 0",
                 semantics=INSTALLED).rewrites[0].forms[0] \
        .startswith("generic kron-pairs")                                  # no entry for that machine: the rule
    dy = np.random.default_rng(0).standard_normal((2, 8, 10, 14)).astype(np.float32)
    got = session(first).run(None, {"dY": dy, "X": np.zeros((2, 8, 5, 7), np.float32)})[0]
    want = dy.reshape(2, 8, 5, 2, 7, 2).sum(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_default_output_does_not_depend_on_any_cache(tmp_path, monkeypatch):
    m = model("linear")
    sig = lower(m, semantics=INSTALLED).rewrites[0].signature
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": "general", "ms": {}}}}}))
    monkeypatch.setenv("DML_DESC_CALIBRATION", str(path))
    # only lower(calibration=...) reads it
    assert lower(m, semantics=INSTALLED).rewrites[0].forms[0].startswith("generic conv")


def test_a_cached_form_the_node_cannot_take_falls_back_to_the_rule():
    m = model("linear")
    sig = lower(m, semantics=INSTALLED).rewrites[0].signature
    assert lower(m, calibration={sig: "pool"}, semantics=INSTALLED).rewrites[0].forms[0].startswith("generic conv")


def test_corrupt_cache_is_a_desc_error(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text("{not json")
    with pytest.raises(DescError, match="calibration"):
        lower(model(), calibration=str(path), semantics=INSTALLED)
    path.write_text(json.dumps({"entries": {}}))
    with pytest.raises(DescError, match="calibration cache"):
        lower(model(), calibration=str(path), semantics=INSTALLED)


def test_cli_calibrate_then_lower_with_the_cache(tmp_path):
    import onnx
    src, dst, cache = tmp_path / "m.onnx", tmp_path / "low.onnx", tmp_path / "cal.json"
    onnx.save(model("linear", opset=19), str(src))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = lambda *a: subprocess.run([sys.executable, "-m", "dml_desc.cli", *a], capture_output=True, text=True,  # noqa
                                    env=env, timeout=600)
    out = run("calibrate", str(src), "--cache", str(cache), "--rounds", "1", "--threads", "1")
    assert out.returncode == 0, out.stderr
    assert "1 choice(s)" in out.stdout and machine_key() in out.stdout
    best = next(iter(read_cache(str(cache))[machine_key()].values()))["form"]
    out = run("lower", str(src), "-o", str(dst), "--calibration", str(cache))
    assert out.returncode == 0, out.stderr
    assert ("Resize(comb)" in out.stdout) == (best == "general")


# ---- static nodes (issue 19): the registry's candidates, measured -----------------------------------------------

def static_model(run_time_batch=False):
    """linear x2 on 2x4x16x16 at opset 19: the cost model takes Resize(antialias); the band also applies."""
    from dml_desc.conventions.onnx import OnnxResize
    from onnx_ops import build_resize_grad
    m = build_resize_grad(OnnxResize([2, 4, 16, 16], {"mode": "linear"}, scales=[1, 1, 2, 2], opset=19,
                                     op_type="ResizeGrad"), semantics=INSTALLED)
    if run_time_batch:
        for value in list(m.graph.input) + list(m.graph.output):
            value.type.tensor_type.shape.dim[0].dim_param = "N"
    return m


def static_reference(dy):
    from conformance.reference import resize_grad
    from dml_desc.conventions.onnx import OnnxResize, to_canonical
    res = to_canonical(OnnxResize([dy.shape[0], 4, 16, 16], {"mode": "linear"}, scales=[1, 1, 2, 2], opset=19,
                                  op_type="ResizeGrad"), semantics=INSTALLED)
    return resize_grad(dy.astype(np.float64), res)


def test_calibrate_measures_a_static_nodes_registry_candidates_and_lower_emits_the_winner(tmp_path):
    from onnx_ops.forms import FORMS
    path = str(tmp_path / "cal.json")
    m = static_model()
    # the cost model's choice
    assert lower(m, semantics=INSTALLED).rewrites[0].forms[0] == "Resize(linear, antialias)"
    results = calibrate_model(m, path, threads=1, rounds=1)
    assert len(results) == 1
    sig, best, times = results[0]
    assert list(times) == ["Resize", "band", "filter-conv"] and best == min(times, key=times.get)   # choice first
    assert json.loads(sig)["static"]["mode"] == "linear" and read_cache(path)[machine_key()][sig]["form"] == best
    first, report = lower(m, calibration=path, semantics=INSTALLED)
    assert report[0].forms[0].startswith({"Resize": "Resize(", "band": "dense", "filter-conv": "conv"}[best])
    assert best in FORMS
    # reproducible
    assert first.SerializeToString() == lower(m, calibration=path, semantics=INSTALLED).model.SerializeToString()
    # no entry: cost model
    other = lower(m, calibration=path, machine="another CPU | onnxruntime 0", semantics=INSTALLED).model
    assert other.SerializeToString() == lower(m, semantics=INSTALLED).model.SerializeToString()


@pytest.mark.parametrize("form, first_op", [("Resize", "Resize"), ("band", "MatMul"), ("filter-conv", "Conv")])
def test_each_static_candidate_lowers_exactly_and_deterministically(form, first_op):
    m = static_model()
    sig, names = _static_entry()
    assert form in names
    lowered, report = lower(m, calibration={sig: form}, semantics=INSTALLED)
    assert first_op in [n.op_type for n in lowered.graph.node]
    again = lower(m, calibration={sig: form}, semantics=INSTALLED).model
    assert lowered.SerializeToString() == again.SerializeToString()
    dy = np.random.default_rng(1).standard_normal((2, 4, 32, 32)).astype(np.float32)
    got = session(lowered).run(None, {"dY": dy, "X": np.zeros((2, 4, 16, 16), np.float32)})[0]
    np.testing.assert_allclose(got, static_reference(dy), rtol=0, atol=1e-5)


def _static_entry():
    """(signature, candidates) of static_model()'s node, from its canonical map."""
    from onnx_ops.calibrate import static_candidates, static_signature
    from dml_desc.conventions.onnx import OnnxResize, to_canonical
    res = to_canonical(OnnxResize([2, 4, 16, 16], {"mode": "linear"}, scales=[1, 1, 2, 2], opset=19,
                                  op_type="ResizeGrad"), semantics=INSTALLED)
    return static_signature(res, 19, np.float32), static_candidates(res, 19, np.float32)


def test_a_static_node_with_a_run_time_batch_is_measured_at_a_stand_in_size(tmp_path):
    m = static_model(run_time_batch=True)
    assert not lower(m, semantics=INSTALLED).rewrites[0].dynamic
    results = calibrate_model(m, str(tmp_path / "cal.json"), threads=1, rounds=1, stand_in=(3, 4, 16))
    (sig, best, times), = results
    assert json.loads(sig)["static"]["axes"][0]["in_size"] == "?" and set(times) == {"Resize", "filter-conv", "band"}
    lowered, _ = lower(m, calibration=str(tmp_path / "cal.json"), semantics=INSTALLED)
    dy = np.random.default_rng(2).standard_normal((3, 4, 32, 32)).astype(np.float32)
    got = session(lowered).run(None, {"dY": dy, "X": np.zeros((3, 4, 16, 16), np.float32)})[0]
    np.testing.assert_allclose(got, static_reference(dy), rtol=0, atol=1e-5)


def test_without_a_cache_the_static_choice_is_the_cost_models_on_any_machine(tmp_path, monkeypatch):
    m = static_model()
    sig, _ = _static_entry()
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": "band", "ms": {}}}}}))
    monkeypatch.setenv("DML_DESC_CALIBRATION", str(path))
    plain = lower(m, semantics=INSTALLED).model.SerializeToString()
    assert plain == lower(m, calibration={}, semantics=INSTALLED).model.SerializeToString()
    import onnx_ops.lowering.calibration as calibration      # the cache and its machine key
    monkeypatch.setattr(calibration, "cpu_model", lambda: "some other CPU")               # another machine
    assert lower(m, semantics=INSTALLED).model.SerializeToString() == plain
    # its entry is not there
    assert lower(m, calibration=str(path), semantics=INSTALLED).model.SerializeToString() == plain
    # a form it cannot take
    assert lower(m, calibration={sig: "avgpool"}, semantics=INSTALLED).model.SerializeToString() == plain


def test_cli_calibrates_a_static_node_and_lower_prints_the_cached_form(tmp_path):
    import onnx
    src, dst, cache = tmp_path / "m.onnx", tmp_path / "low.onnx", tmp_path / "cal.json"
    onnx.save(static_model(), str(src))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = lambda *a: subprocess.run([sys.executable, "-m", "dml_desc.cli", *a], capture_output=True, text=True,  # noqa
                                    env=env, timeout=600)
    out = run("calibrate", str(src), "--cache", str(cache), "--rounds", "1", "--threads", "1")
    assert out.returncode == 0, out.stderr
    assert "1 choice(s)" in out.stdout and '"static"' in out.stdout
    best = next(iter(read_cache(str(cache))[machine_key()].values()))["form"]
    out = run("lower", str(src), "-o", str(dst), "--calibration", str(cache))
    assert out.returncode == 0, out.stderr
    assert ("Resize(linear, antialias)" in out.stdout) == (best == "Resize")
    assert ("dense" in out.stdout) == (best == "band")


def test_a_cache_holding_the_former_name_deconv_ones_still_loads_as_conv_ones(tmp_path):
    """The depthwise Conv of ones was named "deconv(ones)" (forms.RENAMED): a cache with that name lowers the node
    to the same bytes as one naming "conv(ones)", although the cost model would pick kron here."""
    from dml_desc.conventions.onnx import OnnxResize, to_canonical
    from onnx_ops import build_resize_grad
    from onnx_ops.calibrate import static_signature
    spec = OnnxResize([2, 4, 16, 16], {"mode": "nearest"}, scales=[1, 1, 2, 2], opset=19, op_type="ResizeGrad")
    m = build_resize_grad(spec, semantics=INSTALLED)
    sig = static_signature(to_canonical(spec, semantics=INSTALLED), 19, np.float32)
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": "deconv(ones)", "ms": {}}}}}))
    old, report = lower(m, calibration=str(path), semantics=INSTALLED)
    assert report[0].forms == ("conv(ones)", "conv(ones)")
    assert lower(m, semantics=INSTALLED).rewrites[0].forms[0] != "conv(ones)"       # the rule picks another form
    new = lower(m, calibration={sig: "conv(ones)"}, semantics=INSTALLED).model
    assert old.SerializeToString() == new.SerializeToString()
    assert [n.op_type for n in old.graph.node].count("Conv") == 1
