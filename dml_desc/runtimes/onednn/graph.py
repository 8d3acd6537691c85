"""The Graph API runner (child side): one oneDNN Graph JSON op added with add_op, partitioned, compiled and
executed as written; the attribute at fault when add_op refuses it."""
from __future__ import annotations

import ctypes as C
from typing import Any

import numpy as np

from .bindings import ATTRS, CPU, DATA_TYPES, FPMATH_STRICT, LAYOUT_STRIDED, OP_KINDS, POLICY_FUSION, PLT, \
    Context, Failed, H, LogicalTensor


class Refused(Exception):
    """A job the binding cannot hand to oneDNN (e.g. an attribute name oneDNN Graph does not have)."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        self.field, self.value, self.rule = field, value, rule
        super().__init__(rule)


def _logical_tensor(t: dict[str, Any]) -> LogicalTensor:
    """The dnnl_graph_logical_tensor_t of a JSON tensor (strided; ndims -1 where the shape is unknown)."""
    lt = LogicalTensor()
    lt.id = int(t["id"])
    shape = t.get("shape")
    lt.data_type = DATA_TYPES[t.get("dtype", "f32")]
    lt.layout_type = LAYOUT_STRIDED
    if shape in (None, [], -1):
        lt.ndims = -1
        return lt
    lt.ndims = len(shape)
    for i, d in enumerate(shape):
        lt.dims[i] = int(d)
    strides = t.get("stride") or [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    for i, s in enumerate(strides):
        lt.strides[i] = int(s)
    return lt


def _set_attr(ctx: Context, op: H, name: str, a: object) -> None:
    if name not in ATTRS:
        raise Refused(f"attrs.{name}", a, f"is not an attribute of oneDNN Graph's {sorted(OP_KINDS)} ops "
                       f"(they have {sorted(ATTRS)})")
    attr_id, kind = ATTRS[name]
    value: Any = a.get("value") if isinstance(a, dict) else None       # JSON
    if kind == "string":
        raw = str(value).encode()
        ctx.call("dnnl_graph_op_set_attr_str", op, attr_id, raw, len(raw))
    elif kind == "f32[]":
        vals = (C.c_float * len(value))(*value)
        ctx.call("dnnl_graph_op_set_attr_f32", op, attr_id, vals, len(value))
    else:
        ints = [value] if kind == "s64" else list(value)
        arr = (C.c_int64 * len(ints))(*ints)
        ctx.call("dnnl_graph_op_set_attr_s64", op, attr_id, arr, len(ints) if kind != "s64" else 1)


def _add_op(ctx: Context, op_json: dict[str, Any], skip: str | None = None) -> H:
    """A finalized one-op graph, or Failed from the call that refused it."""
    graph, op = H(), H()
    ctx.call("dnnl_graph_graph_create_with_fpmath_mode", C.byref(graph), CPU, FPMATH_STRICT)
    ctx.call("dnnl_graph_op_create", C.byref(op), int(op_json.get("id", 0)), OP_KINDS[op_json["kind"]],
             str(op_json.get("name", op_json["kind"])).encode())
    for name, a in op_json.get("attrs", {}).items():
        if name != skip:
            _set_attr(ctx, op, name, a)
    keep: list[LogicalTensor] = []
    for t in op_json.get("inputs", []):
        keep.append(_logical_tensor(t))
        ctx.call("dnnl_graph_op_add_input", op, C.byref(keep[-1]))
    for t in op_json.get("outputs", []):
        keep.append(_logical_tensor(t))
        ctx.call("dnnl_graph_op_add_output", op, C.byref(keep[-1]))
    ctx.call("dnnl_graph_add_op", graph, op)
    ctx.call("dnnl_graph_graph_finalize", graph)
    ctx.call("dnnl_graph_graph_filter", graph, POLICY_FUSION)
    return graph


def attribute_at_fault(ctx: Context, job: dict[str, Any]) -> tuple[str, Any] | None:
    """The one attribute without which add_op accepts the op (None when no single one is to blame)."""
    op_json = job["op"]
    for name, a in op_json.get("attrs", {}).items():
        try:
            _add_op(ctx, op_json, skip=name)
        except Failed:
            continue
        return f"attrs.{name}", a.get("value")
    return None


def _partitions(ctx: Context, graph: H) -> list[tuple[H, bool]]:
    num = C.c_size_t()
    ctx.call("dnnl_graph_graph_get_partition_num", graph, C.byref(num))
    parts = (H * num.value)()
    ctx.call("dnnl_graph_graph_get_partitions", graph, num.value, parts)
    out = []
    for p in parts:
        ok = C.c_uint8()
        ctx.call("dnnl_graph_partition_is_supported", H(p), C.byref(ok))
        out.append((H(p), bool(ok.value)))
    return out


PORT_CALLS = {"input": ("dnnl_graph_partition_get_input_ports_num", "dnnl_graph_partition_get_input_ports"),
              "output": ("dnnl_graph_partition_get_output_ports_num", "dnnl_graph_partition_get_output_ports")}


def _ports(ctx: Context, part: H, which: str) -> list[LogicalTensor]:
    count_fn, ports_fn = PORT_CALLS[which]
    num = C.c_size_t()
    ctx.call(count_fn, part, C.byref(num))
    lts = (LogicalTensor * num.value)()
    ctx.call(ports_fn, part, num.value, lts)
    return list(lts)


def run_graph(ctx: Context, job: dict[str, Any]) -> dict[str, Any]:
    """add_op (+ compile and execute when `inputs` maps input ids to arrays) of one oneDNN Graph op."""
    graph = _add_op(ctx, job["op"])
    parts = _partitions(ctx, graph)
    if len(parts) != 1 or not parts[0][1]:
        raise Failed("dnnl_graph_partition_is_supported", 3)
    if job.get("inputs") is None:
        return {"api": "Graph", "kernel": "-"}
    part = parts[0][0]
    ins, outs = _ports(ctx, part, "input"), _ports(ctx, part, "output")
    cp = H()
    ctx.call("dnnl_graph_compiled_partition_create", C.byref(cp), part)
    in_ptrs = (PLT * len(ins))(*[C.pointer(lt) for lt in ins])
    out_ptrs = (PLT * len(outs))(*[C.pointer(lt) for lt in outs])
    ctx.call("dnnl_graph_partition_compile", part, cp, len(ins), in_ptrs, len(outs), out_ptrs, ctx.engine)
    arrays: list[np.ndarray] = []
    tensors: list[H] = []
    for lt in ins:
        arrays.append(np.ascontiguousarray(job["inputs"][lt.id]))
        tensors.append(_graph_tensor(ctx, lt, arrays[-1]))
    results: list[np.ndarray] = []
    for lt in outs:
        done = LogicalTensor()
        ctx.call("dnnl_graph_compiled_partition_query_logical_tensor", cp, lt.id, C.byref(done))
        results.append(np.zeros([done.dims[i] for i in range(done.ndims)], arrays[0].dtype))
        tensors.append(_graph_tensor(ctx, done, results[-1]))
    in_t = (H * len(ins))(*tensors[:len(ins)])
    out_t = (H * len(outs))(*tensors[len(ins):])
    ctx.call("dnnl_graph_compiled_partition_execute", cp, ctx.stream, len(ins), in_t, len(outs), out_t)
    ctx.call("dnnl_stream_wait", ctx.stream)
    return {"out": results[0], "api": "Graph", "kernel": None}


def _graph_tensor(ctx: Context, lt: LogicalTensor, array: np.ndarray) -> H:
    t = H()
    ctx.call("dnnl_graph_tensor_create", C.byref(t), C.byref(lt), ctx.engine, H(array.ctypes.data))
    return t
