"""The `dml-desc` command: convert, example, run, explain, build, lower, conformance.

Start-up stays light: `dml-desc convert` imports neither onnxruntime nor torch.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Sequence

from . import __version__
from .boundary import guarded
from .errors import DescError, did_you_mean, require

if TYPE_CHECKING:
    from .canonical import Resampling

DML_OPERATORS = ("RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")

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


def examples_dir() -> Path:
    """The example JSON files: dml_desc/examples in an installed wheel, examples/ in a source checkout."""
    here = Path(__file__).resolve().parent
    return next((d for d in (here / "examples", here.parent / "examples") if d.is_dir()), here / "examples")


def cmd_example(args: argparse.Namespace) -> int:
    """List the example files, or print one (by file name, with or without .json)."""
    files = sorted(examples_dir().glob("*.json"))
    if not args.name:
        for f in files:
            print(f"{f.stem:28s} {f}")
        return 0
    match = [f for f in files if f.stem == args.name.removesuffix(".json")]
    require(bool(match), "NAME", args.name, f"is no example{did_you_mean(args.name, [f.stem for f in files])}; "
            f"the examples are {[f.stem for f in files]}")
    sys.stdout.write(match[0].read_text())
    return 0


def _dml_operator(name: str) -> str:
    """--operator: RESAMPLE_GRAD1 or DML_OPERATOR_RESAMPLE_GRAD1 (any case) -> DML_OPERATOR_RESAMPLE_GRAD1."""
    short = name.upper().removeprefix("DML_OPERATOR_") if name.isascii() else name     # no Unicode folding
    if short not in DML_OPERATORS:
        raise argparse.ArgumentTypeError(f"{name!r} is not one of {', '.join(DML_OPERATORS)}"
                                         f"{did_you_mean(short, DML_OPERATORS)}")
    return "DML_OPERATOR_" + short


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line, `dml-desc: error: ...`, naming the closest valid value or option
    (argparse's own error prints its whole usage block first, which buries the message). --help is unchanged."""

    def error(self, message: str) -> NoReturn:
        """Print one line under the program's name and exit 2."""
        self.exit(2, f"{self.prog.split()[0]}: error: {_with_closest(message, self)} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]  # argparse's overloads for a Namespace subclass: not used here
            self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """As argparse's, but an unknown option is reported by the subcommand it was given to."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            _subcommand_parser(self, ns).error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def _subcommand_parser(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand `ns` ran (the top-level parser when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name: str | None = getattr(ns, action.dest, None)
            parsers: dict[str, argparse.ArgumentParser] = action.choices
            return parsers.get(name, parser) if name is not None else parser
    return parser


def _with_closest(message: str, parser: argparse.ArgumentParser) -> str:
    """argparse's message plus the valid value or option closest to what was typed."""
    import re
    choice = re.search(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$", message)
    if choice:
        valid = [v.strip().strip("'\"") for v in choice.group(2).split(",")]
        return message + did_you_mean(choice.group(1), valid)
    if message.startswith("unrecognized arguments: "):
        options = [o for a in parser._actions for o in a.option_strings]
        hints = [did_you_mean(word.split("=")[0], options) for word in message.split(": ", 1)[1].split()
                 if word.startswith("-")]
        return message + "".join(h for h in hints if h)
    return message


# The channel axis of each format's tensors: tf is channels-last, oneDNN says so in data_format.
CHANNELS_LAST = {"NXC", "NHWC", "NWC", "NDHWC"}
LAYOUTS = ("NCX", "NXC", "NCHW", "NHWC")


def source_layout(fmt: str, obj: Any) -> str:
    """'NXC' when a description's tensors are channels-last (tf; oneDNN with data_format NXC, its default),
    else 'NCX' (DirectML, ONNX, torch)."""
    if fmt == "tf":
        return "NXC"
    if fmt == "onednn":
        from .conventions.onednn import find_op
        attr = find_op(obj).get("attrs", {}).get("data_format", "NXC")
        value = attr.get("value", "NXC") if isinstance(attr, dict) else attr
        return "NXC" if value in CHANNELS_LAST else "NCX"
    return "NCX"


def relayout(res: Resampling, src: str, dst: str) -> Resampling:
    """`res` with its channel axis moved from layout `src` to `dst` ('NCX'/'NCHW' or 'NXC'/'NHWC')."""
    first, last = src not in CHANNELS_LAST, dst not in CHANNELS_LAST
    axes = list(res.axes)
    if first and not last:
        axes = axes[:1] + axes[2:] + axes[1:2]
    elif last and not first:
        axes = axes[:1] + axes[-1:] + axes[1:-1]
    return res.with_(axes=tuple(axes))


def cmd_convert(args: argparse.Namespace) -> int:
    """Convert one description (a file or stdin) from --from to --to; JSON on stdout, notes on stderr."""
    options: dict[str, Any] = {}
    if args.to == "dml":
        options = {k: v for k, v in (("operator", args.operator), ("offset_reading", args.offset_reading)) if v}
    if args.to == "onednn" and args.data_format:
        options["data_format"] = args.data_format
    if args.to == "onnx" and args.opset:
        options["opset"] = args.opset
    from . import conventions
    from .conventions import deconv
    from .conventions.onnx_semantics import resolve_semantics
    from .conventions.registry import FORMATS
    obj = conventions.read_json(args.file)
    if args.src is None:                    # as `run` and `explain` do: the format its keys give
        args.src = conventions.guess_format(obj)
        require(args.src is not None, "--from", None, f"is needed: the keys do not tell the format (one of "
                f"{', '.join(FORMATS)})")
    load_opts = {"offset_reading": args.offset_reading} if args.src == "dml" and args.offset_reading else {}
    if deconv.is_deconv(args.src, obj):
        reading = deconv.read(args.src, obj)
        for note in reading.notes:
            print(f"note: {note}", file=sys.stderr)
        written = deconv.write(args.to, reading, **{k: v for k, v in options.items() if k == "data_format"})
        print(json.dumps(written.obj, indent=2))
        return 0
    if args.to == "onnx":                   # no --semantics: the installed onnxruntime's (the CLI's default)
        options["semantics"] = resolve_semantics(args.semantics)
    res, backward = conventions.load_description(args.src, obj, semantics=args.semantics, **load_opts)
    if args.layout:
        src_layout = source_layout(args.src, obj)
        res = relayout(res, src_layout, args.layout)
        print(f"note: the tensors are read {src_layout} and written {args.layout} (--layout)", file=sys.stderr)
    if args.tolerance:
        options["tolerance"] = args.tolerance
    try:
        out, notes = conventions.dump(args.to, res, backward, **options)
    except DescError as e:
        raise _layout_hint(e, args, obj) from None
    if "onnx" in (args.src, args.to):
        from .conventions.onnx_semantics import describe_semantics
        notes = (f"ONNX semantics {describe_semantics(args.semantics)}",) + tuple(notes)
    for note in tuple(res.notes) + tuple(notes):
        print(f"note: {note}", file=sys.stderr)
    print(json.dumps(out, indent=2))
    return 0


def _layout_hint(e: DescError, args: argparse.Namespace, obj: Any) -> DescError:
    """A refusal of tf or torch for a source of the other layout, with the option that moves the channel axis."""
    want = {"tf": "NXC", "torch": "NCX"}.get(args.to)
    if args.layout or want is None or source_layout(args.src, obj) == want:
        return e
    option = "--layout NHWC" if want == "NXC" else "--layout NCHW"
    return type(e)(e.field, e.value, f"{e.rule}. {option} moves the channel axis")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `dml-desc` with every subcommand."""
    from .conventions.registry import FORMATS
    p = OneLineParser(prog="dml-desc", description="Resampling-gradient descriptors across "
                                "DirectML, oneDNN, ONNX/onnxruntime, PyTorch and TensorFlow.")
    p.add_argument("--version", action="version", version=f"dml-desc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert a descriptor between conventions", epilog=FORMAT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--from", dest="src", choices=FORMATS, help="the file's format (default: guessed from its keys)")
    c.add_argument("--to", required=True, choices=FORMATS)
    c.add_argument("file", metavar="FILE|-")
    c.add_argument("--tolerance", type=float, default=0.0, metavar="T",
                   help="accept the closest spelling whose weights differ by at most T (max |dw| per axis), with "
                   "a note giving the bound (onednn, onnx, torch, tf); default 0: exact only. A refusal names the "
                   "closest spelling and the T that would accept it")
    c.add_argument("--operator", type=_dml_operator, metavar="OP",
                   help=f"dml: the operator to write, one of {', '.join(DML_OPERATORS)} (the DML_OPERATOR_ "
                   "prefix is optional). Default: RESAMPLE_GRAD for a gradient, RESAMPLE1 for a forward, widened "
                   "to RESAMPLE_GRAD1 / RESAMPLE2 when only a rounding direction can state the map. An operator "
                   "that cannot state the map exactly is refused (exit 2) with the reason")
    c.add_argument("--offset-reading", choices=("forward", "swapped"),
                   help="dml: how a grad descriptor's offsets are read (default forward; see docs/semantics.md, "
                   "decision 1)")
    c.add_argument("--layout", choices=LAYOUTS, help="the tensor layout to write: moves the channel axis when it "
                   "differs from the source's (tf is NHWC; oneDNN per its data_format; dml, onnx and torch NCHW). "
                   "--to tf from an NCHW source needs --layout NHWC, --to torch from tf --layout NCHW")
    c.add_argument("--data-format", choices=("NCX", "NXC"), help="onednn: layout to write")
    c.add_argument("--opset", type=int, help="onnx: opset to write (default 19)")
    c.add_argument("--semantics", choices=("ort-1.19", "ort-1.27", "onnx-spec"),
                   help="the ONNX Resize semantics (nearest tie rule): ort-1.19 (onnxruntime <= 1.26), ort-1.27 "
                   "(>= 1.27) or "
                   "onnx-spec (exact arithmetic); default: the installed onnxruntime's")
    c.set_defaults(func=cmd_convert)
    e = sub.add_parser("example", help="list the example JSON files (one per format), or print one")
    e.add_argument("name", nargs="?", metavar="NAME", help="e.g. dml_resample_grad; omit to list them")
    e.set_defaults(func=cmd_example)
    _add_more(sub)
    return p


# The subcommands the upper packages add, as the `dml_desc.commands` entry points in pyproject.toml name them.
# dml_desc imports nothing above it: these are looked up by name, from the installed entry points, or from
# this same list where the installed metadata predates the group (an older editable install).
COMMAND_ENTRY_POINTS = ("conformance.run_command:add_command", "onnx_ops.cli:add_commands",
                        "conformance.cli:add_command")


def _add_more(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    """Subcommands that live in the other packages (registered lazily so imports stay light)."""
    from .explain import add_command as add_explain
    add_explain(sub)
    import importlib
    from importlib.metadata import entry_points
    targets = [ep.value for ep in entry_points(group="dml_desc.commands")] or list(COMMAND_ENTRY_POINTS)
    for target in targets:
        module, _, attr = target.partition(":")
        try:
            register = getattr(importlib.import_module(module), attr)
        except ImportError:
            continue                 # a package that is not installed adds no commands
        register(sub)


def main(argv: list[str] | None = None) -> int:
    """The `dml-desc` entry point: parse `argv` (default sys.argv[1:]), run the subcommand, return the exit
    code (0 ok, 1 a conformance check failed, 2 an error, printed as one line on stderr).
    """
    return guarded(lambda: _dispatch(build_parser().parse_args(argv)))


def _dispatch(args: argparse.Namespace) -> int:
    code: int = args.func(args)         # the subcommand's cmd_* function (set_defaults)
    return code


if __name__ == "__main__":
    sys.exit(main())
