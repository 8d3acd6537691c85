"""The oracles: each runtime's own forward run on basis inputs (J, in the runtime's arithmetic), and the
judged cases they give (expected dX = J^T dY): onnxruntime's Resize, torch's F.interpolate, oneDNN's
resampling forward."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Optional

import numpy as np

from dml_desc.canonical import Resampling

from .draw import MAX_OUT, SUITE_DTYPE_OF, Config, draw, draw_onednn, draw_torch

# Tolerance of an adjoint gradient, relative to the gradient's scale (paths.error), per suite dtype; J is float32
ADJOINT_TOL = {"f32": 2e-5, "f64": 2e-5, "f16": 4e-3}


@dataclass
class AdjointCase:
    """A judged configuration: the plain fields a suite runner needs."""
    name: str
    description: dict          # in `convention` (`dml-desc convert --from onnx`, `dml-desc run`)
    res: Optional[Resampling]  # the canonical Resampling the ONNX reader gives (None when it refuses)
    dtype: str                 # the suite's dtype name: f32, f16, f64
    dy: np.ndarray
    expected: np.ndarray       # J^T dY, J from the oracle's forward
    oracle: str
    config: Optional[Config] = None
    convention: str = "onnx"

    def judge(self, expected: np.ndarray):
        """How any backend's dX of this case is judged: within ADJOINT_TOL of the gradient's scale (max |dY| times
        max |J^T dY|, at least 1), as the section judges the project's paths (J itself is float32)."""
        from ..judges import within
        scale = max(1.0, float(np.max(np.abs(self.dy), initial=0)) * max(1.0, float(np.max(np.abs(expected),
                                                                                          initial=0))))
        return within(ADJOINT_TOL[self.dtype] * scale)


def forward_model(cfg: Config, rank_dims=None):
    """The forward Resize model `cfg` describes (roi, scales and sizes as initializers), X float32."""
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
    sess = ort.InferenceSession(forward_model(cfg).SerializeToString(), opts, providers=["CPUExecutionProvider"])
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


def canonical(cfg: Config, semantics: Optional[str] = None):
    """The canonical map the ONNX reader gives for the gradient node (dY's shape stands in for sizes)."""
    from dml_desc.conventions.onnx import OnnxResize, resolve_semantics, to_canonical
    node = OnnxResize(list(cfg.shape), dict(cfg.attrs), cfg.roi, cfg.scales, cfg.sizes, opset=min(cfg.opset, 21),
                      op_type="ResizeGrad")
    return to_canonical(node, resolve_semantics(semantics))     # None: the installed onnxruntime's


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
    dy = rng.standard_normal(out_shape).astype(cfg.dtype).astype(np.float64)
    expected = (J.T @ dy.ravel()).reshape(cfg.shape)
    try:
        res = canonical(cfg)
    except Exception:
        res = None
    return AdjointCase(name or f"adjoint-{seed}", cfg.onnx_json(), res, SUITE_DTYPE_OF[cfg.dtype], dy, expected,
                       _runtime_name(), cfg)


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
    assert x.grad is not None                   # backward filled it: x requires grad
    return x.grad.numpy()


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
        return onednn.version_of(onednn.open_library(onednn.require_library()))
    except Exception:
        return "?"
