"""Time bounds (docs/limits.md, "Time"): lowering is near-linear in the axis lengths up to the per-axis budget.
A linear 4194301 -> 4194304 axis, the budget's edge, took more than 300 s to `build --lowered` (numpy >= 2.3's
hash-based np.unique is quadratic on such keys, and every candidate spelling was compared in full to name the
closest one, which the lowered build never prints); it now takes seconds."""
import time

import numpy as np
import pytest

from dml_desc import conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.weights import Taps, sorted_unique
from onnx_ops.forms.resize import SAMPLE_ROWS, taps_close

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


def test_the_longest_linear_axis_the_budget_admits_lowers_in_seconds():
    from onnx_ops.build import build_gradient
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4194301], "mode": "linear", "size": [4194304],
                                        "align_corners": False})
    start = time.perf_counter()
    model, notes = build_gradient(res, lowered=True, semantics=INSTALLED)
    took = time.perf_counter() - start
    assert took < 60, f"lowering a 2^22 axis took {took:.0f} s"          # about 10 s on a shared 2-core machine
    assert any("straight from the canonical map" in n for n in notes)   # no ONNX spelling: the path that was slow
    assert model.ByteSize() < 2 ** 27


@pytest.mark.parametrize("values", [np.arange(2 ** 21), np.array([5, -1, 5, 3, -1, 7]), np.zeros(0, np.int64),
                                    np.random.default_rng(0).integers(-50, 50, 1000)])
def test_sorted_unique_is_np_unique(values):
    np.testing.assert_array_equal(sorted_unique(values), np.unique(values))


def test_sorted_unique_is_fast_where_np_unique_is_quadratic():
    keys = np.arange(2 ** 21)        # np.unique: 13 s with numpy 2.4's hash table on this machine
    start = time.perf_counter()
    sorted_unique(keys)
    assert time.perf_counter() - start < 2


def test_taps_close_still_reads_the_rows_its_sample_skips():
    rows, rng = 4 * SAMPLE_ROWS + 7, np.random.default_rng(1)
    index = np.stack([np.arange(rows), np.minimum(np.arange(rows) + 1, rows - 1)], axis=1)
    weight = rng.random((rows, 2))
    a = Taps(index, weight, rows)
    assert taps_close(a, Taps(index, weight / 2, rows), 2.0)
    for row in (SAMPLE_ROWS + 3, rows // 2, rows - 1):      # outside the sample, inside it, inside it
        changed = weight.copy()
        changed[row, 1] *= 1.01
        assert not taps_close(a, Taps(index, changed, rows))
    assert not taps_close(a, Taps(index[:-1], weight[:-1], rows))
