"""The filter-conv form (onnx_ops.forms.filter_conv): integer-factor linear / cubic gradients as depthwise Convs,
static (a registry form) and shape-generic. Judged by onnxruntime's own forward Resize transposed on random maps
from the attribute space, by torch's autograd, bitwise across threads, bitwise static against shape-generic, and
the edge-scaled spelling against the shared taps on every length."""
import numpy as np
import pytest

from conformance.reference import resize_grad
from conformance.resize_oracle import forward_transposed
from dml_desc.conventions.onnx import OnnxResize, installed_semantics, to_canonical
from onnx_ops import build_resize_grad, lower, run_model
from onnx_ops.forms import filter_conv, signature
from onnx_ops.lowering.generic_forms import FAMILY, proven_axis_form, proven_same, resize_grad_taps
from onnx_ops.model import OPSET

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run
LINEAR = {"mode": "linear"}
CTMS = ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric", "asymmetric")


def _spec(attrs, shape, factors, opset=OPSET):
    return OnnxResize(list(shape), dict(attrs), scales=[1.0, 1.0] + [float(f) for f in factors], opset=opset,
                      op_type="ResizeGrad")


def _model(r: OnnxResize, dtype=np.float32, run_time=()):
    """The ResizeGrad model of `r` at its opset, the dims on axes `run_time` symbolic (dY, X and dX)."""
    model = build_resize_grad(r, dtype, semantics=INSTALLED)
    for o in model.opset_import:
        if o.domain == "":
            o.version = r.opset
    for v in list(model.graph.input) + list(model.graph.output):
        for a in run_time:
            v.type.tensor_type.shape.dim[a].dim_param = f"{v.name}{a}"
    return model


def _lowered(r: OnnxResize, form=filter_conv.NAME):
    """(lowered model, report) with the static form named `form` where it applies (a calibration entry)."""
    model = _model(r)
    res = to_canonical(r, semantics=INSTALLED)
    return lower(model, semantics=INSTALLED, calibration={signature(res, r.opset, np.float32): form})


def _draw(rng):
    """One random map of the form's family: mode, coordinates, cubic options, factors 1/2/4/8 per spatial axis,
    rank 3-5, small odd and even lengths, opset."""
    attrs = {"mode": str(rng.choice(["linear", "cubic"])),
             "coordinate_transformation_mode": str(rng.choice(CTMS))}
    if attrs["mode"] == "cubic":
        attrs.update(cubic_coeff_a=float(rng.choice([-0.75, -0.5])), exclude_outside=int(rng.integers(0, 2)))
    rank = int(rng.integers(3, 6))
    factors = [int(rng.choice([1, 2, 4, 8])) for _ in range(rank - 2)]
    if all(f == 1 for f in factors):
        factors[-1] = 2
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + [int(rng.integers(1, 10)) for _ in factors]
    return _spec(attrs, shape, factors, int(rng.choice([13, 17, 19])))


def test_static_form_is_onnxruntimes_forward_transposed_on_random_maps():
    """Where the form applies (checked at the node's lengths) its dX is onnxruntime's forward Resize transposed;
    where it does not, the lowering keeps another form. Both happen in the draw."""
    rng = np.random.default_rng(19)
    taken = kept = 0
    for k in range(60):
        r = _draw(rng)
        lowered, report = _lowered(r)
        res = to_canonical(r, semantics=INSTALLED)
        dy = rng.standard_normal(res.out_shape).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
        want = forward_transposed(r.to_json(), dy)
        np.testing.assert_allclose(dx, want, rtol=0, atol=3e-6 * max(1.0, np.abs(want).max()),
                                   err_msg=f"draw {k}: {r.to_json()} {report[0].forms}")
        uses = any("conv x" in f for f in report[0].forms)
        taken, kept = taken + uses, kept + (not uses)
    assert taken >= 20 and kept >= 5, (taken, kept)


@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "half_pixel_symmetric"])
def test_edge_scaled_form_is_the_taps_on_every_length(ctm):
    """A mirror of 1 becomes zero padding with dY's edge rows scaled: the shared taps in and beyond the family."""
    attrs, factor = dict(LINEAR, coordinate_transformation_mode=ctm), 2
    key = tuple(sorted((k, str(v)) for k, v in attrs.items()))
    form = proven_axis_form(key, float(factor), 19)
    scaled = filter_conv.edge_scaled(form)
    assert form.symmetric and scaled is not None and proven_same(scaled, form)
    assert scaled.edge_scale == pytest.approx((4 / 3, 4 / 3))         # (0.25 + 0.75) / 0.75 on each edge
    for n in FAMILY + (25, 40, 41, 100, 257):
        np.testing.assert_allclose(scaled.matrix(n), resize_grad_taps(attrs, float(factor), n, 19, "ort-1.27"),
                                   rtol=0, atol=1e-12, err_msg=str(n))


def test_edge_scaling_is_refused_where_the_mirror_feeds_other_outputs():
    """A kernel whose mirrored rows reach an output that does not read the edge row has no edge scaling."""
    wide = filter_conv.AxisForm(2, (0.1, 0.2, 0.3, 0.2, 0.1, 0.1), 2, 2, True)
    assert filter_conv.edge_scaled(wide) is None


def test_static_form_is_bitwise_the_shape_generic_form_and_deterministic_across_threads():
    """Static shapes and symbolic ones lower to the same Convs: bitwise the same dX, on 1, 2 and 4 threads."""
    from onnx_ops.run import session
    r = _spec(dict(LINEAR, coordinate_transformation_mode="pytorch_half_pixel"), (2, 5, 13, 22), (2, 2), 17)
    static, report = _lowered(r)
    assert report[0].forms == ("conv x2 (zero pad 1+1, edge rows scaled)",) * 2
    generic, greport = lower(_model(r, run_time=(0, 2, 3)), semantics=INSTALLED)
    assert greport[0].forms == ("generic conv x2 (zero pad 1+1, edge rows scaled)",) * 2
    dy = np.random.default_rng(0).standard_normal((2, 5, 26, 44)).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros((2, 5, 13, 22), np.float32)}
    runs = [session(m, threads=t).run(None, feeds)[0] for m in (static, generic) for t in (1, 2, 4)]
    for other in runs[1:]:
        assert np.array_equal(runs[0], other)


def test_cost_model_takes_the_form_on_large_tensors_and_the_plan_on_small_ones():
    """Measured (onnx_ops.forms.cost): the Convs beat band + dense above about 1 MB of dY, not below."""
    big = _spec(LINEAR, (4, 16, 128, 128), (2, 2), 17)
    small = _spec(LINEAR, (1, 8, 32, 32), (2, 2), 17)
    _, report = lower(_model(big), semantics=INSTALLED)
    assert report[0].forms == ("conv x2 (zero pad 1+1, edge rows scaled)",) * 2
    _, report = lower(_model(small), semantics=INSTALLED)
    assert not any("conv" in f for f in report[0].forms)


@pytest.mark.parametrize("mode, shape, factor", [("bilinear", (2, 3, 17, 12), 2), ("bicubic", (1, 2, 9, 14), 2),
                                                 ("trilinear", (1, 2, 5, 6, 7), 2), ("bilinear", (1, 3, 6, 5), 4)])
def test_static_form_is_torch_autograds_gradient(mode, shape, factor):
    """torch's export of F.interpolate(scale_factor=f, align_corners=False): pytorch_half_pixel, cubic a = -0.75."""
    torch = pytest.importorskip("torch", reason="torch is the oracle here (the training env has it)")
    attrs = {"mode": "cubic" if mode == "bicubic" else "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}
    r = _spec(attrs, shape, [factor] * (len(shape) - 2), 17)
    lowered, report = _lowered(r)
    assert all("conv x" in f for f in report[0].forms), report[0].forms
    x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.interpolate(x, scale_factor=factor, mode=mode, align_corners=False)
    dy = np.random.default_rng(1).standard_normal(tuple(y.shape))
    (want,) = torch.autograd.grad(y, x, torch.from_numpy(dy))
    dx = run_model(lowered, {"dY": dy.astype(np.float32), "X": np.zeros(shape, np.float32)})[0]
    np.testing.assert_allclose(dx, want.numpy(), rtol=0, atol=3e-6 * np.abs(want.numpy()).max())


def test_float16_runs_the_form_in_float32():
    """float16 dY and dX: Casts around the same Convs (onnxruntime has no float16 CPU Conv), judged at float16."""
    r = _spec(LINEAR, (1, 4, 12, 10), (2, 2), 17)
    model = _model(r, np.float16)
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = lower(model, semantics=INSTALLED,
                            calibration={signature(res, 17, np.float32): filter_conv.NAME})
    assert report[0].forms == ("conv x2 (zero pad 1+1, edge rows scaled)",) * 2
    assert [n.op_type for n in lowered.graph.node] == ["Cast", "Mul", "Conv", "Cast"]
    dy = np.random.default_rng(3).standard_normal(res.out_shape).astype(np.float16)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float16)})[0]
    want = forward_transposed(r.to_json(), dy.astype(np.float32))
    assert dx.dtype == np.float16
    np.testing.assert_allclose(dx, want, rtol=0, atol=2e-3 * np.abs(want).max())


@pytest.mark.parametrize("attrs, factor", [({"mode": "cubic"}, 2), (LINEAR, 4),
                                           (dict(LINEAR, coordinate_transformation_mode="asymmetric"), 2)])
def test_folded_generic_forms_keep_x_s_shape_on_empty_and_one_long_axes(attrs, factor):
    """The fold cuts its edge rows to n: an axis of 0 gives an empty dX of X's shape (never the Conv's 2q virtual
    rows), an axis of 1 sums every row onto it; judged by onnxruntime's forward Resize transposed."""
    from onnx_ops.run import session
    r = _spec(attrs, (1, 3, 4, 5), (factor, factor), 17)
    lowered, report = lower(_model(r, run_time=(0, 2, 3)), semantics=INSTALLED)
    assert all("fold" in f for f in report[0].forms), report[0].forms
    sess = session(lowered)
    for shape in ((1, 3, 0, 4), (2, 3, 1, 1), (1, 3, 1, 6), (1, 3, 2, 3)):
        dy = np.random.default_rng(0).standard_normal((shape[0], 3, factor * shape[2], factor * shape[3]))
        dx = sess.run(None, {"dY": dy.astype(np.float32), "X": np.zeros(shape, np.float32)})[0]
        assert dx.shape == shape
        if dy.size:
            want = forward_transposed(_spec(attrs, shape, (factor, factor), 17).to_json(), dy)
            np.testing.assert_allclose(dx, want, rtol=0, atol=3e-6 * np.abs(want).max(), err_msg=str(shape))


@pytest.mark.parametrize("opset", [10, 11, 12])
def test_static_form_below_opset_13_uses_the_attribute_spellings(opset):
    """ReduceSum's axes (an attribute before 13), Pad's pads (before 11): folded cubic and linear, edge-scaled
    linear (Resize-10: linear only, asymmetric)."""
    every = ({"mode": "cubic"}, dict(LINEAR, coordinate_transformation_mode="asymmetric"), LINEAR)
    for attrs in every if opset > 10 else (LINEAR,):
        r = _spec(attrs, (2, 3, 9, 12), (2, 2), opset)
        lowered, report = _lowered(r)
        assert all("conv x2" in f for f in report[0].forms), report[0].forms
        res = to_canonical(r, semantics=INSTALLED)
        dy = np.random.default_rng(opset).standard_normal(res.out_shape).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
        np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=0,
                                   atol=3e-6 * np.abs(dx).max(), err_msg=f"{attrs} {report[0].forms}")


def test_static_form_with_a_run_time_channel_count_views_one_channel():
    """C known only at run time (N and C symbolic, the spatial dims static): the Convs run on [-1, 1, H, W]."""
    r = _spec(LINEAR, (2, 3, 10, 14), (2, 2), 17)
    model = _model(r, run_time=(0, 1))
    from onnx_ops.lowering.plan import graph_info
    read = graph_info(model, INSTALLED).read(model.graph.node[0])      # the map as lower() reads it: N, C run time
    lowered, report = lower(model, semantics=INSTALLED,
                            calibration={signature(read[1], 17, np.float32): filter_conv.NAME})
    assert not report[0].dynamic and all("conv x2" in f for f in report[0].forms), report[0].forms
    for n, c in ((2, 3), (1, 5)):
        dy = np.random.default_rng(n).standard_normal((n, c, 20, 28)).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros((n, c, 10, 14), np.float32)})[0]
        want = forward_transposed(_spec(LINEAR, (n, c, 10, 14), (2, 2), 17).to_json(), dy)
        np.testing.assert_allclose(dx, want, rtol=0, atol=3e-6 * np.abs(want).max())

