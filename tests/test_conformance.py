"""The conformance suite runs in CI: nothing fails, skips carry reasons, the report has the promised shape."""
import json
import subprocess
import sys


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
    assert sum(r["status"] == "pass" for r in results) > 900
    assert junit.read_text().startswith("<?xml")


def test_conformance_list_and_filter():
    proc = subprocess.run([sys.executable, "-m", "conformance", "--list", "-k", "dml_documented_example"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    assert len(proc.stdout.strip().splitlines()) == 2
