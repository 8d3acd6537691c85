"""ConvTransposeBackwardData and the resize->deconvolution bridge in the conformance catalog."""
from __future__ import annotations

import json
from typing import cast

import numpy as np

from dml_desc.conventions import deconv
from dml_desc.conventions.deconv import ConvSpec, to_layout
from dml_desc.conventions.onnx import OnnxResize, installed_semantics, to_canonical
from dml_desc.reference import NUMPY_DTYPES
from onnx_ops.bridge import build_bridge_model
from onnx_ops.conv import build_conv_data_grad
from onnx_ops.run import run_model

from .cases import SHARED_TAPS, TOL     # the suite's per-dtype tolerance, scaled below by the accumulation length
from .catalog import REFERENCE_DIR, Check, Skip
from .resize_oracle import ORACLE, forward_transposed
from .conv_reference import conv_data_grad
from .judges import representable
from .reference import resize_grad

# (name, spec, data_format, weights_format): groups, dilations, asymmetric pads, 1-3 spatial axes
CASES = [
    ("deconv:2d_s2_asym", ConvSpec(2, 8, 6, (7, 9), (3, 3), (2, 2), (1, 1), (1, 0), (2, 1)), "NCX", "IOX"),
    ("deconv:2d_groups_dil_nxc_xoi", ConvSpec(2, 8, 4, (9, 8), (3, 2), (2, 1), (2, 3), (2, 1), (1, 2), 4),
     "NXC", "XOI"),
    ("deconv:1d_groups3", ConvSpec(3, 6, 9, (11,), (4,), (3,), (1,), (2,), (3,), 3), "NCX", "IOX"),
    ("deconv:3d_s2_dil", ConvSpec(1, 4, 6, (5, 6, 4), (2, 3, 2), (2, 1, 2), (1, 2, 1), (0, 1, 1), (1, 2, 0), 2),
     "NXC", "IOX"),
    ("deconv:depthwise", ConvSpec(2, 16, 16, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 16), "NCX", "IOX"),
]
AUTO_PAD_CASES = ["SAME_UPPER", "SAME_LOWER", "VALID"]


def deconv_inputs(spec: ConvSpec, seed: int):
    """(diff_dst, weights): standard normal draws in float64, deterministic for `seed`."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(spec.diff_dst_shape), rng.standard_normal(spec.weights_shape)


def _ort(spec, fmt, wfmt, dd, w, dtype):
    dt = NUMPY_DTYPES[dtype]
    model = build_conv_data_grad(spec, fmt, wfmt, dt)
    wl = w if wfmt == "IOX" else np.transpose(w, list(range(2, w.ndim)) + [1, 0])
    ddl = dd if fmt == "NCX" else np.moveaxis(dd, 1, -1)
    try:
        out = run_model(model, {"diff_dst": np.ascontiguousarray(ddl, dt), "weights": np.ascontiguousarray(wl, dt)})[0]
    except Exception as e:
        if dtype == "f16" and "NOT_IMPLEMENTED" in str(e):
            raise Skip("this onnxruntime CPU build has no float16 Conv kernel") from None
        raise
    return out if fmt == "NCX" else np.moveaxis(out, -1, 1)


def torch_data_grad(spec: ConvSpec, dd, w):
    """Independent oracle: torch autograd through conv_transpose (cropped for asymmetric pads)."""
    try:
        import torch
    except ImportError:
        raise Skip("torch is not installed") from None
    n = len(spec.kernel)
    fn = [torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
          torch.nn.functional.conv_transpose3d][n - 1]
    x = torch.zeros(spec.diff_src_shape, dtype=torch.float64, requires_grad=True)
    full = fn(x, torch.tensor(w), stride=spec.strides, dilation=spec.dilations, groups=spec.groups)
    crop = []
    for i in reversed(range(n)):
        extra = full.shape[2 + i] - spec.pads_begin[i] - spec.dst_spatial[i]
        crop += [-spec.pads_begin[i], -extra]
    y = torch.nn.functional.pad(full, crop)
    (y * torch.tensor(dd)).sum().backward()
    assert x.grad is not None                   # backward filled it: x requires grad
    return x.grad.numpy()


def _checks_for(name: str, spec: ConvSpec, fmt: str, wfmt: str, seed: int) -> list:
    dd, w = deconv_inputs(spec, seed)
    want = conv_data_grad(dd, w, spec)
    scale = max(1.0, float(np.abs(want).max()))
    out = []
    for dt in ("f32", "f16"):           # onnxruntime's Conv has no bf16
        tol = TOL[dt] * scale * (np.prod(spec.kernel) * spec.dst_channels / spec.groups) ** 0.5
        run = lambda d=dt, t=tol: (_ort(spec, fmt, wfmt, representable(dd, d), representable(w, d), d), want, t)
        out.append(Check(name, "onednn", "ort-cpu", dt, run, oracle="numpy-correlation"))
    out.append(Check(name, "onednn", "torch-autograd", "f64",
                     lambda: (torch_data_grad(spec, dd, w), want, 1e-9 * scale), oracle="numpy-correlation"))
    return out


def read_onednn_deconv(doc: object) -> tuple[ConvSpec, str, str]:
    """(spec, data_format, weights_format) of a oneDNN ConvTransposeBackwardData document (deconv.read's)."""
    reading = deconv.read("onednn", doc)
    layout = cast(dict[str, str], reading.layout)          # a deconv's layout: its format names
    return cast(ConvSpec, reading.canonical), layout["data_format"], layout["weights_format"]


def deconv_checks() -> list:
    """ConvTransposeBackwardData checks: groups, dilations, pads, auto_pad, layouts and the oneDNN Graph JSON
    files, each against the NumPy reference, ORT CPU and torch autograd.
    """
    checks = []
    for i, (name, spec, fmt, wfmt) in enumerate(CASES):
        doc = deconv.to_onednn(spec, fmt, wfmt)
        spec, fmt, wfmt = read_onednn_deconv(json.loads(json.dumps(doc)))     # through the JSON form
        checks += _checks_for(name, spec, fmt, wfmt, i)
    for mode in AUTO_PAD_CASES:
        doc = deconv.to_onednn(CASES[0][1], "NCX", "IOX")
        doc["graph"][0]["attrs"]["auto_pad"]["value"] = mode
        doc["graph"][0]["outputs"] = []
        doc["graph"][0]["attrs"].pop("output_padding", None)  # depends on the pads auto_pad replaces
        spec, fmt, wfmt = read_onednn_deconv(doc)
        checks += _checks_for(f"deconv:auto_pad_{mode}", spec, fmt, wfmt, 7)
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("deconv*.json")):
        spec, fmt, wfmt = read_onednn_deconv(json.loads(path.read_text()))
        checks += _checks_for(f"onednn-graph-json:{path.name}", spec, fmt, wfmt, 11)
    return checks


BRIDGE_CASES = [("nearest", 2, [2, 3, 8, 6]), ("nearest", 3, [1, 2, 4, 5, 3]), ("linear", 2, [2, 3, 6, 7]),
                ("linear", 3, [2, 3, 5, 6]), ("linear", 2, [1, 2, 4, 5, 6])]


def bridge_checks() -> list:
    """Checks that the ConvTransposeBackwardData bridge gives ResizeGrad's result on ORT CPU."""
    checks = []
    for mode, f, shape in BRIDGE_CASES:
        r = OnnxResize(shape, {"mode": mode}, scales=[1.0, 1.0] + [float(f)] * (len(shape) - 2))
        res = to_canonical(r, installed_semantics())        # compared with onnxruntime's ResizeGrad
        dy = np.random.default_rng(f).standard_normal(res.out_shape)
        checks.append(Check(f"bridge:{mode}_x{f}_{len(shape)}d", "onnx", "ort-cpu-deconv", "f32",
                            lambda q=r, s=res, g=dy: _judged_bridge(q, s, g), oracle=ORACLE))
    return checks


def _judged_bridge(r, res, dy) -> tuple:
    """(bridge dX, onnxruntime's forward Resize transposed, tolerance, oracle); the reference where onnxruntime
    has no forward for it (SHARED_TAPS: the bridge's taps are dml_desc.weights' too)."""
    want, oracle = forward_transposed(r.to_json(), dy), ORACLE
    if want is None:
        want, oracle = resize_grad(dy, res), SHARED_TAPS
    return _run_bridge(res, dy), want, 2e-6 * max(1, np.abs(want).max()), oracle


def _run_bridge(res, dy):
    model = build_bridge_model(res)
    if model is None:
        raise AssertionError("no deconvolution form for an integer-factor case")
    return run_model(model, {"dY": dy.astype(np.float32)})[0]


__all__ = ["deconv_checks", "bridge_checks", "to_layout"]
