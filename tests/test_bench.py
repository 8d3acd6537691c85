"""The benchmark script stays runnable: it measures real sessions, names the form it timed and prints every
column of the matrix (torch columns only where torch is installed)."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import resize_grad_bench  # noqa: E402


def test_bench_quick_run_reports_finite_times_the_form_and_memory(capsys):
    rows = resize_grad_bench.main(["--quick", "--rounds", "1", "--no-numpy", "--threads", "1"])
    assert [r["case"] for r in rows] == [c.name for c in resize_grad_bench.QUICK]
    first, second = rows
    assert first["form"] == "Resize(linear, antialias)" and first["elements"] == 1 * 8 * 64 * 64
    assert second["form"].startswith("dense") and "Cast" in second["ops"]       # float16 at opset 17
    for row in rows:
        assert 0 < row["lowered"] < 1
        assert math.isnan(row["numpy"])
        assert math.isnan(row["memory"]) or row["memory"] > 0
    out = capsys.readouterr().out
    assert "| case | form | lowered | torch |" in out and out.count("| bilinear") == 2


def test_the_matrix_holds_the_issues_twelve_cases():
    names = [c.name for c in resize_grad_bench.CASES]
    assert len(names) == 12 and {c.opset for c in resize_grad_bench.CASES} == {17, 19}
    assert {c.dtype for c in resize_grad_bench.CASES} == {"float32", "float16"}
    for case in resize_grad_bench.CASES:           # every case lowers (no ResizeGrad left) at its own opset
        _, _, lowered, report = resize_grad_bench.build(case)
        assert report[0].forms and not any(n.op_type == "ResizeGrad" for n in lowered.graph.node)
