"""Issue 30: plug-ins run behind a boundary (a worker process per plug-in), and the conformance CLI's slips.

Every plug-in here is a real module written into tmp_path and run through the real CLI in a subprocess: an exit,
an interrupt, a crash or a hang is that case's failure with its reason, never the suite's exit status; a stray
module in the working folder never shadows what the project imports; reports stay valid for any name."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.helpers_signals import default_sigint

ROOT = Path(__file__).resolve().parent.parent

# A correct kernel for the ONNX description (the NumPy reference), and what each plug-in does on some modes.
KERNEL = """
import os, sys, time
from dml_desc import conventions
from dml_desc.reference import resize_grad

def correct(dy, description):
    return resize_grad(dy, conventions.load("onnx", description, semantics=conventions.onnx.installed_semantics())[0])

def mode(description):
    return description["attributes"].get("mode", "nearest")
"""


def write_kernel(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(KERNEL + body)


def conformance(cwd, *args, console_script=False, timeout=300):
    """The suite in a subprocess in `cwd`: `python -m conformance ARGS`, or as the `dml-desc` console script runs
    it (sys.path[0] is the script's folder, not the working folder)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if console_script:
        script = Path(cwd).parent / "bin" / "dml-desc.py"
        script.parent.mkdir(exist_ok=True)
        script.write_text("import sys\nfrom dml_desc.cli import main\nsys.exit(main())\n")
        argv = [sys.executable, str(script), "conformance", *args]
    else:
        argv = [sys.executable, "-m", "conformance", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def records(path: Path) -> dict:
    """{case: (status, reason)} of a --json file."""
    return {r["case"]: (r["status"], r["reason"]) for r in json.loads(path.read_text())["results"]}


def test_exit_and_interrupt_in_a_plugin_fail_that_case_and_the_reports_are_written(tmp_path):
    write_kernel(tmp_path, "quitter", """
def grad(dy, description):
    if mode(description) == "nearest":
        sys.exit(0)
    if mode(description) == "cubic":
        raise KeyboardInterrupt
    return correct(dy, description)
""")
    proc = conformance(tmp_path, "--backend", "py:quitter:grad", "-k", "cross:", "--quiet", "--json", "r.json",
                       "--junit", "r.xml", "--html", "r.html")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 passed, 4 failed, 0 skipped" in proc.stdout
    got = records(tmp_path / "r.json")
    assert got["cross:nearest_x1.5_half_pixel"] == ("fail", "SystemExit(0): the plug-in called sys.exit(); a kernel "
                                                    "returns dX")
    assert got["cross:bicubic_x2_half_pixel"] == ("fail", "KeyboardInterrupt(): raised by the plug-in itself")
    assert got["cross:bilinear_x2_half_pixel"][0] == "pass"
    assert ET.parse(tmp_path / "r.xml").getroot().get("failures") == "4"
    assert "KeyboardInterrupt(): raised by the plug-in itself" in (tmp_path / "r.html").read_text()


def test_a_crash_fails_its_case_and_the_next_case_gets_a_fresh_worker(tmp_path):
    write_kernel(tmp_path, "crasher", """
import ctypes
def grad(dy, description):
    if mode(description) == "nearest":
        ctypes.string_at(0)             # SIGSEGV, as a native kernel's bad pointer
    return correct(dy, description)
""")
    runs = []
    for out in ("a.json", "b.json"):
        proc = conformance(tmp_path, "--backend", "py:crasher:grad", "-k", "cross:", "--quiet", "--json", out)
        assert proc.returncode == 1 and "3 passed, 3 failed, 0 skipped" in proc.stdout, proc.stdout + proc.stderr
        runs.append(records(tmp_path / out))
    assert runs[0] == runs[1]                            # deterministic, crashes and restarts included
    status, reason = runs[0]["cross:nearest_down2_half_pixel_ties"]
    assert status == "fail" and reason.startswith("this case ended the worker process (signal 11, SIGSEGV)"), reason
    assert runs[0]["cross:bicubic_x2_half_pixel"][0] == "pass"       # after the crashes, on a fresh worker


def test_a_hang_fails_after_the_case_timeout_and_its_worker_is_stopped(tmp_path):
    write_kernel(tmp_path, "sleeper", """
def grad(dy, description):
    if mode(description) == "nearest":
        with open("worker.pid", "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(1000)
    return correct(dy, description)
""")
    start = time.monotonic()
    proc = conformance(tmp_path, "--backend", "py:sleeper:grad", "-k", "cross:", "--quiet", "--json", "r.json",
                       "--case-timeout", "2", timeout=200)
    assert proc.returncode == 1 and "3 passed, 3 failed, 0 skipped" in proc.stdout, proc.stdout + proc.stderr
    assert time.monotonic() - start < 150
    status, reason = records(tmp_path / "r.json")["cross:nearest_x1.5_half_pixel"]
    assert status == "fail" and reason.startswith("this case ran past the case timeout of 2 s (--case-timeout)")
    pids = [int(p) for p in (tmp_path / "worker.pid").read_text().split()]
    assert len(pids) == 3 and os.getpid() not in pids
    for pid in pids:                                     # every hung worker was killed and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to the suite's process")
def test_ctrl_c_on_the_suite_stops_it_with_130_and_ends_the_worker(tmp_path):
    write_kernel(tmp_path, "sleeper", """
def grad(dy, description):
    with open("worker.pid", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(1000)
""")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "--backend", "py:sleeper:grad", "-k", "cross:",
                             "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().endswith("dml-desc: interrupted"), out + err
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


@pytest.mark.parametrize("module, words", [
    ("import sys\nsys.exit(3)\n", "loading it raised SystemExit: 3"),
    ("import os\nos._exit(0)\n", "cannot be loaded: loading the plug-in ended the worker process (exit status 0)"),
    ("class K:\n    convention = 'onnx'\n    def __init__(self):\n        raise RuntimeError('no device')\n"
     "    def run(self, description, dy, dtype):\n        return dy\n",
     "constructing K() raised RuntimeError: no device"),
    ("class K:\n    convention = 'caffe'\n    dtypes = ('f32',)\n    def run(self, description, dy, dtype):\n"
     "        return dy\n", "K.convention='caffe': must be one of dml, onednn, onnx, torch, tf"),
])
def test_a_plugin_that_cannot_load_is_one_line(tmp_path, module, words):
    (tmp_path / "plug.py").write_text(module)
    name = "py:plug:K" if "class K" in module else "py:plug:f"
    proc = conformance(tmp_path, "--backend", name, "-k", "cross:", "--quiet")
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("dml-desc: error: ") and words in proc.stderr, proc.stderr


@pytest.mark.parametrize("target, words", [
    ("no_such_module_h30:grad", "cannot import entry point 'no_such_module_h30:grad': No module named"),
    ("raising_mod:grad", "importing 'raising_mod:grad' raised RuntimeError: at import"),
])
def test_an_entry_point_that_cannot_load_is_one_line(tmp_path, target, words):
    site = tmp_path / "site"
    dist = site / "brokenkernel-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenkernel\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[dml_desc.backends]\nbroken-kernel = {target}\n")
    (site / "raising_mod.py").write_text("raise RuntimeError('at import')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    proc = subprocess.run([sys.executable, "-m", "conformance", "--backend", "broken-kernel", "-k", "cross:",
                           "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("dml-desc: error: ") and words in proc.stderr, proc.stderr


@pytest.mark.parametrize("console_script", [False, True])
def test_the_working_folder_cannot_shadow_what_the_project_imports(tmp_path, console_script):
    """Stray numpy/onnx/onnxruntime/ml_dtypes/dml_desc modules in the working folder are never imported; the
    plug-in and its own helper module there are, from the end of sys.path."""
    work = tmp_path / "work"
    work.mkdir()
    for stray in ("numpy", "onnx", "onnxruntime", "ml_dtypes", "dml_desc", "onnx_ops"):
        (work / f"{stray}.py").write_text(f"open({stray + '.IMPORTED'!r}, 'w').close()\nraise SystemExit(9)\n")
    (work / "kernel_helpers.py").write_text("HELPED = True\n")
    write_kernel(work, "shadowed", """
import json
import kernel_helpers
def grad(dy, description):
    with open("path.json", "w") as f:
        json.dump(sys.path, f)
    assert kernel_helpers.HELPED
    return correct(dy, description)
""")
    proc = conformance(work, "--backend", "py:shadowed:grad", "-k", "cross:", "--quiet",
                       console_script=console_script)
    assert proc.returncode == 0 and proc.stdout.startswith("6 passed, 0 failed"), proc.stdout + proc.stderr
    assert not list(work.glob("*.IMPORTED"))
    path = json.loads((work / "path.json").read_text())
    here = [p for p in path if Path(p or ".").resolve() == work.resolve()]
    assert here == [path[-1]], path                     # the working folder: once, and last


def test_a_backend_class_loaded_by_its_spec_is_selectable(tmp_path):
    write_kernel(tmp_path, "classy", """
from conformance.backends import Backend
class Mine(Backend):
    name = "my-kernel"
    def run(self, description, dy, dtype):
        return correct(dy, description)
class Unnamed(Mine):
    name = Backend.name
""")
    for spec, recorded in (("py:classy:Mine", "my-kernel"), ("py:classy:Unnamed", "py:classy:Unnamed")):
        proc = conformance(tmp_path, "--backend", spec, "-k", "cross:", "--quiet", "--json", "r.json")
        assert proc.returncode == 0 and proc.stdout.startswith("6 passed, 0 failed"), proc.stdout + proc.stderr
        assert {r["backend"] for r in json.loads((tmp_path / "r.json").read_text())["results"]} == {recorded}


def test_reports_are_valid_for_any_name_and_failures_are_not_called_skips(tmp_path):
    """Control characters, a lone surrogate and U+FFFE in a backend's name and its error: the JUnit XML parses,
    the HTML page and the JSON are written; 6 failures and no skip never read 'everything was skipped'."""
    write_kernel(tmp_path, "odd", r"""
from conformance.backends import Backend
class Odd(Backend):
    name = "odd\x1b[31m\x01\ud800\ufffe"
    def run(self, description, dy, dtype):
        raise ValueError("bad \x00\x07\ud800\uffff text")
""")
    proc = conformance(tmp_path, "--backend", "py:odd:Odd", "-k", "cross:", "--quiet", "--json", "r.json",
                       "--junit", "r.xml", "--html", "r.html")
    assert proc.returncode == 1 and "0 passed, 6 failed, 0 skipped" in proc.stdout, proc.stdout + proc.stderr
    assert "skipped" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert suite.get("failures") == "6"
    backends = {p.get("value") for p in suite.iter("property") if p.get("name") == "backend"}
    assert backends == {"odd\\x1b[31m\\x01\\ud800\\ufffe"}
    assert "bad \\x00\\x07\\ud800\\uffff text" in suite.find("testcase/failure").get("message")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "odd\\x1b[31m\\x01\\ud800" in page and "\x1b" not in page
    assert {r["backend"] for r in json.loads((tmp_path / "r.json").read_text())["results"]} == \
        {"odd\x1b[31m\x01\ud800\ufffe"}


@pytest.mark.parametrize("argv, words", [
    (["--seed", "-1"], "argument --seed: '-1' must be an integer >= 0"),
    (["--fuzz", "-5"], "argument --fuzz: '-5' must be an integer from 0 to 100000"),
    (["--fuzz", "100000000"], "argument --fuzz: '100000000' must be an integer from 0 to 100000"),
    (["--fuzz", "1e3"], "argument --fuzz: '1e3' is not an integer from 0 to 100000"),
    (["--case-timeout", "0"], "argument --case-timeout: '0' must be a finite number of seconds > 0"),
    (["--case-timeout", "-3"], "argument --case-timeout: '-3' must be a finite number of seconds > 0"),
    (["--case-timeout", "nan"], "argument --case-timeout: 'nan' must be a finite number of seconds > 0"),
    (["--case-timeout", "inf"], "argument --case-timeout: 'inf' must be a finite number of seconds > 0"),
])
def test_seed_fuzz_and_case_timeout_are_checked_on_one_line(argv, words, capsys):
    from conformance.cli import main as suite_main
    from dml_desc.cli import main
    for run in (lambda: main(["conformance", "-k", "adjoint", *argv]), lambda: suite_main(["-k", "adjoint", *argv])):
        with pytest.raises(SystemExit) as exit_:
            run()
        out, err = capsys.readouterr()
        assert exit_.value.code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith("dml-desc: error: ") and words in err, err


def test_dml_desc_run_with_a_plugin_that_exits_is_one_line_and_writes_nothing(tmp_path):
    import numpy as np
    write_kernel(tmp_path, "quitter", "def grad(dy, description):\n    sys.exit(0)\n")
    from conformance.catalog import DOC_EXAMPLE
    (tmp_path / "case.json").write_text(json.dumps(DOC_EXAMPLE))
    np.save(tmp_path / "dy.npy", np.array([[[[4.0, 5.0, 6.0]]]], np.float32))
    proc = subprocess.run([sys.executable, "-m", "dml_desc.cli", "run", "case.json", "--backend", "py:quitter:grad",
                           "--dy", "dy.npy", "-o", "out.npy"], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stdout + proc.stderr
    assert "SystemExit(0): the plug-in called sys.exit()" in proc.stderr
    assert not (tmp_path / "out.npy").exists()


def test_a_supports_function_is_asked_in_the_worker_case_by_case(tmp_path):
    """A plug-in's `supports` function crosses the boundary: the worker asks it per case, and a case it leaves out
    is 'unsupported by this kernel' (coverage), never a failure; a dict declaration crosses as it is."""
    write_kernel(tmp_path, "picky", """
def grad(dy, description):
    if mode(description) == "nearest":
        raise AssertionError("never offered: supports() leaves nearest out")
    return correct(dy, description)

def no_nearest(description, dtype):
    return "no nearest yet" if mode(description) == "nearest" else None

grad.supports = no_nearest

def linear_only(dy, description):
    return correct(dy, description)

linear_only.supports = {"modes": ("linear",)}
""")
    proc = conformance(tmp_path, "--backend", "py:picky:grad", "-k", "cross:", "--quiet", "--json", "r.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("3 passed, 0 failed, 0 skipped, 3 unsupported by this kernel"), proc.stdout
    assert "  unsupported 3: no nearest yet" in proc.stdout, proc.stdout
    assert records(tmp_path / "r.json")["cross:nearest_x2_asymmetric_floor"] == \
        ("unsupported", "unsupported by this kernel: no nearest yet")
    declared = conformance(tmp_path, "--backend", "py:picky:linear_only", "-k", "cross:", "--quiet")
    assert declared.returncode == 0 and "2 passed, 0 failed, 0 skipped, 4 unsupported" in declared.stdout, \
        declared.stdout
    assert "unsupported 4: it declares modes=('linear',)" in declared.stdout, declared.stdout


# Two native kernels over the shipped example: one that dereferences NULL on nearest cases (a segfault), one
# that returns non-zero for every upsampling (a case it does not implement).
NATIVE = r"""
#include "example_resample_grad.c"

int crashes_on_nearest(const DML_RESAMPLE_GRAD_OPERATOR_DESC *d, const void *dy, void *dx) {
    if (d->InterpolationMode == DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR) {
        volatile float *nowhere = 0;
        *nowhere = 1.0f;                          /* SIGSEGV */
    }
    return resample_grad(d, dy, dx);
}

int refuses_upsampling(const DML_RESAMPLE_GRAD_OPERATOR_DESC *d, const void *dy, void *dx) {
    UINT a;
    for (a = 0; a < d->DimensionCount; ++a)
        if (d->Scales[a] > 1.0f)
            return 7;
    return resample_grad(d, dy, dx);
}
"""


@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="gcc is not installed (apt-get install gcc)")
def test_a_native_kernel_runs_in_the_worker_a_segfault_fails_only_its_case(tmp_path):
    from conformance.backends.native import EXAMPLE
    from conformance.backends.worker import is_plugin
    assert is_plugin("c:libk.so:crashes_on_nearest")
    (tmp_path / "kernels.c").write_text(NATIVE)
    subprocess.run(["gcc", "-O0", "-shared", "-fPIC", f"-I{EXAMPLE.parent}", "-o", str(tmp_path / "libk.so"),
                    str(tmp_path / "kernels.c"), "-lm"], check=True)
    crash = conformance(tmp_path, "--backend", "c:libk.so:crashes_on_nearest", "-k", "cross:", "--quiet",
                        "--json", "r.json")
    # the suite survives: the linear cases pass (dml cannot state the cubic one), the 3 nearest ones each fail alone
    got = records(tmp_path / "r.json")
    assert crash.returncode == 1 and "2 passed, 3 failed, 1 skipped" in crash.stdout, crash.stdout + crash.stderr
    crashed = {case for case, (status, reason) in got.items() if status == "fail"}
    assert len(crashed) == 3 and all(got[c][1].startswith("this case ended the worker process (signal 11, SIGSEGV)")
                           for c in crashed), got
    assert all(c.startswith("cross:nearest") for c in crashed), crashed
    assert got["cross:bilinear_x2_half_pixel"][0] == "pass"          # after a crash, a fresh worker
    refuse = conformance(tmp_path, "--backend", "c:libk.so:refuses_upsampling", "-k", "cross:", "--quiet")
    assert refuse.returncode == 0, refuse.stdout + refuse.stderr
    assert refuse.stdout.startswith("1 passed, 0 failed, 1 skipped, 4 unsupported by this kernel"), refuse.stdout
    assert "it raised NotImplementedError: refuses_upsampling returned 7" in refuse.stdout, refuse.stdout
