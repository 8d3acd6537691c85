"""ORT training artifacts for models with Resize: generate, then lower ResizeGrad so CPU training runs."""
from __future__ import annotations

import os

import onnx

from .lower import lower_file


def generate_cpu_artifacts(model: onnx.ModelProto, requires_grad: list, out_dir: str, loss: str = "MSELoss") -> list:
    """generate_artifacts (needs onnxruntime.training, which imports torch), then lower the training graph."""
    from onnxruntime.training import artifacts
    os.makedirs(out_dir, exist_ok=True)
    artifacts.generate_artifacts(model, requires_grad=requires_grad, frozen_params=[],
                                 loss=getattr(artifacts.LossType, loss), optimizer=artifacts.OptimType.SGD,
                                 artifact_directory=out_dir)
    path = os.path.join(out_dir, "training_model.onnx")
    return lower_file(path, path)
