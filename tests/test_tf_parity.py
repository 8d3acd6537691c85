"""Random TF v1 resize calls (NHWC): our map, forward and gradient, equals TensorFlow's. Needs tensorflow."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from conformance.reference import resize, resize_grad
from dml_desc.conventions.tf import TfResize, to_canonical

tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed (it is not a dependency; "
                         "install tensorflow-cpu to run this oracle)")
OPS = {"bilinear": "resize_bilinear", "nearest": "resize_nearest_neighbor", "bicubic": "resize_bicubic"}


@st.composite
def calls(draw):
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 2))]
    method = draw(st.sampled_from(list(OPS)))
    ac = draw(st.booleans())
    hp = False if ac else draw(st.booleans())
    return TfResize(shape, [draw(st.integers(1, 12)), draw(st.integers(1, 12))], method, ac, hp)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls(), st.integers(0, 1000))
def test_forward_and_gradient_match_tensorflow(t, seed):
    res = to_canonical(t)
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.standard_normal(t.input_shape), tf.float32)
    op = getattr(tf.compat.v1.image, OPS[t.method])
    with tf.GradientTape() as tape:
        tape.watch(x)
        try:
            y = op(x, t.size, align_corners=t.align_corners, half_pixel_centers=t.half_pixel_centers)
        except Exception:
            assume(False)
    dy = tf.constant(rng.standard_normal(y.shape), tf.float32)
    dx = tape.gradient(y, x, output_gradients=dy)
    np.testing.assert_allclose(resize(x.numpy().astype(np.float64), res), y.numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(resize_grad(dy.numpy().astype(np.float64), res), dx.numpy(), rtol=2e-5, atol=2e-5)
