"""Issue 32: the coverage table of docs/training.md (every op torch's default exporter writes for the common
torch.nn vision layers, and what happens to it) regenerated and each layer trained one step against torch;
SpaceToDepth and DCR DepthToSpace against their definitions; refusals that name the torch module; external data
read by the project's own checked reader."""
import difflib
import os
import time
from importlib.util import find_spec

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from dml_desc.errors import DescError
from onnx_ops.training import inputs as training_input

TRAINING = find_spec("onnxruntime") is not None and find_spec("onnxruntime.training") is not None
needs_training = pytest.mark.skipif(not TRAINING, reason="onnxruntime.training is not installed: only the training "
                                    "build has it (onnxruntime-training-cpu 1.19.2, Python <= 3.12)")
needs_torch = pytest.mark.skipif(find_spec("torch") is None, reason="torch is not installed (the oracle)")
needs_exporter = pytest.mark.skipif(find_spec("onnxscript") is None,
                                    reason="onnxscript is not installed: torch's default exporter needs it")


# ------------------------------------------------------------------------------------------- the coverage table

@needs_training
@needs_torch
@needs_exporter
def test_the_coverage_table_is_what_the_layers_do_and_each_trains_as_torch():
    """Export, classify, train every layer one step against torch autograd (training_coverage.train_row asserts),
    and compare with the table in docs/training.md."""
    from onnx_ops.training import coverage as training_coverage
    start = time.perf_counter()
    results = training_coverage.survey(train=True)
    seconds = time.perf_counter() - start
    found, documented = training_coverage.table(results), training_coverage.documented()
    changed = [line for line in difflib.unified_diff(documented.splitlines(), found.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert found == documented, "docs/training.md's coverage table is out of date: run `python -m " \
        "onnx_ops.training.coverage --write`; documented (-) and found (+):\n" + "\n".join(changed)
    refused = [r for r in results if r["refused"]]
    assert {r["layer"] for r in refused} == {"AvgPool2d (ceil_mode=True)", "AdaptiveMaxPool2d(1)",
                                             "grid_sample nearest (flow field)", "grid_sample bicubic (flow field)"}
    for r in refused:              # the torch module, by its path and class, and what to do
        assert "torch module rows." in r["refused"] and f"({r['class']}, aten." in r["refused"], r
        assert any(w in r["refused"] for w in ("use ", "frozen_params", "export with static shapes")), r
    print(f"coverage survey with training: {seconds:.1f} s")


# --------------------------------------------------------------------------------- SpaceToDepth / DepthToSpace

def space_to_depth(x, k):
    """ONNX SpaceToDepth's definition: output channel (i*k + j)*C + c."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // k, k, w // k, k).permute(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * k * k, h // k, w // k)


def depth_to_space_dcr(x, k):
    """ONNX DepthToSpace mode DCR's definition: input channel (i*k + j)*C' + c."""
    n, c, h, w = x.shape
    y = x.reshape(n, k, k, c // (k * k), h, w).permute(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (k * k), h * k, w * k)


def rearrange_model(op, attrs, shape, out_shape, dynamic):
    """loss = sum(Op(x * w) * target), w a per-channel parameter; x and target inputs, static or symbolic dims."""
    x_dims = ["n", shape[1], "h", "w"] if dynamic else list(shape)
    t_dims = ["n", out_shape[1], "ho", "wo"] if dynamic else list(out_shape)
    w = np.linspace(0.5, 1.5, shape[1], dtype=np.float32).reshape(1, -1, 1, 1)
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node(op, ["xw"], ["y"], **attrs),
             helper.make_node("Mul", ["y", "target"], ["p"]), helper.make_node("ReduceSum", ["p"], ["loss"],
                                                                                keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_dims),
                                           helper.make_tensor_value_info("target", onnx.TensorProto.FLOAT, t_dims)],
                              [helper.make_tensor_value_info("loss", onnx.TensorProto.FLOAT, [])],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), w


REARRANGE = [("SpaceToDepth", {"blocksize": 2}, (2, 3, 8, 6), space_to_depth),
             ("DepthToSpace", {"blocksize": 2, "mode": "DCR"}, (2, 12, 3, 5), depth_to_space_dcr),
             ("SpaceToDepth", {"blocksize": 3}, (1, 2, 9, 6), space_to_depth),
             ("DepthToSpace", {"blocksize": 3, "mode": "DCR"}, (1, 18, 2, 3), depth_to_space_dcr)]


@needs_training
@needs_torch
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("op,attrs,shape,define", REARRANGE, ids=[f"{r[0]}-k{r[1]['blocksize']}" for r in REARRANGE])
def test_space_to_depth_and_dcr_depth_to_space_train_as_their_definition(tmp_path, op, attrs, shape, define,
                                                                         dynamic):
    """float32, one step through Module: the loss and the gradient of w equal torch autograd of the op's own
    definition (a permutation: any wrong index changes both); dynamic models run at another size."""
    import torch
    from onnxruntime.training.api import CheckpointState, Module
    from onnx_ops.training import generate_cpu_artifacts
    k = attrs["blocksize"]
    run = shape if not dynamic else (shape[0] + 1, shape[1], shape[2] + (k if op == "DepthToSpace" else 2 * k),
                                     shape[3] + k)
    out = tuple(define(torch.zeros(run), k).shape)
    model, w = rearrange_model(op, attrs, shape, tuple(define(torch.zeros(shape), k).shape), dynamic)
    report = generate_cpu_artifacts(model, ["w"], str(tmp_path), loss=None, optimizer=None)
    assert any(op in d for d in report.decompositions), report.decompositions
    rng = np.random.default_rng(k)
    x, target = rng.standard_normal(run).astype(np.float32), rng.standard_normal(out).astype(np.float32)
    state = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = Module(str(tmp_path / "training_model.onnx"), state, device="cpu")
    module.train()
    loss = float(module(x, target))
    tw = torch.tensor(w, requires_grad=True)
    theirs = (define(torch.tensor(x) * tw, k) * torch.tensor(target)).sum()
    theirs.backward()
    assert loss == pytest.approx(theirs.item(), rel=1e-5, abs=1e-5)
    np.testing.assert_allclose(state.parameters["w"].grad, tw.grad.numpy(), rtol=0,
                               atol=1e-5 * np.abs(tw.grad.numpy()).max())


# --------------------------------------------------------------------------- nearest grid_sample and refusals

def nearest_grid_model(rng):
    """loss = sum(GridSample(X, tanh(theta), nearest) * target): theta reaches the loss only through the grid."""
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    theta = rng.standard_normal((1, 4, 3, 2)).astype(np.float32)
    nodes = [helper.make_node("Tanh", ["theta"], ["grid"]),
             helper.make_node("GridSample", ["X", "grid"], ["y"], mode="nearest", name="sampler"),
             helper.make_node("Mul", ["y", "target"], ["p"]), helper.make_node("ReduceSum", ["p"], ["loss"],
                                                                                keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("target", onnx.TensorProto.FLOAT,
                                                                         [1, 2, 4, 3])],
                              [helper.make_tensor_value_info("loss", onnx.TensorProto.FLOAT, [])],
                              [numpy_helper.from_array(x, "X"), numpy_helper.from_array(theta, "theta")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9), x, theta


@needs_training
@needs_torch
def test_a_parameter_reaching_the_loss_only_through_a_nearest_grid_is_refused_and_trains_frozen(tmp_path):
    """torch gives it a zero gradient; onnxruntime cannot build one ("Cannot compute the partial derivative"): a
    one-line DescError naming the parameter, the nearest grid_sample and what to do; frozen, X trains as torch."""
    import torch
    from torch.nn import functional as F
    from onnxruntime.training.api import CheckpointState, Module
    from onnx_ops.training import generate_cpu_artifacts
    model, x, theta = nearest_grid_model(np.random.default_rng(0))
    with pytest.raises(DescError) as e:
        generate_cpu_artifacts(model, ["X", "theta"], str(tmp_path / "a"), loss=None, optimizer=None)
    assert e.value.field == "requires_grad" and e.value.value == "theta"
    assert "nearest grid_sample node sampler" in str(e.value) and "frozen_params" in str(e.value)
    assert "\n" not in str(e.value) and not os.path.exists(tmp_path / "a")
    generate_cpu_artifacts(model, ["X"], str(tmp_path / "b"), frozen_params=["theta"], loss=None, optimizer=None)
    target = np.random.default_rng(1).standard_normal((1, 2, 4, 3)).astype(np.float32)
    state = CheckpointState.load_checkpoint(str(tmp_path / "b" / "checkpoint"))
    module = Module(str(tmp_path / "b" / "training_model.onnx"), state, device="cpu")
    module.train()
    module(target)
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(theta, requires_grad=True)
    (F.grid_sample(tx, tt.tanh(), mode="nearest", align_corners=False) * torch.tensor(target)).sum().backward()
    np.testing.assert_array_equal(state.parameters["X"].grad, tx.grad.numpy())   # sums of exact terms
    assert not tt.grad.numpy().any()                                             # torch: zero, as refused


# ------------------------------------------------------------------------------------ external data, checked

def sparse_constant_model(location):
    """A Constant whose sparse_value's values are external data at `location`."""
    values = numpy_helper.from_array(np.zeros(2, np.float32), "values")
    values.ClearField("raw_data")
    values.data_location = onnx.TensorProto.EXTERNAL
    values.external_data.add(key="location", value=location)
    values.external_data.add(key="length", value="8")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([0, 3], np.int64), "idx"), [4])
    nodes = [helper.make_node("Constant", [], ["c"], sparse_value=sparse), helper.make_node("Add", ["x", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_with_external_data_reads_sparse_constants_by_the_checked_reader(tmp_path):
    (tmp_path / "data.bin").write_bytes(np.array([1.5, -2.0], np.float32).tobytes())
    loaded = training_input.with_external_data(sparse_constant_model("data.bin"), str(tmp_path))
    values = loaded.graph.node[0].attribute[0].sparse_tensor.values
    assert values.data_location == onnx.TensorProto.DEFAULT
    np.testing.assert_array_equal(numpy_helper.to_array(values), [1.5, -2.0])
    with pytest.raises(DescError, match="pass the model's path"):          # a ModelProto cannot say where
        training_input.with_external_data(sparse_constant_model("data.bin"), None)


@pytest.mark.parametrize("where", ["absolute", "fifo"])
def test_with_external_data_refuses_a_sparse_constant_outside_the_folder_or_not_a_file(tmp_path, where):
    """onnx's loader skipped sparse tensors (onnxruntime would then read them relative to the working folder):
    an absolute path or a FIFO is a DescError naming the tensor, and nothing is read or waited on."""
    if where == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this system")
        os.mkfifo(tmp_path / "pipe")
        location, rule = "pipe", "regular file"
    else:
        (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
        location, rule = str(tmp_path / "secret.bin"), "relative path"
    with pytest.raises(DescError, match=rule) as e:
        training_input.with_external_data(sparse_constant_model(location), str(tmp_path / "model_folder")
                                          if where == "absolute" else str(tmp_path))
    assert "sparse_value" in e.value.field or "sparse" in str(e.value) or "node" in e.value.field, e.value.field
