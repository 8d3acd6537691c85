"""ORT training artifacts for Conv -> Resize: lower training_model.onnx and train on the CPU."""
import os
from importlib.util import find_spec

import numpy as np
import pytest
from onnx import helper, numpy_helper

if find_spec("onnxruntime") is None or find_spec("onnxruntime.training") is None:   # looked up, not imported
    pytest.skip("onnxruntime.training is not installed: only the training build has it (onnxruntime-training-cpu "
                "1.19.2, Python <= 3.12: pip install 'dml-desc[training]'; it has no Python 3.13 wheel, so there "
                "the extra installs plain onnxruntime)", allow_module_level=True)
if find_spec("torch") is None:
    pytest.skip("torch is not installed (the oracle, and onnxruntime.training imports it)", allow_module_level=True)
import onnxruntime.training  # noqa: E402,F401  installed, so it must import: a broken build fails (issue 21)
import torch  # noqa: E402

from dml_desc.errors import DescError  # noqa: E402
from dml_desc.conventions.onnx import installed_semantics  # noqa: E402
from onnx_ops.training import generate_cpu_artifacts  # noqa: E402

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

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
    report = generate_cpu_artifacts(conv_resize(attrs, w), ["W"], str(tmp_path), semantics=INSTALLED)
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


def test_every_generate_artifacts_option_passes_through_and_ort_files_train(tmp_path):
    """AdamW, a frozen parameter, L1Loss by name, an additional output, a prefix and ort_format=True: the .ort
    files are converted from the lowered models (an .ort file cannot be lowered afterwards) and they train."""
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    model = conv_resize(MODES[1][0], w)
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(4, np.float32), "B"))
    model.graph.node[0].input.append("B")
    report = generate_cpu_artifacts(model, ["W"], str(tmp_path), frozen_params=["B"], loss="L1Loss",
                                    optimizer="AdamW", additional_output_names=["y"], prefix="p_", ort_format=True,
                                    semantics=INSTALLED)
    assert [str(r).split(":")[1] for r in report.rewrites] == [" linear; axis 2"] and report.eval_repairs == []
    names = sorted(os.path.basename(f) for f in report.files)
    assert names == sorted(f"p_{m}_model.{e}" for m in ("training", "eval", "optimizer") for e in ("onnx", "ort"))
    state = CheckpointState.load_checkpoint(str(tmp_path / "p_checkpoint"))
    module = Module(str(tmp_path / "p_training_model.ort"), state, str(tmp_path / "p_eval_model.ort"), device="cpu")
    optimizer = Optimizer(str(tmp_path / "p_optimizer_model.ort"), module)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    target = rng.standard_normal((2, 4, 12, 12)).astype(np.float32)
    module.train()
    loss, y = module(x, target)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.interpolate(torch.nn.functional.conv2d(torch.tensor(x), tw, padding=1),
                                         scale_factor=2.0, mode="bilinear", align_corners=False)
    tloss = torch.nn.functional.l1_loss(ty, torch.tensor(target))
    tloss.backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert abs(float(loss) - tloss.item()) < 1e-5
    np.testing.assert_allclose(state.parameters["W"].grad, tw.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert state.parameters["W"].requires_grad and not state.parameters["B"].requires_grad
    optimizer.step()
    module.lazy_reset_grad()
    assert float(module(x, target)[0]) < float(loss)
    module.eval()
    assert float(module(x, target)[0]) < float(loss)


@pytest.mark.parametrize("kwargs,field", [({"loss": "MSE"}, "loss"), ({"optimizer": "Adam"}, "optimizer"),
                                          ({"frozen_params": ["W"]}, "frozen_params"),
                                          ({"requires_grad": ["w"]}, "requires_grad")])
def test_bad_arguments_get_the_projects_error_naming_the_field(tmp_path, kwargs, field):
    w = np.zeros((4, 3, 3, 3), np.float32)
    args = {"requires_grad": ["W"], **kwargs}
    with pytest.raises(DescError) as e:
        generate_cpu_artifacts(conv_resize(MODES[0][0], w), args.pop("requires_grad"), str(tmp_path), **args)
    assert e.value.field == field and not os.listdir(tmp_path)


def test_the_example_script_trains_on_two_sizes_from_one_artifact_set(tmp_path):
    """examples/train_upsample_cpu.py as a user runs it: export with dynamic axes, artifacts, train, eval."""
    pytest.importorskip("onnxscript", reason="onnxscript is not installed: the example uses torch's default "
                        "exporter, which needs it (pip install 'dml-desc[training]')")
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, os.path.join(root, "examples", "train_upsample_cpu.py"), "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    pairs = [(float(a), float(b)) for a, b in re.findall(r"^step \d+: .* loss (\S+) \(torch (\S+)\)$", run.stdout,
                                                          re.M)]
    losses = [p[0] for p in pairs]
    # the example now uses the dynamo exporter, whose BatchNorm has one output: its eval model needs no repair
    # (the legacy exporter's three-output BatchNorm did: "eval model: 1 node(s) repaired"); HardSwish is decomposed
    assert len(losses) == 6 and "eval model: 0 node(s) repaired" in run.stdout and "HardSwish" in run.stdout
    assert losses[4] < losses[2] < losses[0] and losses[5] < losses[3] < losses[1]     # per size, it learns
    np.testing.assert_allclose(losses, [p[1] for p in pairs], rtol=1e-5)            # torch's SGD, step by step
    ours, theirs = (float(v) for v in re.search(r"^eval loss: (\S+) \(torch eval\(\) (\S+)\)", run.stdout,
                                                  re.M).groups())
    assert ours == pytest.approx(theirs, rel=5e-3)      # running_var: biased (onnxruntime) vs unbiased (torch)
    assert "running statistics kept in the checkpoint" in run.stdout


def test_prepare_artifacts_makes_an_existing_folder_train(tmp_path):
    """A folder written by ORT's own generate_artifacts: prepare_artifacts lowers it in place, then it trains."""
    from onnxruntime.training import artifacts
    from onnxruntime.training.api import CheckpointState, Module
    from onnx_ops.training import prepare_artifacts
    with pytest.raises(DescError, match="out_dir=.*training_model.onnx"):
        prepare_artifacts(str(tmp_path), semantics=INSTALLED)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    artifacts.generate_artifacts(conv_resize(MODES[0][0], w), requires_grad=["W"], loss=artifacts.LossType.MSELoss,
                                 artifact_directory=str(tmp_path))
    report = prepare_artifacts(str(tmp_path), semantics=INSTALLED)
    assert [r.mode for r in report.rewrites] == ["nearest"] and len(report.files) == 2      # no optimizer model
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"), device="cpu")
    x, target = rng.standard_normal((2, 3, 6, 6)).astype(np.float32), np.zeros((2, 4, 12, 12), np.float32)
    conv = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    y = np.repeat(np.repeat(conv, 2, 2), 2, 3)                                 # nearest x2
    assert abs(float(module(x, target)) - float(np.mean(y.astype(np.float64) ** 2))) < 1e-5
    assert prepare_artifacts(str(tmp_path),
                             semantics=INSTALLED).rewrites == []                    # idempotent: nothing left to lower


def test_cli_lower_in_place_on_a_training_graph_with_maxpool_grad(tmp_path):
    """ORT writes MaxPoolGrad in the ai.onnx domain, where onnx's checker knows no such op. `dml-desc lower` still
    rewrites the file in place (a failure the input already has is not the lowering's), and the result trains."""
    import subprocess
    import sys
    from onnxruntime.training import artifacts
    from onnxruntime.training.api import CheckpointState, Module
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    model = conv_resize(MODES[1][0], w)
    model.graph.node.insert(1, helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
    model.graph.node[2].input[0] = "p"
    model.graph.output[0].type.tensor_type.shape.dim[2].dim_value = 6
    model.graph.output[0].type.tensor_type.shape.dim[3].dim_value = 6
    artifacts.generate_artifacts(model, requires_grad=["W"], loss=artifacts.LossType.MSELoss,
                                 artifact_directory=str(tmp_path))
    path = str(tmp_path / "training_model.onnx")
    ops = lambda: [n.op_type for n in __import__("onnx").load(path).graph.node]
    assert "MaxPoolGrad" in ops() and "ResizeGrad" in ops()
    done = subprocess.run([sys.executable, "-m", "dml_desc.cli", "lower", path, "-o", path], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "1 ResizeGrad node(s) rewritten" in done.stdout
    assert "MaxPoolGrad" in ops() and "ResizeGrad" not in ops()
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(path, state, device="cpu")
    x, target = rng.standard_normal((2, 3, 6, 6)).astype(np.float32), np.zeros((2, 4, 6, 6), np.float32)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.interpolate(torch.nn.functional.max_pool2d(
        torch.nn.functional.conv2d(torch.tensor(x), tw, padding=1), 2), scale_factor=2.0, mode="bilinear")
    tloss = torch.nn.functional.mse_loss(ty, torch.tensor(target))
    tloss.backward()
    assert abs(float(module(x, target)) - tloss.item()) < 1e-5
    np.testing.assert_allclose(state.parameters["W"].grad, tw.grad.numpy(), rtol=1e-4, atol=1e-6)


ACTIVATIONS = [("HardSwish", {}, lambda v: torch.nn.functional.hardswish(v)),
               ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, lambda v: torch.nn.functional.hardsigmoid(v)),
               ("Softplus", {}, lambda v: torch.nn.functional.softplus(v)),
               ("Mish", {}, lambda v: torch.nn.functional.mish(v)),
               ("Elu", {"alpha": 1.0}, lambda v: torch.nn.functional.elu(v)),
               ("Selu", {}, lambda v: torch.nn.functional.selu(v)),
               ("Celu", {"alpha": 1.0}, lambda v: torch.nn.functional.celu(v)),
               ("Softsign", {}, lambda v: torch.nn.functional.softsign(v)),
               ("Sign", {}, lambda v: torch.sign(v) + 0.0 * v)]     # a zero gradient, as torch's


@pytest.mark.parametrize("op,attrs,reference", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_ops_without_gradients_are_decomposed_and_train_as_torch(tmp_path, op, attrs, reference):
    """onnxruntime-training 1.19.2 has no gradient for these: the artifacts get the decomposition, reported,
    and the gradient equals torch autograd's."""
    from onnxruntime.training.api import CheckpointState, Module
    rng = np.random.default_rng(4)
    w = rng.uniform(-4, 4, (3, 5)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Mul", ["x", "W"], ["a"]), helper.make_node(op, ["a"], ["y"], **attrs)],
                          "m", [helper.make_tensor_value_info("x", 1, ["N", 3, 5])],
                          [helper.make_tensor_value_info("y", 1, ["N", 3, 5])], [numpy_helper.from_array(w, "W")])
    report = generate_cpu_artifacts(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8),
                                    ["W"], str(tmp_path), optimizer=None, semantics=INSTALLED)
    assert len(report.decompositions) == 1 and op in report.decompositions[0] and op in str(report)
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(str(tmp_path / "training_model.onnx"), state, device="cpu")
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    target = rng.standard_normal((4, 3, 5)).astype(np.float32)
    loss = float(module(x, target))
    tw = torch.tensor(w, requires_grad=True)
    tloss = torch.nn.functional.mse_loss(reference(torch.tensor(x) * tw), torch.tensor(target))
    tloss.backward()
    assert loss == pytest.approx(tloss.item(), rel=1e-6)
    np.testing.assert_allclose(state.parameters["W"].grad, tw.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_an_op_without_gradient_or_decomposition_is_named_in_one_line(tmp_path):
    w = np.ones((2, 3, 4, 4), np.float32)
    g = helper.make_graph([helper.make_node("Mul", ["x", "W"], ["a"]),
                           helper.make_node("GlobalMaxPool", ["a"], ["y"], name="gmp")], "m",
                          [helper.make_tensor_value_info("x", 1, [2, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", 1, [2, 3, 1, 1])], [numpy_helper.from_array(w, "W")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(DescError) as e:
        generate_cpu_artifacts(model, ["W"], str(tmp_path), semantics=INSTALLED)
    assert str(e.value).startswith("node gmp='GlobalMaxPool': has no gradient") and "\n" not in str(e.value)
    assert len(str(e.value)) < 240


def test_cli_lower_repairs_a_symbolic_training_graph_and_its_eval_model_so_both_run(tmp_path):
    """Issue 23: `dml-desc lower` on ORT's own artifacts (symbolic batch and size, MaxPool, BatchNorm) once exited
    0 and the first step crashed (segmentation fault), and the eval model did not load. It now does
    prepare_artifacts's repairs; the step runs in a child process, so a crash fails the test, not the run."""
    import subprocess
    import sys
    from onnxruntime.training import artifacts
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    stats = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in
             (("s", rng.uniform(0.5, 1.5, 4)), ("b", rng.standard_normal(4)), ("m", np.zeros(4)), ("v", np.ones(4)))]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n", "rm", "rv"],
                              training_mode=1),          # as torch's training export writes it
             helper.make_node("MaxPool", ["n"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Resize", ["p", "", "scales"], ["y"], mode="linear")]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", 1, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", 1, ["N", 4, "H2", "W2"])],
                          [numpy_helper.from_array(w, "W"), *stats,
                           numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    artifacts.generate_artifacts(model, requires_grad=["W", "s", "b"], frozen_params=["m", "v"],
                                 loss=artifacts.LossType.MSELoss, artifact_directory=str(tmp_path))
    for name in ("training_model.onnx", "eval_model.onnx"):
        path = str(tmp_path / name)
        done = subprocess.run([sys.executable, "-m", "dml_desc.cli", "lower", path, "-o", path], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        assert ("repaired: " in done.stdout) and (("MaxPoolGrad" in done.stdout) == (name == "training_model.onnx"))
    step = ("import numpy as np, sys\nfrom onnxruntime.training.api import CheckpointState, Module\n"
            f"d = {str(tmp_path)!r}\nstate = CheckpointState.load_checkpoint(d + '/checkpoint')\n"
            "m = Module(d + '/training_model.onnx', state, d + '/eval_model.onnx', device='cpu')\n"
            "x = np.load(d + '/x.npy'); t = np.load(d + '/t.npy')\nm.train(); print(float(m(x, t)))\n"
            "np.save(d + '/grad.npy', state.parameters['W'].grad); m.eval(); print(float(m(x, t)))\n"
            "np.save(d + '/stats.npy', np.stack([state.parameters[k].data for k in 'mv']))\n")
    x = rng.standard_normal((3, 3, 10, 6)).astype(np.float32)
    target = rng.standard_normal((3, 4, 10, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", target)
    run = subprocess.run([sys.executable, "-c", step], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-1500:]
    train_loss, eval_loss = (float(v) for v in run.stdout.split())
    tw = torch.tensor(w, requires_grad=True)
    s, b = (torch.tensor(numpy_helper.to_array(t)) for t in stats[:2])
    c = torch.nn.functional.conv2d(torch.tensor(x), tw, padding=1)
    mean, var = torch.tensor(np.load(tmp_path / "stats.npy"))      # what the eval model reads from the state
    for training_mode, expect in ((True, train_loss), (False, eval_loss)):
        n = torch.nn.functional.batch_norm(c, mean.clone() if training_mode else mean, var.clone() if
                                           training_mode else var, s, b, training=training_mode)
        y = torch.nn.functional.interpolate(torch.nn.functional.max_pool2d(n, 2), scale_factor=2.0, mode="bilinear")
        tloss = torch.nn.functional.mse_loss(y, torch.tensor(target))
        assert abs(tloss.item() - expect) < 1e-5 * max(1, abs(expect))
        if training_mode:
            tloss.backward()
    np.testing.assert_allclose(np.load(tmp_path / "grad.npy"), tw.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("options", [None, {"betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}],
                         ids=["torch-defaults", "changed"])
def test_torch_adamw_matches_torch_optim_adamw_over_several_steps(tmp_path, options):
    """optimizer="TorchAdamW" is torch.optim.AdamW (adam_mode 0, eps 1e-8, weight decay 1e-2 unless changed)."""
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    generate_cpu_artifacts(conv_resize(MODES[1][0], w), ["W"], str(tmp_path), optimizer="TorchAdamW", adamw=options,
                           semantics=INSTALLED)
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(str(tmp_path / "training_model.onnx"), state, device="cpu")
    optimizer = Optimizer(str(tmp_path / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(0.01)
    tw = torch.tensor(w, requires_grad=True)
    topt = torch.optim.AdamW([tw], lr=0.01, **(options or {}))
    for _ in range(4):
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        target = rng.standard_normal((2, 4, 12, 12)).astype(np.float32)
        module.train()
        loss = float(module(x, target))
        optimizer.step()
        module.lazy_reset_grad()
        topt.zero_grad()
        tloss = torch.nn.functional.mse_loss(torch.nn.functional.interpolate(torch.nn.functional.conv2d(
            torch.tensor(x), tw, padding=1), scale_factor=2.0, mode="bilinear"), torch.tensor(target))
        tloss.backward()
        topt.step()
        assert loss == pytest.approx(tloss.item(), rel=1e-5)
    np.testing.assert_allclose(state.parameters["W"].data, tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(state.parameters["W"].data - w).max() > 0.02          # it moved: 4 steps of ~lr each
    with pytest.raises(DescError, match='adamw=.*TorchAdamW" only'):
        generate_cpu_artifacts(conv_resize(MODES[1][0], w), ["W"], str(tmp_path / "x"), adamw={"eps": 1e-8},
                               semantics=INSTALLED)


def test_batchnorm_statistics_left_as_constants_are_named_under_attention(tmp_path):
    """A folder from onnxruntime's own generate_artifacts, without the running statistics in frozen_params:
    they are constants of the training graph and never update, and prepare_artifacts says so."""
    from onnxruntime.training import artifacts
    from onnx_ops.training import prepare_artifacts
    stats = [numpy_helper.from_array(np.full(4, v, np.float32), n) for n, v in (("s", 1), ("b", 0), ("m", 0),
                                                                                  ("v", 1))]
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["c"]),
                           helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])], "m",
                          [helper.make_tensor_value_info("x", 1, [2, 3, 5, 5])],
                          [helper.make_tensor_value_info("y", 1, [2, 4, 3, 3])],
                          [numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "W"), *stats])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "ort").mkdir()
    artifacts.generate_artifacts(model, requires_grad=["W"], loss=artifacts.LossType.MSELoss,
                                 artifact_directory=str(tmp_path / "ort"))
    (note,) = prepare_artifacts(str(tmp_path / "ort"), semantics=INSTALLED).attention
    assert "['m', 'v'] are constants of the training graph" in note and "frozen_params" in note
    report = generate_cpu_artifacts(model, ["W"], str(tmp_path / "ours"),
                                    semantics=INSTALLED)          # ours adds them by default
    assert report.statistics == ["m", "v"] and report.attention == []


def test_artifacts_stamped_by_a_newer_onnx_are_restamped_and_load(tmp_path):
    """With onnx >= 1.18 onnxruntime's builder stamps IR 11+ (the issue saw IR 14 on optimizer_model.onnx), which
    onnxruntime-training 1.19.2 refuses. prepare_artifacts restamps IR 10 where no newer type or field is used;
    the .ort forms are converted from the restamped files."""
    import onnx
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    from onnx_ops.training import prepare_artifacts
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    generate_cpu_artifacts(conv_resize(MODES[0][0], w), ["W"], str(tmp_path), semantics=INSTALLED)
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        model = onnx.load(str(tmp_path / name))
        model.ir_version = 14
        onnx.save(model, str(tmp_path / name))
    with pytest.raises(Exception, match="Unsupported model IR version: 14"):
        Module(str(tmp_path / "training_model.onnx"), CheckpointState.load_checkpoint(str(tmp_path / "checkpoint")))
    report = prepare_artifacts(str(tmp_path), semantics=INSTALLED)
    assert sorted(r.split(":")[0] for r in report.restamped) == ["eval_model.onnx", "optimizer_model.onnx",
                                                                 "training_model.onnx"]
    assert all("IR 14 -> 10" in r for r in report.restamped)
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"))
    optimizer = Optimizer(str(tmp_path / "optimizer_model.onnx"), module)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    target = np.zeros((2, 4, 12, 12), np.float32)
    module.train()
    first = float(module(x, target))
    optimizer.step()
    module.lazy_reset_grad()
    assert float(module(x, target)) < first
