"""The same operator in two conventions gives identical weights; torch is an independent oracle."""
import numpy as np
import pytest

from conformance.reference import resize, resize_grad
from dml_desc import conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions import onednn, onnx, tf, torch as torch_conv
from dml_desc.weights import same_weights
from tests.conftest import torch_or_skip

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

NCHW = [2, 3, 6, 10]


def _torch(mode, **kw):
    return torch_conv.to_canonical(torch_conv.TorchInterpolate(NCHW, mode, **kw))


def _onnx(attrs, sizes):
    return onnx.to_canonical(onnx.OnnxResize(NCHW, attrs, sizes=sizes), semantics=INSTALLED)


def test_bilinear_half_pixel_upsample_in_five_conventions():
    t = _torch("bilinear", size=[12, 20], align_corners=False)
    o = _onnx({"mode": "linear"}, [2, 3, 12, 20])
    d = conventions.load("dml", conventions.dump("dml", o)[0])[0]
    n = onednn.to_canonical(onednn.from_canonical(o, data_format="NCX")[0])
    nhwc = tf.to_canonical(tf.TfResize([2, 6, 10, 3], [12, 20], "bilinear", False, True))
    assert same_weights(t, o) and same_weights(o, d) and same_weights(o, n)
    tf_axes = nhwc.axes
    assert same_weights(o.with_(axes=(o.axes[0], tf_axes[1], tf_axes[2], o.axes[1])), nhwc)


def test_nearest_ties_split_conventions():
    """Downsample by 2: every coordinate is a tie. ONNX default and oneDNN round opposite ways."""
    o = _onnx({"mode": "nearest"}, [2, 3, 3, 5])
    n = onednn.to_canonical(onednn.from_canonical(
        _onnx({"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, [2, 3, 3, 5]), data_format="NCX")[0])
    assert not same_weights(o, n)
    from dml_desc.errors import ConversionError
    with pytest.raises(ConversionError, match="round_prefer"):
        onednn.from_canonical(o)


def test_align_corners_exact_ratio_vs_float32_ratio():
    o = _onnx({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [2, 3, 11, 19])
    t = _torch("bilinear", size=[11, 19], align_corners=True)
    x = np.random.default_rng(1).standard_normal(NCHW)
    np.testing.assert_allclose(resize(x, o), resize(x, t), atol=1e-6)


@pytest.mark.parametrize("mode,kw", [
    ("nearest", {"size": [4, 7]}), ("nearest", {"scale_factor": [2.0, 1.5]}),
    ("nearest-exact", {"size": [13, 7]}), ("bilinear", {"size": [13, 7], "align_corners": False}),
    ("bilinear", {"size": [4, 23], "align_corners": True}), ("bilinear", {"scale_factor": [0.5, 2.5]}),
    ("bicubic", {"size": [9, 17], "align_corners": False}), ("bicubic", {"size": [5, 4], "align_corners": True}),
    ("bilinear", {"size": [3, 4], "antialias": True}), ("bicubic", {"size": [4, 3], "antialias": True}),
])
def test_torch_oracle_forward_and_backward(mode, kw):
    torch = torch_or_skip()
    res = _torch(mode, **kw)
    x = torch.randn(*NCHW, dtype=torch.float32, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = torch.nn.functional.interpolate(x, mode=mode, **kw)
    dy = torch.randn_like(y)
    y.backward(dy)
    # torch computes coordinates and weights in float32, as our taps do
    np.testing.assert_allclose(resize(x.detach().numpy(), res), y.detach().numpy(), rtol=1e-5, atol=3e-6)
    np.testing.assert_allclose(resize_grad(dy.numpy(), res), x.grad.numpy(), rtol=1e-5, atol=3e-6)


@pytest.mark.parametrize("src", [
    {"mode": "bilinear", "size": [12, 20], "align_corners": False},
    {"mode": "nearest", "size": [12, 5]},
    {"mode": "bicubic", "scale_factor": [2.0, 2.0], "align_corners": False},
])
def test_torch_to_onnx_and_back(src):
    res = _torch(**src)
    out, _ = conventions.dump("onnx", res, backward=False, semantics=INSTALLED)
    assert same_weights(res, conventions.load("onnx", out, semantics=INSTALLED)[0])


def _example(name: str) -> dict:
    import json
    from pathlib import Path
    return json.loads((Path(__file__).resolve().parent.parent / "examples" / name).read_text())


RESIZE_EXAMPLES = {"dml": "dml_resample_grad.json", "onednn": "onednn_interpolate_bwd.json",
                   "onnx": "onnx_resizegrad.json", "torch": "torch_interpolate.json", "tf": "tf_resize.json"}


@pytest.mark.parametrize("fmt", sorted(RESIZE_EXAMPLES))
def test_every_resize_convention_reads_and_writes_one_shape(fmt):
    """The registry's convention for each format: read gives a Reading, write a Writing, and the tuple walks
    (load / dump) give the same values; what it writes it reads back as the same weights."""
    from dml_desc.conventions import CONVENTIONS, Reading, Writing
    obj = _example(RESIZE_EXAMPLES[fmt])
    reading = conventions.read(fmt, obj, semantics="ort-1.27")
    assert type(reading) is Reading and CONVENTIONS["resize", fmt].read.__self__.name == fmt
    assert (reading.canonical, reading.backward) == conventions.load(fmt, obj, semantics="ort-1.27")
    assert reading.backward == (fmt in ("dml", "onednn", "onnx")) and reading.notes == reading.canonical.notes
    written = conventions.write(fmt, reading, semantics="ort-1.27")
    assert type(written) is Writing
    assert (written.obj, written.notes) == conventions.dump(fmt, reading.canonical, reading.backward,
                                                            semantics="ort-1.27")
    assert same_weights(conventions.read(fmt, written.obj, semantics="ort-1.27").canonical, reading.canonical)


def test_the_deconv_conventions_read_and_write_one_shape():
    """ConvTransposeBackwardData in the same table: a Reading whose canonical form is a ConvSpec (a gradient),
    whose layout the writers keep; torch and tf have no form and are refused by name."""
    from dml_desc.conventions import CONVENTIONS, Reading, Writing, deconv
    from dml_desc.errors import ConversionError
    reading = conventions.read("onednn", _example("onednn_deconv_bwd_d.json"))
    assert type(reading) is Reading and isinstance(reading.canonical, deconv.ConvSpec) and reading.backward
    assert set(reading.layout) == {"data_format", "weights_format", "dtype"}
    assert {fmt for op, fmt in CONVENTIONS if op == "deconv"} == {"onednn", "dml", "onnx"}
    for fmt in ("onednn", "dml", "onnx"):
        written = conventions.write(fmt, reading)
        assert type(written) is Writing and conventions.read(fmt, written.obj).canonical == reading.canonical
    assert deconv.read("onednn", conventions.write("onednn", reading).obj).layout == reading.layout
    for fmt in ("torch", "tf"):
        with pytest.raises(ConversionError) as e:
            conventions.write(fmt, reading)
        assert e.value.field == "to" and e.value.value == fmt
