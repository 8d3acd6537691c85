"""Per-axis sparse weights: the one table the reference, the ONNX lowering and the suite share.

A `Taps` table maps `rows` destination indices to K source indices each:
    dst[r] = sum_k weight[r, k] * src[index[r, k]]
`forward_taps` gives the Resize table (rows = outputs); `Taps.transpose()` gives the
gradient table (rows = inputs) of exactly the same matrix.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable

import numpy as np
import numpy.typing as npt

from .canonical import AxisMap, Mode, Resampling, Rounding, fraction

F32 = np.float32
MAX_BLOCK_KERNEL = 2 ** 16     # entries of a dense block kernel K (512 KB); larger ones are not block forms
BLOCK_CHUNK = 2 ** 20          # entries compared at a time when a table is checked against I (x) K


@dataclass(frozen=True, eq=False)
class Taps:
    """A sparse resampling matrix for one axis: output row r = sum over k of weight[r, k] * input[index[r, k]].
    `forward_taps` gives the Resize matrix (rows = outputs, cols = inputs); `transpose()` the gradient.
    """
    index: np.ndarray    # (rows, K) int64, every entry in [0, cols)
    weight: np.ndarray   # (rows, K) float64, 0 for padding
    cols: int

    @property
    def rows(self) -> int:
        """The number of rows (outputs of this matrix)."""
        rows: int = self.index.shape[0]
        return rows

    @property
    def width(self) -> int:
        """K, the number of taps per row (padding taps have weight 0)."""
        width: int = self.index.shape[1]
        return width

    def dense(self) -> np.ndarray:
        """The (rows, cols) float64 matrix; duplicate indices in a row add up."""
        m = np.zeros((self.rows, self.cols))
        np.add.at(m, (np.repeat(np.arange(self.rows), self.width), self.index.ravel()), self.weight.ravel())
        return m

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, col, weight) with each (row, col) pair once, zero weights dropped, sorted."""
        rows = np.repeat(np.arange(self.rows), self.width)
        keep = self.weight.ravel() != 0
        key = rows[keep] * self.cols + self.index.ravel()[keep]
        uniq, inv = np.unique(key, return_inverse=True)
        w = np.bincount(inv.ravel(), weights=self.weight.ravel()[keep], minlength=len(uniq))
        return uniq // self.cols, uniq % self.cols, w

    def block_kernel(self) -> np.ndarray | None:
        """K (p, q) when this table is I (x) K: block b of p rows reads only block b of q columns, and every
        block has the same weights. p/q = rows/cols in lowest terms (integer factors: one of them is 1;
        rational ones such as nearest 128 -> 192: 2 x 3); None when the table is not so, or when K would hold
        more than MAX_BLOCK_KERNEL entries (a coprime 20000 -> 20001 axis is one block of the whole matrix: no
        dense K is ever allocated for it). Memory: O(nonzeros) until K itself is made."""
        n, m = self.rows, self.cols
        p, q = n // math.gcd(n, m), m // math.gcd(n, m)
        if p * q > MAX_BLOCK_KERNEL:
            return None
        r, c, w = self.merged()
        if not np.array_equal(c // q, r // p):
            return None
        head = (r < p) & (w != 0)
        kr, kc, kw = r[head], c[head], w[head]          # sorted, each (row, col) once: K's nonzeros in order
        blocks = n // p
        if len(r) != blocks * len(kr):
            return None
        for lo in range(0, blocks, max(1, BLOCK_CHUNK // max(len(kr), 1))):   # compare block by block, bounded
            hi = min(blocks, lo + max(1, BLOCK_CHUNK // max(len(kr), 1)))
            b = np.arange(lo, hi)[:, None]
            part = slice(lo * len(kr), hi * len(kr))
            if not (np.array_equal(r[part], (b * p + kr).ravel()) and np.array_equal(c[part], (b * q + kc).ravel())
                    and np.array_equal(w[part], np.tile(kw, hi - lo))):
                return None
        kernel = np.zeros((p, q))
        kernel[kr, kc] = kw
        return kernel

    def transpose(self) -> "Taps":
        """The transposed matrix as Taps (rows = the old columns): the gradient of this resampling."""
        r, c, w = self.merged()
        order = np.lexsort((r, c))
        r, c, w = r[order], c[order], w[order]
        counts = np.bincount(c, minlength=self.cols)
        width = max(int(np.max(counts, initial=0)), 1)
        _check_table(self.cols, width)
        start = np.concatenate(([0], np.cumsum(counts)[:-1]))
        slot = np.arange(len(c)) - start[c]
        index = np.zeros((self.cols, width), np.int64)
        weight = np.zeros((self.cols, width))
        index[c, slot], weight[c, slot] = r, w
        return Taps(index, weight, self.rows)


def sorted_unique(values: npt.ArrayLike) -> np.ndarray:
    """The distinct values, sorted: np.unique by sorting. numpy >= 2.3 finds plain unique values with a hash
    table that is quadratic on some int64 keys (np.unique(np.arange(2 ** 21)) took 13 s, a 2^22 axis hours);
    a sort is O(k log k) on any keys (docs/limits.md, "Time")."""
    s = np.sort(np.asarray(values).ravel())
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


MAX_TABLE_ENTRIES = 2 ** 26   # rows x width of one taps table: 1 GiB of index and weight (docs/limits.md)


def _check_table(rows: int, width: int) -> None:
    """Refuse, before allocating, a taps table whose rows x width (the widest row sets every row's width) would
    pass MAX_TABLE_ENTRIES: e.g. the gradient of an axis whose every output reads one input (a zero-length
    crop) has as many taps in that input's row as there are outputs."""
    from .errors import DescError
    if rows * width > MAX_TABLE_ENTRIES:
        raise DescError("taps", f"{rows} rows x {width} taps", f"the table would hold {rows * width} entries, "
                        f"more than the memory bound of {MAX_TABLE_ENTRIES} (2^26) entries for one axis "
                        "(docs/limits.md): shorten the axis")


def coordinates(ax: AxisMap) -> np.ndarray:
    """x for every output index, rounded through float32 as the runtimes compute it (or exact, as float64)."""
    if ax.coords is not None:
        return np.asarray(ax.coords, np.float64)
    if ax.exact:
        return np.array([float(x) for x in exact_coordinates(ax)])
    o = np.arange(ax.out_size, dtype=np.float64)
    if ax.scale == math.inf:
        q = np.zeros_like(o)
        return (q - ax.in_offset).astype(F32).astype(np.float64)
    f = fraction(ax.scale)
    q = (o - ax.out_offset) * float(f.denominator) / float(f.numerator)
    if not ax.single_rounding:
        q = q.astype(F32).astype(np.float64)
    return (q - ax.in_offset).astype(F32).astype(np.float64)


def exact_coordinates(ax: AxisMap) -> list[Fraction]:
    """x for every output index as an exact Fraction: (o - out_offset) / scale - in_offset, no rounding."""
    shift = fraction(ax.in_offset)
    if ax.scale == math.inf:
        return [-shift] * ax.out_size
    s, out_offset = fraction(ax.scale), fraction(ax.out_offset)
    return [(o - out_offset) / s - shift for o in range(ax.out_size)]


ROUND: dict[Rounding, Callable[[np.ndarray], np.ndarray]] = {
    Rounding.ROUND_PREFER_FLOOR: lambda x: np.ceil(x - 0.5),
    Rounding.ROUND_PREFER_CEIL: lambda x: np.floor(x + 0.5),
    Rounding.FLOOR: np.floor,
    Rounding.CEIL: np.ceil,
}
EXACT_ROUND: dict[Rounding, Callable[[Fraction], int]] = {
    Rounding.ROUND_PREFER_FLOOR: lambda x: math.ceil(x - Fraction(1, 2)),
    Rounding.ROUND_PREFER_CEIL: lambda x: math.floor(x + Fraction(1, 2)),
    Rounding.FLOOR: math.floor,
    Rounding.CEIL: math.ceil,
}


def snap_ties(x: np.ndarray, tolerance: float) -> np.ndarray:
    """Coordinates within `tolerance` of k + 0.5 become exactly k + 0.5 (onnxruntime >= 1.27's tie test on its
    float32 coordinate: |x - floor(x) - 0.5| <= 1e-6). The one place this rule lives: code that rounds
    coordinates itself must call it (the lowering's static forms read it through the taps)."""
    half = np.floor(x) + 0.5
    return np.where(np.abs(x - half) <= tolerance, half, x) if tolerance else x


# Coordinates are cut to +-FAR before they become indices: every sample beyond it is outside any axis (at most
# 2^22 long, its taps 2^26 wide) alike, and the indices stay inside int64 (an offset of 1e30, a float32 overflow).
FAR = 2.0 ** 52


def nearest_index(ax: AxisMap, x: np.ndarray) -> np.ndarray:
    """The input index each output reads in nearest mode (before clamping), by the axis's rounding rule,
    tie tolerance and arithmetic (float32 or exact); cut to +-FAR."""
    if ax.exact and ax.coords is None:
        return np.array([min(max(EXACT_ROUND[ax.rounding](q), -FAR), FAR) for q in exact_coordinates(ax)],
                        np.int64)
    index: np.ndarray = np.clip(ROUND[ax.rounding](snap_ties(x, ax.tie_tolerance)), -FAR, FAR).astype(np.int64)
    return index


def linear_kernel(t: np.ndarray, a: float) -> np.ndarray:
    """The triangle (tent) filter max(0, 1 - |t|); `a` is unused (the signature matches cubic_kernel)."""
    weight: np.ndarray = np.clip(1.0 - np.abs(t), 0.0, None)
    return weight


def cubic_kernel(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient `a` (-0.75 in ONNX/PyTorch, -0.5 in TF half-pixel);
    support |t| < 2.
    """
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((t - 5) * t + 8) * t * a - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


# A filter kernel: (distances in input pixels, its coefficient a) -> weights.
Kernel = Callable[[np.ndarray, float], np.ndarray]


def lanczos_kernel(radius: float) -> Kernel:
    """Lanczos-`radius` (TF's LanczosKernelFunc, JAX's _fill_lanczos_kernel, torch's lanczos): sinc(t) sinc(t / r)
    for |t| <= r, 1 within 1e-3 of 0 (as they all special-case it)."""
    def kernel(t: np.ndarray, a: float) -> np.ndarray:
        t = np.abs(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = radius * np.sin(np.pi * t) * np.sin(np.pi * t / radius) / (np.pi ** 2 * t * t)
        return np.where(t > radius, 0.0, np.where(t <= 1e-3, 1.0, y))
    return kernel


def gaussian_kernel(t: np.ndarray, a: float) -> np.ndarray:
    """TF's GaussianKernelFunc: radius 1.5, sigma = radius / 3 = 0.5: exp(-t^2 / (2 sigma^2)) for |t| < 1.5."""
    t = np.abs(t)
    return np.where(t < 1.5, np.exp(-t * t / (2 * 0.5 * 0.5)), 0.0)


def mitchell_kernel(t: np.ndarray, a: float) -> np.ndarray:
    """Mitchell-Netravali (B = C = 1/3), TF's MitchellCubicKernelFunc; support |t| < 2."""
    t = np.abs(t)
    near = ((7 / 6 * t - 2) * t) * t + 8 / 9
    far = ((-7 / 18 * t + 2) * t - 10 / 3) * t + 16 / 9
    return np.where(t < 1, near, np.where(t < 2, far, 0.0))


def box_kernel(t: np.ndarray, a: float) -> np.ndarray:
    """TF's BoxKernelFunc, a point-sampled box: 1 for |t| < 0.5, 0.5 at |t| = 0.5 (radius 1)."""
    t = np.abs(t)
    return np.where(t < 0.5, 1.0, np.where(t == 0.5, 0.5, 0.0))


KERNELS: dict[Mode, tuple[Kernel, float]] = {
    Mode.LINEAR: (linear_kernel, 1.0), Mode.CUBIC: (cubic_kernel, 2.0),
    Mode.LANCZOS1: (lanczos_kernel(1.0), 1.0), Mode.LANCZOS3: (lanczos_kernel(3.0), 3.0),
    Mode.LANCZOS5: (lanczos_kernel(5.0), 5.0), Mode.GAUSSIAN: (gaussian_kernel, 1.5),
    Mode.MITCHELLCUBIC: (mitchell_kernel, 2.0), Mode.BOX: (box_kernel, 1.0)}
# Filters that always read the taps their (stretched, with antialias) support covers, normalised: the framework
# filters. LINEAR and CUBIC keep their fixed 2 / 4 taps unless antialias is on.
WINDOWED = (Mode.LANCZOS1, Mode.LANCZOS3, Mode.LANCZOS5, Mode.GAUSSIAN, Mode.MITCHELLCUBIC, Mode.BOX)


def _nearest(ax: AxisMap, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = nearest_index(ax, x)
    return idx[:, None], np.ones((len(x), 1))


def _window(ax: AxisMap, x: np.ndarray, res: Resampling) -> tuple[np.ndarray, int, float, float]:
    """(first tap, tap count, filter stretch, radius) for linear / cubic, plain or antialiased, and the windowed
    filters (stretched by the scale only with antialias)."""
    _, radius = KERNELS[res.mode]
    if res.antialias or res.mode in WINDOWED:
        stretch = min(float(ax.filter_scale), 1.0) if res.antialias else 1.0
        support = radius / stretch
        return np.floor(x + 1 - support), 2 * math.ceil(support) + 1, stretch, support
    if res.mode is Mode.LINEAR:
        return np.floor(x), 2, 1.0, radius
    return np.floor(x) - 1, 4, 1.0, radius


def _filtered(ax: AxisMap, x: np.ndarray, res: Resampling) -> tuple[np.ndarray, np.ndarray]:
    x = np.clip(x, 0, ax.in_size - 1) if res.mode is Mode.LINEAR and not res.antialias else np.clip(x, -FAR, FAR)
    first, count, stretch, support = _window(ax, x, res)
    _check_table(len(x), count)
    kernel, _ = KERNELS[res.mode]
    idx = first[:, None].astype(np.int64) + np.arange(count)
    w = kernel((idx - x[:, None]) * stretch, res.cubic_coeff_a)
    windowed = res.antialias or res.mode in WINDOWED
    if windowed:
        w = np.where(idx < np.floor(x + 1 + support)[:, None], w, 0.0)
    if res.exclude_outside:
        w = np.where((idx >= 0) & (idx < ax.in_size), w, 0.0)
    if windowed or res.exclude_outside:
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return idx, w


def _area(ax: AxisMap, x: np.ndarray, res: Resampling) -> tuple[np.ndarray, np.ndarray]:
    """Area: each output pixel, [c - w/2, c + w/2] around its centre c = x + 0.5 with w = 1 / scale input pixels,
    weighs input pixel i by its overlap with [i, i + 1], over w (TF's resize_area, JAX's area); exclude_outside
    renormalises over the pixels inside the input (JAX), else outside pixels fold onto the edge (TF's clamp)."""
    width = 1.0 / float(ax.filter_scale)
    lo, hi = x + 0.5 - width / 2, x + 0.5 + width / 2
    count = int(math.ceil(width)) + 2
    _check_table(len(x), count)
    idx = np.floor(lo)[:, None].astype(np.int64) + np.arange(count)
    if width > 0:
        w = np.clip(np.minimum(hi[:, None], idx + 1.0) - np.maximum(lo[:, None], idx), 0.0, None) / width
    else:                   # an infinite scale (align_corners' length-1 rule): the window is its centre's pixel
        w = (idx == np.floor(x + 0.5)[:, None]).astype(np.float64)
    if res.exclude_outside:
        w = np.where((idx >= 0) & (idx < ax.in_size), w, 0.0)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return idx, w


def _pool(ax: AxisMap) -> tuple[np.ndarray, np.ndarray]:
    """torch's adaptive average pooling (mode='area'): output o averages input [floor(o*in/out), ceil((o+1)*in/out)),
    in integers; the coordinates play no part."""
    n, m = ax.in_size, ax.out_size
    o = np.arange(m, dtype=np.int64)
    start, end = (o * n) // m, ((o + 1) * n + m - 1) // m
    count = int(np.max(end - start))
    _check_table(m, count)
    idx = start[:, None] + np.arange(count)
    w = np.where(idx < end[:, None], 1.0 / (end - start)[:, None], 0.0)
    return idx, w


def _key(ax: AxisMap, res: Resampling) -> tuple[AxisMap, Mode, float, bool, bool]:
    return ax, res.mode, res.cubic_coeff_a, res.exclude_outside, res.antialias


def forward_taps(ax: AxisMap, res: Resampling) -> Taps:
    """The Resize table of one axis: rows are output indices. Cached and read-only."""
    _check_args(ax, res)
    return _forward_taps_cached(*_key(ax, res))


def _check_args(ax: object, res: object) -> None:
    from .errors import require
    require(isinstance(ax, AxisMap), "ax", type(ax).__name__, "must be an AxisMap")
    require(isinstance(res, Resampling), "res", type(res).__name__, "must be a Resampling")


def _read_only(taps: Taps) -> Taps:
    taps.index.flags.writeable = taps.weight.flags.writeable = False
    return taps


LONG_AXIS = 2 ** 16   # tables of longer axes (up to ~100 MB each at the per-axis budget) are cached 4 at a time


def _forward_taps_cached(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    long = max(ax.in_size, ax.out_size) > LONG_AXIS
    return (_forward_long if long else _forward_short)(ax, mode, a, exclude, antialias)


@lru_cache(maxsize=512)
def _forward_short(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    return _read_only(_build_forward_taps(ax, mode, a, exclude, antialias))


@lru_cache(maxsize=4)
def _forward_long(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    return _read_only(_build_forward_taps(ax, mode, a, exclude, antialias))


def _build_forward_taps(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    res = Resampling((ax,), mode, a, exclude, antialias)
    if ax.is_identity:
        return Taps(np.arange(ax.in_size)[:, None], np.ones((ax.in_size, 1)), ax.in_size)
    if mode is Mode.POOL:
        idx, w = _pool(ax)
        return Taps(np.clip(idx, 0, ax.in_size - 1), w, ax.in_size)
    x = coordinates(ax)
    idx, w = _nearest(ax, x) if mode is Mode.NEAREST else _area(ax, x, res) if mode is Mode.AREA else \
        _filtered(ax, x, res)
    if ax.extrapolate:
        w = np.where(((x < 0) | (x > ax.in_size - 1))[:, None], 0.0, w)
    if ax.zero_outside:
        w = np.where(((x < -0.5) | (x > ax.in_size - 0.5))[:, None], 0.0, w)
    return Taps(np.clip(idx, 0, ax.in_size - 1), w, ax.in_size)


def gradient_taps(ax: AxisMap, res: Resampling) -> Taps:
    """The ResizeGrad table of one axis: rows are input indices. Cached and read-only, like forward_taps."""
    _check_args(ax, res)
    return _gradient_taps_cached(*_key(ax, res))


def _gradient_taps_cached(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    long = max(ax.in_size, ax.out_size) > LONG_AXIS
    return (_gradient_long if long else _gradient_short)(ax, mode, a, exclude, antialias)


@lru_cache(maxsize=512)
def _gradient_short(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    return _read_only(_forward_taps_cached(ax, mode, a, exclude, antialias).transpose())


@lru_cache(maxsize=4)
def _gradient_long(ax: AxisMap, mode: Mode, a: float, exclude: bool, antialias: bool) -> Taps:
    return _read_only(_forward_taps_cached(ax, mode, a, exclude, antialias).transpose())


def same_weights(a: Resampling, b: Resampling) -> bool:
    """Do two canonical forms define the same linear map (bit for bit)?"""
    if a.in_shape != b.in_shape or a.out_shape != b.out_shape:
        return False
    if a.extrapolation_value != b.extrapolation_value and _extrapolates(a):
        return False
    for ax, bx in zip(a.axes, b.axes):
        if ax == bx and (a.mode, a.cubic_coeff_a, a.exclude_outside, a.antialias) == \
                (b.mode, b.cubic_coeff_a, b.exclude_outside, b.antialias):
            continue
        ta, tb = forward_taps(ax, a).merged(), forward_taps(bx, b).merged()
        if not all(np.array_equal(p, q) for p, q in zip(ta, tb)):
            return False
        if outside_rows(ax) != outside_rows(bx):
            return False
    return True


def outside_rows(ax: AxisMap) -> tuple[np.intp, ...]:
    """The output rows of an extrapolating axis whose coordinate falls outside the input (they read
    extrapolation_value); () where the axis does not extrapolate."""
    if not ax.extrapolate:
        return ()
    x = coordinates(ax)
    return tuple(np.flatnonzero((x < 0) | (x > ax.in_size - 1)))


def _extrapolates(r: Resampling) -> bool:
    return any(outside_rows(ax) for ax in r.axes)
