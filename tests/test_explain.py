"""`dml-desc explain`: exact coordinates and taps for documented cases, valid SVG, escaped names, one-line errors."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from dml_desc import conventions
from dml_desc.cli import main
from dml_desc.explain import axis_pictures, describe
from dml_desc.weights import forward_taps

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_directml_documented_example(capsys):
    """DirectML's documented example: width 2 -> 3 (x1.5), height 2 -> 1 (x0.5), half-pixel offsets, nearest
    rounding half down: outputs read inputs [0, 0, 1] along the width and [0] along the height."""
    code, out, _ = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad.json"))
    assert code == 0
    assert out.splitlines() == [
        "dml dml_resample_grad.json: nearest, input [1, 1, 2, 2] -> output [1, 1, 1, 3]",
        "axes [0, 1]: copied unchanged",
        "axis 2: 2 -> 1, x = (o + 0.5) / 0.5 - 0.5, rounding round_prefer_floor",
        "   o  x            taps (input index*weight)",
        "   0  0.5          0*1",
        "axis 3: 2 -> 3, x = (o + 0.5) / 1.5 - 0.5, rounding round_prefer_floor",
        "   o  x            taps (input index*weight)",
        "   0  -0.166667    0*1",
        "   1  0.5          0*1",
        "   2  1.16667      1*1",
    ]


def align_corners_2_to_5(tmp_path) -> Path:
    path = tmp_path / "ac.json"
    path.write_text(json.dumps({"input_shape": [1, 1, 2], "mode": "linear", "size": [5], "align_corners": True}))
    return path


def test_align_corners_2_to_5_vs_half_pixel(tmp_path, capsys):
    """align_corners 2 -> 5: x = o (in-1)/(out-1) = o/4; half_pixel: x = (o + 0.5) * 2/5 - 0.5, clamped taps at
    the edges (the formulas of docs/semantics.md, worked by hand)."""
    code, out, _ = run(capsys, "explain", str(align_corners_2_to_5(tmp_path)), "--vs", "half_pixel",
                       "--semantics", "onnx-spec")
    assert code == 0
    assert out.splitlines() == [
        "torch ac.json: linear, input [1, 1, 2] -> output [1, 1, 5]",
        "axes [0, 1]: copied unchanged",
        "axis 2: 2 -> 5, x = o / 4",
        "   o  x            taps (input index*weight)",
        "   0  0            0*1",
        "   1  0.25         0*0.75 + 1*0.25",
        "   2  0.5          0*0.5 + 1*0.5",
        "   3  0.75         0*0.25 + 1*0.75",
        "   4  1            1*1",
        "",
        "onnx half_pixel: linear, input [1, 1, 2] -> output [1, 1, 5]",
        "axes [0, 1]: copied unchanged",
        "axis 2: 2 -> 5, x = (o + 0.5) / (5/2) - 0.5",        # onnx-spec: the exact scale out/in
        "   o  x            taps (input index*weight)",
        "   0  -0.3         0*1",
        "   1  0.1          0*0.9 + 1*0.1",
        "   2  0.5          0*0.5 + 1*0.5",
        "   3  0.9          0*0.1 + 1*0.9",
        "   4  1.3          1*1",
    ]


def test_the_taps_are_the_shared_table():
    """explain shows weights.forward_taps itself (the table the reference and the lowering use), not a copy
    of the math."""
    res, _ = conventions.load("torch", json.loads((ROOT / "examples" / "torch_interpolate.json").read_text()))
    for p in axis_pictures(res):
        taps = forward_taps(res.axes[p.axis], res)
        assert p.index is taps.index and p.weight is taps.weight


def test_max_rows_cuts_long_axes():
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 100], "mode": "nearest", "size": [300]})
    text = describe(res, "x", max_rows=3)
    assert text.splitlines()[-1] == "  ... 297 more outputs (--max-rows)"
    assert len(text.splitlines()) == 8


def svg_root(path: Path):
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return root


def test_svg_is_valid_and_draws_every_output(tmp_path, capsys):
    out_svg = tmp_path / "grid.svg"
    code, _, err = run(capsys, "explain", str(align_corners_2_to_5(tmp_path)), "--vs", "half_pixel",
                       "--svg", str(out_svg))
    assert code == 0 and f"wrote {out_svg}" in err
    root = svg_root(out_svg)
    circles = root.findall(f"{SVG}circle")
    assert len(circles) == 10                       # 5 outputs, two maps
    assert {c.get("fill") for c in circles} == {"#1f77b4", "#d62728"}
    tips = [c.find(f"{SVG}title").text for c in circles]
    assert tips[1] == "output 1: x = 0.25, taps 0*0.75 + 1*0.25"
    assert tips[6] == "output 1: x = 0.1, taps 0*0.9 + 1*0.1"
    # the sample point of output o sits at x(o) on the input's scale: equal steps for align_corners
    cx = np.array([float(c.get("cx")) for c in circles[:5]])
    assert np.allclose(np.diff(cx), np.diff(cx)[0])
    assert not list(tmp_path.glob("*.dml-desc-tmp"))


def test_hostile_file_names_are_escaped(tmp_path, capsys):
    name = 'a<b>&"c\'<title><script>x.json'
    hostile = tmp_path / name
    shutil.copy(ROOT / "examples" / "dml_resample_grad.json", hostile)
    out_svg = tmp_path / "h.svg"
    assert run(capsys, "explain", str(hostile), "--svg", str(out_svg))[0] == 0
    root = svg_root(out_svg)
    assert root.find(f"{SVG}title").text == f"dml-desc explain dml {name}"
    assert root.find(f".//{SVG}script") is None


@pytest.mark.parametrize("argv, expected", [
    (["--vs", "half_pixle"], "--vs='half_pixle': is neither a file nor one of"),
    (["--vs", "half_pixle"], "half_pixel"),
    (["--max-rows", "0"], "--max-rows=0: must be at least 1"),
])
def test_bad_options_are_one_line(argv, expected, capsys):
    code, out, err = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad.json"), *argv)
    assert code == 2 and out == ""
    assert err.startswith("dml-desc: error: ") and len(err.splitlines()) == 1 and expected in err, err


def test_vs_file_of_other_sizes_is_refused(capsys):
    code, _, err = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad.json"), "--vs",
                       str(ROOT / "examples" / "torch_interpolate.json"))
    assert code == 2 and "compare maps of the same sizes" in err and len(err.splitlines()) == 1


def test_a_deconvolution_is_refused_with_the_reason(capsys):
    code, _, err = run(capsys, "explain", str(ROOT / "examples" / "onednn_deconv_bwd_d.json"))
    assert code == 2 and "ConvTransposeBackwardData" in err and len(err.splitlines()) == 1


def test_svg_into_a_folder_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad.json"), "--svg", str(tmp_path))
    assert code == 2 and "is a folder" in err


def test_the_docs_show_what_the_command_prints(tmp_path, capsys, monkeypatch):
    """docs/explain.md's printed block is the command's output, and its picture is what the command draws now."""
    doc = (ROOT / "docs" / "explain.md").read_text(encoding="utf-8")
    shown = doc.split("```text\n", 1)[1].split("```", 1)[0]
    code, out, _ = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad.json"))
    assert code == 0 and out == shown
    (tmp_path / "ac.json").write_text(json.dumps({"input_shape": [1, 1, 2], "mode": "linear", "size": [5],
                                                  "align_corners": True}))
    drawn = tmp_path / "explain-align-corners.svg"
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "explain", "ac.json", "--vs", "half_pixel", "--svg", drawn.name)[0] == 0
    want = (ROOT / "docs" / "explain-align-corners.svg").read_text(encoding="utf-8")
    assert drawn.read_text(encoding="utf-8") == want


def test_axes_whose_taps_copy_are_named_once(capsys):
    """RESAMPLE_GRAD1's size-1 N and C axes carry offsets (x = 0.5) but read input 0 alone: copied, not drawn."""
    code, out, _ = run(capsys, "explain", str(ROOT / "examples" / "dml_resample_grad1.json"), "--max-rows", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "axes [0, 1]: copied unchanged"
    assert [line for line in lines if line.startswith("axis ")] == [
        "axis 2: 2 -> 4, x = o / 2 + 0.5, rounding floor", "axis 3: 3 -> 6, x = o / 2 + 0.5, rounding floor"]


def test_vs_another_file_of_the_same_sizes(capsys, tmp_path):
    """torch's bilinear example and onnxruntime's ResizeGrad example are the same map: the same taps twice."""
    out_svg = tmp_path / "same.svg"
    code, out, _ = run(capsys, "explain", str(ROOT / "examples" / "torch_interpolate.json"), "--vs",
                       str(ROOT / "examples" / "onnx_resizegrad.json"), "--svg", str(out_svg))
    assert code == 0
    first, second = out.split("\n\n")
    assert second.startswith("onnx onnx_resizegrad.json: linear")
    assert first.splitlines()[1:] == second.splitlines()[1:]
    assert len(svg_root(out_svg).findall(f"{SVG}circle")) == 2 * (8 + 12)


def test_svg_refuses_axes_too_long_to_draw(capsys, tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"input_shape": [1, 1, 100], "mode": "nearest", "size": [300]}))
    code, out, err = run(capsys, "explain", str(path), "--svg", str(tmp_path / "long.svg"), "--max-rows", "1")
    assert code == 2 and out == "" and "--svg='axis 2: 100 -> 300': draws axes of at most 256 samples" in err
    assert not (tmp_path / "long.svg").exists() and not list(tmp_path.glob("*.dml-desc-tmp"))


def test_vs_a_file_reads_it_under_the_given_semantics(capsys, tmp_path):
    """nearest asymmetric round_prefer_ceil 7 -> 2 has a tie only ort-1.19 breaks the other way: `--vs` the same
    file under each `--semantics` prints the same taps twice (the file is not read under the installed one's)."""
    path = tmp_path / "tie.json"
    path.write_text(json.dumps({"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 1, 7], "sizes": [1, 1, 1, 2],
                                "attributes": {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                               "nearest_mode": "round_prefer_ceil"}}))
    blocks = {}
    for semantics in conventions.onnx.SEMANTICS:
        code, out, _ = run(capsys, "explain", str(path), "--vs", str(path), "--semantics", semantics)
        assert code == 0
        first, second = out.split("\n\n")
        assert first.splitlines()[1:] == second.splitlines()[1:], semantics
        blocks[semantics] = first.splitlines()[1:]
    assert blocks["ort-1.19"] != blocks["ort-1.27"]       # the semantics matter here (either may be installed)
