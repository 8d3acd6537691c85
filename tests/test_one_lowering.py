"""One lowering (issue 21): what `dml-desc build --lowered` writes, what the conformance suite's onnxruntime
checks run (onnx_ops.build.build_lowered) and what `lower` makes of build_resize_grad's node are the same model,
and it is the transpose of onnxruntime's own forward Resize, entry by entry."""
import json

import numpy as np
import pytest

from conformance.onnx_cases import case_to_resize, onnx_resize_cases
from dml_desc import DescError, conventions
from dml_desc.cli import main as dml_desc_main
from dml_desc.conventions.onnx import to_canonical
from onnx_ops import build_resize, build_resize_grad, lower, run_model
from onnx_ops.build import build_gradient, build_lowered
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

CASES = onnx_resize_cases()


def grad_case(case):
    r = case_to_resize(case)
    r.op_type = "ResizeGrad"
    return r


def cli_build_lowered(tmp_path, capsys, description: dict, dtype: str = "f32") -> bytes:
    """The bytes `dml-desc build FILE --lowered` writes for a description."""
    src, out = tmp_path / "map.json", tmp_path / "lowered.onnx"
    src.write_text(json.dumps(description))
    code = dml_desc_main(["build", str(src), "-o", str(out), "--lowered", "--dtype", dtype])
    assert code == 0, capsys.readouterr().err
    return out.read_bytes()


def used_initializers(model) -> list:
    """The initializers some node reads (lower keeps the replaced node's roi / scales, unread)."""
    read = {i for n in model.graph.node for i in n.input}
    return [t for t in model.graph.initializer if t.name in read]


def transpose_of_forward(model, r, res) -> None:
    """dX of every dY basis vector equals onnxruntime's Resize of every X basis vector, transposed."""
    fwd = case_to_resize_forward(r)
    n_in, n_out = int(np.prod(res.in_shape)), int(np.prod(res.out_shape))
    a = np.stack([run_model(fwd, {"X": e.reshape(res.in_shape)})[0].ravel()
                  for e in np.eye(n_in, dtype=np.float32)], axis=1)                      # A[o, i]
    x = np.zeros(res.in_shape, np.float32)
    g = np.stack([run_model(model, {"dY": e.reshape(res.out_shape), "X": x})[0].ravel()
                  for e in np.eye(n_out, dtype=np.float32)], axis=0)                     # G[o, i] = dX_i(e_o)
    np.testing.assert_allclose(g, a, rtol=1e-6, atol=1e-6)


def case_to_resize_forward(r):
    fwd = type(r)(list(r.input_shape), dict(r.attributes), r.roi, r.scales, r.sizes, opset=r.opset)
    fwd.attributes.pop("extrapolation_value", None)      # a constant fill is not part of the linear map
    return build_resize(fwd, semantics=INSTALLED)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cli_suite_and_lower_write_one_model(case, tmp_path, capsys):
    r = grad_case(case)
    res = to_canonical(r, semantics=INSTALLED)
    suite = build_lowered(res, np.float32)                 # the conformance suite's ort-cpu-lowered model
    written = cli_build_lowered(tmp_path, capsys, conventions.dump("onnx", res, semantics=INSTALLED)[0])
    assert written == suite.SerializeToString()            # the CLI writes the model the suite checks
    # the onnxruntime backend's
    assert build_resize_grad(r, lowered=True, semantics=INSTALLED).SerializeToString() == written
    # `dml-desc run`'s
    assert build_gradient(res, lowered=True, semantics=INSTALLED)[0].SerializeToString() == written
    try:
        # `dml-desc lower` of the ResizeGrad model
        by_lower = lower(build_resize_grad(r, semantics=INSTALLED), semantics=INSTALLED).model
    except DescError as e:          # a node without sizes whose shapes two aspect-preserving scales explain
        assert r.attr("keep_aspect_ratio_policy", "stretch") != "stretch" and "two scales" in str(e), e
    else:
        assert list(by_lower.graph.node) == list(suite.graph.node)
        assert used_initializers(by_lower) == list(suite.graph.initializer)
    transpose_of_forward(suite, r, res)


def test_the_cli_builds_maps_onnx_cannot_spell_as_the_suite_does(tmp_path, capsys):
    """A torch map ONNX has no Resize spelling for, in float16 too: the CLI writes the suite's model."""
    description = {"input_shape": [1, 2, 5, 7], "mode": "bicubic", "scale_factor": [1.7, 0.6],
                   "align_corners": False, "recompute_scale_factor": False}
    res, _ = conventions.load("torch", description)
    assert "no ONNX Resize spelling" in build_gradient(res, lowered=True, semantics=INSTALLED)[1][0]
    for dtype, np_dtype in (("f32", np.float32), ("f16", np.float16)):
        written = cli_build_lowered(tmp_path, capsys, description, dtype)
        assert written == build_lowered(res, np_dtype).SerializeToString()
