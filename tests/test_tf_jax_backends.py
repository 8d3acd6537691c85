"""--backend tensorflow and --backend jax: each runtime's gradient is judged by its own forward transposed (the
forward probed on unit inputs), and equals the NumPy reference of the description's map."""
import numpy as np
import pytest

from conformance.backends import resolve
from dml_desc import conventions
from dml_desc.reference import resize_grad

pytestmark = pytest.mark.tfjax
CASES = {
    "tensorflow": [{"input_shape": [1, 5, 4, 1], "size": [3, 7], "method": "bicubic", "align_corners": False,
                    "half_pixel_centers": True},
                   {"op": "image.resize", "input_shape": [1, 6, 3, 1], "size": [4, 5], "method": "lanczos3",
                    "antialias": True, "preserve_aspect_ratio": False},
                   {"op": "ScaleAndTranslate", "input_shape": [1, 5, 6, 1], "size": [4, 8], "scale": [0.7, 1.3],
                    "translation": [0.4, -0.6], "kernel_type": "mitchellcubic", "antialias": True}],
    "jax": [{"shape_in": [5, 6], "shape": [3, 9], "method": "lanczos5", "antialias": True},
            {"shape_in": [1, 5, 6], "shape": [1, 4, 8], "method": "cubic", "antialias": False, "spatial_dims": [1, 2],
             "scale": [0.7, 1.3], "translation": [0.4, -0.6]}],
}


def forward_matrix(backend, description, in_shape) -> np.ndarray:
    n = int(np.prod(in_shape))
    cols = [backend.forward(description, np.eye(n, dtype=np.float32)[i].reshape(in_shape)).ravel() for i in range(n)]
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("name,index", [(n, i) for n, cases in CASES.items() for i in range(len(cases))])
def test_gradient_is_its_own_forward_transposed(name, index):
    backend = resolve(name)
    if backend.available():
        pytest.skip(backend.available())
    description = CASES[name][index]
    res = conventions.read(backend.convention, description).canonical
    m = forward_matrix(backend, description, res.in_shape)
    dy = np.random.default_rng(index).standard_normal(res.out_shape).astype(np.float32)
    dx = backend.run(description, dy, "f32")
    np.testing.assert_allclose(dx.ravel(), m.T @ dy.ravel(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=2e-5, atol=2e-5)


def test_backends_skip_with_a_reason_when_missing():
    for name in ("tensorflow", "jax"):
        backend = resolve(name)
        reason = backend.available()
        assert reason is None or "pip install 'dml-desc[" in reason


@pytest.mark.parametrize("name,fmt", [("tensorflow", "tf"), ("jax", "jax")])
def test_dml_desc_run_takes_tensorflow_and_jax(name, fmt, tmp_path, capsys):
    """`dml-desc run FILE --backend tensorflow|jax`: the runtime's own gradient of the description's call."""
    import json
    from dml_desc.cli import main
    backend = resolve(name)
    if backend.available():
        pytest.skip(backend.available())
    description = CASES[name][0]
    res = conventions.read(fmt, description).canonical
    dy = np.random.default_rng(5).standard_normal(res.out_shape).astype(np.float32)
    (tmp_path / "d.json").write_text(json.dumps(description))
    np.save(tmp_path / "dy.npy", dy)
    code = main(["run", str(tmp_path / "d.json"), "--from", fmt, "--backend", name, "--dy", str(tmp_path / "dy.npy"),
                 "-o", str(tmp_path / "dx.npy")])
    assert code == 0 and f"backend: {name} " in capsys.readouterr().out
    np.testing.assert_allclose(np.load(tmp_path / "dx.npy"), resize_grad(dy.astype(np.float64), res), atol=2e-5)
