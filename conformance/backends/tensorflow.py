"""--backend tensorflow: TF's own gradient kernels (ResizeBilinearGrad, ResizeNearestNeighborGrad, ResizeBicubicGrad,
ScaleAndTranslateGrad) through tf.GradientTape, from the tf description (the `tf` extra: tensorflow-cpu)."""
from __future__ import annotations

from importlib.util import find_spec
from typing import Optional

import numpy as np

from ..catalog import Skip
from .base import Backend

TF_INSTALL = "pip install 'dml-desc[tf]' (tensorflow-cpu)"
V1_OPS = {"bilinear": "resize_bilinear", "nearest": "resize_nearest_neighbor", "bicubic": "resize_bicubic"}


def forward_fn(tf, description: dict):
    """The TF call a tf description names, as a function of x (NHWC)."""
    from dml_desc.conventions import tf as tfc
    return call_fn(tf, tfc.call_from_json(description))


def call_fn(tf, call):
    """A TF call (TfResize, TfImageResize or a ScaleAndTranslate call) as a function of x (NHWC)."""
    from dml_desc.conventions import tf as tfc
    if isinstance(call, tfc.TfResize):
        op = getattr(tf.compat.v1.image, V1_OPS[call.method])
        return lambda x: op(x, call.size, align_corners=call.align_corners, half_pixel_centers=call.half_pixel_centers)
    if isinstance(call, tfc.TfImageResize):
        return lambda x: tf.image.resize(x, call.size, call.method, preserve_aspect_ratio=call.preserve_aspect_ratio,
                                         antialias=call.antialias)
    return lambda x: tf.raw_ops.ScaleAndTranslate(
        images=x, size=call.size, scale=np.float32(call.scale), translation=np.float32(call.translation),
        kernel_type=call.kernel_type, antialias=call.antialias)


class TensorflowBackend(Backend):
    """TF's gradient of the described call: x.grad through tf.GradientTape (float32 and float64)."""
    name, convention, dtypes = "tensorflow", "tf", ("f32", "f64")

    def available(self) -> Optional[str]:
        """None, or how to install TensorFlow."""
        return None if find_spec("tensorflow") else f"tensorflow is not installed: {TF_INSTALL}"

    def forward(self, description, x: np.ndarray, dtype: str = "f32") -> np.ndarray:
        """TF's forward of the described call on x."""
        import tensorflow as tf
        return forward_fn(tf, description)(tf.constant(x, _dtype(tf, dtype))).numpy()

    def run(self, description, dy, dtype):
        """dX = tape.gradient(call(x), x, output_gradients=dy)."""
        import tensorflow as tf
        x = tf.zeros(description["input_shape"], _dtype(tf, dtype))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward_fn(tf, description)(x)
        try:
            return tape.gradient(y, x, output_gradients=tf.constant(np.asarray(dy), y.dtype)).numpy()
        except LookupError as e:          # ResizeArea (tf.image.resize's area) has no registered gradient
            raise Skip(f"TensorFlow has no gradient for this op: {e}") from None

    def info(self) -> str:
        """The version and what runs, for `dml-desc run`."""
        import tensorflow as tf
        return f"tensorflow {tf.__version__}, tf.GradientTape through the described call (CPU)"


def _dtype(tf, dtype: str):
    return {"f32": tf.float32, "f64": tf.float64}[dtype]
