"""ConvTransposeBackwardData: oneDNN JSON, DML convolution descriptor, ONNX Conv, reference, bridge."""
import copy
import json
import subprocess
import sys

import numpy as np
import pytest

from conformance.catalog import REFERENCE_DIR
from conformance.conv_reference import conv_data_grad
from conformance.reference import resize_grad
from dml_desc import ConversionError, DescError, dmljson
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions import deconv
from dml_desc.conventions.deconv import ConvSpec
from dml_desc.conventions.onnx import OnnxResize, to_canonical
from onnx_ops.bridge import deconv_form
from onnx_ops.conv import build_conv_data_grad
from onnx_ops.run import run_model

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

JSON_FILE = REFERENCE_DIR / "onednn-graph-json" / "deconv_bwd_d.json"
DOC = json.loads(JSON_FILE.read_text())


def test_the_onednn_json_loads_builds_and_runs():
    reading = deconv.read("onednn", DOC)
    spec, fmt, wfmt = reading.canonical, reading.layout["data_format"], reading.layout["weights_format"]
    assert (reading.backward, reading.layout, reading.notes) == (True, {"data_format": "NCX", "weights_format": "IOX",
                                                                        "dtype": "f32"}, ())
    assert spec.diff_src_shape == (1, 32, 28, 28) and spec.weights_shape == (32, 128, 3, 3)
    model = build_conv_data_grad(spec, fmt, wfmt)
    assert [i.name for i in model.graph.input] == ["diff_dst", "weights"]
    assert [o.name for o in model.graph.output] == ["diff_src"]
    rng = np.random.default_rng(0)
    dd = rng.standard_normal(spec.diff_dst_shape).astype(np.float32)
    w = rng.standard_normal(spec.weights_shape).astype(np.float32)
    got = run_model(model, {"diff_dst": dd, "weights": w})[0]
    np.testing.assert_allclose(got, conv_data_grad(dd.astype(np.float64), w.astype(np.float64), spec),
                               rtol=1e-4, atol=1e-4)


def test_reference_matches_torch_autograd_of_conv_transpose():
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
    spec = ConvSpec(2, 6, 4, (7, 5), (3, 2), (2, 1), (1, 2), (1, 0), (0, 1), 2)
    rng = np.random.default_rng(1)
    dd, w = rng.standard_normal(spec.diff_dst_shape), rng.standard_normal(spec.weights_shape)
    x = torch.zeros(spec.diff_src_shape, dtype=torch.float64, requires_grad=True)
    full = torch.nn.functional.conv_transpose2d(x, torch.tensor(w), stride=spec.strides, dilation=spec.dilations,
                                                groups=spec.groups)
    crop = []
    for i in (1, 0):
        crop += [-spec.pads_begin[i], -(full.shape[2 + i] - spec.pads_begin[i] - spec.dst_spatial[i])]
    (torch.nn.functional.pad(full, crop) * torch.tensor(dd)).sum().backward()
    np.testing.assert_allclose(conv_data_grad(dd, w, spec), x.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt,wfmt", [("NCX", "IOX"), ("NXC", "XOI"), ("NXC", "IOX"), ("NCX", "XOI")])
def test_layouts_round_trip_and_run(fmt, wfmt):
    spec = ConvSpec(1, 4, 6, (5, 6, 4), (2, 3, 2), (2, 1, 2), (1, 2, 1), (0, 1, 1), (1, 2, 0), 2)
    reading = deconv.read("onednn", deconv.to_onednn(spec, fmt, wfmt))
    back, fmt2, wfmt2 = reading.canonical, reading.layout["data_format"], reading.layout["weights_format"]
    assert (back.diff_src_shape, fmt2, wfmt2) == (spec.diff_src_shape, fmt, wfmt)
    assert deconv.from_dml(dmljson.from_json(dmljson.to_json(deconv.to_dml(back)))) == back
    assert deconv.from_onnx(deconv.to_onnx_attrs(back), back.diff_dst_shape, back.weights_shape) == back
    rng = np.random.default_rng(2)
    dd, w = rng.standard_normal(spec.diff_dst_shape), rng.standard_normal(spec.weights_shape)
    feeds = {"diff_dst": np.ascontiguousarray(dd if fmt == "NCX" else np.moveaxis(dd, 1, -1), np.float32),
             "weights": np.ascontiguousarray(w if wfmt == "IOX" else np.transpose(w, [2, 3, 4, 1, 0]), np.float32)}
    got = run_model(build_conv_data_grad(spec, fmt, wfmt), feeds)[0]
    got = got if fmt == "NCX" else np.moveaxis(got, -1, 1)
    np.testing.assert_allclose(got, conv_data_grad(dd, w, spec), rtol=1e-5, atol=1e-5)


def test_seed_table_names_are_aliases_with_a_note():
    doc = copy.deepcopy(DOC)
    doc["graph"][0]["attrs"]["weights_format"]["value"] = "OIX"
    reading = deconv.read("onednn", doc)
    assert reading.layout["weights_format"] == "IOX" and reading.notes and "OIX" in reading.notes[0]


def test_auto_pad_same_keeps_ceil_of_stride():
    doc = copy.deepcopy(DOC)
    doc["graph"][0]["attrs"]["auto_pad"]["value"] = "same_upper"
    doc["graph"][0]["outputs"] = []
    spec = deconv.read("onednn", doc).canonical
    assert spec.src_spatial == (8, 8) and (spec.pads_begin, spec.pads_end) == ((0, 0), (1, 1))
    doc["graph"][0]["attrs"]["auto_pad"]["value"] = "SAME_LOWER"
    assert deconv.read("onednn", doc).canonical.pads_begin == (1, 1)


def with_attr(name, value, where="attrs"):
    doc = copy.deepcopy(DOC)
    op = doc["graph"][0]
    if where == "attrs":
        if value is None:
            op["attrs"].pop(name)
        else:
            op["attrs"][name] = {"value": value}
    else:
        op[where][name[0]]["shape"] = value
    return doc


BAD = [
    (with_attr("groups", 3), "groups", "not divisible"),
    (with_attr((1,), [32, 64, 3, 3], "inputs"), "inputs[1].shape", "O = diff_dst channels"),
    (with_attr((1,), [32, 128, 3], "inputs"), "inputs[1].shape", "rank"),
    (with_attr("pads_begin", [-1, 0]), "pads_begin", ">= 0"),
    (with_attr("pads_end", [41]), "pads_end", "2 integers"),
    (with_attr("strides", [0, 2]), "strides", ">= 1"),
    (with_attr("dilations", None), "dilations", "required"),
    (with_attr("auto_pad", "SAME"), "auto_pad", "must be one of"),
    (with_attr("data_format", "NHWC"), "data_format", "must be one of"),
    (with_attr("weights_format", "OHWI"), "weights_format", "must be one of"),
    (with_attr("output_padding", [1, 1]), "output_padding", "would have"),
    (with_attr((0,), [1, 32, 27, 28], "outputs"), "outputs[0].shape", "formula"),
    (with_attr((0,), [1, 128, 16], "inputs"), "inputs[1].shape", "rank"),
    (with_attr("pads_end", [0, 0]), "outputs[0].shape", "formula"),
]


@pytest.mark.parametrize("doc,field,why", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_onednn_attributes(doc, field, why):
    with pytest.raises(DescError) as info:
        deconv.read("onednn", doc)
    assert field in str(info.value) and why in str(info.value)


def dml_conv(**changes):
    obj = dmljson.to_json(deconv.to_dml(deconv.read("onednn", DOC).canonical))
    obj.update(changes)
    return obj


@pytest.mark.parametrize("obj,field", [
    (dml_conv(GroupCount=3), "Sizes"), (dml_conv(Strides=[2]), "Strides"), (dml_conv(Dilations=[0, 1]), "Dilations"),
    (dml_conv(StartPadding=[-1, 0]), "StartPadding"), (dml_conv(OutputPadding=[1, 0]), "OutputPadding"),
    (dml_conv(EndPadding=[40, 41]), "OutputTensor.Sizes"), (dml_conv(FusedActivation={"Operator": "RELU"}),
                                                              "FusedActivation"),
    (dml_conv(Mode="FLIPPED"), "Mode"), (dml_conv(DimensionCount=3), "DimensionCount"),
    (dml_conv(FilterTensor={"DataType": "FLOAT32", "Sizes": [32, 64, 3, 3]}), "FilterTensor.Sizes"),
    (dml_conv(FilterTensor={"DataType": "FLOAT16", "Sizes": [32, 128, 3, 3]}), "FilterTensor.DataType"),
])
def test_bad_dml_convolution(obj, field):
    with pytest.raises(DescError) as info:
        dmljson.from_json(obj)
    assert field in str(info.value)


@pytest.mark.parametrize("change,why", [({"Mode": "CONVOLUTION"}, "flips"), ({"Direction": "BACKWARD"}, "BACKWARD")])
def test_dml_refusals(change, why):
    obj = dml_conv(**change)
    if "Direction" in obj and obj["Direction"] == "BACKWARD":   # a valid BACKWARD descriptor of the same sizes
        obj.update(InputTensor=obj["OutputTensor"], OutputTensor=obj["InputTensor"], OutputPadding=[0, 0])
    with pytest.raises(ConversionError, match=why):
        deconv.from_dml(dmljson.from_json(obj))


@pytest.mark.parametrize("mode,f,shape", [("nearest", 2, [2, 3, 8, 6]), ("nearest", 3, [1, 2, 6, 3, 6]),
                                          ("linear", 2, [2, 3, 6, 7]), ("linear", 3, [2, 3, 5, 6])])
def test_bridge_kernels_and_exactness(mode, f, shape):
    res = to_canonical(OnnxResize(shape, {"mode": mode}, scales=[1.0, 1.0] + [float(f)] * (len(shape) - 2)),
                       semantics=INSTALLED)
    parts = deconv_form(res)
    assert parts is not None
    if mode == "nearest":
        assert all(np.array_equal(p.kernel, np.ones(f)) and not p.row_ids for p in parts)
    else:
        want = 1 - np.abs(np.arange(2 * f - f % 2) - (2 * f - f % 2 - 1) / 2) / f
        assert all(np.allclose(p.kernel, want, atol=1e-6) and p.row_ids for p in parts)
    dy = np.random.default_rng(0).standard_normal(res.out_shape)
    cur = dy
    for p in parts:        # each part is a ConvTransposeBackwardData plus border rows
        spec = p.conv_spec(res)
        out = conv_data_grad(cur, p.weights(res), spec)
        fix = np.take(cur, p.corrections.index, axis=p.axis)
        shape_w = [1] * cur.ndim
        shape_w[p.axis], shape_w[p.axis + 1:p.axis + 1] = p.corrections.weight.shape[0], [p.corrections.width]
        fix = (fix * p.corrections.weight.reshape(shape_w)).sum(axis=p.axis + 1)
        idx = [slice(None)] * cur.ndim
        idx[p.axis] = list(p.row_ids)
        out[tuple(idx)] += fix
        cur = out
    np.testing.assert_allclose(cur, resize_grad(dy, res), rtol=2e-6, atol=2e-6)


def test_bridge_exports_as_onednn_json():
    res = to_canonical(OnnxResize([2, 3, 8, 6], {"mode": "nearest"}, scales=[1.0, 1.0, 2.0, 2.0]), semantics=INSTALLED)
    for p in deconv_form(res):
        spec = p.conv_spec(res)
        back = deconv.read("onednn", deconv.to_onednn(spec)).canonical
        assert back == spec and back.groups == 3


def test_cli_build_and_convert(tmp_path):
    out = tmp_path / "d.onnx"
    run = lambda *a: subprocess.run([sys.executable, "-m", "dml_desc.cli", *a], capture_output=True, text=True)
    proc = run("build", str(JSON_FILE), "-o", str(out))
    assert proc.returncode == 0 and out.exists(), proc.stderr
    proc = run("convert", "--from", "onednn", "--to", "dml", str(JSON_FILE))
    assert json.loads(proc.stdout)["Operator"] == "DML_OPERATOR_CONVOLUTION"
    proc = run("convert", "--from", "onednn", "--to", "tf", str(JSON_FILE))
    assert proc.returncode == 2 and "no torch or tf form" in proc.stderr


def test_a_huge_channel_count_is_refused_by_name_not_overflowed():
    """A channel count past float range (it overflowed the group rule's division) is refused by its place; one
    inside 64 bits reaches the group rule, whose message names C/group without float division."""
    obj = {"op_type": "Conv", "input_shape": [1, 10 ** 400, 4, 4], "weights_shape": [2, 3, 3, 3]}
    with pytest.raises(DescError, match=r"input_shape\[1\]=.*must fit in 64 bits"):
        deconv.read("onnx", obj)
    obj["input_shape"][1] = 2 ** 63 + 1
    with pytest.raises(DescError) as info:
        deconv.read("onnx", obj)
    assert "weights_shape" in str(info.value)


def test_each_deconv_format_is_its_own_convention_and_write_keeps_the_layout():
    from dml_desc import conventions
    from dml_desc.conventions.registry import CONVENTIONS
    objects = [CONVENTIONS["deconv", fmt] for fmt in ("onednn", "dml", "onnx")]
    assert len({type(o) for o in objects}) == 3 and [o.name for o in objects] == ["onednn", "dml", "onnx"]
    doc = deconv.to_onednn(deconv.read("onednn", DOC).canonical, "NXC", "XOI", "f16")
    reading = conventions.read("onednn", doc)
    assert reading.layout == {"data_format": "NXC", "weights_format": "XOI", "dtype": "f16"}
    assert conventions.write("onednn", reading).obj == doc                      # the layout travels
    assert conventions.write("dml", reading).obj["InputTensor"]["DataType"] == "FLOAT16"
