"""`dml-desc build` and `dml-desc lower`."""
from __future__ import annotations

import os

import numpy as np

from dml_desc.errors import DescError, require


def cmd_build(args) -> int:
    from dml_desc import conventions
    from dml_desc.cli import _read_json
    from .build import build_resize, build_resize_grad, save_atomic
    obj = _read_json(args.file)
    fmt = args.src or _guess_format(obj)
    dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[args.dtype]
    from dml_desc.conventions import deconv
    if deconv.is_deconv(fmt, obj):
        from .conv import build_conv_data_grad
        spec, layout, _ = deconv.load(fmt, obj)
        save_atomic(build_conv_data_grad(spec, layout.get("data_format", "NCX"), layout.get("weights_format", "IOX"),
                                         dtype), args.output)
        print(f"wrote {args.output}: ConvTransposeBackwardData diff_dst {list(spec.diff_dst_shape)} -> diff_src "
              f"{list(spec.diff_src_shape)} (NCX)")
        return 0
    res, backward = conventions.load(fmt, obj)
    if args.forward:
        backward = False
    model = build_resize_grad(res, dtype, lowered=args.lowered) if backward else build_resize(res, dtype)
    save_atomic(model, args.output)
    print(f"wrote {args.output}: {'ResizeGrad' if backward else 'Resize'} "
          f"{list(res.out_shape) if backward else list(res.in_shape)} -> "
          f"{list(res.in_shape) if backward else list(res.out_shape)}{' (lowered)' if args.lowered else ''}")
    return 0


def _guess_format(obj) -> str:
    require(isinstance(obj, dict), "FILE", type(obj).__name__, "must hold a JSON object")
    if "Operator" in obj:
        return "dml"
    if "graph" in obj or "kind" in obj:
        return "onednn"
    if "op_type" in obj or "weights_shape" in obj:
        return "onnx"
    if "method" in obj:
        return "tf"
    if "mode" in obj:
        return "torch"
    raise DescError("FILE", sorted(obj), "is no known format; pass --from")


def cmd_lower(args) -> int:
    from .lower import lower_file
    require(os.path.exists(args.input), "IN", args.input, "does not exist")
    providers = ("CUDAExecutionProvider",) if args.keep_cuda else ("CPUExecutionProvider",)
    report = lower_file(args.input, args.output, providers)
    print(f"{args.output}: {len(report)} ResizeGrad node(s) rewritten")
    for line in report:
        print(f"  {line}")
    return 0


def add_commands(sub) -> None:
    from dml_desc.conventions import FORMATS
    b = sub.add_parser("build", help="write an ONNX model with one ResizeGrad (or Resize) node")
    b.add_argument("file", metavar="FILE.json")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--from", dest="src", choices=FORMATS, help="input format (guessed when omitted)")
    b.add_argument("--lowered", action="store_true", help="write the standard-op form directly")
    b.add_argument("--forward", action="store_true", help="build the forward Resize instead")
    b.add_argument("--dtype", choices=("f32", "f16", "f64"), default="f32")
    b.set_defaults(func=cmd_build)
    lo = sub.add_parser("lower", help="rewrite every com.microsoft ResizeGrad node into standard ops")
    lo.add_argument("input", metavar="IN.onnx")
    lo.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    lo.add_argument("--keep-cuda", action="store_true",
                    help="keep nodes the CUDA kernel supports (linear, 4-D, half_pixel/align_corners)")
    lo.set_defaults(func=cmd_lower)

