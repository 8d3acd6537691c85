"""`dml-desc explain FILE`: where each output samples the input, axis by axis, and the taps that result.

For a description in any convention (the formats of `dml-desc convert --help`) it prints, for every resized
axis, the continuous input coordinate x of every output index o (x = (o - out_offset) / scale - in_offset,
rounded as the runtime computes it) and the taps: the input indices and weights of `weights.forward_taps`,
the one table the reference, the lowering and the suite share (nothing is recomputed here). With
`--svg PATH` it draws the sampling grid as plain SVG; with `--vs OTHER` it shows a second map for the same
sizes beside it: an ONNX coordinate_transformation_mode (half_pixel, align_corners, ...) or another
description file.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
import math
from fractions import Fraction
from pathlib import Path
from typing import SupportsFloat, TypeVar
from xml.sax.saxutils import escape

import numpy as np

from .canonical import AxisMap, Resampling, Scale
from .errors import DescError, did_you_mean, printable, require
from .weights import coordinates, forward_taps

Parser = TypeVar("Parser", bound=argparse.ArgumentParser)    # the parser class of `dml-desc`'s subcommands

# The ONNX coordinate_transformation_modes `--vs` takes by name (tf_crop_and_resize needs a roi: use a file).
VS_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
            "tf_half_pixel_for_nn")


@dataclass(frozen=True)
class AxisPicture:
    """One resized axis: its map, the coordinate of every output, and the forward taps (index, weight)."""
    axis: int
    map: AxisMap
    x: np.ndarray
    index: np.ndarray
    weight: np.ndarray


def axis_pictures(res: Resampling) -> list[AxisPicture]:
    """An AxisPicture for every axis of `res` whose taps are not the identity (copied axes have nothing to show;
    an axis whose offsets cancel only after rounding, such as a DML size-1 axis, is copied too)."""
    pictures = []
    for i in res.resized_axes:
        ax = res.axes[i]
        taps = forward_taps(ax, res)
        if not _copies(taps.index, taps.weight, ax):
            pictures.append(AxisPicture(i, ax, coordinates(ax), taps.index, taps.weight))
    return pictures


def _copies(index: np.ndarray, weight: np.ndarray, ax: AxisMap) -> bool:
    """True when output o reads input o alone with weight 1, for every o."""
    if ax.in_size != ax.out_size:
        return False
    w = np.where(index == np.arange(ax.out_size)[:, None], weight, 0.0).sum(axis=1)
    return bool(np.all(w == 1.0) and np.count_nonzero(weight) == ax.out_size)


def _num(v: SupportsFloat) -> str:
    """A short, exact-enough number: 6 significant digits, no trailing zeros, -0 as 0."""
    text = f"{float(v):.6g}"
    return "0" if text == "-0" else text


def _scale(s: Scale) -> str:
    """A scale as written: an exact Fraction as (p/q), `inf`, or a float's short form."""
    if isinstance(s, Fraction) and s.denominator != 1:
        return f"({s.numerator}/{s.denominator})"
    return _num(s)


def _offset(name: str, v: float) -> str:
    """'o', 'o + 0.5' or 'o - 0.5': a variable shifted by -v."""
    return name if v == 0 else f"{name} {'+' if v < 0 else '-'} {_num(abs(v))}"


def coordinate_rule(ax: AxisMap) -> str:
    """The axis's map as a formula: x = (o - out_offset) / scale - in_offset, signs folded; an infinite scale
    (align_corners with one output) reads one place for every o: x = -in_offset, never 'o / inf'."""
    if ax.scale == math.inf:
        return _num(-ax.in_offset + 0.0)
    inner = _offset("o", ax.out_offset)
    inner = f"({inner})" if inner != "o" else inner
    return _offset(f"{inner} / {_scale(ax.scale)}", ax.in_offset)


def taps_text(p: AxisPicture, o: int) -> str:
    """The nonzero taps of output `o` as 'i*w' terms, e.g. '0*0.75 + 1*0.25'."""
    terms = [f"{int(i)}*{_num(w)}" for i, w in zip(p.index[o], p.weight[o]) if w != 0]
    return " + ".join(terms) if terms else "0 (outside: the constant)"


def describe(res: Resampling, name: str, max_rows: int = 64) -> str:
    """The text `dml-desc explain` prints for one map."""
    lines = [f"{name}: {res.mode.value}, input {list(res.in_shape)} -> output {list(res.out_shape)}"]
    pictures = axis_pictures(res)
    copied = sorted(set(range(len(res.axes))) - {p.axis for p in pictures})
    if copied:
        lines.append(f"axes {copied}: copied unchanged")
    for p in pictures:
        ax = p.map
        lines.append(f"axis {p.axis}: {ax.in_size} -> {ax.out_size}, x = {coordinate_rule(ax)}"
                     + (f", rounding {ax.rounding.value}" if res.mode.value == "nearest" else ""))
        lines.append("   o  x            taps (input index*weight)")
        for o in range(min(ax.out_size, max_rows)):
            lines.append(f"{o:4d}  {_num(p.x[o]):<12s} {taps_text(p, o)}")
        if ax.out_size > max_rows:
            lines.append(f"  ... {ax.out_size - max_rows} more outputs (--max-rows)")
    return "\n".join(lines)


def vs_map(res: Resampling, other: str, semantics: str | None = None) -> tuple[Resampling, str]:
    """(Resampling, label) of `other` for `res`'s sizes: an ONNX coordinate_transformation_mode by name, or
    another description file (which must have the same input and output shapes)."""
    from . import conventions
    from .conventions.onnx_semantics import resolve_semantics
    if other in VS_MODES:
        resize = {"op_type": "Resize", "opset": conventions.onnx.DEFAULT_OPSET, "input_shape": list(res.in_shape),
               "sizes": list(res.out_shape),
               "attributes": {"mode": res.mode.value, "coordinate_transformation_mode": other}}
        semantics = resolve_semantics(semantics)     # no --semantics: the installed onnxruntime's
        return conventions.load("onnx", resize, semantics=semantics)[0], f"onnx {other}"
    if not Path(other).exists():
        raise DescError("--vs", other, f"is neither a file nor one of {', '.join(VS_MODES)}"
                        f"{did_you_mean(other, VS_MODES)}")
    fmt, obj = conventions.read_description(other)
    res2 = conventions.load_description(fmt, obj, semantics)[0]      # the caller's semantics, as for res
    require(res2.in_shape == res.in_shape and res2.out_shape == res.out_shape, "--vs", other,
            f"maps {list(res2.in_shape)} -> {list(res2.out_shape)}; the file maps {list(res.in_shape)} -> "
            f"{list(res.out_shape)}: compare maps of the same sizes")
    return res2, f"{fmt} {Path(other).name}"


# ---- SVG ----

UNIT_MAX, WIDTH, PANEL_H = 160.0, 960.0, 230.0
SVG_MAX_SAMPLES = 256      # per axis, input or output: beyond this the picture is a smear (the text has no limit)
COLORS = ("#1f77b4", "#d62728")


def _xml(text: str) -> str:
    """`text` as XML character data: &, <, > escaped, and every character XML 1.0 cannot hold (control
    characters, lone surrogates from an undecodable file name, U+FFFE/U+FFFF) and every one a terminal would act
    on (errors.printable) shown as a \\xNN / \\uNNNN escape, so the file parses whatever the names hold."""
    import re
    shown = re.sub("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]",
                   lambda m: f"\\u{ord(m.group()):04x}", printable(text))
    return escape(shown)


@dataclass(frozen=True)
class _Scale:
    """Input coordinate x -> SVG pixels, shared by every panel of one axis so maps line up."""
    lo: float
    unit: float

    def __call__(self, x: float) -> float:
        return round(60 + (x - self.lo) * self.unit, 2)


def _axis_scale(pictures: list[AxisPicture]) -> _Scale:
    """One x-range for every map of an axis: all input cells and every sample point fit."""
    lo = min([-0.5] + [float(np.min(p.x)) - 0.5 for p in pictures])
    hi = max([p.map.in_size - 0.5 for p in pictures] + [float(np.max(p.x)) + 0.5 for p in pictures])
    return _Scale(lo, min(UNIT_MAX, (WIDTH - 90) / (hi - lo)))


def _svg_panel(p: AxisPicture, label: str, top: float, color: str, sx: _Scale) -> list[str]:
    """One axis of one map: input cells on top, where each output samples them (dots on the x line, with a
    line to every tap, thicker for a larger weight), and the output cells below, each joined to its dot."""
    ax = p.map
    y_in, y_pt, y_out = top + 45, top + 110, top + 190
    out = [f'<text x="10" y="{top + 18}" font-size="14" font-weight="bold">{_xml(label)}</text>',
           f'<text x="10" y="{y_in + 4}" font-size="11">input</text>',
           f'<text x="10" y="{y_pt + 4}" font-size="11">x</text>',
           f'<text x="10" y="{y_out + 4}" font-size="11">output</text>',
           f'<line x1="{sx(sx.lo)}" y1="{y_pt}" x2="{WIDTH - 20}" y2="{y_pt}" stroke="#bbb"/>']
    for i in range(ax.in_size):
        out.append(f'<rect x="{sx(i - 0.5)}" y="{y_in - 14}" width="{round(sx.unit, 2)}" height="28" '
                   f'fill="#f2f2f2" stroke="#555"/>')
        out.append(f'<line x1="{sx(i)}" y1="{y_pt - 4}" x2="{sx(i)}" y2="{y_pt + 4}" stroke="#888"/>')
        if ax.in_size <= 40:
            out.append(f'<text x="{sx(i)}" y="{y_in + 5}" font-size="11" text-anchor="middle">{i}</text>')
    w_out = ax.in_size * sx.unit / ax.out_size
    label_weights = w_out >= 36 and ax.out_size <= 32
    for o in range(ax.out_size):
        xo, cx = float(p.x[o]), round(sx(-0.5) + (o + 0.5) * w_out, 2)
        taps = [(int(i), float(w)) for i, w in zip(p.index[o], p.weight[o]) if w != 0]
        out.append(f'<rect x="{round(cx - w_out / 2, 2)}" y="{y_out - 12}" width="{round(w_out, 2)}" height="24" '
                   f'fill="white" stroke="{color}"/>')
        out.append(f'<line x1="{cx}" y1="{y_out - 12}" x2="{sx(xo)}" y2="{y_pt}" stroke="{color}" '
                   f'stroke-dasharray="3,2"/>')
        for i, w in taps:
            out.append(f'<line x1="{sx(xo)}" y1="{y_pt}" x2="{sx(i)}" y2="{y_in + 14}" stroke="{color}" '
                       f'stroke-width="{round(0.5 + 2.5 * abs(w), 2)}" '
                       f'stroke-opacity="{round(0.3 + 0.7 * abs(w), 3)}"/>')
        out.append(f'<circle cx="{sx(xo)}" cy="{y_pt}" r="4" fill="{color}"><title>output {o}: x = '
                   f'{_xml(_num(xo))}, taps {_xml(taps_text(p, o))}</title></circle>')
        if label_weights:
            for k, (i, w) in enumerate(taps[:4]):
                out.append(f'<text x="{cx}" y="{y_pt + 16 + 11 * k}" font-size="9" text-anchor="middle" '
                           f'fill="{color}">{i}: {w:.3g}</text>')
        if ax.out_size <= 40:
            out.append(f'<text x="{cx}" y="{y_out + 4}" font-size="10" text-anchor="middle" fill="{color}">{o}</text>')
    return out


def svg(maps: list[tuple[Resampling, str]], title: str) -> str:
    """The sampling grid of every resized axis of each (Resampling, label) in `maps`, one panel per axis and
    map, the maps of one axis one above the other on one x scale, as SVG text."""
    panels = [(p, f"{label}: axis {p.axis}, {p.map.in_size} -> {p.map.out_size}, x = {coordinate_rule(p.map)}",
               COLORS[m % len(COLORS)]) for m, (res, label) in enumerate(maps) for p in axis_pictures(res)]
    panels.sort(key=lambda panel: panel[0].axis)        # stable: per axis, the maps in the order given
    for p, _, _ in panels:
        require(max(p.map.in_size, p.map.out_size) <= SVG_MAX_SAMPLES, "--svg", f"axis {p.axis}: "
                f"{p.map.in_size} -> {p.map.out_size}", f"draws axes of at most {SVG_MAX_SAMPLES} samples (the "
                "text output shows any size; --max-rows cuts it)")
    scales = {a: _axis_scale([p for p, _, _ in panels if p.axis == a]) for a in {p.axis for p, _, _ in panels}}
    height = 40 + PANEL_H * max(1, len(panels))
    body = [f'<text x="10" y="24" font-size="16">{_xml(title)}</text>']
    for k, (p, label, color) in enumerate(panels):
        body += _svg_panel(p, label, 40 + PANEL_H * k, color, scales[p.axis])
    if not panels:
        body.append('<text x="10" y="60" font-size="13">every axis is copied unchanged</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{int(WIDTH)}" height="{int(height)}" '
            f'viewBox="0 0 {int(WIDTH)} {int(height)}" font-family="sans-serif">\n'
            f'<title>{_xml(title)}</title>\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")


# ---- the command ----

def add_command(sub: argparse._SubParsersAction[Parser]) -> None:
    """Register `explain` on the `dml-desc` subcommand parser."""
    from .conventions.registry import FORMATS
    e = sub.add_parser("explain", help="print where each output samples the input and its taps; draw it as SVG",
                       description=__doc__.split("\n\n", 1)[1])
    e.add_argument("file", metavar="FILE.json")
    e.add_argument("--from", dest="src", choices=FORMATS, help="the file's format (default: guessed from its keys)")
    e.add_argument("--svg", metavar="PATH", help="draw the sampling grid as SVG into PATH")
    e.add_argument("--vs", metavar="OTHER", help=f"compare with another map of the same sizes: one of "
                   f"{', '.join(VS_MODES)} (an ONNX Resize of this mode), or a description file")
    e.add_argument("--semantics", choices=("ort-1.19", "ort-1.27", "onnx-spec"),
                   help="ONNX maps: the nearest tie rule (default: the installed onnxruntime's)")
    e.add_argument("--max-rows", type=int, default=64, metavar="N", help="outputs printed per axis (default 64)")
    e.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    """`dml-desc explain`: print each axis's coordinates and taps (and the --vs map's), write --svg."""
    from . import conventions
    from .conventions import deconv
    require(args.max_rows >= 1, "--max-rows", args.max_rows, "must be at least 1")
    fmt, obj = conventions.read_description(args.file, args.src)
    require(not deconv.is_deconv(fmt, obj), "FILE", args.file, "is a ConvTransposeBackwardData: explain shows "
            "resampling maps (a deconvolution has no sampling coordinates)")
    options = {"semantics": args.semantics} if fmt == "onnx" else {}
    res = conventions.load_description(fmt, obj, **options)[0]
    maps = [(res, f"{fmt} {Path(args.file).name}")]
    if args.vs:
        maps.append(vs_map(res, args.vs, args.semantics))
    if args.svg:
        from .files import regular_target
        regular_target(args.svg, "--svg")         # a folder, device, FIFO or symlink: refused before any work
    require(not args.svg or args.svg.lower().endswith(".svg"), "--svg", args.svg, "must name an .svg file (the "
            "picture is SVG; a browser or an image viewer converts it)")
    drawing = svg(maps, "dml-desc explain " + " vs ".join(label for _, label in maps)) if args.svg else None
    print("\n\n".join(describe(r, label, args.max_rows) for r, label in maps), flush=True)
    if drawing is not None:
        from .files import write_atomic
        write_atomic(args.svg, drawing.encode("utf-8"), field="--svg")
        print(f"wrote {args.svg}", file=sys.stderr)
    return 0
