"""How a result is judged: a plain tolerance, or benchdnn's rule for backward resampling."""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import ml_dtypes
import numpy as np

from dml_desc.reference import NUMPY_DTYPES    # the one table of the suite's dtype names

FLT_EPSILON = float(np.finfo(np.float32).eps)
EPS = {"f32": FLT_EPSILON, "f16": float(np.finfo(np.float16).eps),
       "bf16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)}

# A judge: (got, want) -> (ok, max abs error, max_rel or None, reason when not ok)
Judge = Callable[[np.ndarray, np.ndarray], Tuple[bool, float, Optional[float], str]]


def errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """(max |got - want|, that error over max(1, max |want|)): the scale every tolerance is relative to.
    (An element-wise relative error means nothing where the reference is 0: it reads 1e+22 for a rounding error.)"""
    err = float(np.abs(got - want).max(initial=0))
    return err, err / max(1.0, float(np.abs(want).max(initial=0)))


def elementwise_rel(got: np.ndarray, want: np.ndarray, floor: float = 1e-5):
    """max |got - want| / |want| over the elements with |want| > floor; None when there are none."""
    big = np.abs(want) > floor
    return float((np.abs(got - want)[big] / np.abs(want[big])).max()) if big.any() else None


def within(tol: float) -> Judge:
    """A judge: pass when max |got - want| <= tol (an absolute tolerance the suite scales to the data)."""
    def judge(got, want):
        abs_err, rel_err = errors(got, want)
        ok = bool(abs_err <= tol)
        return ok, abs_err, rel_err, "" if ok else f"max abs error {abs_err:.3g} > tolerance {tol:.3g}"
    return judge


def benchdnn_threshold(mode: str, dtype: str) -> float:
    """setup_cmp: nearest is exact; linear uses 7*eps(diff_src) when diff_dst has the same type."""
    return 0.0 if mode == "nearest" else 7 * EPS[dtype]


def benchdnn(mode: str, dtype: str) -> Judge:
    """A judge with benchdnn's rule for backward resampling in `dtype` ('f32', 'f16', 'bf16'), mode
    'nearest' (exact) or 'linear' (7 eps relative; tiny references absolute FLT_EPSILON)."""
    trh = benchdnn_threshold(mode, dtype)

    def judge(got, want):
        want = representable(want, dtype)       # benchdnn rounds the expected value to the output type
        abs_err, rel_err = errors(got, want)[0], elementwise_rel(got, want)     # benchdnn's own relative error
        diff = np.abs(got - want)
        rel = diff / np.maximum(np.abs(want), 1e-30)
        ok_each = (diff == 0) | ((np.abs(want) <= 1e-5) & (diff < FLT_EPSILON)) | \
            (np.where(np.abs(want) > 1e-5, rel, diff) <= trh)
        bad = int((~ok_each).sum())
        return bad == 0, abs_err, rel_err, "" if bad == 0 else f"{bad} elements over benchdnn's threshold {trh:.3g}"
    return judge


def representable(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` rounded to `dtype` ('f64', 'f32', 'f16', 'bf16') and back to float64."""
    return np.asarray(values).astype(NUMPY_DTYPES[dtype]).astype(np.float64)


def benchdnn_fill(shape, dtype: str, kind: int = 2) -> np.ndarray:
    """benchdnn's non-perf fill: small exact values ((97 i - 19 kind + 101) % 17) * 1.25 (or / 16)."""
    i = np.arange(int(np.prod(shape)))
    values = ((97 * i - 19 * kind + 101) % 17).astype(np.float64)
    return (values * 1.25 if dtype == "f32" else values / 16).reshape(shape)
