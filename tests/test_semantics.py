"""The named ONNX semantics (nearest tie rules) without any runtime: the maps, the lowering's choice, the stamps.
tests/test_ort_parity.py checks them against the installed onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from conformance.reference import resize
from dml_desc import conventions
from dml_desc.conventions import onnx as onnx_conv, onnx_semantics
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from dml_desc.errors import DescError
from dml_desc.weights import snap_ties
from onnx_ops import IR_VERSION, OPSET, build_gradient, build_resize, build_resize_grad, lower, lower_file


def picks(r: OnnxResize) -> dict:
    """The input index each output reads, per semantics (x = arange, so the value is the index)."""
    x = np.arange(r.input_shape[0], dtype=np.float64)
    return {s: resize(x, to_canonical(r, s)).tolist() for s in onnx_conv.SEMANTICS}


def test_the_issue_example_separates_the_runtimes():
    """half_pixel, round_prefer_ceil, 20 -> 6: x(4) = 14.5, float32 14.4999995 (a tie only within 1e-6)."""
    r = OnnxResize([20], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, sizes=[6])
    assert picks(r) == {"ort-1.19": [1, 5, 8, 11, 14, 18], "ort-1.27": [1, 5, 8, 11, 15, 18],
                        "onnx-spec": [1, 5, 8, 11, 15, 18]}


def test_exact_arithmetic_differs_from_both_runtimes():
    """half_pixel_symmetric, scales 1.4 (float32 1.39999998), 19 -> 26: exactly x(2) = 9 - 10.5 / 1.39999998,
    just below 1.5; float32 gives 1.5000001. ort-1.19 rounds that up; ort-1.27 calls it a tie; the spec is below."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"}
    floor = picks(OnnxResize([19], {**attrs, "nearest_mode": "round_prefer_floor"}, scales=[1.4]))
    ceil = picks(OnnxResize([19], {**attrs, "nearest_mode": "round_prefer_ceil"}, scales=[1.4]))
    assert [floor[s][2] for s in onnx_conv.SEMANTICS] == [2, 1, 1]
    assert [ceil[s][2] for s in onnx_conv.SEMANTICS] == [2, 2, 1]


def test_floor_ceil_and_linear_carry_no_tolerance():
    for attrs in ({"mode": "nearest", "nearest_mode": "floor"}, {"mode": "linear"}):
        res = to_canonical(OnnxResize([20], attrs, sizes=[6]), "ort-1.27")
        assert res.axes[0].tie_tolerance == 0.0


def test_tie_tolerance_bounds():
    """onnxruntime >= 1.27 (probed): 9.54e-7 off k + 0.5 is a tie, 1.01e-6 is not, at any magnitude."""
    x = np.array([14.5 + 2.0 ** -20, 14.5 - 2.0 ** -20, 0.5 + 1.0133e-6, 16.5 + 1.9e-6, 3.25])
    assert snap_ties(x, 1e-6).tolist() == [14.5, 14.5, 0.5 + 1.0133e-6, 16.5 + 1.9e-6, 3.25]
    assert snap_ties(x, 0.0) is x


def test_semantics_names_are_checked_and_versions_map():
    r = OnnxResize([20], {"mode": "nearest"}, sizes=[6])
    with pytest.raises(DescError, match="semantics"):
        to_canonical(r, "ort-1.30")
    assert [onnx_conv.semantics_of(v) for v in ("1.19.2", "1.26.0", "1.27.0", "1.32.0", None)] == \
        ["ort-1.19", "ort-1.19", "ort-1.27", "ort-1.27", onnx_conv.NO_RUNTIME_SEMANTICS]
    assert onnx_conv.installed_semantics() == onnx_conv.semantics_of(onnx_conv.installed_runtime())


def test_keep_aspect_ratio_lengths_round_halves_up():
    """X [2, 4], sizes [5, 5], not_larger: scale min(2.5, 1.25) = 1.25; 2 * 1.25 = 2.5 -> 3 as onnxruntime rounds."""
    r = OnnxResize([2, 4], {"mode": "linear", "keep_aspect_ratio_policy": "not_larger"}, sizes=[5, 5])
    assert {to_canonical(r, s).out_shape for s in onnx_conv.SEMANTICS} == {(3, 5)}


@pytest.mark.parametrize("semantics,want", [("ort-1.19", 14), ("ort-1.27", 15), ("onnx-spec", 15)])
def test_lower_follows_the_chosen_semantics(semantics, want):
    """A nearest-tie ResizeGrad lowered under each semantics, run by onnx's own evaluator: dY = e_4 lands on the
    input that output 4 reads under that semantics. The report says which semantics it used."""
    r = OnnxResize([1, 1, 20], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, sizes=[1, 1, 6],
                   op_type="ResizeGrad")
    lowered, report = lower(build_resize_grad(r), semantics=semantics)
    assert [w.semantics for w in report] == [semantics]
    dy = np.zeros((1, 1, 6), np.float32)
    dy[..., 4] = 1
    dx = ReferenceEvaluator(lowered).run(None, {"dY": dy, "X": np.zeros((1, 1, 20), np.float32)})[0]
    assert np.flatnonzero(dx).tolist() == [want]


def test_models_built_from_scratch_are_stamped_for_the_training_build():
    """IR 9 and ai.onnx 19 whatever onnx is installed (onnx 1.18+ would stamp IR 11, which 1.19.2 refuses)."""
    r = OnnxResize([1, 1, 4, 4], {"mode": "linear"}, scales=[1, 1, 2, 2], op_type="ResizeGrad")
    for model in (build_resize_grad(r), build_resize_grad(r, lowered=True, semantics="ort-1.27"), build_resize(r)):
        assert model.ir_version == IR_VERSION == 9
        assert {o.domain: o.version for o in model.opset_import}[""] == OPSET == 19
        onnx.checker.check_model(model, full_check=True)


# The issue example: a tie within 1e-6 only, so the three semantics give three different gradients' weights.
TIE = OnnxResize([1, 1, 20], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, sizes=[1, 1, 6],
                 op_type="ResizeGrad")


def _library_results(semantics: str, tmp_path) -> list:
    """What every library entry that depends on the ONNX semantics gives under `semantics`, as bytes / values."""
    res = to_canonical(TIE, semantics)
    node, _ = onnx_conv.from_canonical(res, op_type="ResizeGrad", semantics=semantics)
    src = tmp_path / "tie.onnx"
    onnx.save(build_resize_grad(TIE), src)
    lower_file(str(src), str(tmp_path / f"{semantics}.onnx"), semantics=semantics)
    return [res, node, conventions.load("onnx", TIE.to_json(), semantics=semantics),
            conventions.dump("onnx", res, semantics=semantics),
            conventions.convert("onnx", "onnx", TIE.to_json(), semantics=semantics),
            build_gradient(res, semantics=semantics)[0].SerializeToString(),
            build_gradient(res, lowered=True, semantics=semantics)[0].SerializeToString(),
            build_resize_grad(TIE, lowered=True, semantics=semantics).SerializeToString(),
            lower(build_resize_grad(TIE), semantics=semantics).model.SerializeToString(),
            (tmp_path / f"{semantics}.onnx").read_bytes()]


@pytest.mark.parametrize("semantics", onnx_conv.SEMANTICS)
def test_library_results_do_not_depend_on_the_installed_runtime(semantics, tmp_path, monkeypatch):
    """With an explicit semantics, the library gives the same bytes whichever onnxruntime is installed (1.19.2,
    1.32.0 or none: installed_runtime stubbed) and never asks which one is (a stub that raises)."""
    results = []
    for version in ("1.19.2", "1.32.0", None, RuntimeError):
        def stub(version=version):
            if version is RuntimeError:
                raise RuntimeError("the library asked for the installed onnxruntime")
            return version
        for module in (onnx_semantics, onnx_conv):
            monkeypatch.setattr(module, "installed_runtime", stub)
        results.append(_library_results(semantics, tmp_path))
    assert all(r == results[0] for r in results[1:])
    other = next(s for s in onnx_conv.SEMANTICS if s != semantics and {s, semantics} != {"ort-1.27", "onnx-spec"})
    assert to_canonical(TIE, other) != results[0][0]        # the argument is honoured, not ignored


def test_omitting_the_semantics_is_the_projects_error(tmp_path, monkeypatch):
    """No library call path falls back to the installed onnxruntime: each omission is a DescError naming
    `semantics`, with installed_runtime stubbed to raise (the CLI's default, resolve_semantics, still reads it)."""
    def stub():
        raise AssertionError("the library asked for the installed onnxruntime")
    for module in (onnx_semantics, onnx_conv):
        monkeypatch.setattr(module, "installed_runtime", stub)
    res = to_canonical(TIE, "ort-1.27")
    src = tmp_path / "tie.onnx"
    onnx.save(build_resize_grad(TIE), src)           # an OnnxResize node is built as is: no semantics needed
    calls = {"to_canonical": lambda: to_canonical(TIE),
             "from_canonical": lambda: onnx_conv.from_canonical(res),
             "conventions.read": lambda: conventions.read("onnx", TIE.to_json()),
             "conventions.load": lambda: conventions.load("onnx", TIE.to_json()),
             "conventions.write": lambda: conventions.write("onnx", res),
             "conventions.dump": lambda: conventions.dump("onnx", res),
             "conventions.convert": lambda: conventions.convert("torch", "onnx", {"input_shape": [1, 1, 4],
                                                                                  "mode": "linear", "size": [8]}),
             "build_gradient": lambda: build_gradient(res),
             "build_gradient lowered": lambda: build_gradient(res, lowered=True),
             "build_resize_grad lowered": lambda: build_resize_grad(TIE, lowered=True),
             "build_resize_grad of a Resampling": lambda: build_resize_grad(res),
             "build_resize of a Resampling": lambda: build_resize(res),
             "lower": lambda: lower(build_resize_grad(TIE)),
             "lower_file": lambda: lower_file(str(src), str(tmp_path / "out.onnx"))}
    for name, call in calls.items():
        with pytest.raises(DescError) as e:
            call()
        assert e.value.field == "semantics" and "installed_semantics()" in e.value.rule, name
    with pytest.raises(AssertionError, match="asked for the installed"):
        onnx_conv.resolve_semantics(None)               # the documented default does read it
