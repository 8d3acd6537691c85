"""Issue 9's field case: a U-Net exported with dynamic batch, height and width trains on the CPU from ONE
artifact set, step for step like torch autograd, and its eval model loads and matches torch's model.eval()."""
from importlib.util import find_spec

import numpy as np
import pytest

if find_spec("torch") is None:
    pytest.skip("the U-Net is exported from torch (and onnxruntime.training imports it)", allow_module_level=True)
if find_spec("onnxruntime") is None or find_spec("onnxruntime.training") is None:   # looked up, not imported
    pytest.skip("onnxruntime.training is not installed (onnxruntime-training)", allow_module_level=True)
import onnxruntime.training  # noqa: E402,F401  installed, so it must import: a broken build fails (issue 21)
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from onnx_ops.training import PixelCrossEntropyLoss, generate_cpu_artifacts  # noqa: E402
from dml_desc.conventions.onnx import installed_semantics  # noqa: E402

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

SHAPES = [(2, 64, 64), (3, 64, 64), (2, 96, 80)]     # one artifact set for every batch and image size
CLASSES, LR = 3, 0.1


class UNet(nn.Module):
    """Conv + BatchNorm + ReLU blocks, MaxPool down, bilinear x2 and nearest x2 up, and a valid (unpadded) head
    conv whose H-2 x W-2 output goes back to the input size by a non-integer F.interpolate(size=...)."""

    def __init__(self, c=4):
        super().__init__()
        self.e1, self.e2, self.e3 = block(3, c), block(c, c), block(c, c)
        self.d2, self.d1 = block(2 * c, c), block(2 * c, c)
        self.head = nn.Conv2d(c, CLASSES, 3)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        u = self.d2(torch.cat([F.interpolate(c, scale_factor=2.0, mode="bilinear", align_corners=False), b], 1))
        u = self.d1(torch.cat([F.interpolate(u, scale_factor=2.0, mode="nearest"), a], 1))
        return F.interpolate(self.head(u), size=x.shape[-2:], mode="bilinear", align_corners=True)


def block(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())


def unet(seed=0):
    torch.manual_seed(seed)
    net = UNet()
    for m in net.modules():          # running statistics that eval mode visibly uses
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return net


def export(net, path):
    """The legacy exporter (dynamo=False) in training mode, as ORT's training docs ask. Its trace runs a
    train-mode forward, which moves `net`'s BatchNorm running statistics: the model holds the moved ones."""
    import onnx
    axes = {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(net, (torch.zeros(2, 3, 64, 64),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": axes, "y": axes}, opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    return onnx.load(path)


def batches(seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, 3, h, w)).astype(np.float32),
             rng.integers(0, CLASSES, (n, h, w)).astype(np.int64)) for n, h, w in SHAPES]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    out = tmp_path_factory.mktemp("unet")
    net = unet()
    model = export(net, str(out / "unet.onnx"))
    params = [t.name for t in model.graph.initializer]
    frozen = [p for p in params if "running_" in p]
    report = generate_cpu_artifacts(model, [p for p in params if p not in frozen], str(out / "artifacts"),
                                    frozen_params=frozen, loss=PixelCrossEntropyLoss(), optimizer="SGD",
                                    additional_output_names=["y"], semantics=INSTALLED)
    return out / "artifacts", report, net.state_dict()


def torch_twin(state_dict):
    """The torch U-Net with the weights and running statistics the exported model holds."""
    net = UNet()
    net.load_state_dict(state_dict)
    return net


def session(folder):
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    state = CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"), device="cpu")
    optimizer = Optimizer(str(folder / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(LR)
    return state, module, optimizer


def test_report_names_every_resize_grad_maxpool_grad_and_batchnorm(artifacts):
    _, report, _ = artifacts
    assert len(report.rewrites) == 3 and not any(r.kept_native for r in report.rewrites)
    assert len(report.training_repairs) == 2 and all("MaxPoolGrad" in t for t in report.training_repairs)
    assert len(report.eval_repairs) == 5 and all("BatchNormalization" in e for e in report.eval_repairs)


def test_one_artifact_set_trains_every_shape_like_torch(artifacts):
    folder, _, weights = artifacts
    state, module, optimizer = session(folder)
    net = torch_twin(weights)
    net.train()
    torch_sgd = torch.optim.SGD(net.parameters(), lr=LR)
    convs = [name for name, p in net.named_parameters() if p.dim() == 4]
    for step, (x, labels) in enumerate(batches()):
        module.train()
        loss, logits = module(x, labels)
        torch_sgd.zero_grad()
        y = net(torch.from_numpy(x))
        torch_loss = F.cross_entropy(y, torch.from_numpy(labels))
        torch_loss.backward()
        assert logits.shape == (len(x), CLASSES) + x.shape[2:]
        assert abs(float(loss) - torch_loss.item()) <= 1e-4 * abs(torch_loss.item()), (step, loss, torch_loss)
        if step == 0:
            grads = dict(net.named_parameters())
            for name in convs:
                ours, theirs = state.parameters[name].grad, grads[name].grad.numpy()
                assert np.linalg.norm(ours - theirs) <= 1e-4 * np.linalg.norm(theirs), name
                np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4 * np.abs(theirs).max())
        optimizer.step()
        module.lazy_reset_grad()
        torch_sgd.step()
    for name, p in net.named_parameters():          # ORT's SGD is torch's: w -= lr * g, no momentum or decay
        np.testing.assert_allclose(state.parameters[name].data, p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_eval_model_loads_and_matches_torch_eval(artifacts):
    folder, _, weights = artifacts
    _, module, _ = session(folder)
    net = torch_twin(weights).eval()
    module.eval()
    for x, labels in batches(seed=2):
        loss, logits = module(x, labels)
        with torch.no_grad():
            y = net(torch.from_numpy(x))
        np.testing.assert_allclose(logits, y.numpy(), rtol=1e-4, atol=1e-5)
        assert abs(float(loss) - F.cross_entropy(y, torch.from_numpy(labels)).item()) < 1e-5
