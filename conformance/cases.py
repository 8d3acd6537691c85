"""Kernel cases: what any backend (built-in or plug-in) is run on, and how a case becomes a check on a backend.

A case is a name, the convention it was described in, the canonical map `res`, a dtype, dy and the
expected dX (both in `res`'s memory order, computed on first use: `--list` and `-k` build none of them),
the oracle the expected value came from, and how it is judged. Any object with the attributes name, res,
dtype, dy, expected, oracle (and optionally convention, judge, full_only) is a case: the randomized adjoint
cases plug in through CASE_SOURCES.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from dml_desc import conventions
from dml_desc.conventions import onednn, onnx as onnx_conv
from dml_desc.errors import ConversionError, DescError
from dml_desc.reference import as_dtype, resize_grad

from .backends import to_description
from .catalog import CROSS_CASES, DOC_EXAMPLE, REFERENCE_DIR, Check, Skip, Unsupported, benchdnn_problems
from .judges import benchdnn, benchdnn_fill, within
from .resize_oracle import ORACLE, forward_transposed

# Tolerance on the gradient for each dtype, relative to max(1, max |expected|) (the README states these).
TOL = {"f64": 1e-12, "f32": 1e-5, "f16": 4e-3, "bf16": 3e-2}
REFERENCE = "numpy-reference"           # the oracle name of dml_desc.reference.resize_grad in float64
# The reference judging an ONNX backend (the lowering) where onnxruntime's forward gives no oracle (f64: it has
# no float64 Resize; a forward it refuses): it shares dml_desc.weights' taps with the lowering, and says so.
SHARED_TAPS = "numpy-reference (shared taps)"

# The kernel cases each built-in backend's converter refuses: {case: {convention: the converter's reason}},
# generated once from the converters' behaviour (refusal_table(), every case including --full's) and checked in.
# An unlisted refusal fails, and so does a listed case that now converts: update the file on purpose.
REFUSALS_FILE = REFERENCE_DIR / "kernel_refusals.json"
TABLE_CONVENTIONS = ("onednn", "onnx", "torch")     # the conventions of the built-in backends
KERNEL_REFUSED: dict = json.loads(REFUSALS_FILE.read_text())


@dataclass
class Case:
    """One kernel case; `dy` and `expected` may be given as zero-argument functions, called once."""
    name: str
    convention: str
    res: Any
    dtype: str
    make: Callable[[], tuple]            # -> (dy, expected), float64, in res's memory order
    oracle: str = REFERENCE
    judge: Optional[Callable] = None     # expected -> judge; default: within TOL[dtype] * max(1, max |expected|)
    full_only: bool = False
    _made: Optional[tuple] = field(default=None, repr=False)

    @property
    def dy(self) -> np.ndarray:
        """The output gradient (float64, in res's memory order), made on first use."""
        return self._data()[0]

    @property
    def expected(self) -> np.ndarray:
        """The oracle's dX (float64), made on first use."""
        return self._data()[1]

    def _data(self) -> tuple:
        if self._made is None:
            self._made = self.make()
        return self._made


def usual_judge(dtype: str, expected: np.ndarray):
    """The suite's usual rule for a dtype: max |dX - expected| <= TOL[dtype] * max(1, max |expected|)."""
    return within(TOL[dtype] * max(1.0, float(np.abs(expected).max(initial=0))))


def once(make):
    """`make` called at most once (the cases of one map in several dtypes share dy and the expected dX)."""
    box: list = []

    def made():
        if not box:
            box.append(make())
        return box[0]
    return made


def random_dy_with_reference(res, seed: int):
    """A case\'s `make`: a standard normal dy (deterministic for `seed`) and the NumPy reference\'s dX, made once."""
    return once(lambda: _with_reference(res, np.random.default_rng(seed).standard_normal(res.out_shape)))


def _with_reference(res, dy):
    return dy, resize_grad(np.asarray(dy, np.float64), res)


def documented_example_cases() -> list:
    """DirectML's documented RESAMPLE_GRAD example: dY [[4, 5, 6]] -> dX [[9, 6], [0, 0]], exactly."""
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    data = (np.array([[[[4.0, 5.0, 6.0]]]]), np.array([[[[9.0, 6.0], [0.0, 0.0]]]]))
    return [Case("dml_documented_example", "dml", res, "f32", lambda: data, "DirectML documentation",
                 lambda want: within(0.0))]


def onnx_backend_cases(semantics=None) -> list:
    """onnx's Resize backend cases (stretch policy) in f64/f32/f16/bf16, expected from the NumPy reference
    (itself checked against onnxruntime's and onnx's forward Resize transposed, on the same cases)."""
    from .onnx_cases import case_to_resize, onnx_resize_cases
    out = []
    for case in onnx_resize_cases():
        r = case_to_resize(case)
        if r.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
            continue
        res = onnx_conv.to_canonical(r, onnx_conv.resolve_semantics(semantics))    # None: the installed one's
        make = random_dy_with_reference(res, len(case.name))
        out += [Case(case.name, "onnx", res, dt, make) for dt in ("f64", "f32", "f16", "bf16")]
    return out


def benchdnn_cases() -> list:
    """benchdnn's resampling shapes (mb 2), nearest and linear, NCX and NXC, f32/bf16/f16, judged by
    benchdnn's rule; the biggest only under --full."""
    out = []
    for name, mode, _, doc, big in benchdnn_problems():
        res = onednn.to_canonical(doc)
        for dt in ("f32", "bf16", "f16"):
            make = once(lambda r=res, d=dt: _with_reference(r, benchdnn_fill(r.out_shape, d)))
            out.append(Case(name, "onednn", res, dt, make, judge=lambda want, m=mode, d=dt: benchdnn(m, d),
                            full_only=big))
    return out


def onednn_graph_json_cases() -> list:
    """The vendored oneDNN Graph JSON Interpolate files, f32/f16/bf16."""
    out = []
    for path in sorted((REFERENCE_DIR / "onednn-graph-json").glob("interpolate*.json")):
        res = onednn.to_canonical(json.loads(path.read_text()))
        make = random_dy_with_reference(res, len(f"onednn-graph-json:{path.name}"))
        out += [Case(f"onednn-graph-json:{path.name}", "onednn", res, dt, make) for dt in ("f32", "f16", "bf16")]
    return out


def cross_cases(semantics=None) -> list:
    """The cross-convention operators (ONNX Resize on NCHW), f32."""
    out = []
    for name, attrs, sizes in CROSS_CASES:
        res = onnx_conv.to_canonical(onnx_conv.OnnxResize([2, 3, 6, 10], attrs, sizes=sizes),
                                     onnx_conv.resolve_semantics(semantics))    # None: the installed one's
        out.append(Case(f"cross:{name}", "onnx", res, "f32", random_dy_with_reference(res, len(name))))
    return out


def torch_cases() -> list:
    """F.interpolate calls, described in torch's convention, f32."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("bilinear", {"size": [12, 20], "align_corners": False}), ("nearest", {"size": [5, 7]}),
        ("bicubic", {"size": [9, 17], "align_corners": True})]
    out = []
    for mode, kw in calls:
        res, _ = conventions.load("torch", {"input_shape": [2, 3, 6, 10], "mode": mode, **kw})
        out.append(Case(f"torch:{mode}:{kw}", "torch", res, "f32", random_dy_with_reference(res, 3)))
    return out


# Where kernel cases come from: each is called with (full, semantics) and yields cases. The randomized
# adjoint section (conformance/adjoint, adjoint_cases(n, seed)) adds its checks in the suite itself (adjoint_checks).
CASE_SOURCES: list = [
    lambda full, sem: documented_example_cases(),
    lambda full, sem: onnx_backend_cases(sem),
    lambda full, sem: benchdnn_cases(),
    lambda full, sem: onednn_graph_json_cases(),
    lambda full, sem: cross_cases(sem),
    lambda full, sem: torch_cases(),
]


def kernel_cases(full: bool = False, semantics=None) -> list:
    """Every kernel case (the biggest benchdnn shapes only when `full`)."""
    return [c for source in CASE_SOURCES for c in source(full, semantics)
            if full or not getattr(c, "full_only", False)]


def backend_checks(backend, cases, semantics=None) -> list:
    """A Check per case the backend runs: in its dtypes, and never judged by the backend's own output
    (a case whose oracle is the backend under test is left out)."""
    if getattr(backend, "oracle", None) == REFERENCE:
        cases = [c for c in cases if c.oracle != REFERENCE]
    under_test = not getattr(backend, "refusal_table", False)     # a kernel: its other dtypes count as coverage
    return [Check(c.name, backend.convention, backend.name, c.dtype,
                  lambda c=c: run_case(backend, c, semantics), getattr(c, "full_only", False),
                  ORACLE if c.oracle == REFERENCE and is_onnxruntime(backend) else c.oracle,
                  lambda c=c: description_of(c, backend.convention, semantics))
            for c in cases if c.dtype in backend.dtypes or under_test]


def run_case(backend, case, semantics=None) -> tuple:
    """(dX, expected, judge, oracle, extras) of `case` on `backend`; Skip when the backend is not available here
    or the case cannot be stated exactly in its convention for this dtype (the converter's reason); Unsupported
    when the backend declares it does not implement the case, or raises NotImplementedError for it. `extras`:
    the description and dy the backend got, and how to diagnose a wrong dX (conformance.diagnosis)."""
    reason = backend.available()
    if reason:
        raise Skip(reason)
    case = in_layout(case, backend.convention, semantics)
    description = checked_description(case, backend.convention, semantics, listed_refusals(backend, case))
    check_arithmetic(case, backend.convention, description)
    if case.dtype not in backend.dtypes:
        raise Unsupported(f"unsupported by this kernel: it declares dtypes {tuple(backend.dtypes)}")
    from .support import check_declared, unsupported_by_raising
    check_declared(getattr(backend, "supports", None), case, backend.convention, description)
    dy = as_dtype(case.dy, case.dtype)
    with unsupported_by_raising():
        got = backend.run(description, dy, case.dtype)
    expected, oracle = expected_of(case, is_onnxruntime(backend), description)
    judge = getattr(case, "judge", None)
    judge = judge(expected) if judge else usual_judge(case.dtype, expected)
    from .diagnosis import Diagnosis
    extras = {"description": description, "dy": dy,
              "diagnose": Diagnosis(case, backend.convention, description, judge, semantics)}
    got = np.asarray(got)
    if got.dtype.kind == "f" or got.dtype.name == "bfloat16":      # dX as the case's dtype holds it (any float given)
        got = as_dtype(got.astype(np.float64), case.dtype)
    return np.asarray(got, np.float64), expected, judge, oracle, extras


CHANNELS_LAST = {"tf": (0, 2, 3, 1)}     # NCHW -> the convention's axes (TF image resize is NHWC)


@dataclass
class Permuted:
    """`case` on its axes in the order `perm` (dy and expected transposed the same way): how a channels-last
    convention states a channels-first case. Every other attribute is the case's."""
    case: Any
    perm: tuple

    def __getattr__(self, name):
        return getattr(self.case, name)

    @property
    def res(self):
        """The case's map on the permuted axes."""
        return self.case.res.with_(axes=tuple(self.case.res.axes[i] for i in self.perm))

    @property
    def dy(self) -> np.ndarray:
        """The case's dy, transposed to the permuted axes."""
        return np.transpose(self.case.dy, self.perm)

    @property
    def expected(self) -> np.ndarray:
        """The case's expected dX, transposed to the permuted axes."""
        return np.transpose(self.case.expected, self.perm)


def in_layout(case, convention: str, semantics=None):
    """`case` as `convention` states it: as it is, or (a channels-last convention, CHANNELS_LAST) on its NHWC
    permutation where only that converts. Either way, a case the convention cannot state skips with the converter's
    reason (checked_description)."""
    perm = CHANNELS_LAST.get(convention)
    res = getattr(case, "res", None)
    if perm is None or res is None or len(res.axes) != len(perm) or not res.normalized().axes[1].is_identity:
        return case
    try:
        to_description(res, convention, semantics)
        return case                     # stated as it is (its N and C resized nowhere else)
    except DescError:
        return Permuted(case, perm)


def listed_refusals(backend, case) -> bool:
    """Whether kernel_refusals.json decides `case`'s refusals on `backend`: a built-in backend on a catalog case.
    A plug-in, or a randomized case, that its convention cannot state is skipped with the converter's reason."""
    return bool(getattr(backend, "refusal_table", False)) and isinstance(case, Case)


# The map a description states where its convention's runtime computes in another arithmetic for some dtype:
# {(convention, dtype): description -> Resampling}. torch computes float64 coordinates in double: the description
# read as a float64 call (its `dtype` field).
def _torch_double(description):
    from dml_desc.conventions import torch as torch_conv
    return torch_conv.to_canonical(torch_conv.TorchInterpolate.from_json({**description, "dtype": "float64"}))


DTYPE_ARITHMETIC = {("torch", "f64"): _torch_double}


def check_arithmetic(case, convention: str, description) -> None:
    """Skip where the description states the case's map only in another dtype's arithmetic than `case.dtype`'s
    (the expected dX is the case's map: the kernel computes the description's map in its dtype's arithmetic)."""
    reader = DTYPE_ARITHMETIC.get((convention, case.dtype))
    if reader is None:
        return
    from dml_desc.conventions.common import exact
    try:
        exact(case.res, reader(description), f"{convention} in {case.dtype}")
    except DescError as e:
        raise Skip(f"documented as unsupported by the {convention} converter in {case.dtype}: {convention} computes "
                   f"{case.dtype} coordinates in another arithmetic, and the description states the case's map only "
                   f"in float32 arithmetic ({e})") from None


def is_onnxruntime(backend) -> bool:
    """Whether `backend` is onnxruntime (lowered or native, any provider): what the forward oracle judges."""
    return backend.convention == "onnx" and backend.name.startswith("onnxruntime")


def expected_of(case, on_onnxruntime: bool, description) -> tuple:
    """(expected dX, oracle): a reference case on onnxruntime is judged by onnxruntime's forward Resize of its
    ONNX description transposed (f32, f16), else by the reference under SHARED_TAPS (the lowering shares its
    taps); plug-ins and other backends by the case's own oracle."""
    oracle = getattr(case, "oracle", REFERENCE)
    if oracle != REFERENCE or not on_onnxruntime:
        return case.expected, oracle
    if case.dtype in ("f32", "f16"):
        expected = forward_transposed(description, case.dy)
        if expected is not None:
            return expected, ORACLE
    return case.expected, SHARED_TAPS


def checked_description(case, convention: str, semantics=None, listed: bool = True):
    """The case in `convention`, or Skip with the converter's reason where it cannot state the map. With
    `listed` (a built-in backend on a catalog case) the refusal must be in KERNEL_REFUSED: a refusal the table does
    not list, or a listed case that converts, fails (AssertionError)."""
    listed = listed and convention in TABLE_CONVENTIONS
    entry = KERNEL_REFUSED.get(case.name, {}).get(convention) if listed else None
    try:
        description = to_description(case.res, convention, semantics)
    except DescError as e:                  # ConversionError, or a rank / shape the convention has no form for
        if not listed:
            raise Skip(f"documented as unsupported by the {convention} converter: it cannot state this map "
                       f"exactly ({e})") from None
        if entry:
            raise Skip(f"documented as unsupported (kernel_refusals.json): {convention} cannot state this map "
                       f"exactly: {e}") from None
        raise AssertionError(f"the {convention} converter now refuses {case.name}, which is not in "
                             f"{REFUSALS_FILE.name}: {e}") from None
    if entry:
        raise AssertionError(f"the {convention} converter now states {case.name}, which {REFUSALS_FILE.name} "
                             f"lists as refused ({entry}): remove the entry")
    return description


def refusal_table(cases=None, semantics=None) -> dict:
    """{case: {convention: reason}} of today's converters over `cases` (default: every kernel case, --full's
    too), in TABLE_CONVENTIONS: what kernel_refusals.json holds."""
    out: dict = {}
    for case in kernel_cases(True, semantics) if cases is None else cases:
        for convention in TABLE_CONVENTIONS:
            try:
                to_description(case.res, convention, semantics)
            except ConversionError as e:
                out.setdefault(case.name, {})[convention] = str(e).splitlines()[0][:160]
    return out


def description_of(case, convention: str, semantics=None):
    """The case as `convention`'s description (JSON-ready), or its canonical map's repr when it has none."""
    try:
        own = getattr(case, "convention", "onnx")        # cases from other sources may not say
        case = in_layout(case, convention, semantics)
        d = to_description(case.res, convention if convention != "canonical" else own, semantics)
        return d if isinstance(d, dict) else repr(d)
    except DescError:
        return getattr(case, "description", None) or repr(case.res)     # a drawn case's own (ONNX) form
