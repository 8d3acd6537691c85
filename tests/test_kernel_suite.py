"""The kernel developer's suite (issue 31): no false failures for a correct kernel in any convention, declared
support counted as coverage, a diagnosis naming the porting bug, --save-failures that reproduce, native kernels."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance import suite
from conformance.adjoint import Config, make_case
from conformance.backends.base import Plugin
from conformance.cases import backend_checks, kernel_cases
from dml_desc import conventions
from dml_desc.reference import resize_grad

ROOT = Path(__file__).resolve().parent.parent
SEM = conventions.onnx.installed_semantics()


def reference_kernel(convention, dtypes=("f64", "f32", "f16")):
    """A correct kernel in `convention`: the NumPy reference of the map its description states."""
    def fn(dy, description):
        options = {"semantics": SEM} if convention == "onnx" else {}
        return resize_grad(np.asarray(dy, np.float64), conventions.load(convention, description, **options)[0])
    fn.convention, fn.dtypes = convention, dtypes
    return fn


def verdicts(fn, cases, name="py:k:f"):
    return [suite.run_check(c) for c in backend_checks(Plugin(fn, name), cases)]


def catalog(*names):
    return [c for c in kernel_cases() if c.name in names]


def test_a_drawn_case_the_convention_cannot_state_is_skipped_with_the_reason():
    """Issue 31: the docs' kernel failed a randomized case the onnx writer refuses ('not in kernel_refusals.json')."""
    cfg = Config(opset=17, shape=[1, 4], sizes=[5, 5],
                 attrs={"mode": "cubic", "coordinate_transformation_mode": "tf_half_pixel_for_nn"})
    case = make_case(cfg, seed=0, name="adjoint-drawn")
    (record,) = verdicts(reference_kernel("onnx"), [case])
    assert record.status == "skip", record
    assert record.reason.startswith("documented as unsupported by the onnx converter: it cannot state this map")
    rank2 = make_case(Config(opset=19, shape=[2, 3], scales=[1.0, 2.0], attrs={"mode": "linear"}), seed=0)
    (record,) = verdicts(reference_kernel("torch"), [rank2])      # F.interpolate has no rank 2: a DescError
    assert record.status == "skip" and "F.interpolate takes 3- to 5-D inputs" in record.reason, record


def test_a_drawn_float64_case_is_judged_by_the_adjoint_rule():
    """J is float32: an exact float64 kernel is within the adjoint tolerance, not the catalog's 1e-12."""
    case = make_case(Config(opset=19, shape=[1, 1, 3, 4], scales=[1, 1, 1.5, 0.75], attrs={"mode": "linear"},
                            dtype="float64"), seed=1)
    (record,) = verdicts(reference_kernel("onnx"), [case])
    assert record.status == "pass", record


@pytest.mark.parametrize("convention", ["dml", "onednn", "onnx", "torch", "tf"])
def test_a_correct_kernel_in_any_convention_fails_nothing(convention):
    records = verdicts(reference_kernel(convention, ("f64", "f32", "f16", "bf16")), kernel_cases())
    assert not [r for r in records if r.status == "fail"], [(r.case, r.dtype, r.reason) for r in records
                                                             if r.status == "fail"][:5]
    assert any(r.status == "pass" for r in records)


def test_torch_float64_is_double_arithmetic():
    """torch computes float64 coordinates in double: the float64 reading is torch's autograd to 1e-14, the
    float32 one is not; a description exact only in float32 arithmetic skips its float64 case with the reason."""
    torch = pytest.importorskip("torch", reason="torch is not installed (the optional [torch] extra)")
    from dml_desc.conventions import torch as torch_conv
    rng = np.random.default_rng(0)
    for call in ({"input_shape": [1, 2, 3, 5], "mode": "bilinear", "size": [7, 4], "align_corners": False},
                 {"input_shape": [1, 2, 3, 5], "mode": "bicubic", "scale_factor": [2.3, 0.6], "align_corners": False},
                 {"input_shape": [1, 2, 4], "mode": "linear", "size": [8], "align_corners": True},
                 {"input_shape": [1, 1, 9, 7], "mode": "bicubic", "scale_factor": [0.45, 0.7], "antialias": True}):
        t = torch_conv.TorchInterpolate.from_json(call)
        x = torch.zeros(call["input_shape"], dtype=torch.float64, requires_grad=True)
        y = torch.nn.functional.interpolate(x, **t.kwargs())
        dy = rng.standard_normal(tuple(y.shape))
        y.backward(torch.from_numpy(dy))
        double = resize_grad(dy, torch_conv.to_canonical(torch_conv.TorchInterpolate.from_json({**call,
                                                                                             "dtype": "float64"})))
        single = resize_grad(dy, torch_conv.to_canonical(t))
        assert np.abs(double - x.grad.numpy()).max() < 1e-14
        assert np.abs(single - x.grad.numpy()).max() > 1e-9

    def autograd(dy, description):
        kw = {k: v for k, v in description.items() if k != "input_shape"}
        g = torch.from_numpy(np.ascontiguousarray(dy))
        x = torch.zeros(description["input_shape"], dtype=g.dtype, requires_grad=True)
        torch.nn.functional.interpolate(x, **kw).backward(g)
        return x.grad.numpy()
    autograd.convention, autograd.dtypes = "torch", ("f32", "f64")
    records = verdicts(autograd, catalog("export_resize_downsample_scales_linear", "cross:bilinear_x2_half_pixel"))
    by = {(r.case, r.dtype): r for r in records}
    skipped = by[("export_resize_downsample_scales_linear", "f64")]
    assert skipped.status == "skip" and "torch computes f64 coordinates in another arithmetic" in skipped.reason
    assert by[("export_resize_downsample_scales_linear", "f32")].status == "pass"
    assert by[("cross:bilinear_x2_half_pixel", "f32")].status == "pass"


def conformance(cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


PARTIAL = """
import numpy as np
from dml_desc import conventions
from dml_desc.reference import resize_grad as reference

def resize_grad(dy, description):
    res, _ = conventions.load("onnx", description, semantics=conventions.onnx.installed_semantics())
    if res.mode.value == "cubic":
        raise NotImplementedError("no cubic yet")
    return reference(dy, res)

def declared(dy, description):
    return resize_grad(dy, description)

declared.supports = {"modes": ("nearest", "linear"), "ctms": ("half_pixel", "asymmetric")}

def bad(dy, description):
    return dy

bad.supports = {"mode": ("linear",)}
"""


def test_declared_support_is_coverage_not_failure(tmp_path):
    (tmp_path / "partial.py").write_text(PARTIAL)
    raised = conformance(tmp_path, "--backend", "py:partial:resize_grad", "-k", "cross:", "--quiet", "--json", "r.json")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert raised.stdout.startswith("5 passed, 0 failed, 0 skipped, 1 unsupported by this kernel"), raised.stdout
    assert "coverage of py:partial:resize_grad: ran 5 of the 6 cases offered (83%)" in raised.stdout
    assert "unsupported 1: it raised NotImplementedError: no cubic yet" in raised.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    cover = report["summary"]["coverage"]["py:partial:resize_grad"]
    assert (cover["ran"], cover["unsupported"], cover["failed"]) == (5, 1, 0)
    declared = conformance(tmp_path, "--backend", "py:partial:declared", "-k", "cross:", "--quiet", "--html", "r.html")
    assert declared.returncode == 0 and "2 unsupported by this kernel" in declared.stdout, declared.stdout
    assert "it declares coordinate_modes=('half_pixel', 'asymmetric')" in declared.stdout
    assert "it declares modes=('nearest', 'linear')" in declared.stdout
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Coverage</h2>" in page and "4 of 6 (66%)" in page
    strict = conformance(tmp_path, "--backend", "py:partial:declared", "-k", "cross:", "--quiet", "--unsupported-fails")
    assert strict.returncode == 1 and "\n4 passed, 2 failed" in strict.stdout, strict.stdout
    bad = conformance(tmp_path, "--backend", "py:partial:bad", "-k", "cross:", "--quiet")
    assert bad.returncode == 2 and bad.stderr.startswith("dml-desc: error: py:partial:bad.supports"), bad.stderr
    assert "'mode' is no key it takes" in bad.stderr or "mode" in bad.stderr


def test_the_diagnosis_names_the_porting_bug_in_the_kernels_terms():
    """A torch kernel with align_corners flipped, an ONNX kernel rounding the other way, the docs' last-row bug."""
    from dml_desc.conventions import torch as torch_conv

    def flipped(dy, description):
        call = dict(description, align_corners=not description.get("align_corners", False))
        res = torch_conv.to_canonical(torch_conv.TorchInterpolate.from_json(call))
        return resize_grad(np.asarray(dy, np.float64), res)
    flipped.convention = "torch"
    (record,) = verdicts(flipped, catalog("cross:bilinear_x2_half_pixel"))
    assert record.status == "fail" and record.diagnosis.startswith("matches align_corners=True on axes 2, 3"), record

    def floor_kernel(dy, description):
        attrs = dict(description["attributes"], nearest_mode="floor")
        res, _ = conventions.load("onnx", dict(description, attributes=attrs), semantics=SEM)
        return resize_grad(np.asarray(dy, np.float64), res)
    floor_kernel.convention = "onnx"
    (record,) = verdicts(floor_kernel, catalog("cross:nearest_x1.5_half_pixel"))
    assert record.status == "fail" and "nearest_mode='floor'" in record.diagnosis, record.diagnosis

    def last_row_lost(dy, description):
        dx = reference_kernel("onnx")(dy, description)
        dx[..., -1, :] = 0
        return dx
    last_row_lost.convention = "onnx"
    (record,) = verdicts(last_row_lost, catalog("cross:bilinear_x2_half_pixel"))
    assert record.worst["axis"] == 2 and record.worst["axis_index"] == 5 and record.worst["edges"]["2"] == "last"
    assert record.worst["got"] == 0.0 and record.worst["expected"] != 0.0


def test_failures_are_saved_and_reproduce(tmp_path):
    from test_plugins import doc_modules
    doc_modules(tmp_path)
    proc = conformance(tmp_path, "--backend", "py:my_buggy_kernel:resize_grad", "-k", "cross:bilinear_x2", "--quiet",
                       "--save-failures", "failures")
    assert proc.returncode == 1 and "  saved: failures/cross_bilinear_x2_half_pixel" in proc.stdout, proc.stdout
    assert "  worst dX[" in proc.stdout and "all of the error at index 5 of axis 2" in proc.stdout, proc.stdout
    case = tmp_path / "failures" / "cross_bilinear_x2_half_pixel"
    assert sorted(p.name for p in case.iterdir()) == ["case.txt", "description.json", "dy.npy", "expected.npy",
                                                       "got.npy"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "dml_desc.cli", "run", str(case / "description.json"), "--dy",
                          str(case / "dy.npy"), "--backend", "numpy", "-o", str(tmp_path / "out.npy")],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    expected = np.load(case / "expected.npy")
    assert np.abs(np.load(tmp_path / "out.npy") - expected).max() <= 1e-5 * max(1, np.abs(expected).max())
    assert np.abs(np.load(case / "got.npy") - expected).max() > 0.1


GCC = shutil.which("gcc")


@pytest.mark.skipif(GCC is None, reason="gcc is not installed (Debian: apt-get install gcc)")
def test_a_native_kernel_over_directml_structs(tmp_path):
    """c:LIB.so:SYMBOL: the shipped example (DirectML's RESAMPLE_GRAD in C) passes what it runs; float16 returns
    1 (unsupported); the same source without pixel offsets fails, and the diagnosis names DirectML's fields."""
    from conformance.backends.native import EXAMPLE, header_path
    for name, flags in (("libexample.so", []), ("libbuggy.so", ["-DMISSING_OFFSETS"])):
        subprocess.run([GCC, "-O2", "-shared", "-fPIC", *flags, f"-I{header_path().parent}", "-o",
                        str(tmp_path / name), str(EXAMPLE), "-lm"], check=True)
    ok = conformance(tmp_path, "--backend", "c:libexample.so:resample_grad", "-k", "cross:", "--quiet")
    assert ok.returncode == 0 and ok.stdout.startswith("5 passed, 0 failed, 1 skipped"), ok.stdout + ok.stderr
    doc = conformance(tmp_path, "--backend", "c:libexample.so:resample_grad", "-k", "dml_documented_example",
                      "--quiet", "--dtype", "f32")
    assert doc.returncode == 0 and doc.stdout.startswith("1 passed"), doc.stdout + doc.stderr
    half = conformance(tmp_path, "--backend", "c:libexample.so:resample_grad", "-k", "onednn-graph-json",
                       "--quiet", "--dtype", "f16")
    assert "it raised NotImplementedError: resample_grad returned 1" in half.stdout, half.stdout
    bad = conformance(tmp_path, "--backend", "c:./libbuggy.so:resample_grad", "-k", "cross:bilinear_x2", "--quiet")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "diagnosis: matches InputPixelOffsets=[0.5, 0.5, 0.0, 0.0], OutputPixelOffsets=[-0.5, -0.5, 0.0, 0.0] " \
           "on axes 2, 3" in bad.stdout, bad.stdout
    missing = conformance(tmp_path, "--backend", "c:libnone.so:resample_grad", "--quiet")
    assert missing.returncode == 2 and "names no file 'libnone.so'" in missing.stderr, missing.stderr
    nosym = conformance(tmp_path, "--backend", "c:libexample.so:nope", "--quiet")
    assert nosym.returncode == 2 and "exports no symbol 'nope'" in nosym.stderr, nosym.stderr


def test_one_failing_case_closes_with_its_failure_not_a_skip_line(tmp_path):
    """README slip: `-k` on one failing case said 'everything selected was skipped'."""
    from test_plugins import doc_modules
    doc_modules(tmp_path)
    proc = conformance(tmp_path, "--backend", "py:my_buggy_kernel:resize_grad", "-k", "cross:bilinear_x2", "--quiet")
    assert proc.returncode == 1 and "0 passed, 1 failed, 0 skipped" in proc.stdout, proc.stdout
    assert "skipped" not in proc.stderr, proc.stderr


def test_explain_never_prints_o_over_inf():
    import math
    from dml_desc.canonical import AxisMap
    from dml_desc.explain import coordinate_rule
    assert coordinate_rule(AxisMap(3, 1, math.inf, 0.0, 0.0)) == "0"
    assert coordinate_rule(AxisMap(3, 6, 2, 0.5, -0.5)) == "(o + 0.5) / 2 - 0.5"


def test_fuzz_0_draws_no_randomized_case():
    """--fuzz 0 drew one torch and one oneDNN case anyway (max(1, N // 3))."""
    from conformance.adjoint import adjoint_checks, backend_adjoint_checks, drawn
    assert drawn(0, 0) == ((), (), ())
    assert adjoint_checks(0, 0) == [] and backend_adjoint_checks([Plugin(reference_kernel("torch"), "py:k:t")], 0) == []


@pytest.mark.parametrize("convention, runtime", [("torch", "torch"), ("onednn", "oneDNN")])
def test_each_runtimes_randomized_cases_reach_kernels_of_its_convention(convention, runtime):
    """The torch and oneDNN adjoint cases (each judged by its runtime's own forward transposed) are offered to a
    plug-in of that convention, not only the ONNX ones; an ONNX plug-in gets the ONNX ones only."""
    from conformance.adjoint import backend_adjoint_checks, drawn
    from test_readme import missing
    why = missing(runtime)
    if why:
        pytest.skip(why)
    own = drawn(12, 0)[1 if convention == "torch" else 2]
    assert own, f"no {convention} case was drawn"
    records = [suite.run_check(c) for c in backend_adjoint_checks([Plugin(reference_kernel(convention), "py:k:f")],
                                                                  12, 0)]
    mine = [r for r in records if r.case.startswith(f"adjoint-{convention}-")]
    assert {r.case for r in mine} == {c.name for c in own}
    assert all(r.status == "pass" and r.oracle == c.oracle for r, c in zip(mine, own)), mine
    onnx_checks = backend_adjoint_checks([Plugin(reference_kernel("onnx"), "py:k:o")], 12, 0)
    assert not [c for c in onnx_checks if c.case.startswith(("adjoint-torch-", "adjoint-onednn-"))]


def test_a_tf_kernel_gets_nchw_cases_as_nhwc():
    """TF image resize is NHWC: an NCHW case whose channels are not resized reaches a tf kernel on its NHWC
    permutation (dy and dX transposed); a rank-3 case skips with the converter's reason (a ConversionError)."""
    from dml_desc.errors import ConversionError
    seen = []

    def tf_kernel(dy, description):
        seen.append((description["input_shape"], dy.shape))
        return reference_kernel("tf")(dy, description)
    tf_kernel.convention = "tf"
    (record,) = verdicts(tf_kernel, catalog("cross:bilinear_x2_half_pixel"))
    assert record.status == "pass" and seen == [([2, 6, 10, 3], (2, 12, 20, 3))], (record, seen)

    def channels_first(dy, description):      # reads the NHWC buffers as NCHW: a layout bug the suite must see
        nchw = np.ascontiguousarray(dy).reshape(2, 3, 12, 20)
        res = conventions.load("tf", description)[0]
        res = res.with_(axes=tuple(res.axes[i] for i in (0, 3, 1, 2)))
        return resize_grad(nchw, res).reshape(2, 6, 10, 3)
    channels_first.convention = "tf"
    (record,) = verdicts(channels_first, catalog("cross:bilinear_x2_half_pixel"))
    assert record.status == "fail" and record.max_abs_err > 0.1, record
    rank3 = make_case(Config(opset=19, shape=[1, 2, 4], scales=[1.0, 1.0, 2.0], attrs={"mode": "linear"}), seed=0)
    (record,) = verdicts(reference_kernel("tf"), [rank3])
    assert record.status == "skip" and "rank=3: TF image resize takes NHWC (4-D) tensors" in record.reason, record
    with pytest.raises(ConversionError):
        conventions.dump("tf", rank3.res, backward=True)
