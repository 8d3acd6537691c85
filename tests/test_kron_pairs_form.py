"""The kron-pairs form of nearest x2 gradients (onnx_ops/forms/kron_pairs.py): picked where it measured fastest,
bitwise equal to NumPy summing the same pairs in the same order (and close to the float64 reference), the same
bits on every thread count, non-finite values kept inside their MatMul row, at every opset's Split."""
import numpy as np
import onnx
import pytest

from conformance.reference import resize_grad
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from onnx_ops import build_resize_grad, lower, run_model
from onnx_ops.forms import kron_pairs as kron_pairs_form
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

NEAREST = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}


def _spec(shape, scales, opset, mode=NEAREST):
    return OnnxResize(list(shape), dict(mode), scales=list(scales), opset=opset, op_type="ResizeGrad")


def _lowered(r: OnnxResize, dtype=np.float32):
    model = build_resize_grad(r, np.dtype(dtype), semantics=INSTALLED)
    for o in model.opset_import:
        if o.domain == "":
            o.version = r.opset
    lowered, report = lower(model, semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    return lowered, report


def _pair_sums(dy: np.ndarray, axes) -> np.ndarray:
    """The oracle: float32 sums of consecutive pairs, the last axis first, then the others from the back (the
    order the form sums in)."""
    out = dy
    for a in sorted(axes, reverse=True):
        even = [slice(None)] * dy.ndim
        odd = list(even)
        even[a], odd[a] = slice(0, None, 2), slice(1, None, 2)
        out = out[tuple(even)] + out[tuple(odd)]
    return out


def _run(r: OnnxResize, seed=0, threads=0, dy=None):
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = _lowered(r)
    if dy is None:
        dy = np.random.default_rng(seed).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}, threads=threads)[0]
    return res, lowered, report, dy, dx


# (spec, the per-axis forms, the op types of the lowered graph)
PICKED = [
    (_spec((2, 8, 64, 64), [1, 1, 2, 2], 20), ("kron-pairs add", "kron-pairs matmul 32->16"),
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape", "Reshape", "Add"]),
    (_spec((1, 8, 256, 260), [1, 1, 2, 2], 17), ("kron-pairs avgpool", "kron-pairs matmul 32->16"),
     ["Reshape", "MatMul", "Reshape", "AveragePool", "Reshape"]),                     # 2.13M dY values
    (_spec((2, 4, 12, 14, 22), [1, 1, 2, 2, 2], 19), ("kron-pairs add",) * 2 + ("kron-pairs matmul 32->16",),
     ["Reshape", "MatMul"] + ["Reshape", "Split", "Reshape", "Reshape", "Add"] * 2),
    (_spec((1, 5, 91, 91), [1, 1, 2, 2], 19), ("kron-pairs add", "kron-pairs matmul 4->2"),   # odd: rows of 4
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape", "Reshape", "Add"]),
    (_spec((2, 64, 40, 60), [1, 2, 1, 2], 18), ("kron-pairs add", "kron-pairs matmul 32->16"),  # axes 1, 3
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape", "Reshape", "Add"]),
    (_spec((2, 64, 40, 60), [1, 2, 1, 2], 13), ("kron-pairs add", "kron-pairs matmul 32->16"),  # Split-13
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape", "Reshape", "Add"]),
    # x3 to x8 (issue 34, 2026-11-27): the MatMul sums f values, the other axes Split into f and Add in order
    (_spec((8, 3, 128, 128), [1, 1, 4, 4], 19), ("kron-pairs add", "kron-pairs matmul 64->16"),
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape"] + ["Reshape", "Add"] * 3),   # measured 1.3 -> 0.8 ms
    (_spec((2, 8, 64, 64), [1, 1, 3, 3], 20), ("kron-pairs add", "kron-pairs matmul 48->16"),
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape"] + ["Reshape", "Add"] * 2),
    (_spec((4, 16, 64, 64), [1, 1, 4, 2], 17), ("kron-pairs add", "kron-pairs matmul 32->16"),   # mixed factors
     ["Reshape", "MatMul", "Reshape", "Split", "Reshape"] + ["Reshape", "Add"] * 3),
]


@pytest.mark.parametrize("r,forms,ops", PICKED, ids=["2d-op20", "2d-op17-large", "3d-op19", "odd-op19",
                                                     "axes-1-3-op18", "axes-1-3-op13", "x4", "x3", "x4-by-2"])
def test_picked_where_it_measured_fastest_and_bitwise_equal_to_the_same_pair_sums(r, forms, ops):
    """x2: bitwise the pair sums in the form's order; other factors: the reference within float32 rounding."""
    res, lowered, report, dy, dx = _run(r)
    assert report[0].forms == forms and not report[0].dynamic
    assert [n.op_type for n in lowered.graph.node] == ops
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=4e-6 * np.abs(want).max())
    if all(s in (1, 2) for s in r.scales):
        np.testing.assert_array_equal(dx, _pair_sums(dy, res.resized_axes))


@pytest.mark.parametrize("r", [
    _spec((8, 32, 32, 32), [1, 1, 2, 2], 17),           # 1M dY values: the pool form measured faster
    _spec((2, 16, 32, 32, 32), [1, 1, 2, 2, 2], 17),    # 3 axes at opset 17: the pool form measured faster
    _spec((2, 3, 8, 12), [1, 1, 2, 2], 20),             # small: below MIN_VALUES
    _spec((2, 8, 64, 64), [1, 1, 2, 1], 20),            # the last axis is not resized
    _spec((2, 8, 64, 64), [1, 1, 2, 2], 20, {"mode": "linear"})], ids=["1M-op17", "3d-op17", "small",
                                                                      "not-last", "linear"])
def test_not_used_where_another_form_measured_faster_or_it_does_not_apply(r):
    res, lowered, report, dy, dx = _run(r)
    assert not any(f.startswith(kron_pairs_form.NAME) for f in report[0].forms)
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=2e-6 * np.abs(want).max())


def test_float16_goes_through_it_and_double_does_not():
    r = PICKED[0][0]
    res = to_canonical(r, semantics=INSTALLED)
    for dtype, used in ((np.float16, True), (np.float64, False)):
        lowered, report = _lowered(r, dtype)
        assert report[0].forms[-1].startswith(kron_pairs_form.NAME) == used
        dy = np.random.default_rng(1).standard_normal(res.out_shape).astype(dtype)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, dtype)})[0]
        want = resize_grad(dy.astype(np.float64), res)
        np.testing.assert_allclose(dx, want, rtol=0, atol=(4e-3 if used else 1e-12) * np.abs(want).max())


@pytest.mark.parametrize("r", [p[0] for p in PICKED[:3]], ids=["2d-op20", "2d-op17-large", "3d-op19"])
def test_the_same_bits_on_every_thread_count_and_run(r):
    results = {_run(r, seed=3, threads=t)[-1].tobytes() for t in (1, 2, 4, 1, 2)}
    assert len(results) == 1


@pytest.mark.parametrize("r", [p[0] for p in PICKED[:2]], ids=["add", "avgpool"])
def test_a_non_finite_value_stays_non_finite_and_inside_its_matmul_row(r):
    """The MatMul multiplies by its matrix's zeros, so an inf or NaN turns the other outputs of its row of k
    into NaN (0 * inf); the pairs pass spreads nothing. Nothing non-finite becomes finite."""
    res = to_canonical(r, semantics=INSTALLED)
    dy = np.random.default_rng(5).standard_normal(res.out_shape).astype(np.float32)
    dy[0, 0, 2, 3], dy[0, 1, 7, 40] = np.inf, np.nan
    *_, report, _, dx = _run(r, dy=dy)
    k = int(report[0].forms[-1].split("->")[1])
    want = resize_grad(dy.astype(np.float64), res)
    bad_want, bad_dx = ~np.isfinite(want), ~np.isfinite(dx)
    assert bad_want.any() and np.all(bad_dx[bad_want])
    last = dy.ndim - 1
    pairs = _pair_sums((~np.isfinite(dy)).astype(np.int8), [last])      # the MatMul's output: rows of k
    spread = np.repeat(pairs.reshape(-1, k).any(axis=1), k).reshape(pairs.shape).astype(np.int8)
    allowed = _pair_sums(spread, [a for a in res.resized_axes if a != last]) > 0
    assert not np.any(bad_dx & ~allowed)
    assert bad_dx.sum() <= 2 * k
    np.testing.assert_allclose(dx[~bad_dx], want[~bad_dx], rtol=0, atol=2e-6 * np.abs(want[~bad_dx]).max())


def test_symbolic_batch_and_channels_keep_the_static_form():
    """Symbolic dims count as 1 in the size rules (their size is unknown), so the known ones must pass them."""
    r = _spec((2, 8, 256, 256), [1, 1, 2, 2], 20)
    model = build_resize_grad(r, semantics=INSTALLED)
    model.opset_import[0].version = r.opset
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        dims[0].dim_param, dims[1].dim_param = "N", "C"
    lowered, report = lower(model, semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert report[0].forms[-1] == "kron-pairs matmul 32->16" and not report[0].dynamic
    for n, c in ((1, 2), (3, 1)):
        dy = np.random.default_rng(n).standard_normal((n, c, 512, 512)).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros((n, c, 256, 256), np.float32)})[0]
        np.testing.assert_array_equal(dx, _pair_sums(dy, (2, 3)))
    small = _spec((2, 8, 64, 64), [1, 1, 2, 2], 20)
    model = build_resize_grad(small, semantics=INSTALLED)
    model.opset_import[0].version = small.opset
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    # 8 x 128^2 known values pass
    assert lower(model, semantics=INSTALLED)[1][0].forms[-1] == "kron-pairs matmul 32->16"


def test_columns_take_the_longest_row_dividing_half_of_dy():
    assert kron_pairs_form.columns(to_canonical(PICKED[0][0], semantics=INSTALLED)) == 16
    # 5 x 182 x 182 / 2 is 2 mod 4
    assert kron_pairs_form.columns(to_canonical(PICKED[3][0], semantics=INSTALLED)) == 2
    assert kron_pairs_form.columns(to_canonical(_spec((1, 1, 3, 3), [1, 1, 2, 2], 20), semantics=INSTALLED)) == 2
