"""Canonical -> ONNX Resize / com.microsoft ResizeGrad: the first spelling whose map is exactly the source's under
the given semantics (the reader, `onnx_reader.py`, judges each candidate). `onnx.from_canonical` is this function."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Optional

import numpy as np

from ..canonical import INTERPOLATION_MODES, Mode, Resampling, Rounding, Scale
from ..errors import DescError
from .common import first_exact, probe_head, refuse
from .onnx_reader import CTM_BY_OPSET, DEFAULT_OPSET, OnnxResize, schema_opset, to_canonical
from .onnx_semantics import check_semantics


def from_canonical(res: Resampling, opset: int = DEFAULT_OPSET, op_type: str = "Resize",
                   semantics: Optional[str] = None, tolerance: float = 0.0, closest: bool = True
                   ) -> tuple[OnnxResize, tuple[str, ...]]:
    """The first ONNX spelling whose map equals `res` under `semantics` (required, one of SEMANTICS):
    exact parameters first, then equal weights (float32 scales a few ulps from out/in included: a runtime that
    multiplies by in/out, as torch does, rounds coordinates like one of them); with `tolerance` > 0 the closest
    spelling whose weights are within it, with a note. `closest` False: a refusal does not name the closest
    spelling (common.first_exact)."""
    semantics = check_semantics(semantics)
    opset_schema = schema_opset(opset)
    if res.antialias and opset_schema < 18:
        refuse("antialias", True, f"Resize-{opset} has no antialias attribute (opset 18 added it)")
    if res.mode not in INTERPOLATION_MODES:
        refuse("mode", res.mode.value, "ONNX Resize has nearest, linear and cubic only (this filter is a framework's: "
               "`dml-desc build --lowered` builds its gradient from the map)")
    if res.mode is Mode.CUBIC and opset_schema == 10:
        refuse("mode", "cubic", "Resize-10 has nearest and linear only")
    mapper = lambda node: to_canonical(node, semantics)      # noqa: E731
    return first_exact(res, _with_tuned_scales(res, _candidates(res, opset, op_type), mapper), mapper,
                       f"ONNX Resize-{opset} ({semantics})", tolerance, closest)


ULPS = 4      # float32 scales tried on each side of out/in


def _f32_step(value: float, k: int) -> float:
    """The float32 k ulps above (k < 0: below) float32(value)."""
    v = np.float32(value)
    for _ in range(abs(k)):
        v = np.nextafter(v, np.float32(np.inf if k > 0 else 0))
    return float(v)


def _with_tuned_scales(res: Resampling, candidates: Iterable[OnnxResize], mapper: Callable[[OnnxResize], Resampling]
                       ) -> Iterator[OnnxResize]:
    """Each candidate, and after a scales candidate the same node with each axis's float32 scale moved to the
    nearest neighbour (within ULPS ulps, same output length) whose axis gives `res`'s weights bit for bit."""
    from ..weights import same_weights
    for node in candidates:
        yield node
        if node.scales is None:
            continue
        scales = list(node.scales)
        for a, s in enumerate(node.scales):
            if s == 1.0:
                continue
            for k in sorted(range(-ULPS, ULPS + 1), key=abs)[1:]:
                trial = _f32_step(s, k)
                if math.floor(float(np.float32(trial) * np.float32(node.input_shape[a]))) != res.out_shape[a]:
                    continue
                tuned = replace(node, scales=scales[:a] + [trial] + scales[a + 1:])
                try:
                    mapped = mapper(tuned)
                except DescError:
                    continue
                ours, theirs = (r.normalized().with_(axes=(r.normalized().axes[a],)) for r in (res, mapped))
                if same_weights(probe_head(ours), probe_head(theirs)) and same_weights(ours, theirs):  # head: cheap
                    scales[a] = trial
                    break
        if scales != list(node.scales):
            yield replace(node, scales=scales)


def _candidates(res: Resampling, opset: int, op_type: str) -> Iterator[OnnxResize]:
    norm = res.normalized()
    resized = [i for i, a in enumerate(norm.axes) if not a.is_identity] or [0]
    rank = len(res.axes)
    opset_schema = schema_opset(opset)
    roundings = [r.value for r in Rounding]
    own = {a.rounding.value for a in res.axes if not a.is_identity}
    roundings.sort(key=lambda r: r not in own)
    ctms = sorted(CTM_BY_OPSET[opset_schema],
                  key=lambda c: (c == "tf_crop_and_resize") != any(a.extrapolate for a in res.axes))
    for ctm in ctms:
        for nearest in (roundings if res.mode is Mode.NEAREST and opset_schema > 10 else [None]):
            for by in (("sizes", "scales") if ctm == "align_corners" else ("scales", "sizes")):   # its x ignores scales
                attrs = _attrs(res, ctm, nearest, opset_schema)
                node = OnnxResize(list(res.in_shape), attrs, opset=opset, op_type=op_type)
                if by == "scales":
                    node.scales = [float(np.float32(_float(a.filter_scale))) if not a.is_identity else 1.0
                                   for a in res.axes]
                    if any(not math.isfinite(s) or s <= 0 for s in node.scales):
                        continue
                else:
                    node.sizes = list(res.out_shape)
                if ctm == "tf_crop_and_resize":
                    node.roi = _roi_for(res, rank)
                if opset_schema >= 18 and len(resized) < rank and by == "sizes":
                    node.attributes["axes"] = resized
                    node.sizes = [res.out_shape[i] for i in resized]
                yield node


def _float(v: Scale) -> float:
    return float(v) if v != math.inf else math.inf


def _attrs(res: Resampling, ctm: str, nearest: str | None, opset: int) -> dict[str, object]:
    attrs: dict[str, object] = {"mode": res.mode.value}
    if opset > 10:
        attrs["coordinate_transformation_mode"] = ctm
        if res.mode is Mode.NEAREST and nearest != "round_prefer_floor":
            attrs["nearest_mode"] = nearest
        if res.mode is Mode.CUBIC:
            attrs["cubic_coeff_a"] = res.cubic_coeff_a
        if res.exclude_outside and (res.mode is Mode.CUBIC or res.antialias):   # antialiased linear honours it too
            attrs["exclude_outside"] = 1
        if res.extrapolation_value != 0 and ctm == "tf_crop_and_resize":
            attrs["extrapolation_value"] = res.extrapolation_value
    if res.antialias:
        attrs["antialias"] = 1
    return attrs


def _roi_for(res: Resampling, rank: int) -> list[float]:
    starts: list[float] = []
    ends: list[float] = []
    for a in res.axes:
        if a.is_identity or a.in_size == 1 or a.scale == math.inf:
            starts.append(0.0)
            ends.append(1.0)
            continue
        start = -a.in_offset / (a.in_size - 1)
        starts.append(start)
        ends.append(start + (a.out_size - 1) / (float(a.scale) * (a.in_size - 1)))
    return starts + ends
