"""The jax format against JAX itself (the `jax` extra): random jax.image.resize calls (every method, antialias,
1-4 axes) and jax.image.scale_and_translate calls; the map's forward equals JAX's and its transpose equals
jax.vjp's gradient. And conversions between torch, TF and JAX filters, run on the runtimes."""
import numpy as np
import pytest

from conformance.reference import resize, resize_grad
from dml_desc import conventions
from dml_desc.conventions.jax import METHODS, JaxResize, to_canonical
from dml_desc.errors import DescError

pytestmark = pytest.mark.tfjax
pytest.importorskip("jax", reason="jax is not installed (the `jax` extra)")
import jax.image  # noqa: E402
TOL = 2e-5


def jax_call(call: JaxResize):
    if call.is_scale_and_translate:
        return lambda x: jax.image.scale_and_translate(
            x, call.shape, call.spatial_dims, np.float32(call.scale), np.float32(call.translation), call.method,
            antialias=call.antialias)
    return lambda x: jax.image.resize(x, call.shape, call.method, antialias=call.antialias)


def check(call: JaxResize, rng):
    res = to_canonical(call)
    x = rng.standard_normal(call.shape_in).astype(np.float32)
    y, vjp = jax.vjp(jax_call(call), x)
    np.testing.assert_allclose(resize(x.astype(np.float64), res), np.asarray(y), rtol=TOL, atol=TOL, err_msg=str(call))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    (dx,) = vjp(dy)
    np.testing.assert_allclose(resize_grad(dy.astype(np.float64), res), np.asarray(dx), rtol=TOL, atol=TOL,
                               err_msg=str(call))


@pytest.mark.parametrize("seed", range(2))
def test_resize_matches_jax(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):                 # each call compiles (jit): about 1 s each
        rank = int(rng.integers(1, 5))
        shape_in = [int(rng.integers(1, 14)) for _ in range(rank)]
        shape = [n if rng.random() < 0.3 else int(rng.integers(1, 20)) for n in shape_in]
        check(JaxResize(shape_in, shape, str(rng.choice(list(METHODS))), bool(rng.random() < 0.6)), rng)


@pytest.mark.parametrize("seed", range(2))
def test_scale_and_translate_matches_jax(seed):
    rng = np.random.default_rng(10 + seed)
    methods = [m for m in METHODS if m != "nearest"]
    for _ in range(20):
        shape_in = [int(rng.integers(1, 3)), int(rng.integers(1, 14)), int(rng.integers(1, 14))]
        shape = shape_in[:1] + [int(rng.integers(1, 20)) for _ in range(2)]
        dims = [1, 2] if rng.random() < 0.7 else [2]
        call = JaxResize(shape_in, [shape[d] if d in dims else shape_in[d] for d in range(3)],
                         str(rng.choice(methods)), bool(rng.random() < 0.6), dims,
                         [round(float(rng.uniform(0.2, 3)), 2) for _ in dims],
                         [0.0 if rng.random() < 0.4 else round(float(rng.uniform(-3, 3)), 2) for _ in dims])
        if call.method.endswith("-pytorch") and not call.antialias:
            try:
                to_canonical(call)
            except DescError as e:      # edge padding with samples outside the input: refused, not modelled
                assert "not modelled" in e.rule
                continue
        check(call, rng)


def test_nearest_scale_and_translate_is_refused_as_jax_refuses_it():
    with pytest.raises(DescError, match="Nearest neighbor"):
        to_canonical(JaxResize([4, 4], [2, 2], "nearest", True, [0, 1], [0.5, 0.5], [0.0, 0.0]))


def test_torch_lanczos_converts_to_jax_exactly_and_the_runtimes_agree():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    call = {"input_shape": [1, 2, 13, 9], "mode": "lanczos", "size": [5, 20], "antialias": True}
    written = conventions.write("jax", conventions.read("torch", call))
    assert written.obj["method"] == "lanczos3" and not written.notes
    x = np.random.default_rng(0).standard_normal(call["input_shape"]).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=[5, 20], mode="lanczos", antialias=True).numpy()
    got = np.asarray(jax.image.resize(x, written.obj["shape"], "lanczos3", antialias=True))
    np.testing.assert_allclose(got, want, atol=1e-5)
