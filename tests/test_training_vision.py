"""Issue 32: the vision ops next to the resize train on the CPU training build, each against torch autograd in
float32 and float64 (and float64 central differences, the gradient's definition), from torch's default exporter
with dynamic N / H / W and from the legacy one; artifacts that are right or absent; quiet sessions."""
import inspect
import itertools
import os
from importlib.util import find_spec

import numpy as np
import pytest

if find_spec("onnxruntime") is None or find_spec("onnxruntime.training") is None:   # looked up, not imported
    pytest.skip("onnxruntime.training is not installed: only the training build has it (onnxruntime-training-cpu "
                "1.19.2, Python <= 3.12: pip install 'dml-desc[training]')", allow_module_level=True)
torch = pytest.importorskip("torch", reason="torch is not installed (the oracle, and onnxruntime.training imports it)")
pytest.importorskip("onnxscript", reason="onnxscript is not installed: torch's default exporter needs it")
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from dml_desc.conventions.onnx import installed_semantics  # noqa: E402
from dml_desc.errors import DescError  # noqa: E402
from onnx_ops import training  # noqa: E402
from onnx_ops.training import generate_cpu_artifacts  # noqa: E402

TOL = {torch.float32: 2e-5, torch.float64: 1e-10}     # relative to the largest gradient entry


class Loss(nn.Module):
    """The layer under test between a channel mix in front (its input gradient reaches a parameter) and one after,
    with the loss in the graph: sum(z * z) + sum(z * position), so a wrong permutation or tap changes it; cast to
    float32 (onnxruntime seeds the loss gradient in float32, so a float64 graph trains through a Cast). The mixes
    are Convs in float32; in float64 (onnxruntime's CPU Conv and MatMul gradient are float32 only) per-channel
    affine maps of the input's channels repeated."""

    def __init__(self, layer, c_in, c_out, dims=2, dtype=torch.float32):
        super().__init__()
        conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[dims - 1]
        self.c_in, self.layer = c_in, layer
        if dtype == torch.float64:
            shape = [1, c_in] + [1] * dims
            self.pre_scale, self.pre_bias = nn.Parameter(torch.rand(shape) + 0.5), nn.Parameter(torch.rand(shape))
            self.head_scale = nn.Parameter(torch.rand([1, c_out] + [1] * dims) + 0.5)
        else:
            self.pre, self.head = conv(3, c_in, 3, padding=1), conv(c_out, 2, 3, padding=1)

    def forward(self, x):
        if hasattr(self, "pre"):
            z = self.head(self.layer(self.pre(x)))
        else:
            x = torch.cat([x] * -(-self.c_in // 3), 1)[:, :self.c_in]
            z = self.layer(x * self.pre_scale + self.pre_bias) * self.head_scale
        rows = torch.arange(z.shape[2], dtype=z.dtype).reshape([-1] + [1] * (z.dim() - 3))
        position = torch.arange(z.shape[-1], dtype=z.dtype) * 0.125 + rows * 0.0625     # exact in float32
        return ((z * z).sum() + (z * position).sum()).float()


def export(net, shape, path, dynamo=True, dynamic=True):
    x = torch.zeros(shape, dtype=next(net.parameters()).dtype)
    if dynamo:
        dims = {0: torch.export.Dim("n"), **{a: torch.export.Dim(f"s{a}", min=4, max=64) for a in range(2, len(shape))}}
        torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["loss"], opset_version=20,
                          dynamic_shapes={"x": dims} if dynamic else None, optimize=False)
    else:
        axes = {0: "n", **{a: f"s{a}" for a in range(2, len(shape))}}
        torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["loss"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": axes} if dynamic else None, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    return path


def session(folder, threads=0):
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state, os.path.join(folder, "eval_model.onnx"),
                    device="cpu", session_options=options)
    return state, module, Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)


def check_against_torch(net, x, folder, dtype):
    """One step: loss and every parameter gradient equal torch's (to TOL of the largest gradient entry); the step
    lowers the loss. Returns the state."""
    state, module, optimizer = session(folder)
    module.train()
    loss = float(module(x))
    net.zero_grad()
    theirs = net(torch.from_numpy(x))
    theirs.backward()
    assert abs(loss - theirs.item()) <= 2e-6 * abs(theirs.item())        # a float32 loss in both
    scale = max(np.abs(p.grad.numpy()).max() for p in net.parameters())   # a bias before a norm has 0 + rounding
    for name, p in net.named_parameters():
        grad, want = state.parameters[name].grad, p.grad.numpy()
        np.testing.assert_allclose(grad, want, rtol=0, atol=TOL[dtype] * scale, err_msg=name)
    squares = sum(float((p.grad.double() ** 2).sum()) for p in net.parameters())
    optimizer.set_learning_rate(0.01 * loss / squares)        # a 1% first-order decrease: the step must go down
    optimizer.step()
    module.lazy_reset_grad()
    assert float(module(x)) < loss
    return state


def central_differences(folder, x, net, count=3, h=1e-5):
    """float64: the eval model's loss (before its Cast to float32) differentiated by central differences on a few
    parameter entries."""
    model = onnx.load(os.path.join(folder, "eval_model.onnx"))
    (cast,) = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name]
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info(cast.input[0], onnx.TensorProto.DOUBLE, []))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    params = {n: p.detach().numpy().copy() for n, p in net.named_parameters()}
    feeds = {i.name for i in sess.get_inputs()}
    out = {}
    rng = np.random.default_rng(3)
    for name in sorted(params):
        for flat in rng.choice(params[name].size, min(count, params[name].size), replace=False):
            i = np.unravel_index(flat, params[name].shape)
            values = []
            for step in (h, -h):
                moved = {k: v.copy() for k, v in params.items()}
                moved[name][i] += step
                values.append(float(sess.run(None, {"x": x, **{k: v for k, v in moved.items() if k in feeds}})[0]))
            out[name, i] = (values[0] - values[1]) / (2 * h)
    return out


LAYERS = {   # name: (layer, channels in, channels out, spatial dims)
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                         4, 6, 2),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(4, 3, 5, stride=3, padding=2, output_padding=2, dilation=2),
                         4, 3, 1),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1), 4, 2, 3),
    "group_norm": (lambda: nn.GroupNorm(2, 4, eps=2 ** -16), 4, 4, 2),      # ONNX's epsilon is a float32
    "instance_norm": (lambda: nn.InstanceNorm2d(4, eps=2 ** -16, affine=True), 4, 4, 2),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), 8, 2, 2),
    "avg_pool_pad": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), 4, 4, 2),
    "avg_pool_3d": (lambda: nn.AvgPool3d(2, padding=1), 4, 4, 3),
    "area": (lambda: Area(), 4, 4, 2),
}
SHAPE = {1: (2, 3, 13), 2: (2, 3, 12, 10), 3: (2, 3, 6, 8, 7)}       # export shapes
RUN = {1: (3, 3, 17), 2: (3, 3, 16, 14), 3: (1, 3, 8, 6, 5)}          # run shapes (dynamic exports)


class Area(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=0.5, mode="area")


def layer_net(name, dtype):
    torch.manual_seed(0)
    make, c_in, c_out, dims = LAYERS[name]
    net = Loss(make(), c_in, c_out, dims, dtype).to(dtype).train()
    with torch.no_grad():
        for p in net.parameters():           # affine norms away from (1, 0): their gradients show
            p.add_(torch.rand(p.shape, dtype=dtype) * 0.2)
    return net, dims


CASES = [(name, torch.float32, True, True) for name in LAYERS] + \
    [(name, torch.float32, False, False) for name in ("conv_transpose2d", "pixel_shuffle")]


@pytest.mark.parametrize("name,dtype,dynamo,dynamic", CASES,
                         ids=[f"{c[0]}-{str(c[1])[6:]}-{'dynamo' if c[2] else 'legacy'}" for c in CASES])
def test_layer_trains_as_torch_autograd(tmp_path, name, dtype, dynamo, dynamic):
    net, dims = layer_net(name, dtype)
    path = export(net, SHAPE[dims], str(tmp_path / "m.onnx"), dynamo, dynamic)
    report = generate_cpu_artifacts(path, [n for n, _ in net.named_parameters()], str(tmp_path / "a"), loss=None)
    rewritten = " ".join(report.decompositions + report.training_repairs)
    assert any(op in rewritten for op in ("ConvTransposeGrad", "InstanceNormalization", "DepthToSpace",
                                          "AveragePool")) or not dynamic, rewritten
    x = np.random.default_rng(0).standard_normal(RUN[dims] if dynamic else SHAPE[dims]).astype(
        np.float32 if dtype == torch.float32 else np.float64)
    check_against_torch(net, x, str(tmp_path / "a"), dtype)


class Upsample(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return F.interpolate(x, scale_factor=self.scale, mode="nearest")


@pytest.mark.parametrize("scale, dynamo", [(1.5, True), (1.25, False)])
def test_nearest_at_a_rational_scale_trains_as_torch_in_the_periodic_form(tmp_path, scale, dynamo):
    """torch's nearest scale_factor 1.5 / 1.25 with dynamic N / H / W: the ResizeGrad takes the shape-generic periodic
    form (onnx_ops.forms.periodic), and a step on other lengths (17 x 13: padded tiles) is torch's."""
    torch.manual_seed(0)
    net = Loss(Upsample(scale), 4, 4, 2).train()
    path = export(net, SHAPE[2], str(tmp_path / "m.onnx"), dynamo, True)
    report = generate_cpu_artifacts(path, [n for n, _ in net.named_parameters()], str(tmp_path / "a"), loss=None)
    assert "generic periodic" in str(report), str(report)
    x = np.random.default_rng(0).standard_normal((3, 3, 17, 13)).astype(np.float32)
    check_against_torch(net, x, str(tmp_path / "a"), torch.float32)


def float64_gradients(model, params: list, folder, feeds: dict) -> tuple:
    """(loss, {param: gradient}) of the training graph this project builds (decompositions, onnxruntime's gradient
    graph, prepare_artifacts), run by onnxruntime in float64. The training Module cannot: its gradient
    accumulators (InPlaceAccumulatorV2) are float32 only, so they are cut and the gradients read directly."""
    from onnxruntime.training import artifacts
    proto, _ = training.decompose_for_gradients(model)
    os.makedirs(folder, exist_ok=True)
    artifacts.generate_artifacts(proto, requires_grad=params, loss=None, optimizer=None, artifact_directory=folder)
    training.prepare_artifacts(folder)
    g = onnx.load(os.path.join(folder, "training_model.onnx"))
    grads = {n.input[1]: n.input[0] for n in g.graph.node if n.op_type == "InPlaceAccumulatorV2"}
    keep = [n for n in g.graph.node if n.op_type != "InPlaceAccumulatorV2"]
    del g.graph.node[:]
    g.graph.node.extend(keep)
    loss = g.graph.output[0]
    del g.graph.output[:]
    g.graph.output.extend([loss] + [helper.make_tensor_value_info(v, onnx.TensorProto.DOUBLE, None) for v in grads])
    read = {i for n in g.graph.node for i in n.input}
    inputs = [i for i in g.graph.input if i.name in read]
    del g.graph.input[:]
    g.graph.input.extend(inputs)
    sess = ort.InferenceSession(g.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.run(None, {k: v for k, v in feeds.items() if k in {i.name for i in inputs}})
    by_param = {p: out[1 + list(grads).index(n)] for n, p in ((n, n.rsplit("_grad", 1)[0]) for n in grads)}
    return out[0], by_param


F64_LAYERS = ["group_norm", "instance_norm", "pixel_shuffle"]


@pytest.mark.parametrize("name", F64_LAYERS)
def test_layer_gradient_graph_equals_torch_autograd_in_float64(tmp_path, name):
    """float64: onnxruntime's CPU training build has no float64 Module (accumulators, Conv), but the gradient
    graph itself runs: equal to torch autograd to 1e-10, and to central differences of the eval model."""
    net, dims = layer_net(name, torch.float64)
    path = export(net, SHAPE[dims], str(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).standard_normal(RUN[dims])
    params = {n: p.detach().numpy() for n, p in net.named_parameters()}
    loss, grads = float64_gradients(onnx.load(path), list(params), str(tmp_path / "a"), {"x": x, **params})
    net(torch.from_numpy(x)).backward()
    scale = max(np.abs(p.grad.numpy()).max() for p in net.parameters())
    for n, p in net.named_parameters():
        np.testing.assert_allclose(grads[n], p.grad.numpy(), rtol=0, atol=1e-10 * scale, err_msg=n)
    for (n, i), fd in central_differences(str(tmp_path / "a"), x, net).items():
        assert abs(fd - grads[n][i]) <= 1e-6 * max(1.0, abs(fd)), (n, i)


# ------------------------------------------------------------------------------------------------ GridSample

def grid_sample_model(x, grid, target, mode, padding, corners, opset):
    """loss = sum(GridSample(X, grid) * target), X and the grid trainable."""
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    mode = {"bilinear": "linear" if opset >= 20 else "bilinear", "nearest": "nearest"}[mode]
    nodes = [helper.make_node("GridSample", ["X", "grid"], ["y"], mode=mode, padding_mode=padding,
                              align_corners=int(corners)),
             helper.make_node("Mul", ["y", "target"], ["p"]),
             helper.make_node("ReduceSum", ["p"], ["sum"], keepdims=0),
             helper.make_node("Cast", ["sum"], ["loss"], to=onnx.TensorProto.FLOAT)]      # the seed is float32
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("target", elem, list(target.shape))],
                          [helper.make_tensor_value_info("loss", onnx.TensorProto.FLOAT, [])],
                          [numpy_helper.from_array(x, "X"), numpy_helper.from_array(grid, "grid")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def grid_values(rng, shape, dtype):
    """Coordinates in [-1.3, 1.3] (inside, outside, both borders), a few exactly on -1, 0 and 1."""
    g = rng.uniform(-1.3, 1.3, shape)
    g.reshape(-1)[:12] = [-1, 1, 0, -1, 1, 0.5, -0.5, 1, -1, 0, 1, -1]
    return g.astype(dtype)


GRID_CASES = list(itertools.product(("bilinear", "nearest"), ("zeros", "border", "reflection"), (False, True), (4, 5)))


@pytest.mark.parametrize("mode,padding,corners,rank", GRID_CASES,
                         ids=[f"{m}-{p}-ac{int(c)}-{r}d" for m, p, c, r in GRID_CASES])
def test_grid_sample_gradients_equal_torch_in_float64(tmp_path, mode, padding, corners, rank):
    rng = np.random.default_rng(rank)
    spatial = (5, 6) if rank == 4 else (3, 4, 5)
    x = rng.standard_normal((2, 3) + spatial)
    grid = grid_values(rng, (2,) + tuple(s + 1 for s in spatial[:-1]) + (3, rank - 2), np.float64)
    target = rng.standard_normal((2, 3) + grid.shape[1:-1])
    model = grid_sample_model(x, grid, target, mode, padding, corners, opset=20 if rank == 5 else 16)
    trains = ["X", "grid"] if mode == "bilinear" else ["X"]       # nearest: no gradient reaches the grid
    _, grads = float64_gradients(model, trains, str(tmp_path), {"target": target, "X": x, "grid": grid})
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    theirs = (F.grid_sample(tx, tg, mode=mode, padding_mode=padding, align_corners=corners) *
              torch.tensor(target)).sum()
    theirs.backward()
    np.testing.assert_allclose(grads["X"], tx.grad.numpy(), rtol=0, atol=1e-12)
    if "grid" in trains:
        np.testing.assert_allclose(grads["grid"], tg.grad.numpy(), rtol=0, atol=1e-10 * np.abs(tg.grad.numpy()).max())
    else:
        assert not tg.grad.numpy().any()


class Sampler(nn.Module):
    """grid_sample at a grid a net computes: a flow field tanh(Conv(x)) (optical flow, deformable sampling;
    exports with dynamic shapes) or, with `affine`, the torch tutorial's spatial transformer (affine_grid, whose
    size the exporter fixes), then a head."""

    def __init__(self, padding, corners, affine=False):
        super().__init__()
        self.loc = nn.Conv2d(3, 4 if affine else 2, 3, padding=1)
        self.fc = nn.Linear(4, 6) if affine else None
        self.head = nn.Conv2d(3, 2, 3, padding=1)
        self.padding, self.corners = padding, corners
        if affine:
            with torch.no_grad():
                self.fc.weight.mul_(0.3)
                self.fc.bias.copy_(torch.tensor([1.1, 0.1, 0.05, -0.1, 0.9, 0.1]))

    def forward(self, x):
        if self.fc is None:
            grid = torch.tanh(self.loc(x)).permute(0, 2, 3, 1) * 1.2
        else:
            theta = self.fc(self.loc(x).mean((2, 3))).view(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=self.corners)
        z = self.head(F.grid_sample(x, grid, padding_mode=self.padding, align_corners=self.corners))
        return (z * z).sum()


@pytest.mark.parametrize("padding,corners,affine", [("zeros", False, False), ("reflection", True, False),
                                                    ("border", True, True)])
def test_grid_sample_nets_train_as_torch(tmp_path, padding, corners, affine):
    torch.manual_seed(0)
    net = Sampler(padding, corners, affine).train()
    run = (3, 3, 16, 14)
    path = export(net, (2, 3, 12, 10) if not affine else run, str(tmp_path / "m.onnx"), dynamic=not affine)
    generate_cpu_artifacts(path, [n for n, _ in net.named_parameters()], str(tmp_path / "a"), loss=None)
    x = np.random.default_rng(0).standard_normal(run).astype(np.float32)
    check_against_torch(net, x, str(tmp_path / "a"), torch.float32)


def test_grid_sample_gradient_is_bitwise_the_same_on_1_and_2_threads(tmp_path):
    """The scatter-add of GatherElementsGrad runs in a fixed order: the same bits on any thread count. (Not so
    onnxruntime's own ConvGrad, whose weight gradient changes in the last bits with the thread count.)"""
    from onnxruntime.training.api import CheckpointState, Module
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 40, 36)).astype(np.float32)
    grid = grid_values(rng, (2, 50, 45, 2), np.float32)
    target = rng.standard_normal((2, 8, 50, 45)).astype(np.float32)
    generate_cpu_artifacts(grid_sample_model(x, grid, target, "bilinear", "reflection", False, 16), ["X", "grid"],
                           str(tmp_path), loss=None, optimizer=None)
    grads = []
    for threads in (1, 2, 2):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
        module = Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"),
                        session_options=options)
        module.train()
        module(target)
        grads.append([state.parameters[n].grad.copy() for n in ("X", "grid")])
    for other in grads[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(grads[0], other))


def test_bicubic_grid_sample_is_refused_in_one_line(tmp_path):
    rng = np.random.default_rng(0)
    model = grid_sample_model(rng.standard_normal((1, 1, 4, 4)), rng.uniform(-1, 1, (1, 2, 2, 2)),
                              rng.standard_normal((1, 1, 2, 2)), "bilinear", "zeros", False, 20)
    for a in model.graph.node[0].attribute:
        if a.name == "mode":
            a.s = b"cubic"
    with pytest.raises(DescError, match="mode='bilinear'") as e:
        generate_cpu_artifacts(model, ["X"], str(tmp_path / "a"), loss=None, optimizer=None)
    assert "cubic" in str(e.value) and not os.path.exists(tmp_path / "a")


# --------------------------------------------------------------------------------------- artifacts and sessions

def test_a_failing_check_leaves_out_dir_as_it_was(tmp_path, monkeypatch):
    """The issue's field case: ConvTransposeGrad left in the graph (the rewrite switched off) fails at Module;
    the DescError names the file and onnxruntime's reason, and out_dir keeps exactly what it held."""
    net, dims = layer_net("conv_transpose2d", torch.float32)
    path = export(net, SHAPE[dims], str(tmp_path / "m.onnx"))
    out = tmp_path / "artifacts"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    monkeypatch.setattr(training, "repair_training_model", lambda model: (model, []))
    with pytest.raises(DescError, match="ConvTransposeGrad") as e:
        generate_cpu_artifacts(path, [n for n, _ in net.named_parameters()], str(out), loss=None)
    assert "training_model.onnx" in str(e.value) and "nothing was written" in str(e.value)
    assert sorted(os.listdir(out)) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["artifacts", "m.onnx", "m.onnx.data"] or \
        sorted(os.listdir(tmp_path)) == ["artifacts", "m.onnx"]


def test_semantics_default_to_the_installed_training_build_and_can_be_overridden(tmp_path):
    assert inspect.signature(generate_cpu_artifacts).parameters["semantics"].default == "installed"
    assert inspect.signature(training.prepare_artifacts).parameters["semantics"].default == "installed"
    net, dims = layer_net("pixel_shuffle", torch.float32)
    path = export(net, SHAPE[dims], str(tmp_path / "m.onnx"))
    params = [n for n, _ in net.named_parameters()]
    assert generate_cpu_artifacts(path, params, str(tmp_path / "a"), loss=None).semantics == installed_semantics()
    assert generate_cpu_artifacts(path, params, str(tmp_path / "b"), loss=None, semantics=None).semantics == \
        installed_semantics()
    assert generate_cpu_artifacts(path, params, str(tmp_path / "c"), loss=None, semantics="onnx-spec").semantics \
        == "onnx-spec"
    with pytest.raises(DescError) as e:
        generate_cpu_artifacts(path, params, str(tmp_path / "d"), loss=None, semantics="ort")
    assert e.value.field == "semantics" and not os.path.exists(tmp_path / "d")


class RunTimeSize(nn.Module):
    """A resize whose gradient takes the run-time-size form (size=x.shape, align_corners), ConvTranspose and
    GroupNorm next to it."""

    def __init__(self):
        super().__init__()
        self.c, self.up, self.gn = nn.Conv2d(3, 4, 3), nn.ConvTranspose2d(4, 4, 2, stride=2), nn.GroupNorm(2, 4)

    def forward(self, x):
        y = F.interpolate(self.gn(self.c(x)), size=x.shape[-2:], mode="bilinear", align_corners=True)
        return self.up(y)


def test_training_sessions_print_no_onnxruntime_warning(tmp_path, capfd):
    torch.manual_seed(0)
    net = RunTimeSize().train()
    dims = {0: torch.export.Dim("n"), 2: torch.export.Dim("h", min=4), 3: torch.export.Dim("w", min=4)}
    path = str(tmp_path / "m.onnx")
    torch.onnx.export(net, (torch.zeros(2, 3, 16, 16),), path, input_names=["x"], output_names=["y"],
                      dynamic_shapes={"x": dims}, opset_version=20, optimize=False)
    report = generate_cpu_artifacts(path, [n for n, _ in net.named_parameters()], str(tmp_path / "a"))
    assert len(report.rewrites) == 1 and report.rewrites[0].dynamic
    capfd.readouterr()
    state, module, optimizer = session(str(tmp_path / "a"))
    x = np.random.default_rng(0).standard_normal((2, 3, 11, 13)).astype(np.float32)
    for _ in range(2):
        module.train()
        module(x, np.zeros((2, 4, 22, 26), np.float32))
        optimizer.step()
        module.lazy_reset_grad()
    module.eval()
    module(x, np.zeros((2, 4, 22, 26), np.float32))
    assert "[W:onnxruntime" not in capfd.readouterr().err
