"""--backend jax: jax.vjp of jax.image.resize / scale_and_translate, from the jax description (the `jax` extra)."""
from __future__ import annotations

from importlib.util import find_spec
from typing import Optional

import numpy as np

from .base import Backend

JAX_INSTALL = "pip install 'dml-desc[jax]'"


def forward_fn(description: dict):
    """The JAX call a jax description names, as a function of x."""
    import jax.image
    from dml_desc.conventions.jax import JaxResize
    call = JaxResize.from_json(description)
    if call.is_scale_and_translate:
        def scaled(x):
            scale = np.float32(call.scale)  # type: ignore[arg-type]  # of a list: an array (the stubs say scalar)
            translation = np.float32(call.translation)  # type: ignore[arg-type]  # the same
            return jax.image.scale_and_translate(x, call.shape, call.spatial_dims, scale, translation, call.method,
                                                 antialias=call.antialias)
        return scaled
    return lambda x: jax.image.resize(x, call.shape, call.method, antialias=call.antialias)


class JaxBackend(Backend):
    """JAX's gradient of the described call: jax.vjp (float32; JAX's default has no float64)."""
    name, convention, dtypes = "jax", "jax", ("f32",)

    def available(self) -> Optional[str]:
        """None, or how to install JAX."""
        return None if find_spec("jax") else f"jax is not installed: {JAX_INSTALL}"

    def forward(self, description, x: np.ndarray, dtype: str = "f32") -> np.ndarray:
        """JAX's forward of the described call on x."""
        return np.asarray(forward_fn(description)(np.asarray(x, np.float32)))

    def run(self, description, dy, dtype):
        """dX = the vjp of the call at x = 0, applied to dy."""
        import jax
        _, vjp = jax.vjp(forward_fn(description), np.zeros(description["shape_in"], np.float32))
        return np.asarray(vjp(np.asarray(dy, np.float32))[0])

    def info(self) -> str:
        """The version and what runs, for `dml-desc run`."""
        import jax
        return f"jax {jax.__version__}, jax.vjp of the described call (CPU)"
