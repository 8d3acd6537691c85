"""Train a torch model that upsamples, on the CPU, with onnxruntime-training.

    python examples/train_upsample_cpu.py [--steps 5] [--out artifacts]

Exports the model with dynamic batch, height and width, writes ORT's training artifacts with every ResizeGrad
lowered to standard ops (onnx_ops.training.generate_cpu_artifacts), then trains a few SGD steps on batches of
two sizes from that one artifact set and prints the loss of each step. Needs torch and onnxruntime-training.
"""
import argparse
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from onnx_ops.training import generate_cpu_artifacts


class Upsampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.out = nn.Conv2d(8, 3, 1)

    def forward(self, x):
        return self.out(F.interpolate(self.conv(x), scale_factor=2.0, mode="bilinear", align_corners=False))


def export(path: str) -> None:
    torch.manual_seed(0)
    axes = {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(Upsampler(), (torch.zeros(1, 3, 16, 16),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": axes, "y": axes}, opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def train(folder: str, steps: int, lr: float = 0.05) -> list:
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state, os.path.join(folder, "eval_model.onnx"),
                    device="cpu")
    optimizer = Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(lr)
    rng = np.random.default_rng(0)
    losses = []
    for step in range(steps):
        n, h, w = (4, 16, 16) if step % 2 == 0 else (3, 24, 20)     # one artifact set, two batch/image sizes
        x = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        target = np.repeat(np.repeat(x, 2, axis=2), 2, axis=3)      # learn a nearest upsampling
        module.train()
        loss = float(module(x, target))
        optimizer.step()
        module.lazy_reset_grad()
        losses.append(loss)
        print(f"step {step}: batch {n}, {h}x{w} -> loss {loss:.6f}")
    module.eval()
    print(f"eval loss: {float(module(x, target)):.6f}")
    return losses


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out", help="artifact folder (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or os.path.join(tmp, "artifacts")
        os.makedirs(folder, exist_ok=True)
        model_path = os.path.join(folder, "upsampler.onnx")
        export(model_path)
        print(generate_cpu_artifacts(model_path, ["conv.0.weight", "conv.0.bias", "conv.1.weight", "conv.1.bias",
                                                  "out.weight", "out.bias"], folder,
                                     frozen_params=["conv.1.running_mean", "conv.1.running_var"],
                                     loss="MSELoss", optimizer="SGD"))
        return train(folder, args.steps)


if __name__ == "__main__":
    import warnings
    warnings.filterwarnings("ignore", module="torch")     # the legacy exporter's notes ...
    warnings.filterwarnings("ignore", category=DeprecationWarning)      # ... and its deprecation
    main()
