"""The dml-desc command line: convert (stdin and files), build, lower, exit codes and error messages."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

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


# --- A new user's mistakes (issue 13): each gets a one-line error and a non-zero exit, or does what was meant. ---

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def one_line_error(proc, *words):
    """Exit 2, one line on stderr naming `words`, nothing on stdout, no traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def ops_of(path):
    return [(n.domain, n.op_type) for n in onnx.load(str(path)).graph.node]


def test_build_writes_the_gradient_of_a_forward_description(tmp_path):
    out = tmp_path / "g.onnx"
    for name in ("torch_interpolate", "tf_resize", "onnx_resizegrad"):
        proc = cli("build", str(EXAMPLES / f"{name}.json"), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert ("com.microsoft", "ResizeGrad") in ops_of(out) and "(lowered" not in proc.stdout
        assert ("describes the forward resize" in proc.stderr) == (name != "onnx_resizegrad")
    proc = cli("build", str(EXAMPLES / "torch_interpolate.json"), "-o", str(out), "--lowered")
    assert proc.returncode == 0 and "(lowered to standard ops" in proc.stdout
    assert all(domain in ("", "ai.onnx") for domain, _ in ops_of(out))
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    from conformance.reference import resize_grad
    from dml_desc import conventions
    from onnx_ops.run import run_model
    res, _ = conventions.load("torch", json.loads((EXAMPLES / "torch_interpolate.json").read_text()))
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(onnx.load(str(out)), {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=0, atol=1e-5)
    proc = cli("build", str(EXAMPLES / "torch_interpolate.json"), "-o", str(out), "--forward")
    assert proc.returncode == 0 and ops_of(out) == [("", "Resize")] and "Resize X [1, 3, 4, 6]" in proc.stdout


def test_build_refuses_contradictory_flags_and_unknown_formats(tmp_path):
    proc = cli("build", str(EXAMPLES / "torch_interpolate.json"), "-o", str(tmp_path / "g.onnx"), "--forward",
               "--lowered")
    assert proc.returncode == 2 and "not allowed with argument --forward" in proc.stderr
    assert not (tmp_path / "g.onnx").exists()
    odd = tmp_path / "odd.json"
    odd.write_text('{"shape": [1, 2]}')
    one_line_error(cli("build", str(odd), "-o", str(tmp_path / "g.onnx")), "no known format", "--from")
    proc = cli("build", str(EXAMPLES / "onednn_deconv_bwd_d.json"), "-o", str(tmp_path / "d.onnx"))
    assert proc.returncode == 0 and "ConvTransposeBackwardData" in proc.stdout
    one_line_error(cli("build", str(EXAMPLES / "onednn_deconv_bwd_d.json"), "-o", str(tmp_path / "d.onnx"),
                       "--forward"), "--forward", "gradient only")


def dml_desc_main(capsys, *args):
    """`dml-desc ARGS` in-process (the same main() the entry point runs) -> (exit code, stdout, stderr)."""
    from dml_desc.cli import main
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_example_converts_and_builds(tmp_path, capsys):
    names = sorted(p.stem for p in EXAMPLES.glob("*.json"))
    assert names == ["dml_resample_grad", "dml_resample_grad1", "onednn_deconv_bwd_d", "onednn_interpolate_bwd",
                     "onnx_resizegrad", "tf_resize", "torch_interpolate"]
    for name in names:
        fmt, path = name.split("_")[0], str(EXAMPLES / f"{name}.json")
        to = "dml" if fmt != "dml" else "onnx"
        code, out, err = dml_desc_main(capsys, "convert", "--from", fmt, "--to", to, path)
        assert code == 0 and json.loads(out), (name, err)
        code, out, err = dml_desc_main(capsys, "build", path, "-o", str(tmp_path / f"{name}.onnx"), "--lowered")
        assert code == 0 and out.startswith(f"wrote {tmp_path / name}.onnx: "), (name, out, err)
        onnx.checker.check_model(onnx.load(str(tmp_path / f"{name}.onnx")), full_check=True)
    proc = cli("example")
    assert proc.returncode == 0 and [line.split()[0] for line in proc.stdout.splitlines()] == names
    proc = cli("example", "dml_resample_grad")
    assert json.loads(proc.stdout) == DOC_EXAMPLE
    one_line_error(cli("example", "dml_resample"), "is no example", "did you mean 'dml_resample_grad'")


def test_wrong_from_names_the_key_and_the_right_format():
    line = one_line_error(cli("convert", "--from", "torch", "--to", "onnx", str(EXAMPLES / "dml_resample_grad.json")),
                          "InputGradientTensor", "unknown key", "try --from dml")
    assert line.startswith("dml-desc: error: ")
    one_line_error(cli("convert", "--from", "dml", "--to", "onnx", str(EXAMPLES / "torch_interpolate.json")),
                   "Operator", "try --from torch")


def test_misspelt_keys_are_named_with_the_nearest_known_key(doc_example):
    doc_example["InputPixelOffset"] = doc_example.pop("InputPixelOffsets")
    one_line_error(cli("convert", "--from", "dml", "--to", "onnx", "-", stdin=json.dumps(doc_example)),
                   "InputPixelOffset=", "unknown field", "did you mean 'InputPixelOffsets'?")
    torch_json = {"input_shape": [1, 1, 2, 2], "mod": "nearest", "size": [4, 4]}
    one_line_error(cli("convert", "--from", "torch", "--to", "onnx", "-", stdin=json.dumps(torch_json)),
                   "mod='nearest'", "did you mean 'mode'?")


def test_refusals_say_what_was_assumed():
    one_line_error(cli("convert", "--from", "dml", "--to", "tf", str(EXAMPLES / "dml_resample_grad.json")),
                   "axes[3]", "read as NHWC")
    one_line_error(cli("convert", "--from", "onednn", "--to", "onnx",
                       str(Path(__file__).resolve().parent.parent / "conformance/data/onednn-graph-json/"
                           "interpolate_bwd_2d.json")), "the closest spelling it has gives")


def test_operator_option_takes_every_operator_it_lists(capsys):
    path = str(EXAMPLES / "dml_resample_grad.json")
    for short in ("RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1"):
        for spelling in (short, "DML_OPERATOR_" + short, short.lower()):
            code, out, err = dml_desc_main(capsys, "convert", "--from", "dml", "--to", "dml", "--operator", spelling,
                                           path)
            assert code == 0, err
            assert json.loads(out)["Operator"] == "DML_OPERATOR_" + short
    proc = cli("convert", "--from", "dml", "--to", "dml", "--operator", "RESAMPLE4", path)
    assert proc.returncode == 2 and "'RESAMPLE4' is not one of RESAMPLE1, RESAMPLE2" in proc.stderr
    help_text = " ".join(cli("convert", "--help").stdout.split())
    assert "RESAMPLE1, RESAMPLE2, RESAMPLE3, RESAMPLE_GRAD, RESAMPLE_GRAD1" in help_text


def test_version():
    import dml_desc
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"dml-desc {dml_desc.__version__}"
    proc = subprocess.run([sys.executable, "-m", "conformance", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and dml_desc.__version__ in proc.stdout
    import re
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == dml_desc.__version__


def test_keep_cuda_warns_without_cuda(tmp_path):
    model = tmp_path / "g.onnx"
    assert cli("build", str(EXAMPLES / "onnx_resizegrad.json"), "-o", str(model)).returncode == 0
    proc = cli("lower", str(model), "-o", str(model), "--keep-cuda")
    assert proc.returncode == 0, proc.stderr
    from onnx_ops.run import available_providers
    has_cuda = "CUDAExecutionProvider" in available_providers()
    assert ("warning: --keep-cuda" in proc.stderr) == (not has_cuda)
    assert ("kept native (CUDA)" in proc.stdout) and ops_of(model) == [("com.microsoft", "ResizeGrad")]


def test_convert_starts_without_onnxruntime_or_torch():
    code = ("import sys; from dml_desc.cli import main; main(['convert', '--from', 'dml', '--to', 'onnx', "
            f"{str(EXAMPLES / 'dml_resample_grad.json')!r}]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'onnxruntime', 'torch', 'tensorflow'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("[]"), proc.stdout + proc.stderr


# --- conformance: filters that match nothing, backend names, --quiet, progress off a terminal ---

@pytest.fixture(scope="module")
def built_catalog():
    """The real catalog, built once for this module (building it takes seconds)."""
    from conformance import suite
    return {full: suite.catalog(full) for full in (False,)}


def conformance(capsys, *args):
    """`python -m conformance ARGS` in-process, on the catalog built once."""
    from conformance.cli import main
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def _reuse_catalog(request, monkeypatch):
    if request.node.name.startswith("test_conformance_"):
        cached = request.getfixturevalue("built_catalog")
        monkeypatch.setattr("conformance.suite.catalog", lambda full=False, *rest: list(cached[full]))
        monkeypatch.setattr("conformance.cli.extra_backends", lambda names: [])


def test_conformance_filters_that_match_nothing_exit_2(capsys):
    for args, words in ((["--backend", "nonsense"], ["'nonsense' is no backend", "numpy, ", "onnxruntime-cuda, torch"]),
                        (["--backend", "torc"], ["did you mean 'torch'?"]),
                        (["-k", "zzz"], ["-k 'zzz' matches no case name", "--list"]),
                        (["-k", "dml_documented_example", "--dtype", "f16"], ["match no check", "f64, f32, f16"])):
        code, out, err = conformance(capsys, *args, "--quiet")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (args, out, err)
        # issue 24: conformance errors speak as the command users type
        assert err.startswith("dml-desc: error: ") and all(w in err for w in words), err


def test_conformance_backend_names_users_type_and_old_aliases(capsys):
    code, out, err = conformance(capsys, "--list-backends")
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert {"numpy", "onnxruntime", "onnxruntime-cuda", "torch", "onednn"} <= set(rows)
    # issue 18: the lowered onnxruntime checks are the onnxruntime backend (build_resize_grad -> lower(), the
    # CLI's path), named with its execution provider; the reference is the numpy backend
    ort = "onnxruntime:CPUExecutionProvider"
    assert "numpy" in rows["numpy"] and ort in rows["onnxruntime"]
    for name, backend in (("numpy", "numpy"), ("onnxruntime", ort), (ort, ort)):
        code, out, err = conformance(capsys, "--list", "-k", "dml_documented_example", "--backend", name)
        assert code == 0 and [line.split("\t")[2] for line in out.splitlines()] == [backend], (name, out)
    code, out, err = conformance(capsys, "--list", "-k", "cross:", "--backend", "torch")
    assert code == 0 and out and all(line.split("\t")[2] == "torch" for line in out.splitlines())
    code, out, err = conformance(capsys, "--list", "-k", "cuda:", "--backend", "onnxruntime-cuda")
    assert code == 0 and {line.split("\t")[2] for line in out.splitlines()} == \
        {"onnxruntime:CUDAExecutionProvider", "onnxruntime-native:CUDAExecutionProvider"}     # issue 18


def test_conformance_quiet_is_one_line_and_no_progress_off_a_terminal(capsys):
    # the documented example on numpy and onnxruntime (torch is optional); the second line counts passes per oracle
    ours = ("--backend", "numpy", "--backend", "onnxruntime")
    code, out, err = conformance(capsys, "-k", "dml_documented_example", "--quiet", *ours)
    assert code == 0 and err == ""
    assert out.splitlines() == [out.splitlines()[0], "passes by oracle: DirectML documentation 2"]
    assert out.startswith("2 passed, 0 failed, 0 skipped in ")
    code, out, err = conformance(capsys, "-k", "dml_documented_example", *ours)
    assert code == 0 and err == "" and "\r" not in out            # capsys' stderr is not a terminal
    assert "dml_documented_example" in out and out.rstrip().splitlines()[-2].startswith("2 passed")


def test_meaningless_error_columns_read_as_such():
    from conformance.catalog import Check
    from conformance.judges import benchdnn, errors
    from conformance.suite import run_check
    assert errors(np.array([1e-7, 2.0]), np.array([0.0, 2.0])) == (1e-7, 5e-8)      # over max(1, max |want|)
    zero = run_check(Check("zeros", "onednn", "numpy-reference", "f32",
                           lambda: (np.full(4, 1e-7), np.zeros(4), benchdnn("linear", "f32"))))
    assert zero.status == "pass" and zero.max_abs_err == 1e-7 and zero.max_rel_err is None
    from conformance.cli import print_table
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_table([zero])
    assert buf.getvalue().splitlines()[1].split()[4:] == ["1.00e-07", "-", "PASS"]
