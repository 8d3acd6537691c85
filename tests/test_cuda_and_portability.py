"""CUDA (skips cleanly without it) and portability of the lowered graph to an independent runtime."""
import numpy as np
import onnxruntime as ort
import pytest

from conformance.reference import resize_grad
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from dml_desc.conventions.onnx import installed_semantics
from onnx_ops import build_resize_grad, lower

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

HAS_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()


@pytest.mark.skipif(not HAS_CUDA, reason="CUDAExecutionProvider is not available: this is the CPU build "
                    "(onnxruntime-training-cpu); install onnxruntime-training (CUDA 11.8) to run these")
def test_cuda_native_and_lowered_match_the_reference():
    from conformance.suite import cuda_checks, run_check
    records = [run_check(c) for c in cuda_checks()]        # the native kernel skips on onnxruntime-gpu (no training)
    assert any(r.status == "pass" for r in records) and not [r for r in records if r.status == "fail"], records


@pytest.mark.parametrize("attrs,dims", [({"mode": "linear"}, [2, 3, 4, 6, 8]), ({"mode": "linear"}, [2, 3, 1, 6, 8]),
                                        ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
                                         ["N", 2, "D", "H", "W"]), ({"mode": "linear"}, [1, "C", 5, "H", "W"])])
def test_no_five_d_antialiased_resize_which_cuda_computes_wrong(attrs, dims):
    """onnxruntime-gpu 1.31.1's CUDA provider put the 5-D antialiased Resize form 2.1 x dY's scale off the reference
    on an H100 (docs/cuda.md): no lowering emits it, static or shape-generic, and the gradient stays exact."""
    shape = [d if isinstance(d, int) else 4 for d in dims]
    scales = [1.0, 1.0] + [2.0 if d != 1 else 1.0 for d in dims[2:]]
    model = build_resize_grad(OnnxResize(shape, attrs, scales=scales, opset=19, op_type="ResizeGrad"))
    for v in list(model.graph.input) + list(model.graph.output):
        for d, want in zip(v.type.tensor_type.shape.dim, dims):
            if not isinstance(want, int):
                d.dim_param = f"{v.name}_{want}"
    lowered, _ = lower(model, semantics=INSTALLED)
    assert not [n for n in lowered.graph.node if n.op_type == "Resize"
                and any(a.name == "antialias" and a.i for a in n.attribute)]
    res = to_canonical(OnnxResize(shape, attrs, scales=scales, opset=19, op_type="ResizeGrad"), semantics=INSTALLED)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    got = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
    np.testing.assert_allclose(got, resize_grad(dy, res), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs,scales,keep", [
    ({"mode": "linear"}, [1, 1, 2, 2], True),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 1, 1.5, 2], True),
    ({"mode": "nearest"}, [1, 1, 2, 2], False),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.5], False),
    ({"mode": "linear"}, [1, 1, 2, 2, 2], False),
])
def test_lowering_keeps_only_what_the_cuda_kernel_supports(attrs, scales, keep):
    shape = [1, 2] + [6] * (len(scales) - 2)
    model = build_resize_grad(OnnxResize(shape, attrs, scales=scales, op_type="ResizeGrad"))
    lowered, report = lower(model, providers=("CUDAExecutionProvider", "CPUExecutionProvider"), semantics=INSTALLED)
    assert report[0].kept_native is keep
    assert any(n.op_type == "ResizeGrad" for n in lowered.graph.node) is keep


@pytest.mark.parametrize("attrs,scales", [({"mode": "linear"}, [1, 1, 2, 2]), ({"mode": "nearest"}, [1, 1, 0.5, 1.5]),
                                          ({"mode": "cubic"}, [1, 1, 1.5, 0.75])])
def test_lowered_graph_runs_on_onnx_reference_evaluator(attrs, scales):
    """Only standard ai.onnx ops remain: onnx's own Python runtime executes the lowered graph."""
    from onnx.reference import ReferenceEvaluator
    r = OnnxResize([1, 2, 6, 8], attrs, scales=scales, op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    model = build_resize_grad(r, lowered=True, semantics=INSTALLED)
    assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    got = ReferenceEvaluator(model).run(None, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    np.testing.assert_allclose(got, resize_grad(dy.astype(np.float64), res), rtol=1e-5, atol=1e-5)
