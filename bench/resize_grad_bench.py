"""ResizeGrad speed: lowered graph on onnxruntime CPU vs torch's native backward vs the NumPy reference.

Run: python bench/resize_grad_bench.py [--quick] [--threads N] [--rounds R] [--no-numpy]
Prints one row per case, side by side in one run: the lowered graph (and the form the lowering
picked), the ConvTransposeBackwardData bridge where the case has one, torch's backward
(F.interpolate under autograd, NCHW) and the NumPy reference; then lowered / torch.
The peers run interleaved, round after round, so a slow spell of a shared machine hits them all;
each time is the best over all rounds.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from conformance.reference import resize_grad
from dml_desc.conventions import onnx as onnx_conv
from onnx_ops import build_resize_grad, lower
from onnx_ops.bridge import build_bridge_model
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


def best_times(fns: dict, rounds: int, per_round: int = 3) -> dict:
    """Best time of each callable, measured interleaved: every round runs each peer `per_round` times."""
    for fn in fns.values():
        fn()                                   # warm-up
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            for _ in range(per_round):
                t = time.perf_counter()
                fn()
                best[k] = min(best[k], time.perf_counter() - t)
    return best


def spec(mode, shape, factor):
    scales = [1.0, 1.0] + [factor] * (len(shape) - 2)
    return onnx_conv.OnnxResize(list(shape), {"mode": mode}, scales=scales, op_type="ResizeGrad")


def bench_case(name, mode, shape, factor, threads, rounds, with_numpy):
    r = spec(mode, shape, factor)
    res = onnx_conv.to_canonical(r)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    x = np.zeros(shape, np.float32)
    lowered, report = lower(build_resize_grad(r))
    peers = {"ort": _ort_call(lowered, {"dY": dy, "X": x}, threads)}
    bridge = build_bridge_model(res)
    if bridge is not None:
        peers["bridge"] = _ort_call(bridge, {"dY": dy}, threads)
    torch_call = _torch_call(mode, shape, factor, dy, threads)
    if torch_call is not None:
        peers["torch"] = torch_call
    times = best_times(peers, rounds)
    if with_numpy:
        times.update(best_times({"numpy": lambda: resize_grad(dy, res)}, 1, max(1, rounds // 3)))
    nan = float("nan")
    return {"case": name, "elements": int(np.prod(res.out_shape)), "form": _form(report[0]),
            **{k: times.get(k, nan) for k in ("ort", "bridge", "torch", "numpy")}}


def _form(rewrite) -> str:
    return ", ".join(sorted(set(rewrite.forms)))


def _ort_call(model, feeds, threads):
    sess = session(model, threads=threads)
    return lambda: sess.run(None, feeds)


def _torch_call(mode, shape, factor, dy, threads):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    x = torch.zeros(shape, requires_grad=True)
    kw = {"align_corners": False} if mode == "linear" else {}
    y = torch.nn.functional.interpolate(x, scale_factor=factor, mode=TORCH_MODE[(mode, len(shape))], **kw)
    g = torch.from_numpy(dy)
    return lambda: torch.autograd.grad(y, x, g, retain_graph=True)


def _torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return "not installed"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=8, help="interleaved rounds of 3 runs per peer")
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
        rows.append(bench_case(*case, args.threads, args.rounds, not args.no_numpy))
        r = rows[-1]
        print(f"{r['case']:20s} lowered {r['ort']*1e3:7.2f} ms  bridge {r['bridge']*1e3:7.2f} ms  "
              f"torch {r['torch']*1e3:7.2f} ms  numpy {r['numpy']*1e3:8.2f} ms  "
              f"lowered/torch {r['ort']/r['torch']:5.2f}  [{r['form']}]", flush=True)
    per = {r["case"]: r["ort"] / r["elements"] for r in rows}
    if "bilinear 2x 1024^2" in per and "bilinear 2x 128^2" in per:
        print(f"per-element time 1024^2 / 128^2 (lowered): {per['bilinear 2x 1024^2'] / per['bilinear 2x 128^2']:.2f}")
    return rows


if __name__ == "__main__":
    main()
