"""`dml-desc calibrate` and `lower(calibration=...)`: measured choices for shape-generic nodes, used only when
asked, keyed by machine; the same model and cache give the same bytes. Real onnxruntime sessions (tiny stand-in
shapes: these tests check the mechanism, they measure nothing)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from dml_desc import DescError
from onnx_ops import lower
from onnx_ops.calibrate import calibrate_model, machine_key, read_cache
from onnx_ops.run import session

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


@pytest.mark.parametrize("form, name", [("general", "dynamic: Resize(identity)"), ("block", "generic block-sum"),
                                        ("conv", "generic conv"), ("pool", "generic avgpool"),
                                        ("kronpairs", "generic kron-pairs")])
def test_lower_takes_the_cached_form_for_this_machine_and_the_rule_elsewhere(tmp_path, form, name):
    m = model()
    sig = lower(m).rewrites[0].signature
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": form, "ms": {}}}}}))
    first, report = lower(m, calibration=str(path))
    assert report[0].forms[0].startswith(name)
    assert first.SerializeToString() == lower(m, calibration=str(path)).model.SerializeToString()  # reproducible
    assert lower(m, calibration=str(path), machine="another CPU | onnxruntime 0").rewrites[0].forms[0] \
        .startswith("generic kron-pairs")                                  # no entry for that machine: the rule
    dy = np.random.default_rng(0).standard_normal((2, 8, 10, 14)).astype(np.float32)
    got = session(first).run(None, {"dY": dy, "X": np.zeros((2, 8, 5, 7), np.float32)})[0]
    want = dy.reshape(2, 8, 5, 2, 7, 2).sum(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_default_output_does_not_depend_on_any_cache(tmp_path, monkeypatch):
    m = model("linear")
    sig = lower(m).rewrites[0].signature
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"version": 1, "entries": {machine_key(): {sig: {"form": "general", "ms": {}}}}}))
    monkeypatch.setenv("DML_DESC_CALIBRATION", str(path))
    assert lower(m).rewrites[0].forms[0].startswith("generic conv")     # only lower(calibration=...) reads it


def test_a_cached_form_the_node_cannot_take_falls_back_to_the_rule():
    m = model("linear")
    sig = lower(m).rewrites[0].signature
    assert lower(m, calibration={sig: "pool"}).rewrites[0].forms[0].startswith("generic conv")


def test_corrupt_cache_is_a_desc_error(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text("{not json")
    with pytest.raises(DescError, match="calibration"):
        lower(model(), calibration=str(path))
    path.write_text(json.dumps({"entries": {}}))
    with pytest.raises(DescError, match="calibration cache"):
        lower(model(), calibration=str(path))


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
    assert ("Resize(identity)" in out.stdout) == (best == "general")
