"""Bad input on the command line: one line, exit 2, never a traceback; a clean terminal (input text never carries
control sequences to it); bad environment values and Ctrl-C, one line each."""
import numpy as np
import pytest

from dml_desc import DescError
from tests.conftest import CONV_ONNX, DOC_EXAMPLE
from tests.helpers_bad_input import cli, dml_with, resize_grad_model, torch_with
from tests.helpers_signals import default_sigint


# ---- the CLI: one line, exit 2, never a traceback ---------------------------------------------------------------

def assert_one_line_error(proc, *words):
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("note: ")]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("dml-desc: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_cli_bad_files(tmp_path):
    import json
    files = {"dup.json": b'{"Operator": "DML_OPERATOR_RESAMPLE_GRAD", "Operator": "x"}',
             "latin1.json": '{"Operator": "é"}'.encode("latin-1"),
             "deep.json": b"[" * 100000 + b"]" * 100000,
             "huge.json": json.dumps(dml_with(Scales=[1, 1, 1e39, 1.5])).encode()}
    expect = {"dup.json": "twice", "latin1.json": "UTF-8", "deep.json": "deeply", "huge.json": "Scales[2]"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert_one_line_error(cli("convert", "--from", "dml", "--to", "onnx", str(tmp_path / name)), expect[name])
    assert_one_line_error(cli("convert", "--from", "dml", "--to", "onnx", str(tmp_path)), "cannot be read")


def test_cli_bad_model_files(tmp_path):
    good = resize_grad_model().SerializeToString()
    models = {"empty.onnx": b"", "text.onnx": b"hello, not a model\n", "truncated.onnx": good[: len(good) // 2],
              "random.onnx": bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8))}
    for name, data in models.items():
        (tmp_path / name).write_bytes(data)
        proc = cli("lower", str(tmp_path / name), "-o", str(tmp_path / "out.onnx"))
        assert_one_line_error(proc)
        assert not (tmp_path / "out.onnx").exists(), "no 0-byte output"
    assert_one_line_error(cli("lower", str(tmp_path), "-o", str(tmp_path / "out.onnx")))
    (tmp_path / "good.onnx").write_bytes(good)
    assert_one_line_error(cli("lower", str(tmp_path / "good.onnx"), "-o", str(tmp_path / "missing" / "o.onnx")), "OUT")
    assert_one_line_error(cli("lower", str(tmp_path / "good.onnx"), "-o", str(tmp_path)), "OUT")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


def test_cli_writes_files_with_the_umask_mode_and_keeps_a_rewritten_files_mode(tmp_path):
    import os
    (tmp_path / "m.onnx").write_bytes(resize_grad_model().SerializeToString())
    old = os.umask(0o022)
    try:
        assert cli("lower", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "new.onnx")).returncode == 0
        assert (tmp_path / "new.onnx").stat().st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "m.onnx", 0o640)
        assert cli("lower", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.onnx")).returncode == 0
        assert (tmp_path / "m.onnx").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_cli_build_refuses_what_onnxruntime_cannot_run(tmp_path):
    import json
    (tmp_path / "c.json").write_text(json.dumps(CONV_ONNX))
    assert_one_line_error(cli("build", str(tmp_path / "c.json"), "-o", str(tmp_path / "c.onnx"), "--dtype", "f64"),
                          "dtype")
    (tmp_path / "big.json").write_text(json.dumps(torch_with(input_shape=[2 ** 40, 2, 4, 4])))
    assert_one_line_error(cli("build", str(tmp_path / "big.json"), "-o", str(tmp_path / "b.onnx")), "input_shape")


def test_cli_closed_pipe_exits_quietly():
    import subprocess
    import sys
    code = ("import os, sys\nr, w = os.pipe()\nos.close(r)\nos.dup2(w, 1)\n"
            "from dml_desc.cli import main\nsys.exit(main(['example', 'dml_resample_grad']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr


def test_conformance_refuses_an_unwritable_report_path_before_running(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "conformance", "--json", str(tmp_path / "no" / "r.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("dml-desc: error: --json"), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# ---- a clean terminal: input text never carries control sequences to the terminal --------------------------------

HOSTILE = "\x1b]0;owned\x07\x1b[2J\rFAKE: all checks passed\u202e\u2066"


def assert_clean(text):
    for ch in ("\x1b", "\x07", "\r", "\u202e", "\u2066"):
        assert ch not in text, repr(text)


def test_json_keys_and_values_are_escaped_on_the_terminal(tmp_path):
    import json
    bad = dict(DOC_EXAMPLE, **{HOSTILE: 1})
    path = tmp_path / f"desc{HOSTILE[:4]}.json"
    path.write_text(json.dumps(bad, ensure_ascii=False))
    proc = cli("convert", str(path), "--from", "dml", "--to", "onnx")
    assert proc.returncode == 2
    assert_clean(proc.stderr)
    assert "\\x1b]0;owned\\x07" in proc.stderr and "\\u202e" in proc.stderr     # shown, escaped
    proc = cli("convert", str(tmp_path / f"missing{HOSTILE}.json"), "--from", "dml", "--to", "onnx")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert_clean(proc.stderr)


def test_node_and_file_names_are_escaped_on_the_terminal(tmp_path):
    import onnx
    model = resize_grad_model()
    model.graph.node[0].name = HOSTILE
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    out = tmp_path / f"out{HOSTILE[:5]}.onnx"
    proc = cli("lower", str(path), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout + proc.stderr)
    assert "FAKE" in proc.stdout and "\\x1b" in proc.stdout


def test_the_error_field_itself_is_escaped_for_api_callers():
    e = DescError(HOSTILE, HOSTILE, "rule")
    assert_clean(str(e))
    assert_clean(e.field)


# ---- environment values and Ctrl-C: one line each ---------------------------------------------------------------

def _dml_desc(*argv, env=None, **kw):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-m", "dml_desc.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": root, **(env or {})}, timeout=120, **kw)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1e3", "\x1b[2J"])
def test_a_bad_budget_environment_value_is_one_line(value, tmp_path):
    import os
    import subprocess
    import sys
    env = {"DML_DESC_MAX_AXIS": value}
    assert _dml_desc("--version", env=env).returncode == 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    desc = os.path.join(root, "examples", "torch_interpolate.json")
    proc = _dml_desc("build", desc, "-o", str(tmp_path / "m.onnx"), env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "DML_DESC_MAX_AXIS" in proc.stderr
    assert "\x1b" not in proc.stderr
    imported = subprocess.run([sys.executable, "-c", "import onnx_ops, dml_desc"], capture_output=True, text=True,
                              env={**os.environ, **env})
    assert imported.returncode == 0, imported.stderr


def test_ctrl_c_is_one_line_and_exit_130():
    import os
    import signal
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from dml_desc.cli import main; "
                             "import dml_desc.conventions; "
                             "print('ready', flush=True); sys.exit(main(['convert', '-', '--from', 'dml', "
                             "'--to', 'onnx']))"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": root},
                            preexec_fn=default_sigint)
    assert proc.stdout.readline().strip() == "ready"
    import time
    time.sleep(1.0)                       # inside main(), waiting on stdin
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "dml-desc: interrupted\n", err
