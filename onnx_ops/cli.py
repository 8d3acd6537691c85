"""`dml-desc build`, `dml-desc lower` and `dml-desc calibrate`."""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dml_desc.errors import require

if TYPE_CHECKING:
    from dml_desc.conventions.deconv import ConvSpec

SEMANTICS = ("ort-1.19", "ort-1.27", "onnx-spec")
SEMANTICS_HELP = ("the ONNX Resize semantics (nearest tie rule): ort-1.19 (onnxruntime <= 1.26), ort-1.27 (>= 1.27) "
                  "or onnx-spec (exact arithmetic); default: the installed onnxruntime's")


def cmd_build(args: argparse.Namespace) -> int:
    """Write an ONNX model: the gradient of the description by default, its forward Resize with --forward."""
    from dml_desc.conventions import load_description, read_description
    from dml_desc.conventions.onnx import resolve_semantics      # no --semantics: the installed onnxruntime's
    from .build import TOLERANCE_KEY, build_gradient, build_resize
    from dml_desc.conventions import check_tolerance
    from .lowering.validate import save_atomic
    fmt, obj = read_description(args.file, args.src)
    dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[args.dtype]
    from dml_desc.conventions import deconv
    if deconv.is_deconv(fmt, obj):
        require(not args.forward, "--forward", True, "a ConvTransposeBackwardData file describes a gradient only")
        if args.lowered:      # its model is standard ops already: say so rather than ignore the flag
            print("note: --lowered: a ConvTransposeBackwardData is written as a standard Conv already (no "
                  "ResizeGrad to lower)", file=sys.stderr)
        from .conv import build_conv_data_grad
        reading = deconv.read(fmt, obj)
        spec = cast("ConvSpec", reading.canonical)      # a deconv Reading's canonical is its ConvSpec
        layout: dict[str, Any] = reading.layout         # a deconv's: data_format, weights_format, dtype (strs)
        save_atomic(build_conv_data_grad(spec, layout.get("data_format", "NCX"), layout.get("weights_format", "IOX"),
                                         dtype), args.output)
        print(f"wrote {args.output}: ConvTransposeBackwardData diff_dst {list(spec.diff_dst_shape)} -> diff_src "
              f"{list(spec.diff_src_shape)} (NCX, standard ONNX ops)")
        return 0
    res, backward = load_description(fmt, obj, semantics=args.semantics)
    tolerance = check_tolerance(args.tolerance)
    if args.forward:
        model = build_resize(res, dtype, tolerance=tolerance, semantics=resolve_semantics(args.semantics))
        for p in model.metadata_props:
            if p.key == TOLERANCE_KEY:
                print(f"note: {p.value}", file=sys.stderr)
        save_atomic(model, args.output)
        print(f"wrote {args.output}: Resize X {list(res.in_shape)} -> Y {list(res.out_shape)}")
        return 0
    if not backward:
        print(f"note: {args.file} describes the forward resize; writing its gradient (--forward writes the Resize)",
              file=sys.stderr)
    model, notes = build_gradient(res, dtype, lowered=args.lowered, semantics=resolve_semantics(args.semantics),
                                  tolerance=tolerance)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    save_atomic(model, args.output)
    from dml_desc.conventions.onnx import describe_semantics
    how = f"lowered to standard ops, ONNX semantics {describe_semantics(args.semantics)}" if args.lowered \
        else "com.microsoft ResizeGrad"
    print(f"wrote {args.output}: gradient dY {list(res.out_shape)} -> dX {list(res.in_shape)} ({how})")
    return 0


def cmd_lower(args: argparse.Namespace) -> int:
    """Rewrite every ResizeGrad node of a model file (in place when IN == OUT)."""
    from .lower import lower_file
    require(os.path.exists(args.input), "IN", args.input, "does not exist")
    if args.keep_cuda:
        _warn_without_cuda()
    providers = ("CUDAExecutionProvider",) if args.keep_cuda else ("CPUExecutionProvider",)
    from dml_desc.conventions.onnx import resolve_semantics      # no --semantics: the installed onnxruntime's
    report = lower_file(args.input, args.output, providers, semantics=resolve_semantics(args.semantics),
                        calibration=args.calibration)
    from dml_desc.conventions.onnx import describe_semantics
    kept = sum(1 for r in report if getattr(r, "kept_native", False))
    kept_text = f", {kept} kept native for CUDA" if args.keep_cuda else ""
    print(f"{args.output}: {len(report) - kept} ResizeGrad node(s) rewritten{kept_text} (ONNX semantics "
          f"{describe_semantics(args.semantics)})")
    for line in report:
        print(f"  {line}")
    for line in getattr(report, "repairs", []):          # MaxPoolGrad rewrite, eval BatchNorm (training graphs)
        print(f"  repaired: {line}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Measure the candidate forms of each ResizeGrad of a model on this onnxruntime; cache the winners."""
    from dml_desc.conventions.onnx import resolve_semantics      # the installed onnxruntime's, as `lower`
    from .calibrate import calibrate_model, check_runs, default_cache, machine_key
    from .lowering.validate import load_model
    check_runs(args.threads, args.rounds, ("--threads", "--rounds"))
    require(os.path.exists(args.input), "IN", args.input, "does not exist")
    path = args.cache or default_cache()
    results = calibrate_model(load_model(args.input), path, threads=args.threads, rounds=args.rounds,
                              semantics=resolve_semantics(getattr(args, "semantics", None)))
    print(f"{path}: {len(results)} choice(s) for {machine_key()}")
    for sig, best, times in results:
        print(f"  {best}: " + ", ".join(f"{k} {v:.3g} ms" for k, v in times.items()) + f"  {sig}")
    return 0


def _warn_without_cuda() -> None:
    """--keep-cuda keeps nodes only CUDA can run: say so when this onnxruntime has no CUDA provider."""
    from .run import available_providers, native_kernel_missing
    if "CUDAExecutionProvider" not in available_providers():
        print("dml-desc lower: warning: --keep-cuda keeps ResizeGrad nodes for CUDA, but this onnxruntime has no "
              "CUDAExecutionProvider (the CPU build?): those nodes will not run here", file=sys.stderr)
    elif native_kernel_missing("CUDAExecutionProvider"):
        print("dml-desc lower: warning: --keep-cuda keeps ResizeGrad nodes for CUDA, but this onnxruntime's CUDA "
              "provider has no ResizeGrad kernel (onnxruntime-gpu; only the training builds have it): those nodes "
              "will not run here", file=sys.stderr)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register `build` and `lower` on the `dml-desc` subcommand parser."""
    from dml_desc.conventions import FORMATS
    b = sub.add_parser("build", help="write an ONNX model of the gradient (ResizeGrad, or lowered), or with "
                       "--forward of the Resize", description="Write an ONNX model for a description. The gradient "
                       "by default, also for a forward description (torch, tf, onnx Resize, DML RESAMPLE*): "
                       "ResizeGrad(dY, X, roi, scales) -> dX. A ConvTransposeBackwardData file gives "
                       "(diff_dst, weights) -> diff_src.")
    b.add_argument("file", metavar="FILE.json")
    b.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    b.add_argument("--from", dest="src", choices=FORMATS, help="input format (guessed from the keys when omitted)")
    what = b.add_mutually_exclusive_group()
    what.add_argument("--lowered", action="store_true",
                      help="write the gradient as standard ai.onnx ops (runs on any onnxruntime build)")
    what.add_argument("--forward", action="store_true", help="write the forward Resize instead of the gradient")
    b.add_argument("--dtype", choices=("f32", "f16", "f64"), default="f32")
    b.add_argument("--semantics", choices=SEMANTICS, help=SEMANTICS_HELP)
    b.add_argument("--tolerance", type=float, default=0.0, metavar="T",
                   help="ResizeGrad / --forward: accept the closest ONNX spelling whose weights differ by at most T "
                   "(max |dw|), recorded in a note and in the model's metadata_props (dml_desc.tolerance); "
                   "default 0: exact only. --lowered needs no spelling and stays exact")
    b.set_defaults(func=cmd_build)
    lo = sub.add_parser("lower", help="rewrite every com.microsoft ResizeGrad node into standard ops")
    lo.add_argument("input", metavar="IN.onnx")
    lo.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    lo.add_argument("--keep-cuda", action="store_true",
                    help="keep nodes the CUDA kernel supports (linear, 4-D, half_pixel/align_corners); they need "
                    "the CUDA build of onnxruntime-training (warns when it is absent)")
    lo.add_argument("--semantics", choices=SEMANTICS, help=SEMANTICS_HELP)
    lo.add_argument("--calibration", metavar="CACHE.json",
                    help="use the forms `dml-desc calibrate` measured fastest on this machine (CPU model and "
                    "onnxruntime version); without it the output depends on the model alone")
    lo.set_defaults(func=cmd_lower)
    ca = sub.add_parser("calibrate", help="measure the candidate forms of a model's ResizeGrad nodes "
                        "on this onnxruntime and cache the fastest (used by `lower --calibration`)")
    ca.add_argument("input", metavar="IN.onnx")
    ca.add_argument("--cache", metavar="CACHE.json", help="the cache file (default $DML_DESC_CALIBRATION, else "
                    "~/.cache/dml-desc/calibration.json); entries are keyed by CPU model and onnxruntime version")
    ca.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads: 0 (its default) or 1 to "
                    "4 x the CPUs this machine has")
    ca.add_argument("--rounds", type=int, default=5, help="timed runs per candidate, at least 1 (the best counts; "
                    "a tie goes to the form the rule ranks first)")
    ca.set_defaults(func=cmd_calibrate)

