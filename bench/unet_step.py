"""One whole training step of a small U-Net: onnxruntime training (ResizeGrad lowered) against torch (issue 19).

`python bench/resize_grad_bench.py` prints it after the table in the full run, and in any run with `--unet`. A step
is forward, loss (per-pixel cross-entropy), backward and an SGD update: `Module(x, labels)` + `Optimizer.step()` +
`lazy_reset_grad()` on artifacts from the project's training API (`onnx_ops.training.generate_cpu_artifacts`, every
ResizeGrad lowered), and `net(x)` + `cross_entropy` + `backward()` + `SGD.step()` in torch. The U-Net upsamples with
bilinear x2 and nearest x2 (`F.interpolate(scale_factor=2)`) and is exported as real exports are: dynamic batch,
height and width (so the lowered gradients take the dynamic path's forms).

The share of the lowered nodes comes from a second, profiled Module (onnxruntime's profiler, one event per
kernel, in wall time): the kernel time of the nodes `lower` named `<ResizeGrad>/lowered/...`, per step and as
a share of all kernel time. Profiling slows a step, so the timed Module runs without it.
"""
from __future__ import annotations

import gc
import glob
import json
import os
import re
import tempfile
import warnings
from dataclasses import dataclass

import numpy as np

SGD_LR = 0.01
CLASSES = 3
LOWERED_TAG = "/lowered/"   # onnx_ops.lower names the nodes it emits <ResizeGrad name>/lowered/<op>_<i> (and the
                            # MaxPoolGrad repair <MaxPoolGrad name>/lowered/...: not counted)


def missing_reason() -> str:
    """Why the U-Net step cannot run here ('' when it can): it needs torch and onnxruntime-training."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed (the U-Net is exported from torch)"
    try:
        import onnxruntime.training.api  # noqa: F401
    except ImportError:
        return "onnxruntime.training is not installed (the onnxruntime-training build)"
    return ""


@dataclass(frozen=True)
class UNetCase:
    """The batch shape (N, 3, H, W) and the U-Net's channel width."""
    batch: int = 4
    height: int = 128
    width: int = 128
    channels: int = 16

    def describe(self) -> str:
        return f"U-Net c={self.channels}, x {self.batch}x3x{self.height}x{self.width}"


def build_unet(channels: int):
    """Conv + BatchNorm + ReLU blocks, MaxPool down, bilinear x2 and nearest x2 up, skip connections."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.e1, self.e2, self.e3 = block(3, c), block(c, 2 * c), block(2 * c, 2 * c)
            self.d2, self.d1 = block(4 * c, c), block(2 * c, c)
            self.head = nn.Conv2d(c, CLASSES, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(F.max_pool2d(a, 2))
            c = self.e3(F.max_pool2d(b, 2))
            u = self.d2(torch.cat([F.interpolate(c, scale_factor=2.0, mode="bilinear", align_corners=False), b], 1))
            u = self.d1(torch.cat([F.interpolate(u, scale_factor=2.0, mode="nearest"), a], 1))
            return self.head(u)

    torch.manual_seed(0)
    return UNet(channels)


def make_artifacts(net, case: UNetCase, folder: str):
    """Export `net` (legacy exporter, training mode, dynamic N/H/W, opset 17) and write CPU training artifacts
    with every ResizeGrad lowered; returns the ArtifactReport."""
    import onnx
    import torch
    from dml_desc.conventions.onnx import installed_semantics
    from onnx_ops.training import PixelCrossEntropyLoss, generate_cpu_artifacts
    path = os.path.join(folder, "unet.onnx")
    axes = {0: "batch", 2: "height", 3: "width"}
    x = torch.zeros(case.batch, 3, case.height, case.width)
    with warnings.catch_warnings():           # the exporter's notes on BatchNorm's num_batches_tracked
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": axes, "y": axes}, opset_version=17, dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    model = onnx.load(path)
    params = [t.name for t in model.graph.initializer]
    frozen = [p for p in params if "running_" in p or "num_batches" in p]
    return generate_cpu_artifacts(model, [p for p in params if p not in frozen], os.path.join(folder, "artifacts"),
                                  frozen_params=frozen, loss=PixelCrossEntropyLoss(), optimizer="SGD",
                                  semantics=installed_semantics())     # the runtime the step runs on


def ort_step(folder: str, threads: int, profile_prefix: str = ""):
    """A zero-argument callable running one ORT training step on fixed data, and the objects to keep alive."""
    import onnxruntime as ort
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    if profile_prefix:
        opts.enable_profiling = True
        opts.profile_file_prefix = profile_prefix
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state,
                    os.path.join(folder, "eval_model.onnx"), device="cpu", session_options=opts)
    optimizer = Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(SGD_LR)
    module.train()
    return module, optimizer, state


def batch(case: UNetCase):
    """Fixed input images and per-pixel labels."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((case.batch, 3, case.height, case.width)).astype(np.float32)
    return x, rng.integers(0, CLASSES, (case.batch, case.height, case.width)).astype(np.int64)


def ort_call(folder: str, case: UNetCase, threads: int, profile_prefix: str = ""):
    """(step callable, objects it needs): one ORT step = forward + backward, optimizer step, gradient reset."""
    module, optimizer, state = ort_step(folder, threads, profile_prefix)
    x, labels = batch(case)

    def step():
        module(x, labels)
        optimizer.step()
        module.lazy_reset_grad()
    return step, (module, optimizer, state)


def torch_call(net, case: UNetCase, threads: int):
    """One torch step: forward, cross-entropy, backward, SGD update (same data as ORT's)."""
    import torch
    from torch.nn import functional as F
    torch.set_num_threads(threads)
    net.train()
    sgd = torch.optim.SGD(net.parameters(), lr=SGD_LR)
    x, labels = (torch.from_numpy(a) for a in batch(case))

    def step():
        sgd.zero_grad()
        F.cross_entropy(net(x), labels).backward()
        sgd.step()
    return step


def lowered_share(folder: str, case: UNetCase, threads: int, steps: int, resize_grads: list) -> tuple[float, float]:
    """(kernel seconds per step of the nodes lowered from the ResizeGrad nodes named `resize_grads`, their share
    of all kernel time) over `steps` profiled steps and one warm-up, from onnxruntime's profile."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "unet_profile")
        step, alive = ort_call(folder, case, threads, prefix)
        for _ in range(steps + 1):
            step()
        del step, alive
        gc.collect()                        # the sessions write their profile when they are destroyed
        events = [e for path in glob.glob(prefix + "*.json") for e in _read_events(path)]
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    total = sum(e["dur"] for e in kernels)
    lowered = sum(e["dur"] for e in kernels if lowered_from_resize_grad(e["name"], set(resize_grads)))
    # the warm-up step's events are in the profile too: scale to one step by the count of profiled steps
    return lowered * 1e-6 / (steps + 1), (lowered / total if total else float("nan"))


def lowered_from_resize_grad(kernel: str, names: set) -> bool:
    """True for a kernel event of a node lowered from one of the ResizeGrad nodes `names` (an unnamed one is
    ResizeGrad_<k> in the lowered graph)."""
    head, tag, _ = kernel.partition(LOWERED_TAG)
    return bool(tag) and (head in names or ("" in names and re.fullmatch(r"ResizeGrad_\d+", head) is not None))


def _read_events(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def bench_unet(case: UNetCase, threads: int, rounds: int, best_times) -> dict:
    """Step times of ORT training and torch (best over interleaved rounds, via `best_times`), their ratio,
    the lowered nodes' kernel time per step and share, and the forms the lowering picked."""
    with tempfile.TemporaryDirectory() as tmp:
        net = build_unet(case.channels)
        report = make_artifacts(net, case, tmp)
        folder = os.path.join(tmp, "artifacts")
        ort_fn, alive = ort_call(folder, case, threads)
        times = best_times({"ort": ort_fn, "torch": torch_call(net, case, threads)}, rounds, 1)
        del ort_fn, alive
        names = [r.node for r in report.rewrites]
        lowered, share = lowered_share(folder, case, threads, max(1, rounds), names)
    forms = "; ".join(f"{r.mode}: {', '.join(dict.fromkeys(r.forms))}" for r in report.rewrites)
    return {"case": case.describe(), "ort": times["ort"], "torch": times["torch"], "lowered": lowered,
            "share": share, "forms": forms, "rewrites": len(report.rewrites)}


def format_unet(r: dict) -> str:
    """The printed line, e.g. 'U-Net training step (...): ORT 41.2 ms, torch 38.0 ms, ORT/torch 1.08; ...'."""
    return (f"U-Net training step ({r['case']}, SGD): ORT training {r['ort'] * 1e3:.3g} ms, torch "
            f"{r['torch'] * 1e3:.3g} ms, ORT/torch {r['ort'] / r['torch']:.2f}; lowered ResizeGrad nodes "
            f"{r['lowered'] * 1e3:.3g} ms per step, {100 * r['share']:.1f}% of ORT's kernel time "
            f"({r['rewrites']} ResizeGrad: {r['forms']})")
