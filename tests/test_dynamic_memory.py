"""Memory of the dynamic path (issue 30): linear in the axis lengths, the run-time-scales path included.

The path read each axis's weights by resizing the identity matrix I(n): an n x n probe and an n x m matrix at
run time (2,500 -> 0.55 GB, 10,000 -> 4.3 GB, 20,000 past 8 GB). It now resizes combs and builds the band from
the taps (onnx_ops.forms.dynamic_taps, onnx_ops.forms.dynamic_band). The tests read the size of every tensor
onnxruntime writes (its profiler records each node's output size, inside If and Loop bodies too), check the weights
against onnxruntime's own forward transposed where the old dense matrix was never built (a long last axis, the Loop of
antialiased downsampling, X rows past the comb's first digit), and the budget's refusals."""
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

from dml_desc import DescError, budget
from dml_desc.conventions.onnx import OnnxResize
from onnx_ops import build_resize, lower, run_model
from tests.helpers_dynamic import INSTALLED, grad_model, reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lowered_1d(attrs, n, m, scale, opset=19):
    """ResizeGrad on the last axis of [1, 1, n] with run-time scales [1, 1, scale] (static lengths n, m)."""
    model = grad_model(attrs, [1, 1, n], [1, 1, m], [1, 1, scale], run_time=("scales",), opset=opset)
    return lower(model, semantics=INSTALLED).model


def largest_output_bytes(model, feeds, threads=1) -> int:
    """The largest tensor any node writes in one run (onnxruntime's profiler: every node, If and Loop bodies too)."""
    so = ort.SessionOptions()
    so.enable_profiling, so.intra_op_num_threads = True, threads
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    path = sess.end_profiling()
    try:
        with open(path) as f:
            events = json.load(f)
    finally:
        os.remove(path)
    sizes = [int(e["args"].get("output_size", 0)) for e in events if e.get("cat") == "Node"]
    assert len(sizes) > 20
    return max(sizes)


@pytest.mark.parametrize("attrs,scale", [({"mode": "linear"}, 2.0), ({"mode": "cubic"}, 1.7),
                                         ({"mode": "nearest"}, 0.6), ({"mode": "linear", "antialias": 1}, 0.25)])
def test_no_tensor_grows_with_n_times_m(attrs, scale):
    """At n = 2,000 and 20,000 the largest tensor stays within 128 bytes per element of n + m (a 16-row tile's
    window, or 24 probe rows, float32); the identity probe wrote 2 * n * m floats (2,000 x 4,000: 64 MB)."""
    for n in (2000, 20000):
        m = int(np.floor(np.float32(scale) * np.float32(n)))
        model = lowered_1d(attrs, n, m, scale)
        feeds = {"dY": np.ones((1, 1, m), np.float32), "X": np.zeros((1, 1, n), np.float32),
                 "scales": np.array([1, 1, scale], np.float32)}
        assert largest_output_bytes(model, feeds) <= 128 * (n + m), (n, m)


def test_a_million_long_axis_runs_in_a_small_fraction_of_what_n_times_m_needs():
    """n = 2^20 under a 3 GB address-space limit (imports included): the identity probe needed 4 TB."""
    code = ("import numpy as np\nfrom tests.test_dynamic_memory import lowered_1d\nfrom onnx_ops import run_model\n"
            "n = 2 ** 20\nmodel = lowered_1d({'mode': 'linear'}, n, 2 * n, 2.0)\n"
            "dx = run_model(model, {'dY': np.ones((1, 1, 2 * n), np.float32), 'X': np.zeros((1, 1, n), np.float32),"
            " 'scales': np.array([1, 1, 2], np.float32)})[0]\n"
            "print(float(dx.min()), float(dx.max()))\n")
    proc = subprocess.run(["bash", "-c", 'ulimit -v 3000000 && exec "$0" -c "$1"', sys.executable, code],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.split() == ["2.0", "2.0"]                  # each X row collects weights summing to 2


def jacobian(attrs, n, scale):
    """(m, n): onnxruntime's own forward Resize of one-hot X rows, on the last axis."""
    forward = build_resize(OnnxResize([n, 1, 1, n], attrs, None, [1, 1, 1, scale], None, opset=19))
    return run_model(forward, {"X": np.eye(n, dtype=np.float32).reshape(n, 1, 1, n)})[0][:, 0, 0, :].T


@pytest.mark.parametrize("attrs,n,scale", [
    ({"mode": "linear"}, 300, 1.7),                                      # n * m > 2^16: the band, not dense
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, 257, 1.3),
    ({"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"}, 301, 2.5),
    ({"mode": "linear", "antialias": 1}, 1200, 0.06),                   # P = 37 residues: a Loop of 5 rounds
    ({"mode": "cubic", "antialias": 1}, 700, 0.3),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 520, 0.5),
])
def test_the_last_axis_band_and_the_loop_are_onnxruntimes_forward_transposed(attrs, n, scale):
    """One-hot dY rows give the rows of the Jacobian onnxruntime's Resize computes from one-hot X rows: bitwise
    (cubic within 1e-6: the forward runs another kernel), and the same on 1, 2 and 4 threads."""
    jac = jacobian(attrs, n, scale)
    m = jac.shape[0]
    model = grad_model(attrs, ["N", 1, 1, "W"], ["N", 1, 1, "W2"], [1, 1, 1, scale], run_time=("scales",))
    lowered = lower(model, semantics=INSTALLED).model
    feeds = {"dY": np.eye(m, dtype=np.float32).reshape(m, 1, 1, m), "X": np.zeros((m, 1, 1, n), np.float32),
             "scales": np.array([1, 1, 1, scale], np.float32)}
    results = []
    for threads in (1, 2, 4):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(lowered.SerializeToString(), so, providers=["CPUExecutionProvider"])
        results.append(sess.run(None, feeds)[0][:, 0, 0, :])
    assert all(np.array_equal(r, results[0]) for r in results[1:])
    assert n * m > 2 ** 16 and np.count_nonzero(jac)
    if attrs["mode"] == "cubic":
        np.testing.assert_allclose(results[0], jac, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(results[0], jac)


@pytest.mark.parametrize("attrs,scale", [({"mode": "nearest"}, 1.5), ({"mode": "linear"}, 0.7),
                                         ({"mode": "cubic"}, 2.0)])
def test_x_rows_past_the_first_digit_are_found(attrs, scale):
    """n = 40,000: the X row's block number k = j div P passes 4096, the comb's first digit (the second one
    decodes it); every row against the reference gradient (float64, the shared taps)."""
    n = 40000
    m = int(np.floor(np.float32(scale) * np.float32(n)))
    dy = np.random.default_rng(3).standard_normal((1, 1, m)).astype(np.float32)
    got = run_model(lowered_1d(attrs, n, m, scale), {"dY": dy, "X": np.zeros((1, 1, n), np.float32),
                                                      "scales": np.array([1, 1, scale], np.float32)})[0]
    np.testing.assert_allclose(got, reference(attrs, [1, 1, n], dy, [1, 1, scale]), rtol=1e-5, atol=1e-5)


def test_the_dense_path_before_opset_12_is_refused_where_it_would_pass_the_budget():
    """Before opset 12 the path still resizes I(n): n * max(n, m) entries, refused by the budget when the lengths
    are known (20,000 -> 40,000: 8e8 entries, more than 2^28); opset 12 lowers the same node."""
    with pytest.raises(DescError) as e:
        lowered_1d({"mode": "linear"}, 20000, 40000, 2.0, opset=11)
    assert e.value.field == "node rg.X.shape[2]" and e.value.value == 20000
    assert "identity probe" in e.value.rule and "2^28" in e.value.rule
    lowered_1d({"mode": "linear"}, 20000, 40000, 2.0, opset=12)


def test_a_known_length_past_the_axis_budget_is_refused_on_the_run_time_path():
    previous = budget.set_limits(axis=1000)
    try:
        with pytest.raises(DescError) as e:
            lowered_1d({"mode": "linear"}, 600, 1200, 2.0)
        assert e.value.field == "node rg.dY.shape[2]" and e.value.value == 1200
        assert "per-axis budget" in e.value.rule
        lowered_1d({"mode": "linear"}, 400, 800, 2.0)
    finally:
        budget.set_limits(**previous)


def test_a_run_time_table_past_the_budget_is_refused():
    """max_table() follows the axis budget (x 64): an antialiased 256 -> 240 axis probes 3 x 8 comb rows at a time,
    17,664 entries: lowered under axis=1000, refused under axis=256 (max_table 16,384 entries)."""
    previous = budget.set_limits(axis=1000)
    try:
        lowered_1d({"mode": "linear", "antialias": 1}, 256, 240, 0.9375)
        budget.set_limits(axis=256)
        with pytest.raises(DescError) as e:
            lowered_1d({"mode": "linear", "antialias": 1}, 256, 240, 0.9375)
        assert e.value.field == "node rg.X.shape[2]" and "the probes of its taps" in e.value.rule
        assert "17664 entries, more than the budget of 16384" in e.value.rule
    finally:
        budget.set_limits(**previous)
