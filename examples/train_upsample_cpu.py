"""Train a torch model that upsamples, on the CPU, with onnxruntime-training.

    python examples/train_upsample_cpu.py [--steps 6] [--out artifacts]

Exports the model with torch's default (dynamo) exporter, dynamic batch, height and width, to a model file with
external data (model.onnx + model.onnx.data, as the exporter writes it), writes ORT's training artifacts from
that path (onnx_ops.training.generate_cpu_artifacts: every ResizeGrad lowered, MaxPoolGrad rewritten, HardSwish
decomposed, BatchNorm statistics in the checkpoint), then trains a few SGD steps on batches of two sizes from that
one artifact set beside the same steps of torch.optim.SGD, and prints both losses. Needs torch, onnxscript and
onnxruntime-training (pip install 'dml-desc[training]' torch==2.13.0).
"""
import argparse
import copy
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dml_desc.conventions.onnx import installed_semantics
from onnx_ops.training import generate_cpu_artifacts


class Upsampler(nn.Module):
    """Conv-BatchNorm-HardSwish (16 channels), MaxPool, Conv, bilinear x4, skip, Conv: about 10 KB of weights."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.Hardswish())
        self.mid = nn.Conv2d(16, 16, 3, padding=1)
        self.out = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, x):
        skip = self.stem(x)
        y = F.interpolate(self.mid(F.max_pool2d(skip, 2)), scale_factor=2.0, mode="bilinear", align_corners=False)
        y = F.interpolate(y + skip, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.out(y)


def export(module: nn.Module, path: str) -> None:
    """torch's default exporter, for training: optimize=False keeps BatchNorm (the optimizer would fold it)."""
    dims = {0: torch.export.Dim("batch"), 2: torch.export.Dim("height", min=4), 3: torch.export.Dim("width", min=4)}
    torch.onnx.export(module.train(), (torch.zeros(2, 3, 16, 16),), path, input_names=["x"], output_names=["y"],
                      dynamic_shapes={"x": dims}, opset_version=20, optimize=False)


def train(folder: str, module: nn.Module, steps: int, lr: float = 0.05) -> list:
    """ORT's SGD on the artifacts beside torch.optim.SGD on `module`, same batches; returns ORT's losses."""
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    ort_module = Module(os.path.join(folder, "training_model.onnx"), state, os.path.join(folder, "eval_model.onnx"),
                        device="cpu")
    optimizer = Optimizer(os.path.join(folder, "optimizer_model.onnx"), ort_module)
    optimizer.set_learning_rate(lr)
    torch_optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    losses = []
    for step in range(steps):
        n, h, w = (4, 16, 16) if step % 2 == 0 else (3, 24, 20)     # one artifact set, two batch/image sizes
        x = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        target = np.repeat(np.repeat(x, 2, axis=2), 2, axis=3)      # learn a nearest x2 upsampling
        ort_module.train()
        loss = float(ort_module(x, target))
        optimizer.step()
        ort_module.lazy_reset_grad()
        torch_optimizer.zero_grad()
        torch_loss = F.mse_loss(module(torch.tensor(x)), torch.tensor(target))
        torch_loss.backward()
        torch_optimizer.step()
        losses.append(loss)
        print(f"step {step}: batch {n}, {h}x{w} -> loss {loss:.6f} (torch {torch_loss.item():.6f})")
    ort_module.eval()
    module.eval()
    torch_eval = F.mse_loss(module(torch.tensor(x)), torch.tensor(target)).item()
    print(f"eval loss: {float(ort_module(x, target)):.6f} (torch eval() {torch_eval:.6f})")
    return losses


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out", help="artifact folder (default: a temporary one)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = Upsampler()
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, "export", "upsampler.onnx")        # + upsampler.onnx.data beside it
        os.makedirs(os.path.dirname(model_path))
        export(model, model_path)
        folder = args.out or os.path.join(tmp, "artifacts")
        params = [name for name, _ in model.named_parameters()]
        print(generate_cpu_artifacts(model_path, params, folder, loss="MSELoss", optimizer="SGD",
                                     semantics=installed_semantics()))     # the runtime that trains it
        return train(folder, copy.deepcopy(model).train(), args.steps)


if __name__ == "__main__":
    import warnings
    warnings.filterwarnings("ignore")     # the exporter's notes on training mode and deprecations
    main()
