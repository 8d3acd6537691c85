"""Shape-generic forms (onnx_ops.lowering.generic_forms): constant integer scales with symbolic dims lower to one graph
for every length. Oracles: dml_desc's reference gradient, the form's own matrix against the shared taps on lengths
outside the proof family, and onnxruntime's forward Resize (the adjoint identity <Resize(x), dY> = <x, dX>).
Real onnxruntime sessions and onnx's checker; bitwise determinism across thread counts."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conformance.reference import resize_grad
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from dml_desc.conventions.onnx import installed_semantics
from onnx_ops import lower
from onnx_ops.forms.filter_conv import emitted
from onnx_ops.lowering.generic_forms import FAMILY, proven_axis_form, proven_same, resize_grad_taps
from onnx_ops.model import graphs
from onnx_ops.run import session
from tests.helpers_dynamic import GENERAL_PATH_OPS

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE
NP = {F32: np.float32, F16: np.float16, F64: np.float64}


def key(attrs):
    return tuple(sorted((k, str(v)) for k, v in attrs.items()))


def grad_model(attrs, x_dims, scales, opset=19, elem=F32):
    """dX = ResizeGrad(dY, X, "", scales) with X's dims (strings symbolic) and constant scales."""
    dy_dims = [d if isinstance(d, int) and s == 1 else f"{d}_out" if isinstance(d, str) else int(d * s)
               for d, s in zip(x_dims, scales)]
    nodes = [helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", name="rg",
                              **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("dY", elem, dy_dims),
                                           helper.make_tensor_value_info("X", elem, x_dims)],
                              [helper.make_tensor_value_info("dX", elem, x_dims)],
                              [numpy_helper.from_array(np.asarray(scales, np.float32), "scales")])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", opset),
                                                                 helper.make_opsetid("com.microsoft", 1)])


def reference(attrs, shape, scales, dy):
    res = to_canonical(OnnxResize(list(shape), attrs, scales=list(scales), opset=19), semantics=INSTALLED)
    return resize_grad(dy.astype(np.float64), res)


def run(lowered, shape, scales, elem=F32, threads=0, seed=0):
    dy_shape = [int(n * s) for n, s in zip(shape, scales)]
    dy = np.random.default_rng(seed).standard_normal(dy_shape).astype(NP[elem])
    x = np.zeros(shape, NP[elem])
    return dy, session(lowered, threads=threads).run(None, {"dY": dy, "X": x})[0]


NEAREST = {"mode": "nearest"}
LINEAR = {"mode": "linear"}
CASES = [  # (attrs, X dims, scales, opset, the form's name starts with)
    (NEAREST, ["N", 3, "H", "W"], [1, 1, 2, 2], 17, "generic kron-pairs"),       # rows of 32, else the pool
    (NEAREST, ["N", 8, "H", "W"], [1, 1, 2, 2], 17, "generic kron-pairs"),        # rows of 32, AveragePool
    (NEAREST, ["N", 8, "H", "W"], [1, 1, 2, 2], 19, "generic kron-pairs"),        # Split + Add, as static
    (NEAREST, ["N", "C", "H", "W"], [1, 1, 2, 2], 19, "generic kron-pairs"),      # C symbolic: rows of 4
    (NEAREST, ["N", 16, "D", "H", "W"], [1, 1, 2, 2, 2], 20, "generic kron-pairs"),
    (dict(NEAREST, coordinate_transformation_mode="asymmetric", nearest_mode="floor"), ["N", 5, "H", "W"],
     [1, 1, 2, 2], 20, "generic kron-pairs"),                                     # torch's export, odd C
    (NEAREST, ["N", 3, "H", "W"], [1, 1, 2, 2], 19, "generic kron-pairs"),
    (NEAREST, ["N", 3, "H", "W"], [1, 1, 3, 3], 19, "generic kron-pairs"),       # x3: faster than conv(ones)
    (NEAREST, ["N", "C", "H", "W"], [1, 1, 3, 3], 19, "generic kron-pairs"),      # and than the block sum
    (NEAREST, ["N", "C", "D", "H", "W"], [1, 1, 2, 2, 2], 17, "generic avgpool x2"),
    (NEAREST, ["N", 3, "H", "W"], [1, 1, 3, 2], 17, "generic kron-pairs"),
    (NEAREST, ["N", "C", "H", "W"], [1, 1, 3, 2], 17, "generic kron-pairs"),
    (dict(NEAREST, coordinate_transformation_mode="asymmetric", nearest_mode="floor"), ["N", "L"], [1, 4], 19,
     "generic kron-pairs"),
    (NEAREST, ["N", "C", "H", "W"], [1, 1, 3, 1], 19, "generic block-sum x3"),    # H only: no MatMul pass
    (dict(NEAREST, coordinate_transformation_mode="asymmetric"), [2, "H", "W"], [1, 2, 1], 13, "generic block-sum"),
    (LINEAR, ["N", 8, "H", "W"], [1, 1, 2, 2], 17, "generic conv x2 (zero pad 1+1, edge rows scaled)"),
    (LINEAR, ["N", 8, "H", "W"], [1, 1, 2, 2], 20, "generic Resize(linear, antialias) x1/2"),   # as static
    (LINEAR, ["N", "C", "H", "W"], [1, 1, 4, 2], 19, "generic separable conv x"),    # 8 x 4 taps: separable
    (dict(LINEAR, coordinate_transformation_mode="pytorch_half_pixel"), ["N", 3, "L"], [1, 1, 8], 17,
     "generic conv x8 (zero pad 4+4, fold 1)"),
    (dict(LINEAR, coordinate_transformation_mode="half_pixel_symmetric"), [1, 2, "D", "H", "W"],
     [1, 1, 2, 2, 2], 19, "dynamic"),       # no 5-D antialiased Resize (CUDA computes it wrong): the run-time path
    (LINEAR, ["N", 2, "D", "H", "W"], [1, 1, 2, 2, 2], 17, "dynamic"),   # volumes: the run-time path by rule
    ({"mode": "cubic"}, ["N", 3, "H", "W"], [1, 1, 2, 2], 17, "generic separable conv x2 (zero pad 3+3, fold 2)"),
    ({"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel", "cubic_coeff_a": -0.5},
     ["N", "C", "H", "W"], [1, 1, 4, 2], 19, "generic separable conv x"),
    ({"mode": "cubic"}, ["N", 2, "D", "H", "W"], [1, 1, 2, 2, 1], 19, "dynamic"),
    (dict(LINEAR, coordinate_transformation_mode="asymmetric"), ["N", 3, "H", "W"], [1, 1, 2, 4], 13,
     "generic separable conv x"),
    (dict(LINEAR, coordinate_transformation_mode="asymmetric"), ["N", 3, "H", "W"], [1, 1, 2, 2], 13,
     "generic conv x2 (zero pad 1+0, fold 1)"),                                     # 3 x 3 taps: one Conv
]
SIZES = [(1, 1), (1, 2), (2, 3), (5, 7), (16, 9), (33, 20)]


def all_ops(graph):
    """The op types of a graph's nodes and of its subgraphs' (If branches)."""
    return {n.op_type for n in graph.node} | {op for n in graph.node for a in n.attribute if a.g.node
                                                for op in all_ops(a.g)}


def concrete(dims, k):
    """A run-time shape for X's dims: symbolic N, C take 2, 3; the others lengths from SIZES (small, odd ones)."""
    sizes = iter(SIZES[k] * 3)
    return [d if isinstance(d, int) else (2, 3)[a] if a < 2 and len(dims) > 2 else next(sizes)
            for a, d in enumerate(dims)]


@pytest.mark.parametrize("attrs, dims, scales, opset, form", CASES)
def test_generic_form_is_the_reference_gradient_on_many_lengths(attrs, dims, scales, opset, form):
    model = grad_model(attrs, dims, scales, opset)
    lowered, report = lower(model, semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert report[0].dynamic and all(f.startswith(form) for f in report[0].forms), report[0].forms
    ops = all_ops(lowered.graph)
    if form == "dynamic":     # 3-D filters: the run-time path by rule, its generic spellings calibration's (below)
        assert ops & GENERAL_PATH_OPS and any(k.startswith("sepconv") or k == "conv" for k in report[0].candidates)
    else:
        assert not ops & GENERAL_PATH_OPS and ("MatMul" in ops) == form.startswith("generic kron-pairs"), ops
    for k in range(len(SIZES)):
        shape = concrete(dims, k)
        dy, dx = run(lowered, shape, scales, seed=k)
        np.testing.assert_allclose(dx, reference(attrs, shape, scales, dy), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("attrs, dims, scales, opset, form", CASES)
def test_every_spelling_of_a_generic_form_is_the_reference_gradient(attrs, dims, scales, opset, form):
    """Each candidate spelling (the rule's and every other one calibration may pick) on odd and tiny lengths."""
    model = grad_model(attrs, dims, scales, opset)
    _, report = lower(model, semantics=INSTALLED)
    kinds = [k for k in report[0].candidates if k != "general"]
    assert kinds
    for kind in kinds:
        lowered, rep = lower(model, calibration={report[0].signature: kind}, semantics=INSTALLED)
        onnx.checker.check_model(lowered, full_check=True)
        assert rep[0].forms[0].startswith("generic"), (kind, rep[0].forms)
        for k in (0, 2, 5):
            shape = concrete(dims, k)
            dy, dx = run(lowered, shape, scales, seed=k)
            np.testing.assert_allclose(dx, reference(attrs, shape, scales, dy), rtol=2e-6, atol=2e-6,
                                       err_msg=f"{kind} {shape}")


@pytest.mark.parametrize("attrs, factor", [(LINEAR, 4), (LINEAR, 8),
                                           (dict(LINEAR, coordinate_transformation_mode="pytorch_half_pixel"), 4),
                                           (dict(LINEAR, coordinate_transformation_mode="half_pixel_symmetric"), 8)])
def test_zero_padded_form_is_the_taps_on_every_length(attrs, factor):
    """The separable conv's zero pad + fold in place of a mirror: the shared taps in and beyond the family."""
    proven = proven_axis_form(key(attrs), float(factor), 19)
    form = emitted(proven, lambda c: proven_same(c, proven), 19)
    assert proven.symmetric and form.fold == 1 and not form.symmetric and not form.edge_scale
    for n in FAMILY + (25, 40, 41, 100, 257):
        assert np.array_equal(form.matrix(n), resize_grad_taps(attrs, float(factor), n, 19, "ort-1.27")), n


def test_separable_form_is_bitwise_deterministic_across_threads():
    scales = [1, 1, 4, 4]
    lowered, report = lower(grad_model(LINEAR, ["N", 3, "H", "W"], scales, 17), semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic separable conv")
    runs = [run(lowered, [2, 3, 24, 17], scales, threads=t, seed=5)[1] for t in (1, 2, 4, 1)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs)


@pytest.mark.parametrize("attrs, factor", [(NEAREST, 2), (NEAREST, 3), (NEAREST, 5), (LINEAR, 2), (LINEAR, 4),
                                           (LINEAR, 8), ({"mode": "cubic"}, 2), ({"mode": "cubic"}, 8),
                                           (dict(LINEAR, coordinate_transformation_mode="asymmetric"), 4),
                                           (dict(NEAREST, coordinate_transformation_mode="asymmetric",
                                                 nearest_mode="floor"), 3),
                                           (dict(NEAREST, nearest_mode="round_prefer_ceil"), 4)])
def test_proven_axis_form_holds_beyond_its_proof_family(attrs, factor):
    """The form's matrix equals the shared taps on lengths the proof did not check (ort-1.27 semantics)."""
    form = proven_axis_form(key(attrs), float(factor), 19)
    assert form is not None
    for n in (25, 40, 41, 100, 257, 600):
        assert n not in FAMILY
        assert np.array_equal(form.matrix(n), resize_grad_taps(attrs, float(factor), n, 19, "ort-1.27")), n


@pytest.mark.parametrize("attrs, factor", [
    (dict({"mode": "cubic"}, exclude_outside=1), 2),                   # border weights renormalised
    (dict(LINEAR, coordinate_transformation_mode="align_corners"), 2),  # the map depends on n
    (dict(NEAREST, coordinate_transformation_mode="asymmetric", nearest_mode="ceil"), 2),
    (LINEAR, 3),                                                        # float32 coordinates: powers of two only
    (dict(LINEAR, antialias=1), 2),
    (NEAREST, 9),
])
def test_unproven_maps_keep_the_general_path(attrs, factor):
    assert proven_axis_form(key(attrs), float(factor), 19) is None
    model = grad_model(attrs, ["N", 3, "H", "W"], [1, 1, factor, factor])
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].forms[0].startswith("dynamic: Resize(comb)")
    assert GENERAL_PATH_OPS & {n.op_type for g in graphs(lowered.graph) for n in g.node}


def test_run_time_scales_keep_the_general_path():
    model = grad_model(NEAREST, ["N", 3, "H", "W"], [1, 1, 2, 2])
    model.graph.input.append(helper.make_tensor_value_info("scales", F32, [4]))
    del model.graph.initializer[:]
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].forms[0].startswith("dynamic: Resize(comb)")


@pytest.mark.parametrize("attrs, opset", [(NEAREST, 17), (NEAREST, 19), (LINEAR, 17), (LINEAR, 19),
                                         ({"mode": "cubic"}, 17), ({"mode": "cubic"}, 19)])
def test_generic_form_is_onnxruntimes_forward_transposed(attrs, opset):
    """<Resize(x), dY> = <x, dX> with onnxruntime's own forward Resize on the same shapes (float64 sums)."""
    scales = [1, 1, 2, 2]
    lowered, _ = lower(grad_model(attrs, ["N", 4, "H", "W"], scales, opset), semantics=INSTALLED)
    forward = helper.make_model(helper.make_graph(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)], "f",
        [helper.make_tensor_value_info("x", F32, ["N", 4, "H", "W"])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.asarray(scales, np.float32), "s")]), ir_version=9,
        opset_imports=[helper.make_opsetid("", opset)])
    fwd = session(forward)
    for k, shape in enumerate([(2, 4, 3, 5), (1, 4, 1, 1), (3, 4, 16, 9)]):
        dy, dx = run(lowered, shape, scales, seed=k)
        x = np.random.default_rng(10 + k).standard_normal(shape).astype(np.float32)
        y = fwd.run(None, {"x": x})[0]
        lhs, rhs = np.vdot(y.astype(np.float64), dy), np.vdot(x.astype(np.float64), dx)
        assert abs(lhs - rhs) <= 1e-5 * (np.abs(y).sum() * np.abs(dy).max() + 1), (lhs, rhs)


@pytest.mark.parametrize("attrs, dims, scales, opset", [(NEAREST, ["N", 8, "H", "W"], [1, 1, 2, 2], 17),
                                                        (NEAREST, ["N", 8, "H", "W"], [1, 1, 2, 2], 19),
                                                        (NEAREST, ["N", "C", "H", "W"], [1, 1, 2, 2], 20),
                                                        (LINEAR, ["N", 8, "H", "W"], [1, 1, 2, 2], 17),
                                                        (LINEAR, ["N", "C", "H", "W"], [1, 1, 4, 4], 19),
                                                        ({"mode": "cubic"}, ["N", 8, "H", "W"], [1, 1, 2, 2], 17)])
def test_generic_form_is_bitwise_deterministic_across_threads(attrs, dims, scales, opset):
    lowered, _ = lower(grad_model(attrs, dims, scales, opset), semantics=INSTALLED)
    shape = [d if isinstance(d, int) else n for d, n in zip(dims, (3, 8, 48, 40))]
    runs = [run(lowered, shape, scales, threads=t, seed=5)[1] for t in (1, 2, 4, 1)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs)


@pytest.mark.parametrize("elem, attrs, form, tol", [(F16, LINEAR, "generic conv", 2e-3),
                                                    (F64, NEAREST, "generic block-sum", 1e-12),
                                                    (F64, LINEAR, "dynamic", 1e-12)])
def test_generic_form_keeps_float16_and_double(elem, attrs, form, tol):
    """float16 runs in float32; double keeps double (block sums; the Conv form is float32 only: general path)."""
    scales = [1, 1, 2, 2]
    lowered, report = lower(grad_model(attrs, ["N", 2, "H", "W"], scales, 17, elem), semantics=INSTALLED)
    assert report[0].forms[0].startswith(form)
    dy, dx = run(lowered, [2, 2, 5, 6], scales, elem)
    assert dx.dtype == NP[elem]
    np.testing.assert_allclose(dx, reference(attrs, [2, 2, 5, 6], scales, dy), rtol=tol, atol=tol)


@pytest.mark.parametrize("attrs, opset", [(NEAREST, 17), (NEAREST, 19), (LINEAR, 17), ({"mode": "cubic"}, 17)])
@pytest.mark.parametrize("dy_shape", [(1, 2, 8, 9), (1, 2, 9, 8), (1, 2, 4, 16), (1, 2, 8, 7), (2, 2, 8, 8)])
def test_dy_that_does_not_match_x_times_the_scales_fails_in_onnxruntime(attrs, opset, dy_shape):
    """Same element count, swapped dims, a short axis, another batch: onnxruntime's error, never a result."""
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], [1, 1, 2, 2], opset), semantics=INSTALLED)
    sess = session(lowered)
    with pytest.raises(Exception, match="(?i)shape|dimension"):
        sess.run(None, {"dY": np.zeros(dy_shape, np.float32), "X": np.zeros((1, 2, 4, 4), np.float32)})


def test_docs_example_runs_and_prints_what_the_doc_says():
    """docs/dynamic-forms.md: its python block runs as shown and prints the block that follows it."""
    import re
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "dynamic-forms.md").read_text()
    code, printed = re.findall(r"```python\n(.*?)```.*?```\n(.*?)```", text, re.S)[0]
    out = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == printed


TORCH_EXPORTS = [  # torch.nn.functional.interpolate(scale_factor=f) and the Resize torch's ONNX export writes for it
    ("nearest", {}, NEAREST | {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    ("bilinear", {"align_corners": False}, LINEAR | {"coordinate_transformation_mode": "pytorch_half_pixel"}),
    ("bicubic", {"align_corners": False}, {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel",
                                           "cubic_coeff_a": -0.75}),
]


@pytest.mark.parametrize("factor", [2, 4])
@pytest.mark.parametrize("torch_mode, kw, attrs", TORCH_EXPORTS)
def test_generic_form_is_torch_autograds_gradient(torch_mode, kw, attrs, factor):
    """The real-export case end to end: torch's own backward of interpolate(scale_factor=f) is the oracle."""
    torch = pytest.importorskip("torch", reason="torch is the oracle here (the training env has it)")
    scales = [1, 1, factor, factor]
    lowered, report = lower(grad_model(attrs, ["N", 3, "H", "W"], scales, 17), semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic")
    for k, shape in enumerate([(2, 3, 1, 1), (2, 3, 5, 7), (1, 3, 16, 9)]):
        dy, dx = run(lowered, shape, scales, seed=k)
        x = torch.zeros(shape, requires_grad=True)
        y = torch.nn.functional.interpolate(x, scale_factor=factor, mode=torch_mode, **kw)
        (want,) = torch.autograd.grad(y, x, torch.from_numpy(dy))
        np.testing.assert_allclose(dx, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("factor", [2, 4])
def test_separable_form_is_torch_autograds_trilinear_gradient(factor):
    """A 3-D export (trilinear, scale_factor=f): the rule's run-time path and the separable conv (calibration's
    other spelling) against torch's own backward."""
    torch = pytest.importorskip("torch", reason="torch is the oracle here (the training env has it)")
    attrs = LINEAR | {"coordinate_transformation_mode": "pytorch_half_pixel"}
    scales = [1, 1, factor, factor, factor]
    model = grad_model(attrs, ["N", 2, "D", "H", "W"], scales, 17)
    by_rule, report = lower(model, semantics=INSTALLED)
    separable, rep = lower(model, calibration={report[0].signature: "sepconv"}, semantics=INSTALLED)
    assert all(f.startswith("dynamic") for f in report[0].forms), report[0].forms
    assert all(f.startswith("generic separable conv") for f in rep[0].forms), rep[0].forms
    for lowered in (by_rule, separable):
        for k, shape in enumerate([(1, 2, 1, 1, 1), (2, 2, 3, 5, 7), (1, 2, 6, 9, 4)]):
            dy, dx = run(lowered, shape, scales, seed=k)
            x = torch.zeros(shape, requires_grad=True)
            y = torch.nn.functional.interpolate(x, scale_factor=factor, mode="trilinear", align_corners=False)
            (want,) = torch.autograd.grad(y, x, torch.from_numpy(dy))
            np.testing.assert_allclose(dx, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axes", [[2, 3], [-2, -1], [3, 2]])
def test_axes_attribute_and_the_report_name_each_axis_its_own_form(axes):
    """Resize-18 `axes`: scales [2, 4] belong to axes in the attribute's order; the report pairs each axis with its
    own factor."""
    node = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", name="rg",
                            mode="linear", axes=axes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("dY", F32, ["N", 3, "a", "b"]),
                                            helper.make_tensor_value_info("X", F32, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("dX", F32, ["N", 3, "H", "W"])],
                              [numpy_helper.from_array(np.array([2, 4], np.float32), "scales")])
    lowered, report = lower(helper.make_model(graph, ir_version=9, opset_imports=[
        helper.make_opsetid("", 19), helper.make_opsetid("com.microsoft", 1)]), semantics=INSTALLED)
    factors = dict(zip([a % 4 for a in axes], (2, 4)))
    assert [f"x{factors[a]} " in form for a, form in zip(report[0].axes, report[0].forms)] == [True, True]
    scales = [1, 1, factors[2], factors[3]]
    dy, dx = run(lowered, (2, 3, 5, 6), scales)
    np.testing.assert_allclose(dx, reference(LINEAR, (2, 3, 5, 6), scales, dy), rtol=2e-6, atol=2e-6)


# ---- the kron-pairs spelling of nearest block sums ---------------------------------------------------------

@pytest.mark.parametrize("shape, opset, channels", [((1, 8, 64, 64), 20, 8), ((1, 4, 16, 16, 32), 20, 4),
                                                    ((2, 16, 128, 128), 17, 16), ((1, 8, 64, 64), 20, "C"),
                                                    ((1, 5, 181, 91), 20, 5)])
def test_kron_pairs_is_bitwise_the_static_kron_pairs_form(shape, opset, channels):
    """The same sums in the same order as onnx_ops.forms.kron_pairs (shapes where the static lowering takes it);
    C symbolic: rows of 32 -> 16 chosen at run time as the static form does, rows of 4 -> 2 where 32 do not fit."""
    scales = [1, 1] + [2] * (len(shape) - 2)
    dims = ["N", channels] + [f"S{a}" for a in range(2, len(shape))]
    dynamic, report = lower(grad_model(NEAREST, dims, scales, opset), semantics=INSTALLED)
    static, static_report = lower(grad_model(NEAREST, list(shape), scales, opset), semantics=INSTALLED)
    assert all(f.startswith("generic kron-pairs") for f in report[0].forms), report[0].forms
    assert all(f.startswith("kron-pairs") for f in static_report[0].forms), static_report[0].forms
    dy, dx = run(dynamic, shape, scales, seed=3)
    assert dx.tobytes() == run(static, shape, scales, seed=3)[1].tobytes()
    np.testing.assert_allclose(dx, reference(NEAREST, shape, scales, dy), rtol=2e-6, atol=2e-6)


KRON_MODELS = [  # (X dims, scales): C static and symbolic, 3-D, factors other than 2 (Split into f, Add)
    (["N", 4, "H", "W"], [1, 1, 2, 2]), (["N", "C", "H", "W"], [1, 1, 2, 2]),
    (["N", 2, "D", "H", "W"], [1, 1, 2, 2, 2]),
    (["N", 3, "H", "W"], [1, 1, 3, 2]), (["N", "C", "H", "W"], [1, 1, 2, 4]), (["N", 6, "H", "W"], [1, 1, 1, 2]),
]


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("dims, scales", KRON_MODELS)
def test_kron_pairs_is_onnxruntimes_forward_transposed(dims, scales, opset):
    """<Resize(x), dY> = <x, dX> with onnxruntime's forward nearest Resize, the kron-pairs spelling forced, on
    symbolic-shape models and lengths 1 and odd; bitwise the same with 1, 2 and 4 threads."""
    model = grad_model(NEAREST, dims, scales, opset)
    _, report = lower(model, semantics=INSTALLED)
    assert "kronpairs" in report[0].candidates
    lowered, rep = lower(model, calibration={report[0].signature: "kronpairs"}, semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert any(f.startswith("generic kron-pairs matmul") for f in rep[0].forms), rep[0].forms
    forward = helper.make_model(helper.make_graph(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], **NEAREST)], "f",
        [helper.make_tensor_value_info("x", F32, dims)], [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.asarray(scales, np.float32), "s")]), ir_version=9,
        opset_imports=[helper.make_opsetid("", opset)])
    fwd = session(forward)
    for k in (0, 1, 3, 4):
        shape = concrete(dims, k)
        dy, dx = run(lowered, shape, scales, seed=k)
        x = np.random.default_rng(10 + k).standard_normal(shape).astype(np.float32)
        y = fwd.run(None, {"x": x})[0]
        lhs, rhs = np.vdot(y.astype(np.float64), dy), np.vdot(x.astype(np.float64), dx)
        assert abs(lhs - rhs) <= 1e-5 * (np.abs(y).sum() * np.abs(dy).max() + 1), (lhs, rhs)
        threaded = [run(lowered, shape, scales, threads=t, seed=k)[1].tobytes() for t in (1, 2, 4)]
        assert threaded == [dx.tobytes()] * 3


@pytest.mark.parametrize("dims, scales, opset, kind", [
    (["N", 8, "H", "W"], [1, 1, 2, 2], 17, "kronpairs"),      # full MatMul rows: faster than the pool
    (["N", 5, "H", "W"], [1, 1, 2, 2], 17, "kronpairs"),      # rows of 32 where they fit, else the pool
    (["N", 16, "D", "H", "W"], [1, 1, 2, 2, 2], 17, "pool"),  # 3 axes: the pool is faster
    (["N", 16, "D", "H", "W"], [1, 1, 2, 2, 2], 20, "kronpairs"),
    (["N", "C", "D", "H", "W"], [1, 1, 2, 2, 2], 17, "pool"),
    (["N", 8, "H", "W"], [1, 1, 3, 2], 20, "kronpairs"),      # factors other than 2: measured faster (2 threads)
    (["N", 8, "H", "W"], [1, 1, 1, 4], 20, "kronpairs"),      # the last axis alone
    (["N", 8, "H", "W"], [1, 1, 2, 1], 20, "conv"),           # the last axis not resized: no MatMul pass
])
def test_kron_pairs_rule(dims, scales, opset, kind):
    lowered, report = lower(grad_model(NEAREST, dims, scales, opset), semantics=INSTALLED)
    assert kind in report[0].candidates
    assert any(f.startswith({"kronpairs": "generic kron-pairs", "pool": "generic avgpool",
                             "conv": "generic conv"}[kind]) for f in report[0].forms), report[0].forms
    assert ("kronpairs" in report[0].candidates) == (scales[-1] != 1)


@pytest.mark.parametrize("opset, narrow", [(17, "avgpool"), (20, "4->2")])
def test_kron_pairs_takes_rows_of_32_where_they_fit_at_run_time(opset, narrow):
    """C odd: rows of 32 -> 16 (an If on dY's size) where they fit, else the narrow spelling: both the reference
    gradient, the wide one bitwise the static kron-pairs form."""
    scales = [1, 1, 2, 2]
    lowered, report = lower(grad_model(NEAREST, ["N", 5, "H", "W"], scales, opset), semantics=INSTALLED)
    assert report[0].forms[-1] == f"generic kron-pairs matmul 32->16 or {narrow}", report[0].forms
    assert "If" in {n.op_type for n in lowered.graph.node}
    for shape, wide in [((1, 5, 64, 64), True), ((1, 5, 33, 17), False), ((2, 5, 1, 1), False)]:
        assert (np.prod(shape) * 4 % 32 == 0) == wide
        dy, dx = run(lowered, shape, scales, seed=1)
        np.testing.assert_allclose(dx, reference(NEAREST, shape, scales, dy), rtol=2e-6, atol=2e-6)
        if wide:
            static = lower(grad_model(NEAREST, list(shape), scales, 20), semantics=INSTALLED)
            assert static.rewrites[0].forms[-1] == "kron-pairs matmul 32->16"
            if opset == 20:
                assert dx.tobytes() == run(static.model, shape, scales, seed=1)[1].tobytes()


# Integer downsampling: the scatter form (generic_forms.DownsampleForm), each dY row into its own block of X
ASYM_FLOOR = dict(NEAREST, coordinate_transformation_mode="asymmetric", nearest_mode="floor")   # torch's export
DOWN = [  # (attrs, X dims, scales, opset, the name of each axis's form)
    (LINEAR, ["N", 8, "H", "W"], [1, 1, 0.5, 0.5], 17, "generic scatter x1/2"),            # torch's bilinear x0.5
    (LINEAR, ["N", "C", "H", "W"], [1, 1, 0.5, 0.5], 19, "generic scatter x1/2"),
    # one row of a block reached (a mask): the gathered spelling
    (ASYM_FLOOR, ["N", "C", "H", "W"], [1, 1, 0.5, 0.5], 13, "generic scatter x1/2, gather on a tail"),
    (NEAREST, ["N", 3, "H", "W"], [1, 1, 0.5, 0.5], 19, "generic scatter x1/2, gather on a tail"),
    (ASYM_FLOOR, ["N", 16, "H", "W"], [1, 1, 0.25, 0.25], 17, "generic gather x1/4"),      # rows of 16, no If
    (dict(LINEAR, coordinate_transformation_mode="asymmetric"), ["N", 2, "H", "W"], [1, 1, 0.5, 0.5], 11,
     "generic scatter x1/2, gather on a tail"),                                         # one row of 2, opset 11
    (LINEAR, ["N", 3, "H", "W"], [1, 1, 0.25, 0.25], 19, "generic gather x1/4"),      # rows 1, 2 of 4, weight 1/4
    (ASYM_FLOOR, ["N", "C", "H", "W"], [1, 1, 0.125, 0.125], 17, "generic gather x1/8"),
]
DOWN_SIZES = [(8, 8, 8), (9, 15, 9), (16, 9, 12), (33, 20, 17), (113, 64, 35)]     # every length at least 1/scale


@pytest.mark.parametrize("attrs, dims, scales, opset, form", DOWN)
def test_scatter_is_bitwise_the_reference_gradient_on_odd_and_even_lengths(attrs, dims, scales, opset, form):
    """Whole blocks only and a tail of X rows no dY reaches (the If's two branches): bitwise the reference (the
    weights are powers of two), no op of the run-time path, and the checker passes."""
    lowered, report = lower(grad_model(attrs, dims, scales, opset), semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert report[0].dynamic and all(f.startswith(form) for f in report[0].forms), report[0].forms
    assert not all_ops(lowered.graph) & GENERAL_PATH_OPS
    assert ("Resize" in all_ops(lowered.graph)) == ("scatter" in form)      # the gathered spelling: no Resize
    assert ("Pad" in all_ops(lowered.graph)) == ("gather" in form or "tail" not in form)
    for k, sizes in enumerate(DOWN_SIZES):
        it = iter(sizes)
        shape = [d if isinstance(d, int) else (2, 3)[a] if a < 2 else next(it) for a, d in enumerate(dims)]
        dy, dx = run(lowered, shape, scales, seed=k)
        np.testing.assert_array_equal(dx, reference(attrs, shape, scales, dy).astype(np.float32))


def test_gathered_spelling_leaves_unreached_rows_exactly_zero_under_inf():
    """torch's nearest x1/4: an inf in dY reaches its own X entry; the X rows no dY row reads are gathered from a
    zero row (exactly 0, where the scatter's mask gave 0 x inf = NaN); on the last axis the MatMul's 0 x inf is
    NaN in the inf's MatMul row only (here rows of one dY value: C symbolic, dY's size odd)."""
    lowered, report = lower(grad_model(ASYM_FLOOR, ["N", "C", "H", "W"], [1, 1, 0.25, 0.25], 17), semantics=INSTALLED)
    assert report[0].forms[0] == "generic gather x1/4"
    dy = np.ones((1, 3, 3, 5), np.float32)
    dy[0, 1, 1, 2] = np.inf
    dx = session(lowered).run(None, {"dY": dy, "X": np.zeros((1, 3, 13, 21), np.float32)})[0]
    assert dx[0, 1, 4, 8] == np.inf
    unreached = np.ones(13, bool)
    unreached[0:12:4] = False
    assert not dx[:, :, unreached].any() and not dx[..., 20].any()        # the rows no dY row reads, the tails
    bad = ~np.isfinite(dx)
    assert bad[0, 1, 4, 8:12].all() and bad.sum() == 4, np.argwhere(bad)  # the inf and its block's 0 x inf


@pytest.mark.parametrize("attrs, scales", [
    ({"mode": "cubic"}, [1, 1, 0.5, 0.5]),                                  # taps across blocks, clamped at edges
    (dict(LINEAR, coordinate_transformation_mode="pytorch_half_pixel"), [1, 1, 0.5, 0.5]),   # one dY row: x = 0
    (dict(LINEAR, antialias=1), [1, 1, 0.5, 0.5]),                          # a wider filter
    (LINEAR, [1, 1, 1 / 3, 1 / 3]),                                         # float32 1/3: weights 1 - 3e-8, 3e-8
    (LINEAR, [1, 1, 0.5, 2]),                                               # down and up
])
def test_downsampling_the_scatter_cannot_state_keeps_the_run_time_path(attrs, scales):
    lowered, report = lower(grad_model(attrs, ["N", 2, "H", "W"], scales, 19), semantics=INSTALLED)
    assert report[0].forms[0].startswith("dynamic"), report[0].forms
    dy, dx = run(lowered, [2, 2, 13, 12], scales)
    np.testing.assert_allclose(dx, reference(attrs, [2, 2, 13, 12], scales, dy), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs, dims, scales", [
    (LINEAR, ["N", 2, "H", "W"], [1, 1, 0.25, 0.5]),      # H and W differ: no fast 2x Resize (scatter.resize_fits)
    (LINEAR, ["N", 2, "H", "W"], [1, 1, 1, 0.5]),         # the last axis alone: one MatMul and the tail's Pad
    (ASYM_FLOOR, ["N", 2, "H", "W"], [1, 1, 0.5, 1]),     # H alone: Gathers of rows, no MatMul
    (LINEAR, ["N", "C", "L"], [1, 1, 0.5]),               # 3-D (torch's linear), C symbolic: rows of 16 or 1
    (LINEAR, ["N", 4, "D", "H", "W"], [1, 1, 0.5, 0.5, 0.5]),     # 5-D (torch's trilinear)
    (ASYM_FLOOR, ["N", "C", "D", "H", "W"], [1, 1, 0.25, 0.5, 0.125]),
    (ASYM_FLOOR, ["N", "C", "H", "W"], [1, 0.5, 1, 1]),   # the channels
])
def test_downsampling_without_onnxruntimes_fast_resize_takes_the_gathered_spelling(attrs, dims, scales):
    """Proven blocks on any axes and ranks: one blocked MatMul on the last axis, a Gather of rows per other axis;
    bitwise the reference (its weights are powers of two) on lengths with and without tails, no run-time path."""
    opset = 17
    lowered, report = lower(grad_model(attrs, dims, scales, opset), semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert all(f.startswith("generic gather x1/") for f in report[0].forms), report[0].forms
    assert not all_ops(lowered.graph) & (GENERAL_PATH_OPS | {"Resize"})
    for seed, extra in enumerate((0, 1, 7)):
        shape = [d if isinstance(d, int) else 2 + seed if a < 2 else round(8 / s) * (seed + 1) + extra
                 for a, (d, s) in enumerate(zip(dims, scales))]
        dy, dx = run(lowered, shape, scales, seed=seed)
        np.testing.assert_array_equal(dx, reference(attrs, shape, scales, dy).astype(np.float32))


@pytest.mark.parametrize("dy_shape", [(1, 2, 3, 4), (1, 2, 4, 3), (1, 2, 2, 8), (2, 2, 4, 4), (1, 2, 5, 4)])
def test_scatter_refuses_a_dy_that_is_not_x_over_the_scales(dy_shape):
    """X 1x2x9x8 at scales 1/2 gives dY 1x2x4x4: every other dY shape is onnxruntime's error, never a result."""
    lowered, _ = lower(grad_model(LINEAR, ["N", 2, "H", "W"], [1, 1, 0.5, 0.5], 17), semantics=INSTALLED)
    sess = session(lowered)
    x = np.zeros((1, 2, 9, 8), np.float32)
    assert sess.run(None, {"dY": np.ones((1, 2, 4, 4), np.float32), "X": x})[0].sum() == 32
    with pytest.raises(Exception, match="(?i)shape|dimension"):
        sess.run(None, {"dY": np.zeros(dy_shape, np.float32), "X": np.zeros((1, 2, 9, 8), np.float32)})


@pytest.mark.parametrize("attrs, opset", [(LINEAR, 17), (ASYM_FLOOR, 17), (NEAREST, 19)])
def test_scatter_is_onnxruntimes_forward_transposed(attrs, opset):
    """<Resize(x), dY> = <x, dX> with onnxruntime's own forward Resize (scales 1/2) on odd and even shapes."""
    scales = [1, 1, 0.5, 0.5]
    lowered, report = lower(grad_model(attrs, ["N", 4, "H", "W"], scales, opset), semantics=INSTALLED)
    assert report[0].forms[0] == "generic scatter x1/2" + ("" if attrs is LINEAR else ", gather on a tail")
    forward = helper.make_model(helper.make_graph(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)], "f",
        [helper.make_tensor_value_info("x", F32, ["N", 4, "H", "W"])], [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.asarray(scales, np.float32), "s")]), ir_version=9,
        opset_imports=[helper.make_opsetid("", opset)])
    for k, shape in enumerate([(2, 4, 3, 5), (1, 4, 2, 2), (3, 4, 16, 9), (1, 4, 57, 64)]):
        dy, dx = run(lowered, shape, scales, seed=k)
        x = np.random.default_rng(10 + k).standard_normal(shape).astype(np.float32)
        y = session(forward).run(None, {"x": x})[0]
        assert y.shape == dy.shape
        lhs, rhs = np.vdot(y.astype(np.float64), dy), np.vdot(x.astype(np.float64), dx)
        assert abs(lhs - rhs) <= 1e-5 * (np.abs(y).sum() * np.abs(dy).max() + 1), (lhs, rhs)


@pytest.mark.parametrize("elem, form, tol", [(F16, "generic scatter x1/2", 1e-3), (F64, "dynamic", 1e-12)])
def test_scatter_runs_float16_in_float32_and_leaves_double_to_the_run_time_path(elem, form, tol):
    """onnxruntime's CPU Resize has no double kernel: double keeps the run-time path; float16 is cast around."""
    lowered, report = lower(grad_model(LINEAR, ["N", 2, "H", "W"], [1, 1, 0.5, 0.5], 17, elem), semantics=INSTALLED)
    assert report[0].forms[0].startswith(form)
    dy, dx = run(lowered, [2, 2, 9, 6], [1, 1, 0.5, 0.5], elem)
    assert dx.dtype == NP[elem]
    np.testing.assert_allclose(dx, reference(LINEAR, [2, 2, 9, 6], [1, 1, 0.5, 0.5], dy), rtol=tol, atol=tol)


@pytest.mark.parametrize("factor", [0.5, 0.25])
@pytest.mark.parametrize("torch_mode, kw, attrs", [("nearest", {}, ASYM_FLOOR),
                                                    ("bilinear", {"align_corners": False}, LINEAR)])
def test_scatter_is_torch_autograds_gradient(torch_mode, kw, attrs, factor):
    """torch's own backward of interpolate(scale_factor=1/2 or 1/4), as its exporters spell it (half_pixel for
    bilinear, asymmetric + floor for nearest), on lengths with and without a tail."""
    torch = pytest.importorskip("torch", reason="torch is the oracle here (the training env has it)")
    scales = [1, 1, factor, factor]
    lowered, report = lower(grad_model(attrs, ["N", 3, "H", "W"], scales, 17), semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic gather" if factor == 0.25 else "generic scatter")
    for k, shape in enumerate([(2, 3, 4, 4), (2, 3, 9, 7), (1, 3, 16, 13), (1, 3, 31, 64)]):
        dy, dx = run(lowered, shape, scales, seed=k)
        x = torch.zeros(shape, requires_grad=True)
        y = torch.nn.functional.interpolate(x, scale_factor=factor, mode=torch_mode, **kw)
        assert tuple(y.shape) == dy.shape
        (want,) = torch.autograd.grad(y, x, torch.from_numpy(dy))
        np.testing.assert_allclose(dx, want.numpy(), rtol=1e-6, atol=1e-6)


# Empty tensors: a batch of 0, an axis of length 0, a one-row axis that downsampling leaves without dY rows
def emptied(dims, scales):
    """X shapes with an empty X or dY: each symbolic dim 0 in turn (the others concrete), and where an axis is
    downsampled, that axis one row long."""
    base = concrete(dims, 3)
    shapes = [[0 if b == a else n for b, n in enumerate(base)] for a, d in enumerate(dims) if isinstance(d, str)]
    return shapes + [[1 if s < 1 and isinstance(d, str) else n for n, d, s in zip(base, dims, scales)]
                     for _ in range(min(scales) < 1)]


@pytest.mark.parametrize("attrs, dims, scales, opset, form", CASES + DOWN)
def test_an_empty_x_or_dy_gives_zeros_and_a_dy_of_another_batch_fails(attrs, dims, scales, opset, form):
    """Every shape-generic form (and the run-time path) on an empty X or dY: dX of X's shape, all zeros; an empty
    dY whose batch is not X's fails in onnxruntime, never a result. Every initializer is read by a node of the
    main graph (tools that prune initializers look there only)."""
    model = grad_model(attrs, dims, scales, opset)
    lowered = lower(model, semantics=INSTALLED)[0]
    used = {i for n in lowered.graph.node for i in n.input} | {t.name for t in model.graph.initializer}
    assert [t.name for t in lowered.graph.initializer if t.name not in used] == []    # If branches: Constant nodes
    sess = session(lowered)
    for shape in emptied(dims, scales):
        dy = np.ones([int(n * s) for n, s in zip(shape, scales)], np.float32)
        dx = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        assert dx.shape == tuple(shape) and not dx.any(), (shape, dy.shape)
    shape = concrete(dims, 3)
    dy = np.ones([0] + [int(n * s) for n, s in zip(shape[1:], scales[1:])], np.float32)
    with pytest.raises(Exception, match="(?i)shape|dimension"):
        sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})


@pytest.mark.parametrize("opset", [11, 19])
@pytest.mark.parametrize("attrs, scales", [(dict(LINEAR, coordinate_transformation_mode="align_corners"), 2.0),
                                           (LINEAR, 1.7), ({"mode": "cubic"}, 1.5), (LINEAR, 0.6)])
def test_the_run_time_path_gives_zeros_on_empty_tensors_and_refuses_a_dy_of_another_batch(attrs, scales, opset):
    """The run-time path reads the resized axes' lengths alone: a dY of batch 3 for an X of batch 2 fails in
    onnxruntime (before, align_corners x2 returned a dX of batch 3). An empty X or dY gives zeros at every opset
    (before, opset 11 failed in a MatMul or Reshape)."""
    lowered, report = lower(grad_model(attrs, ["N", 4, "H", "W"], [1, 1, scales, scales], opset), semantics=INSTALLED)
    assert report[0].forms[0].startswith("dynamic"), report[0].forms
    sess = session(lowered)
    for shape in ([2, 4, 6, 6], [0, 4, 6, 6], [2, 4, 0, 6], [2, 4, 1, 1]):
        dy_shape = [int(np.floor(n * np.float32(s))) for n, s in zip(shape, [1, 1, scales, scales])]
        dy = np.random.default_rng(0).standard_normal(dy_shape).astype(np.float32)
        dx = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(dx, reference(attrs, shape, [1, 1, scales, scales], dy) if dy.size else
                                   np.zeros(shape), rtol=2e-6, atol=2e-6)
    m = int(6 * scales)
    for x_shape, dy_shape in (((2, 4, 6, 6), (3, 4, m, m)), ((2, 4, 6, 6), (2, 4, 0, m)), ((2, 4, 6, 6), (0, 4, m, m)),
                              ((2, 4, 0, 6), (2, 4, 5, m))):      # an empty dY, or X, of the wrong shape too
        with pytest.raises(Exception, match="(?i)shape|dimension"):
            sess.run(None, {"dY": np.ones(dy_shape, np.float32), "X": np.zeros(x_shape, np.float32)})


@pytest.mark.parametrize("opset", [11, 19])
def test_the_run_time_path_with_run_time_scales_checks_dys_shape_on_empty_tensors(opset):
    """Scales given at run time: an empty dY or X whose shape is not the forward's (floor(float32(n) * scale)) fails
    in onnxruntime; one that is gives zeros or an empty dX."""
    from tests.helpers_dynamic import grad_model as run_time_model
    lowered, _ = lower(run_time_model(LINEAR, ["N", "C", "H", "W"], ["a", "b", "c", "d"], [1, 1, 2, 2],
                                      run_time=("scales",), opset=opset), semantics=INSTALLED)
    sess = session(lowered)
    scales = np.array([1, 1, 2, 2], np.float32)
    for x_shape, dy_shape, ok in (((2, 3, 6, 6), (2, 3, 12, 12), True), ((0, 3, 6, 6), (0, 3, 12, 12), True),
                                  ((2, 3, 6, 0), (2, 3, 12, 0), True), ((2, 3, 6, 6), (0, 3, 12, 12), False),
                                  ((2, 3, 6, 6), (2, 3, 0, 12), False), ((0, 3, 6, 6), (1, 3, 12, 12), False)):
        feeds = {"dY": np.ones(dy_shape, np.float32), "X": np.zeros(x_shape, np.float32), "scales": scales}
        if ok:
            dx = sess.run(None, feeds)[0]
            assert dx.shape == x_shape and (dx.size == 0 or dx.any() == (0 not in dy_shape))
        else:
            with pytest.raises(Exception, match="(?i)shape|dimension"):
                sess.run(None, feeds)


@pytest.mark.parametrize("attrs, scales", [(LINEAR, 2.0), (NEAREST, 1.5), (LINEAR, 1.0), ({"mode": "cubic"}, 0.5)])
@pytest.mark.parametrize("dims", [["N", 4, 6, 6], ["N", "C", 6, 6]])
def test_a_static_form_with_a_symbolic_batch_refuses_a_dy_of_another_batch(attrs, scales, dims):
    """Static spatial dims, a symbolic batch (channels): the static forms read those dims from dY at run time, so a
    dY of batch 3 for an X of batch 2 gave a dX of batch 3 (all scales 1: dY itself). Now onnxruntime refuses it;
    the right batch gives the reference gradient. A model with every dim known has no such node."""
    lowered, report = lower(grad_model(attrs, dims, [1, 1, scales, scales], 19), semantics=INSTALLED)
    assert not report[0].dynamic
    sess, m = session(lowered), int(6 * scales)
    dy = np.random.default_rng(0).standard_normal((2, 4, m, m)).astype(np.float32)
    dx = sess.run(None, {"dY": dy, "X": np.zeros((2, 4, 6, 6), np.float32)})[0]
    np.testing.assert_allclose(dx, reference(attrs, [2, 4, 6, 6], [1, 1, scales, scales], dy), rtol=2e-6, atol=2e-6)
    with pytest.raises(Exception, match="(?i)shape|dimension"):
        sess.run(None, {"dY": np.ones((3, 4, m, m), np.float32), "X": np.zeros((2, 4, 6, 6), np.float32)})
    static, _ = lower(grad_model(attrs, [2, 4, 6, 6], [1, 1, scales, scales], 19), semantics=INSTALLED)
    assert "Where" not in {n.op_type for n in static.graph.node}
