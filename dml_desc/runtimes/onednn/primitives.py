"""The primitive API's runners (child side): resampling forward and backward, deconvolution backward-data.

Each takes the child's Context and a job dict and returns {"out", "kernel", "api"}; shapes come from the
arrays (oneDNN derives the resampling factors from dst/src), layouts from data_format NCX / NXC."""
from __future__ import annotations

import ctypes as C
from typing import Any, Callable

import numpy as np

from .bindings import (ARG_DIFF_DST, ARG_DIFF_SRC, ARG_DST, ARG_SRC, ARG_WEIGHTS, DECONVOLUTION_DIRECT,
                       FORWARD_TRAINING, RESAMPLING, Context, ExecArg, H)
from .memory import dims, execute, impl_info, layout_perm, memory, memory_desc, weights_desc


def resampling_bwd(ctx: Context, job: dict[str, Any]) -> dict[str, Any]:
    """diff_src of a resampling backward primitive; dims from the tensors, no factors (oneDNN derives dst/src)."""
    run, ds, kernel = resampling_prepare(ctx, job)
    run()
    return {"out": ds, "kernel": kernel, "api": "primitive"}


def resampling_prepare(ctx: Context, job: dict[str, Any]) -> tuple[Callable[[], None], np.ndarray, str]:
    """(run, diff_src, kernel): the resampling backward primitive of `job`, ready to run."""
    dd = np.ascontiguousarray(job["diff_dst"])
    perm = layout_perm(dd.ndim, job["data_format"])
    ds = np.zeros(job["diff_src_shape"], dd.dtype)
    md_ds, md_dd = memory_desc(ctx, ds, perm), memory_desc(ctx, dd, perm)
    alg = RESAMPLING[job["mode"]]
    fwd, bwd = H(), H()
    ctx.call("dnnl_resampling_forward_primitive_desc_create", C.byref(fwd), ctx.engine, FORWARD_TRAINING, alg, None,
             md_ds, md_dd, None)
    ctx.call("dnnl_resampling_backward_primitive_desc_create", C.byref(bwd), ctx.engine, alg, None, md_ds, md_dd,
             fwd, None)
    prim = H()
    ctx.call("dnnl_primitive_create", C.byref(prim), bwd)
    args = [(ARG_DIFF_DST, memory(ctx, md_dd, dd)), (ARG_DIFF_SRC, memory(ctx, md_ds, ds))]
    exec_args = (ExecArg * len(args))(*[ExecArg(a, m) for a, m in args])

    def run() -> None:
        ctx.call("dnnl_primitive_execute", prim, ctx.stream, len(args), exec_args)
        ctx.call("dnnl_stream_wait", ctx.stream)
    run.keep = (dd, ds, prim, exec_args)  # type: ignore[attr-defined]  # alive as long as the callable
    return run, ds, impl_info(ctx, bwd)


def resampling_fwd(ctx: Context, job: dict[str, Any]) -> dict[str, Any]:
    """dst of a resampling forward primitive (src -> dst shapes; oneDNN derives the factors): the forward whose
    transpose InterpolateBackward is (the conformance oracles run it on basis inputs)."""
    src = np.ascontiguousarray(job["src"])
    perm = layout_perm(src.ndim, job["data_format"])
    dst = np.zeros(job["dst_shape"], src.dtype)
    md_src, md_dst = memory_desc(ctx, src, perm), memory_desc(ctx, dst, perm)
    fwd = H()
    ctx.call("dnnl_resampling_forward_primitive_desc_create", C.byref(fwd), ctx.engine, FORWARD_TRAINING,
             RESAMPLING[job["mode"]], None, md_src, md_dst, None)
    execute(ctx, fwd, [(ARG_SRC, memory(ctx, md_src, src)), (ARG_DST, memory(ctx, md_dst, dst))])
    return {"out": dst, "kernel": impl_info(ctx, fwd), "api": "primitive"}


def deconv_bwd_d(ctx: Context, job: dict[str, Any]) -> dict[str, Any]:
    """diff_src of a deconvolution backward-data primitive (dilations as oneDNN's d - 1)."""
    dd, w = np.ascontiguousarray(job["diff_dst"]), np.ascontiguousarray(job["weights"])
    perm = layout_perm(dd.ndim, job["data_format"])
    ds = np.zeros(job["diff_src_shape"], dd.dtype)
    md_ds, md_dd = memory_desc(ctx, ds, perm), memory_desc(ctx, dd, perm)
    md_w = weights_desc(ctx, w, job["weights_format"], job["groups"])
    geometry = [dims(job["strides"]), dims([d - 1 for d in job["dilations"]]), dims(job["pads_begin"]),
                dims(job["pads_end"])]
    fwd, bwd = H(), H()
    ctx.call("dnnl_deconvolution_forward_primitive_desc_create", C.byref(fwd), ctx.engine, FORWARD_TRAINING,
             DECONVOLUTION_DIRECT, md_ds, md_w, None, md_dd, *geometry, None)
    ctx.call("dnnl_deconvolution_backward_data_primitive_desc_create", C.byref(bwd), ctx.engine,
             DECONVOLUTION_DIRECT, md_ds, md_w, md_dd, *geometry, fwd, None)
    kernel = impl_info(ctx, bwd)
    execute(ctx, bwd, [(ARG_DIFF_DST, memory(ctx, md_dd, dd)), (ARG_WEIGHTS, memory(ctx, md_w, w)),
                       (ARG_DIFF_SRC, memory(ctx, md_ds, ds))])
    return {"out": ds, "kernel": kernel, "api": "primitive"}
