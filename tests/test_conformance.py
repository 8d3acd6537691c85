"""The conformance suite runs in CI: nothing fails, skips carry reasons, the report has the promised shape."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_conformance_suite_passes(tmp_path):
    out = tmp_path / "r.json"
    junit = tmp_path / "r.xml"
    proc = subprocess.run([sys.executable, "-m", "conformance", "--quiet", "--json", str(out), "--junit", str(junit)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    results = report["results"]
    assert set(report["versions"]) >= {"onnx", "onnxruntime", "numpy", "torch"}
    assert all(set(r) >= {"case", "convention", "backend", "dtype", "status", "max_abs_err", "max_rel_err",
                          "reason"} for r in results)
    assert not [r for r in results if r["status"] == "fail"]
    assert all(r["reason"] for r in results if r["status"] == "skip")
    names = {r["case"] for r in results}
    assert "dml_documented_example" in names
    assert len({n for n in names if n.startswith("export_resize_")}) == 39
    assert junit.read_text().startswith("<?xml")
    # issue 21: every record names its oracle, never the backend under test; the summary counts passes per
    # oracle; the reference is never judged against itself
    assert all(r["oracle"] and r["oracle"] != r["backend"] for r in results)
    assert not [r for r in results if r["backend"] == "numpy" and r["oracle"] == "numpy-reference"]
    by_oracle = report["summary"]["passes_by_oracle"]
    assert sum(by_oracle.values()) == sum(r["status"] == "pass" for r in results)
    assert {"onnxruntime-Resize-transposed", "onnx-expected-output", "DirectML documentation"} <= set(by_oracle)
    # the lowered model is judged by onnxruntime's own forward transposed; the reference (which shares its taps)
    # only in f64, where onnxruntime has no Resize, and under a name that says so
    lowered = [r for r in results if r["backend"] == "onnxruntime:CPUExecutionProvider" and r["status"] == "pass"]
    assert {r["oracle"] for r in lowered if r["dtype"] != "f64"} == {"onnxruntime-Resize-transposed",
                                                                      "DirectML documentation"}
    assert {r["oracle"] for r in lowered if r["dtype"] == "f64"} == {"numpy-reference (shared taps)"}
    # skips mean "not installed" or "documented as unsupported": every reason starts with one of these (issue 21:
    # a prefix, not a word anywhere in the reason, so a crash that mentions "onnxruntime " is no skip)
    allowed = ("torch is not installed", "onnxruntime is not installed", "onnxruntime (the oracle's forward) is not "
               "installed", "onnxruntime implements the com.microsoft ResizeGrad kernel only on CUDA",
               "onnxruntime's CUDA ResizeGrad kernel does not compute", "this onnxruntime has no ",
               "oneDNN (libdnnl.so.3) is not installed", "oneDNN 3.2 has no f16", "oneDNN 3.2 has no bf16",
               "oneDNN has no f16", "oneDNN has no bf16", "an f16 ConvTransposeBackwardData",
               "documented as unsupported", "onnx's expected output",
               "oracles disagree", "the basis probe", "this onnxruntime CPU build has no float16 Conv",
               "ResizeGrad takes")
    odd = {r["reason"][:120] for r in results if r["status"] == "skip" and not r["reason"].startswith(allowed)}
    assert not odd, odd
    # the whole kernel catalog ran on onnxruntime: each f32 case passed or the converter refused it
    ort = [r for r in results if r["backend"] == "onnxruntime:CPUExecutionProvider"]
    assert len(ort) > 300 and all(r["status"] == "pass" or r["reason"].startswith(
        "documented as unsupported (kernel_refusals.json): onnx cannot state") for r in ort)


def test_conformance_list_and_filter():
    proc = subprocess.run([sys.executable, "-m", "conformance", "--list", "-k", "dml_documented_example"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    # numpy (DirectML documentation), onnxruntime and torch
    assert len(proc.stdout.strip().splitlines()) == 3


def test_a_converter_that_changes_its_answer_fails(monkeypatch):
    """Issue 21: expected acceptances and refusals of the cross-convention conversions live in a table; a
    converter that starts refusing a listed map, or accepting one the table says it refuses, fails."""
    from conformance import suite
    from conformance.catalog import CROSS_ACCEPTED

    def verdicts():
        checks = [c for c in suite.cross_convention_checks() if c.case == "cross:bilinear_x2_half_pixel"]
        return {c.convention: suite.run_check(c) for c in checks}
    before = verdicts()
    assert {f: r.status for f, r in before.items()} == {f: "pass" for f in ("dml", "onednn", "onnx", "torch", "tf",
                                                                          "jax")}
    assert all(r.oracle == "the map before conversion" and r.backend == "converter" for r in before.values())
    monkeypatch.setitem(CROSS_ACCEPTED, "bilinear_x2_half_pixel", ("dml", "onnx", "torch", "tf", "jax"))
    after = verdicts()
    assert after["onednn"].status == "fail" and "now accepts" in after["onednn"].reason
    monkeypatch.setitem(CROSS_ACCEPTED, "bicubic_x2_half_pixel", ("onnx", "torch", "dml"))
    cubic = {c.convention: suite.run_check(c) for c in suite.cross_convention_checks()
             if c.case == "cross:bicubic_x2_half_pixel"}
    assert cubic["dml"].status == "fail" and "now refuses" in cubic["dml"].reason
    assert cubic["onednn"].status == "skip" and cubic["onednn"].reason.startswith("documented as unsupported")


def test_a_kernel_case_refusal_is_listed_or_fails(monkeypatch):
    """Issue 21: the converters' refusals of kernel cases live in kernel_refusals.json; an unlisted refusal
    fails, a listed case that now converts fails, a listed refusal is a documented skip."""
    from conformance import cases, suite
    from conformance.backends.builtin import OnnxruntimeBackend
    by_name = {c.name: c for c in cases.kernel_cases() if c.dtype == "f32"}
    refused = next(n for n in sorted(cases.KERNEL_REFUSED) if "onnx" in cases.KERNEL_REFUSED[n] and n in by_name)
    stated = "cross:bilinear_x2_half_pixel"
    checks = {c.case: c for c in cases.backend_checks(OnnxruntimeBackend(), [by_name[refused], by_name[stated]])}
    listed = suite.run_check(checks[refused])
    assert listed.status == "skip" and listed.reason.startswith("documented as unsupported (kernel_refusals.json)")
    monkeypatch.setitem(cases.KERNEL_REFUSED, refused, {})
    unlisted = suite.run_check(checks[refused])
    assert unlisted.status == "fail" and "not in kernel_refusals.json" in unlisted.reason
    monkeypatch.setitem(cases.KERNEL_REFUSED, stated, {"onnx": "a wrong entry"})
    converts = suite.run_check(checks[stated])
    assert converts.status == "fail" and "remove the entry" in converts.reason


def test_onnxruntime_forward_transposed_is_an_oracle_that_can_fail():
    """Issue 21: the ONNX backends' kernel cases are judged by onnxruntime's forward Resize transposed, built one
    axis at a time; it equals the full J from every basis input, and a wrong gradient fails against it."""
    import numpy as np
    from conformance import cases, suite
    from conformance.backends import to_description
    from conformance.backends.builtin import OnnxruntimeBackend
    from conformance.resize_oracle import ORACLE, forward_transposed
    from dml_desc.conventions.onnx import OnnxResize
    from onnx_ops import build_resize, run_model
    case = next(c for c in cases.kernel_cases() if c.name == "cross:bicubic_x2_half_pixel")
    description = to_description(case.res, "onnx")
    got = forward_transposed(description, case.dy)
    p, q = int(np.prod(case.res.in_shape[1:])), int(np.prod(case.res.out_shape[1:]))
    r = OnnxResize.from_json(dict(description, op_type="Resize", input_shape=[p] + description["input_shape"][1:]))
    eye = np.eye(p, dtype=np.float32).reshape([p] + r.input_shape[1:])      # every basis input, along N
    a = run_model(build_resize(r), {"X": eye})[0].reshape(p, q).T.astype(np.float64)       # the full J
    full = np.stack([a.T @ case.dy[n].ravel() for n in range(2)]).reshape(case.res.in_shape)
    np.testing.assert_allclose(got, full, rtol=0, atol=1e-9)
    assert cases.expected_of(case, True, description)[1] == ORACLE
    wrong = OnnxruntimeBackend()
    wrong.run = lambda d, dy, dtype: cases.resize_grad(np.asarray(dy, np.float64), case.res) * (1 + 1e-4)
    check = cases.backend_checks(wrong, [case])[0]
    record = suite.run_check(check)
    assert record.status == "fail" and record.oracle == ORACLE


def test_the_refusal_table_is_todays_behaviour():
    """kernel_refusals.json is what the converters refuse today (regenerate it with cases.refusal_table())."""
    from conformance import cases
    def keys(table):        # the reasons' wording may name the installed runtime's semantics
        return {(case, convention) for case, by in table.items() for convention in by}
    assert keys(cases.refusal_table()) == keys(cases.KERNEL_REFUSED)


def test_an_f32_unimplemented_from_onednn_fails_unless_listed():
    """Issue 21: oneDNN's `unimplemented` is a skip for f16/bf16 (hardware), a failure for f32 unless listed."""
    from conformance import onednn_suite
    from conformance.catalog import Skip
    from dml_desc.runtimes.onednn import OnednnError
    batch = onednn_suite.JobBatch()
    batch.missing = None                                   # the library's presence is not what this tests
    err = OnednnError("mode", "linear", "no kernel", "dnnl_unimplemented")
    key = batch.add(lambda: None)
    batch.results[key] = err
    with pytest.raises(Skip, match="no f16 kernel"):
        batch.result(key, dtype="f16", case="c")
    with pytest.raises(AssertionError, match="not in F32_UNIMPLEMENTED"):
        batch.result(key, dtype="f32", case="c")
    onednn_suite.F32_UNIMPLEMENTED["c"] = "the reason it is listed"
    try:
        with pytest.raises(Skip, match="documented as unsupported: the reason it is listed"):
            batch.result(key, dtype="f32", case="c")
    finally:
        del onednn_suite.F32_UNIMPLEMENTED["c"]


def test_an_installed_plugin_is_found_by_its_entry_point(tmp_path):
    """A package that lists a kernel in the `dml_desc.backends` entry-point group runs as --backend NAME."""
    dist = tmp_path / "mykernel-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mykernel\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[dml_desc.backends]\nmy-kernel = mykernel_mod:grad\n")
    (tmp_path / "mykernel_mod.py").write_text(
        "from dml_desc import conventions\nfrom dml_desc.reference import resize_grad\n"
        "def grad(dy, description):\n    sem = conventions.onnx.installed_semantics()\n"
        "    return resize_grad(dy, conventions.load('onnx', description, semantics=sem)[0])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-m", "conformance", "--backend", "my-kernel", "-k", "cross:", "--quiet"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("6 passed, 0 failed"), proc.stdout + proc.stderr
