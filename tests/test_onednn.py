"""The real oneDNN 3.2 (the `onednn` extra, libdnnl.so.3 through ctypes in a child process).

Skips with the reason where the library is not installed (CI's newest environment)."""
import json

import numpy as np
import pytest

from conformance.conv_reference import conv_data_grad
from conformance.deconv_suite import CASES
from conformance.onednn_suite import kernel_reference
from conformance.reference import resize_grad
from dml_desc import conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions import deconv, onednn
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.conventions.deconv import ConvSpec
from dml_desc.errors import ConversionError, DescError
from dml_desc.runtimes import onednn as runtime

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

needs_onednn = pytest.mark.skipif(runtime.missing_reason() is not None, reason=str(runtime.missing_reason()))
JIT = "jit:avx512_core"


def _doc(src_spatial, dst_spatial, channels, fmt, mode, batch=1, dtype="f32"):
    src = [batch, channels] + list(src_spatial) if fmt == "NCX" else [batch] + list(src_spatial) + [channels]
    dst = [batch, channels] + list(dst_spatial) if fmt == "NCX" else [batch] + list(dst_spatial) + [channels]
    op = {"kind": "InterpolateBackward", "attrs": {"mode": {"value": mode}, "sizes": {"value": list(dst_spatial)},
                                                    "data_format": {"value": fmt}},
          "inputs": [{"id": 0, "shape": src, "dtype": dtype}, {"id": 1, "shape": dst, "dtype": dtype}], "outputs": []}
    return {"graph": [op]}


def _problems():
    """Random 1-3 spatial-dim problems, the exact ties 2x2->3x3, 7->6, 5->4, the AVX-512 tie 28->2, large axes."""
    rng = np.random.default_rng(14)
    out = []
    for i in range(24):
        n = 1 + i % 3
        ins = [int(v) for v in rng.integers(1, 12, n)]
        outs = [int(v) for v in rng.integers(1, 16, n)]
        out.append((ins, outs, int(rng.integers(1, 5)), ("NCX", "NXC")[i % 2], ("nearest", "linear")[i // 2 % 2]))
    for fmt in ("NCX", "NXC"):
        for ch in (1, 3):
            out += [([2, 2], [3, 3], ch, fmt, "nearest"), ([7], [6], ch, fmt, "nearest"),
                    ([5], [4], ch, fmt, "nearest"), ([28], [2], ch, fmt, "nearest"),
                    ([5, 7], [4, 6], ch, fmt, "linear")]
    out += [([9464], [10236], 2, "NCX", "nearest"), ([7919], [5000], 2, "NCX", "nearest"),
            ([9464], [10236], 1, "NXC", "nearest"), ([3000], [7001], 2, "NXC", "linear"),
            ([9464], [10236], 1, "NCX", "linear")]
    return out


@needs_onednn
def test_interpolate_backward_agrees_with_the_reference_of_the_kernel_it_ran():
    cases, jobs = [], []
    for ins, outs, ch, fmt, mode in _problems():
        res = onednn.to_canonical(_doc(ins, outs, ch, fmt, mode, batch=2))
        rng = np.random.default_rng(len(jobs))       # nearest: small integers, so every float32 sum is exact
        dy = (rng.integers(-8, 9, res.out_shape) if mode == "nearest" else rng.standard_normal(res.out_shape))
        dy = dy.astype(np.float32)
        for api in ("graph", "primitive"):
            doc, _ = onednn.from_canonical(res, data_format=fmt)
            jobs.append(runtime.interpolate_job(doc["graph"][0], dy, api))
            cases.append((res, dy, mode, api))
    kernels = set()
    for (res, dy, mode, api), r in zip(cases, runtime.run_jobs(jobs)):
        assert not isinstance(r, Exception), r
        assert r["api"] == {"graph": "Graph", "primitive": "primitive"}[api] and r["version"] == "3.2.0"
        kernels.add(r["kernel"])
        want = kernel_reference(dy, res, r["kernel"])
        if mode == "nearest":
            assert np.array_equal(r["out"], want.astype(np.float32)), (res.in_shape, res.out_shape, r["kernel"])
        else:
            np.testing.assert_allclose(r["out"], want, rtol=0, atol=2e-6 * max(1, np.abs(want).max()))
    assert {"simple:any", JIT} <= kernels


@needs_onednn
def test_avx512_kernel_rounds_some_exact_ties_down_and_the_other_kernels_do_not():
    """NXC 28 -> 2 with dy = 1: the jit:avx512_core backward sends output 1 to input 20, not 21 (x = 20.5).
    Run twice, as this CPU allows and with ONEDNN_MAX_CPU_ISA=AVX2, so every CPU asserts the non-jit rounding
    against oneDNN's own forward transposed, and an AVX-512 CPU the jit kernel's departure too."""
    nxc = onednn.to_canonical(_doc([28], [2], 1, "NXC", "nearest"))
    ncx = onednn.to_canonical(_doc([28], [2], 3, "NCX", "nearest"))
    jobs = [runtime.interpolate_job(onednn.from_canonical(r, data_format=f)[0]["graph"][0], np.ones(r.out_shape),
                                    "primitive") for r, f in ((nxc, "NXC"), (ncx, "NCX"))]
    r_nxc, r_ncx = runtime.run_jobs(jobs)
    (r_avx2,) = runtime.run_jobs(jobs[:1], max_isa="AVX2")
    forward = runtime.axis_matrix(runtime.run_one(runtime.axis_forward_job("nearest", "NXC", 3, 0, 28, 2)))
    assert np.flatnonzero(forward.T @ np.ones(2)).tolist() == [7, 21]          # oneDNN's forward rounds the tie up
    assert np.flatnonzero(resize_grad(np.ones(nxc.out_shape), nxc).ravel()).tolist() == [7, 21]
    assert onednn.departures(nxc, JIT) == {1: [20, 21]}
    assert r_avx2["kernel"] != JIT and onednn.departures(nxc, r_avx2["kernel"]) == {}
    assert np.flatnonzero(r_avx2["out"].ravel()).tolist() == [7, 21]
    if r_nxc["kernel"] == JIT:
        assert np.flatnonzero(r_nxc["out"].ravel()).tolist() == [7, 20]
    else:
        assert np.array_equal(r_nxc["out"], r_avx2["out"])
    assert r_ncx["kernel"] == "simple:any" and onednn.departures(ncx, "simple:any") == {}
    assert np.flatnonzero(r_ncx["out"][0, 0]).tolist() == [7, 21]


@needs_onednn
def test_the_per_axis_forward_oracle_is_the_whole_forward_transposed():
    """The suite's oracle (J per spatial axis from oneDNN's forward on basis inputs) equals the J of the whole
    tensor (conformance.adjoint's identity batch): exactly for nearest, to float32 products for linear."""
    from conformance.adjoint import draw_onednn, onednn_matrix
    from conformance.onednn_suite import forward_transposed
    rng = np.random.default_rng(5)
    docs = [draw_onednn(rng) for _ in range(8)]
    assert {d["graph"][0]["attrs"]["data_format"]["value"] for d in docs} == {"NCX", "NXC"}
    assert {d["graph"][0]["attrs"]["mode"]["value"] for d in docs} == {"nearest", "linear"}
    jobs, axes = [], []
    for doc in docs:
        op = doc["graph"][0]
        fmt, mode = op["attrs"]["data_format"]["value"], op["attrs"]["mode"]["value"]
        src, dst = op["inputs"][0]["shape"], op["inputs"][1]["shape"]
        first = 2 if fmt == "NCX" else 1
        axes.append([first + k for k in range(len(src) - 2)])
        jobs += [runtime.axis_forward_job(mode, fmt, len(src), k, src[first + k], dst[first + k])
                 for k in range(len(src) - 2)]
    results = iter(runtime.run_jobs(jobs))
    for doc, array_axes in zip(docs, axes):
        op = doc["graph"][0]
        matrices = {a: runtime.axis_matrix(next(results)) for a in array_axes}
        dy = np.random.default_rng(1).integers(-8, 9, op["inputs"][1]["shape"]).astype(np.float64)
        whole = (onednn_matrix(doc).T @ dy.ravel()).reshape(op["inputs"][0]["shape"])
        if op["attrs"]["mode"]["value"] == "nearest":
            assert np.array_equal(forward_transposed(dy, matrices), whole)
        else:
            np.testing.assert_allclose(forward_transposed(dy, matrices), whole, rtol=0, atol=1e-5)


@needs_onednn
def test_a_listed_discrepancy_is_no_pass_and_a_change_in_the_table_fails(monkeypatch):
    """Issue 21: where oneDNN's backward is not its forward transposed, the check is a skip naming the listed
    reason; unlisted it fails; a listed case that agrees fails."""
    from conformance import onednn_suite as suite
    from conformance.suite import run_check

    def verdicts():
        checks = suite.departure_checks(suite.JobBatch())
        return {(c.case, c.backend): run_check(c) for c in checks if c.case.startswith("departure:28->2")}
    before = verdicts()
    tie, simple = ("departure:28->2:nearest:NXC:c1", suite.PRIMITIVE), ("departure:28->2:nearest:NCX:c3",
                                                                        suite.PRIMITIVE)
    assert all(r.oracle == suite.ORACLE for r in before.values())
    assert before[simple].status == "pass" and before[("departure:28->2:nearest:NCX:c3", "numpy-reference")].status \
        == "pass"
    if f"kernel {JIT} " in before[tie].reason:
        assert before[tie].status == "skip" and "not its forward transposed" in before[tie].reason
        assert before[tie].reason.startswith("documented as unsupported")
    else:                                               # a CPU without the jit kernel: the transpose, a pass
        assert before[tie].status == "pass"
    monkeypatch.delitem(suite.KNOWN_DISCREPANCIES, tie)
    monkeypatch.setitem(suite.KNOWN_DISCREPANCIES, simple, ("simple:any", "a reason"))
    after = verdicts()
    assert after[tie].status == ("fail" if before[tie].status == "skip" else "pass")
    assert after[simple].status == "fail" and "remove the entry" in after[simple].reason


def test_every_bound_signature_is_called():
    """No dead ctypes declarations: each function in SIGNATURES is called by name in the runtime's modules."""
    from pathlib import Path
    from dml_desc.runtimes.onednn import bindings
    folder = Path(bindings.__file__).parent
    source = "".join(p.read_text() for p in folder.glob("*.py") if p.name != "bindings.py")
    source += bindings.__loader__.get_source(bindings.__name__).split("class Failed")[1]    # after the table
    uncalled = [n for n in bindings.SIGNATURES if f'"{n}"' not in source and f"lib.{n}(" not in source]
    assert uncalled == []
    assert len(bindings.SIGNATURES) == 37


@needs_onednn
def test_float32_steps_move_ties_on_large_axes():
    """9464 -> 10236 at o = 9672: oneDNN's float steps give x = 8942.5 (exactly 8942.49922): index 8943."""
    res = onednn.to_canonical(_doc([9464], [10236], 2, "NCX", "nearest"))
    assert res.axes[2].coords is not None and res.axes[2].coords[9672] == 8942.5
    exact = onnx_conv.to_canonical(onnx_conv.OnnxResize([1, 2, 9464], {"mode": "nearest", "nearest_mode":
                                                                      "round_prefer_ceil"}, sizes=[1, 2, 10236]),
                                     semantics=INSTALLED)
    with pytest.raises(ConversionError):        # ONNX's exact map rounds that output down: not oneDNN's
        conventions.dump("onednn", exact)
    # 7919 -> 5000 nearest, 3000 -> 7001 and 9464 -> 10236 linear: oneDNN's backward kernels are not the
    # transpose of its own forward; the kernel model knows where (the test above checks it against oneDNN)
    for ins, outs, mode in (([7919], [5000], "nearest"), ([3000], [7001], "linear"), ([9464], [10236], "linear")):
        assert onednn.departures(onednn.to_canonical(_doc(ins, outs, 2, "NCX", mode)), "simple:any")
    assert onednn.departures(onednn.to_canonical(_doc([9464], [10236], 2, "NCX", "nearest")), "simple:any") == {}


@needs_onednn
def test_conv_transpose_backward_data_agrees_with_torch_autograd():
    from conformance.deconv_suite import torch_data_grad
    pytest.importorskip("torch", reason="torch is the independent oracle here")
    specs = [(s, f, w) for _, s, f, w in CASES] + [
        (ConvSpec(2, 6, 4, (5, 7), (3, 2), (2, 3), (3, 1), (2, 0), (0, 3), 2), "NCX", "XOI"),
        (ConvSpec(1, 4, 6, (6,), (3,), (2,), (2,), (1,), (0,), 2), "NXC", "IOX")]
    jobs, wants = [], []
    for i, (spec, fmt, wfmt) in enumerate(specs):
        rng = np.random.default_rng(i)
        dd, w = rng.standard_normal(spec.diff_dst_shape), rng.standard_normal(spec.weights_shape)
        want = torch_data_grad(spec, dd, w)
        np.testing.assert_allclose(conv_data_grad(dd, w, spec), want, atol=1e-9)
        ddl = dd if fmt == "NCX" else np.moveaxis(dd, 1, -1)
        wl = w if wfmt == "IOX" else np.transpose(w, list(range(2, w.ndim)) + [1, 0])
        dilated = any(d != 1 for d in spec.dilations)
        for api in ("primitive",) + (() if dilated else ("graph",)):
            jobs.append(runtime.deconv_job(spec, ddl, wl, fmt, wfmt, "f32", api))
            wants.append((fmt, want))
        if dilated:
            with pytest.raises(DescError, match="ignores dilations"):
                runtime.deconv_job(spec, ddl, wl, fmt, wfmt, "f32", "graph")
    for (fmt, want), r in zip(wants, runtime.run_jobs(jobs)):
        assert not isinstance(r, Exception), r
        got = r["out"] if fmt == "NCX" else np.moveaxis(r["out"], -1, 1)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1, np.abs(want).max()))


def _written_documents():
    docs = []
    rng = np.random.default_rng(3)
    maps = [onnx_conv.to_canonical(onnx_conv.OnnxResize([2, 3, 6, 10], {"mode": m}, sizes=[2, 3, a, b]),
                                   semantics=INSTALLED)
            for m in ("nearest", "linear") for a, b in ((12, 20), (9, 15), (3, 5))]
    maps += [onednn.to_canonical(_doc([int(i)], [int(o)], 2, "NXC", "linear")) for i, o in rng.integers(1, 40, (6, 2))]
    maps.append(onednn.to_canonical(_doc([7], [31], 2, "NCX", "nearest")))
    for res in maps:
        for backward in (True, False):
            for scales in (False, True):
                try:
                    docs.append(conventions.dump("onednn", res, backward, use_scales=scales)[0])
                except ConversionError:
                    pass
    for _, spec, fmt, _wfmt in CASES:
        for f in ("NCX", "NXC"):
            for w in ("IOX", "XOI"):
                docs.append(deconv.to_onednn(spec, f, w, "bf16" if f == fmt else "f32"))
    for mode in ("same_upper", "valid", "none"):            # read in lowercase, with a note; written as oneDNN wants
        doc = deconv.to_onednn(CASES[0][1])
        doc["graph"][0]["attrs"]["auto_pad"]["value"] = mode
        doc["graph"][0]["outputs"] = []
        reading = deconv.read("onednn", doc)
        notes = reading.notes
        assert notes and "read as" in notes[-1]
        docs.append(deconv.write("onednn", reading).obj)
    return docs


@needs_onednn
def test_every_written_document_is_accepted_by_onednn_add_op():
    docs = _written_documents()
    assert len(docs) > 40
    for doc in docs:
        attrs = doc["graph"][0]["attrs"]
        assert "output_padding" not in attrs and attrs.get("auto_pad", {}).get("value", "None") == "None"
        assert attrs.get("weights_format", {}).get("value", "XOI") in ("XOI", "IOX")
    results = runtime.run_jobs([runtime.accepts_job(d) for d in docs])
    assert [str(r) for r in results if isinstance(r, Exception)] == []


@needs_onednn
def test_use_scales_finds_the_float32_scale_that_gives_the_size():
    assert np.float32(31 / 7) * np.float32(7) < 31 and onednn.scale_for(7, 31) == float(np.nextafter(
        np.float32(31 / 7), np.float32(np.inf)))
    for i in range(1, 41):
        for o in range(1, 41):
            assert onednn.scaled_size(onednn.scale_for(i, o), i) == o
    res = onednn.to_canonical(_doc([7], [31], 2, "NCX", "nearest"))
    doc, _ = onednn.from_canonical(res, use_scales=True)
    dy = np.arange(62.0).reshape(1, 2, 31)
    r = runtime.run_one(runtime.interpolate_job(doc["graph"][0], dy))
    assert np.array_equal(r["out"], resize_grad(dy, res).astype(np.float32))


@needs_onednn
def test_onednn_errors_become_desc_errors_with_the_status_and_attribute():
    doc = deconv.to_onednn(CASES[0][1])
    doc["graph"][0]["attrs"]["output_padding"] = {"type": "s64[]", "value": [1, 1]}      # the old writer's output
    with pytest.raises(runtime.OnednnError) as e:
        runtime.run_one(runtime.accepts_job(doc))
    assert e.value.status == "dnnl_invalid_graph_op" and e.value.field == "attrs.output_padding"
    assert "dnnl_graph_add_op returned dnnl_invalid_graph_op" in str(e.value)


@needs_onednn
def test_an_abort_inside_onednn_becomes_a_desc_error_and_the_batch_goes_on():
    """oneDNN Graph's dilated ConvTransposeBackwardData throws an uncaught dnnl::error (abort) at compile."""
    spec = ConvSpec(1, 4, 4, (6, 6), (3, 3), (1, 1), (2, 2), (0, 0), (0, 0))
    op = deconv.to_onednn(spec)["graph"][0]
    bad = {"kind": "graph", "op": op, "inputs": {0: np.ones(spec.diff_dst_shape, np.float32),
                                                 1: np.ones(spec.weights_shape, np.float32)}}
    good = runtime.deconv_job(spec, np.ones(spec.diff_dst_shape), np.ones(spec.weights_shape), "NCX", "IOX", "f32",
                              "primitive")
    first, second = runtime.run_jobs([bad, good])
    assert isinstance(first, DescError) and "SIGABRT" in first.status and "aborted" in str(first)
    assert first.field == "kind" and first.value == "ConvTransposeBackwardData"
    assert np.array_equal(second["out"], conv_data_grad(np.ones(spec.diff_dst_shape), np.ones(spec.weights_shape),
                                                        spec).astype(np.float32))


def test_refused_conventions_and_a_missing_library_say_why(monkeypatch):
    ac = onnx_conv.to_canonical(onnx_conv.OnnxResize([1, 2, 4, 5], {"mode": "linear", "coordinate_transformation_mode":
                                                                  "align_corners"}, sizes=[1, 2, 7, 9]),
                                  semantics=INSTALLED)
    with pytest.raises(ConversionError, match="align_corners"):
        runtime.interpolate_backward(ac, np.ones(ac.out_shape))
    monkeypatch.setenv(runtime.LIB_ENV, "/nonexistent/libdnnl.so.3")
    with pytest.raises(DescError, match="is not a file"):
        runtime.run_jobs([])
    monkeypatch.delenv(runtime.LIB_ENV)
    monkeypatch.setattr(runtime.library, "_wheel_files", lambda: [])
    monkeypatch.setattr(runtime.library, "_prefixes", lambda: [])
    assert "pip install 'dml-desc[onednn]'" in runtime.missing_reason()
    with pytest.raises(DescError, match=r"dml-desc\[onednn\]"):
        runtime.run_jobs([runtime.accepts_job(deconv.to_onednn(CASES[0][1]))])
    from conformance.catalog import Skip
    from conformance.onednn_suite import onednn_checks
    with pytest.raises(Skip, match=r"dml-desc\[onednn\]"):
        onednn_checks()[0].run()


@needs_onednn
def test_dml_desc_run_on_every_backend(tmp_path, capsys):
    from dml_desc.cli import main
    spec = json.dumps({"op_type": "ResizeGrad", "opset": 19, "input_shape": [1, 3, 7, 5],
                       "attributes": {"mode": "linear"}, "sizes": [1, 3, 14, 10]})
    (tmp_path / "g.json").write_text(spec)
    dy = np.random.default_rng(0).standard_normal((1, 3, 14, 10))
    np.save(tmp_path / "dy.npy", dy)
    outs = {}
    for backend in ("numpy", "onnxruntime", "onednn"):
        assert main(["run", str(tmp_path / "g.json"), "--backend", backend, "--dy", str(tmp_path / "dy.npy"),
                     "-o", str(tmp_path / f"{backend}.npy")]) == 0
        outs[backend] = np.load(tmp_path / f"{backend}.npy")
    printed = capsys.readouterr().out
    assert "onednn 3.2.0, Graph API, kernel simple:any" in printed and "onnxruntime " in printed
    for backend in ("onnxruntime", "onednn"):
        np.testing.assert_allclose(outs[backend], outs["numpy"], atol=2e-6)
    # a dilated ConvTransposeBackwardData goes to the primitive API
    doc = deconv.to_onednn(CASES[1][1], CASES[1][2], CASES[1][3])
    (tmp_path / "d.json").write_text(json.dumps(doc))
    rng = np.random.default_rng(1)
    np.save(tmp_path / "dd.npy", rng.standard_normal(doc["graph"][0]["inputs"][0]["shape"]))
    np.save(tmp_path / "w.npy", rng.standard_normal(doc["graph"][0]["inputs"][1]["shape"]))
    for backend in ("numpy", "onednn"):
        assert main(["run", str(tmp_path / "d.json"), "--backend", backend, "--dy", str(tmp_path / "dd.npy"),
                     "--weights", str(tmp_path / "w.npy"), "-o", str(tmp_path / f"d_{backend}.npy")]) == 0
    assert "primitive API" in capsys.readouterr().out
    np.testing.assert_allclose(np.load(tmp_path / "d_onednn.npy"), np.load(tmp_path / "d_numpy.npy"), atol=1e-4)


@needs_onednn
def test_benchmark_columns_time_the_generic_kernel_on_nchw_and_the_jit_kernel_on_nhwc():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import resize_grad_bench as bench
    case = next(c for c in bench.QUICK if c.dtype == "float32")
    res, _, lowered, _ = bench.build(case)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(np.float32)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, np.float32)}
    want = resize_grad(dy.astype(np.float64), res)
    for layout, kernel in (("NCHW", "simple:any"), ("NHWC", JIT)):
        run = bench.PEERS[f"onednn {layout}"](case, lowered, feeds, 1)
        run()
        assert bench.ONEDNN_KERNELS[(case.name, layout)] == kernel
        got = run.keep[1] if layout == "NCHW" else np.moveaxis(run.keep[1], -1, 1)
        np.testing.assert_allclose(got, want, atol=1e-5 * max(1, np.abs(want).max()))


@needs_onednn
def test_an_attribute_onednn_graph_does_not_have_is_named_and_the_child_survives():
    doc = deconv.to_onednn(CASES[0][1])
    doc["graph"][0]["attrs"]["output_paddings"] = {"type": "s64[]", "value": [1, 1]}
    bad, good = runtime.run_jobs([runtime.accepts_job(doc), runtime.accepts_job(deconv.to_onednn(CASES[0][1]))])
    assert isinstance(bad, DescError) and bad.field == "attrs.output_paddings" and "not an attribute" in str(bad)
    assert good["api"] == "Graph"
