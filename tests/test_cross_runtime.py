"""The cross-runtime matrix (`dml-desc matrix`, conformance/matrix.py): on the runtimes installed here, every cell is
an exact transpose reproduced by the project's description, or a documented finding; a runtime whose gradient is
not its forward's transpose is reported, not passed; docs/cross-runtime.md is a run of it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance import matrix
from dml_desc.canonical import AxisMap, Mode, Resampling, Rounding
from dml_desc.reference import resize, resize_grad

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run():
    m = matrix.run_matrix()
    if not m.versions.keys() - {"numpy"}:
        pytest.skip(f"no runtime installed: {m.missing}")
    return m


def test_every_cell_is_an_exact_transpose_or_a_documented_finding(run):
    assert run.ok, [(c.runtime, c.mode, c.rule, c.finding) for c in run.cells if not c.ok]
    for c in run.cells:
        assert c.status in ("transpose", "not transpose", "no gradient"), (c.runtime, c.mode, c.rule, c.detail)
        assert c.reproduced, (c.runtime, c.mode, c.rule, c.gradient_err, c.forward_err)
        assert (c.status == "transpose") == (not c.finding), (c.runtime, c.mode, c.rule, c.finding)
    assert {c.runtime for c in run.cells} == run.versions.keys() - {"numpy"}
    assert set(run.missing) | set(run.versions) >= set(matrix.RUNTIMES)


def cell(run, runtime, mode, rule):
    return next(c for c in run.cells if (c.runtime, c.mode, c.rule) == (runtime, mode, rule))


def test_the_known_findings_are_found_where_their_runtime_runs(run):
    """torch's bicubic and antialiased kernels on same-length axes, TF's ResizeArea: measured, not assumed."""
    if "torch" in run.versions:
        bicubic = cell(run, "torch", "bicubic", "scale_factor")
        assert bicubic.status == "not transpose" and bicubic.departing == ["3x4 -> 3x4 (scale_factor 1.3, 1.2)"]
        assert bicubic.transpose_err > 0.5 and "copies an axis" in bicubic.finding
        assert cell(run, "torch", "bicubic", "size").status == "transpose"
        assert cell(run, "torch", "nearest", "scale_factor, 1-D").status == "not transpose"
    if "tensorflow" in run.versions:
        area = cell(run, "tensorflow", "area", "image.resize")
        assert area.status == "no gradient" and "ResizeArea" in area.detail
    if "onnxruntime" in run.versions:
        assert all(c.status == "transpose" for c in run.cells if c.runtime == "onnxruntime")
        assert "ResizeGrad on CPUExecutionProvider: the session fails" in run.measured["onnxruntime"][0]


class MisportedKernel(matrix.Runtime):
    """A runtime whose gradient rounds nearest ties down while its forward rounds them up: not its transpose."""
    name, convention, module, layout = "misported", "canonical", "numpy", "NCX"
    FORWARD = Resampling((AxisMap.identity(1), AxisMap.identity(1), AxisMap(2, 4, 2, 0.0, 0.0,
                                                                            Rounding.ROUND_PREFER_CEIL)), Mode.NEAREST)
    GRADIENT = FORWARD.with_(axes=FORWARD.axes[:2] + (FORWARD.axes[2].with_(rounding=Rounding.ROUND_PREFER_FLOOR),))

    def cells(self):
        return [("nearest", "asymmetric", [matrix.Call("2 -> 4", (2,), (4,), lambda b: b)])]

    def forward(self, batch, x):
        return resize(x.astype(np.float64), self._batched(self.FORWARD, batch))

    def gradient(self, batch, dy):
        return resize_grad(dy.astype(np.float64), self._batched(self.GRADIENT, batch))

    def gradient_map(self, batch):
        return self._batched(self.GRADIENT, batch)

    def forward_map(self, batch):
        return self._batched(self.FORWARD, batch)

    @staticmethod
    def _batched(res, batch):
        return res.with_(axes=(AxisMap.identity(batch),) + res.axes[1:])


def test_a_gradient_that_is_not_the_transpose_is_reported_unexpected():
    (c,) = matrix.probe_runtime(MisportedKernel())
    assert c.status == "not transpose" and c.transpose_err == 1.0 and c.reproduced
    assert c.finding.startswith("UNEXPECTED: gradient not transpose") and not c.ok


def dml_desc(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "dml_desc.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_command_writes_markdown_json_html_and_joins_another_run(tmp_path, run):
    name = next(n for n in ("onednn", "torch", "tensorflow", "onnxruntime", "jax") if n in run.versions)  # fastest
    done = dml_desc("matrix", "--runtime", name, "--json", "a.json", "--markdown", "m.md", "--html", "m.html",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith("s") and " 0 unexpected" in done.stdout.splitlines()[-1]
    page = (tmp_path / "m.md").read_text()
    assert f"## {name}\n" in page and run.versions[name] in page and "| mode | coordinate rule |" in page
    assert "<table>" in (tmp_path / "m.html").read_text()
    ours = json.loads((tmp_path / "a.json").read_text())
    theirs = dict(ours, versions={"jax" if name != "jax" else "torch": "9.9"},
                  cells=[dict(c, runtime="jax" if name != "jax" else "torch") for c in ours["cells"]])
    joined = matrix.Matrix.from_json(ours).including(matrix.Matrix.from_json(theirs))
    assert " 9.9 (run " in matrix.markdown(joined) and len(joined.cells) == 2 * len(ours["cells"])
    bad = dml_desc("matrix", "--include", "m.md", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("dml-desc: error: ") and len(bad.stderr.splitlines()) == 1


def test_conformance_matrix_needs_html(tmp_path):
    done = dml_desc("conformance", "--matrix", "-k", "cross:bilinear", cwd=tmp_path)
    assert done.returncode == 2 and "--matrix" in done.stderr and len(done.stderr.splitlines()) == 1


def test_the_docs_keep_a_run_of_every_runtime():
    page = (ROOT / "docs" / "cross-runtime.md").read_text()
    assert "UNEXPECTED:" not in page and "Last run " in page
    for name in matrix.RUNTIMES:
        assert f"## {name}\n" in page
        assert "Not installed" not in page.split(f"## {name}\n")[1].split("\n## ")[0], name
    for finding in matrix.KNOWN_FINDINGS:
        assert finding.text in page


def test_the_conformance_report_shows_the_matrix(run):
    from conformance.report import html_report, no_network
    page = html_report([], {"onnx": "1"}, matrix.html_section(run))
    assert "<h2>Cross-runtime matrix: gradient vs its own forward</h2>" in page and no_network(page)
    assert page.count("<tr><td>") >= len(run.cells)
    assert "<h2>Cross-runtime" not in html_report([], {"onnx": "1"})
