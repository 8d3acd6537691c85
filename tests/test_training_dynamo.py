"""The flow a torch user follows: torch's default (dynamo) exporter, dynamic batch / H / W, a real-size model
with external data (model.onnx.data), artifacts from a path and from another working folder, trained against
torch's own training steps."""
import os
from importlib.util import find_spec

import numpy as np
import pytest

if find_spec("onnxruntime") is None or find_spec("onnxruntime.training") is None:   # looked up, not imported
    pytest.skip("onnxruntime.training is not installed: only the training build has it (onnxruntime-training-cpu "
                "1.19.2, Python <= 3.12: pip install 'dml-desc[training]'; it has no Python 3.13 wheel, so there "
                "the extra installs plain onnxruntime)", allow_module_level=True)
torch = pytest.importorskip("torch", reason="torch is not installed (the oracle, and onnxruntime.training imports it)")
pytest.importorskip("onnxscript", reason="onnxscript is not installed: torch's default exporter needs it "
                    "(pip install 'dml-desc[training]')")
import onnx  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from dml_desc.errors import DescError  # noqa: E402
from dml_desc.conventions.onnx import installed_semantics  # noqa: E402
from onnx_ops import training  # noqa: E402
from onnx_ops.training import inputs as training_input  # noqa: E402
from onnx_ops.training import generate_cpu_artifacts  # noqa: E402

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

SIZES = [(2, 16, 16), (3, 24, 20), (1, 12, 28)]


class Net(nn.Module):
    """Conv-BatchNorm-HardSwish, MaxPool, bilinear x2, nearest to the skip's size, Conv: 3 -> 16 -> 3 channels."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 16, 3, padding=1)         # 16x3x3x3 float32 = 1,728 bytes: stored externally
        self.bn = nn.BatchNorm2d(16)
        self.b = nn.Conv2d(16, 16, 3, padding=1)
        self.out = nn.Conv2d(16, 3, 1)

    def forward(self, x):
        skip = F.hardswish(self.bn(self.a(x)))
        y = F.interpolate(self.b(F.max_pool2d(skip, 2)), scale_factor=2.0, mode="bilinear")
        y = F.interpolate(y, size=skip.shape[2:], mode="nearest") + skip
        return self.out(y)


def export(folder, optimize: bool):
    """torch.onnx.export with its defaults (dynamo) and dynamic batch / H / W; returns (module, path)."""
    torch.manual_seed(0)
    net = Net().train()
    with torch.no_grad():           # not the identity, so a folded BatchNorm would show
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
        net.bn.weight.uniform_(0.5, 1.5)
    dims = {0: torch.export.Dim("batch"), 2: torch.export.Dim("h", min=4), 3: torch.export.Dim("w", min=4)}
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(net, (torch.zeros(2, 3, 16, 16),), path, input_names=["x"], output_names=["y"],
                      dynamic_shapes={"x": dims}, opset_version=20, optimize=optimize)
    return net, path


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export(str(tmp_path_factory.mktemp("export")), optimize=False)


def trainable(net):
    return [n for n, p in net.named_parameters()]


def train_both(net, folder, steps=3, lr=0.05):
    """ORT's SGD on the artifacts and torch.optim.SGD on a copy of the module, same batches; returns
    (ort losses, torch losses, ort parameters and statistics, torch's, (ort, torch) eval losses after)."""
    import copy
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state, os.path.join(folder, "eval_model.onnx"),
                    device="cpu")
    optimizer = Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(lr)
    twin = copy.deepcopy(net).train()
    topt = torch.optim.SGD(twin.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    ort_losses, torch_losses = [], []
    for n, h, w in SIZES[:steps]:
        x = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        target = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        module.train()
        ort_losses.append(float(module(x, target)))
        optimizer.step()
        module.lazy_reset_grad()
        topt.zero_grad()
        tloss = F.mse_loss(twin(torch.tensor(x)), torch.tensor(target))
        tloss.backward()
        topt.step()
        torch_losses.append(tloss.item())
    names = trainable(net) + [n for n, _ in net.named_buffers() if "running_" in n]
    params = {name: state.parameters[name].data for name in names}
    theirs = {k: v.detach().numpy() for k, v in list(twin.named_parameters()) + list(twin.named_buffers())}
    module.eval()
    twin.eval()
    x = rng.standard_normal((2, 3, 16, 20)).astype(np.float32)
    evals = (float(module(x, np.zeros_like(x))), F.mse_loss(twin(torch.tensor(x)), torch.zeros(x.shape)).item())
    return ort_losses, torch_losses, params, theirs, evals


def test_default_exporter_path_with_external_data_from_another_folder_trains_as_torch(exported, tmp_path,
                                                                                      monkeypatch):
    net, path = exported
    assert os.path.exists(path + ".data")          # the dynamo exporter's external data, as users get it
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in onnx.load(path, load_external_data=False)
               .graph.initializer)
    elsewhere, out = tmp_path / "cwd", tmp_path / "artifacts"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    before = sorted(os.listdir(os.path.dirname(path)))
    report = generate_cpu_artifacts(path, trainable(net), str(out),
                                    semantics=INSTALLED)      # running statistics added by default
    assert os.listdir(elsewhere) == [] and sorted(os.listdir(os.path.dirname(path))) == before
    assert sorted(os.listdir(out)) == ["checkpoint", "eval_model.onnx", "optimizer_model.onnx", "training_model.onnx"]
    assert [d.split(":")[0] for d in report.decompositions] == ["node_hardswish"] or \
        len(report.decompositions) == 1 and "HardSwish" in report.decompositions[0]
    assert len(report.rewrites) == 2 and report.attention == []
    assert report.statistics == ["bn.running_mean", "bn.running_var"]
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        model = onnx.load(str(out / name))
        assert model.ir_version <= 10 and all(o.version <= 21 for o in model.opset_import if o.domain == "")
        used = {i for n in model.graph.node for i in n.input}
        assert [t.name for t in model.graph.initializer if t.name not in used] == []
    ort_losses, torch_losses, ours, theirs, evals = train_both(net, str(out))
    np.testing.assert_allclose(ort_losses, torch_losses, rtol=2e-5)
    for name in trainable(net) + ["bn.running_mean"]:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=name)
    assert np.abs(ours["bn.running_mean"] - net.bn.running_mean.numpy()).max() > 0.05     # it did move
    # onnxruntime updates running_var with the biased batch variance, torch with the unbiased one (x n/(n-1),
    # n = N*H*W >= 512 here): 0.2% at most per step
    np.testing.assert_allclose(ours["bn.running_var"], theirs["bn.running_var"], rtol=3e-3)
    assert evals[0] == pytest.approx(evals[1], rel=1e-3)       # eval after training: torch's eval(), nearly


def test_models_over_the_proto_limit_go_by_path_in_a_private_folder(exported, tmp_path, monkeypatch):
    """The route for models over 2 GB (onnxruntime's path form, in a private working folder), taken here by
    lowering the limit: same artifacts, same training, nothing left in the working folder or /tmp."""
    import tempfile
    net, path = exported
    monkeypatch.setattr(training_input, "PROTO_LIMIT", 0)
    monkeypatch.chdir(tmp_path)
    temp_before = set(os.listdir(tempfile.gettempdir()))
    generate_cpu_artifacts(path, trainable(net), "artifacts", frozen_params=["bn.running_mean", "bn.running_var"],
                           semantics=INSTALLED)
    assert sorted(os.listdir(tmp_path)) == ["artifacts"]
    assert not [f for f in set(os.listdir(tempfile.gettempdir())) - temp_before if f.startswith("dml-desc")]
    ort_losses, torch_losses, _, _, _ = train_both(net, str(tmp_path / "artifacts"), steps=2)
    np.testing.assert_allclose(ort_losses, torch_losses, rtol=2e-5)


def test_a_modelproto_with_unloaded_external_data_is_refused_with_the_fix(exported, tmp_path):
    net, path = exported
    proto = onnx.load(path, load_external_data=False)
    with pytest.raises(DescError, match="external data references; pass the model's path"):
        generate_cpu_artifacts(proto, trainable(net), str(tmp_path), semantics=INSTALLED)
    report = generate_cpu_artifacts(onnx.load(path), trainable(net), str(tmp_path),
                                    semantics=INSTALLED)    # with its data: works
    assert len(report.rewrites) == 2


def test_batchnorm_folded_by_the_exporters_optimizer_is_reported_with_the_fix(tmp_path):
    net, path = export(str(tmp_path / "folded"), optimize=True)
    model = onnx.load(path, load_external_data=False)
    assert not any(n.op_type == "BatchNormalization" for n in model.graph.node)      # what the optimizer does
    with pytest.raises(DescError, match=r"requires_grad=.*bn\.weight.*optimize=False"):
        generate_cpu_artifacts(path, trainable(net), str(tmp_path / "out"), semantics=INSTALLED)
    with pytest.raises(DescError, match="optimize=False"):
        training.check_torch_export(net, model)
    _, kept = export(str(tmp_path / "kept"), optimize=False)
    assert training.check_torch_export(net, onnx.load(kept, load_external_data=False)) == []


def test_an_export_for_inference_that_dropped_dropout_is_reported(tmp_path):
    """The legacy exporter's default (training=TrainingMode.EVAL) removes Dropout; the dynamo exporter of a
    train() module keeps it."""
    import warnings
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Dropout(0.3)).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, 3, 8, 8),), str(tmp_path / "legacy.onnx"), dynamo=False)
        torch.onnx.export(net, (torch.zeros(1, 3, 8, 8),), str(tmp_path / "dynamo.onnx"), optimize=False)
    with pytest.raises(DescError, match=r"model=\['1'\]: has no Dropout node.*TrainingMode.TRAINING"):
        training.check_torch_export(net, onnx.load(str(tmp_path / "legacy.onnx")))
    assert training.check_torch_export(net, onnx.load(str(tmp_path / "dynamo.onnx"))) == []


def test_the_python_blocks_of_docs_training_md_run_as_shown(tmp_path):
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "training.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "HardSwish" in run.stdout and os.listdir(tmp_path) == []     # nothing written in the working folder


class MobileBlock(nn.Module):
    """MobileNetV3's inverted residual with squeeze-excitation (Hardswish, Hardsigmoid, depthwise conv,
    AdaptiveAvgPool) and an LR-ASPP-like head (Sigmoid gate, bilinear to the input size), as torchvision's
    lraspp_mobilenet_v3_large builds them (torchvision itself cannot be had here: PyPI's wheel is a CUDA build)."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(3, 24, 1, bias=False), nn.BatchNorm2d(24), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24, bias=False),
                                       nn.BatchNorm2d(24), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(24, 8, 1), nn.ReLU(), nn.Conv2d(8, 24, 1),
                                nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(24, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 16, 1), nn.Sigmoid())
        self.classifier = nn.Conv2d(16, 3, 1)

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        y = self.project(y * self.se(y))
        y = self.classifier(y * self.gate(y))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


def test_a_mobilenet_v3_block_with_hardswish_and_hardsigmoid_trains_as_torch(tmp_path):
    torch.manual_seed(1)
    net = MobileBlock().train()
    path = str(tmp_path / "mobile.onnx")
    dims = {0: torch.export.Dim("batch"), 2: torch.export.Dim("h", min=8), 3: torch.export.Dim("w", min=8)}
    torch.onnx.export(net, (torch.zeros(2, 3, 16, 16),), path, input_names=["x"], output_names=["y"],
                      dynamic_shapes={"x": dims}, opset_version=20, optimize=False)
    report = generate_cpu_artifacts(path, trainable(net), str(tmp_path / "artifacts"), semantics=INSTALLED)
    decomposed = sorted(d.split(": ")[1].split(" ")[0] for d in report.decompositions)
    # one CastLike per bias-free Conv (the exporter's zero bias, cast like the activation it reads)
    assert decomposed == ["CastLike"] * 3 + ["HardSigmoid", "HardSwish", "HardSwish"]
    ort_losses, torch_losses, ours, theirs, evals = train_both(net, str(tmp_path / "artifacts"))
    np.testing.assert_allclose(ort_losses, torch_losses, rtol=2e-5)
    for name in trainable(net):
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=name)
