"""The band / dense MatMul forms and the cost-driven choice: picked where expected, exact against the NumPy
reference on onnxruntime, deterministic, and valid at opset 17 and the newest opset."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.reference import resize_grad
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.weights import gradient_taps
from onnx_ops import build_resize, build_resize_grad, lower, run_model
from onnx_ops.forms import MAX_BAND_ENTRIES, band, band_dense, plan_axes, shared_band
from tests.helpers_skips import empty_output

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


def _lowered(r: OnnxResize, dtype=np.float32):
    model = build_resize_grad(r, np.dtype(dtype), semantics=INSTALLED)
    for o in model.opset_import:
        if o.domain == "":
            o.version = r.opset
    return lower(model, semantics=INSTALLED)


def _check(r: OnnxResize, dtype=np.float32, seed=0, rtol=1e-5):
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = _lowered(r, dtype)
    dy = np.random.default_rng(seed).standard_normal(res.out_shape).astype(dtype)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, dtype)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_allclose(dx, want, rtol=0, atol=rtol * max(1.0, np.abs(want).max()), err_msg=str(report))
    return lowered, report


def _spec(mode, shape, sizes=None, scales=None, opset=19, **attrs):
    attrs = {"mode": mode, **attrs}
    if sizes is not None:
        return OnnxResize(list(shape), attrs, sizes=list(shape[:2]) + list(sizes), opset=opset, op_type="ResizeGrad")
    return OnnxResize(list(shape), attrs, scales=[1.0, 1.0] + list(scales), opset=opset, op_type="ResizeGrad")


# the padded form's nodes: the last axis lengthened (a Concat with zeros) and contracted, then the first, one Slice
LAST_AXIS_FIRST = ["ConstantOfShape", "Concat", "Reshape", "MatMul", "Reshape"] * 2 + ["Slice"]
# (spec, the per-axis forms the cost model must pick, the op types of the lowered graph)
PICKS = [
    (_spec("linear", (2, 3, 128, 128), sizes=(47, 47)), ("gather", "dense 1x47->128"),
     ["MatMul", "Gather", "Mul"]),      # one tap per X row: the last axis densely, then whole rows gathered, scaled
    (_spec("nearest", (2, 8, 128, 128), sizes=(41, 41)), ("gather", "dense 1x41->128"),
     ["MatMul", "Pad", "Gather"]),      # weights 0 or 1: the unread X rows gather a zero row padded on, no Mul
    (_spec("linear", (4, 16, 128, 128), sizes=(217, 217)), ("band 8x29->16", "dense 1x217->128"),
     ["Gather", "MatMul", "Reshape", "MatMul"]),
    (_spec("nearest", (4, 16, 128, 128), sizes=(192, 192), coordinate_transformation_mode="asymmetric",
           nearest_mode="floor"), ("band 8x24->16, shared",) * 2,
     ["Reshape", "MatMul", "Reshape", "Reshape", "MatMul", "Reshape"]),                  # rational p/q = 2/3 blocks
    (_spec("linear", (4, 16, 128, 128), scales=(2.0, 2.0), opset=17), ("conv x2 (zero pad 1+1, edge rows scaled)",) * 2,
     ["Mul", "Conv"]),                                                  # no antialias below 18: the filter conv
    (_spec("linear", (2, 3, 32, 32), scales=(2.0, 2.0), opset=17), ("dense 1x64->32",) * 2, ["MatMul", "MatMul"]),
    (_spec("linear", (4, 16, 128, 128), scales=(2.0, 2.0)), ("Resize(linear, antialias)",) * 2, ["Resize", "Mul"]),
    (_spec("linear", (4, 48, 113, 113), scales=(0.5, 0.5), opset=17), ("scatter x1/2",) * 2,
     ["Mul", "Resize", "Pad"]),          # x1/2 with a tail row: each dY row into its block, the tail padded
    (_spec("linear", (1, 16, 97, 97), scales=(0.5, 0.5), opset=17), ("scatter x1/2",) * 2,
     ["Mul", "Resize", "Pad"]),          # odd lengths: a tail row and column (measured 0.044 -> 0.030 ms)
    (_spec("nearest", (4, 48, 113, 113), scales=(0.5, 0.5), opset=17, coordinate_transformation_mode="asymmetric",
           nearest_mode="floor"), ("gather x1/2",) * 2,
     ["Reshape", "MatMul", "Reshape", "Pad", "Gather"]),     # torch's nearest x0.5, odd: unreached rows, a tail
    (_spec("linear", (4, 16, 130, 131), scales=(0.25, 0.25), opset=17), ("gather x1/4",) * 2,
     ["Reshape", "MatMul", "Reshape", "Pad", "Gather"]),     # linear x1/4 reaches rows 1 and 2 of 4
    (_spec("nearest", (8, 64, 31, 31), scales=(0.25, 0.25), opset=20, coordinate_transformation_mode="asymmetric",
           nearest_mode="floor"), ("gather x1/4",) * 2,
     ["MatMul", "Pad", "Gather"]),       # a tiny last axis: one dense MatMul writes its tail, no Pad of columns
    # 97 is prime: tiles of 16 X rows, the last one padded with 15 zero rows that a Slice drops (1.2-1.4x faster
    # than the dense MatMul, docs/benchmarks.md); not below 1.4x growth, nor in place of one-row tiles
    (_spec("linear", (2, 16, 97, 97), scales=(2.5, 2.5)), ("band 7x42->16, padded", "dense 1x242->97"),
     ["Gather", "MatMul", "Reshape", "Slice", "MatMul"]),
    (_spec("linear", (4, 16, 97, 97), scales=(1.25, 1.25)), ("dense 1x121->97",) * 2, ["MatMul", "MatMul"]),
    (_spec("linear", (1, 32, 97, 97), scales=(3.0, 3.0), coordinate_transformation_mode="pytorch_half_pixel"),
     ("band 97x5->1", "dense 1x291->97"), ["Gather", "MatMul", "Reshape", "MatMul"]),
    # dY padded to whole periods of x1.25 (5 dY rows per 4 X rows), each axis just before its contraction (a Concat
    # with zeros), shared bands over Reshapes, one Slice for both axes (nearest x1.25 on 8x16x113x97: 2.21 -> 1.31
    # ms, docs/benchmarks.md); the last axis first where it has more dY rows than X rows (padded.last_axis_first);
    # opset 10: the Slice's attribute form
    (_spec("nearest", (2, 16, 97, 97), scales=(1.25, 1.25), opset=10),
     ("band 7x20->16, shared, dY padded +19", "band 13x10->8, shared, dY padded +9"), LAST_AXIS_FIRST),
    (_spec("nearest", (4, 8, 113, 101), scales=(1.5, 1.75), coordinate_transformation_mode="half_pixel_symmetric"),
     ("band 6x30->20, shared, dY padded +11", "band 13x14->8, shared, dY padded +6"), LAST_AXIS_FIRST),
]


@pytest.mark.parametrize("r,forms,ops", PICKS, ids=lambda v: str(v)[:40] if isinstance(v, tuple) else None)
def test_cost_model_picks_the_expected_form_and_it_is_exact(r, forms, ops):
    lowered, report = _check(r)
    assert report[0].forms == forms
    assert [n.op_type for n in lowered.graph.node] == ops
    if ops == LAST_AXIS_FIRST:      # the Concats lengthen the last axis, then the first
        axes = [a.i for n in lowered.graph.node if n.op_type == "Concat" for a in n.attribute if a.name == "axis"]
        assert axes == [3, 2]


@pytest.mark.parametrize("shape,scales", [((2, 4, 64, 64), (1.5, 1.5)), ((1, 1, 40, 40, 40), (1.5, 1.5, 1.5)),
                                          ((3, 8, 52, 104), (2.5, 2.5))])
def test_shared_bands_contract_the_last_axis_first_where_it_shrinks(shape, scales):
    """Every axis a shared band of a rational scale, the last with more dY rows than X rows: its MatMul (the data on
    the left, which onnxruntime multiplies faster per value) runs first, whatever order the estimate took, and the
    gradient is the reference's."""
    lowered, report = _check(_spec("nearest", shape, scales=scales, coordinate_transformation_mode="asymmetric",
                                   nearest_mode="floor"))
    assert all(f.startswith("band") and "shared" in f for f in report[0].forms)
    constants = {t.name for t in lowered.graph.initializer}
    first = next(n for n in lowered.graph.node if n.op_type == "MatMul")
    assert first.input[0] not in constants and first.input[1] in constants


@pytest.mark.parametrize("spec,longer", [
    (_spec("nearest", (1, 1, 97, 97), scales=(1.25, 1.25)), [104, 112]),
    (_spec("linear", (1, 1, 97, 97), scales=(1.5, 1.5), coordinate_transformation_mode="align_corners"), [104, 112]),
    (_spec("linear", (1, 1, 113, 113), scales=(1.5, 1.5)), [120, 128]),
    (_spec("linear", (1, 1, 112, 112), scales=(1.5, 1.5)), []),   # dY's last row reads X row 112: clamped to 111
    (_spec("cubic", (1, 1, 97, 97), scales=(1.5, 1.5)), []),      # the last rows' taps reach past the end
    (_spec("nearest", (1, 1, 97, 97), sizes=(131, 131)), []),     # 131/97: no short period
])
def test_padded_dy_only_where_the_longer_map_agrees_with_the_real_one(spec, longer):
    """The padded form's longer axes: the same map on more rows, taken only where every real weight is the same and
    no real dY row reaches a padded X row (onnx_ops.forms.padded)."""
    from onnx_ops.forms.padded import axis_lengths, longer_axis
    res = to_canonical(spec, semantics=INSTALLED)
    ax = res.axes[2]
    agree = [n for n in axis_lengths(ax) if longer_axis(ax, res, n) is not None]
    assert agree == longer
    for n in agree:
        real, long = gradient_taps(ax, res).dense(), gradient_taps(longer_axis(ax, res, n), res).dense()
        assert np.array_equal(long[:ax.in_size, :ax.out_size], real) and not long[ax.in_size:, :ax.out_size].any()


@pytest.mark.parametrize("limits", [{"elements": 2 * 16 * 121 * 121}, {"axis": 125}])
def test_padded_dy_stays_within_the_size_budget(limits):
    """A map just inside the size budget (dml_desc.budget) lowers: the padded form's longer tensors and axes would
    pass the budget, so it steps aside for the plan on the real lengths, which stays exact."""
    from dml_desc import budget
    previous = budget.set_limits(**limits)
    try:
        _, report = _check(_spec("nearest", (2, 16, 97, 97), scales=(1.25, 1.25)))
    finally:
        budget.set_limits(**previous)
    assert not any("dY padded" in f for f in report[0].forms)
    assert "dY padded" in _lowered(_spec("nearest", (2, 16, 97, 97), scales=(1.25, 1.25)))[1][0].forms[0]


@pytest.mark.parametrize("mode,n,m,clamped", [("linear", 64, 128, True), ("linear", 50, 100, True),
                                               ("nearest", 48, 96, False), ("linear", 40, 80, True)])
def test_shared_band_matches_the_taps_with_clamped_windows(mode, n, m, clamped):
    r = OnnxResize([n], {"mode": mode}, sizes=[m], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    taps = gradient_taps(res.axes[0], res)
    plan = shared_band(taps, 0, 8 if n % 8 == 0 else 5)
    assert plan is not None and plan.shared and (plan.starts[0] < 0) == clamped   # edge windows read clamped rows
    np.testing.assert_allclose(band_dense(plan, m), taps.dense(), rtol=2e-6, atol=0)
    # issue 21: shared_band checks its band against the taps itself; judge it against an independent oracle
    np.testing.assert_allclose(band_dense(plan, m), _ort_gradient_matrix(n, m, mode=mode), rtol=2e-6, atol=1e-6)


def _ort_gradient_matrix(n: int, m: int, **attrs) -> np.ndarray:
    """The (n, m) gradient matrix A^T of a Resize n -> m as onnxruntime's own forward computes it: row i is the
    forward of the basis vector e_i (an oracle independent of the taps the bands are built from)."""
    fwd = OnnxResize([n, n], attrs, sizes=[n, m])
    return run_model(build_resize(fwd, semantics=INSTALLED), {"X": np.eye(n, dtype=np.float32)})[0]


def test_shared_band_is_refused_where_clamped_windows_differ_from_the_taps():
    """Cubic clamps X's indices, not dY's: the edge tiles differ, so only the per-tile band fits."""
    r = OnnxResize([32], {"mode": "cubic"}, sizes=[64], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    taps = gradient_taps(res.axes[0], res)
    assert shared_band(taps, 0, 8) is None
    np.testing.assert_allclose(band_dense(band(taps, 0, 8), 64), taps.dense(), rtol=0, atol=0)
    np.testing.assert_allclose(band_dense(band(taps, 0, 8), 64), _ort_gradient_matrix(32, 64, mode="cubic"),
                               rtol=2e-6, atol=1e-6)


def test_shared_band_is_refused_where_one_tile_alone_exceeds_the_band_bound():
    """issue 35 (mypy): nearest x4097 on a 192 axis: one tile of 64 X rows reads 64 * 4097 dY rows, past
    MAX_BAND_ENTRIES; shared_band said so with an AttributeError (band's None), and the planner with it."""
    r = OnnxResize([192], {"mode": "nearest"}, sizes=[192 * 4097], op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    taps = gradient_taps(res.axes[0], res)
    assert 64 * 64 * 4097 > MAX_BAND_ENTRIES and band(taps, 0, 64) is None
    assert shared_band(taps, 0, 64) is None
    assert shared_band(taps, 0, 32) is not None          # half the tile fits the bound


def test_band_covers_any_map_exactly():
    r = OnnxResize([37], {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, sizes=[101],
                   op_type="ResizeGrad")
    res = to_canonical(r, semantics=INSTALLED)
    taps = gradient_taps(res.axes[0], res)
    oracle = _ort_gradient_matrix(37, 101, mode="cubic", coordinate_transformation_mode="align_corners")
    for tile in (1, 37, 8, 16):            # 8 and 16 do not divide 37: the last tile's extra rows are zero
        plan = band(taps, 0, tile)
        assert plan.padding == -37 % tile and not plan.matrices[-1, tile - plan.padding:].any()
        np.testing.assert_array_equal(band_dense(plan, 101), taps.dense())
        np.testing.assert_allclose(band_dense(plan, 101), oracle, rtol=2e-6, atol=1e-6)


def test_float16_and_float64_use_the_same_plans():
    r = _spec("linear", (1, 3, 40, 40), sizes=(67, 67))
    _check(r, np.float16, rtol=4e-3)
    lowered, report = _check(r, np.float64, rtol=1e-12)
    assert report[0].forms == _lowered(r)[1][0].forms


@pytest.mark.parametrize("make, padded", [(lambda n, c: _spec("linear", (n, c, 128, 128), sizes=(217, 217)), False),
                                          (lambda n, c: _spec("nearest", (n, c, 163, 163), scales=(1.25, 1.25)), True)],
                         ids=["band", "padded"])
def test_symbolic_batch_and_channels_keep_working(make, padded):
    """Reshapes keep leading dims with 0 (the padded form's Pad and Slice touch the resized axes only), so the same
    lowered graph runs for any N and C."""
    import onnx
    model = build_resize_grad(make(2, 3), semantics=INSTALLED)
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        dims[0].dim_param, dims[1].dim_param = "N", "C"
    lowered, report = lower(model, semantics=INSTALLED)
    assert report[0].forms[0].startswith("band") and not report[0].dynamic
    assert ("dY padded" in report[0].forms[0]) == padded
    onnx.checker.check_model(lowered, full_check=True)
    for n, c in ((2, 3), (1, 5)):
        res = to_canonical(make(n, c), semantics=INSTALLED)
        dy = np.random.default_rng(n).standard_normal(res.out_shape).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
        want = resize_grad(dy.astype(np.float64), res)
        np.testing.assert_allclose(dx, want, rtol=0, atol=1e-5 * np.abs(want).max())


def _same_bits_on_every_thread_count(r: OnnxResize, seed: int):
    """Lower `r`, run it on 1, 2 and 4 threads twice over and assert one result; returns (res, model, feeds)."""
    res = to_canonical(r, semantics=INSTALLED)
    model = _lowered(r)[0]
    dy = np.random.default_rng(seed).standard_normal(res.out_shape).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}
    assert len({run_model(model, feeds, threads=t)[0].tobytes() for t in (1, 2, 4, 1, 2)}) == 1
    return res, model, feeds


@pytest.mark.parametrize("r", [p[0] for p in PICKS[:4] + PICKS[-2:]],
                         ids=["dense", "band", "band-rational", "band-shared", "padded", "padded-symmetric"])
def test_band_forms_are_bitwise_deterministic_across_runs_and_threads(r):
    _same_bits_on_every_thread_count(r, 3)


@pytest.mark.parametrize("r", [p[0] for p in PICKS[:4] + PICKS[-2:]],
                         ids=["dense", "band", "band-rational", "band-shared", "padded", "padded-symmetric"])
def test_band_forms_never_make_a_non_finite_value_finite(r):
    """A MatMul multiplies by its matrix's zeros, so an inf or NaN in dY may turn other outputs of its window
    into NaN (0 * inf). Every dX entry the reference makes non-finite stays non-finite; the rest are exact."""
    res = to_canonical(r, semantics=INSTALLED)
    model = _lowered(r)[0]
    dy = np.random.default_rng(5).standard_normal(res.out_shape).astype(np.float32)
    dy[0, 0, 2, 3], dy[0, 1, 7, 5] = np.inf, np.nan
    dx = run_model(model, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    want = resize_grad(dy.astype(np.float64), res)
    assert np.all(~np.isfinite(dx[~np.isfinite(want)]))
    ok = np.isfinite(dx)
    assert np.all(np.isfinite(dx[1:])) and np.all(np.isfinite(dx[0, 2:]))     # other images and channels: untouched
    np.testing.assert_allclose(dx[ok], want[ok], rtol=0, atol=1e-5 * np.abs(want[ok]).max())


def test_plan_cost_prefers_dense_for_small_axes_and_bands_for_long_ones():
    small = to_canonical(_spec("linear", (8, 32, 128, 128), sizes=(47, 47)), semantics=INSTALLED)
    long = to_canonical(_spec("linear", (1, 1, 2048, 2048), sizes=(3000, 3000)), semantics=INSTALLED)
    assert plan_axes(small)[0][0].band.dense and plan_axes(small)[0][-1].kind == "gather"   # one tap per X row
    assert [(p.kind, p.band.tile) for p in plan_axes(long)[0]] == [("band", 16), ("band-t", 16)]   # transposed


@st.composite
def non_integer_grads(draw):
    """Random non-integer resizes of every mode, at opset 17 and 19, on 1 or 2 spatial axes."""
    opset = draw(st.sampled_from([17, 19]))
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    spatial = draw(st.integers(1, 2))
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 3))] + [draw(st.integers(2, 40)) for _ in range(spatial)]
    ctms = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"] + (["half_pixel_symmetric"]
                                                                                  if opset >= 19 else [])
    attrs = {"mode": mode, "coordinate_transformation_mode": draw(st.sampled_from(ctms))}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    elif opset >= 18 and draw(st.booleans()):
        attrs["antialias"] = 1
    if mode == "cubic" and draw(st.booleans()):
        attrs["exclude_outside"] = 1
    if mode == "cubic":
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
    if draw(st.booleans()):
        scales = [1.0, 1.0] + [draw(st.floats(0.3, 3.5).filter(lambda f: abs(f - round(f)) > 0.05))
                               for _ in range(spatial)]
        return OnnxResize(shape, attrs, scales=scales, opset=opset, op_type="ResizeGrad")
    sizes = shape[:2] + [draw(st.integers(1, 90)) for _ in range(spatial)]
    return OnnxResize(shape, attrs, sizes=sizes, opset=opset, op_type="ResizeGrad")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(non_integer_grads(), st.integers(0, 1000))
def test_lowering_of_non_integer_resizes_is_the_reference_gradient(r, seed):
    from hypothesis import assume
    from dml_desc import DescError
    try:
        to_canonical(r, semantics=INSTALLED)
    except DescError as e:         # scales that give an empty output; any other refusal fails (issue 21)
        if not empty_output(e, "scales"):
            raise
        assume(False)
    _check(r, seed=seed, rtol=2e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_gather_form_keeps_the_references_non_finite_pattern(mode):
    """Outputs piled on an edge (a DirectML descriptor whose Scales do not match its sizes): the cost model
    keeps the narrow gather form, which gives exactly the reference's pattern of non-finite entries."""
    from dml_desc import AxisMap, Resampling
    from onnx_ops.build import build_lowered
    res = Resampling((AxisMap.identity(2), AxisMap(400, 400, 0.5, 0.5, -0.5)), mode)
    assert [p.kind for p in plan_axes(res)[0]] == ["gather"]
    dy = np.ones(res.out_shape, np.float32)
    dy[0, 3], dy[1, 350] = np.inf, np.nan
    dx = run_model(build_lowered(res), {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    np.testing.assert_array_equal(np.isfinite(dx), np.isfinite(resize_grad(dy.astype(np.float64), res)))


@pytest.mark.parametrize("attrs", [{"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
                                   {"nearest_mode": "round_prefer_ceil"}, {}])
def test_nearest_downsampling_gathers_a_zero_row_for_the_rows_no_dy_row_reads(attrs):
    """Nearest downsampling reads one X row per dY row, so most X rows get no gradient: the gather form reads them
    from a zero row padded onto the smaller tensor, no Mul by 0 or 1. dX is the reference's bitwise, and an inf or
    NaN in dY never reaches an unread row: those stay exactly 0 (0 x inf was NaN there)."""
    r = _spec("nearest", (2, 3, 37, 64), sizes=(11, 20), **attrs)
    res = to_canonical(r, semantics=INSTALLED)
    lowered, report = _lowered(r)
    ops = [n.op_type for n in lowered.graph.node]
    assert "gather" in report[0].forms and "Pad" in ops and "Mul" not in ops, (report[0].forms, ops)
    dy = np.random.default_rng(5).integers(-9, 9, res.out_shape).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}
    np.testing.assert_array_equal(run_model(lowered, feeds)[0], resize_grad(dy.astype(np.float64), res))
    unread = resize_grad(np.ones(res.out_shape), res).sum(axis=(0, 1, 3)) == 0          # X rows no dY row reads
    assert unread.any()
    dy[:, :, ::3] = np.inf
    dx = run_model(lowered, feeds)[0]
    assert np.all(dx[:, :, unread] == 0) and not np.isfinite(dx[:, :, ~unread]).all()


def test_huge_factors_lower_within_the_band_cap():
    """A 68 -> 2,228,224 axis (scale 32768, found by fuzzing: a dense matrix once took 3 GB): every band the
    lowering considers is built from the sparse taps and capped, so the constants stay within MAX_BAND_ENTRIES."""
    from onnx_ops.forms import MAX_BAND_ENTRIES
    r = OnnxResize([1, 1, 4, 68], {"mode": "linear"}, scales=[1, 1, 2, 32768], op_type="ResizeGrad")
    lowered, report = lower(build_resize_grad(r, semantics=INSTALLED), semantics=INSTALLED)
    entries = sum(int(np.prod(t.dims)) for t in lowered.graph.initializer)
    assert report[0].forms[1].startswith("band") and entries <= MAX_BAND_ENTRIES + 4096


# ---- the pool form: AveragePool x block size (nearest x2, opsets 11-18) -----------------------------------------

POOLED = [_spec("nearest", (2, 3, 8, 12), scales=(2.0, 2.0), opset=17),
          _spec("nearest", (1, 4, 5, 7), scales=(2.0, 2.0), opset=11, coordinate_transformation_mode="asymmetric",
                nearest_mode="floor"),
          _spec("nearest", (2, 2, 3, 5, 4), scales=(2.0, 2.0, 2.0), opset=18),
          _spec("nearest", (2, 3, 6, 5), scales=(2.0, 2.0), opset=10)]


@pytest.mark.parametrize("r", POOLED, ids=["2d-op17", "2d-op11-odd", "3d-op18", "2d-op10"])
def test_pool_form_is_picked_at_opsets_with_mlas_pooling_and_is_exact(r):
    lowered, report = _check(r, rtol=1e-6)
    assert set(report[0].forms) == {"avgpool"}
    assert [n.op_type for n in lowered.graph.node] == ["Reshape", "AveragePool", "Mul", "Reshape"]


@pytest.mark.parametrize("r", [
    _spec("nearest", (2, 3, 8, 12), scales=(2.0, 2.0), opset=19),          # AveragePool-19: a generic loop, 2x slower
    _spec("nearest", (2, 3, 9, 12), scales=(3.0, 3.0), opset=17),          # windows of 3: slower than the band
    OnnxResize([2, 3, 12], {"mode": "nearest"}, scales=[1.0, 1.0, 2.0], opset=17, op_type="ResizeGrad"),   # 1 axis
    _spec("nearest", (2, 3, 8, 12), scales=(2.0, 1.0), opset=17),          # a pooled axis with window 1
    _spec("linear", (2, 3, 8, 12), scales=(2.0, 2.0), opset=17)], ids=["op19", "window3", "1d", "window1", "linear"])
def test_pool_form_is_not_used_where_it_measured_slower_or_does_not_apply(r):
    assert "avgpool" not in _check(r, rtol=2e-6)[1][0].forms


def test_pool_form_is_float32_only_and_float16_goes_through_it():
    r = POOLED[0]
    assert "avgpool" not in _check(r, np.float64, rtol=1e-12)[1][0].forms   # onnxruntime: no double AveragePool
    lowered, report = _check(r, np.float16, rtol=4e-3)
    assert set(report[0].forms) == {"avgpool"} and lowered.graph.node[0].op_type == "Cast"


@pytest.mark.parametrize("r", POOLED[::2], ids=["2d", "3d"])
def test_pool_form_is_bitwise_deterministic_and_keeps_the_non_finite_pattern(r):
    res, model, feeds = _same_bits_on_every_thread_count(r, 8)
    dy = feeds["dY"]
    dy.reshape(-1)[[3, 17]] = np.inf, np.nan
    dy.reshape(-1)[18] = -np.inf
    dx = run_model(model, feeds)[0]
    want = resize_grad(dy.astype(np.float64), res)
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(dx), np.isposinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(dx[finite], want[finite], rtol=0, atol=1e-6 * np.abs(want[finite]).max())


def test_pool_form_keeps_symbolic_batch_and_channels():
    import onnx
    r = _spec("nearest", (2, 3, 6, 10), scales=(2.0, 2.0), opset=17)
    model = build_resize_grad(r, semantics=INSTALLED)
    model.opset_import[0].version = 17
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        dims[0].dim_param, dims[1].dim_param = "N", "C"
    lowered, report = lower(model, semantics=INSTALLED)
    assert set(report[0].forms) == {"avgpool"} and not report[0].dynamic
    onnx.checker.check_model(lowered, full_check=True)
    for n, c in ((2, 3), (1, 5)):
        dy = np.random.default_rng(n).standard_normal((n, c, 12, 20)).astype(np.float32)
        dx = run_model(lowered, {"dY": dy, "X": np.zeros((n, c, 6, 10), np.float32)})[0]
        np.testing.assert_allclose(dx, dy.reshape(n, c, 6, 2, 10, 2).sum((3, 5)), rtol=0, atol=1e-6 * np.abs(dx).max())


# ---- the registry (issue 21): one Form per spelling, walked in order --------------------------------------------

def _old_chain(res, opset: int, acc) -> str:
    """The hand-ordered if-chain `lower._contract` was before the registry (with the kron-pairs rule in front, as
    it was added), kept as the oracle of its order."""
    from onnx_ops.forms import (PREFER_RESIZE, block_factors, combined, conv_cost, conv_transpose_form, deconv_form,
                                find_resize, kron_cost, kron_form, pool_form, resize_cost)
    from onnx_ops.forms.cost import KRON_MARGIN
    from onnx_ops.forms import filter_conv, kron_pairs, padded, scatter
    from onnx_ops.forms.cost import filter_conv_cost
    if kron_pairs.applies(res, opset, np.dtype(acc).itemsize):       # the nearest x2 rule, first (issue 19)
        return kron_pairs.NAME
    kron, cost, blocks = kron_form(res), plan_axes(res, np.dtype(acc).itemsize)[1], block_factors(res)
    if acc is np.float32 and pool_form(res, blocks, opset) is not None:
        return "avgpool"
    if kron is not None and kron_cost(res, kron) <= KRON_MARGIN * cost:     # the margin since issue 34
        return "kron"
    conv = acc is np.float32 and kron is None and conv_cost(res) <= cost
    parts = deconv_form(res) if conv and blocks else None
    if parts and combined(res, parts):
        return "conv(ones)"
    if conv and conv_transpose_form(res) is not None:
        return "conv_transpose"
    down = scatter.static_form(res) if acc is np.float32 and opset >= 11 else None     # issue 34: downsampling
    if down is not None and scatter.cost(res, down, np.dtype(acc).itemsize) <= cost:
        return "scatter"
    if conv and blocks:
        return "block-sum"
    found = find_resize(res, opset) if acc is np.float32 else None
    if found and resize_cost(res, found[0]) <= PREFER_RESIZE * cost:
        return "Resize"
    filters = filter_conv.filter_conv_form(res, opset) if acc is np.float32 else None     # issue 19, round 3
    if filters and filter_conv_cost(res, filters.edge_scaled, filters.folds, np.dtype(acc).itemsize) <= cost:
        return filter_conv.NAME
    longer = padded.padded_form(res, np.dtype(acc).itemsize)      # issue 34, round 6: dY padded to whole tiles
    if longer is not None and longer.cost <= cost:
        return "padded"
    return "band"


def _random_maps(seed: int, count: int):
    """Random ONNX ResizeGrad maps (every mode, integer and fractional factors, ranks 2-5, opsets 11-21) with an
    accumulation type: drawn so that every form of the registry is the choice for some of them."""
    import random
    from dml_desc import DescError
    rng = random.Random(seed)
    while count:
        opset, rank = rng.choice([11, 13, 17, 18, 19, 21]), rng.choice([2, 3, 4, 4, 5])
        mode = rng.choice(["nearest", "nearest", "linear", "linear", "cubic"])
        shape = [rng.randint(1, 3), rng.randint(1, 24)] + [rng.choice([rng.randint(2, 40), 37, 74, 48, 64, 128])
                                                           for _ in range(rank - 2)]
        first = rng.choice([1, 2, 2, 2]) if rank > 2 else 0
        factors = [1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 1.5, 2.0, 2.0]
        scales = [1.0] * first + [rng.choice(factors) for _ in range(rank - first)]
        attrs = {"mode": mode, "coordinate_transformation_mode": rng.choice(["half_pixel", "asymmetric",
                                                                             "align_corners", "pytorch_half_pixel"])}
        if opset >= 18 and mode != "nearest" and rng.random() < 0.2:
            attrs["antialias"] = 1
        try:
            res = to_canonical(OnnxResize(shape, attrs, scales=scales, opset=opset, op_type="ResizeGrad"),
                               semantics=INSTALLED)
        except DescError as e:     # scales that give an empty output; any other refusal fails (issue 21)
            if not empty_output(e, "scales"):
                raise
            continue
        count -= 1
        yield res, opset, rng.choice([np.float32, np.float32, np.float64])


def test_the_registry_walk_picks_what_the_old_if_chain_picked_on_random_maps():
    from onnx_ops.forms import REGISTRY, Gradient, choose
    seen = set()
    # band:
    decisive = [(to_canonical(_spec("nearest", (2, 8, 64, 48), scales=(2.0, 2.0)), semantics=INSTALLED), 19,
                 np.float32),
                # the Conv forms step aside where kron applies, even when kron is estimated dearer than the plan
                (to_canonical(_spec("nearest", (3, 5, 48, 25), scales=(2.0, 2.0), opset=18), semantics=INSTALLED), 18,
                 np.float32),
                # scatter: linear x1/2 with a tail row (kron takes whole blocks)
                (to_canonical(_spec("linear", (4, 48, 113, 113), scales=(0.5, 0.5), opset=17), semantics=INSTALLED),
                 17, np.float32),
                # padded: nearest x1.25 on a prime length, dY padded to whole periods
                (to_canonical(_spec("nearest", (2, 16, 97, 97), scales=(1.25, 1.25)), semantics=INSTALLED), 19,
                 np.float32)]
    for res, opset, acc in list(_random_maps(0, 300)) + decisive:      # avgpool before kron: kron is cheaper
        picked = choose(Gradient(res, opset, acc))[0].name
        assert picked == _old_chain(res, opset, acc), (res, opset, acc)
        seen.add(picked)
    assert seen == {form.name for form in REGISTRY}          # the draw reaches every form


def test_the_registry_is_ordered_with_the_general_form_last():
    from onnx_ops.forms import FORMS, REGISTRY
    assert [f.name for f in REGISTRY] == ["kron-pairs", "avgpool", "kron", "conv(ones)", "conv_transpose", "scatter",
                                          "block-sum", "Resize", "filter-conv", "padded",
                                          "band"]
    assert len(FORMS) == len(REGISTRY)
    res = to_canonical(_spec("linear", (1, 2, 8, 12), scales=(2.0, 2.0)), semantics=INSTALLED)
    from onnx_ops.forms import Gradient
    assert FORMS["band"].static.applies(Gradient(res, 19, np.float64)) is not None     # always applies
    assert FORMS["Resize"].static.applies(Gradient(res, 19, np.float64)) is None       # no double Resize on the CPU


def test_one_registry_walks_every_scope_with_the_general_path_last():
    """Issue 35: one list of forms; a node with run-time lengths walks the shape-generic scopes, then the run-time
    path (band's), as a static node ends with band; every name a calibration cache held before still reads."""
    from onnx_ops.calibrate import FORM_NAMES, choices
    from onnx_ops.forms.registry import RUN_TIME_WALK, STATIC_WALK, names, scopes
    assert names(RUN_TIME_WALK) == ("kronpairs", "pool", "conv", "scatter", "block", "resize", "sepconv", "periodic",
                                    "general")
    assert [s.name for s in scopes(STATIC_WALK)][-1] == "band"
    assert [s.name for s in scopes(RUN_TIME_WALK)][-1] == "general"
    assert {"resize", "pool", "conv", "block", "sepconv", "kronpairs", "general"} <= set(FORM_NAMES)
    assert choices({"{}": "deconv(ones)"}) == {"{}": "conv(ones)"}        # a renamed form still reads


@pytest.mark.parametrize("name, forms", [("band", ("dense 1x16->8", "dense 1x24->12")),
                                         ("Resize", ("Resize(linear, antialias)",) * 2),
                                         ("kron", None)])
def test_contract_emits_a_named_form_where_it_applies_else_the_cost_models(name, forms):
    """A calibration names a form by signature; one the gradient cannot take (kron for linear x2) is ignored."""
    from onnx_ops.forms import signature
    r = _spec("linear", (1, 2, 8, 12), scales=(2.0, 2.0))
    res = to_canonical(r, semantics=INSTALLED)
    model = build_resize_grad(r, semantics=INSTALLED)
    lowered, report = lower(model, calibration={signature(res, 19, np.float32): name}, semantics=INSTALLED)
    assert report[0].forms == (forms or lower(model, semantics=INSTALLED).rewrites[0].forms)
    dy = np.random.default_rng(2).standard_normal(res.out_shape).astype(np.float32)
    dx = run_model(lowered, {"dY": dy, "X": np.zeros(res.in_shape, np.float32)})[0]
    np.testing.assert_allclose(dx, resize_grad(dy.astype(np.float64), res), rtol=0, atol=1e-5)


def test_find_resize_skips_only_maps_onnx_cannot_spell(monkeypatch):
    from dml_desc.errors import ConversionError
    from onnx_ops.forms import find_resize, resize
    res = to_canonical(_spec("linear", (1, 2, 8, 12), scales=(2.0, 2.0)), semantics=INSTALLED)
    assert find_resize(res, 19) is not None

    def refuse(*args, **kwargs):
        raise ConversionError("mode", "linear", "no exact spelling")
    monkeypatch.setattr(resize.onnx_conv, "from_canonical", refuse)
    assert find_resize(res, 19) is None

    def broken(*args, **kwargs):
        raise RuntimeError("a bug, not a refusal")
    monkeypatch.setattr(resize.onnx_conv, "from_canonical", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        find_resize(res, 19)
