"""Nearest at a constant rational scale p/q with lengths known only at run time (the shape-generic form of the static
padded form, onnx_ops.forms.padded): every q X rows read the next p dY rows with the same weights, so each axis is
dY zero-padded at its end to whole tiles, viewed as [tiles, P] (a Reshape) and contracted by one constant matrix,
kron(I_t, B); one Slice back to X's rows at the end. An If takes the spelling without the zero rows and the Slice
where every length is whole tiles, one more copies dY where onnxruntime copies (dY's shape is X's), and one gives
zeros where a tensor is empty. Its proof for every length (n * p < 2**21 on each axis; past it the graph refuses the
run) is onnx_ops.lowering.generic_forms.proven_periodic_axis."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .emitter import Emitter
from .filter_conv import dims
from .dynamic_band import all_true
from .generic_emit import emit_if, refused_unless, zeros_where_empty

# X rows per tile at least (a multiple of q): fewer zero rows where a length is not whole tiles, and whole tiles (no
# Pad, no Slice) on more lengths; against the static lowering on 20 random maps, dynamic / static 1.00-1.04 with 8,
# 1.05 with 16 on the last axis (docs/benchmarks.md, "the seventh round")
TILE_ROWS = 8
# n * p below this on every resized axis: float32 coordinates cannot move a nearest pick there (the proof's bound,
# onnx_ops.lowering.generic_forms.proven_periodic_axis); a longer axis is refused at run time
MAX_ROWS_TIMES_P = 1 << 21


@dataclass(frozen=True)
class PeriodicAxis:
    """One axis scaled by p/q: X rows q*i + r read dY rows p*i + c with weight block[r][c], on every period i."""
    p: int
    q: int
    block: tuple          # q rows of p weights
    copies: bool = False  # some length n has as many dY rows as X rows, where onnxruntime copies instead

    @property
    def factor(self) -> float:
        """The scale, as a calibration records it."""
        return self.p / self.q

    @property
    def rows(self) -> int:
        """X rows per tile: the first multiple of q from TILE_ROWS."""
        return self.q * -(-TILE_ROWS // self.q)

    @property
    def cols(self) -> int:
        """dY rows per tile."""
        return self.rows // self.q * self.p

    def matrix(self) -> np.ndarray:
        """The tile's (rows x cols) matrix: the block on the diagonal, once per period."""
        return np.kron(np.eye(self.rows // self.q), np.array(self.block, np.float64))

    def tiled(self, n: int) -> np.ndarray:
        """The matrix the run-time spelling multiplies by for n X rows: one tile's per whole tile of n rows."""
        return np.kron(np.eye(-(-n // self.rows)), self.matrix())

    def dense(self, n: int, m: int) -> np.ndarray:
        """The (n x m) table the form computes for n X and m dY rows (the tiles' matrix cut to them)."""
        return self.tiled(n)[:n, :m]

    def lost(self, n: int, m: int) -> bool:
        """True where one of the m dY rows is not in the tiles of n X rows, or reaches an X row past the n (the
        final Slice would drop it)."""
        tiled = self.tiled(n)
        return tiled.shape[1] < m or bool(tiled[n:, :m].any())


@dataclass(frozen=True)
class PeriodicForm:
    """A whole node's periodic form: per resized axis a PeriodicAxis. The other shape-generic spellings read `block`,
    `spatial`, `down` and `resize`, and never hold here."""
    axes: dict            # axis -> PeriodicAxis
    rank: int
    channels: int | None = None
    down = block = spatial = False
    resize = None

    def names(self, kind: str, opset: int) -> tuple:
        """The per-axis report names, e.g. 'generic periodic 3/2, band 12->8, dY padded at run time'."""
        return tuple(f"generic {kind} {f.p}/{f.q}, band {f.cols}->{f.rows}, dY padded at run time"
                     for f in self.axes.values())


def emit_periodic(em: Emitter, dy: str, x: str, form: PeriodicForm) -> str:
    """dX: dY's shape checked (X's, times p / q rounded down on the resized axes), then each resized axis contracted,
    the first first. An If takes the chain without zero rows and Slice where every resized length is whole tiles
    (dY's rows are whole tiles then too), and, where some length keeps its rows, an outer one copies dY where its
    shape is X's (onnxruntime copies such a Resize); one more gives zeros where X or dY is empty. Each branch
    writes X's shape itself: the Slice, or on whole tiles a Reshape (a copy, as the static band's last Reshape is; a
    Reshape after the If, writing the graph's output, copied as well)."""
    sx, sy = em.node("Shape", [x], "xshape"), em.node("Shape", [dy], "dyshape")
    dy = _checked(em, dy, sx, sy, form)
    axes = sorted(form.axes)
    lengths = em.node("Gather", [sx, em.const(axes, "axes", np.int64)], "lengths")
    rest = em.node("Mod", [lengths, em.const([form.axes[a].rows for a in axes], "tile_rows", np.int64)], "rest")

    def chain(pad: bool) -> str:
        cur, order = dy, contraction_order(form)
        for k, a in enumerate(order):
            cur = _contract(em, cur, a, form, sx, pad, merge=pad or k < len(order) - 1)
        if not pad:
            return em.node("Reshape", [cur, sx], "merged")
        return em.node("Slice", [cur, em.const([0] * len(axes), "start", np.int64), lengths,
                                 em.const(axes, "axes", np.int64)], "cropped")

    def periodic() -> str:
        whole = all_true(em, em.node("Equal", [rest, em.const(0, "zero", np.int64)], "whole"))
        return emit_if(em, whole, lambda: chain(False), lambda: chain(True), "periodic")
    def copied() -> str:
        if not any(f.copies for f in form.axes.values()):
            return periodic()
        same = all_true(em, em.node("Equal", [sx, sy], "same"))
        return emit_if(em, same, lambda: em.node("Identity", [dy], "copied"), periodic, "copied")
    return zeros_where_empty(em, sx, sy, copied)


def contraction_order(form: PeriodicForm) -> list:
    """The resized axes in the order they are contracted: the last first where it shrinks the tensor (p > q), as the
    static plans order their shared bands (onnx_ops.forms.axis.last_axis_first: onnxruntime multiplies the data on
    the left, the last axis's, faster per value); else the first first."""
    axes = sorted(form.axes)
    last = form.axes[axes[-1]]
    return axes[-1:] + axes[:-1] if last.p > last.q and axes[-1] == form.rank - 1 else axes


def _checked(em: Emitter, dy: str, sx: str, sy: str, form: PeriodicForm) -> str:
    """dY viewed at its own shape where that is X's times p / q rounded down on the resized axes and every resized
    axis is within the proof's float32 bound (n * p < MAX_ROWS_TIMES_P), else at an invalid shape (-2), which
    onnxruntime's Reshape refuses: never a silent result on a dY of another shape or an axis past the bound."""
    p = [form.axes[a].p if a in form.axes else 1 for a in range(form.rank)]
    q = [form.axes[a].q if a in form.axes else 1 for a in range(form.rank)]
    scaled = em.node("Mul", [sx, em.const(p, "p", np.int64)], "scaled")
    expected = em.node("Div", [scaled, em.const(q, "q", np.int64)], "expected")
    bound = [MAX_ROWS_TIMES_P if a in form.axes else np.iinfo(np.int64).max for a in range(form.rank)]
    within = em.node("Less", [scaled, em.const(bound, "bound", np.int64)], "within")
    return refused_unless(em, dy, em.node("And", [em.node("Equal", [sy, expected], "same"), within], "valid"), expected)


def _contract(em: Emitter, cur: str, a: int, form: PeriodicForm, sx: str, pad: bool, merge: bool) -> str:
    """One axis: (with `pad`) zero rows appended up to whole tiles of X's length, the axis viewed as [tiles, P],
    one MatMul by the tile's matrix; with `merge`, its [tiles, T] rows viewed as one axis again."""
    f, rank = form.axes[a], form.rank
    shape = em.node("Shape", [cur], "shape")
    if pad:
        cur = _lengthen(em, cur, shape, a, f, sx, rank)
        shape = em.node("Shape", [cur], "shape")
    if a == rank - 1:
        rows = em.node("Reshape", [cur, em.const([-1, f.cols], "rows", np.int64)], "tiled")
        out = em.node("MatMul", [rows, em.const(f.matrix().T, "band")], "band")
    else:
        after = em.node("ReduceProd", [dims(em, shape, a + 1, rank)], "after", keepdims=1)
        view = em.node("Concat", [dims(em, shape, 0, a), em.const([-1, f.cols], "tiled", np.int64), after],
                       "tiled_shape", axis=0)
        out = em.node("MatMul", [em.const(f.matrix(), "band"), em.node("Reshape", [cur, view], "tiled")], "band")
    if not merge:
        return out
    back = em.node("Concat", [dims(em, shape, 0, a), em.const([-1], "merged", np.int64),
                              dims(em, shape, a + 1, rank)], "merged_shape", axis=0)
    return em.node("Reshape", [out, back], "merged")


def _lengthen(em: Emitter, cur: str, shape: str, a: int, f: PeriodicAxis, sx: str, rank: int) -> str:
    """`cur` (of Shape `shape`) with zero rows appended on axis `a` up to whole tiles of X's length: a Concat with
    ConstantOfShape zeros, which measured faster than a Pad (onnx_ops.forms.padded)."""
    n = dims(em, sx, a, a + 1)
    tiles = em.node("Div", [em.node("Add", [n, em.const([f.rows - 1], "round_up", np.int64)], "n_up"),
                            em.const([f.rows], "tile", np.int64)], "tiles")
    extra = em.node("Sub", [em.node("Mul", [tiles, em.const([f.cols], "cols", np.int64)], "rows"),
                            dims(em, shape, a, a + 1)], "extra")
    zero_shape = em.node("Concat", [dims(em, shape, 0, a), extra, dims(em, shape, a + 1, rank)], "zero_shape", axis=0)
    return em.lengthened(cur, zero_shape, a)
