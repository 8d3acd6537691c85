"""Issue 24's CLI slips: one-line usage errors with the closest valid value, --layout for tf and torch, what
`lower --keep-cuda` and `build --lowered` report, the note on a cast .npy, and one way to install torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dml_desc.cli import main
from dml_desc.errors import TORCH_INSTALL

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert err.startswith("dml-desc: error: ") and len(err.splitlines()) == 1, err
    assert "usage:" not in err
    return err


@pytest.mark.parametrize("argv, expected", [
    (["convert", "--from", "dml", "--to", "dml", "--operator", "RESAMPLE_GRAD2", EXAMPLES / "dml_resample_grad.json"],
     "is not one of RESAMPLE1, RESAMPLE2, RESAMPLE3, RESAMPLE_GRAD, RESAMPLE_GRAD1 (did you mean 'RESAMPLE_GRAD'?)"),
    (["convert", "--from", "dml", "--to", "tfx", EXAMPLES / "dml_resample_grad.json"], "(did you mean 'tf'?)"),
    (["run", EXAMPLES / "dml_resample_grad.json", "--backend", "onnxrt", "--dy", "x.npy", "-o", "y.npy"],
     "(did you mean 'onnxruntime'?)"),
    (["convrt"], "invalid choice: 'convrt'"),
    (["convrt"], "(did you mean 'convert'?)"),
    (["build", EXAMPLES / "dml_resample_grad.json", "-o", "x.onnx", "--lowerd"],
     "unrecognized arguments: --lowerd (did you mean '--lowered'?) (see dml-desc build --help)"),
    (["explain", EXAMPLES / "dml_resample_grad.json", "--sgv", "x.svg"], "(did you mean '--svg'?)"),
    (["convert", "--from", "dml", EXAMPLES / "dml_resample_grad.json"], "the following arguments are required: --to"),
])
def test_usage_errors_are_one_line_with_the_closest_value(argv, expected, capsys):
    assert expected in one_line_error(capsys, *argv)


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["convert", "--help"])
    assert exit_.value.code == 0 and "usage: dml-desc convert" in capsys.readouterr().out


def test_nchw_to_tf_and_tf_to_torch_take_a_layout(capsys):
    """DirectML's example is NCHW (1, 1, 2, 2) -> (1, 1, 1, 3): TF gets it as NHWC (1, 2, 2, 1) -> size [1, 3];
    the TF example (NHWC) goes to torch as NCHW. Without --layout the refusal names the option."""
    code, _, err = run(capsys, "convert", "--from", "dml", "--to", "tf", EXAMPLES / "dml_resample_grad.json")
    assert code == 2 and err.rstrip().endswith("--layout NHWC moves the channel axis") and len(err.splitlines()) == 1
    code, out, err = run(capsys, "convert", "--from", "dml", "--to", "tf", "--layout", "NHWC",
                         EXAMPLES / "dml_resample_grad.json")
    assert code == 0 and "read NCX and written NHWC" in err
    tf = json.loads(out)
    assert tf["input_shape"] == [1, 2, 2, 1] and tf["size"] == [1, 3] and tf["method"] == "nearest"

    code, _, err = run(capsys, "convert", "--from", "tf", "--to", "torch", EXAMPLES / "tf_resize.json")
    assert code == 2 and "--layout NCHW moves the channel axis" in err
    tf_in = json.loads((EXAMPLES / "tf_resize.json").read_text())
    code, out, _ = run(capsys, "convert", "--from", "tf", "--to", "torch", "--layout", "NCHW",
                       EXAMPLES / "tf_resize.json")
    torch_obj = json.loads(out)
    n, h, w, c = tf_in["input_shape"]
    assert code == 0 and torch_obj["input_shape"] == [n, c, h, w] and torch_obj["size"] == tf_in["size"]


def test_the_layout_round_trip_keeps_the_gradient(capsys, tmp_path):
    """DirectML NCHW -> TF (NHWC) -> torch (NCHW) gives the same gradient as the original, by the reference."""
    from conformance.reference import resize_grad
    from dml_desc import conventions
    _, out, _ = run(capsys, "convert", "--from", "dml", "--to", "tf", "--layout", "NHWC",
                    EXAMPLES / "dml_resample_grad.json")
    (tmp_path / "tf.json").write_text(out)
    code, back, _ = run(capsys, "convert", "--from", "tf", "--to", "torch", "--layout", "NCHW", tmp_path / "tf.json")
    assert code == 0
    original, _ = conventions.load("dml", json.loads((EXAMPLES / "dml_resample_grad.json").read_text()))
    again, _ = conventions.load("torch", json.loads(back))
    dy = np.array([[[[4.0, 5.0, 6.0]]]])
    assert resize_grad(dy, again).tolist() == resize_grad(dy, original).tolist() == [[[[9.0, 6.0], [0.0, 0.0]]]]


def test_build_lowered_on_a_deconvolution_says_so(capsys, tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    code, out, err = run(capsys, "build", EXAMPLES / "onednn_deconv_bwd_d.json", "-o", tmp_path / "d.onnx", "--lowered")
    assert code == 0 and "note: --lowered: a ConvTransposeBackwardData is written as a standard Conv already" in err


def test_lower_keep_cuda_counts_kept_nodes_apart(capsys, tmp_path):
    """A linear half_pixel 4-D ResizeGrad fits onnxruntime's CUDA kernel: --keep-cuda keeps it, and the summary
    says it was kept, not rewritten."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    grad = tmp_path / "grad.onnx"
    assert run(capsys, "build", EXAMPLES / "onnx_resizegrad.json", "-o", grad)[0] == 0
    code, out, _ = run(capsys, "lower", grad, "-o", tmp_path / "kept.onnx", "--keep-cuda")
    assert code == 0
    assert "0 ResizeGrad node(s) rewritten, 1 kept native for CUDA" in out and "kept native (CUDA)" in out
    code, out, _ = run(capsys, "lower", grad, "-o", tmp_path / "low.onnx")
    assert code == 0 and "1 ResizeGrad node(s) rewritten (" in out and "kept" not in out


def test_a_float64_npy_for_an_f32_description_gets_a_note(capsys, tmp_path):
    dy = tmp_path / "dy.npy"
    np.save(dy, np.array([[[[4.0, 5.0, 6.0]]]]))                 # float64
    code, out, err = run(capsys, "run", EXAMPLES / "dml_resample_grad.json", "--backend", "numpy", "--dy", dy,
                         "-o", tmp_path / "dx.npy")
    assert code == 0 and "note: --dy holds float64; it is cast to f32 (the description's type" in err
    assert np.load(tmp_path / "dx.npy").tolist() == [[[[9.0, 6.0], [0.0, 0.0]]]]
    code, _, err = run(capsys, "run", EXAMPLES / "dml_resample_grad.json", "--backend", "numpy", "--dy", dy,
                       "-o", tmp_path / "dx.npy", "--dtype", "f64")
    assert code == 0 and "note:" not in err
    np.save(dy, np.array([[[[4.0, 5.0, 6.0]]]], np.float32))
    code, _, err = run(capsys, "run", EXAMPLES / "dml_resample_grad.json", "--backend", "numpy", "--dy", dy,
                       "-o", tmp_path / "dx.npy")
    assert code == 0 and "note:" not in err


def test_every_torch_message_and_the_readme_say_the_same_install():
    """One way to install torch (the CPU wheel), in the README and in every message that asks for it."""
    assert TORCH_INSTALL in (ROOT / "README.md").read_text(encoding="utf-8")
    for path in ("conformance/run_command.py", "conformance/backends/builtin.py", "onnx_ops/run.py",
                 "bench/resize_grad_bench.py"):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert "TORCH_INSTALL" in text and "pip install torch==" not in text, path


def test_the_benchmark_says_torch_is_missing_instead_of_nan(tmp_path):
    """Without torch (simulated by a module finder that refuses it) the benchmark names what is missing and
    prints no nan."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    code = ("import sys, importlib.abc\n"
            "class NoTorch(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ImportError('no torch here')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            f"sys.path.insert(0, {str(ROOT / 'bench')!r})\n"
            "import resize_grad_bench\n"
            "resize_grad_bench.main(['--quick', '--rounds', '1', '--no-numpy', '--no-memory', '--threads', '1'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "torch not installed" in proc.stdout and TORCH_INSTALL in proc.stdout
    assert "nan" not in proc.stdout.lower().replace("nanosec", "")
