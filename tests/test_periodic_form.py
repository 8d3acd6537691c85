"""The shape-generic periodic form (onnx_ops.forms.periodic, proven in onnx_ops.lowering.generic_forms): nearest at a
constant rational scale p/q with symbolic lengths, one graph for every length. Oracles: onnxruntime's own forward
Resize (its Jacobian on one-hot inputs, bitwise), dml_desc's reference gradient, the shared taps on lengths outside
the proof; real onnxruntime sessions, onnx's checker; bitwise determinism across thread counts."""
import numpy as np
import onnx
import pytest

from onnx_ops import build_resize, lower, run_model
from onnx_ops.model import graphs
from onnx_ops.forms.periodic import PeriodicForm
from onnx_ops.lowering.generic_forms import generic_form, periodic_lengths, proven_periodic_axis
from onnx_ops.run import session
from dml_desc.conventions.onnx import OnnxResize, installed_semantics, to_canonical
from conformance.reference import resize_grad
from tests.helpers_dynamic import GENERAL_PATH_OPS, grad_model, ops

INSTALLED = installed_semantics()
TORCH = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}   # its export
HALF = {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}
PYTORCH = {"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"}
PROVEN = [(TORCH, 1.5), (TORCH, 2.5), (TORCH, 1.75), (HALF, 1.25), (HALF, 0.75), (PYTORCH, 1.5), (PYTORCH, 2.5),
          ({"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn", "nearest_mode": "floor"},
           1.25)]


def key(attrs):
    return tuple(sorted((k, str(v)) for k, v in attrs.items()))


def reference(attrs, shape, dy, scales, opset):
    """dml_desc's reference gradient of the map a Resize of this opset reads (Resize-10 rounds its own way)."""
    res = to_canonical(OnnxResize(list(shape), attrs, None, scales, opset=opset), semantics=INSTALLED)
    return resize_grad(dy.astype(np.float64), res)


def dims_of(shape, scales):
    return [int(np.floor(n * np.float32(s))) for n, s in zip(shape, scales)]


def run(lowered, shape, scales, threads=0, seed=0):
    dy = np.random.default_rng(seed).standard_normal(dims_of(shape, scales)).astype(np.float32)
    return dy, session(lowered, threads=threads).run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]


@pytest.mark.parametrize("attrs, scale", PROVEN)
def test_periodic_form_is_onnxruntimes_forward_transposed_on_every_short_length(attrs, scale):
    """One lowered graph, lengths 1 to 40 and 97: dX for one-hot dY rows is the transposed Jacobian of onnxruntime's
    own Resize on one-hot X rows, bitwise (the zero rows, the Slice, the whole-tile branch, the copy branch)."""
    lowered, report = lower(grad_model(attrs, ["N", 1, "H", 1], ["N", 1, "H2", 1], [1, 1, scale, 1]),
                            semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic periodic") and not ops(lowered) & GENERAL_PATH_OPS
    sess = session(lowered)
    for n in list(range(1 if scale > 1 else 2, 41)) + [97]:      # 0.75 x 1 row: no dY row, refused (below)
        forward = build_resize(OnnxResize([n, 1, n, 1], attrs, None, [1, 1, scale, 1], opset=19))
        jacobian = run_model(forward, {"X": np.eye(n, dtype=np.float32).reshape(n, 1, n, 1)})[0][:, 0, :, 0].T
        m = jacobian.shape[0]
        dy = np.eye(m, dtype=np.float32).reshape(m, 1, m, 1)
        got = sess.run(None, {"dY": dy, "X": np.zeros((m, 1, n, 1), np.float32)})[0][:, 0, :, 0]
        np.testing.assert_array_equal(got, jacobian, err_msg=f"n={n}")


@pytest.mark.parametrize("attrs, dims, scales, opset, elem", [
    (TORCH, ["N", 8, "H", "W"], [1, 1, 1.5, 1.5], 19, np.float32),           # torch's export of scale_factor=1.5
    (HALF, ["N", "C", "H", "W"], [1, 1, 1.25, 1.25], 17, np.float32),        # X's shape copies at 1-3 rows
    (TORCH, ["N", 3, "D", "H", "W"], [1, 1, 2.5, 1, 1.5], 13, np.float32),   # 5-D, an axis kept between
    (HALF, ["N", 4, "H", "W"], [1, 1, 0.75, 1.25], 11, np.float32),          # down and up: empty dY at one row
    ({"mode": "nearest"}, ["N", 4, "L"], [1, 1, 1.75], 10, np.float32),         # opset 10: Concat, not Pad
    (PYTORCH, ["N", 4, "H", "W"], [1, 1, 1.5, 2.5], 21, np.float16),
    (TORCH, ["N", 4, "H", "W"], [1, 1, 1.5, 3.0], 19, np.float64),           # an integer factor beside
])
def test_periodic_form_is_the_reference_gradient(attrs, dims, scales, opset, elem):
    from onnx import helper
    model = grad_model(attrs, dims, [d if isinstance(d, int) else f"{d}2" for d in dims], scales, opset=opset,
                       elem=helper.np_dtype_to_tensor_dtype(np.dtype(elem)))
    lowered, report = lower(model, semantics=INSTALLED)
    onnx.checker.check_model(lowered, full_check=True)
    assert all(f.startswith("generic periodic") for f in report[0].forms), report[0].forms
    sess, rng = session(lowered), np.random.default_rng(3)
    for lengths in ([1, 1, 1], [2, 3, 2], [3, 3, 3], [8, 16, 24], [17, 9, 41], [33, 40, 7], [97, 113, 16]):
        sizes = iter(lengths)
        shape = [d if isinstance(d, int) else 2 if a == 0 else 3 if a == 1 else next(sizes) for a, d in enumerate(dims)]
        dy = rng.standard_normal(dims_of(shape, scales)).astype(elem)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, elem)})[0]
        assert got.shape == tuple(shape) and got.dtype == elem
        tol = 1e-2 if elem == np.float16 else 1e-5
        want = reference(attrs, shape, dy, scales, opset) if dy.size else np.zeros(shape)   # no dY row: zeros
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(shape))


@pytest.mark.parametrize("attrs, scale", PROVEN)
def test_periodic_axis_holds_beyond_its_proof(attrs, scale):
    """The form's table equals the shared taps on lengths the proof did not check."""
    from onnx_ops.lowering.generic_forms import _axis_table
    form = proven_periodic_axis(key(attrs), scale, 19)
    assert form is not None
    for n in (258, 300, 301, 302, 303, 511, 1000, 1001):
        assert n not in periodic_lengths(form.q)
        m = n * form.p // form.q
        assert not form.lost(n, m) and np.array_equal(form.dense(n, m), _axis_table(attrs, scale, n, 19, INSTALLED))


@pytest.mark.parametrize("attrs, scale", [
    (dict(HALF, coordinate_transformation_mode="half_pixel_symmetric"), 1.5),   # its adjustment moves with n
    ({"mode": "nearest", "coordinate_transformation_mode": "align_corners"}, 1.5),
    (dict(TORCH, nearest_mode="ceil"), 1.5),                       # the first row reads past its period
    ({"mode": "linear"}, 1.5),                                     # float32 weights drift from period to period
    (TORCH, 1.7),                                                  # float32 holds 1.7 with no short period
    (TORCH, 12.5),                                                 # past PERIODIC_MAX_FACTOR
])
def test_unproven_periodic_maps_keep_the_general_path(attrs, scale):
    assert proven_periodic_axis(key(attrs), scale, 19) is None
    lowered, report = lower(grad_model(attrs, ["N", 3, "H", "W"], ["N", 3, "H2", "W2"], [1, 1, scale, scale]),
                            semantics=INSTALLED)
    assert report[0].forms[0].startswith("dynamic: Resize(comb)") and ops(lowered) & GENERAL_PATH_OPS


def test_a_dy_of_another_shape_fails_in_onnxruntime_never_silently():
    lowered, _ = lower(grad_model(TORCH, ["N", 3, "H", "W"], ["N", 3, "H2", "W2"], [1, 1, 1.5, 1.5]),
                       semantics=INSTALLED)
    with pytest.raises(Exception, match="Reshape"):
        session(lowered).run(None, {"dY": np.zeros((1, 3, 16, 15), np.float32), "X": np.zeros((1, 3, 10, 10),
                                                                                             np.float32)})


@pytest.mark.parametrize("shape", [[0, 3, 8, 8], [2, 0, 8, 8], [2, 3, 0, 8], [2, 3, 8, 0], [0, 3, 5, 7]])
def test_an_empty_x_gives_an_empty_or_zero_dx(shape):
    scales = [1, 1, 1.5, 1.5]
    lowered, _ = lower(grad_model(TORCH, ["N", "C", "H", "W"], ["N", "C", "H2", "W2"], scales), semantics=INSTALLED)
    dy = np.zeros(dims_of(shape, scales), np.float32)
    dx = session(lowered).run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
    assert dx.shape == tuple(shape) and not dx.any()


def test_an_axis_past_the_float32_bound_is_refused_at_run_time():
    """The proof holds while n * p < 2**21 (float32 coordinates): a longer axis fails in the Reshape, not silently."""
    lowered, _ = lower(grad_model(TORCH, ["N", 1, "L"], ["N", 1, "L2"], [1, 1, 1.5]), semantics=INSTALLED)
    sess = session(lowered)
    for n, ok in ((699050, True), (699051, False)):         # 3 n just under and at 2**21
        dy = np.ones((1, 1, n * 3 // 2), np.float32)
        if ok:
            assert sess.run(None, {"dY": dy, "X": np.zeros((1, 1, n), np.float32)})[0].sum() == dy.sum()
        else:
            with pytest.raises(Exception, match="Reshape"):
                sess.run(None, {"dY": dy, "X": np.zeros((1, 1, n), np.float32)})


def test_periodic_form_is_bitwise_deterministic_across_threads():
    scales = [1, 1, 1.5, 1.25]
    lowered, report = lower(grad_model(HALF, ["N", 8, "H", "W"], ["N", 8, "H2", "W2"], scales), semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic periodic")
    runs = [run(lowered, [2, 8, 57, 41], scales, threads=t, seed=4)[1] for t in (1, 2, 4, 1)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs)


def test_integer_nearest_factors_keep_their_generic_forms():
    """The periodic form is tried only where no other shape-generic form is proven: x2 stays a block sum."""
    form = generic_form(dict(TORCH), ((2, 2), (3, 3)), [1, 1, 2.0, 2.0], ["N", 3, "H", "W"], 19)
    assert form is not None and not isinstance(form, PeriodicForm)
    assert isinstance(generic_form(dict(TORCH), ((2, 2), (3, 3)), [1, 1, 2.0, 1.5], ["N", 3, "H", "W"], 19),
                      PeriodicForm)


@pytest.mark.parametrize("attrs, scale, order", [(TORCH, 1.5, [3, 2]), (PYTORCH, 2.5, [3, 2]), (HALF, 0.75, [2, 3])])
def test_the_last_axis_is_contracted_first_where_it_shrinks(attrs, scale, order):
    """Where p > q the last axis's MatMul (the data on the left, cheaper per value in onnxruntime) runs first, so the
    other reads the smaller tensor; each axis is lengthened by a Concat with zeros, never a Pad (faster); the
    gradient is the reference's either way."""
    scales = [1, 1, scale, scale]
    lowered, report = lower(grad_model(attrs, ["N", 8, "H", "W"], ["N", 8, "H2", "W2"], scales), semantics=INSTALLED)
    assert report[0].forms[0].startswith("generic periodic") and "Pad" not in ops(lowered)
    lengthened = [[a.i for n in g.node if n.op_type == "Concat" for a in n.attribute if a.name == "axis" and a.i]
                  for g in graphs(lowered.graph)]
    assert order in lengthened
    shape = [2, 8, 37, 29]
    dy, dx = run(lowered, shape, scales)
    np.testing.assert_allclose(dx, reference(attrs, shape, dy, scales, 19), rtol=1e-5, atol=1e-5)
