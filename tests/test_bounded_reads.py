"""Issue 30: bounded, typed reads and numeric-input slips. Every file the commands read is a regular file read
within a bound (a FIFO or /dev/zero is refused at once, never read), then checked entry by entry: calibration
caches, JSON descriptions, .npy arrays. Every number a description holds is finite and fits in 64 bits, also as a
5000-digit literal; `calibrate --rounds/--threads` and `build_gradient(tolerance=...)` are checked; `explain --svg`
writes valid XML whatever the file names hold. The CLI runs as a subprocess (under a memory limit and a timeout:
the old code read /dev/zero until memory ran out and waited on a FIFO forever)."""
from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from dml_desc import DescError, conventions

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MEMORY_LIMIT = 3 * 2 ** 30          # address space of one CLI run: imports fit, reading /dev/zero whole does not


def _limited():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cli(*argv, env: dict | None = None, timeout: float = 120):
    """`dml-desc ARGV` as a subprocess: (exit code, stdout, stderr) as bytes-safe text; a hang fails the test."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONINTMAXSTRDIGITS"}   # Python's default limit
    environ.update(PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path), **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "dml_desc.cli", *map(os.fsencode, argv)], capture_output=True,
                          env=environ, timeout=timeout, preexec_fn=_limited)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def one_line_error(code: int, err: str, *words: str) -> str:
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("dml-desc: error: "), err
    assert "internal error" not in err
    for word in words:
        assert word in err, err
    return err


@pytest.fixture(scope="module")
def grad_model(tmp_path_factory) -> Path:
    """A ResizeGrad model with static shapes (linear x2 at opset 19: several candidate forms to measure)."""
    path = tmp_path_factory.mktemp("model") / "grad.onnx"
    code, _, err = cli("build", EXAMPLES / "onnx_resizegrad.json", "-o", path)
    assert code == 0, err
    return path


# ---- the calibration cache --------------------------------------------------------------------------------------

def test_lower_refuses_a_cache_that_is_no_regular_file_at_once(tmp_path, grad_model):
    """/dev/zero was read to 7.7 GB; a FIFO waited for a writer forever; a folder is no cache either."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for cache, kind in (("/dev/zero", "a character device"), (fifo, "a FIFO"), (tmp_path, "a folder")):
        code, _, err = cli("lower", grad_model, "-o", tmp_path / "out.onnx", "--calibration", cache, timeout=60)
        one_line_error(code, err, f"calibration='{cache}'", f"it is {kind}")
    assert not (tmp_path / "out.onnx").exists()


def test_a_cache_past_its_bound_is_refused_from_its_size(tmp_path):
    from onnx_ops.calibrate import MAX_CACHE_BYTES, read_cache
    big = tmp_path / "cal.json"
    with open(big, "wb") as f:
        f.truncate(MAX_CACHE_BYTES + 1)               # sparse: refused from its size, before reading
    with pytest.raises(DescError, match=f"it has {MAX_CACHE_BYTES + 1} bytes"):
        read_cache(str(big))


KEY = "CPU | onnxruntime 1"
SIG = json.dumps({"attrs": {}, "rank": 4})
POISONED = [                    # (cache document, what the one-line error names)
    ({"version": 1, "entries": {KEY: []}}, "entries['CPU | onnxruntime 1'] = a list of 0 items"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": {}}}}}, ".form = an object with keys []: is no form"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": ["band"]}}}}, ".form = a list of 1 items"),
    ({"version": 1, "entries": {KEY: {SIG: 7}}}, 'must be an object {"form": ..., "ms": ...}'),
    ({"version": 1, "entries": {KEY: {SIG: {"form": "bnad"}}}}, "(did you mean 'band'?)"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": "band", "ms": {"band": -1}}}}}, ".ms['band'] = -1"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": "band", "ms": {"band": True}}}}}, ".ms['band'] = True"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": "band", "ms": {"fast": 1}}}}}, ".ms = 'fast': is no form"),
    ({"version": 1, "entries": {KEY: {SIG: {"form": "band", "extra": 1}}}}, "(keys ['form', 'ms'])"),
    ({"version": 1, "entries": {KEY: {"not json": {"form": "band"}}}}, "the text of a JSON object"),
    ({"version": 1, "entries": {"": {}}}, "a machine key must be non-empty text"),
    ({"version": True, "entries": {}}, "version = True: this dml-desc reads version 1"),
    ({"version": 1, "entries": {}, "more": 1}, "is not a dml-desc calibration cache"),
    ([], "the document = a list of 0 items"),
]


@pytest.mark.parametrize("doc, named", POISONED, ids=range(len(POISONED)))
def test_every_entry_of_a_cache_is_checked_and_named(tmp_path, doc, named):
    """Entries of any shape were read as they came: a list or a dict where text belongs ended in an internal
    error (AttributeError, unhashable type), an unknown form or a negative time was taken silently."""
    from onnx_ops.calibrate import read_cache
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DescError) as info:
        read_cache(str(path))
    assert str(info.value).startswith(f"calibration='{path}': ") and named in str(info.value), str(info.value)


def test_infinity_in_a_cache_is_refused(tmp_path):
    """JSON has no Infinity (strict reading refuses the literal); 1e999 reads as inf and is refused as a time."""
    from onnx_ops.calibrate import read_cache
    path = tmp_path / "cal.json"
    for text, named in (('{"band": Infinity}', "NaN and Infinity are not numbers in JSON"),
                        ('{"band": 1e999}', ".ms['band'] = inf: a time must be a finite number >= 0")):
        path.write_text('{"version": 1, "entries": {"%s": {"%s": {"form": "band", "ms": %s}}}}'
                        % (KEY, SIG.replace('"', '\\"'), text))
        with pytest.raises(DescError) as info:
            read_cache(str(path))
        assert named in str(info.value)


def test_lower_names_a_poisoned_entry_in_one_line(tmp_path, grad_model):
    from onnx_ops.calibrate import machine_key
    cache = tmp_path / "cal.json"
    cache.write_text(json.dumps({"version": 1, "entries": {machine_key(): {SIG: {"form": {}}}}}))
    code, _, err = cli("lower", grad_model, "-o", tmp_path / "out.onnx", "--calibration", cache)
    one_line_error(code, err, f"calibration='{cache}'", ".form = an object with keys []: is no form dml-desc knows")


def test_a_calibration_dict_names_known_forms_only():
    """lower(calibration={signature: form}) took any value: an unknown name was dropped silently."""
    from onnx_ops import lower
    from onnx_ops.build import build_resize_grad
    from dml_desc.conventions.onnx import installed_semantics
    semantics = installed_semantics()
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4, 4], "mode": "bilinear", "size": [8, 8]})
    model = build_resize_grad(res, semantics=semantics)
    for bad, named in (({SIG: "fastest"}, f"calibration[{SIG!r}]='fastest': is no form dml-desc knows"),
                       ({SIG: ["band"]}, f"calibration[{SIG!r}]=['band']: is no form dml-desc knows"),
                       ({1: "band"}, "calibration=1: keys must be node signatures (text)")):
        with pytest.raises(DescError) as info:
            lower(model, calibration=bad, semantics=semantics)
        assert str(info.value).startswith(named), str(info.value)


@pytest.mark.parametrize("argv, named", [
    (["--rounds", "0"], "--rounds=0: must be >= 1"),
    (["--rounds", "-3"], "--rounds=-3: must be >= 1"),
    (["--threads", "-5"], "--threads=-5: must be 0 (onnxruntime's default) or 1 to"),
    (["--threads", "100000"], "--threads=100000: must be 0 (onnxruntime's default) or 1 to"),
])
def test_calibrate_checks_rounds_and_threads_before_measuring(tmp_path, grad_model, argv, named):
    """--rounds 0 timed nothing, wrote Infinity for every form and picked a winner by name order; --threads -5
    and 100000 went to onnxruntime as they were."""
    cache = tmp_path / "cal.json"
    code, _, err = cli("calibrate", grad_model, "--cache", cache, *argv)
    one_line_error(code, err, named)
    assert not cache.exists()


def test_calibrate_model_checks_its_arguments():
    from onnx_ops.calibrate import calibrate_model, max_threads
    for kwargs, named in (({"rounds": 0}, "rounds=0"), ({"rounds": 1.5}, "rounds=1.5"), ({"rounds": True}, "rounds"),
                          ({"threads": -1}, "threads=-1"), ({"threads": max_threads() + 1}, "threads=")):
        with pytest.raises(DescError) as info:
            calibrate_model(None, "unused.json", **kwargs)
        assert str(info.value).startswith(named), str(info.value)


def test_the_written_cache_is_strict_json_with_finite_times(tmp_path, grad_model):
    """What calibrate writes reads again through the same checks (no Infinity, known forms, times >= 0)."""
    from dml_desc.errors import parse_json
    from onnx_ops.calibrate import check_cache, machine_key
    cache = tmp_path / "cal.json"
    code, _, err = cli("calibrate", grad_model, "--cache", cache, "--rounds", "1", "--threads", "1")
    assert code == 0, err
    doc = parse_json(cache.read_bytes(), "cache")
    (sig, record), = check_cache(doc, str(cache))[machine_key()].items()
    assert len(record["ms"]) > 1 and record["form"] == min(record["ms"], key=record["ms"].get)
    assert all(math.isfinite(ms) and ms >= 0 for ms in record["ms"].values())


# ---- descriptions and .npy arrays: regular files only ---------------------------------------------------------

def test_a_description_from_a_fifo_or_a_device_is_refused_at_once(tmp_path):
    """A FIFO with no writer blocked `convert` in open(); /dev/zero is refused from its type."""
    fifo = tmp_path / "d.json"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        code, _, err = cli("convert", "--from", "dml", "--to", "onnx", path, timeout=60)
        one_line_error(code, err, f"FILE='{path}'", f"cannot be read: it is {kind}")
    code, out, _ = cli("explain", EXAMPLES / "dml_resample_grad.json")       # a regular file still reads
    assert code == 0 and "axis 3" in out


def _npy_claiming(path: Path, shape: tuple) -> None:
    """An .npy whose header claims `shape` (float64) over 3 values of data."""
    import io
    from numpy.lib import format as npy
    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    path.write_bytes(header.getvalue() + np.zeros(3).tobytes())


def test_run_reads_dy_from_a_regular_npy_file_only(tmp_path):
    """--dy from a FIFO waited forever; a header claiming 8 TB of data was allocated (MemoryError: an internal
    error); an .npz or an object array is refused by name."""
    fifo, lying, archive, objects = (tmp_path / n for n in ("fifo.npy", "lying.npy", "a.npz", "objects.npy"))
    os.mkfifo(fifo)
    _npy_claiming(lying, (10 ** 12,))
    np.savez(archive, dy=np.zeros(3))
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for dy, named in ((fifo, "cannot be read: it is a FIFO"), ("/dev/zero", "cannot be read: it is a character"),
                      (tmp_path, "cannot be read: it is a folder"), (tmp_path / "no.npy", "cannot be read (No such"),
                      (lying, "holds 24 bytes of data; its header says [1000000000000] float64 (8000000000000 bytes)"),
                      (archive, "must be one .npy array, not an .npz archive"), (objects, "--dy='object': must hold")):
        code, _, err = cli("run", EXAMPLES / "dml_resample_grad.json", "--backend", "numpy", "--dy", dy,
                           "-o", tmp_path / "dx.npy", timeout=60)
        one_line_error(code, err, "--dy=", named)
    good = tmp_path / "dy.npy"
    np.save(good, np.array([[[[4.0, 5.0, 6.0]]]], np.float32))
    code, _, err = cli("run", EXAMPLES / "dml_resample_grad.json", "--backend", "numpy", "--dy", good,
                       "-o", tmp_path / "dx.npy")
    assert code == 0, err
    assert np.load(tmp_path / "dx.npy").tolist() == [[[[9.0, 6.0], [0.0, 0.0]]]]


def test_read_regular_opens_nothing_but_a_regular_file(tmp_path):
    from dml_desc.files import FileError, read_regular
    (tmp_path / "a.json").write_bytes(b"{}")
    os.symlink(tmp_path / "a.json", tmp_path / "link.json")
    assert read_regular(tmp_path / "link.json", 2, "JSON") == b"{}"          # a symlink to a regular file reads
    with pytest.raises(DescError, match=r"larger than any valid JSON \(1 bytes at most\): it has 2 bytes"):
        read_regular(tmp_path / "a.json", 1, "JSON")
    with pytest.raises(FileError) as info:
        read_regular(tmp_path / "missing.json", 10, "JSON", field="--cache")
    assert info.value.errno == 2 and str(info.value).startswith("--cache=")


# ---- numbers in descriptions --------------------------------------------------------------------------------------

PLACES = [                      # (example, JSON path of one number, the place the error names)
    ("dml_resample_grad.json", ("InputPixelOffsets", 0), "InputPixelOffsets[0]"),
    ("dml_resample_grad.json", ("Scales", 2), "Scales[2]"),
    ("onednn_interpolate_bwd.json", ("graph", 0, "attrs", "sizes", "value", 0), "graph[0].attrs.sizes.value[0]"),
    ("onnx_resizegrad.json", ("scales", 2), "scales[2]"),
    ("onnx_resizegrad.json", ("input_shape", 2), "input_shape[2]"),
    ("torch_interpolate.json", ("size", 0), "size[0]"),
    ("tf_resize.json", ("size", 1), "size[1]"),
    ("onednn_deconv_bwd_d.json", ("graph", 0, "attrs", "pads_begin", "value", 0),
     "graph[0].attrs.pads_begin.value[0]"),
]


def _with_number(name: str, path: tuple, literal: str) -> str:
    obj = json.loads((EXAMPLES / name).read_text())
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = "@NUMBER@"
    return json.dumps(obj, indent=1).replace('"@NUMBER@"', literal)


@pytest.mark.parametrize("name, path, place", PLACES, ids=[p[2] for p in PLACES])
def test_a_5000_digit_number_is_one_line_naming_where_it_is(tmp_path, name, path, place):
    """A 5000-digit literal is refused before int() reads it, naming its line and column, whatever Python's own
    int limit (PYTHONINTMAXSTRDIGITS=0 lifts it: the old code then printed all 5000 digits in its message). A 400-digit
    one reads, and is refused by its place: no integer in a description exceeds 64 bits."""
    text = _with_number(name, path, "1" + "0" * 4999)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "10000000000" in row)
    (tmp_path / "d.json").write_text(text)
    for env in ({}, {"PYTHONINTMAXSTRDIGITS": "0"}):
        code, _, err = cli("convert", "--to", "dml" if name.startswith("onednn") else "onednn", tmp_path / "d.json",
                           env=env)
        one_line_error(code, err, f"<an integer of 5000 digits at line {line} column",
                       "is longer than any number a description holds (4300 digits at most)")
    (tmp_path / "d.json").write_text(_with_number(name, path, "1" + "0" * 400))
    for env in ({}, {"PYTHONINTMAXSTRDIGITS": "0"}):
        code, _, err = cli("convert", "--to", "onnx", tmp_path / "d.json", env=env)
        one_line_error(code, err, f"{place}=<an integer of 1329 bits>: is out of range: an integer in a "
                       "description must fit in 64 bits")


def _numbers(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, path + (i,))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path


def _read(fmt: str, obj):
    from dml_desc.conventions import deconv
    from dml_desc.conventions.onnx import installed_semantics
    if deconv.is_deconv(fmt, obj):
        return deconv.read(fmt, obj)
    return conventions.read(fmt, obj, **({"semantics": installed_semantics()} if fmt == "onnx" else {}))


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_any_number_anywhere_in_a_description_is_a_desc_error(name):
    """Through the Python API a number may be any int or float: in every numeric place of every example, a
    5000-digit int, 2^64, -2^63 - 1, nan, inf and 1e30 are DescErrors (a 5000-digit int ended in ValueError inside
    the oneDNN and deconv readers), short ones naming the place."""
    obj = json.loads((EXAMPLES / name).read_text())
    fmt = conventions.guess_format(obj)
    places = list(_numbers(obj))
    assert places
    for path in places:
        for value in (10 ** 4999, 2 ** 64, -2 ** 63 - 1, math.nan, math.inf, -math.inf):
            bad = copy.deepcopy(obj)
            target = bad
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            with pytest.raises(DescError) as info:
                _read(fmt, bad)
            place = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
            assert info.value.field == place and len(str(info.value)) < 300, (place, str(info.value))


def test_a_far_offset_reads_the_edge_not_a_wrapped_index():
    """An offset of -1e30 (float32-finite) put the sample past int64: the cast wrapped to index 0, the wrong edge
    (and warned); it reads the same taps as any far offset, the last input."""
    from dml_desc.weights import forward_taps
    obj = json.loads((EXAMPLES / "dml_resample_grad.json").read_text())
    tables = []
    for offset in (-1e17, -1e30, -3e38):
        obj["OutputPixelOffsets"][3] = offset
        res, _ = conventions.load("dml", obj)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            taps = forward_taps(res.axes[3], res)
        tables.append((taps.index.tolist(), taps.weight.tolist()))
    assert tables[0] == tables[1] == tables[2] == ([[1], [1], [1]], [[1.0], [1.0], [1.0]])


def test_build_gradient_checks_its_tolerance_even_when_lowered():
    """tolerance=nan was accepted by build_gradient(lowered=True) (unused there) and misreported as a refused
    spelling otherwise."""
    from onnx_ops.build import build_gradient, build_resize
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 4, 4], "mode": "bilinear", "size": [8, 8]})
    for tolerance in (math.nan, math.inf, -0.1, 1, True, "0.1"):
        for build in (lambda t=tolerance: build_gradient(res, tolerance=t, lowered=True, semantics="ort-1.19"),
                      lambda t=tolerance: build_gradient(res, tolerance=t, semantics="ort-1.19"),
                      lambda t=tolerance: build_resize(res, tolerance=t, semantics="ort-1.19")):
            with pytest.raises(DescError, match=r"^tolerance=.*: must be a number in \[0, 1\)"):
                build()


# ---- explain --svg: valid XML for any name ----------------------------------------------------------------------

@pytest.mark.parametrize("name", [b"bell\x07\x01.json", b"latin1-\xff.json", b"esc\x1b]0;title\x07.json",
                                  b"rtl\xe2\x80\xae<&>.json"], ids=["control", "undecodable", "osc", "bidi-markup"])
def test_explain_svg_is_valid_xml_for_any_file_name(tmp_path, name):
    """A control character in a file name made the SVG invalid XML; an undecodable byte (a lone surrogate in
    Python) made `explain --svg` fail as if its input were not UTF-8. The names are shown escaped."""
    folder = os.fsencode(tmp_path)
    src, other = os.path.join(folder, name), os.path.join(folder, b"vs-" + name)
    for path in (src, other):
        with open(path, "wb") as f:
            f.write((EXAMPLES / "torch_interpolate.json").read_bytes())
    out = tmp_path / "grid.svg"
    code, _, err = cli("explain", src, "--vs", other, "--svg", out)
    assert code == 0, err
    root = ET.parse(out).getroot()                      # well-formed XML
    title = root.find("{http://www.w3.org/2000/svg}title").text
    assert title.startswith("dml-desc explain torch ") and " vs torch vs-" in title
    assert all(c in "\t\n\r" or 0x20 <= ord(c) < 0x7f or ord(c) >= 0xa0 and c not in "\u202e" for c in title), title
    assert "\\x07" in title or "\\udcff" in title or "\\u202e" in title
