"""The gradients the adjoint oracle judges ("static" and "dynamic" lowering, the NumPy "reference"; oneDNN's
own "native" kernel) and how each is judged against the oracle's J^T dY."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .draw import Config
from .oracles import ADJOINT_TOL, AdjointCase, canonical, forward_model

PATHS = ("static", "dynamic", "reference")


def grad_model(cfg: Config, dynamic: bool, out_shape=None):
    """ResizeGrad(dY, X, roi, scales) as onnxruntime's gradient builder writes it (sizes never passed)."""
    from onnx import helper
    from onnx_ops.build import ONNX_ELEM_OF_NUMPY
    elem = ONNX_ELEM_OF_NUMPY[np.dtype(cfg.dtype)]
    fwd = forward_model(cfg)
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
    dt = np.dtype(cfg.dtype)
    x = np.zeros(cfg.shape, dt)
    return session(model, threads=1).run(None, {"dY": dy.astype(dt), "X": x})[0].astype(np.float64)


def reference_gradient(cfg: Config, dy: np.ndarray) -> np.ndarray:
    """dX from the NumPy reference (conformance.reference) of the canonical map."""
    from ..reference import resize_grad
    return resize_grad(dy.astype(np.float64), canonical(cfg))


GRADIENTS = {"static": lambda c, dy: lowered_gradient(c, dy, False),
             "dynamic": lambda c, dy: lowered_gradient(c, dy, True),
             "reference": reference_gradient}


def error(case: AdjointCase, got: np.ndarray) -> float:
    """Max |got - expected| over the gradient's scale (max |dY| times J's largest column sum, >= 1)."""
    if got.shape != case.expected.shape:
        return float("inf")
    scale = max(1.0, float(np.max(np.abs(case.dy), initial=0)) * max(1.0, float(np.max(np.abs(case.expected),
                                                                                       initial=0))))
    return float(np.max(np.abs(got - case.expected), initial=0)) / scale


def gradient(case: AdjointCase, path: str) -> np.ndarray:
    """dX of `case` on `path` ("static", "dynamic", "reference"; torch cases: "static", "reference"; oneDNN
    cases: "native", "reference")."""
    if case.convention != "onnx" and path == "reference":      # the reference of the map the reader gives
        from ..reference import resize_grad
        assert case.res is not None             # torch and oneDNN cases are drawn with their reader's map
        return resize_grad(case.dy, case.res)
    if case.convention == "torch":
        return _torch_gradient(case)
    if case.convention == "onednn":
        return _onednn_gradient(case)
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
    return None if err <= ADJOINT_TOL[case.dtype] else f"wrong: error {err:.3g} > {ADJOINT_TOL[case.dtype]}"


def _torch_gradient(case: AdjointCase) -> np.ndarray:
    """The project's gradient of a torch case: the lowered graph on onnxruntime."""
    from onnx_ops.build import build_lowered
    from onnx_ops.run import session
    assert case.res is not None                 # torch cases are drawn with their reader's map
    model = build_lowered(case.res, np.float32)
    feeds = {"dY": case.dy.astype(np.float32), "X": np.zeros(case.res.in_shape, np.float32)}
    return session(model, threads=1).run(None, feeds)[0].astype(np.float64)


def _onednn_gradient(case: AdjointCase) -> np.ndarray:
    """oneDNN's own InterpolateBackward ("native")."""
    from dml_desc.runtimes import onednn
    op = case.description["graph"][0]
    result = onednn.run_one(onednn.interpolate_job(op, case.dy.astype(np.float32)))
    return np.asarray(result["out"], np.float64)
