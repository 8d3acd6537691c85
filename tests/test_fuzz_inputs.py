"""Hostile input, generated: every loader, converter, builder, the lowering and the CLI give a result or the
project's own DescError naming a field, never another exception, a traceback or an invalid model.

The CI budget is short (about 30 s). For a longer run, scale the example counts:
    DML_DESC_FUZZ_EXAMPLES=20 python -m pytest -q tests/test_fuzz_inputs.py      # 20x the examples
and for coverage-guided fuzzing see tests/fuzz/atheris_loaders.py.
"""
import copy
import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dml_desc import DescError, conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions import deconv
from tests.conftest import CONV_DML, CONV_ONNX, DOC_EXAMPLE

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

SCALE = float(os.environ.get("DML_DESC_FUZZ_EXAMPLES", "1"))


def budget(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# numbers that broke loaders: huge ints, float32 overflow, bools posing as ints, 2.0 posing as 2
HOSTILE = st.sampled_from([10 ** 400, 2 ** 64, 2 ** 80, -1, 0, 1e39, -1e39, 1e-46, 2.0, True, False, None, "",
                           "ﬂoat32", "nearest_neıghbor", [], {}, [[1]], "x" * 300, float("inf"), float("nan")])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10), st.integers(), st.floats(), st.text(max_size=6),
                    HOSTILE)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=5)),
                    max_leaves=20)
DECONV_DOC = json.load(open(os.path.join(os.path.dirname(__file__), "..", "conformance", "data",
                                         "onednn-graph-json", "deconv_bwd_d.json")))
SEEDS = {
    "dml": DOC_EXAMPLE,
    "onnx": {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {
        "mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize"},
        "roi": [0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7], "scales": [1, 1, 2, 1.5]},
    "torch": {"input_shape": [1, 2, 4, 4], "mode": "bilinear", "scale_factor": [1.5, 2.0], "align_corners": True},
    "tf": {"input_shape": [1, 4, 4, 2], "size": [8, 3], "method": "bicubic", "half_pixel_centers": True},
    "onednn": {"graph": [{"kind": "InterpolateBackward", "attrs": {"mode": {"value": "linear"},
                                                                 "sizes": {"value": [8, 8]}},
                          "inputs": [{"shape": [1, 4, 4, 2], "dtype": "f32"}, {"shape": [1, 8, 8, 2]}],
                          "outputs": []}]},
}
DECONV_SEEDS = {"onednn": DECONV_DOC, "dml": CONV_DML, "onnx": CONV_ONNX}


def mutate(obj, path, value):
    obj = copy.deepcopy(obj)
    target = obj
    for key in path[:-1]:
        target = target[key] if isinstance(target, dict) else target[int(key) % len(target)]
    if isinstance(target, dict):
        target[path[-1]] = value
    elif isinstance(target, list) and target:
        target[int(path[-1]) % len(target)] = value
    return obj


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, prefix + (i,))


def own_error_or_result(call):
    try:
        return call()
    except DescError as e:
        assert e.field is not None and e.rule
        assert len(str(e)) < 2000, "an error message must stay short"
        return None


def load_mutated(seed, fmt, data, value, load):
    """load(fmt, the seed with `value` written at one drawn path), or None on the project's own error."""
    path = data.draw(st.sampled_from([p for p in paths(seed) if p]))
    return own_error_or_result(lambda: load(fmt, mutate(seed, path, value)))


@budget(300)
@given(st.sampled_from(sorted(SEEDS)), st.data(), JSON)
def test_mutated_inputs_give_a_result_or_a_desc_error(fmt, data, value):
    loaded = load_mutated(SEEDS[fmt], fmt, data, value, conventions.load)
    if loaded is not None:             # what loads also converts (or is refused by name) to every format
        for dst in conventions.FORMATS:
            own_error_or_result(lambda dst=dst: conventions.dump(dst, *loaded, semantics=INSTALLED))


@budget(150)
@given(st.sampled_from(sorted(DECONV_SEEDS)), st.data(), JSON)
def test_mutated_deconv_documents_round_trip_or_refuse(fmt, data, value):
    loaded = load_mutated(DECONV_SEEDS[fmt], fmt, data, value, deconv.read)
    if loaded is None:
        return
    for dst in ("onednn", "dml", "onnx"):        # what we write, our own loader reads back as the same spec
        out = own_error_or_result(lambda dst=dst: deconv.write(dst, loaded).obj)
        if out is not None:
            assert deconv.read(dst, out).canonical == loaded.canonical


@budget(150)
@given(st.sampled_from(sorted(SEEDS) + ["deconv-onednn", "deconv-dml", "deconv-onnx"]), JSON)
def test_arbitrary_documents(fmt, obj):
    if fmt.startswith("deconv-"):
        own_error_or_result(lambda: deconv.read(fmt.split("-")[1], obj))
    else:
        own_error_or_result(lambda: conventions.load(fmt, obj, semantics=INSTALLED))


# ---- the CLI: arbitrary file bytes, one line on stderr and exit 2 (or a result and exit 0) ----------------

def run_cli(argv):
    from dml_desc.cli import main
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def seed_bytes():
    docs = [json.dumps(d).encode() for d in list(SEEDS.values()) + list(DECONV_SEEDS.values())]
    return st.sampled_from(docs)


@st.composite
def corrupted(draw, source):
    data = bytearray(draw(source))
    for _ in range(draw(st.integers(0, 4))):
        how = draw(st.sampled_from(["cut", "flip", "insert", "dup"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "cut":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data[at:at] = data[at:at + draw(st.integers(1, 40))]
    return bytes(data)


@budget(60)
@given(corrupted(seed_bytes()), st.sampled_from(["convert-onnx", "convert-dml", "build"]))
def test_cli_on_corrupted_files(tmp_path_factory, data, command):
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "in.json"
    path.write_bytes(data)
    guess = json.loads(data) if _is_json(data) else None
    src = "dml" if isinstance(guess, dict) and "Operator" in guess else "onnx"
    if command == "build":
        argv = ["build", str(path), "-o", str(folder / "out.onnx")]
    else:
        argv = ["convert", "--from", src, "--to", command.split("-")[1], str(path)]
    code, out, err = run_cli(argv)
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:            # notes may come first; the error is one line
        lines = [line for line in err.splitlines() if not line.startswith("note: ")]
        assert len(lines) == 1 and lines[0].startswith("dml-desc: error: "), err
    elif command == "build":
        assert (folder / "out.onnx").stat().st_size > 0


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
        return True
    except (ValueError, RecursionError):
        return False


# ---- lowering: ONNX attribute, type, shape and opset mutations; file corruption ---------------------------

ATTRS = st.fixed_dictionaries({}, optional={
    "mode": st.sampled_from(["nearest", "linear", "cubic", "bogus", "nearest_neıghbor"]),
    "coordinate_transformation_mode": st.sampled_from(["half_pixel", "asymmetric", "align_corners",
                                                       "tf_crop_and_resize", "pytorch_half_pixel", "x"]),
    "nearest_mode": st.sampled_from(["floor", "ceil", "round_prefer_ceil"]),
    "antialias": st.integers(-1, 2), "exclude_outside": st.integers(0, 1),
    "cubic_coeff_a": st.floats(-1, 0), "axes": st.lists(st.integers(-5, 4), max_size=3)})
ELEMS = st.sampled_from([1, 1, 1, 10, 11, 7, 6])        # float float float float16 double int64 int32


@st.composite
def resize_grad_specs(draw):
    rank = draw(st.integers(1, 4))
    x = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    dy = [draw(st.sampled_from([d, d * 2, max(d // 2, 1), 3])) for d in x]
    spec = {"attrs": draw(ATTRS), "x": x, "dy": draw(st.sampled_from([dy, x, dy[:-1] or [1]])),
            "elem": draw(ELEMS), "opset": draw(st.sampled_from([19, 19, 13, 11, 10, 1])),
            "outputs": draw(st.sampled_from([["dX"], ["dX"], [], [""], ["dX", "extra"]]))}
    spec["dy_elem"] = draw(st.sampled_from([spec["elem"], spec["elem"], 10, 11]))
    if draw(st.booleans()):
        spec["scales"] = draw(st.sampled_from([[float(o) / i for o, i in zip(dy, x)], [1.0] * rank, [2.0] * (rank + 1),
                                               [[2.0] * rank]]))
        spec["scales_dtype"] = draw(st.sampled_from(["float32", "float32", "float64", "int64"]))
    if draw(st.booleans()):
        spec["roi"] = [0.0] * rank + [1.0] * rank
    if draw(st.booleans()):
        spec["extra_inputs"] = ["dY"]
    return spec


@budget(40)
@given(resize_grad_specs())
def test_lowering_writes_only_valid_models(spec):
    pytest.importorskip("onnxruntime", reason="the written model is checked by loading it in onnxruntime")
    from onnx_ops.lower import lower
    from onnx_ops.lowering.validate import check_written
    from tests.fuzz.atheris_loaders import resize_grad_spec_model
    model = resize_grad_spec_model(spec)
    lowered = own_error_or_result(lambda: lower(model, semantics=INSTALLED))
    if lowered is not None and lowered.rewrites:
        check_written(lowered.model)       # raises DescError: the lowering must never produce such a model


def _small_model_bytes() -> bytes:
    from tests.fuzz.atheris_loaders import resize_grad_spec_model
    return resize_grad_spec_model({"attrs": {"mode": "linear"}, "x": [1, 1, 4, 4], "dy": [1, 1, 8, 8],
                         "scales": [1, 1, 2, 2], "outputs": ["dX"]}).SerializeToString()


@budget(60)
@given(st.binary(max_size=12))
def test_corrupted_model_files_give_own_errors(data):
    """Truncated or bit-flipped model bytes (the flips and the cut drawn from `data`)."""
    from onnx_ops.lower import lower
    from onnx_ops.lowering.validate import parse_model
    corrupt = bytearray(_SMALL)
    if data:
        for i, b in enumerate(data[:8]):
            corrupt[(b * 7 + i * 13) % len(corrupt)] ^= (b or 1)
        del corrupt[len(corrupt) - data[0] % 40:]
    own_error_or_result(lambda: lower(parse_model(bytes(corrupt)), semantics=INSTALLED))


_SMALL = _small_model_bytes()


def test_fuzz_budget_is_documented():
    assert "DML_DESC_FUZZ_EXAMPLES" in __doc__ and np.isfinite(SCALE)
