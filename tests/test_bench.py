"""The benchmark script stays runnable: it measures real sessions and names the form it timed."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import resize_grad_bench  # noqa: E402


def test_bench_quick_run_reports_finite_times_and_the_form():
    rows = resize_grad_bench.main(["--quick", "--rounds", "1", "--no-numpy", "--threads", "1"])
    assert [r["case"] for r in rows] == ["bilinear 2x 128^2"]
    row = rows[0]
    assert row["form"] == "Resize(linear, antialias)"
    assert row["elements"] == 1 * 8 * 256 * 256
    assert 0 < row["ort"] < 1 and 0 < row["bridge"] < 1
    assert math.isnan(row["numpy"])
