"""Randomized adjoint oracle: gradients that are exactly the transpose of the executing runtime's forward.

A configuration is drawn from the whole ONNX Resize attribute space (opsets 10-24, ranks 1-6, every mode,
nearest_mode and coordinate_transformation_mode, antialias, cubic coefficients, exclude_outside, shuffled
and negative axes, keep_aspect_ratio_policy, roi incl. flipped, scales and sizes, up and down, three dtypes).
The oracle runs onnxruntime's own `Resize` on basis inputs: its responses are the columns of J, in the
runtime's own arithmetic (minus the response to a zero input, which carries extrapolation_value); then
dX = J^T dY. It judges three gradients of the ResizeGrad node onnxruntime's gradient builder writes
(inputs dY, X, roi, scales; sizes never passed; every forward attribute copied):

- "static": `onnx_ops.lower` with every shape known;
- "dynamic": `onnx_ops.lower` with every dim symbolic (onnx_ops.dynamic);
- "reference": the NumPy reference (conformance.reference) of the canonical map the ONNX reader gives.

A failure is shrunk (fewest axes, smallest sizes, simplest attributes) and can be written as a description
file (`description(case)`) that `dml-desc run` and `dml-desc convert` read.

`adjoint_cases(n, seed)` yields plain cases (name, description, res, dtype, dy, expected, oracle) for a
suite runner; `run(n, seed)` judges them here. Deterministic for a seed.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional

import numpy as np

DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64}
TOL = {"f32": 2e-5, "f64": 2e-5, "f16": 4e-3}   # of the gradient's scale (suite dtype names); J itself is float32
SUITE_DTYPE = {"float32": "f32", "float16": "f16", "float64": "f64"}
CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
PATHS = ("static", "dynamic", "reference")
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


@dataclass
class AdjointCase:
    """A judged configuration: the plain fields a suite runner needs."""
    name: str
    description: dict          # in `convention` (`dml-desc convert --from onnx`, `dml-desc run`)
    res: object                # the canonical Resampling the ONNX reader gives (None when it refuses)
    dtype: str                 # the suite's dtype name: f32, f16, f64
    dy: np.ndarray
    expected: np.ndarray       # J^T dY, J from the oracle's forward
    oracle: str
    config: Config = None
    convention: str = "onnx"


# ---------------------------------------------------------------- drawing


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
    attrs = {}
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
    cfg = Config(opset, shape, attrs, roi, dtype=str(rng.choice(list(DTYPES), p=[0.6, 0.2, 0.2])))
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


# ---------------------------------------------------------------- the oracle: onnxruntime's forward


def _forward_model(cfg: Config, rank_dims=None):
    from onnx import TensorProto, helper, numpy_helper
    inits, inputs = [], ["X"]
    roi = cfg.roi if cfg.roi is not None else []
    if cfg.opset >= 11:
        if roi or cfg.opset < 13:
            inits.append(numpy_helper.from_array(np.asarray(roi, np.float32), "roi"))
            inputs.append("roi")
        else:
            inputs.append("")
    scales = cfg.scales if cfg.scales is not None else []
    if scales or cfg.opset < 13:
        inits.append(numpy_helper.from_array(np.asarray(scales, np.float32), "scales"))
        inputs.append("scales")
    elif cfg.sizes is not None:
        inputs.append("")
    if cfg.sizes is not None:
        inits.append(numpy_helper.from_array(np.asarray(cfg.sizes, np.int64), "sizes"))
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["Y"], **cfg.attrs)
    graph = helper.make_graph([node], "fwd", [helper.make_tensor_value_info("X", TensorProto.FLOAT, cfg.shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", cfg.opset)])


def forward_matrix(cfg: Config, safe: bool = True) -> tuple:
    """(J, output shape) from onnxruntime's Resize on the basis inputs; float64 copy of float32 weights.
    Negative axes are normalized first: onnxruntime 1.19.2 ignores them or crashes (docs/adjoint.md)."""
    if safe and "axes" in cfg.attrs:
        cfg = replace(cfg, attrs=dict(cfg.attrs, axes=[a % len(cfg.shape) for a in cfg.attrs["axes"]]))
    from onnx_ops.run import onnxruntime
    ort = onnxruntime()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.log_severity_level = 1, 4     # a refused forward is skipped, not logged
    sess = ort.InferenceSession(_forward_model(cfg).SerializeToString(), opts, providers=["CPUExecutionProvider"])
    n = int(np.prod(cfg.shape))
    zero = sess.run(None, {"X": np.zeros(cfg.shape, np.float32)})[0].astype(np.float64)
    if zero.size > 4 * MAX_OUT:
        raise ValueError(f"output {zero.shape} is larger than the oracle's budget")
    cols = []
    for k in range(n):
        x = np.zeros(n, np.float32)
        x[k] = 1
        cols.append(sess.run(None, {"X": x.reshape(cfg.shape)})[0].astype(np.float64).ravel() - zero.ravel())
    return np.stack(cols, axis=1), zero.shape


# ---------------------------------------------------------------- the gradients judged


def grad_model(cfg: Config, dynamic: bool, out_shape=None):
    """ResizeGrad(dY, X, roi, scales) as onnxruntime's gradient builder writes it (sizes never passed)."""
    from onnx import TensorProto, helper, numpy_helper
    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE}[cfg.dtype]
    fwd = _forward_model(cfg)
    inits = [t for t in fwd.graph.initializer if t.name in ("roi", "scales")]
    ins = list(fwd.graph.node[0].input[:4]) + [""] * (4 - len(fwd.graph.node[0].input[:4]))
    ins = ["dY", "X"] + ins[1:3] if cfg.opset >= 11 else ["dY", "X", "", ins[1]]
    while ins and ins[-1] == "":
        ins.pop()
    rank = len(cfg.shape)
    xd = [f"x{i}" for i in range(rank)] if dynamic else list(cfg.shape)
    yd = [f"y{i}" for i in range(rank)] if dynamic else (list(out_shape) if out_shape is not None else None)
    node = helper.make_node("ResizeGrad", ins, ["dX"], domain="com.microsoft", name="rg", **cfg.attrs)
    graph = helper.make_graph([node], "grad", [helper.make_tensor_value_info("dY", elem, yd),
                                               helper.make_tensor_value_info("X", elem, xd)],
                              [helper.make_tensor_value_info("dX", elem, xd)], inits)
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", min(cfg.opset, 24)),
                                                                helper.make_opsetid("com.microsoft", 1)])


def lowered_gradient(cfg: Config, dy: np.ndarray, dynamic: bool) -> np.ndarray:
    """dX from `onnx_ops.lower` run on onnxruntime (static shapes, or every dim symbolic)."""
    from onnx_ops import lower
    from onnx_ops.run import onnxruntime, session
    onnxruntime().set_default_logger_severity(3)     # no deprecation warning per tf_half_pixel_for_nn session
    from dml_desc.conventions.onnx import installed_semantics       # judged on the runtime it runs on
    model, _ = lower(grad_model(cfg, dynamic, dy.shape), semantics=installed_semantics())
    dt = DTYPES[cfg.dtype]
    x = np.zeros(cfg.shape, dt)
    return session(model, threads=1).run(None, {"dY": dy.astype(dt), "X": x})[0].astype(np.float64)


def canonical(cfg: Config, semantics: Optional[str] = None):
    """The canonical map the ONNX reader gives for the gradient node (dY's shape stands in for sizes)."""
    from dml_desc.conventions.onnx import OnnxResize, resolve_semantics, to_canonical
    node = OnnxResize(list(cfg.shape), dict(cfg.attrs), cfg.roi, cfg.scales, cfg.sizes, opset=min(cfg.opset, 21),
                      op_type="ResizeGrad")
    return to_canonical(node, resolve_semantics(semantics))     # None: the installed onnxruntime's


def reference_gradient(cfg: Config, dy: np.ndarray) -> np.ndarray:
    """dX from the NumPy reference (conformance.reference) of the canonical map."""
    from .reference import resize_grad
    return resize_grad(dy.astype(np.float64), canonical(cfg))


GRADIENTS = {"static": lambda c, dy: lowered_gradient(c, dy, False),
             "dynamic": lambda c, dy: lowered_gradient(c, dy, True),
             "reference": reference_gradient}


# ---------------------------------------------------------------- judging


def _runtime_name() -> str:
    from dml_desc.conventions.onnx import installed_runtime
    return f"onnxruntime-{installed_runtime()} Resize^T"


def make_case(cfg: Config, seed: int, name: str = "") -> Optional[AdjointCase]:
    """The case for `cfg`, or None when onnxruntime's forward refuses the configuration."""
    try:
        J, out_shape = forward_matrix(cfg)
    except Exception:            # onnxruntime refuses the forward: not a model anyone trains
        return None
    if 0 in out_shape:           # an empty output: nothing to differentiate (the reader refuses it by name)
        return None
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal(out_shape).astype(DTYPES[cfg.dtype]).astype(np.float64)
    expected = (J.T @ dy.ravel()).reshape(cfg.shape)
    try:
        res = canonical(cfg)
    except Exception:
        res = None
    return AdjointCase(name or f"adjoint-{seed}", cfg.onnx_json(), res, SUITE_DTYPE[cfg.dtype], dy, expected,
                       _runtime_name(), cfg)


def error(case: AdjointCase, got: np.ndarray) -> float:
    """Max |got - expected| over the gradient's scale (max |dY| times J's largest column sum, >= 1)."""
    if got.shape != case.expected.shape:
        return float("inf")
    scale = max(1.0, float(np.max(np.abs(case.dy), initial=0)) * max(1.0, float(np.max(np.abs(case.expected),
                                                                                       initial=0))))
    return float(np.max(np.abs(got - case.expected), initial=0)) / scale


def gradient(case: AdjointCase, path: str) -> np.ndarray:
    """dX of `case` on `path` ("static", "dynamic", "reference"; torch cases: "static", "reference")."""
    if case.convention == "torch":
        return _torch_gradient(case, path)
    if case.convention == "onednn":
        return _onednn_gradient(case, path)
    return GRADIENTS[path](case.config, case.dy)


def judge(case: AdjointCase, path: str) -> Optional[str]:
    """None when `path`'s gradient is J^T dY within the dtype's tolerance; else what went wrong."""
    try:
        got = gradient(case, path)
    except Exception as e:                     # a refusal is judged by the caller's policy
        from dml_desc.errors import DescError
        kind = "refused" if isinstance(e, DescError) else "crashed"
        return f"{kind}: {type(e).__name__}: {str(e)[:300]}"
    err = error(case, got)
    return None if err <= TOL[case.dtype] else f"wrong: error {err:.3g} > {TOL[case.dtype]}"


def adjoint_cases(n: int, seed: int, max_opset: Optional[int] = None) -> Iterator[AdjointCase]:
    """n cases (configurations onnxruntime's forward runs), deterministic for `seed`."""
    if max_opset is None:
        from dml_desc.conventions.onnx import installed_runtime
        version = installed_runtime() or "1.19"
        max_opset = 21 if tuple(int(p) for p in version.split(".")[:2]) < (1, 20) else 24
    rng = np.random.default_rng(seed)
    yield from first_n(n, lambda tries: make_case(draw(rng, max_opset), seed * 100003 + tries,
                                                  f"adjoint-s{seed}-{tries}"))


def first_n(n: int, make) -> Iterator[AdjointCase]:
    """The first n cases `make(tries)` gives (None: that draw is dropped), within 20 n + 20 draws."""
    made = tries = 0
    while made < n and tries < 20 * n + 20:
        tries += 1
        case = make(tries)
        if case is not None:
            made += 1
            yield case


# ---------------------------------------------------------------- torch: F.interpolate's forward transposed

TORCH_MODES = {1: ("nearest", "nearest-exact", "linear"), 2: ("nearest", "nearest-exact", "bilinear", "bicubic"),
               3: ("nearest", "nearest-exact", "trilinear")}


def draw_torch(rng: np.random.Generator) -> dict:
    """One F.interpolate call (the torch convention's JSON form) from what torch expresses."""
    n = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 3))] + [int(rng.integers(1, 6)) for _ in range(n)]
    mode = str(rng.choice(TORCH_MODES[n]))
    obj = {"input_shape": shape, "mode": mode}
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


def torch_matrix(obj: dict) -> tuple:
    """(J, output shape) from torch's F.interpolate on the basis inputs, in float64."""
    import torch
    import torch.nn.functional as F
    from dml_desc.conventions.torch import TorchInterpolate
    call = TorchInterpolate.from_json(obj)
    n = int(np.prod(obj["input_shape"]))
    eye = torch.eye(n, dtype=torch.float64)
    cols = [F.interpolate(eye[k].reshape(obj["input_shape"]), **call.kwargs()).reshape(-1) for k in range(n)]
    out = F.interpolate(torch.zeros(obj["input_shape"], dtype=torch.float64), **call.kwargs()).shape
    return torch.stack(cols, 1).numpy(), tuple(out)


def torch_cases(n: int, seed: int) -> Iterator[AdjointCase]:
    """n torch cases (float32), deterministic for `seed`; None of them when torch is not installed."""
    from importlib.util import find_spec
    if find_spec("torch") is None:
        return
    import torch
    from dml_desc import conventions
    rng = np.random.default_rng(seed + 7919)

    def one(tries: int) -> Optional[AdjointCase]:
        obj = draw_torch(rng)
        try:
            res, _ = conventions.load("torch", obj)
            J, out_shape = torch_matrix(obj)
        except Exception:            # torch or the reader refuses the call: not drawn again
            return None
        if 0 in out_shape or np.prod(out_shape) > 4 * MAX_OUT:
            return None
        dy = np.random.default_rng(seed * 100003 + tries).standard_normal(out_shape).astype(np.float32)
        expected = (J.T @ dy.astype(np.float64).ravel()).reshape(obj["input_shape"])
        oracle = f"torch-{torch.__version__} F.interpolate^T"
        if obj.get("antialias") and out_shape[-1] == 1:      # torch's forward is not its autograd's transpose
            expected, oracle = torch_autograd(obj, dy), f"torch-{torch.__version__} autograd"
        return AdjointCase(f"adjoint-torch-s{seed}-{tries}", obj, res, "f32", dy.astype(np.float64), expected,
                           oracle, None, "torch")
    yield from first_n(n, one)


def torch_autograd(obj: dict, dy: np.ndarray) -> np.ndarray:
    """torch's own gradient of the call (float64). Used where torch's antialias forward with an output last axis
    of length 1 gives every output the same weights (torch 2.13 CPU, measured), which its autograd does not:
    the project follows autograd, what torch trains with (docs/adjoint.md)."""
    import torch
    import torch.nn.functional as F
    from dml_desc.conventions.torch import TorchInterpolate
    x = torch.zeros(obj["input_shape"], dtype=torch.float64, requires_grad=True)
    F.interpolate(x, **TorchInterpolate.from_json(obj).kwargs()).backward(torch.from_numpy(dy.astype(np.float64)))
    return x.grad.numpy()


def _torch_gradient(case: AdjointCase, path: str) -> np.ndarray:
    """The project's gradient of a torch case: the reference, or the lowered graph on onnxruntime."""
    if path == "reference":
        from .reference import resize_grad
        return resize_grad(case.dy, case.res)
    from onnx_ops.build import build_lowered
    from onnx_ops.run import session
    model = build_lowered(case.res, np.float32)
    feeds = {"dY": case.dy.astype(np.float32), "X": np.zeros(case.res.in_shape, np.float32)}
    return session(model, threads=1).run(None, feeds)[0].astype(np.float64)


# ---------------------------------------------------------------- oneDNN: the real library's forward transposed


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


def onednn_matrix(doc: dict) -> np.ndarray:
    """J of the whole tensor from oneDNN's forward resampling primitive on an identity batch (every basis
    input of one (n, c) slice at once: the map is the same on every slice)."""
    from dml_desc.runtimes import onednn
    op = doc["graph"][0]
    fmt = op["attrs"]["data_format"]["value"]
    src, dst = op["inputs"][0]["shape"], op["inputs"][1]["shape"]
    sp = slice(2, None) if fmt == "NCX" else slice(1, -1)
    s_in, s_out = src[sp], dst[sp]
    p = int(np.prod(s_in))
    eye = np.eye(p, dtype=np.float32).reshape([p] + s_in)
    batch = eye[:, None] if fmt == "NCX" else eye[..., None]
    shape_out = [p, 1] + s_out if fmt == "NCX" else [p] + s_out + [1]
    job = {"kind": "resampling_fwd", "mode": op["attrs"]["mode"]["value"], "data_format": fmt, "src": batch,
           "dst_shape": tuple(shape_out), "blame": ("mode", op["attrs"]["mode"]["value"])}
    result = onednn.run_one(job)
    J = result["out"].reshape(p, -1).T.astype(np.float64)            # (spatial out, spatial in)
    slices = src[0] * src[1] if fmt == "NCX" else src[0] * src[-1]
    # the full J: identical blocks per (n, c) slice, in the tensor's own element order
    full_in, full_out = np.arange(int(np.prod(src))).reshape(src), np.arange(int(np.prod(dst))).reshape(dst)
    if fmt == "NXC":
        full_in, full_out = np.moveaxis(full_in, -1, 1), np.moveaxis(full_out, -1, 1)
    rows, cols = full_out.reshape(slices, -1), full_in.reshape(slices, -1)
    out = np.zeros((int(np.prod(dst)), int(np.prod(src))))
    for r, c in zip(rows, cols):
        out[np.ix_(r, c)] = J
    return out


def onednn_cases(n: int, seed: int) -> Iterator[AdjointCase]:
    """n InterpolateBackward cases judged against oneDNN's forward transposed; none without the library."""
    from dml_desc.runtimes import onednn
    if onednn.missing_reason() is not None:
        return
    from dml_desc import conventions
    rng = np.random.default_rng(seed + 104729)

    def one(tries: int) -> Optional[AdjointCase]:
        doc = draw_onednn(rng)
        try:
            res, _ = conventions.load("onednn", doc)
            J = onednn_matrix(doc)
        except Exception:
            return None
        dy = np.random.default_rng(seed * 100003 + tries).standard_normal(res.out_shape).astype(np.float32)
        return AdjointCase(f"adjoint-onednn-s{seed}-{tries}", doc, res, "f32", dy.astype(np.float64),
                           (J.T @ dy.astype(np.float64).ravel()).reshape(res.in_shape),
                           f"oneDNN-{onednn_version()} resampling forward^T", None, "onednn")
    yield from first_n(n, one)


def onednn_version() -> str:
    """The oneDNN library's version (the oracle's name)."""
    from dml_desc.runtimes import onednn
    try:
        return onednn.version_of(onednn.load(onednn.require_library()))
    except Exception:
        return "?"


def _onednn_gradient(case: AdjointCase, path: str) -> np.ndarray:
    """The reference of the read map, or oneDNN's own InterpolateBackward ("native")."""
    if path == "reference":
        from .reference import resize_grad
        return resize_grad(case.dy, case.res)
    from dml_desc.runtimes import onednn
    op = case.description["graph"][0]
    result = onednn.run_one(onednn.interpolate_job(op, case.dy.astype(np.float32)))
    return np.asarray(result["out"], np.float64)


# ---------------------------------------------------------------- shrinking


def _simpler(cfg: Config) -> Iterator[Config]:
    """Candidate configurations one step simpler than `cfg`."""
    rank = len(cfg.shape)
    axes = cfg.attrs.get("axes")
    listed = [a % rank for a in axes] if axes is not None else list(range(rank))
    for i in range(rank):                         # drop an axis
        if rank == 1:
            break
        if i in listed and axes is None and len(listed) == 1:
            continue
        c = copy.deepcopy(cfg)
        c.shape = cfg.shape[:i] + cfg.shape[i + 1:]
        pos = listed.index(i) if i in listed else None
        if axes is not None:
            kept = [a for a in axes if a % rank != i]
            if not kept:
                continue
            c.attrs["axes"] = [(a % rank) - (a % rank > i) - (rank - 1 if a < 0 else 0) for a in kept]
        if pos is not None:
            for name in ("scales", "sizes"):
                v = getattr(c, name)
                if v is not None:
                    setattr(c, name, v[:pos] + v[pos + 1:])
            if c.roi is not None:
                k = len(listed)
                c.roi = c.roi[:pos] + c.roi[pos + 1:k] + c.roi[k:k + pos] + c.roi[k + pos + 1:]
        yield c
    for i, d in enumerate(cfg.shape):             # smaller sizes
        if d > 1:
            c = copy.deepcopy(cfg)
            c.shape[i] = d - 1
            yield c
    if cfg.sizes is not None:
        for i, s in enumerate(cfg.sizes):
            if s > 1:
                c = copy.deepcopy(cfg)
                c.sizes[i] = s - 1
                yield c
    for name, simple in (("antialias", None), ("exclude_outside", None), ("extrapolation_value", None),
                         ("keep_aspect_ratio_policy", None), ("cubic_coeff_a", None), ("nearest_mode", None),
                         ("axes", None)):
        if name in cfg.attrs and name != "axes":
            c = copy.deepcopy(cfg)
            del c.attrs[name]
            yield c
    if axes is not None and any(a < 0 for a in axes):
        c = copy.deepcopy(cfg)
        c.attrs["axes"] = [a % rank for a in axes]
        yield c
    mode = cfg.attrs.get("mode", "nearest")
    if mode != "nearest":                         # cubic -> linear -> nearest, their own attributes dropped
        c = copy.deepcopy(cfg)
        c.attrs["mode"] = "linear" if mode == "cubic" else "nearest"
        for name in ("cubic_coeff_a", "exclude_outside") + (("antialias",) if mode == "linear" else ()):
            c.attrs.pop(name, None)
        yield c
    if cfg.dtype != "float32":
        yield replace(cfg, dtype="float32")
    if cfg.opset not in (11, 19):
        yield replace(cfg, opset=19 if cfg.opset >= 18 else 11 if cfg.opset >= 11 else cfg.opset)


def shrink(case: AdjointCase, fails, budget: int = 300) -> AdjointCase:
    """The smallest case (fewest axes, smallest sizes, simplest attributes) for which `fails(case)` holds."""
    if case.config is None:          # a torch call: printed as drawn
        return case
    best, steps = case, 0
    progress = True
    while progress and steps < budget:
        progress = False
        for cfg in _simpler(best.config):
            steps += 1
            cand = make_case(cfg, 0, best.name)
            if cand is not None and fails(cand):
                best, progress = cand, True
                break
            if steps >= budget:
                break
    return best


def description(case: AdjointCase, path: str) -> str:
    """The shrunk failure as a description file's text (`dml-desc run` / `dml-desc convert --from onnx`)."""
    return json.dumps(case.description, indent=2)


def run(n: int, seed: int, paths=PATHS, verbose: bool = False) -> list:
    """Judge n cases on every path -> [(case, path, message)] of the failures, each shrunk."""
    failures = []
    for case in adjoint_cases(n, seed):
        for path in paths:
            msg = judge(case, path)
            if msg is None or (msg.startswith("refused") and case.res is None and path == "reference"):
                continue
            kind = msg.split(":")[0]
            small = shrink(case, lambda c: (judge(c, path) or "").split(":")[0] == kind)
            failures.append((small, path, judge(small, path)))
            if verbose:
                print(path, judge(small, path), description(small, path).replace("\n", " "))
    return failures


# ---------------------------------------------------------------- the suite's section

BACKEND_OF = {"static": "ort-cpu-lowered", "dynamic": "ort-cpu-dynamic", "reference": "numpy-reference",
              "native": "onednn-interpolate-bwd"}
DEFAULT_N, DEFAULT_SEED = 12, 0
# Refusals that are the documented behaviour (docs/adjoint.md): a user field and the reason, at lowering time
ACCEPTED_REFUSALS = ("keep_aspect_ratio_policy", ".roi=", "roi=", ".antialias=")


def accepted_refusal(message: str) -> bool:
    """True for a refusal the project documents as the answer (not a defect): an ambiguous
    keep_aspect_ratio_policy without sizes, onnxruntime's channel-dependent antialias crop."""
    return message.startswith("refused") and any(k in message for k in ACCEPTED_REFUSALS)


def adjoint_checks(n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> list:
    """The suite's randomized adjoint section: each case on the static and dynamic lowering and the reference."""
    from .catalog import Check, Skip
    from onnx_ops.run import onnxruntime
    try:
        onnxruntime()
    except Exception as e:
        def skip(e=e):
            raise Skip(f"onnxruntime (the oracle's forward) is not installed: {e}")
        return [Check("adjoint", "onnx", "ort-cpu-lowered", "f32", skip)]
    checks = []
    for case in adjoint_cases(n, seed):
        for path in PATHS:
            checks.append(Check(f"adjoint/{case.name}", "onnx", BACKEND_OF[path], case.dtype,
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    for case in torch_cases(max(1, n // 3), seed):      # torch's own forward transposed, where torch is installed
        for path in ("static", "reference"):
            checks.append(Check(f"adjoint/{case.name}", "torch", BACKEND_OF[path], "f32",
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    for case in onednn_cases(max(1, n // 6), seed):     # oneDNN's forward transposed, where the library is
        for path in ("native", "reference"):
            checks.append(Check(f"adjoint/{case.name}", "onednn", BACKEND_OF[path], "f32",
                                lambda c=case, p=path: _suite_run(c, p), oracle=case.oracle,
                                describe=lambda c=case: c.description))
    return checks


def may_match(pattern: str, n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> bool:
    """Whether `-k pattern` can select an adjoint check, from the names the drawing can give (no case is drawn):
    `-k` on another case then costs no onnxruntime forward."""
    import fnmatch
    kinds = ("", "torch-", "onednn-")
    names = (f"adjoint/adjoint-{k}s{seed}-{t}" for k in kinds for t in range(1, 20 * n + 21))
    return any(pattern in name or fnmatch.fnmatch(name, pattern) for name in names)


def backend_adjoint_checks(backends, n: int = DEFAULT_N, seed: int = DEFAULT_SEED, semantics=None) -> list:
    """The adjoint cases on other backends (py:MODULE:NAME plug-ins, onnxruntime:PROVIDER ...): each case is
    converted into the backend's convention and judged against the oracle's J^T dY, as any kernel case is."""
    if not backends:
        return []
    from onnx_ops.run import onnxruntime
    from .backends import resolve
    from .cases import backend_checks
    try:
        onnxruntime()
    except Exception:
        return []                       # adjoint_checks already records the skip and its reason
    cases = [c for c in adjoint_cases(n, seed) if c.res is not None]
    return [check for b in backends
            for check in backend_checks(resolve(b, semantics) if isinstance(b, str) else b, cases, semantics)]


def _suite_run(case: AdjointCase, path: str):
    from dml_desc.errors import DescError
    from .catalog import Skip
    try:
        got = gradient(case, path)
    except DescError as e:
        message = f"refused: {e}"
        if accepted_refusal(message):
            raise Skip(f"documented as unsupported (docs/adjoint.md): {message}"[:300]) from None
        raise DescError(e.field, e.value, e.rule + "; " + _shrunk_report(case, path, message)) from None
    return got, case.expected, lambda g, w: _suite_judge(case, path, g)


def _suite_judge(case: AdjointCase, path: str, got):
    err = error(case, got)
    ok = err <= TOL[case.dtype]
    why = "" if ok else f"error {err:.3g} > {TOL[case.dtype]} of the gradient's scale vs {case.oracle}; " + \
        _shrunk_report(case, path, "wrong")
    return ok, float(np.max(np.abs(got - case.expected), initial=0)), err, why


def _shrunk_report(case: AdjointCase, path: str, message: str) -> str:
    """Shrink the failure and write it as a description file; the text names the file and holds the JSON."""
    import os
    import tempfile
    kind = message.split(":")[0]
    small = shrink(case, lambda c: (judge(c, path) or "").split(":")[0] == kind)
    folder = os.path.join(tempfile.gettempdir(), "dml-desc-adjoint")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{case.name}-{path}.json")
    with open(target, "w") as f:
        f.write(description(small, path) + "\n")
    return f"shrunk to {target} (dml-desc run / convert --from {case.convention}): {json.dumps(small.description)}"


if __name__ == "__main__":
    import sys
    count, start = (int(v) for v in (sys.argv[1:3] + ["50", "0"][len(sys.argv[1:3]):]))
    found = run(count, start, verbose=True)
    print(f"{len(found)} failures")
