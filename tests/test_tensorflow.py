"""The TF convention against TensorFlow itself (tensorflow-cpu, the `tf` extra): random v1 resize calls,
tf.image.resize calls (every method, antialias, preserve_aspect_ratio) and tf.raw_ops.ScaleAndTranslate calls; the
map's forward equals TF's forward and its transpose equals TF's own gradient kernels (through tf.GradientTape)."""
import numpy as np
import pytest

from conformance.reference import resize, resize_grad
from dml_desc import conventions
from dml_desc.conventions import tf as tfc

pytestmark = pytest.mark.tfjax
tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed (the `tf` extra: tensorflow-cpu)")
from conformance.backends.tensorflow import V1_OPS  # noqa: E402  (after the importorskip)
TOL = 2e-5


def tf_call(call):
    """The forward function of x for a TF call description (the backend's own spelling of TF's API)."""
    from conformance.backends.tensorflow import call_fn
    return call_fn(tf, call)


def check(call, rng, gradient=True):
    res = tfc.read(call)
    x = tf.constant(rng.standard_normal(call.input_shape), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf_call(call)(x)
    assert tuple(y.shape) == res.out_shape, call
    np.testing.assert_allclose(resize(x.numpy().astype(np.float64), res), y.numpy(), rtol=TOL, atol=TOL,
                               err_msg=str(call))
    if gradient:
        dy = tf.constant(rng.standard_normal(y.shape), tf.float32)
        dx = tape.gradient(y, x, output_gradients=dy)
        np.testing.assert_allclose(resize_grad(dy.numpy().astype(np.float64), res), dx.numpy(), rtol=TOL, atol=TOL,
                                   err_msg=str(call))


def shape(rng, top=24):
    return [int(rng.integers(1, 3)), int(rng.integers(1, top)), int(rng.integers(1, top)), int(rng.integers(1, 3))]


@pytest.mark.parametrize("seed", range(2))
def test_v1_ops_match_tensorflow(seed):
    """Larger axes than the published-number tests: CalculateResizeScale in float32 and bicubic's 1024-entry table
    (JAX's exact Keys kernel is up to 1.1e-3 from it) are what TF computes."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        method = str(rng.choice(list(V1_OPS)))
        ac = bool(rng.random() < 0.4)
        hp = False if ac else bool(rng.random() < 0.5)
        check(tfc.TfResize(shape(rng, 40), [int(rng.integers(1, 50)), int(rng.integers(1, 50))], method, ac, hp), rng)


@pytest.mark.parametrize("seed", range(2))
def test_image_resize_matches_tensorflow(seed):
    rng = np.random.default_rng(10 + seed)
    for _ in range(60):
        method = str(rng.choice(tfc.V2_METHODS))
        call = tfc.TfImageResize("image.resize", shape(rng), [int(rng.integers(1, 30)), int(rng.integers(1, 30))],
                                 method, bool(rng.random() < 0.5), bool(rng.random() < 0.2))
        check(call, rng, gradient=method != "area")


def test_area_has_no_gradient_in_tensorflow():
    """A finding: TF registers no gradient for ResizeArea (tf.image.resize's area), so only its forward is TF's."""
    x = tf.constant(np.ones((1, 4, 4, 1), np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.image.resize(x, [2, 3], "area")
    with pytest.raises(LookupError, match="ResizeArea"):
        tape.gradient(y, x)


@pytest.mark.parametrize("seed", range(2))
def test_scale_and_translate_matches_tensorflow(seed):
    rng = np.random.default_rng(20 + seed)
    for _ in range(60):
        call = tfc.TfScaleAndTranslate(
            "ScaleAndTranslate", shape(rng), [int(rng.integers(1, 30)), int(rng.integers(1, 30))],
            [round(float(rng.uniform(0.2, 3)), 2) for _ in range(2)],
            [0.0, 0.0] if rng.random() < 0.4 else [round(float(rng.uniform(-3, 3)), 2) for _ in range(2)],
            str(rng.choice(tfc.KERNEL_TYPES)), bool(rng.random() < 0.6))
        check(call, rng)


def test_conversions_to_tf_are_exact_on_tensorflow():
    """torch's lanczos (NCHW) read as NHWC by a transposition is no TF call, but JAX's lanczos3 on NHWC is
    tf.image.resize's: the converted call, run by TF, reproduces the map."""
    rng = np.random.default_rng(3)
    obj = {"shape_in": [1, 17, 9, 2], "shape": [1, 6, 20, 2], "method": "lanczos3"}
    written = conventions.write("tf", conventions.read("jax", obj))
    assert written.obj["op"] == "image.resize" and not written.notes
    check(tfc.call_from_json(written.obj), rng)
