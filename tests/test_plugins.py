"""Your own kernel in the conformance suite (issue 18): the py:MODULE:NAME contract, docs/own-kernel.md's
example (a kernel that passes, the same with a planted bug that fails), the backends' names, the HTML report."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "own-kernel.md"


def conformance(cwd, *args):
    """`python -m conformance ARGS` in `cwd` (the project first on the path, as an installed package is)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def doc_modules(folder: Path) -> list:
    """Write each ```python block of docs/own-kernel.md to the file its first line names."""
    names = []
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        name = block.splitlines()[0].lstrip("# ").strip()
        (folder / name).write_text(block)
        names.append(name)
    return names


def doc_outputs() -> list:
    """The lines of each ```text block of docs/own-kernel.md (the output it shows), timings as ' in Ns'."""
    return [untimed(block).splitlines() for block in re.findall(r"```text\n(.*?)```", DOC.read_text(), re.S)]


def untimed(text: str) -> str:
    return re.sub(r" in \d+\.\d+s$", " in Ns", text, flags=re.M)


def shows(block: list, stdout: str) -> bool:
    """Whether every line of a block the document shows is a line of the run's output."""
    lines = untimed(stdout).splitlines()
    return all(line in lines for line in block)


def test_the_documented_kernel_passes_and_the_planted_bug_fails(tmp_path):
    assert doc_modules(tmp_path) == ["my_kernel.py", "my_buggy_kernel.py", "my_partial_kernel.py"]
    passing, table, failure, partial_shown = doc_outputs()      # the output docs/own-kernel.md shows, as it is
    ok = conformance(tmp_path, "--backend", "py:my_kernel:resize_grad", "-k", "cross:", "--quiet")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("6 passed, 0 failed, 0 skipped") and shows(passing, ok.stdout), ok.stdout
    bad = conformance(tmp_path, "--backend", "py:my_buggy_kernel:resize_grad", "-k", "cross:", "--quiet",
                      "--json", "r.json", "--html", "report.html", "--junit", "r.xml")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert shows(table, bad.stdout) and shows(failure, bad.stdout), bad.stdout
    assert "\n1 passed, 5 failed, 0 skipped in " in bad.stdout
    assert "`1 passed, 5 failed, 0 skipped in " in DOC.read_text()
    partial = conformance(tmp_path, "--backend", "py:my_partial_kernel:resize_grad", "-k", "cross:", "--quiet")
    assert partial.returncode == 0 and shows(partial_shown, partial.stdout), partial.stdout
    assert "FAILED cross:bilinear_x2_half_pixel [py:my_buggy_kernel:resize_grad, f32, oracle numpy-reference]" \
        in bad.stdout
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert {r["backend"] for r in results} == {"py:my_buggy_kernel:resize_grad"}
    failed = [r for r in results if r["status"] == "fail"]
    assert len(failed) == 5 and all(r["oracle"] == "numpy-reference" for r in failed)
    # the printed description is what `dml-desc convert --to onnx` prints for the case: load it and run it
    from dml_desc import conventions
    desc = failed[0]["description"]
    res, backward = conventions.load("onnx", desc, semantics=INSTALLED)
    assert backward and desc["op_type"] == "ResizeGrad" and res.out_shape == (2, 3, 12, 20)
    assert 'name="backend" value="py:my_buggy_kernel:resize_grad"' in (tmp_path / "r.xml").read_text()
    page = (tmp_path / "report.html").read_text()
    from conformance.report import no_network
    assert no_network(page) and page.count("<svg") == 5 * 5 and "py:my_buggy_kernel:resize_grad" in page


def test_a_plugin_gets_the_convert_description_and_its_dtypes(tmp_path):
    """The description is exactly `dml-desc convert --to dml` of the case; dy arrives in the declared dtype."""
    (tmp_path / "spy.py").write_text(
        "import json, numpy as np\n"
        "from dml_desc import conventions\n"
        "from dml_desc.reference import resize_grad\n"
        "def grad(dy, description):\n"
        "    with open('seen.jsonl', 'a') as f:\n"
        "        f.write(json.dumps({'dtype': str(dy.dtype), 'desc': description}) + '\\n')\n"
        "    return resize_grad(dy.astype(np.float64), conventions.load('dml', description)[0])\n"
        "grad.convention = 'dml'\n"
        "grad.dtypes = ('f16',)\n")
    name = "export_resize_upsample_scales_linear"
    proc = conformance(tmp_path, "--backend", "py:spy:grad", "-k", name, "--quiet")
    seen = [json.loads(line) for line in (tmp_path / "seen.jsonl").read_text().splitlines()]
    assert proc.returncode == 0 and seen and {s["dtype"] for s in seen} == {"float16"}, proc.stdout + proc.stderr
    from conformance.onnx_cases import case_to_resize, onnx_resize_cases
    r = case_to_resize(next(c for c in onnx_resize_cases() if c.name == name))
    r.op_type = "ResizeGrad"
    src = tmp_path / "case.json"
    src.write_text(json.dumps(r.to_json()))
    out = subprocess.run([sys.executable, "-m", "dml_desc.cli", "convert", "--from", "onnx", "--to", "dml", str(src)],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0 and json.loads(out.stdout) in [s["desc"] for s in seen], out.stderr


@pytest.mark.parametrize("module,name,words", [
    ("", "py:nosuchmodule_h5:f", "cannot import module 'nosuchmodule_h5'"),
    ("def f(dy, d):\n    return dy\n", "py:plug:g", "module 'plug' has no attribute 'g'"),
    ("def f(dy, d):\n    return dy\nf.convention = 'caffe'\n", "py:plug:f", "must be one of dml, onednn"),
    ("def f(dy, d):\n    return dy\nf.dtypes = ('f8',)\n", "py:plug:f", "must be a non-empty tuple of"),
    ("raise RuntimeError('boom')\n", "py:plug:f", "importing 'plug' raised RuntimeError: boom"),
    ("", "py:plug", "must be py:MODULE:NAME"),
    ("", "onnxrt", "did you mean 'onnxruntime'?"),
    ("", "onnxruntime:CPUExecutionProvder", "did you mean 'CPUExecutionProvider'?"),
])
def test_a_backend_name_that_is_none_is_one_line(tmp_path, module, name, words):
    if module:
        (tmp_path / "plug.py").write_text(module)
    proc = conformance(tmp_path, "--backend", name, "--quiet")
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("dml-desc: error: ") and words in proc.stderr, proc.stderr


def test_a_kernel_returning_integers_or_the_wrong_shape_fails_with_the_reason(tmp_path):
    (tmp_path / "plug.py").write_text("import numpy as np\n"
                                      "def ints(dy, d):\n    return np.zeros(d['input_shape'], np.int32)\n"
                                      "def shape(dy, d):\n    return np.zeros(3)\n")
    for name, words in (("ints", "must return dX as an array of floats"), ("shape", "shape (3,) != (2, 3, 6, 10)")):
        proc = conformance(tmp_path, "--backend", f"py:plug:{name}", "-k", "cross:bilinear_x2", "--quiet")
        assert proc.returncode == 1 and words in proc.stdout, proc.stdout + proc.stderr


def test_an_unavailable_provider_skips_saying_so_and_zero_passes_exit_1(tmp_path):
    import onnxruntime
    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has CUDA: the skip this test checks cannot happen here")
    proc = conformance(tmp_path, "--backend", "onnxruntime:CUDAExecutionProvider", "-k", "cross:", "--quiet")
    assert proc.returncode == 1 and "0 passed, 0 failed, 6 skipped" in proc.stdout
    assert "skipped 6: this onnxruntime has no CUDAExecutionProvider (it has " in proc.stdout
    assert "no check passed" in proc.stderr


def test_backends_run_one_interface():
    """Built-ins and plug-ins are the same thing: name, convention, dtypes, available(), run()."""
    from conformance.backends import resolve
    from dml_desc import conventions
    from conformance.catalog import DOC_EXAMPLE
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    dy = np.array([[[[4.0, 5.0, 6.0]]]], np.float32)
    for name in ("numpy", "onnxruntime", "torch"):
        b = resolve(name)
        reason = b.available()
        if name == "torch" and reason is not None:
            assert reason.startswith("torch is not installed")     # optional: the only reason allowed
            continue
        assert reason is None and "f32" in b.dtypes
        from conformance.backends import to_description
        got = b.run(to_description(res, b.convention), dy, "f32")
        np.testing.assert_array_equal(got, [[[[9.0, 6.0], [0.0, 0.0]]]])        # DirectML's documented dX


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_the_html_report_renders_in_a_real_browser(tmp_path):
    doc_modules(tmp_path)
    conformance(tmp_path, "--backend", "py:my_buggy_kernel:resize_grad", "-k", "cross:", "--quiet",
                "--html", "report.html")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600", f"--screenshot={shot}",
                    (tmp_path / "report.html").as_uri()], capture_output=True, timeout=120)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # decode the PNG (zlib, filter 0..4) far enough to see that the heat maps' saturated colours are drawn
    pixels = _png_rgb(png)
    red = ((pixels[..., 0] > 200) & (pixels[..., 1] < 80) & (pixels[..., 2] < 80)).sum()
    blue = ((pixels[..., 2] > 200) & (pixels[..., 0] < 80) & (pixels[..., 1] < 80)).sum()
    assert red > 100 and blue > 100, (red, blue)


def _png_rgb(data: bytes) -> np.ndarray:
    """RGB pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    import struct
    import zlib
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            channels = {2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), np.int32)
    prev = np.zeros(width * channels, np.int32)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        cur = np.zeros_like(line)
        for x in range(len(line)):
            a = cur[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2}.get(int(f))
            if f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            cur[x] = (line[x] + pred) & 255
        out[y], prev = cur, cur
    return out.reshape(height, width, channels)[..., :3]
