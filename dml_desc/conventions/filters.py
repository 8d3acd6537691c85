"""What TF's ScaleAndTranslate and JAX's scale_and_translate share (the model: jax/_src/image/scale.py and TF's
scale_and_translate_op.cc): one weight matrix per axis, the kernel evaluated at each input pixel centre's distance
from the sample x = (o + 0.5 - t) / scale - 0.5, stretched by 1/scale when antialias downsamples, taps outside the
input dropped and the rest normalised, and a sample outside every input pixel writes 0."""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..canonical import AxisMap, Mode, Resampling

# kernel names (TF's kernel_type, JAX's methods) -> (mode, cubic_coeff_a)
KERNELS = {"lanczos1": Mode.LANCZOS1, "lanczos3": Mode.LANCZOS3, "lanczos5": Mode.LANCZOS5, "gaussian": Mode.GAUSSIAN,
           "box": Mode.BOX, "triangle": Mode.LINEAR, "keyscubic": Mode.CUBIC, "mitchellcubic": Mode.MITCHELLCUBIC,
           "area": Mode.AREA}
KERNEL_NAMES = {mode: name for name, mode in KERNELS.items()}
# Filters whose weights at integer distances are not (1, 0, 0, ...): a scale-1 axis is blurred, not copied.
NOT_INTERPOLATING = (Mode.GAUSSIAN, Mode.MITCHELLCUBIC)


def scale_translate_axis(n_in: int, n_out: int, inv_scale: float, translation: float, mode: Mode) -> AxisMap:
    """One axis: x = (o + 0.5 - t) * inv_scale - 0.5 with the runtime's float32 inv_scale (1 / scale), and samples
    outside [-0.5, in - 0.5] zero where there are any (a translation, or more outputs than scale * in). A scale-1
    axis of a non-interpolating filter keeps explicit coordinates (it is filtered, not copied)."""
    from ..weights import coordinates
    inv = float(np.float32(inv_scale))
    ax = AxisMap(n_in, n_out, 1 / Fraction(inv), 0.5, float(np.float32(translation)) - 0.5)
    x = coordinates(ax)
    if bool(((x < -0.5) | (x > n_in - 0.5)).any()):     # only where it matters: the flag is part of the map
        ax = ax.with_(zero_outside=True)
    if ax.is_identity and mode in NOT_INTERPOLATING:
        return ax.with_(coords=tuple(float(o) for o in range(n_in)))
    return ax


def filtered(axes: Sequence[AxisMap], mode: Mode, antialias: bool) -> Resampling:
    """The map: `mode`'s kernel (Keys a = -0.5 for cubic), normalised over the taps inside the input."""
    return Resampling(tuple(axes), mode, cubic_coeff_a=-0.5, exclude_outside=True, antialias=bool(antialias))


def kernel_of(res: Resampling) -> str | None:
    """The kernel name of a scale-and-translate map (None when `res` is none: nearest, pool, Keys a != -0.5, or
    taps not normalised over the input)."""
    if res.mode not in KERNEL_NAMES or not res.exclude_outside and res.mode is not Mode.AREA:
        return None
    if res.mode is Mode.CUBIC and res.cubic_coeff_a != -0.5:
        return None
    return KERNEL_NAMES[res.mode]
