"""The `dml-desc` command: convert, build, lower, conformance."""
from __future__ import annotations

import argparse
import json
import sys

from .errors import DescError

FORMAT_HELP = """\
formats (all JSON):
  dml     a DirectML descriptor keyed by directml.h field names, with "Operator":
          {"Operator": "DML_OPERATOR_RESAMPLE_GRAD", "InputGradientTensor": {"DataType": "FLOAT32",
           "Sizes": [1,1,1,3]}, "OutputGradientTensor": {...}, "InterpolationMode": "NEAREST_NEIGHBOR",
           "Scales": [...], "InputPixelOffsets": [...], "OutputPixelOffsets": [...]}
          Operators: RESAMPLE1/2/3, RESAMPLE_GRAD, RESAMPLE_GRAD1. DimensionCount and
          TotalTensorSizeInBytes may be omitted.
  onednn  a oneDNN Graph JSON document with one Interpolate or InterpolateBackward op
          (attrs mode, coordinate_transformation_mode, sizes | scales, data_format NCX | NXC).
  onnx    {"op_type": "Resize" | "ResizeGrad", "opset": 10..21, "input_shape": [...],
           "attributes": {...}, "roi": [...], "scales": [...], "sizes": [...]}
  torch   F.interpolate arguments: {"input_shape": [N,C,...], "mode": "bilinear", "size": [...] |
           "scale_factor": [...], "align_corners": false, "recompute_scale_factor": null, "antialias": false}
  tf      TF v1 resize (NHWC): {"input_shape": [N,H,W,C], "size": [h,w], "method": "bilinear" |
           "nearest" | "bicubic", "align_corners": false, "half_pixel_centers": true}
ConvTransposeBackwardData: a oneDNN Graph ConvTransposeBackwardData op, a DML_OPERATOR_CONVOLUTION
(Direction FORWARD, CROSS_CORRELATION: the data gradient is a forward convolution) or
{"op_type": "Conv", "input_shape": [...], "weights_shape": [...], "attributes": {...}} (onnx).
A conversion is exact or refused (exit 2, with the reason). Notes about shape-dependent
equivalence go to stderr.
"""


def _read_json(path: str):
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as e:
        raise DescError("FILE", path, f"cannot be read ({e.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DescError("FILE", path, f"is not valid JSON ({e})") from None


def cmd_convert(args) -> int:
    options = {}
    if args.to == "dml":
        options = {k: v for k, v in (("operator", args.operator), ("offset_reading", args.offset_reading)) if v}
    if args.to == "onednn" and args.data_format:
        options["data_format"] = args.data_format
    if args.to == "onnx" and args.opset:
        options["opset"] = args.opset
    load_opts = {"offset_reading": args.offset_reading} if args.src == "dml" and args.offset_reading else {}
    from . import conventions
    from .conventions import deconv
    obj = _read_json(args.file)
    if deconv.is_deconv(args.src, obj):
        spec, layout, notes = deconv.load(args.src, obj)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print(json.dumps(deconv.dump(args.to, spec, layout, **options), indent=2))
        return 0
    res, backward = conventions.load(args.src, obj, **load_opts)
    out, notes = conventions.dump(args.to, res, backward, **options)
    for note in tuple(res.notes) + tuple(notes):
        print(f"note: {note}", file=sys.stderr)
    print(json.dumps(out, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .conventions import FORMATS
    p = argparse.ArgumentParser(prog="dml-desc", description="Resampling-gradient descriptors across "
                                "DirectML, oneDNN, ONNX/onnxruntime, PyTorch and TensorFlow.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert a descriptor between conventions", epilog=FORMAT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--from", dest="src", required=True, choices=FORMATS)
    c.add_argument("--to", required=True, choices=FORMATS)
    c.add_argument("file", metavar="FILE|-")
    c.add_argument("--operator", help="dml: the DML_OPERATOR_* to write (default RESAMPLE_GRAD, or GRAD1 "
                   "when a rounding direction is needed)")
    c.add_argument("--offset-reading", choices=("forward", "swapped"),
                   help="dml: how a grad descriptor's offsets are read (default forward; see README)")
    c.add_argument("--data-format", choices=("NCX", "NXC"), help="onednn: layout to write")
    c.add_argument("--opset", type=int, help="onnx: opset to write (default 19)")
    c.set_defaults(func=cmd_convert)
    _add_more(sub)
    return p


def _add_more(sub) -> None:
    """Subcommands that live in the other packages (registered lazily so imports stay light)."""
    try:
        from onnx_ops.cli import add_commands
    except ImportError:
        return
    add_commands(sub)
    try:
        from conformance.cli import add_command
    except ImportError:
        return
    add_command(sub)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DescError as e:
        print(f"dml-desc: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
