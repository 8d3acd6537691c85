"""The benchmark script stays runnable: it measures real sessions, names the form it timed and prints every
column of the matrix (torch columns only where torch is installed)."""
import math
import sys
from pathlib import Path

import pytest

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
        if math.isnan(row["torch"]):                 # no torch: no limit either
            assert math.isnan(row["limit"])
        else:                                        # one read of dY and one write of dX, timed like the peers
            assert 0 < row["limit"] < row["lowered"]
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


def test_unet_step_prints_ort_and_torch_step_times_and_the_lowered_share(capsys):
    """The U-Net row: one training step on ORT training (ResizeGrad lowered) and in torch, their ratio and the
    lowered nodes' kernel time from onnxruntime's profiler; no table rows when -k matches no case."""
    import unet_step
    reason = unet_step.missing_reason()
    if reason:
        pytest.skip(reason)
    rows = resize_grad_bench.main(["--quick", "--rounds", "1", "--no-numpy", "--no-memory", "--threads", "1",
                                   "-k", "no such case", "--unet"])
    (row,) = rows
    assert row["case"] == "U-Net c=4, x 2x3x32x32" and row["rewrites"] == 2
    assert 0 < row["ort"] < 1 and 0 < row["torch"] < 1
    assert 0 < row["lowered"] < 1 and 0 < row["share"] < 1       # profiled wall time: not compared with "ort"
    assert row["forms"].startswith("nearest: generic") and "linear: generic" in row["forms"]
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("U-Net training step"))
    assert f"ORT/torch {row['ort'] / row['torch']:.2f}" in line and "% of ORT's kernel time" in line
    assert line.endswith(f"(2 ResizeGrad: {row['forms']})")
    assert out.startswith("machine: ") and "cores" in out.splitlines()[0]


def test_unet_step_is_skipped_with_its_reason_where_a_peer_is_missing(capsys, monkeypatch):
    import unet_step
    monkeypatch.setattr(unet_step, "missing_reason", lambda: "onnxruntime.training is not installed (x)")
    rows = resize_grad_bench.main(["--quick", "--rounds", "1", "--no-numpy", "--no-memory", "--threads", "1",
                                   "-k", "no such case", "--unet"])
    assert rows == [{"case": "U-Net", "skipped": "onnxruntime.training is not installed (x)"}]
    assert "U-Net training step: skipped, onnxruntime.training is not installed (x)" in capsys.readouterr().out


def test_quick_and_filtered_runs_leave_the_unet_out_unless_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(resize_grad_bench, "unet_row", lambda args: calls.append(args) or {"case": "U-Net"})
    resize_grad_bench.main(["--quick", "--rounds", "1", "--no-numpy", "--no-memory", "--threads", "1", "-k", "zz"])
    resize_grad_bench.main(["--rounds", "1", "--no-numpy", "--no-memory", "--threads", "1", "-k", "zz"])
    assert calls == []
    resize_grad_bench.main(["--rounds", "1", "--no-numpy", "--no-memory", "--threads", "1", "-k", "zz", "--unet"])
    assert len(calls) == 1


def test_the_share_counts_the_kernels_lowered_from_resize_grad_only():
    import unet_step
    names = {"/Resize_1_Grad/ResizeGrad_0"}
    assert unet_step.lowered_from_resize_grad("/Resize_1_Grad/ResizeGrad_0/lowered/MatMul_3_kernel_time", names)
    assert not unet_step.lowered_from_resize_grad(      # training_repair's MaxPoolGrad rewrite: not a ResizeGrad
        "/MaxPool_Grad/MaxPoolGrad_0/lowered/ScatterElements_7_kernel_time", names)
    assert not unet_step.lowered_from_resize_grad("/Resize_1_Grad/ResizeGrad_0_kernel_time", names)
    assert unet_step.lowered_from_resize_grad("ResizeGrad_3/lowered/Add_1_kernel_time", {""})       # an unnamed node
    assert not unet_step.lowered_from_resize_grad("ResizeGrad_3/lowered/Add_1_kernel_time", names)


def test_cuda_oracle_runs_on_the_cpu_and_agrees_with_torch(capsys):
    """bench/cuda_oracle.py (run on a GPU machine) also runs with torch on the CPU: every lowered gradient agrees
    with torch's autograd, and the forward picks of the device and the CPU kernel are compared."""
    pytest.importorskip("torch", reason="torch is not installed: the oracle is torch's autograd")
    import cuda_oracle
    assert cuda_oracle.main(["--device", "cpu", "--cases", "8", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "0 differ" in out and "nearest-exact: cpu forward picks differ from the CPU kernel's on 0 of 4096" in out


def test_cuda_ep_runs_its_checks_on_the_cpu_provider(capsys):
    """bench/cuda_ep.py (onnxruntime-gpu on a GPU machine; docs/cuda.md) dry-runs on the CPU provider: the lowered
    models match the reference and repeat bitwise, and the antialias probe runs every line in its child process."""
    pytest.importorskip("torch", reason="torch is not installed: the time column is torch's backward")
    import cuda_ep
    assert cuda_ep.main(["--provider", "CPUExecutionProvider", "--set", "issue34", "-k", "112->41, opset 17",
                         "--rounds", "1", "--probe"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 rows exact" in out and "antialias Resize rank 5 axes (2, 3, 4) linear: CPUExecutionProvider" in out
    assert out.count("antialias Resize rank") == 22 and "aborted" not in out


def test_cuda_jacobian_runs_on_the_cpu_provider(capsys):
    """bench/cuda_jacobian.py (onnxruntime-gpu on a GPU machine; docs/cuda.md) on the CPU provider: both Jacobians
    are the CPU's, and the static and dynamic gradients are each J^T dY within 1e-5."""
    import cuda_jacobian
    assert cuda_jacobian.main(["--provider", "CPUExecutionProvider", "--cases", "6", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "static {'both': 6}; dynamic {'both': 6}" in out and out.count("forward CPUE vs CPU 0.0e+00") == 6


def test_cuda_jacobian_refuses_a_provider_that_does_not_start(capsys):
    """Without a GPU, bench/cuda_jacobian.py's default provider falls back to the CPU in onnxruntime: the script says
    so and exits 2, before any case counts (no check passes without touching the provider it names)."""
    from onnx_ops.run import available_providers
    if "CUDAExecutionProvider" in available_providers():
        pytest.skip("this onnxruntime starts CUDA: the refusal is for builds without it")
    import cuda_jacobian
    assert cuda_jacobian.main(["--cases", "1"]) == 2
    assert "did not start in this onnxruntime" in capsys.readouterr().out
