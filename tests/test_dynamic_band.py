"""The run-time band form (onnx_ops.forms.dynamic_band) against onnxruntime's forward and the reference: several
tiles, padding rows, clamped windows, two axes, a batch axis that may be resized, opsets before 12, empty axes."""
import numpy as np
import pytest

from dml_desc.conventions.onnx import OnnxResize, installed_semantics
from onnx_ops import lower, run_model
from onnx_ops.run import session
from tests.helpers_dynamic import grad_model, ops, out_shape, reference

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


# ---- the band form (onnx_ops.forms.dynamic_band): several tiles, padding rows, clamped windows --------------

AC = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
BAND_CASES = [  # (attrs, scales or None (dY's shape gives the size), X rows n, dY rows m when sizes)
    (AC, None, 37, 91),                                                       # torch's align_corners export
    (AC, None, 96, 48),
    ({"mode": "linear"}, 1.7, 50, None),
    ({"mode": "linear", "antialias": 1}, 0.5, 97, None),                     # wide windows
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 2.5, 33, None),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, 0.75, 41, None),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, 1.5, 30, None),
    ({"mode": "cubic", "cubic_coeff_a": -0.75}, 1.5, 37, None),
    ({"mode": "cubic", "antialias": 1, "exclude_outside": 1}, 0.6, 40, None),
    ({"mode": "linear"}, 1.0 + 1 / 64, 64, None),                           # one extra row: a window of 1-2
]


@pytest.mark.parametrize("attrs,scale,n,m", BAND_CASES)
def test_band_form_is_onnxruntimes_forward_transposed(attrs, scale, n, m):
    """dY one-hot per batch row through the band form (axis 2 of 4-D) gives the rows of the Jacobian that
    onnxruntime's own Resize computes from one-hot X rows: bitwise, but for cubic (another kernel: 1e-6)."""
    from onnx_ops import build_resize
    scales = None if scale is None else [1, 1, scale, 1]
    roi = [0, 0, 0.1, 0, 1, 1, 0.9, 1] if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize" \
        else None
    sizes = None if m is None else [n, 1, m, 1]
    forward = build_resize(OnnxResize([n, 1, n, 1], attrs, roi, scales, sizes, opset=19))
    jacobian = run_model(forward, {"X": np.eye(n, dtype=np.float32).reshape(n, 1, n, 1)})[0][:, 0, :, 0].T
    m = jacobian.shape[0]                                                       # (m, n): dY row o, X row i
    model = grad_model(attrs, ["N", 1, "H", 1], ["N", 1, "H2", 1], scales, roi)
    signature = lower(model, semantics=INSTALLED)[1][0].signature    # nearest p/q: the periodic form by rule
    lowered, report = lower(model, calibration={signature: "general"} if signature else None, semantics=INSTALLED)
    assert report[0].forms == ("dynamic: Resize(comb) + gather (one tap), dense (cheaper) or band",)
    dy = np.zeros((m, 1, m, 1), np.float32)
    dy[np.arange(m), 0, np.arange(m), 0] = 1
    got = run_model(lowered, {"dY": dy, "X": np.zeros((m, 1, n, 1), np.float32)})[0][:, 0, :, 0]
    assert np.count_nonzero(jacobian) and got.shape == jacobian.shape
    if attrs["mode"] == "cubic":
        np.testing.assert_allclose(got, jacobian, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(got, jacobian)


def test_band_forms_on_two_axes_and_the_last_axis_are_the_reference_gradient():
    """5-D, three resized axes of other lengths through one model: two bands (several tiles) and a dense MatMul."""
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    lowered, report = lower(grad_model(attrs, ["N", 2, "D", "H", "W"], ["N", 2, "D2", "H2", "W2"]), semantics=INSTALLED)
    assert report[0].forms == ("dynamic: Resize(comb) + gather (one tap), dense (cheaper) or band",) * 2 + \
        ("dynamic: Resize(comb) + dense (n * m <= 65536) or band",)
    sess, rng = session(lowered), np.random.default_rng(5)
    for shape, sizes in (([2, 2, 17, 40, 9], [2, 2, 35, 19, 31]), ([1, 2, 5, 33, 50], [1, 2, 11, 80, 23])):
        dy = rng.standard_normal(sizes).astype(np.float32)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(got, reference(attrs, shape, dy, sizes=sizes), rtol=1e-5, atol=1e-5)


def _branch_outputs(graph, branch: str) -> list:
    """The op that computes the output of each `branch` subgraph of the Ifs named *unpadded* (nested ones too)."""
    found = []
    for node in graph.node:
        for attr in node.attribute:
            if attr.g.node:
                if "unpadded" in node.output[0] and attr.name == branch:
                    found += [n.op_type for n in attr.g.node if attr.g.output[0].name in n.output]
                found += _branch_outputs(attr.g, branch)
    return found


@pytest.mark.parametrize("batch", ["N", "M"])
def test_no_copy_of_dx_where_the_bands_have_no_padding_rows(batch):
    """A band's tiles cover n rows or a few more: the padding rows are sliced off, a copy of dX. An If skips that
    Slice where every banded length is a multiple of its tile, with or without a batch axis that may be resized:
    the gradient is the reference's either way (n = 32: no padding; 33 and 37: padding)."""
    attrs = {"mode": "linear"}
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], [batch, 2, "H2", "W2"], [1, 1, 2, 0.5]),
                       semantics=INSTALLED)
    # the last axis's contraction (its If) writes dX where there is no padding; the Slice, where there is
    assert _branch_outputs(lowered.graph, "then_branch") == ["If"]
    assert _branch_outputs(lowered.graph, "else_branch") == ["Slice"]
    sess, rng = session(lowered), np.random.default_rng(9)
    for h in (32, 33, 37):
        shape, sizes = [2, 2, h, 30], [2, 2, 2 * h, 15]
        dy = rng.standard_normal(sizes).astype(np.float32)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(got, reference(attrs, shape, dy, [1, 1, 2, 0.5]), rtol=1e-5, atol=1e-5)


def test_batch_axis_that_may_be_resized_is_skipped_or_contracted_at_run_time():
    """X's and dY's batch dims are different names: the batch axis may be resized. It is contracted last, or
    skipped (an If) where its length is unchanged (sizes: scale 1); the other axes' padding goes either way."""
    lowered, report = lower(grad_model(AC, ["N", 2, "H", "W"], ["M", 2, "H2", "W2"]), semantics=INSTALLED)
    assert report[0].axes == (0, 2, 3) and report[0].forms[0].endswith("band") and "If" in ops(lowered)
    used = {i for n in lowered.graph.node for i in n.input}                   # branches hold their own constants
    assert [t.name for t in lowered.graph.initializer if t.name not in used] == []
    sess, rng = session(lowered), np.random.default_rng(6)
    for shape, sizes in (([3, 2, 20, 7], [3, 2, 41, 9]), ([3, 2, 20, 7], [5, 2, 41, 9]), ([1, 2, 3, 4], [2, 2, 3, 4])):
        dy = rng.standard_normal(sizes).astype(np.float32)
        got = sess.run(None, {"dY": dy, "X": np.zeros(shape, np.float32)})[0]
        np.testing.assert_allclose(got, reference(AC, shape, dy, sizes=sizes), rtol=1e-5, atol=1e-5)


def test_band_needs_opset_12_and_the_dense_form_before_is_the_same_gradient():
    attrs, scales, shape = {"mode": "cubic"}, [1, 1, 1.7, 0.6], [2, 3, 40, 23]
    dy = np.random.default_rng(7).standard_normal(out_shape(attrs, shape, scales)).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(shape, np.float32)}
    results = {}
    for opset in (11, 12):
        lowered, report = lower(grad_model(attrs, ["N", 3, "H", "W"], ["N", 3, "H2", "W2"], scales, opset=opset),
                                semantics=INSTALLED)
        assert report[0].forms[0].endswith("band" if opset == 12 else "MatMul")
        results[opset] = run_model(lowered, feeds)[0]
    np.testing.assert_allclose(results[12], results[11], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[12], reference(attrs, shape, dy, scales), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs,scales,shape,dy_shape", [
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "ceil"}, [1, 1, 0.75, 2],
     [2, 3, 1, 4], [2, 3, 0, 8]),                            # floor(1 * 0.75) = 0 rows: nothing to differentiate
    ({"mode": "linear"}, [1, 1, 2, 0.75], [2, 3, 4, 1], [2, 3, 8, 0]),
    ({"mode": "linear"}, None, [2, 3, 4, 5], [2, 3, 0, 5]),
    ({"mode": "linear"}, None, [2, 3, 0, 5], [2, 3, 4, 5]),              # an empty X: an empty dX
])
def test_an_empty_axis_gives_zeros_not_a_run_time_failure(attrs, scales, shape, dy_shape):
    lowered, _ = lower(grad_model(attrs, ["N", "C", "H", "W"], ["N", "C", "H2", "W2"], scales, opset=17),
                       semantics=INSTALLED)
    got = run_model(lowered, {"dY": np.zeros(dy_shape, np.float32), "X": np.ones(shape, np.float32)})[0]
    assert got.shape == tuple(shape) and not got.any()


def _matmul_inputs(model, feeds, op: str = "MatMul") -> tuple:
    """dX and the input shapes of every `op` node onnxruntime ran (its profiler), one run of `model` on `feeds`."""
    import json
    import os
    import tempfile

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "p")
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)[0]
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    shapes = [[next(iter(t.values())) for t in e["args"]["input_type_shape"]] for e in events
              if e.get("cat") == "Node" and e["args"].get("op_name") == op and "input_type_shape" in e["args"]]
    return out, shapes


@pytest.mark.parametrize("attrs,n,m,window", [
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 48, 72, 24),
    ({"mode": "nearest"}, 64, 96, 24),                                   # half_pixel, round_prefer_floor
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 33, 65, None),   # not periodic
])
def test_periodic_last_axis_takes_the_shared_band_and_rows_are_viewed_not_gathered(attrs, n, m, window):
    """A run-time map periodic in the tiles (nearest 1.5x: 16 X rows read 24 dY rows, the same weights in every
    tile) contracts the last axis by one MatMul with tile 0's weights ([..., tiles, 24] @ [24, 16]) and reads the
    other axis's windows as a view of dY: the static shared band's spelling, the reference's gradient. A map that is
    not periodic takes the general forms."""
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"]), semantics=INSTALLED)
    shape, sizes = [2, 2, n, n], [2, 2, m, m]
    dy = np.random.default_rng(3).integers(-8, 9, sizes).astype(np.float32)
    got, matmuls = _matmul_inputs(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)})
    want = reference(attrs, shape, dy, sizes=sizes)
    if attrs["mode"] == "nearest":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    shared = [s for s in matmuls if len(s[1]) == 2 and s[0][-1] == s[1][0] and s[0][-2] * s[0][-1] == m]
    assert [s[1] for s in shared] == ([[window, n * window // m]] if window else [])


SPELLINGS = [  # (attrs, X's spatial dims, dY's, the spellings expected on H: "gather" / "dense" / "band")
    ({"mode": "linear"}, (40, 24), (15, 9), "gather"),              # downsampling 2.67x: each X row one dY row
    ({"mode": "nearest"}, (36, 20), (12, 7), "gather"),             # nearest downsampling
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, (10, 12), (17, 23), "dense"),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, (60, 12), (119, 23), "band"),
]


@pytest.mark.parametrize("attrs,x_hw,dy_hw,spelling", SPELLINGS)
def test_each_banded_axis_takes_its_cheapest_spelling_in_the_cheapest_order(attrs, x_hw, dy_hw, spelling):
    """At run time H takes a Gather and a Mul where each X row reads one dY row, the dense matrix where the cost
    model finds it cheaper than the band (short axes), else the band; where H grows in dX (downsampling) the last
    axis is contracted first, on dY's fewer rows. Each gives the reference's gradient, bitwise the same on 1, 2
    and 4 threads; the dense and one-tap spellings write n rows (no padding Slice)."""
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"]), semantics=INSTALLED)
    shape, sizes = [2, 2, *x_hw], [2, 2, *dy_hw]
    dy = np.random.default_rng(4).standard_normal(sizes).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(shape, np.float32)}
    got, matmuls = _matmul_inputs(lowered, feeds)
    _, gathers = _matmul_inputs(lowered, feeds, "Gather")
    _, slices = _matmul_inputs(lowered, feeds, "Slice")
    np.testing.assert_allclose(got, reference(attrs, shape, dy, sizes=sizes), rtol=1e-5, atol=1e-5)
    rows_on_h = [g for g in gathers if len(g[0]) == 4 and g[0][2] == dy_hw[0] and g[1] == [x_hw[0]]]
    dense_on_h = [mm for mm in matmuls if mm[0] == [x_hw[0], dy_hw[0]]]
    band_on_h = [mm for mm in matmuls if len(mm[0]) == 3 and len(mm[1]) == 5]
    assert (bool(rows_on_h), bool(dense_on_h), bool(band_on_h)) == (
        spelling == "gather", spelling == "dense", spelling == "band"), (gathers, matmuls)
    last = [mm for mm in matmuls if mm[1] == [dy_hw[1], x_hw[1]]]       # the last axis's dense matrix
    assert last and last[0][0][2] == (dy_hw[0] if x_hw[0] > dy_hw[0] else x_hw[0]), matmuls
    assert not [s for s in slices if s[0] and len(s[0]) == 4 and s[0][0] == 2] or spelling == "band", slices
    runs = [run_model(lowered, feeds, threads=t)[0] for t in (1, 2, 4)]
    assert all(r.tobytes() == got.tobytes() for r in runs)


def test_a_square_map_reads_its_taps_once_and_a_rectangle_per_axis():
    """H and W of the same lengths and scale (a square image) share one axis's taps and band (an If): onnxruntime
    runs half the probe Resizes, and the gradient is the reference's on squares and rectangles alike."""
    attrs = {"mode": "cubic"}
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"], [1, 1, 1.7, 1.7]),
                       semantics=INSTALLED)
    probes = {}
    for hw in ((20, 20), (20, 23), (23, 20)):
        shape = [2, 2, *hw]
        sizes = out_shape(attrs, shape, [1, 1, 1.7, 1.7])
        dy = np.random.default_rng(sum(hw)).standard_normal(sizes).astype(np.float32)
        got, resizes = _matmul_inputs(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)}, "Resize")
        np.testing.assert_allclose(got, reference(attrs, shape, dy, [1, 1, 1.7, 1.7]), rtol=1e-5, atol=1e-5)
        probes[hw] = len(resizes)
    assert 0 < 2 * probes[(20, 20)] == probes[(20, 23)] == probes[(23, 20)], probes


KEEPS = [{"mode": m, "coordinate_transformation_mode": c} for m in ("nearest", "linear", "cubic")
         for c in ("half_pixel", "align_corners", "tf_half_pixel_for_nn")] + [
    {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"},
    {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn", "nearest_mode": "round_prefer_ceil"},
    {"mode": "linear", "antialias": 1}]


@pytest.mark.parametrize("attrs", KEEPS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_a_batch_axis_of_unchanged_length_is_skipped_only_where_onnxruntime_copies_it(attrs):
    """A batch axis that may be resized (X's and dY's batch dims different names; sizes, or run-time scales) is
    skipped where its length is unchanged and its scale 1, without reading its taps, else contracted with them
    (tf_half_pixel_for_nn: the taps decide): the reference's gradient either way, with scale 1, with a kept length
    but scale 1.4 (2 rows stay 2; linear mixes them) and with a changed length."""
    sized = session(lower(grad_model(attrs, ["N", 2, "H", 5], ["M", 2, "H2", 7]), semantics=INSTALLED)[0])
    scaled = session(lower(grad_model(attrs, ["N", 2, "H", 5], ["M", 2, "H2", 7], [1, 1, 1.5, 1.4],
                                      run_time=("scales",)), semantics=INSTALLED)[0])
    rng = np.random.default_rng(2)
    for shape, scales in (([3, 2, 6, 5], [1, 1, 1.5, 1.4]), ([2, 2, 6, 5], [1.4, 1, 1.5, 1.4]),
                          ([2, 2, 6, 5], [2, 1, 1.5, 1.4])):
        sizes = out_shape(attrs, shape, scales)
        dy = rng.standard_normal(sizes).astype(np.float32)
        feeds = {"dY": dy, "X": np.zeros(shape, np.float32)}
        want = reference(attrs, shape, dy, scales)
        np.testing.assert_allclose(scaled.run(None, dict(feeds, scales=np.array(scales, np.float32)))[0], want,
                                   rtol=1e-5, atol=1e-5, err_msg=str(scales))
        np.testing.assert_allclose(sized.run(None, feeds)[0], reference(attrs, shape, dy, sizes=sizes), rtol=1e-5,
                                   atol=1e-5, err_msg=str(sizes))


@pytest.mark.parametrize("scale", [0.375, 1.7])
def test_constant_scales_decide_the_order_when_lowering(scale):
    """Constant scales tell whether H grows in dX (all below 1) or not: the order is fixed when lowering, no If
    holds both orders, and the last axis's MatMul runs on dY's rows where H grows, on X's where it shrinks."""
    attrs, scales = {"mode": "linear"}, [1, 1, scale, scale]
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"], scales), semantics=INSTALLED)
    assert "Greater" not in ops(lowered)
    shape = [2, 2, 40, 24]
    sizes = out_shape(attrs, shape, scales)
    dy = np.random.default_rng(8).standard_normal(sizes).astype(np.float32)
    got, matmuls = _matmul_inputs(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)})
    np.testing.assert_allclose(got, reference(attrs, shape, dy, scales), rtol=1e-5, atol=1e-5)
    last = [mm for mm in matmuls if mm[1] == [sizes[3], shape[3]]]
    assert last and last[0][0][2] == (sizes[2] if scale < 1 else shape[2]), matmuls


PLANNED = [  # (attrs, scales or None, X's spatial dims, dY's (sizes), Unique nodes run: one_tap's 1, a band's 2)
    ({"mode": "linear"}, None, (40, 40), (15, 15), 1),          # one tap per X row (one_tap's Unique), dense last
    ({"mode": "linear"}, [1, 1, 2, 2], (20, 24), None, 0),      # growing, short: dense on both, no test, no band
    ({"mode": "nearest"}, None, (64, 64), (96, 96), 2),        # growing: no test; one band shared by H and W
    (AC, None, (60, 12), (119, 23), 2),                          # H's band; W: one tile, dense
    (AC, None, (60, 23), (45, 12), 3),                           # shrinking by < 2: the test (false), H's band
]


@pytest.mark.parametrize("attrs,scales,x_hw,dy_hw,uniques", PLANNED)
def test_the_band_is_planned_once_and_only_where_a_branch_may_take_it(attrs, scales, x_hw, dy_hw, uniques):
    """Each axis's run-time choices are computed once, outside the Ifs that contract it, and the band's plan (two
    Unique nodes) runs only where a branch may take it: not on a one-tap or a short axis (dense), once for a square
    whose H and W share it; the one-tap test (one Unique) runs only where the axis shrinks (m <= n: more dY rows
    than X rows put two taps on some X row) and no constant scale above 1 rules it out.
    The gradient is the reference's either way."""
    lowered, _ = lower(grad_model(attrs, ["N", 2, "H", "W"], ["N", 2, "H2", "W2"], scales), semantics=INSTALLED)
    shape = [2, 2, *x_hw]
    sizes = out_shape(attrs, shape, scales) if scales else [2, 2, *dy_hw]
    dy = np.random.default_rng(9).standard_normal(sizes).astype(np.float32)
    got, ran = _matmul_inputs(lowered, {"dY": dy, "X": np.zeros(shape, np.float32)}, "Unique")
    want = reference(attrs, shape, dy, scales) if scales else reference(attrs, shape, dy, sizes=sizes)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert len(ran) == uniques, ran


LONG_LAST = [  # (attrs, X, run-time scales with static lengths, or None: sizes with symbolic N / spatial dims)
    ({"mode": "cubic"}, [1, 2, 368], [1, 1, 2.5]),
    ({"mode": "nearest"}, [1, 2, 5, 341], [1, 1, 1.5, 0.4]),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, [1, 2, 286],
     [1, 1, 2.5]),
    ({"mode": "linear", "antialias": 1}, [1, 2, 5, 322], [1, 1, 1.5, 0.6]),
    (AC, [1, 2, 5, 392], None),
    ({"mode": "linear"}, [1, 2, 401], None),
]


@pytest.mark.parametrize("attrs,shape,scales", LONG_LAST)
def test_a_long_last_axis_with_static_lengths_gives_the_reference_gradient(attrs, shape, scales):
    """A last axis too long for the dense matrix (n * m > 2^16) takes its band between two Transposes. With static
    lengths and run-time scales, onnxruntime folds the choices' conditions when the session starts and inlines the
    branches they pick: the session starts (the unplanned band's stand-in is valid in every consumer's shapes, and no
    If nested in the inlined branch reads the moved axis) and the gradient is the reference's; with sizes too."""
    if scales is None:
        names = ["N", 2] + ["H", "W"][-(len(shape) - 2):]
        dy_shape = out_shape(attrs, shape, [1, 1] + [2.5] * (len(shape) - 2))
        model = grad_model(attrs, names, ["N", 2] + [f"{d}2" for d in names[2:]])
    else:
        dy_shape = out_shape(attrs, shape, scales)
        model = grad_model(attrs, shape, dy_shape, scales, run_time=("scales",))
    sess = session(lower(model, semantics=INSTALLED)[0])
    dy = np.random.default_rng(len(shape) + shape[-1]).standard_normal(dy_shape).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(shape, np.float32), "scales": np.array(scales or [], np.float32)}
    got = sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})[0]
    want = reference(attrs, shape, dy, scales) if scales else reference(attrs, shape, dy, sizes=list(dy_shape))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max())))
