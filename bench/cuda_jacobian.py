"""Whose forward does a lowered gradient transpose on an execution provider: the provider's own Resize, or the CPU's?

Run: python bench/cuda_jacobian.py [--provider CUDAExecutionProvider] [--cases N] [--seed S]

Each case is a random Resize (nearest, linear, cubic; every coordinate mode, nearest mode, exclude_outside,
antialias at opset 18+; scales from 0.5 to 3 on lengths up to 101). Its forward runs on a batch of basis inputs
on the provider and on onnxruntime's CPU provider: two Jacobians, J_dev and J_cpu. The gradient is lowered twice,
static (its taps from the description: the CPU's semantics) and with the spatial dims symbolic (the run-time
path, which asks the runtime's own Resize for its taps), and both run on the provider (use_tf32=0 on CUDA).
One line per case: |dX - J^T dY| / |J^T dY| against each Jacobian, and how far J_dev is from J_cpu.
The last line counts, for each, the forward it transposes within TOLERANCE (both, dev, cpu); exit status 1
where one transposes neither.

Measured on an NVIDIA H100 (onnxruntime-gpu 1.31.1, 2026-11-27; docs/cuda.md): CUDA's Resize forward computes
half_pixel_symmetric's coordinates otherwise than the CPU kernel, so there the two gradients differ by a few 1e-6
of dY's scale at these lengths (up to 1.9e-5 at 150-262): each is exact against the forward it follows.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from dml_desc.conventions.onnx import OnnxResize, installed_semantics, to_canonical
from dml_desc.errors import DescError
from onnx_ops import build_resize_grad, lower
from onnx_ops.run import onnxruntime, session     # use_tf32=0 on CUDA; refuses a provider that did not start
from symbolic import make_symbolic

CPU = "CPUExecutionProvider"
TOLERANCE = 1e-5
MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
SCALES = (0.5, 0.75, 1.25, 1.5, 1.7, 2.0, 2.5, 3.0)
LENGTHS = (7, 13, 23, 29, 37, 97, 101)


def random_case(rng: np.random.Generator) -> tuple:
    """(attrs, shape, scales, opset): a random Resize of one 2-D image, at most 4,000 input values."""
    mode = str(rng.choice(MODES))
    attrs = {"mode": mode, "coordinate_transformation_mode": str(rng.choice(COORDINATES))}
    opset = int(rng.choice([13, 19, 21]))
    if attrs["coordinate_transformation_mode"] == "half_pixel_symmetric":
        opset = max(opset, 19)
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(NEAREST))
    elif opset >= 18 and rng.random() < 0.2:
        attrs["antialias"] = 1
    if mode == "cubic" and rng.random() < 0.3:
        attrs["exclude_outside"] = 1
    while True:
        shape = [1, 1] + [int(v) for v in rng.choice(LENGTHS, 2)]
        if shape[2] * shape[3] <= 4000:
            return attrs, shape, [1.0, 1.0] + [float(v) for v in rng.choice(SCALES, 2)], opset


def jacobian_t(attrs: dict, shape: list, scales: list, opset: int, provider: str) -> np.ndarray:
    """J^T ([inputs, outputs], float64) of the Resize forward on `provider`: the forward of every basis input."""
    n = int(np.prod(shape))
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [n] + shape[1:])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "forward", [x], [y], [sc]), ir_version=8,
                              opset_imports=[helper.make_opsetid("", opset)])
    basis = np.eye(n, dtype=np.float32).reshape([n] + shape[1:])
    return session(model, provider).run(None, {"X": basis})[0].reshape(n, -1).astype(np.float64)


def gradients(attrs: dict, shape: list, scales: list, opset: int, dy: np.ndarray, provider: str) -> dict:
    """{"static": dX, "dynamic": dX}: the ResizeGrad lowered with fixed dims and with symbolic ones, on `provider`."""
    semantics = installed_semantics()
    model = build_resize_grad(OnnxResize(shape, attrs, None, scales, None, opset=opset), np.float32)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    feeds = {"dY": dy, "X": np.zeros(shape, np.float32)}
    grads = {}
    for kind, graph in (("static", model), ("dynamic", make_symbolic(model))):
        lowered, _ = lower(graph, semantics=semantics)
        grads[kind] = session(lowered, provider).run(None, feeds)[0].reshape(-1).astype(np.float64)
    return grads


def check_case(rng: np.random.Generator, provider: str) -> tuple:
    """(line, {kind: (off J_dev, off J_cpu)}) for one random case: how far each gradient is from J^T dY of each."""
    attrs, shape, scales, opset = random_case(rng)
    jt = [jacobian_t(attrs, shape, scales, opset, p) for p in (provider, CPU)]      # J_dev, J_cpu
    out_dims = to_canonical(OnnxResize(shape, attrs, None, scales, None, opset=opset), installed_semantics()).out_shape
    dy = rng.standard_normal(out_dims).astype(np.float32)
    want = [j @ dy.reshape(-1).astype(np.float64) for j in jt]
    scale = max(float(np.abs(want[1]).max()), 1e-30)
    off = {kind: tuple(float(np.abs(dx - w).max()) / scale for w in want)
           for kind, dx in gradients(attrs, shape, scales, opset, dy, provider).items()}
    spelled = " ".join(f"{k}={v}" for k, v in attrs.items())
    line = (f"{spelled} scales {scales[2:]} on {shape[2:]}, opset {opset}: forward {provider[:4]} vs CPU "
            f"{float(np.abs(jt[0] - jt[1]).max()):.1e}; "
            + "; ".join(f"{kind} off J_dev {a:.1e}, J_cpu {b:.1e}" for kind, (a, b) in off.items()))
    return line, off


def follows(offs: tuple) -> str:
    """Which forward a gradient transposes: "both", "dev", "cpu" or "neither" (within TOLERANCE)."""
    dev, cpu = (v <= TOLERANCE for v in offs)
    return {(True, True): "both", (True, False): "dev", (False, True): "cpu"}.get((dev, cpu), "neither")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--provider", default="CUDAExecutionProvider")
    p.add_argument("--cases", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    tally: dict = {"static": Counter(), "dynamic": Counter()}
    print(f"onnxruntime {onnxruntime().__version__}: gradients on {args.provider} against the Jacobians of the "
          f"Resize forward on {args.provider} (J_dev) and on {CPU} (J_cpu)")
    try:                      # the provider starts (no silent fallback), before any case counts
        jacobian_t({"mode": "nearest"}, [1, 1, 2, 2], [1.0, 1.0, 2.0, 2.0], 13, args.provider)
    except DescError as e:
        print(f"cuda_jacobian: {e}")
        return 2
    for _ in range(args.cases):
        line, off = check_case(rng, args.provider)
        verdicts = {kind: follows(offs) for kind, offs in off.items()}
        for kind, verdict in verdicts.items():
            tally[kind][verdict] += 1
        print(("FAIL " if "neither" in verdicts.values() else "") + line)
    print(f"{args.cases} cases; the forward each gradient transposes within {TOLERANCE:g} of J^T dY's scale: "
          + "; ".join(f"{kind} {dict(sorted(c.items()))}" for kind, c in tally.items()))
    return 1 if tally["static"]["neither"] + tally["dynamic"]["neither"] else 0


if __name__ == "__main__":
    sys.exit(main())
