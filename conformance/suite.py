"""Build every check of the catalog and run them against the reference and the oracles."""
from __future__ import annotations

import math
from typing import cast

import numpy as np

from dml_desc import AxisMap, conventions
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError
from dml_desc.reference import resize, resize_grad
from onnx_ops import build_resize, run_model

from .catalog import CROSS_ACCEPTED, CROSS_CASES, Check, Record, Skip, Unsupported
from .judges import within
from .onnx_cases import case_to_resize, onnx_resize_cases
from .cases import REFERENCE, TOL, backend_checks, kernel_cases  # noqa: F401 (TOL: the README's tolerances)

# The backends every kernel case runs on by default (--backend adds others: CUDA, oneDNN per case, plug-ins).
DEFAULT_BACKENDS = ("numpy", "onnxruntime", "torch")


def _rng(seed=0):
    return np.random.default_rng(seed)


def onnx_case_checks(semantics=None) -> list:
    """The onnx Resize backend cases, checking the NumPy reference: the forward against onnx's expected output,
    the gradient against onnxruntime's and onnx's forward Resize transposed."""
    checks, semantics = [], onnx_conv.resolve_semantics(semantics)      # None: the installed onnxruntime's
    for case in onnx_resize_cases():
        r = case_to_resize(case)
        res = onnx_conv.to_canonical(r, semantics)
        name = case.name
        checks.append(Check(name, "onnx", "numpy", "f32", lambda c=case, s=res: _expected_forward(c, s),
                            oracle="onnx-expected-output"))
        checks.append(Check(name, "onnx", "numpy", "f32", lambda c=case, q=r, s=res: _transpose_oracle(q, s, "ort"),
                            oracle="onnxruntime-Resize-transposed"))
        checks.append(Check(name, "onnx", "numpy", "f32",
                            lambda c=case, q=r, s=res: _transpose_oracle(q, s, "onnx"),
                            oracle="onnx-reference-Resize-transposed"))
    return checks


WRONG_EXPECTED = {"export_resize_downsample_scales_cubic_align_corners",
                  "export_resize_downsample_scales_linear_align_corners"}


def _expected_forward(case, res):
    got = resize(case.x.astype(np.float64), res)
    if case.name in WRONG_EXPECTED:
        raise Skip("onnx's expected output uses the unfloored length in*scale for align_corners; the spec "
                   "and onnxruntime use the real output length (reported, ORT is authoritative)")
    return got, case.expected, 2e-6 * max(1, np.abs(case.expected).max())


def _transpose_oracle(r, res, which):
    """<A x, dy> == <x, G dy> element-wise over probes batched along N. For onnxruntime the probes are every
    input and every output basis vector, so this compares G with the oracle's matrix A transposed entry by entry."""
    if which == "onnx" and r.attr("coordinate_transformation_mode") == "align_corners" and \
            any(s < 1 for s in (r.scales or [1])):
        raise Skip("oracles disagree: onnx's reference uses the unfloored length in*scale for align_corners; "
                   "onnxruntime (authoritative for ResizeGrad) follows the spec's real output length")
    if res.in_shape[0] != 1 or not res.axes[0].is_identity:
        raise Skip("the basis probe batches along N, which must be 1 and not resized")
    p, q = math.prod(res.in_shape), math.prod(res.out_shape)
    if which == "ort":          # exact: every input basis vector, then every output basis vector
        xs, dys = np.eye(p), np.eye(q)
    else:                       # onnx's evaluator is pure Python: a 4 x 4 random sketch of the same identity
        xs, dys = _rng(1).standard_normal((4, p)), _rng(2).standard_normal((4, q))
    ys = _oracle_forward(r, res, xs.astype(np.float32), which).reshape(len(xs), q)     # rows: A x_i
    grad_res = res.with_(axes=(AxisMap.identity(len(dys)),) + res.axes[1:])
    gs = resize_grad(dys.reshape((len(dys),) + res.out_shape[1:]), grad_res).reshape(len(dys), p)
    lhs, rhs = ys.astype(np.float64) @ dys.T, xs.astype(np.float32).astype(np.float64) @ gs.T   # <A x, dy> = <x, G dy>
    slack = _float32_weight_slack(res, xs, dys) if which == "onnx" and res.mode.value == "cubic" else 0.0
    return rhs, lhs, 2e-6 * max(1.0, float(np.abs(lhs).max())) + slack


# onnx >= 1.22's ReferenceEvaluator computes cubic weights in float32 from a float32 coordinate. Measured over the
# 11 cubic backend cases, each weight is off by at most 5.6e-7 (onnx 1.23; 1.4e-7 on onnx 1.16) in absolute terms:
# the coordinate's rounding (<= 2^-21 for x < 16) times the kernel's slope (<= 1.5 for a = -0.75), plus the
# rounding of the weight itself. The bound used is 1e-6 per weight.
CUBIC_WEIGHT_ERR = 1e-6


def _float32_weight_slack(res, xs, dys) -> float:
    """The most <A x, dy> can move when every weight of A is off by CUBIC_WEIGHT_ERR:
    CUBIC_WEIGHT_ERR * sum over A's support of |dy_o| |x_i|, the largest over the probe pairs."""
    p = math.prod(res.in_shape)
    basis = res.with_(axes=(AxisMap.identity(p),) + res.axes[1:])
    a_t = resize(np.eye(p).reshape((p,) + res.in_shape[1:]), basis).reshape(p, -1)     # rows: A^T, one per input
    support = (a_t != 0).astype(np.float64)
    return CUBIC_WEIGHT_ERR * float((np.abs(xs) @ support @ np.abs(dys).T).max())


def _oracle_forward(r, res, xs: np.ndarray, which: str) -> np.ndarray:
    """The oracle's Resize on a batch of inputs stacked along N."""
    model = build_resize(_batched(r, len(xs)))
    x = xs.reshape((len(xs),) + res.in_shape[1:])
    if which == "ort":
        return run_model(model, {"X": x})[0]
    from onnx.reference import ReferenceEvaluator
    return cast(list, ReferenceEvaluator(model).run(None, {"X": x}))[0]     # a list: no intermediate=True


def _batched(r, n: int):
    """The same Resize on a batch of n along axis 0 (which it does not resize)."""
    import copy
    b = copy.deepcopy(r)
    b.attributes.pop("extrapolation_value", None)        # the constant fill is not part of the linear map
    b.input_shape = [n] + list(r.input_shape[1:])
    axes = r.attr("axes")
    if b.sizes is not None and (axes is None or 0 in [a % len(r.input_shape) for a in axes]):
        b.sizes = [n] + list(b.sizes[1:])
    return b


NHWC = (0, 2, 3, 1)


def cross_convention_checks(semantics=None) -> list:
    """One operator, five conventions: each converter either keeps the gradient (through its description and
    back) or refuses, as CROSS_ACCEPTED says; a change in either direction fails."""
    checks, semantics = [], onnx_conv.resolve_semantics(semantics)      # None: the installed onnxruntime's
    for name, attrs, sizes in CROSS_CASES:
        res = onnx_conv.to_canonical(onnx_conv.OnnxResize([2, 3, 6, 10], attrs, sizes=sizes), semantics)
        dy = _rng(len(name)).standard_normal(res.out_shape)
        for fmt in conventions.FORMATS:
            checks.append(Check(f"cross:{name}", fmt, "converter", "f32",
                                lambda f=fmt, r=res, g=dy, n=name: _round_trip(n, f, r, g, semantics),
                                oracle="the map before conversion"))
    return checks


def _round_trip(name: str, fmt: str, res, dy, semantics=None):
    """(gradient after converting `res` to `fmt` and back, before, 1e-12): TF works on the NHWC permutation."""
    from dml_desc.errors import ConversionError
    accepted = fmt in CROSS_ACCEPTED[name]
    src = res.with_(axes=tuple(res.axes[i] for i in NHWC)) if fmt == "tf" else res
    options = {"semantics": semantics} if fmt == "onnx" else {}
    try:
        obj, _ = conventions.dump(fmt, src, backward=True, **options)
    except ConversionError as e:
        if accepted:
            raise AssertionError(f"the {fmt} converter now refuses a map CROSS_ACCEPTED lists: {e}") from None
        raise Skip(f"documented as unsupported (CROSS_ACCEPTED): {e}") from None
    if not accepted:
        raise AssertionError(f"the {fmt} converter now accepts a map CROSS_ACCEPTED says it refuses; update the "
                             "table on purpose")
    back, _ = conventions.load(fmt, obj, **options)
    want = resize_grad(dy, res)
    if fmt == "tf":
        return np.transpose(resize_grad(np.transpose(dy, NHWC), back), (0, 3, 1, 2)), want, 1e-12
    return resize_grad(dy, back), want, 1e-12


CUDA_CASES: list[tuple[str, dict, list[float]]] = [   # (name, attributes, scales)
    ("bilinear_x2_half_pixel", {"mode": "linear"}, [1, 1, 2, 2]),
    ("bilinear_align_corners", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     [1, 1, 1.5, 1.75]),
    ("nearest_x2", {"mode": "nearest"}, [1, 1, 2, 2]),
    ("cubic_x1.5", {"mode": "cubic"}, [1, 1, 1.5, 1.5])]


def cuda_cases() -> list:
    """The CUDA cases (f32): ResizeGrad forms onnxruntime's CUDA kernel implements, and one it does not."""
    from .cases import Case, random_dy_with_reference
    out = []
    for name, attrs, scales in CUDA_CASES:
        res = onnx_conv.to_canonical(onnx_conv.OnnxResize([2, 3, 8, 12], attrs, scales=scales, op_type="ResizeGrad"),
                                     onnx_conv.installed_semantics())
        out.append(Case(f"cuda:{name}", "onnx", res, "f32", random_dy_with_reference(res, 5)))
    return out


def cuda_checks() -> list:
    """onnxruntime CUDA through the backend interface: the lowered model everywhere, the native ResizeGrad
    kernel (a skip saying so where the kernel does not compute the map). Every case runs on CUDA with
    `--backend onnxruntime:CUDAExecutionProvider`."""
    from .backends.builtin import OnnxruntimeBackend
    cases = cuda_cases()
    return [c for native in (False, True)
            for c in backend_checks(OnnxruntimeBackend("CUDAExecutionProvider", native), cases)]


def catalog(full: bool = False, semantics: str | None = None, backends=None) -> list[Check]:
    """Every check; ONNX descriptions are read under `semantics` (None: the installed onnxruntime's). The
    kernel cases run on DEFAULT_BACKENDS and on `backends` (names or backend objects) besides."""
    from .backends import resolve
    semantics = onnx_conv.resolve_semantics(semantics)
    checks = onnx_case_checks(semantics) + cross_convention_checks(semantics)
    from .deconv_suite import bridge_checks, deconv_checks
    checks += deconv_checks() + bridge_checks() + cuda_checks()
    from .onednn_suite import onednn_checks as real_onednn_checks      # the real library (the onednn extra)
    checks += real_onednn_checks(full)
    cases = kernel_cases(full, semantics)
    for b in list(DEFAULT_BACKENDS) + [b for b in backends or () if b not in DEFAULT_BACKENDS]:
        checks += backend_checks(resolve(b, semantics) if isinstance(b, str) else b, cases, semantics)
    return [c for c in checks if full or not c.full_only]


SMALL = 4096        # a failure keeps (got, expected) for the --html picture up to this many elements


def run_check(check: Check, save_dir: str | None = None) -> Record:
    """Run one check and judge it -> Record; a backend that raises fails with its message, Skip skips, Unsupported
    (the kernel does not implement the case) is recorded as such. A numerical failure names its worst element and,
    where a porting bug explains the backend's dX exactly, that bug (conformance.diagnosis); with `save_dir`, a
    failure is written there (conformance.saved)."""
    def rec(status, a=None, r=None, why="", oracle=check.oracle, arrays=None):
        description = None
        if status == "fail" and check.describe is not None:
            try:
                description = check.describe()
            except Exception as e:      # the description is an aid; its failure must not hide the verdict
                description = f"(no description: {e!r})"
        return Record(check.case, check.convention, check.backend, check.dtype, status, a, r, why, oracle,
                      description, arrays)
    try:
        out = check.run()
    except Skip as s:
        return rec("skip", why=str(s))
    except Unsupported as u:
        return rec("unsupported", why=str(u))
    except DescError as e:
        if e.field != "onnxruntime":
            return rec("fail", why=_reason(e))
        return rec("skip", why=f"{e.field} {e.rule}")     # no runtime installed: the message names the extra
    except Exception as e:          # an oracle or backend that breaks is a failure, with its message
        return rec("fail", why=_reason(e))
    got, want, judge = out[:3]
    oracle = out[3] if len(out) > 3 else check.oracle
    extras = out[4] if len(out) > 4 else {}
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return rec("fail", why=f"shape {got.shape} != {want.shape}", oracle=oracle)
    judge = judge if callable(judge) else within(judge)
    ok, abs_err, rel_err, why = judge(got, want)
    ok = ok and math.isfinite(abs_err)
    if ok:
        return rec("pass", abs_err, rel_err, why, oracle)
    if not math.isfinite(abs_err):
        why = why or f"dX holds {int((~np.isfinite(got)).sum())} non-finite values (NaN or inf)"
    record = rec("fail", abs_err, rel_err, why, oracle, (got, want) if got.size <= SMALL else None)
    from .diagnosis import worst_element
    record.worst = worst_element(got, want)
    diagnose = extras.get("diagnose")
    if diagnose is not None:
        try:
            record.diagnosis = diagnose(got)
        except Exception as e:          # a diagnosis is an aid; its failure must not hide the verdict
            record.diagnosis = None
            record.reason += f" (no diagnosis: {type(e).__name__})"
    if save_dir is not None and "dy" in extras:
        from .saved import save_failure
        record.saved = save_failure(save_dir, record, extras, got, want)
    return record


def _reason(e: Exception) -> str:
    """An exception as a failure's reason: its type and message (a plug-in's end in its worker: what happened,
    backends/worker.py), cut at a word boundary."""
    from .backends.worker import PluginError
    text = e.reason if isinstance(e, PluginError) else f"{type(e).__name__}: {e}"
    return text if len(text) <= 400 else text[:400].rsplit(" ", 1)[0] + " ..."
