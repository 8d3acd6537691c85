"""band / dense: per axis, tiles of X rows each reading a window of dY rows (a Gather, or a Reshape when the
windows tile dY), then one batched MatMul; one tile is a dense MatMul. Covers every map."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dml_desc.weights import Taps, sorted_unique

from .emitter import Emitter, is_symbolic

MAX_BAND_ENTRIES = 1 << 24    # a band's matrices (X rows x window), as constants in the model: 64 MiB in float32
BAND_CHECK_ROWS = 2 ** 20     # band entries (rows x width) materialised at a time when a band is checked


@dataclass(frozen=True)
class Band:
    """One resized axis as tiles of `tile` X rows, each reading a window of `width` consecutive dY rows:
    dX[t*tile + i] = sum_j matrices[t][i, j] * dY[starts[t] + j]. One matrix when every tile has the same.
    Where the tile does not divide the X rows, the last tile's rows past them are zero and sliced off."""
    axis: int
    tile: int
    width: int
    starts: np.ndarray          # (tiles,)
    matrices: np.ndarray        # (tiles, tile, width), or (1, tile, width) when shared
    cols: int                   # dY rows on this axis
    rows: int = 0               # X rows on this axis (0: tiles * tile)

    @property
    def padding(self) -> int:
        """The zero X rows the last tile computes past the axis (sliced off after the MatMul)."""
        return self.tiles * self.tile - self.rows if self.rows else 0

    @property
    def tiles(self) -> int:
        """The number of tiles of X rows."""
        return len(self.starts)

    @property
    def contiguous(self) -> bool:
        """Windows side by side, no overlap: a Reshape instead of a Gather."""
        return bool(np.array_equal(self.starts, np.arange(self.tiles) * self.width)) and \
            self.tiles * self.width == self.cols

    @property
    def shared(self) -> bool:
        """True when every tile uses the same matrix."""
        return self.matrices.shape[0] == 1

    @property
    def dense(self) -> bool:
        """True when there is one tile reading every dY row (a plain MatMul)."""
        return self.tiles == 1 and self.width == self.cols

    def name(self) -> str:
        """The form name the report prints, e.g. 'band 8x4->2, shared' ('padded': the last tile has zero rows)."""
        kind = "dense" if self.dense else "band"
        shared = ", shared" if self.shared and self.tiles > 1 else ""
        return f"{kind} {self.tiles}x{self.width}->{self.tile}{shared}" + (", padded" if self.padding else "")


def band(taps: Taps, axis: int, tile: int) -> Band | None:
    """The band spelling of one axis's gradient taps with `tile` X rows per tile (where the tile does not divide
    the axis, the last tile's extra rows are zero); None when its matrices would exceed MAX_BAND_ENTRIES (built
    from the sparse taps, never from a dense matrix)."""
    n, m = taps.rows, taps.cols
    tiles = -(-n // tile)
    r, c, w = taps.merged()
    t = r // tile
    lo = np.zeros(tiles, np.int64)
    hi = np.ones(tiles, np.int64)
    used = sorted_unique(t)
    lo[used] = np.minimum.reduceat(c, np.searchsorted(t, used)) if len(c) else 0
    hi[used] = np.maximum.reduceat(c, np.searchsorted(t, used)) + 1 if len(c) else 1
    width = int(min(m, np.max(hi - lo)))
    if tiles * tile * width > MAX_BAND_ENTRIES:
        return None
    starts = np.minimum(lo, m - width)
    mats = np.zeros((tiles, tile, width))
    np.add.at(mats, (t, r % tile, c - starts[t]), w)
    if np.all(mats == mats[:1]):
        mats = mats[:1]
    return Band(axis, tile, width, starts.astype(np.int64), mats, m, n)


def shared_band(taps: Taps, axis: int, tile: int) -> Band | None:
    """One matrix for every tile: windows step by m*tile/n dY rows (periodic weights, e.g. integer factors);
    the window indices clamp at the edges, the way resampling clamps. Proven against the taps: same
    sparsity, weights within float32 rounding."""
    n, m = taps.rows, taps.cols
    if n % tile or (m * tile) % n or n // tile < 3:
        return None
    step, mid = m * tile // n, (n // tile) // 2
    inner = band(Taps(taps.index[mid * tile:(mid + 1) * tile], taps.weight[mid * tile:(mid + 1) * tile], m), 0, tile)
    if inner is None or inner.width > m:      # None: one tile's matrix alone exceeds MAX_BAND_ENTRIES
        return None
    starts = np.arange(n // tile) * step + (int(inner.starts[0]) - mid * step)
    plan = Band(axis, tile, inner.width, starts, inner.matrices, m, n)
    return plan if band_matches(plan, taps) else None



def band_taps(plan: Band, cols: int, tiles: slice = slice(None)) -> Taps:
    """The table a band computes (rows = X rows), window indices clamped as the emitted Gather clamps them;
    `tiles` limits it to those tiles' rows (memory: rows x width, so callers walk long axes in slices)."""
    first, stop, _ = tiles.indices(plan.tiles)
    rows = np.arange(first * plan.tile, stop * plan.tile)
    t = rows // plan.tile
    mats = plan.matrices[np.zeros_like(t) if plan.shared else t, rows % plan.tile]     # (rows, width)
    index = np.clip(plan.starts[t][:, None] + np.arange(plan.width), 0, cols - 1)
    return Taps(index, mats, cols)


def band_dense(plan: Band, cols: int) -> np.ndarray:
    """The (rows, cols) matrix a band computes, window indices clamped (its X rows only, not the padding)."""
    dense = band_taps(plan, cols).dense()
    return dense[:plan.rows] if plan.rows else dense


def band_matches(plan: Band, taps: Taps) -> bool:
    """Same nonzero pattern as the taps, weights within float32 rounding (compared sparsely: O(rows x width))."""
    rw, cw, ww = taps.merged()
    step = max(1, BAND_CHECK_ROWS // max(plan.tile * plan.width, 1))       # tiles per slice: bounded memory
    for lo in range(0, plan.tiles, step):
        hi = min(plan.tiles, lo + step)
        rg, cg, wg = band_taps(plan, taps.cols, slice(lo, hi)).merged()
        part = slice(*np.searchsorted(rw, [lo * plan.tile, hi * plan.tile]))
        if not (np.array_equal(rg + lo * plan.tile, rw[part]) and np.array_equal(cg, cw[part])
                and np.allclose(wg, ww[part], rtol=2e-6, atol=1e-12)):
            return False
    return True


def emit_band(em: Emitter, src: str, plan: Band, shape: list) -> str:
    """Contract axis `plan.axis` of `src` (of shape `shape`; leading dims may be symbolic: the Reshapes keep
    them with 0). On the last axis every tile must share one matrix (one MatMul over all windows);
    `emit_band_transposed` handles per-tile matrices there."""
    a, rank = plan.axis, len(shape)
    keep, rest, m = [0] * a, list(shape[a + 1:]), shape[a]
    if plan.dense:
        if a == rank - 1:
            return em.node("MatMul", [src, em.const(plan.matrices[0].T, "dense")], "dense")
        flat = src if len(rest) == 1 else em.reshape(src, keep + [m, _flat(rest)])
        out = em.node("MatMul", [em.const(plan.matrices[0], "dense"), flat], "dense")
        return out if len(rest) == 1 else em.reshape(out, keep + [plan.tile] + rest)
    if plan.contiguous:
        windows = em.reshape(src, keep + [plan.tiles, plan.width] + rest)
    else:
        index = np.clip(plan.starts[:, None] + np.arange(plan.width), 0, m - 1)
        windows = em.node("Gather", [src, em.const(index, "window", np.int64)], "windows", axis=a)
    if a == rank - 1:                  # (..., tiles, width) @ (width, tile)
        if not plan.shared:
            raise ValueError("a band on the last axis needs one shared matrix (use emit_band_transposed)")
        out = em.node("MatMul", [windows, em.const(plan.matrices[0].T, "band")], "band")
    else:
        if len(rest) != 1:
            windows = em.reshape(windows, keep + [plan.tiles, plan.width, _flat(rest)])
        out = em.node("MatMul", [em.const(plan.matrices[0] if plan.shared else plan.matrices, "band"), windows], "band")
    out = em.reshape(out, keep + [plan.tiles * plan.tile] + rest)
    return em.crop(out, [a], [plan.rows]) if plan.padding else out


def emit_band_transposed(em: Emitter, src: str, plan: Band, shape: list) -> str:
    """The last axis with per-tile matrices: swap the last two axes, contract, swap back."""
    rank = len(shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    swapped = em.node("Transpose", [src], "swapped", perm=perm)
    moved = Band(rank - 2, plan.tile, plan.width, plan.starts, plan.matrices, plan.cols, plan.rows)
    out = emit_band(em, swapped, moved, [shape[p] for p in perm])
    return em.node("Transpose", [out], "unswapped", perm=perm)


def _flat(dims: list) -> int:
    """The product of trailing dims, or -1 (inferred) when one is known only at run time."""
    return -1 if any(is_symbolic(d) for d in dims) else math.prod(dims)

