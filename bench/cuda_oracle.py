"""The lowered gradients on onnxruntime's CPU against torch autograd on a CUDA GPU: random F.interpolate calls.

Run: python bench/cuda_oracle.py [--cases N] [--seed S] [--device cuda|cpu] [--provider NAME]

Each case is a random F.interpolate call (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area;
sizes or scale factors, align_corners, antialias; 3-D to 5-D, float32). torch's description is turned into the
canonical map (dml_desc.conventions.torch), spelled as an ONNX ResizeGrad for the installed onnxruntime, lowered
twice (built lowered from the map, static; and its ONNX ResizeGrad spelling with N and the spatial dims
symbolic, lowered) and run on onnxruntime's CPU, or on another execution provider with --provider (onnxruntime-gpu's
CUDAExecutionProvider: bench/cuda_ep.py runs both). The oracle is torch's own backward on the GPU (its CUDA kernels,
float32, summed with atomics: tolerance TOLERANCE of dY's scale). A call the project refuses is counted with its
reason. Exit status 1 if any gradient differs. First it prints where torch's nearest forward on the device picks
other rows than its CPU kernel (the project follows the CPU kernel).

Measured on an NVIDIA H100 (torch 2.11.0+cu130, onnxruntime 1.30.0 CPU, 2026-11-26; docs/cross-runtime.md):
seeds 1 and 2, 400 calls each: 1,093 of 1,100 lowered gradients agreed within 1e-4; the 7 that differ are all
nearest-exact, where torch's CUDA forward picks another row than its CPU kernel at exact ties (3 of 4,096 (n, m)
pairs up to 64, e.g. n = 2, m = 41, output 20: CPU row 1, CUDA row 0); nearest agrees on all 4,096.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from dml_desc.conventions import onnx as onnx_conv
from dml_desc.conventions import torch as torch_conv
from dml_desc.errors import DescError
from onnx_ops import build_lowered, build_resize_grad, lower
from onnx_ops.run import run_model
from symbolic import make_symbolic

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
TOLERANCE = 1e-4           # of dY's scale: torch's CUDA sums (atomics) and the closest ONNX spelling's weights
SPELLING_TOLERANCE = 1e-5  # how far the ONNX spelling's weights may be from torch's map (float coordinates)


def random_call(rng: np.random.Generator) -> torch_conv.TorchInterpolate:
    """One random F.interpolate call of float32 data."""
    mode = str(rng.choice(MODES))
    rank = RANK.get(mode, int(rng.integers(3, 6)))
    spatial = [int(rng.integers(2, 40 if rank < 5 else 12)) for _ in range(rank - 2)]
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial
    kw: dict = {"mode": mode}
    if rng.random() < 0.5:
        kw["size"] = [int(rng.integers(1, 2 * n + 3)) for n in spatial]
    else:
        kw["scale_factor"] = [float(rng.choice([0.5, 0.75, 1.5, 1.7, 2.0, 3.0])) for _ in spatial]
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        kw["align_corners"] = bool(rng.random() < 0.3)
    if mode in ("bilinear", "bicubic") and not kw["align_corners"] and rng.random() < 0.3:
        kw["antialias"] = True
    return torch_conv.TorchInterpolate(shape, **kw)


def torch_grad(call: torch_conv.TorchInterpolate, dy: np.ndarray, device: str) -> np.ndarray:
    """x.grad of F.interpolate(x, **call) on `device`, for dY."""
    import torch
    x = torch.zeros(*call.input_shape, dtype=torch.float32, device=device, requires_grad=True)
    torch.nn.functional.interpolate(x, **call.kwargs()).backward(torch.tensor(dy, device=device))
    return x.grad.cpu().numpy()


def lowered_grads(call: torch_conv.TorchInterpolate, dy: np.ndarray, semantics: str,
                  provider: str = "CPUExecutionProvider") -> dict:
    """{"static": dX, "dynamic": dX}: the gradient of `call`'s map built lowered from the map itself (exact), and its
    ONNX ResizeGrad spelling (the closest within SPELLING_TOLERANCE where torch's float coordinates have no exact
    one) with N and the spatial dims symbolic, lowered; both run on onnxruntime's `provider`. "dynamic" is absent where
    no ONNX spelling states the map (a framework's filter)."""
    res = torch_conv.to_canonical(call)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}
    out = {"static": run_model(build_lowered(res, np.float32), feeds, provider)[0]}
    try:
        spec, _ = onnx_conv.from_canonical(res, op_type="ResizeGrad", semantics=semantics,
                                           tolerance=SPELLING_TOLERANCE, closest=False)
    except DescError:
        return out
    model = make_symbolic(build_resize_grad(spec, np.float32))
    out["dynamic"] = run_model(lower(model, semantics=semantics)[0], feeds, provider)[0]
    return out


def forward_pick_differences(device: str, longest: int = 64) -> list:
    """For nearest and nearest-exact: on how many (n, m) pairs up to `longest` torch's forward on `device` picks
    other source indices than its CPU kernel, and the first such pick (n, m, output, CPU's, device's)."""
    import torch
    lines = []
    for mode in ("nearest", "nearest-exact"):
        bad, first = 0, None
        for n in range(1, longest + 1):
            x = torch.arange(n, dtype=torch.float32).reshape(1, 1, n)
            for m in range(1, longest + 1):
                a = torch.nn.functional.interpolate(x, size=m, mode=mode).flatten()
                b = torch.nn.functional.interpolate(x.to(device), size=m, mode=mode).cpu().flatten()
                if not torch.equal(a, b):
                    bad += 1
                    o = int((a != b).nonzero()[0])
                    first = first or (n, m, o, int(a[o]), int(b[o]))
        lines.append(f"{mode}: {device} forward picks differ from the CPU kernel's on {bad} of {longest ** 2} (n, m) "
                     f"pairs; first (n, m, output, CPU pick, {device} pick) = {first}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="torch's device for the oracle (cpu for a run without a GPU)")
    p.add_argument("--provider", default="CPUExecutionProvider", help="onnxruntime's execution provider for the "
                   "lowered models (CUDAExecutionProvider needs onnxruntime-gpu)")
    args = p.parse_args(argv)
    import onnxruntime
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("cuda_oracle: torch sees no CUDA device; run with --device cpu")
        return 2
    semantics = onnx_conv.installed_semantics()
    name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"torch {torch.__version__} on {name}; onnxruntime {onnxruntime.__version__} {args.provider} ({semantics})")
    try:                      # the provider starts (no silent fallback to the CPU), before any case counts
        lowered_grads(torch_conv.TorchInterpolate([1, 1, 2], mode="linear", size=[3]), np.ones((1, 1, 3), np.float32),
                      semantics, args.provider)
    except DescError as e:
        print(f"cuda_oracle: {e}")
        return 2
    for line in forward_pick_differences(args.device):
        print(line)
    rng, counts, worst = np.random.default_rng(args.seed), {"agree": 0, "differ": 0, "refused": 0}, 0.0
    kinds = {"static": 0, "dynamic": 0}
    for k in range(args.cases):
        call = random_call(rng)
        try:
            res = torch_conv.to_canonical(call)
            dy = rng.standard_normal(res.out_shape).astype(np.float32)
            ours = lowered_grads(call, dy, semantics, args.provider)
        except DescError as e:
            counts["refused"] += 1
            print(f"case {k} refused: {call.to_json()}: {str(e)[:160]}")
            continue
        want = torch_grad(call, dy, args.device)
        for kind, got in ours.items():
            err = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
            worst = max(worst, err)
            if got.shape != want.shape or err > TOLERANCE:
                counts["differ"] += 1
                print(f"case {k} {kind} differs by {err:.2e}: {call.to_json()}")
            else:
                counts["agree"] += 1
            kinds[kind] += 1
    print(f"{counts['agree']} lowered gradients agree with torch on {name} ({kinds['static']} static, "
          f"{kinds['dynamic']} dynamic), "
          f"{counts['differ']} differ, {counts['refused']} calls refused; worst relative difference {worst:.1e}")
    return 1 if counts["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
