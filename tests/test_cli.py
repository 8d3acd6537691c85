"""The dml-desc command line: convert (stdin and files), build, lower, exit codes and error messages."""
import json
import subprocess
import sys

import numpy as np
import onnx

from tests.conftest import DOC_EXAMPLE


def cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "dml_desc.cli", *args], input=stdin, capture_output=True, text=True)


def test_convert_from_stdin_to_every_format_that_can_express_it():
    for fmt in ("dml", "onnx", "torch"):
        proc = cli("convert", "--from", "dml", "--to", fmt, "-", stdin=json.dumps(DOC_EXAMPLE))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)
    proc = cli("convert", "--from", "dml", "--to", "onednn", "-", stdin=json.dumps(DOC_EXAMPLE))
    assert proc.returncode == 2 and "round_prefer" in proc.stderr and "Traceback" not in proc.stderr


def test_convert_options_and_notes():
    proc = cli("convert", "--from", "dml", "--to", "dml", "--operator", "DML_OPERATOR_RESAMPLE_GRAD1", "-",
               stdin=json.dumps(DOC_EXAMPLE))
    out = json.loads(proc.stdout)
    assert out["Operator"] == "DML_OPERATOR_RESAMPLE_GRAD1" and out["RoundingDirection"] == "INCREASING"
    proc = cli("convert", "--from", "dml", "--to", "torch", "-", stdin=json.dumps(DOC_EXAMPLE))
    assert "note:" in proc.stderr and "only for these shapes" in proc.stderr


def test_bad_files_give_clear_errors(tmp_path):
    proc = cli("convert", "--from", "dml", "--to", "onnx", str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "cannot be read" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = cli("convert", "--from", "dml", "--to", "onnx", str(bad))
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr
    bad.write_text(json.dumps({**DOC_EXAMPLE, "Scales": [1, 1, -1, 1]}))
    proc = cli("convert", "--from", "dml", "--to", "onnx", str(bad))
    assert proc.returncode == 2 and "Scales" in proc.stderr and "Traceback" not in proc.stderr


def test_build_then_lower_in_place(tmp_path):
    src = tmp_path / "grad.json"
    src.write_text(json.dumps(DOC_EXAMPLE))
    model = tmp_path / "grad.onnx"
    assert cli("build", str(src), "-o", str(model)).returncode == 0
    assert any(n.op_type == "ResizeGrad" for n in onnx.load(str(model)).graph.node)
    proc = cli("lower", str(model), "-o", str(model))
    assert proc.returncode == 0 and "1 ResizeGrad node(s) rewritten" in proc.stdout
    from onnx_ops.run import run_model
    dx = run_model(onnx.load(str(model)), {"dY": np.array([[[[4, 5, 6]]]], np.float32),
                                           "X": np.zeros((1, 1, 2, 2), np.float32)})[0]
    np.testing.assert_array_equal(dx, [[[[9, 6], [0, 0]]]])
    proc = cli("lower", str(tmp_path / "nope.onnx"), "-o", str(model))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
