"""Drawing the adjoint oracle's configurations: ONNX Resize (`Config`), F.interpolate calls and oneDNN
InterpolateBackward documents, each from the attribute space its runtime runs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

# The dtypes a Config is drawn in (numpy names, what `np.dtype` reads), and each one's suite dtype name
CONFIG_DTYPES = ("float32", "float16", "float64")
SUITE_DTYPE_OF = {"float32": "f32", "float16": "f16", "float64": "f64"}
CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MAX_IN, MAX_OUT = 64, 512      # elements of X and of Y (J is MAX_OUT x MAX_IN at most)


@dataclass
class Config:
    """One forward Resize: what onnxruntime runs and what its gradient builder differentiates."""
    opset: int
    shape: list
    attrs: dict = field(default_factory=dict)
    roi: Optional[list] = None
    scales: Optional[list] = None
    sizes: Optional[list] = None
    dtype: str = "float32"

    def onnx_json(self, op_type: str = "ResizeGrad") -> dict:
        """The `dml-desc convert --from onnx` JSON form (format "onnx")."""
        out = {"op_type": op_type, "opset": min(self.opset, 21),
               "input_shape": list(self.shape), "attributes": dict(self.attrs)}
        for name in ("roi", "scales", "sizes"):
            if getattr(self, name) is not None:
                out[name] = list(getattr(self, name))
        return out


def _schema(opset: int) -> int:
    return max(v for v in (10, 11, 13, 18, 19) if v <= opset)


def draw(rng: np.random.Generator, max_opset: int = 21) -> Config:
    """One configuration from the whole attribute space onnxruntime runs (its forward judges the rest)."""
    opset = int(rng.integers(10, max_opset + 1))
    schema = _schema(opset)
    rank = int(rng.integers(1, 7))
    shape = [int(rng.integers(1, 5)) for _ in range(rank)]
    while np.prod(shape) > MAX_IN:
        shape[int(rng.integers(rank))] = 1
    attrs: dict[str, Any] = {}          # the node's attributes, as JSON
    modes = ["nearest", "linear"] + (["cubic"] if schema >= 11 else [])
    mode = str(rng.choice(modes))
    if mode != "nearest" or rng.random() < 0.5:
        attrs["mode"] = mode
    axes = list(range(rank))
    if schema >= 18 and rng.random() < 0.4:
        k = int(rng.integers(1, rank + 1))
        axes = [int(a) for a in rng.permutation(rank)[:k]]
        attrs["axes"] = [a - rank if rng.random() < 0.3 else a for a in axes]
    if schema >= 11:
        ctms = [c for c in CTMS if c != "half_pixel_symmetric" or schema >= 13]    # onnxruntime runs it from 13
        ctm = str(rng.choice(ctms))
        attrs["coordinate_transformation_mode"] = ctm
        if mode == "nearest":
            attrs["nearest_mode"] = str(rng.choice(NEAREST))
        if mode == "cubic":
            attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5, -0.6]))
            if rng.random() < 0.3:
                attrs["exclude_outside"] = 1
        if ctm == "tf_crop_and_resize" and rng.random() < 0.5:
            attrs["extrapolation_value"] = float(rng.choice([0.5, -1.0]))
    if schema >= 18 and mode != "nearest" and rng.random() < 0.3:
        attrs["antialias"] = 1
    roi = None
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        starts = [float(rng.choice([0.0, 0.0, 0.25, -0.2, 0.5])) for _ in axes]
        ends = [float(rng.choice([1.0, 1.0, 0.8, 1.3, 0.6])) for _ in axes]
        if rng.random() < 0.15:               # a TensorFlow-style flipped crop
            i = int(rng.integers(len(axes)))
            starts[i], ends[i] = ends[i], starts[i]
        roi = starts + ends
    cfg = Config(opset, shape, attrs, roi, dtype=str(rng.choice(list(CONFIG_DTYPES), p=[0.6, 0.2, 0.2])))
    by_scales = opset == 10 or rng.random() < 0.5
    while True:       # J is (out x in): keep the output small
        if by_scales:
            cfg.scales = [float(rng.choice([1.0, 1.0, 0.5, 0.6, 1.5, 2.0, 2.5, 3.0, 1.1, 0.75])) for _ in axes]
            outs = [max(1, int(s * shape[a])) for s, a in zip(cfg.scales, axes)]
        else:
            cfg.sizes = [int(rng.integers(1, 7)) for _ in axes]
            outs = list(cfg.sizes)
        out = list(shape)
        for a, o in zip(axes, outs):
            out[a] = o
        if np.prod(out) <= MAX_OUT:
            break
    if not by_scales:
        if schema >= 18 and rng.random() < 0.3:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(["not_larger", "not_smaller"]))
    return cfg


TORCH_MODES = {1: ("nearest", "nearest-exact", "linear"), 2: ("nearest", "nearest-exact", "bilinear", "bicubic"),
               3: ("nearest", "nearest-exact", "trilinear")}


def draw_torch(rng: np.random.Generator) -> dict:
    """One F.interpolate call (the torch convention's JSON form) from what torch expresses."""
    n = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 3))] + [int(rng.integers(1, 6)) for _ in range(n)]
    mode = str(rng.choice(TORCH_MODES[n]))
    obj: dict[str, Any] = {"input_shape": shape, "mode": mode}
    if rng.random() < 0.5:
        obj["scale_factor"] = [float(rng.choice([0.5, 0.75, 1.5, 2.0, 2.5, 1.0])) for _ in range(n)]
        if rng.random() < 0.3:
            obj["recompute_scale_factor"] = True
    else:
        obj["size"] = [int(rng.integers(1, 8)) for _ in range(n)]
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        obj["align_corners"] = bool(rng.random() < 0.4)
    if mode in ("bilinear", "bicubic") and rng.random() < 0.3:
        obj["antialias"] = True
    return obj


def draw_onednn(rng: np.random.Generator) -> dict:
    """One InterpolateBackward document (oneDNN Graph JSON): 1-3 spatial axes, NCX or NXC, nearest or linear."""
    from dml_desc.conventions.onednn import graph_document, logical_tensor
    n = int(rng.integers(1, 4))
    fmt = str(rng.choice(["NCX", "NXC"]))
    spatial_in = [int(rng.integers(1, 6)) for _ in range(n)]
    spatial_out = [int(rng.integers(1, 8)) for _ in range(n)]
    nc = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    place = lambda sp: [nc[0], nc[1]] + sp if fmt == "NCX" else [nc[0]] + sp + [nc[1]]
    src, dst = place(spatial_in), place(spatial_out)
    mode = str(rng.choice(["nearest", "linear"]))
    attrs = {"mode": {"type": "string", "value": mode},
             "coordinate_transformation_mode": {"type": "string", "value": "half_pixel"},
             "data_format": {"type": "string", "value": fmt}, "sizes": {"type": "s64[]", "value": spatial_out}}
    op = {"id": 0, "name": "RESAMPLING_0", "kind": "InterpolateBackward", "attrs": attrs,
          "inputs": [logical_tensor(0, src, "f32"), logical_tensor(1, dst, "f32")],
          "outputs": [logical_tensor(2, src, "f32")]}
    return graph_document(op)
