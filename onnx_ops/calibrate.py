"""Measured form choice, only when asked: `dml-desc calibrate` and `lower(calibration=...)`.

By default `lower` picks a node's form by rule and cost model, so its output depends on the model alone. Here a
ResizeGrad can instead take the fastest of its candidates as measured on the executing onnxruntime:

- a shape-generic node (onnx_ops.lowering.generic_forms): the rule's choice, then each other generic spelling it
  admits ("kronpairs", "pool", "conv", "block", "resize", "sepconv": the registry's order, onnx_ops.forms.registry)
  and the general in-graph path ("general");
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
import time

import numpy as np
import onnx
from onnx import helper

from dml_desc.conventions.onnx import STAND_IN_SEMANTICS
from dml_desc.errors import DescError, integer, require

from .lowering.calibration import (CACHE_VERSION, FORM_NAMES, KINDS, MAX_CACHE_BYTES, check_cache, choices, cpu_model,
                          default_cache, machine_key, read_cache, signature)
from .lower import lower
from .forms import candidates as static_candidates, is_symbolic, signature as static_signature

STAND_IN_BATCH, STAND_IN_CHANNELS, STAND_IN_LENGTH = 4, 32, 96

# The calibration cache's names live in onnx_ops.lowering.calibration (below the lowering); these are public here too.
__all__ = ["CACHE_VERSION", "FORM_NAMES", "KINDS", "MAX_CACHE_BYTES", "STAND_IN_BATCH", "STAND_IN_CHANNELS",
           "STAND_IN_LENGTH", "calibrate_model", "check_cache", "check_runs", "choices", "cpu_model", "default_cache",
           "machine_key", "max_threads", "read_cache", "signature", "static_candidates", "static_signature"]


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
        best = min(times, key=times.__getitem__)       # the first of equal times: candidates come in the rule's order
        results.append((sig, best, times))
    _merge(path, results)
    return results


def _generic_node(model, model_info, node, stand_in: tuple, semantics: str):
    """(signature, candidate kinds, one-node model, feeds) of a shape-generic node, or None. `model_info`: the
    model's graph info (None where lower() could not read the model)."""
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
    from .lowering.plan import graph_info
    try:
        return graph_info(model, semantics)
    except DescError:
        return None


def _static_read(info, node):
    """(graph info, canonical map, element type, accumulation type) of a static node as lower() reads it by
    default, or None."""
    from .lowering.plan import NP_OF
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
    from .lowering.walk import graphs, is_resize_grad
    nodes = [(n, info) for g in graphs(model.graph) for n in g.node if is_resize_grad(n)]
    return nodes + [(n, None) for f in model.functions for n in f.node if is_resize_grad(n)]


def _time_kind(single, feeds, sig: str, kind: str, threads: int, rounds: int, semantics: str) -> float:
    """Best time (ms) of a one-node model lowered in `kind`, on stand-in shapes."""
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
