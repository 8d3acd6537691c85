"""The real oneDNN (the `onednn` extra) in the conformance catalog, backend names onednn-graph / onednn-primitive.

Checks build their jobs lazily; the first check that runs sends a chunk of pending jobs to one oneDNN child
process (dml_desc.runtimes.onednn), so the suite pays the process start a few times, not per check. Every
record's reason names the kernel oneDNN picked; where a kernel departs from the oneDNN map (the
jit:avx512_core nearest tie rule), the check compares with that kernel's own map and the reason says where.
Without the library every check is a skip with the reason.
"""
from __future__ import annotations

import json

import numpy as np

from dml_desc.conventions import deconv, onednn
from dml_desc.runtimes import onednn as runtime

from .catalog import CROSS_CASES, REFERENCE_DIR, Check, Skip, benchdnn_problems
from .conv_reference import conv_data_grad
from .deconv_suite import AUTO_PAD_CASES, CASES, TOL as DECONV_TOL, _inputs
from .judges import benchdnn, benchdnn_fill, representable, within
from .reference import contract

GRAPH, PRIMITIVE = "onednn-graph", "onednn-primitive"
CHUNK = 96              # jobs per child process
GRAD_TOL = {"f32": 1e-5, "f16": 4e-3, "bf16": 3e-2}
# f32 cases oneDNN answers `unimplemented` for, with the reason; any other f32 `unimplemented` fails.
F32_UNIMPLEMENTED: dict = {}


class _Batch:
    """Jobs keyed in catalog order; a request runs the requested job and the next CHUNK - 1 pending ones."""

    def __init__(self):
        self.makers, self.results, self.missing = {}, {}, ()

    def add(self, make_job) -> int:
        key = len(self.makers)
        self.makers[key] = make_job
        return key

    def result(self, key: int, unimplemented_skips: bool = True, dtype: str = "f32", case: str = "") -> dict:
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


def _once(make):
    """`make`, called at most once (the job and the reference share one dy)."""
    box = []
    return lambda: box[0] if box else box.append(make()) or box[0]


def _with_kernel(judge, text: str):
    """The judge, with the kernel (and any departure) written into the record's reason."""
    def wrapped(got, want):
        ok, abs_err, rel_err, why = judge(got, want)
        return ok, abs_err, rel_err, "; ".join(t for t in (why, text) if t)
    return wrapped


def _kernel_text(result: dict, res, departures: dict) -> str:
    text = f"onednn {result['version']} {result['api']} API, kernel {result['kernel']}"
    if departures:
        where = ", ".join(f"axis {a} inputs {o[:6]}{'...' if len(o) > 6 else ''}" for a, o in departures.items())
        text += (f"; FINDING: this kernel's backward is not the transpose of oneDNN's forward map (max ISA "
                 f"{result['isa']}) at {where}; compared with the kernel's own rule")
    return text


def kernel_reference(dy: np.ndarray, res, kernel: str) -> np.ndarray:
    """The gradient the oneDNN backward `kernel` computes, from its own per-axis tables, in float64."""
    acc = np.asarray(dy, np.float64)
    for axis, taps in enumerate(onednn.backward_kernel_taps(res, kernel)):
        if taps is not None:
            acc = contract(acc, taps, axis)
    return acc


def _resample_check(batch, case, res, op_of, dy_of, dtype, api, judge_of, full_only) -> Check:
    """One InterpolateBackward on oneDNN, judged against the reference of the map its kernel computes."""
    key = batch.add(lambda: runtime.interpolate_job(op_of(), dy_of(), api.split("-")[1]))

    def run():
        r = batch.result(key, dtype=dtype, case=case)
        dy = representable(dy_of(), dtype)
        want = kernel_reference(dy, res, r["kernel"] or "")
        departures = onednn.departures(res, r["kernel"] or "")
        text = _kernel_text(r, res, departures)
        oracle = "onednn-kernel-model (fitted tie rule)" if departures else "numpy-reference"
        return np.asarray(r["out"], np.float64), want, _with_kernel(judge_of(want), text), oracle
    return Check(case, "onednn", api, dtype, run, full_only, "numpy-reference")


def benchdnn_checks(batch, full: bool) -> list:
    """benchdnn's resampling shapes (mb 2), nearest and linear, NCX and NXC, f32/bf16/f16, benchdnn's rule.
    The default run takes f32 and one of bf16/f16 per shape, in turn; --full takes all three and the big shapes."""
    checks, variant = [], 0
    for case, mode, fmt, doc, big in benchdnn_problems():
        res = onednn.to_canonical(doc)
        variant += 1
        for dt in ("f32", "bf16", "f16"):
            rotated_out = dt != "f32" and dt != ("bf16", "f16")[variant % 2]    # default: f32 + one
            checks.append(_resample_check(
                batch, case, res,
                lambda r=res, d=dt, f=fmt: onednn.from_canonical(r, data_format=f, dtype=d)[0]["graph"][0],
                _once(lambda r=res, d=dt: benchdnn_fill(r.out_shape, d)), dt, PRIMITIVE,
                lambda want, m=mode, d=dt: benchdnn(m, d), big or rotated_out))
    return checks


def graph_json_checks(batch) -> list:
    """The vendored oneDNN Graph JSON files, run as written (dtype swapped) through the Graph API."""
    checks = []
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("interpolate*.json")):
        doc = json.loads(path.read_text())
        res = onednn.to_canonical(doc)
        for dt in ("f32", "bf16", "f16"):
            api = GRAPH if dt != "f16" else PRIMITIVE     # an f16 Graph op without a kernel aborts oneDNN
            checks.append(_resample_check(
                batch, f"onednn-graph-json:{path.name}", res, lambda d=doc, t=dt: _retyped(d, t)["graph"][0],
                lambda r=res, n=path.name: np.random.default_rng(len(n)).standard_normal(r.out_shape), dt, api,
                lambda want, d=dt: within(GRAD_TOL[d] * max(1.0, float(np.abs(want).max(initial=0)))), False))
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("deconv*.json")):
        spec, fmt, wfmt, _, _ = deconv.to_spec(json.loads(path.read_text()))
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
        spec, fmt, wfmt, _, _ = deconv.to_spec(doc)
        checks += _deconv_checks(batch, f"deconv:auto_pad_{mode}", spec, fmt, wfmt, 7)
    return checks


def _deconv_checks(batch, name: str, spec, fmt: str, wfmt: str, seed: int) -> list:
    dd, w = _inputs(spec, seed)
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
    return got, want, _with_kernel(within(tol), _kernel_text(r, None, {}))


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
    batch = _Batch()
    return benchdnn_checks(batch, full) + graph_json_checks(batch) + deconv_checks(batch) + writer_checks(batch)
