"""Memory descriptors and memories over NumPy arrays (no copy), and running one primitive descriptor."""
from __future__ import annotations

import ctypes as C
from typing import Iterable, Sequence, SupportsInt, cast

import numpy as np

from .bindings import DATA_TYPES, QUERY_IMPL_INFO_STR, Context, Dims, ExecArg, H


def dims(values: Iterable[SupportsInt]) -> C.Array[C.c_int64]:
    """A dnnl_dims_t of `values`."""
    return Dims(*[int(v) for v in values])


def layout_perm(rank: int, fmt: str) -> list[int]:
    """perm[i] = the array axis of logical (N, C, X...) axis i, for data_format NCX or NXC."""
    return list(range(rank)) if fmt == "NCX" else [0, rank - 1] + list(range(1, rank - 1))


def dtype_name(array: np.ndarray) -> str:
    """oneDNN's name of the array's dtype: f32, f16, bf16."""
    return {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[array.dtype.name]


def memory_desc(ctx: Context, array: np.ndarray, perm: Sequence[int]) -> H:
    """A memory desc over `array` in logical (N, C, X...) order, whose array axis perm[i] holds logical axis i."""
    item = array.itemsize
    strides = [array.strides[p] // item for p in perm]
    md = H()
    ctx.call("dnnl_memory_desc_create_with_strides", C.byref(md), len(perm), dims([array.shape[p] for p in perm]),
             DATA_TYPES[dtype_name(array)], dims(strides))
    return md


def weights_desc(ctx: Context, w: np.ndarray, wfmt: str, groups: int) -> H:
    """oneDNN's (G, OC/G, IC/G, K...) (or (OC, IC, K...)) view of IOX (IC, OC/G, K...) / XOI (K..., OC/G, IC)."""
    item = w.itemsize
    st = [s // item for s in w.strides]
    if wfmt == "IOX":
        (ic, s_i), (o, s_o), ks = (w.shape[0], st[0]), (w.shape[1], st[1]), list(zip(w.shape[2:], st[2:]))
    else:
        (ic, s_i), (o, s_o), ks = (w.shape[-1], st[-1]), (w.shape[-2], st[-2]), list(zip(w.shape[:-2], st[:-2]))
    sizes = [o, ic // groups] + [k for k, _ in ks]
    strides = [s_o, s_i] + [s for _, s in ks]
    if groups > 1:
        sizes, strides = [groups] + sizes, [ic // groups * s_i] + strides
    md = H()
    ctx.call("dnnl_memory_desc_create_with_strides", C.byref(md), len(sizes), dims(sizes), DATA_TYPES[dtype_name(w)],
             dims(strides))
    return md


def memory(ctx: Context, md: H, array: np.ndarray) -> H:
    """A dnnl_memory_t over the array's own buffer."""
    mem = H()
    ctx.call("dnnl_memory_create", C.byref(mem), md, ctx.engine, H(array.ctypes.data))
    return mem


def impl_info(ctx: Context, pd: H) -> str:
    """The kernel a primitive descriptor picked (e.g. 'jit:avx512_core', 'simple:any')."""
    text = C.c_char_p()
    ctx.call("dnnl_primitive_desc_query", pd, QUERY_IMPL_INFO_STR, 0, C.cast(C.byref(text), H))
    return cast(bytes, text.value).decode()       # set by the query (a failed one raised Failed)


def execute(ctx: Context, pd: H, args: list[tuple[int, H]]) -> None:
    """Create the primitive of `pd`, run it once on [(arg index, memory)] and destroy it."""
    prim = H()
    ctx.call("dnnl_primitive_create", C.byref(prim), pd)
    arr = (ExecArg * len(args))(*[ExecArg(a, m) for a, m in args])
    ctx.call("dnnl_primitive_execute", prim, ctx.stream, len(args), arr)
    ctx.call("dnnl_stream_wait", ctx.stream)
    ctx.lib.dnnl_primitive_destroy(prim)
