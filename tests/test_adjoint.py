"""<R x, dy> == <x, R^T dy> for random maps of every mode, and rank 1..8 / dtype coverage."""
import math

import ml_dtypes
import numpy as np
from hypothesis import given, settings, strategies as st

from conformance.reference import resize, resize_grad
from dml_desc import AxisMap, Mode, Resampling, Rounding


@st.composite
def resamplings(draw):
    rank = draw(st.integers(1, 4))
    mode = draw(st.sampled_from(list(Mode)))
    axes = []
    for _ in range(rank):
        n_in, n_out = draw(st.integers(1, 9)), draw(st.integers(1, 9))
        scale = draw(st.sampled_from([n_out / n_in, 0.5, 1.5, 2.0, 3.0, 0.3, math.inf]))
        axes.append(AxisMap(n_in, n_out, scale, draw(st.sampled_from([0.0, 0.5, -0.25])),
                            draw(st.sampled_from([0.0, -0.5, 0.5])), draw(st.sampled_from(list(Rounding))),
                            extrapolate=draw(st.booleans())))
    return Resampling(tuple(axes), mode, cubic_coeff_a=draw(st.sampled_from([-0.75, -0.5])),
                      exclude_outside=draw(st.booleans()), antialias=draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(resamplings(), st.integers(0, 2**31 - 1))
def test_adjoint_identity(res, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(res.in_shape)
    dy = rng.standard_normal(res.out_shape)
    lhs = float(np.sum(resize(x, res) * dy))
    rhs = float(np.sum(x * resize_grad(dy, res)))
    assert math.isclose(lhs, rhs, rel_tol=1e-12, abs_tol=1e-12)


def test_area_with_an_infinite_scale_samples_the_centre_pixel():
    """Area's window is 1 / scale pixels: an infinite scale (align_corners' length-1 rule) made it 0 / 0 = NaN."""
    res = Resampling((AxisMap(1, 1), AxisMap(3, 1, math.inf, 0.0, 0.0)), Mode.AREA)
    assert resize(np.array([[3.0, 4.0, 5.0]]), res).tolist() == [[3.0]]
    assert resize_grad(np.array([[2.0]]), res).tolist() == [[2.0, 0.0, 0.0]]


def test_any_rank_up_to_8_and_any_axis_subset():
    shape = (2, 1, 3, 1, 2, 1, 2, 3)
    axes = [AxisMap.identity(n) for n in shape]
    axes[2] = AxisMap(3, 5, 5 / 3, 0.5, -0.5)
    axes[7] = AxisMap(3, 2, 2 / 3, 0.5, -0.5)
    res = Resampling(tuple(axes), Mode.LINEAR)
    x = np.random.default_rng(0).standard_normal(shape)
    y = resize(x, res)
    assert y.shape == (2, 1, 5, 1, 2, 1, 2, 2)
    dy = np.ones_like(y)
    assert np.isclose(np.sum(resize_grad(dy, res)), dy.size)   # linear rows sum to 1


def test_dtypes_accumulate_wide():
    res = Resampling((AxisMap(4, 8, 2.0, 0.5, -0.5),), Mode.LINEAR)
    x = np.arange(4, dtype=np.float64) / 3
    want = resize(x, res)
    for dt, tol in ((np.float32, 1e-7), (np.float16, 1e-3), (ml_dtypes.bfloat16, 1e-2)):
        got = resize(x.astype(dt), res)
        assert got.dtype == np.dtype(dt)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_same_taps_forward_and_transpose():
    from dml_desc.weights import forward_taps
    res = Resampling((AxisMap(5, 7, 1.4, 0.5, -0.5),), Mode.CUBIC)
    fwd = forward_taps(res.axes[0], res)
    np.testing.assert_array_equal(fwd.transpose().dense(), fwd.dense().T)
