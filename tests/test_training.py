"""ORT training artifacts for Conv -> Resize: lower training_model.onnx and train on the CPU."""
import os

import numpy as np
import pytest
from onnx import helper, numpy_helper

torch = pytest.importorskip("torch", reason="onnxruntime.training imports torch; torch is not installed")

from onnx_ops.training import generate_cpu_artifacts  # noqa: E402

MODES = [({"mode": "nearest"}, "nearest", {}),
         ({"mode": "linear"}, "bilinear", {"align_corners": False}),
         ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "bilinear", {"align_corners": True}),
         ({"mode": "cubic", "cubic_coeff_a": -0.75}, "bicubic", {"align_corners": False})]


def conv_resize(attrs, w):
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c", "", "scales"], ["y"], **attrs)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", 1, [2, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", 1, [2, 4, 12, 12])],
                          [numpy_helper.from_array(w, "W"),
                           numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("attrs,tmode,tkw", MODES, ids=[m[1] + str(m[2]) for m in MODES])
def test_cpu_train_step_matches_torch_autograd(tmp_path, attrs, tmode, tkw):
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    target = rng.standard_normal((2, 4, 12, 12)).astype(np.float32)
    report = generate_cpu_artifacts(conv_resize(attrs, w), ["W"], str(tmp_path))
    assert len(report) == 1 and not report[0].kept_native
    state = CheckpointState.load_checkpoint(os.path.join(tmp_path, "checkpoint"))
    module = Module(os.path.join(tmp_path, "training_model.onnx"), state,
                    os.path.join(tmp_path, "eval_model.onnx"), device="cpu")
    optimizer = Optimizer(os.path.join(tmp_path, "optimizer_model.onnx"), module)
    module.train()
    loss = module(x, target)
    grad = state.parameters["W"].grad.copy()

    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.interpolate(torch.nn.functional.conv2d(torch.tensor(x), tw, padding=1),
                                         scale_factor=2.0, mode=tmode, **tkw)
    tloss = torch.nn.functional.mse_loss(ty, torch.tensor(target))
    tloss.backward()
    assert abs(float(loss) - tloss.item()) < 1e-5
    np.testing.assert_allclose(grad, tw.grad.numpy(), rtol=1e-4, atol=1e-6)

    fd = finite_differences(os.path.join(tmp_path, "eval_model.onnx"), x, target, w)
    idx = list(fd)
    np.testing.assert_allclose([fd[i] for i in idx], [grad[i] for i in idx], rtol=1e-3, atol=1e-5)

    optimizer.step()
    module.lazy_reset_grad()
    assert float(module(x, target)) < float(loss)


def finite_differences(eval_path, x, target, w, h=0.25, count=8):
    """Central differences of the eval model's loss on a few weights (plain onnxruntime, no torch). The loss is
    quadratic in W (conv, then a linear resize, then MSE), so central differences are exact up to rounding."""
    import onnxruntime as ort
    sess = ort.InferenceSession(eval_path, providers=["CPUExecutionProvider"])
    loss = lambda weights: float(sess.run(None, {"x": x, "target": target, "W": weights})[0])
    rng = np.random.default_rng(1)
    out = {}
    for flat in rng.choice(w.size, count, replace=False):
        i = np.unravel_index(flat, w.shape)
        up, down = w.copy(), w.copy()
        up[i] += h
        down[i] -= h
        out[i] = (loss(up) - loss(down)) / (2 * h)
    return out
