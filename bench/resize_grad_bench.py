"""ResizeGrad speed: lowered graph on onnxruntime CPU vs torch's native backward vs the NumPy reference.

Run: python bench/resize_grad_bench.py [--quick] [--threads N] [--no-numpy]
Prints one row per case with best-of-N times, side by side in one run: the lowered graph (the form the
lowering picks), the ConvTransposeBackwardData bridge where the case has one, torch's backward
(F.interpolate under autograd, NCHW) and the NumPy reference; then lowered / torch.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from conformance.reference import resize_grad
from dml_desc.conventions import onnx as onnx_conv
from onnx_ops import build_resize_grad
from onnx_ops.run import session

CASES = [
    ("bilinear 2x", "linear", (8, 32, 128, 128), 2.0),
    ("bilinear 0.5x", "linear", (8, 32, 128, 128), 0.5),
    ("nearest 2x", "nearest", (8, 32, 128, 128), 2.0),
    ("trilinear 2x", "linear", (2, 16, 32, 64, 64), 2.0),
    ("bilinear 2x 128^2", "linear", (1, 8, 128, 128), 2.0),
    ("bilinear 2x 1024^2", "linear", (1, 8, 1024, 1024), 2.0),
]
TORCH_MODE = {("linear", 4): "bilinear", ("linear", 5): "trilinear", ("nearest", 4): "nearest",
              ("nearest", 5): "nearest"}


def best_time(fn, repeat: int) -> float:
    """Best of `repeat` runs after a warm-up: the least noisy estimate on a shared machine (same for every peer)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def spec(mode, shape, factor):
    scales = [1.0, 1.0] + [factor] * (len(shape) - 2)
    return onnx_conv.OnnxResize(list(shape), {"mode": mode}, scales=scales, op_type="ResizeGrad")


def bench_case(name, mode, shape, factor, threads, repeat, with_numpy):
    r = spec(mode, shape, factor)
    res = onnx_conv.to_canonical(r)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    x = np.zeros(shape, np.float32)
    sess = session(build_resize_grad(r, lowered=True), threads=threads)
    t_ort = best_time(lambda: sess.run(None, {"dY": dy, "X": x}), repeat)
    t_torch = torch_time(mode, shape, factor, dy, threads, repeat)
    t_np = best_time(lambda: resize_grad(dy, res), max(1, repeat // 3)) if with_numpy else float("nan")
    t_bridge = bridge_time(res, dy, threads, repeat)
    return {"case": name, "elements": int(np.prod(res.out_shape)), "ort": t_ort, "bridge": t_bridge,
            "torch": t_torch, "numpy": t_np}


def bridge_time(res, dy, threads, repeat):
    from onnx_ops.bridge import build_bridge_model
    model = build_bridge_model(res)
    if model is None:
        return float("nan")
    sess = session(model, threads=threads)
    return best_time(lambda: sess.run(None, {"dY": dy}), repeat)


def torch_time(mode, shape, factor, dy, threads, repeat):
    try:
        import torch
    except ImportError:
        return float("nan")
    torch.set_num_threads(threads)
    x = torch.zeros(shape, requires_grad=True)
    kw = {"align_corners": False} if mode == "linear" else {}
    y = torch.nn.functional.interpolate(x, scale_factor=factor, mode=TORCH_MODE[(mode, len(shape))], **kw)
    g = torch.from_numpy(dy)
    return best_time(lambda: torch.autograd.grad(y, x, g, retain_graph=True), repeat)


def _torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return "not installed"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="small cases only")
    p.add_argument("--no-numpy", action="store_true")
    args = p.parse_args(argv)
    import onnxruntime
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, threads={args.threads}, "
          f"onnxruntime {onnxruntime.__version__}, torch {_torch_version()}")
    rows = []
    for case in CASES:
        if args.quick and np.prod(case[2]) > 2e6:
            continue
        rows.append(bench_case(*case, args.threads, args.repeat, not args.no_numpy))
        r = rows[-1]
        print(f"{r['case']:20s} lowered {r['ort']*1e3:7.2f} ms  bridge {r['bridge']*1e3:7.2f} ms  "
              f"torch {r['torch']*1e3:7.2f} ms  numpy {r['numpy']*1e3:8.2f} ms  "
              f"lowered/torch {r['ort']/r['torch']:5.2f}", flush=True)
    per = {r["case"]: r["ort"] / r["elements"] for r in rows}
    if "bilinear 2x 1024^2" in per and "bilinear 2x 128^2" in per:
        print(f"per-element time 1024^2 / 128^2 (lowered): {per['bilinear 2x 1024^2'] / per['bilinear 2x 128^2']:.2f}")
    return rows


if __name__ == "__main__":
    main()
