"""A corpus of invalid descriptors and attribute sets: each raises DescError naming the field."""
import copy

import pytest

from dml_desc import DescError, conventions, dmljson
from tests.conftest import DOC_EXAMPLE


def dml_with(**changes):
    d = copy.deepcopy(DOC_EXAMPLE)
    for path, value in changes.items():
        target = d
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[k]
        if value is KeyError:
            target.pop(keys[-1])
        else:
            target[keys[-1]] = value
    return d


def onnx_with(attributes=None, **kw):
    base = {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {"mode": "linear"},
            "scales": [1, 1, 2, 2]}
    if attributes is not None:
        base["attributes"] = attributes
    base.update(kw)
    return base


ONEDNN = {"graph": [{"kind": "InterpolateBackward", "attrs": {"mode": {"value": "linear"},
                                                             "sizes": {"value": [8, 8]},
                                                             "data_format": {"value": "NCX"}},
                     "inputs": [{"shape": [1, 2, 4, 4]}, {"shape": [1, 2, 8, 8]}], "outputs": []}]}


def onednn_with(attrs=None, inputs=None, kind=None):
    d = copy.deepcopy(ONEDNN)
    op = d["graph"][0]
    if attrs:
        for k, v in attrs.items():
            if v is None:
                op["attrs"].pop(k)
            else:
                op["attrs"][k] = {"value": v}
    if inputs:
        op["inputs"] = inputs
    if kind:
        op["kind"] = kind
    return d


def torch_with(**kw):
    base = {"input_shape": [1, 2, 4, 4], "mode": "bilinear", "size": [8, 8]}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not KeyError}


def tf_with(**kw):
    base = {"input_shape": [1, 4, 4, 2], "size": [8, 8], "method": "bilinear"}
    base.update(kw)
    return base


CASES = [
    # DirectML descriptors
    ("dml", dml_with(Operator="DML_OPERATOR_RESIZE"), "Operator"),
    ("dml", dml_with(Operator=KeyError), "Operator"),
    ("dml", dml_with(InterpolationMode="BICUBIC"), "InterpolationMode"),
    ("dml", dml_with(InterpolationMode=7), "InterpolationMode"),
    ("dml", dml_with(Scales=[1, 1, 0.5]), "Scales"),
    ("dml", dml_with(Scales=[1, 1, 0, 1.5]), "Scales"),
    ("dml", dml_with(Scales=[1, 1, -0.5, 1.5]), "Scales"),
    ("dml", dml_with(Scales=[1, 1, float("inf"), 1.5]), "Scales"),
    ("dml", dml_with(Scales=[1, 1, float("nan"), 1.5]), "Scales"),
    ("dml", dml_with(Scales=[1, 1, "x", 1.5]), "Scales"),
    ("dml", dml_with(Scales=3), "Scales"),
    ("dml", dml_with(InputPixelOffsets=[0.5]), "InputPixelOffsets"),
    ("dml", dml_with(OutputPixelOffsets=[0.5, 0.5, 0.5, float("nan")]), "OutputPixelOffsets"),
    ("dml", dml_with(DimensionCount=3), "DimensionCount"),
    ("dml", dml_with(InputGradientTensor__DataType="FLOAT16"), "DataType"),
    ("dml", dml_with(InputGradientTensor__DataType="COMPLEX64"), "DataType"),
    ("dml", dml_with(InputGradientTensor__DataType="INT32", OutputGradientTensor__DataType="INT32"), "DataType"),
    ("dml", dml_with(InputGradientTensor__Sizes=[1, 1, 3]), "DimensionCount"),
    ("dml", dml_with(InputGradientTensor__Sizes=[1, 1, 0, 3]), "Sizes"),
    ("dml", dml_with(InputGradientTensor__Sizes=[1, 1, 1, 2.5]), "Sizes"),
    ("dml", dml_with(InputGradientTensor__Sizes=[2**21, 2**21, 1, 1]), "Sizes"),
    ("dml", dml_with(InputGradientTensor__DimensionCount=3), "DimensionCount"),
    ("dml", dml_with(InputGradientTensor__Strides=[3, 3, 1]), "Strides"),
    ("dml", dml_with(InputGradientTensor__Strides=[3, 3, 3, -1]), "Strides"),
    ("dml", dml_with(InputGradientTensor__TotalTensorSizeInBytes=4), "TotalTensorSizeInBytes"),
    ("dml", dml_with(InputGradientTensor__GuaranteedBaseOffsetAlignment=3), "GuaranteedBaseOffsetAlignment"),
    ("dml", dml_with(InputGradientTensor__Flags="SHARED"), "Flags"),
    ("dml", dml_with(InputGradientTensor__Bogus=1), "Bogus"),
    ("dml", dml_with(Bogus=1), "Bogus"),
    ("dml", dml_with(InputGradientTensor__Sizes=[1, 1, 1, 1, 3], OutputGradientTensor__Sizes=[1, 1, 1, 2, 2],
                     Scales=[1] * 5, InputPixelOffsets=[0] * 5, OutputPixelOffsets=[0] * 5), "DimensionCount"),
    ("dml", dml_with(Operator="DML_OPERATOR_RESAMPLE_GRAD1", RoundingDirection="SIDEWAYS"), "RoundingDirection"),
    ("dml", [1, 2], "descriptor"),
    # ONNX Resize attributes and inputs
    ("onnx", onnx_with({"mode": "bicubic"}), "mode"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "edge"}),
     "coordinate_transformation_mode"),
    ("onnx", onnx_with({"mode": "nearest", "nearest_mode": "round_half_even"}), "nearest_mode"),
    ("onnx", onnx_with({"mode": "linear", "antialias": 2}), "antialias"),
    ("onnx", onnx_with({"mode": "cubic", "exclude_outside": -1}), "exclude_outside"),
    ("onnx", onnx_with({"mode": "cubic", "cubic_coeff_a": float("nan")}), "cubic_coeff_a"),
    ("onnx", onnx_with({"mode": "linear", "keep_aspect_ratio_policy": "fit"}), "keep_aspect_ratio_policy"),
    ("onnx", onnx_with({"mode": "linear", "antialias": 1}, opset=13), "antialias"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, opset=18),
     "coordinate_transformation_mode"),
    ("onnx", onnx_with({"mode": "cubic"}, opset=10), "mode"),
    ("onnx", onnx_with(opset=9), "opset"),
    ("onnx", onnx_with(opset=22), "opset"),
    ("onnx", onnx_with({"mode": "linear", "unknown_attr": 1}), "unknown_attr"),
    ("onnx", onnx_with(scales=[1, 1, 2]), "scales"),
    ("onnx", onnx_with(scales=[1, 1, 2, -2]), "scales"),
    ("onnx", onnx_with(scales=[1, 1, 0.1, 0.1]), "scales"),
    ("onnx", onnx_with(sizes=[1, 1, 8, 8]), "scales/sizes"),
    ("onnx", onnx_with(scales=None), "scales/sizes"),
    ("onnx", onnx_with(scales=None, sizes=[1, 1, 0, 8]), "sizes"),
    ("onnx", onnx_with({"mode": "linear", "axes": [2, 2]}, scales=[2, 2]), "axes"),
    ("onnx", onnx_with({"mode": "linear", "axes": [5]}, scales=[2]), "axes"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}), "roi"),
    ("onnx", onnx_with(input_shape=[1, 0, 4, 4]), "input_shape"),
    ("onnx", onnx_with(op_type="Upsample"), "op_type"),
    ("onnx", onnx_with(bogus=1), "bogus"),
    ("onnx", onnx_with({"mode": "linear", "keep_aspect_ratio_policy": "not_larger"}), "keep_aspect_ratio_policy"),
    # oneDNN Graph
    ("onednn", onednn_with({"mode": "cubic"}), "mode"),
    ("onednn", onednn_with({"mode": None}), "mode"),
    ("onednn", onednn_with({"coordinate_transformation_mode": "asymmetric"}), "coordinate_transformation_mode"),
    ("onednn", onednn_with({"data_format": "NHWC"}), "data_format"),
    ("onednn", onednn_with({"scales": [2.0, 2.0]}), "sizes/scales"),
    ("onednn", onednn_with({"sizes": None}), "sizes/scales"),
    ("onednn", onednn_with({"sizes": [8, 9]}), "sizes/scales"),
    ("onednn", onednn_with({"sizes": [8]}), "sizes"),
    ("onednn", onednn_with({"mode": "trilinear"}), "mode"),
    ("onednn", onednn_with(kind="Convolution"), "kind"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4]}]), "inputs"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2]}, {"shape": [1, 2]}]), "inputs[0].shape"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4]}, {"shape": [1, 3, 8, 8]}]), "shape"),
    # PyTorch
    ("torch", torch_with(mode="area"), "mode"),
    ("torch", torch_with(mode="trilinear"), "mode"),
    ("torch", torch_with(mode="nearest", align_corners=True), "align_corners"),
    ("torch", torch_with(scale_factor=2.0), "size/scale_factor"),
    ("torch", torch_with(size=KeyError), "size/scale_factor"),
    ("torch", torch_with(size=[8]), "size"),
    ("torch", torch_with(size=KeyError, scale_factor=[0.1, 0.1]), "scale_factor"),
    ("torch", torch_with(mode="nearest", antialias=True), "antialias"),
    ("torch", torch_with(input_shape=[4, 4]), "input_shape"),
    ("torch", torch_with(nonsense=1), "nonsense"),
    # TensorFlow
    ("tf", tf_with(method="area"), "method"),
    ("tf", tf_with(align_corners=True, half_pixel_centers=True), "half_pixel_centers"),
    ("tf", tf_with(size=[8]), "size"),
    ("tf", tf_with(input_shape=[1, 4, 4]), "input_shape"),
    ("tf", tf_with(extra=1), "extra"),
]


def test_corpus_is_large():
    assert len(CASES) >= 60


@pytest.mark.parametrize("fmt,obj,field", CASES, ids=[f"{i}-{c[0]}-{c[2]}" for i, c in enumerate(CASES)])
def test_bad_input_names_the_field(fmt, obj, field):
    with pytest.raises(DescError) as info:
        conventions.load(fmt, obj)
    assert field in str(info.value)
    assert info.value.field and info.value.rule


REFUSALS = [
    ("dml", {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {"mode": "cubic"},
             "scales": [1, 1, 2, 2]}, "mode", "no cubic"),
    ("onednn", {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4],
                "attributes": {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
                "scales": [1, 1, 2, 2]}, "in_offset", "cannot express"),
    ("tf", {"op_type": "Resize", "opset": 19, "input_shape": [1, 4, 4, 1], "attributes": {"mode": "linear",
            "antialias": 1}, "scales": [1, 0.5, 0.5, 1]}, "antialias", "no antialias"),
    ("dml", {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {"mode": "linear",
             "coordinate_transformation_mode": "tf_crop_and_resize"}, "roi": [0, 0, 0.2, 0.2, 1, 1, 0.8, 0.8],
             "scales": [1, 1, 2, 2]}, "extrapolate", "no extrapolation"),
]


@pytest.mark.parametrize("fmt,obj,field,why", REFUSALS)
def test_refusals_say_why(fmt, obj, field, why):
    res, _ = conventions.load("onnx", obj)
    with pytest.raises(conventions.dml.refuse.__globals__["ConversionError"]) as info:
        conventions.dump(fmt, res)
    assert field in str(info.value) and why in str(info.value)


def test_json_text_errors():
    with pytest.raises(DescError, match="json"):
        dmljson.loads("{not json")
