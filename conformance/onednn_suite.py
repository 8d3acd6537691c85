"""The real oneDNN (the `onednn` extra) in the conformance catalog, backend names onednn-graph / onednn-primitive.

Checks build their jobs lazily; the first check that runs sends a chunk of pending jobs to one oneDNN child
process (dml_desc.runtimes.onednn), so the suite pays the process start a few times, not per check.

The oracle of every resampling check is oneDNN's own forward transposed ("onednn-forward-transposed"): the
forward resampling primitive runs on every basis input of each spatial axis (one job per axis and size pair,
shared by the checks), giving that axis's J; the expected gradient is J^T dY, axis by axis. The library's map
(the NumPy reference of the document as dml-desc reads it) is judged against the same oracle. Where oneDNN's
backward kernel is not the transpose of its forward, the check is not a pass: it fails, unless the case is in
KNOWN_DISCREPANCIES with its reason (then it is a skip that says so, and a listed case that agrees fails).
Deconvolution is judged against a NumPy correlation, the writers' documents by oneDNN's add_op. Without the
library every check is a skip with the reason.
"""
from __future__ import annotations

import json

import numpy as np

from dml_desc.conventions import deconv, onednn
from dml_desc.runtimes import onednn as runtime

from .cases import once  # the job and the reference share one dy
from .catalog import CROSS_CASES, REFERENCE_DIR, Check, Skip, benchdnn_problems
from .conv_reference import conv_data_grad
from .deconv_suite import AUTO_PAD_CASES, CASES, TOL as DECONV_TOL, deconv_inputs, read_onednn_deconv
from .judges import benchdnn, benchdnn_fill, representable, within
from .reference import contract, resize_grad

GRAPH, PRIMITIVE = "onednn-graph", "onednn-primitive"
CHUNK = 96              # jobs per child process
GRAD_TOL = {"f32": 1e-5, "f16": 4e-3, "bf16": 3e-2}
ORACLE = "onednn-forward-transposed"
# f32 cases oneDNN answers `unimplemented` for, with the reason; any other f32 `unimplemented` fails.
F32_UNIMPLEMENTED: dict = {}
# (case, backend) -> (kernel, reason): where that oneDNN backward kernel is not the transpose of oneDNN's forward
# (measured on oneDNN 3.2.0, AVX-512 EPYC; docs/onednn.md). Listed: a skip saying so; listed but agreeing: a
# failure; differing but not listed (or another kernel): a failure.
_TIES = "jit:avx512_core finds the outputs of input i as ceil(i * float(out/in) - 0.5f): exact ties go down"
_NEAREST_STEPS = "simple:any's inverse rule ceil(i * out / in - 0.5f) in float32 steps moves ties on a large axis"
_LINEAR_RANGES = "bwd_linear_coeffs_t: index ranges from the inverse map, weights from the forward (a 1e-4 weight)"
KNOWN_DISCREPANCIES: dict = {(case, api): (kernel, why) for case, kernel, why in (
    ("departure:28->2:nearest:NXC:c1", "jit:avx512_core", _TIES),
    ("departure:22->29:nearest:NXC:c3", "jit:avx512_core", _TIES),
    ("departure:3000->7001:linear:NCX:c2", "simple:any", _LINEAR_RANGES),
    ("departure:7919->5000:nearest:NCX:c2", "simple:any", _NEAREST_STEPS)) for api in (PRIMITIVE, GRAPH)}


class JobBatch:
    """Jobs keyed in catalog order; a request runs the requested job and the next CHUNK - 1 pending ones."""
    missing: tuple[()] | str | None     # why oneDNN is missing here (None: it is not); (): not asked yet

    def __init__(self):
        self.makers, self.results, self.missing = {}, {}, ()
        self.axis_keys = {}         # (mode, format, rank, spatial axis, in, out) -> key of its forward job

    def add(self, make_job) -> int:
        """Register a job maker (called only when its result is first requested); returns its key."""
        key = len(self.makers)
        self.makers[key] = make_job
        return key

    def result(self, key: int, unimplemented_skips: bool = True, dtype: str = "f32", case: str = "") -> dict:
        """The job's result, run together with the next pending ones. Raises Skip where oneDNN is missing or
        (with `unimplemented_skips`) has no kernel for a documented case; re-raises the job's own error."""
        if self.missing == ():
            self.missing = runtime.missing_reason()
        if self.missing:
            raise Skip(self.missing)
        if key not in self.results:
            keys = [k for k in self.makers if k >= key and k not in self.results][:CHUNK]
            jobs, ready = [], []
            for k in keys:
                try:
                    jobs.append(self.makers[k]())
                    ready.append(k)
                except Exception as e:          # a job the builder refuses (e.g. dilations on the Graph API)
                    self.results[k] = e
            self.results.update(zip(ready, runtime.run_jobs(jobs)))
        r = self.results[key]
        if isinstance(r, runtime.OnednnError) and r.status == "dnnl_unimplemented" and unimplemented_skips:
            if dtype != "f32":
                raise Skip(f"oneDNN 3.2 has no {dtype} kernel for this on this CPU: {r}")
            if case in F32_UNIMPLEMENTED:
                raise Skip(f"documented as unsupported: {F32_UNIMPLEMENTED[case]} ({r})")
            raise AssertionError(f"oneDNN has no f32 kernel for this (unexpected: not in F32_UNIMPLEMENTED): {r}")
        if isinstance(r, Exception):
            raise r
        return r


def _with_kernel(judge, text: str):
    """The judge, with the kernel (and any departure) written into the record's reason."""
    def wrapped(got, want):
        ok, abs_err, rel_err, why = judge(got, want)
        return ok, abs_err, rel_err, "; ".join(t for t in (why, text) if t)
    return wrapped


def _kernel_text(result: dict) -> str:
    return f"onednn {result['version']} {result['api']} API, kernel {result['kernel']} (max ISA {result['isa']})"


def kernel_reference(dy: np.ndarray, res, kernel: str) -> np.ndarray:
    """The gradient the oneDNN backward `kernel` computes by the fitted model of its per-axis tables
    (onednn.backward_kernel_taps), in float64: it explains a discrepancy, it is never a check's oracle."""
    acc = np.asarray(dy, np.float64)
    for axis, taps in enumerate(onednn.backward_kernel_taps(res, kernel)):
        if taps is not None:
            acc = contract(acc, taps, axis)
    return acc


def forward_transposed(dy: np.ndarray, matrices: dict) -> np.ndarray:
    """J^T dY in float64: dY contracted along each array axis with that axis's J (out x in), {axis: J}."""
    acc = np.asarray(dy, np.float64)
    for axis, J in matrices.items():
        acc = np.moveaxis(np.tensordot(acc, J, axes=([axis], [0])), -1, axis)
    return acc


def _axis_jobs(batch, op: dict) -> dict:
    """{array axis: batch key} of the forward jobs giving each spatial axis's J (shared between checks)."""
    a = onednn.attrs_of(op)
    fmt = a.get("data_format", "NXC")
    mode = "linear" if a.get("mode") in ("linear", "bilinear", "trilinear") else a.get("mode")
    src, dst = op["inputs"][0]["shape"], op["inputs"][1]["shape"]
    rank, first = len(src), 2 if fmt == "NCX" else 1
    keys = {}
    for k in range(rank - 2):
        spec = (mode, fmt, rank, k, src[first + k], dst[first + k])
        if spec not in batch.axis_keys:
            batch.axis_keys[spec] = batch.add(lambda sp=spec: runtime.axis_forward_job(*sp))
        keys[first + k] = batch.axis_keys[spec]
    return keys


def _oracle(batch, axis_keys: dict, dy) -> np.ndarray:
    """oneDNN's forward transposed applied to dy."""
    return forward_transposed(dy, {ax: runtime.axis_matrix(batch.result(k)) for ax, k in axis_keys.items()})


def _resample_check(batch, case, res, op, op_of, dy_of, dtype, api, judge_of, full_only) -> Check:
    """One InterpolateBackward on oneDNN (`op_of()` in `dtype`), judged against oneDNN's forward transposed."""
    key = batch.add(lambda: runtime.interpolate_job(op_of(), dy_of(), api.split("-")[1]))
    axis_keys = _axis_jobs(batch, op)

    def run():
        r = batch.result(key, dtype=dtype, case=case)
        dy = representable(dy_of(), dtype)
        got, want = np.asarray(r["out"], np.float64), _oracle(batch, axis_keys, dy)
        verdict = _discrepancy_verdict(case, api, r, res, dy, got, want, judge_of(want))
        return got, want, verdict, ORACLE
    return Check(case, "onednn", api, dtype, run, full_only, ORACLE)


def _discrepancy_verdict(case, api, r, res, dy, got, want, judge):
    """The judge, or for a case in KNOWN_DISCREPANCIES (on the kernel listed) a skip naming the reason where
    oneDNN differs from its forward transposed and a failure where it no longer does."""
    listed = KNOWN_DISCREPANCIES.get((case, api))
    text = _kernel_text(r)
    if listed is None or listed[0] != r["kernel"]:
        return _with_kernel(judge, text)
    ok, abs_err, _, _ = judge(got, want)
    if ok:
        return _with_kernel(lambda g, w: (False, abs_err, None, f"listed in KNOWN_DISCREPANCIES ({listed[1]}) but "
                                          "agrees with oneDNN's forward transposed: remove the entry"), text)
    model = float(np.abs(got - kernel_reference(dy, res, r["kernel"])).max())
    where = ", ".join(f"axis {a} inputs {o[:6]}{'...' if len(o) > 6 else ''}"
                      for a, o in onednn.departures(res, r["kernel"]).items())
    raise Skip(f"documented as unsupported: oneDNN's backward is not its forward transposed here ({listed[1]}); "
               f"max abs err {abs_err:.3g}; the kernel model places it at {where or 'no input'} and reproduces the "
               f"result to {model:.2g}; {text}")


def library_map_check(batch, case, res, op, dy_of, full_only) -> Check:
    """The library's map of the document (the NumPy reference of what dml-desc reads), judged against oneDNN's
    forward transposed: the reader agrees with the library it describes."""
    axis_keys = _axis_jobs(batch, op)

    def run():
        dy = np.asarray(dy_of(), np.float64)
        want = _oracle(batch, axis_keys, dy)
        return resize_grad(dy, res), want, GRAD_TOL["f32"] * max(1.0, float(np.abs(want).max()))
    return Check(case, "onednn", "numpy-reference", "f32", run, full_only, ORACLE)


def benchdnn_checks(batch, full: bool) -> list:
    """benchdnn's resampling shapes (mb 2), nearest and linear, NCX and NXC, f32/bf16/f16, benchdnn's rule.
    The default run takes f32 and one of bf16/f16 per shape, in turn; --full takes all three and the big shapes."""
    checks, variant = [], 0
    for case, mode, fmt, doc, big in benchdnn_problems():
        res = onednn.to_canonical(doc)
        variant += 1
        op = doc["graph"][0]
        for dt in ("f32", "bf16", "f16"):
            rotated_out = dt != "f32" and dt != ("bf16", "f16")[variant % 2]    # default: f32 + one
            checks.append(_resample_check(
                batch, case, res, op,
                lambda r=res, d=dt, f=fmt: onednn.from_canonical(r, data_format=f, dtype=d)[0]["graph"][0],
                once(lambda r=res, d=dt: benchdnn_fill(r.out_shape, d)), dt, PRIMITIVE,
                lambda want, m=mode, d=dt: benchdnn(m, d), big or rotated_out))
        checks.append(library_map_check(batch, case, res, op, once(lambda r=res: benchdnn_fill(r.out_shape, "f32")),
                                        big))
    return checks


# Problems where docs/onednn.md found a backward kernel that is not the forward's transpose (NXC ties rounded down
# by jit:avx512_core; float-step inverse rules on large axes): (in, out, channels, format, mode, --full only)
DEPARTURE_PROBLEMS = [(28, 2, 1, "NXC", "nearest", False), (22, 29, 3, "NXC", "nearest", False),
                      (28, 2, 3, "NCX", "nearest", False), (3000, 7001, 2, "NCX", "linear", True),
                      (7919, 5000, 2, "NCX", "nearest", True)]


def departure_checks(batch) -> list:
    """The problems of DEPARTURE_PROBLEMS, f32, on both APIs, against oneDNN's forward transposed."""
    checks = []
    for ins, outs, ch, fmt, mode, big in DEPARTURE_PROBLEMS:
        src, dst = ([2, ch, ins], [2, ch, outs]) if fmt == "NCX" else ([2, ins, ch], [2, outs, ch])
        doc = {"graph": [{"kind": "InterpolateBackward", "attrs": {
            "mode": {"value": mode}, "sizes": {"value": [outs]}, "data_format": {"value": fmt}},
            "inputs": [{"shape": src}, {"shape": dst}], "outputs": []}]}
        res, case = onednn.to_canonical(doc), f"departure:{ins}->{outs}:{mode}:{fmt}:c{ch}"
        rng = np.random.default_rng(ins * 7 + outs)      # nearest: small integers, every float32 sum exact
        dy = rng.integers(-8, 9, res.out_shape) if mode == "nearest" else rng.standard_normal(res.out_shape)
        for api in (PRIMITIVE, GRAPH):
            checks.append(_resample_check(
                batch, case, res, doc["graph"][0], lambda r=res, f=fmt: onednn.from_canonical(r, data_format=f)[0][
                    "graph"][0], lambda d=dy: d, "f32", api,
                lambda want: within(GRAD_TOL["f32"] * max(1.0, float(np.abs(want).max()))), big))
        checks.append(library_map_check(batch, case, res, doc["graph"][0], lambda d=dy: d, big))
    return checks


def graph_json_checks(batch) -> list:
    """The vendored oneDNN Graph JSON files, run as written (dtype swapped) through the Graph API."""
    checks = []
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("interpolate*.json")):
        doc = json.loads(path.read_text())
        res, case = onednn.to_canonical(doc), f"onednn-graph-json:{path.name}"
        dy_of = once(lambda r=res, n=path.name: np.random.default_rng(len(n)).standard_normal(r.out_shape))
        for dt in ("f32", "bf16", "f16"):
            api = GRAPH if dt != "f16" else PRIMITIVE     # an f16 Graph op without a kernel aborts oneDNN
            checks.append(_resample_check(
                batch, case, res, doc["graph"][0], lambda d=doc, t=dt: _retyped(d, t)["graph"][0], dy_of, dt, api,
                lambda want, d=dt: within(GRAD_TOL[d] * max(1.0, float(np.abs(want).max(initial=0)))), False))
        checks.append(library_map_check(batch, case, res, doc["graph"][0], dy_of, False))
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("deconv*.json")):
        spec, fmt, wfmt = read_onednn_deconv(json.loads(path.read_text()))
        checks += _deconv_checks(batch, f"onednn-graph-json:{path.name}", spec, fmt, wfmt, 11)
    return checks


def _retyped(doc: dict, dtype: str) -> dict:
    doc = json.loads(json.dumps(doc))
    for t in doc["graph"][0]["inputs"] + doc["graph"][0]["outputs"]:
        t["dtype"] = dtype
    return doc


def deconv_checks(batch) -> list:
    """The ConvTransposeBackwardData cases: the primitive API always, the Graph API where nothing is dilated."""
    checks = []
    for i, (name, spec, fmt, wfmt) in enumerate(CASES):
        checks += _deconv_checks(batch, name, spec, fmt, wfmt, i)
    for mode in AUTO_PAD_CASES:
        doc = deconv.to_onednn(CASES[0][1], "NCX", "IOX")
        doc["graph"][0]["attrs"]["auto_pad"]["value"] = mode
        doc["graph"][0]["outputs"] = []
        spec, fmt, wfmt = read_onednn_deconv(doc)
        checks += _deconv_checks(batch, f"deconv:auto_pad_{mode}", spec, fmt, wfmt, 7)
    return checks


def _deconv_checks(batch, name: str, spec, fmt: str, wfmt: str, seed: int) -> list:
    dd, w = deconv_inputs(spec, seed)
    ddl = dd if fmt == "NCX" else np.moveaxis(dd, 1, -1)
    wl = w if wfmt == "IOX" else np.transpose(w, list(range(2, w.ndim)) + [1, 0])
    out = []
    apis = [PRIMITIVE] + ([GRAPH] if all(d == 1 for d in spec.dilations) else [])
    for api in apis:
        for dt in ("f32", "bf16", "f16"):
            key = batch.add(lambda a=api, d=dt: runtime.deconv_job(spec, ddl, wl, fmt, wfmt, d, a.split("-")[1]))
            if api == GRAPH and dt == "f16":
                batch.makers[key] = lambda: _skip_job("an f16 ConvTransposeBackwardData without a kernel aborts "
                                                      "oneDNN Graph (the primitive API reports it)")
            out.append(Check(name, "onednn", api, dt,
                             lambda k=key, d=dt: _deconv_run(batch, k, spec, fmt, dd, w, d, name),
                             oracle="numpy-correlation"))
    return out


def _skip_job(reason: str):
    raise Skip(reason)


def _deconv_run(batch, key, spec, fmt, dd, w, dtype, case=""):
    r = batch.result(key, dtype=dtype, case=case)
    got = np.asarray(r["out"], np.float64)
    got = got if fmt == "NCX" else np.moveaxis(got, -1, 1)
    want = conv_data_grad(dd, w, spec)
    tol = DECONV_TOL[dtype] * max(1.0, float(np.abs(want).max())) * \
        (np.prod(spec.kernel) * spec.dst_channels / spec.groups) ** 0.5
    return got, want, _with_kernel(within(tol), _kernel_text(r))


def writer_checks(batch) -> list:
    """Every document the writers produce for the catalog's operators is accepted by oneDNN's add_op."""
    from dml_desc.conventions import onnx as onnx_conv
    from dml_desc.errors import ConversionError
    docs = []
    for name, attrs, sizes in CROSS_CASES:
        res = onnx_conv.to_canonical(onnx_conv.OnnxResize([2, 3, 6, 10], attrs, sizes=sizes),
                                     onnx_conv.STAND_IN_SEMANTICS)      # nearest / linear writers: shapes alike
        for scales in (False, True):
            try:
                doc, _ = onednn.from_canonical(res, use_scales=scales)
            except ConversionError:
                continue
            docs.append((f"writer:{name}{':scales' if scales else ''}", doc))
    for name, spec, fmt, wfmt in CASES:
        docs.append((f"writer:{name}", deconv.to_onednn(spec, fmt, wfmt)))
    checks = []
    for case, doc in docs:
        key = batch.add(lambda d=doc: runtime.accepts_job(d))
        checks.append(Check(case, "onednn", "onednn-writer", "f32",      # the writer under test; oneDNN judges
                            lambda k=key: _accepted(batch, k), oracle="oneDNN add_op"))
    return checks


def _accepted(batch, key):
    batch.result(key, unimplemented_skips=False)
    return np.zeros(1), np.zeros(1), 0.0


def onednn_checks(full: bool = False) -> list:
    """The checks that run the real oneDNN library (benchdnn shapes, the Graph JSON files, deconvolution);
    `full` adds the largest benchdnn shapes.
    """
    batch = JobBatch()
    return (benchdnn_checks(batch, full) + departure_checks(batch) + graph_json_checks(batch) + deconv_checks(batch)
            + writer_checks(batch))
