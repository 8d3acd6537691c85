"""Every writer is the one atomic writer, and the Python API's flags and provider names are strict (issues 20, 22:
found by a review of the merged tree)."""
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from dml_desc import DescError, conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.cli import main

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "dml_resample_grad.json")


def test_explain_svg_never_replaces_a_fifo_and_names_an_svg(tmp_path, capsys):
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    assert main(["explain", EXAMPLE, "--svg", str(fifo)]) == 2
    assert "FIFO" in capsys.readouterr().err and fifo.is_fifo()
    assert main(["explain", EXAMPLE, "--svg", str(tmp_path / "grid.png")]) == 2
    assert "must name an .svg file" in capsys.readouterr().err and not (tmp_path / "grid.png").exists()
    assert main(["explain", EXAMPLE, "--svg", str(tmp_path / "grid.svg")]) == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "grid.svg").stat().st_mode & 0o777 == 0o666 & ~umask     # not mkstemp's 0600


def test_build_gradient_flag_is_a_bool():
    from onnx_ops.build import build_gradient
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4], "mode": "linear", "size": [8]})
    with pytest.raises(DescError, match="lowered"):
        build_gradient(res, lowered="no", semantics=INSTALLED)


def test_run_model_refuses_an_unknown_provider():
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from onnx_ops.build import build_gradient
    from onnx_ops.run import run_model
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4], "mode": "linear", "size": [8]})
    model, _ = build_gradient(res, lowered=True, semantics=INSTALLED)
    feeds = {"dY": np.ones((1, 1, 8), np.float32), "X": np.zeros((1, 1, 4), np.float32)}
    for bad in (["Bogus"], "Bogus", "CPUExecutionProviderr"):
        with pytest.raises(DescError, match="provider"):
            run_model(model, feeds, provider=bad)


def test_run_model_refuses_a_provider_that_falls_back_to_the_cpu():
    """onnxruntime runs a session on its CPU, with a warning, when the provider asked for is missing or fails to
    start (a CPU build, CUDA libraries not found): a CUDA check would then pass on the CPU. run_model refuses."""
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    missing = next((p for p in ort.get_all_providers() if p not in ort.get_available_providers()), None)
    if missing is None:
        pytest.skip("this onnxruntime has every provider it knows")
    from onnx_ops.build import build_gradient
    from onnx_ops.run import run_model
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4], "mode": "linear", "size": [8]})
    model, _ = build_gradient(res, lowered=True, semantics=INSTALLED)
    feeds = {"dY": np.ones((1, 1, 8), np.float32), "X": np.zeros((1, 1, 4), np.float32)}
    with warnings.catch_warnings(), pytest.raises(DescError, match=f"{missing}.*did not start.*fell back to "
                                                  "CPUExecutionProvider"):
        warnings.simplefilter("ignore")            # onnxruntime's own: "Specified provider ... is not in available"
        run_model(model, feeds, provider=missing)


def test_run_on_onnxruntime_builds_a_map_onnx_cannot_spell(tmp_path):
    """torch's in/out scale has no float32 ONNX spelling: `run` lowers the map itself, says so, and equals the
    NumPy reference."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    desc = tmp_path / "t.json"
    desc.write_text('{"input_shape": [1, 2, 9, 7], "mode": "bilinear", "size": [11, 13]}')
    dy = np.random.default_rng(0).standard_normal((1, 2, 11, 13)).astype(np.float32)
    np.save(tmp_path / "dy.npy", dy)
    out = {}
    for backend in ("onnxruntime", "numpy"):
        proc = subprocess.run([sys.executable, "-m", "dml_desc.cli", "run", "--from", "torch", str(desc), "--backend",
                               backend, "--dy", str(tmp_path / "dy.npy"), "-o", str(tmp_path / f"{backend}.npy")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[backend] = np.load(tmp_path / f"{backend}.npy")
        if backend == "onnxruntime":
            assert "built straight from the canonical map" in proc.stderr
    np.testing.assert_allclose(out["onnxruntime"], out["numpy"], rtol=1e-5, atol=1e-5)
