"""Measured form choice, only when asked: `dml-desc calibrate` and `lower(calibration=...)`.

By default `lower` picks a node's form by rule and cost model, so its output depends on the model alone. Here a
ResizeGrad can instead take the fastest of its candidates as measured on the executing onnxruntime:

- a shape-generic node (onnx_ops.generic_forms): each generic spelling it admits ("resize", "pool", "conv",
  "sepconv", "kronpairs", "block") and the general in-graph path ("general");
- a static node (shapes known when lowering): the cost model's choice among the forms of the registry
  (onnx_ops.forms.registry) and the next cheapest applicable ones by estimate (forms.CANDIDATES in all, e.g.
  "band", "Resize", "kron"), keyed by forms.signature (its canonical map, opset and accumulation type).

`calibrate_model` times each candidate on stand-in shapes (symbolic N -> STAND_IN_BATCH, C -> STAND_IN_CHANNELS,
other symbolic dims -> STAND_IN_LENGTH) and records the winner and every time. It writes them to a JSON cache
under the machine key: the CPU model (/proc/cpuinfo) and the onnxruntime version. `lower(model,
calibration=PATH)` reads the entry for the executing machine (or for `machine=`). The same model, cache and key
give the same bytes. A node whose signature is not in the entry keeps the rule.
"""
from __future__ import annotations

import json
import os
import platform
import time

import numpy as np
import onnx
from onnx import helper

from dml_desc.conventions.onnx import STAND_IN_SEMANTICS
from dml_desc.errors import DescError, did_you_mean, integer, is_number, require, short_key

from .forms import FORMS, RENAMED, candidates as static_candidates, is_symbolic, signature as static_signature

CACHE_VERSION = 1
STAND_IN_BATCH, STAND_IN_CHANNELS, STAND_IN_LENGTH = 4, 32, 96
KINDS = ("resize", "pool", "conv", "block", "sepconv", "kronpairs", "general")
FORM_NAMES = KINDS + tuple(FORMS)      # the names a cache entry may hold: generic kinds, static forms


def default_cache() -> str:
    """$DML_DESC_CALIBRATION, else ~/.cache/dml-desc/calibration.json."""
    return os.environ.get("DML_DESC_CALIBRATION") or os.path.join(os.path.expanduser("~"), ".cache", "dml-desc",
                                                                   "calibration.json")


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (platform.processor() where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            found = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        found = ""
    return found or platform.processor() or platform.machine() or "unknown CPU"


def machine_key() -> str:
    """The cache key of this machine: CPU model and onnxruntime version, e.g. 'AMD EPYC | onnxruntime 1.19.2'."""
    from dml_desc.conventions.onnx import installed_runtime
    return f"{cpu_model()} | onnxruntime {installed_runtime()}"


MAX_CACHE_BYTES = 2 ** 26        # 64 MiB: an entry is under 1 kB; a cache past this is no cache dml-desc wrote
CACHE_KEYS, ENTRY_KEYS = {"version", "entries"}, {"form", "ms"}


def read_cache(path: str) -> dict:
    """The cache file's entries ({machine key: {signature: {"form": kind, "ms": {kind: ms}}}}); {} when absent.
    Only a regular file of at most MAX_CACHE_BYTES is read (a FIFO or /dev/zero is refused without blocking),
    as strict JSON, and every entry is checked (check_cache): a one-line DescError names the file and entry."""
    from dml_desc.errors import parse_json
    from dml_desc.files import read_regular
    if not os.path.exists(path):
        return {}
    data = read_regular(path, MAX_CACHE_BYTES, "calibration cache", field="calibration")
    return check_cache(parse_json(data, f"calibration {path}"), path)


def check_cache(doc, path: str) -> dict:
    """The entries of a cache document, each checked: {"version": CACHE_VERSION, "entries": {machine key (text):
    {signature (JSON object text): {"form": a form name, "ms": {form name: a finite time >= 0}}}}}, no other
    keys. A DescError naming `path` and the entry otherwise."""
    def check(ok: bool, where: str, value, rule: str) -> None:
        require(ok, "calibration", path, f"{where} = {_shown(value)}: {rule}")
    check(isinstance(doc, dict) and set(doc) == CACHE_KEYS, "the document", doc, "is not a dml-desc calibration "
          f"cache (an object of {sorted(CACHE_KEYS)})")
    check(type(doc["version"]) is int and doc["version"] == CACHE_VERSION, "version", doc["version"],
          f"this dml-desc reads version {CACHE_VERSION}; run dml-desc calibrate again")
    check(isinstance(doc["entries"], dict), "entries", doc["entries"], "must be an object of machine keys")
    for machine, entry in doc["entries"].items():
        where = f"entries[{_shown(machine)}]"
        check(isinstance(machine, str) and bool(machine), where, machine, "a machine key must be non-empty text")
        check(isinstance(entry, dict), where, entry, "must be an object of node signatures")
        for sig, record in entry.items():
            at = f"{where}[{_shown(sig)}]"
            check(_is_signature(sig), at, sig, "a signature must be the text of a JSON object")
            check(isinstance(record, dict) and "form" in record and set(record) <= ENTRY_KEYS, at, record,
                  f'must be an object {{"form": ..., "ms": ...}} (keys {sorted(ENTRY_KEYS)})')
            _check_form(record["form"], lambda ok, v, rule, at=at: check(ok, f"{at}.form", v, rule))
            times = record.get("ms", {})
            check(isinstance(times, dict), f"{at}.ms", times, "must be an object {form: milliseconds}")
            for kind, ms in times.items():
                _check_form(kind, lambda ok, v, rule, at=at: check(ok, f"{at}.ms", v, rule))
                check(is_number(ms) and ms >= 0, f"{at}.ms[{_shown(kind)}]", ms, "a time must be a finite "
                      "number >= 0")
    return doc["entries"]


def _check_form(name, check) -> None:
    check(isinstance(name, str) and (name in FORM_NAMES or name in RENAMED), name,
          f"is no form dml-desc knows{did_you_mean(name, FORM_NAMES)} (one of {', '.join(FORM_NAMES)})")


def _is_signature(sig) -> bool:
    try:
        return isinstance(json.loads(sig), dict)
    except (TypeError, ValueError, RecursionError):
        return False


def _shown(value) -> str:
    """A user's value in a message, cut to 60 characters: a text's repr, an object's keys, a list's length."""
    if isinstance(value, dict):
        return short_key(f"an object with keys {sorted(map(str, value))}")
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    text = repr(value) if isinstance(value, str) else short_key(value)
    return text if len(text) <= 60 else text[:57] + "..."


def choices(calibration, machine: str | None = None) -> dict:
    """{signature: kind} for `machine` (default: this one) from a cache path, or from a {signature: kind} dict
    (checked: text keys, known form names); a form's former name (forms.RENAMED) is read as its current one."""
    if calibration is None:
        return {}
    if isinstance(calibration, dict):
        for sig, kind in calibration.items():
            require(isinstance(sig, str), "calibration", sig, "keys must be node signatures (text)")
            _check_form(kind, lambda ok, v, rule, sig=sig: require(ok, f"calibration[{_shown(sig)}]", v, rule))
        return {sig: RENAMED.get(kind, kind) for sig, kind in calibration.items()}
    require(isinstance(calibration, (str, os.PathLike)), "calibration", type(calibration).__name__,
            "must be a cache file path or a {signature: form} dict")
    entry = read_cache(os.fspath(calibration)).get(machine or machine_key(), {})
    return {sig: RENAMED.get(v["form"], v["form"]) for sig, v in entry.items()}


def max_threads() -> int:
    """The most onnxruntime intra-op threads calibrate takes: 4 x this machine's CPUs (os.cpu_count())."""
    return 4 * (os.cpu_count() or 1)


def check_runs(threads, rounds, names: tuple = ("threads", "rounds")) -> None:
    """`threads`: 0 (onnxruntime's default) or 1 .. max_threads(); `rounds`: timed runs, at least 1. `names`: the
    caller's names for them (the CLI's --threads, --rounds)."""
    integer(threads, names[0])
    require(0 <= threads <= max_threads(), names[0], threads, f"must be 0 (onnxruntime's default) or 1 to "
            f"{max_threads()} (4 x the {os.cpu_count() or 1} CPUs here)")
    integer(rounds, names[1], 1)


def signature(attrs: dict, factors: dict, rank: int, channels, opset: int, elem: int) -> str:
    """The key of one calibrated choice: the attributes that shape the gradient, the factors, rank, opset, C."""
    from .generic_forms import IGNORED
    kept = {k: v for k, v in sorted(attrs.items()) if k not in IGNORED}
    return json.dumps({"attrs": kept, "factors": {str(a): f for a, f in sorted(factors.items())}, "rank": rank,
                       "channels": channels, "opset": opset, "elem": elem}, sort_keys=True)


# ---- measuring -------------------------------------------------------------------------------------------

def calibrate_model(model: onnx.ModelProto, path: str | None = None, threads: int = 0, rounds: int = 5,
                    stand_in: tuple = (STAND_IN_BATCH, STAND_IN_CHANNELS, STAND_IN_LENGTH),
                    semantics: str = STAND_IN_SEMANTICS) -> list:
    """Time every candidate form of each ResizeGrad node that admits more than one (a generic form, or static
    shapes); merge the winners into the cache at `path` (default_cache()) under this machine's key. Returns one
    (signature, form, {kind: ms}) per distinct node signature. `semantics`: the ONNX semantics `lower` will be
    given (a static node's signature holds its map under them; `dml-desc calibrate` passes the installed one's).
    `threads` and `rounds` as check_runs takes them; of equal times, the first candidate (in lower's order) wins."""
    check_runs(threads, rounds)
    path = path or default_cache()
    found = {}
    model_info = _graph_info(model, semantics)          # shape inference once, for every node
    for node, info in _resize_grad_nodes(model, model_info):
        measured = (_static_node(model, info, node, stand_in, semantics)
                    or _generic_node(model, model_info, node, stand_in, semantics))
        if measured and measured[0] not in found and len(measured[1]) > 1:
            found[measured[0]] = measured[1:]
    results = []
    for sig, (candidates, single, feeds) in found.items():
        times = {kind: _time_kind(single, feeds, sig, kind, threads, rounds, semantics) for kind in candidates}
        best = min(times, key=times.get)            # the first of equal times: candidates come in the rule's order
        results.append((sig, best, times))
    _merge(path, results)
    return results


def _generic_node(model, model_info, node, stand_in: tuple, semantics: str):
    """(signature, candidate kinds, one-node model, feeds) of a shape-generic node, or None. `model_info`: the
    model's graph info (None where lower() could not read the model)."""
    from .lower import lower
    if model_info is None:
        return None
    try:
        single, feeds = _one_node_model(model, model_info, node, stand_in)
    except DescError:
        return None                        # no constant scales, rank or type here: the rule's general path
    rewrite = lower(single, semantics=semantics).rewrites[0]
    return (rewrite.signature, rewrite.candidates, single, feeds) if rewrite.signature else None


def _static_node(model, info, node, stand_in: tuple, semantics: str):
    """(signature, candidate forms, one-node model, feeds) of a node whose shapes are known when lowering (run-time
    dims only on axes it does not resize, measured at stand-in sizes), or None. `info`: its graph's, or None."""
    read = _static_read(info, node)
    if read is None:
        return None
    info, res, elem, acc = read
    sig = static_signature(res, info.opset, acc)
    single, feeds = _static_model(model, node, info, res, elem, stand_in)
    again = _static_read(_graph_info(single, semantics), single.graph.node[0])
    if again is None or static_signature(again[1], again[0].opset, again[3]) != sig:
        return None                        # the one-node copy would not lower as this node does
    return sig, static_candidates(res, info.opset, acc), single, feeds


def _graph_info(model, semantics: str):
    """The shapes, types and constants lower() reads a model's graphs with under `semantics`, or None."""
    from .planning import graph_info
    try:
        return graph_info(model, semantics)
    except DescError:
        return None


def _static_read(info, node):
    """(graph info, canonical map, element type, accumulation type) of a static node as lower() reads it by
    default, or None."""
    from .planning import NP_OF
    if info is None:
        return None
    try:
        read = info.read(node)
    except DescError:
        return None
    if not isinstance(read, tuple) or read[2] not in NP_OF:
        return None                        # a dynamic read, or no element type
    return info, read[1], read[2], NP_OF[read[2]]


def _static_model(model, node, info, res, elem: int, stand_in: tuple) -> tuple:
    """(model holding only `node`, feeds): dY and X with the map's shapes (run-time dims kept symbolic, fed at
    stand-in sizes), roi and scales as the constants they are."""
    dims = [[f"d{a}" if is_symbolic(n) else int(n) for a, n in enumerate(shape)] for shape in (res.out_shape,
                                                                                               res.in_shape)]
    inputs, inits = ["dY", "X"], []
    for k in (2, 3):
        values, name = info.const(node, k)
        inputs.append(name if values is not None else "")
        if values is not None:
            inits.append(onnx.numpy_helper.from_array(info.consts[name], name))
    dy_shape, x_shape = ([stand_in[min(a, 2)] if isinstance(d, str) else d for a, d in enumerate(shape)]
                         for shape in dims)
    return _single_model(model, node, inputs, dims[0], dims[1], elem, inits, dy_shape, x_shape)


def _single_model(model, node, inputs: list, dy_dims: list, x_dims: list, elem: int, inits: list,
                  dy_shape: list, x_shape: list) -> tuple:
    """(model holding only a copy of `node` reading `inputs`, feeds of dY's and X's stand-in shapes)."""
    copy = helper.make_node("ResizeGrad", inputs, ["dX"], domain="com.microsoft", name=node.name or "ResizeGrad")
    copy.attribute.extend(node.attribute)
    graph = helper.make_graph([copy], "calibration", [helper.make_tensor_value_info("dY", elem, dy_dims),
                                                      helper.make_tensor_value_info("X", elem, x_dims)],
                              [helper.make_tensor_value_info("dX", elem, x_dims)], inits)
    single = helper.make_model(graph, ir_version=model.ir_version, opset_imports=list(model.opset_import))
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    return single, {"dY": np.random.default_rng(0).standard_normal(dy_shape).astype(dtype),
                    "X": np.zeros(x_shape, dtype)}


def _resize_grad_nodes(model, info) -> list:
    """(node, graph info) of every ResizeGrad: in the graphs (`info`, read once), and in functions (info None: a
    function body has no static shapes)."""
    from .graph_walk import graphs, is_resize_grad
    nodes = [(n, info) for g in graphs(model.graph) for n in g.node if is_resize_grad(n)]
    return nodes + [(n, None) for f in model.functions for n in f.node if is_resize_grad(n)]


def _time_kind(single, feeds, sig: str, kind: str, threads: int, rounds: int, semantics: str) -> float:
    """Best time (ms) of a one-node model lowered in `kind`, on stand-in shapes."""
    from .lower import lower
    from .run import session
    lowered, _ = lower(single, calibration={sig: kind}, semantics=semantics)
    sess = session(lowered, threads=threads)
    sess.run(None, feeds)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        sess.run(None, feeds)
        best = min(best, time.perf_counter() - t)
    return round(best * 1e3, 4)


def _one_node_model(model, info, node, stand_in: tuple):
    """A model holding only `node` (dY, X as inputs with the original dims, scales as a constant) and feeds of
    stand-in shapes; `info`: the model's graph info."""
    x_dims, dy_dims = info.dims(node.input[1]), info.dims(node.input[0])
    elem = info.elem_type(node)
    scales = info.const(node, 3)[0]
    require(x_dims is not None and elem is not None and scales is not None, f"node {node.name}", None,
            "calibration needs X's rank, its element type and constant scales")
    shape = [d if isinstance(d, int) else stand_in[min(a, 2)] for a, d in enumerate(x_dims)]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    axes = [a % len(x_dims) for a in attrs.get("axes", range(len(x_dims)))]
    out = list(shape)
    for a, s in zip(axes, scales):
        out[a] = int(np.floor(shape[a] * np.float32(s)))
    sym = lambda dims, tag: [d if isinstance(d, int) else f"{tag}{a}" for a, d in enumerate(dims)]  # noqa: E731
    return _single_model(model, node, ["dY", "X", "", "scales"], sym(dy_dims or x_dims, "dy"), sym(x_dims, "x"),
                         elem, [onnx.numpy_helper.from_array(np.asarray(scales, np.float32), "scales")], out, shape)


def _merge(path: str, results: list) -> None:
    """Merge the results into the cache file under this machine's key (written atomically, keys sorted)."""
    entries = read_cache(path)
    entry = entries.setdefault(machine_key(), {})
    for sig, best, times in results:
        entry[sig] = {"form": best, "ms": times}
    from dml_desc.files import write_atomic
    doc = {"version": CACHE_VERSION, "entries": entries}
    check_cache(doc, path)                                  # what is written reads again: finite times, known forms
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"
    write_atomic(path, text.encode("utf-8"), field="--cache")
