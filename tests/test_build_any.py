"""Every description builds (--lowered straight from the canonical map when no ONNX spelling exists), and
refusals that help: the closest spelling, its max |dw|, and --tolerance recorded in a note and the metadata."""
import json

import numpy as np
import onnx
import pytest

from conformance.reference import resize_grad
from dml_desc import conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.errors import ConversionError, DescError

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
from onnx_ops.build import TOLERANCE_KEY, build_gradient, build_resize  # noqa: E402

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

NO_SPELLING = {"input_shape": [1, 2, 9, 7], "mode": "bilinear", "size": [11, 13]}
ALIGN = {"input_shape": [1, 1, 2, 4], "mode": "bilinear", "size": [5, 10], "align_corners": True}
SAME_LENGTH_AA = {"input_shape": [1, 1, 3, 2], "mode": "bilinear", "scale_factor": [1.0, 1.3], "antialias": True}


def run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("call", [NO_SPELLING, ALIGN, SAME_LENGTH_AA])
def test_lowered_builds_without_a_spelling_and_is_right(call):
    res, _ = conventions.load("torch", call)
    with pytest.raises(ConversionError):
        conventions.dump("onnx", res, semantics=INSTALLED)
    model, notes = build_gradient(res, lowered=True, semantics=INSTALLED)
    assert any("built straight from the canonical map" in n for n in notes)
    onnx.checker.check_model(model, full_check=True)
    dy = np.random.default_rng(1).standard_normal(res.out_shape).astype(np.float32)
    got = run(model, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})
    np.testing.assert_allclose(got, resize_grad(dy.astype(np.float64), res), rtol=1e-5, atol=1e-6)


def test_lowered_same_length_antialias_matches_torch_autograd():
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
    res, _ = conventions.load("torch", SAME_LENGTH_AA)
    model, _ = build_gradient(res, lowered=True, semantics=INSTALLED)
    x = torch.zeros(SAME_LENGTH_AA["input_shape"], requires_grad=True)
    y = torch.nn.functional.interpolate(x, **{k: v for k, v in SAME_LENGTH_AA.items() if k != "input_shape"})
    dy = torch.tensor(np.random.default_rng(2).standard_normal(tuple(y.shape)), dtype=torch.float32)
    y.backward(dy)
    got = run(model, {"dY": dy.numpy(), "X": np.zeros(res.in_shape, np.float32)})
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_refusal_names_closest_spelling_and_weight_difference():
    res, _ = conventions.load("torch", ALIGN)
    with pytest.raises(ConversionError) as e:
        conventions.dump("onnx", res, backward=False, semantics=INSTALLED)
    rule = e.value.rule
    # sizes first: the closest spelling is align_corners with sizes [5, 10], not scales giving length 8
    assert '"sizes": [5, 10]' in rule and '"coordinate_transformation_mode": "align_corners"' in rule
    assert "max |dw| = 2.4e-07 on 4 of 26 taps" in rule and "--tolerance 3e-07 accepts it" in rule


def test_tolerance_accepts_within_and_refuses_beyond():
    res, _ = conventions.load("torch", ALIGN)
    node, notes = conventions.dump("onnx", res, backward=False, tolerance=3e-7, semantics=INSTALLED)
    assert node["sizes"] == [5, 10] and "within --tolerance 3e-07" in notes[-1] and "2.4e-07" in notes[-1]
    with pytest.raises(ConversionError):
        conventions.dump("onnx", res, backward=False, tolerance=2e-7, semantics=INSTALLED)
    for bad in (-1, float("nan"), "1e-6", True):
        with pytest.raises(DescError) as e:
            conventions.dump("onnx", res, tolerance=bad, semantics=INSTALLED)
        assert e.value.field == "tolerance"


def test_within_tolerance_model_records_the_bound_and_runs_close():
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
    res, _ = conventions.load("torch", ALIGN)
    model = build_resize(res, tolerance=3e-7, semantics=INSTALLED)
    props = {p.key: p.value for p in model.metadata_props}
    assert "max |dw| = 2.4e-07" in props[TOLERANCE_KEY]
    x = np.random.default_rng(3).standard_normal(ALIGN["input_shape"]).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=[5, 10], mode="bilinear",
                                           align_corners=True).numpy()
    assert np.abs(run(model, {"X": x}) - want).max() <= 3e-7 * 4 * np.abs(x).max()
    grad, notes = build_gradient(res, tolerance=3e-7, semantics=INSTALLED)
    assert {p.key for p in grad.metadata_props} == {TOLERANCE_KEY} and notes


def test_cli_convert_and_build_with_tolerance(tmp_path, capsys):
    from dml_desc.cli import main
    src = tmp_path / "ac.json"
    src.write_text(json.dumps(ALIGN))
    assert main(["convert", "--from", "torch", "--to", "onnx", str(src)]) == 2
    assert "--tolerance 3e-07 accepts it" in capsys.readouterr().err
    assert main(["convert", "--from", "torch", "--to", "onnx", str(src), "--tolerance", "3e-7"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["sizes"] == [5, 10] and "within --tolerance" in out.err
    assert main(["build", str(src), "-o", str(tmp_path / "g.onnx"), "--tolerance", "3e-7"]) == 0
    assert TOLERANCE_KEY in {p.key for p in onnx.load(str(tmp_path / "g.onnx")).metadata_props}
    assert main(["build", str(src), "-o", str(tmp_path / "l.onnx"), "--lowered"]) == 0
    assert "built straight from the canonical map" in capsys.readouterr().err


def test_docs_examples_run():
    """Every ```python block of docs/conventions-torch-tf.md runs as shown (a fresh interpreter each)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    from tests.test_readme import readme_steps
    root = Path(__file__).resolve().parent.parent
    steps = [s for s in readme_steps((root / "docs" / "conventions-torch-tf.md").read_text()) if s.kind == "python"]
    assert len(steps) == 6
    env = {**os.environ, "PYTHONPATH": str(root)}
    for step in steps:
        done = subprocess.run([sys.executable, "-"], input=step.text, capture_output=True, text=True, cwd=root,
                              env=env, timeout=120)
        assert done.returncode == 0, f"docs line {step.line}: {done.stderr[-2000:]}"


@pytest.mark.parametrize("seed", range(2))
def test_every_random_torch_call_builds_lowered(seed):
    """Random F.interpolate calls: build_gradient(lowered=True) builds each one (with or without a spelling), and
    onnxruntime runs it to the reference gradient."""
    from tests.test_torch_calls import random_call
    rng = np.random.default_rng(300 + seed)
    built = 0
    while built < 25:
        call = random_call(rng)
        try:
            res = conventions.torch.to_canonical(call)
        except DescError:
            continue                     # a call torch refuses too (tests/test_torch_calls.py checks that)
        model, _ = build_gradient(res, lowered=True, semantics=INSTALLED)
        dy = rng.standard_normal(res.out_shape).astype(np.float32)
        got = run(model, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})
        np.testing.assert_allclose(got, resize_grad(dy.astype(np.float64), res), rtol=1e-5, atol=1e-5,
                                   err_msg=str(call))
        built += 1
