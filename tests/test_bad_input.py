"""A corpus of invalid descriptors and attribute sets: each raises DescError naming the field."""
import copy

import numpy as np
import pytest

from dml_desc import DescError, conventions, dmljson
from dml_desc.conventions.onnx import installed_semantics
from tests.conftest import CONV_DML, CONV_ONNX, DOC_EXAMPLE

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


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
    # opset 11, where onnx's checker refuses it too; onnxruntime runs it at 13-18, so it is read there (issue 25)
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, opset=11),
     "coordinate_transformation_mode"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": []}), "coordinate_transformation_mode"),
    ("onnx", onnx_with({"mode": "cubic"}, opset=10), "mode"),
    ("onnx", onnx_with(opset=9), "opset"),
    ("onnx", onnx_with(opset=29), "opset"),     # 22-28 are read (Resize-19 is newest; issue 25): 29 is beyond
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
        conventions.load(fmt, obj, semantics=INSTALLED)
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
    res, _ = conventions.load("onnx", obj, semantics=INSTALLED)
    with pytest.raises(conventions.dml.refuse.__globals__["ConversionError"]) as info:
        conventions.dump(fmt, res, semantics=INSTALLED)
    assert field in str(info.value) and why in str(info.value)


def test_json_text_errors():
    with pytest.raises(DescError, match="json"):
        dmljson.loads("{not json")


# ---- issue 12: hostile input, class by class. Each case names the user's own field. ------------------------

BIG = 10 ** 400


def conv_dml_with(**changes):
    d = copy.deepcopy(CONV_DML)
    for path, value in changes.items():
        keys, target = path.split("__"), d
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return d


def conv_onnx_with(attributes=None, **kw):
    d = copy.deepcopy(CONV_ONNX)
    d["attributes"].update(attributes or {})
    d.update(kw)
    return d


def deconv_onednn_with(attrs=None, inputs=None):
    import json
    import os
    d = json.load(open(os.path.join(os.path.dirname(__file__), "..", "conformance", "data", "onednn-graph-json",
                                    "deconv_bwd_d.json")))
    op = d["graph"][0]
    for k, v in (attrs or {}).items():
        op["attrs"][k] = {"type": "s64[]", "value": v}
    for i, changes in (inputs or {}).items():
        op["inputs"][i].update(changes)
    return d


HOSTILE = [
    # numbers: huge integers, float32 overflow, products overflowing, bools as integers, 2.0 as an integer
    ("dml", dml_with(Scales=[1, 1, BIG, 1.5]), "Scales[2]"),
    ("dml", dml_with(Scales=[1, 1, 1e39, 1.5]), "Scales[2]"),
    ("dml", dml_with(Scales=[1, 1, 1e-50, 1.5]), "Scales[2]"),
    ("dml", dml_with(InputPixelOffsets=[0.5, 0.5, 1e39, 0.5]), "InputPixelOffsets[2]"),
    ("dml", dml_with(Scales=[1, 1, True, 1.5]), "Scales[2]"),
    ("dml", dml_with(DimensionCount=4.0), "DimensionCount"),
    ("dml", dml_with(DimensionCount=True), "DimensionCount"),
    ("dml", dml_with(InputGradientTensor__DimensionCount=4.0), "InputGradientTensor.DimensionCount"),
    ("dml", dml_with(InputGradientTensor__Sizes=[1, 1, True, 3]), "InputGradientTensor.Sizes[2]"),
    ("dml", dml_with(InputGradientTensor__GuaranteedBaseOffsetAlignment=True), "GuaranteedBaseOffsetAlignment"),
    ("dml", dml_with(InputGradientTensor__TotalTensorSizeInBytes=2 ** 64), "TotalTensorSizeInBytes"),
    ("dml", dml_with(InputGradientTensor__TotalTensorSizeInBytes=BIG), "TotalTensorSizeInBytes"),
    ("onnx", onnx_with(scales=[1, 1, BIG, 2]), "scales[2]"),
    ("onnx", onnx_with(scales=[1, 1, 1e38, 1e38]), "scales"),
    ("onnx", onnx_with(scales=[1, 1, 1e39, 2]), "scales[2]"),
    ("onnx", onnx_with({"mode": "cubic", "cubic_coeff_a": BIG}), "cubic_coeff_a"),
    ("onnx", onnx_with({"mode": "linear", "antialias": True}), "antialias"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
                       roi=[0, 0, 0, 0, 1, 1, 1, 1e39]), "roi[7]"),
    ("onnx", onnx_with(input_shape=[1, 1, BIG, 4]), "input_shape"),
    ("onnx", onnx_with(opset=True), "opset"),
    ("torch", torch_with(size=KeyError, scale_factor=[BIG, 1.0]), "scale_factor[0]"),
    ("torch", torch_with(size=KeyError, scale_factor=[1e300, 1.0]), "scale_factor"),
    ("torch", torch_with(size=[True, 4]), "size[0]"),
    ("tf", tf_with(size=[BIG, 4]), "size"),
    ("tf", tf_with(size=[True, 4]), "size"),
    ("onednn", onednn_with({"scales": [BIG, 2.0], "sizes": None}), "scales[0]"),
    ("onednn", onednn_with({"scales": [1e30, 2.0], "sizes": None}), "scales[0]"),
    # sizes: one budget (2^40 elements) at every loader, and a per-axis budget for materialised tables
    ("dml", dml_with(InputGradientTensor__Sizes=[2 ** 20, 2 ** 20, 2, 3]), "InputGradientTensor.Sizes"),
    ("onnx", onnx_with(input_shape=[2 ** 80, 1, 4, 4]), "input_shape"),
    ("onnx", onnx_with(scales=None, sizes=[1, 1, 2 ** 62, 4]), "sizes"),
    ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, scales=None,
                       sizes=[1, 1, 10 ** 8, 4], roi=[0, 0, 0, 0, 1, 1, 1, 1]), "sizes[2]"),
    ("torch", torch_with(input_shape=[1, 1, 2 ** 62, 4], size=[2 ** 62, 4]), "input_shape"),
    ("torch", torch_with(size=[2 ** 100, 4]), "size"),
    ("tf", tf_with(input_shape=[1, 2 ** 70, 4, 1], size=[4, 4]), "input_shape"),
    ("tf", tf_with(size=[10 ** 8, 4], method="bicubic"), "size[0]"),
    ("onednn", onednn_with({"sizes": [2 ** 60, 8]}, inputs=[{"shape": [1, 2, 4, 4]}, {"shape": [1, 2, 2 ** 60, 8]}]),
     "inputs[1].shape"),
    # oneDNN dtype: read and checked
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4], "dtype": "complex128"}, {"shape": [1, 2, 8, 8]}]),
     "inputs[0].dtype"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4], "dtype": "s8"}, {"shape": [1, 2, 8, 8]}]),
     "inputs[0].dtype"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4], "dtype": ["f32"]}, {"shape": [1, 2, 8, 8]}]),
     "inputs[0].dtype"),
    ("onednn", onednn_with(inputs=[{"shape": [1, 2, 4, 4], "dtype": "f32"}, {"shape": [1, 2, 8, 8], "dtype": "f16"}]),
     "inputs[1].dtype"),
    # strictness: names compared exactly (no Unicode case folding), "Type" used, huge keys cut
    ("dml", dml_with(InputGradientTensor__DataType="ﬂoat32"), "InputGradientTensor.DataType"),
    ("dml", dml_with(InterpolationMode="nearest_neıghbor"), "InterpolationMode"),
    ("dml", dml_with(Type="DML_OPERATOR_RESAMPLE1"), "Type"),
    ("dml", dml_with(InputGradientTensor__Type="DML_TENSOR_TYPE_INVALID"), "InputGradientTensor.Type"),
    ("onnx", onnx_with({"mode": "nearest_neıghbor"}), "mode"),
    ("tf", tf_with(method="ｂilinear"), "method"),
]


@pytest.mark.parametrize("fmt,obj,field", HOSTILE, ids=[f"{i}-{c[0]}-{c[2]}" for i, c in enumerate(HOSTILE)])
def test_hostile_input_names_the_users_field(fmt, obj, field):
    with pytest.raises(DescError) as info:
        conventions.load(fmt, obj, semantics=INSTALLED)
    assert info.value.field.endswith(field) or info.value.field == field, str(info.value)
    assert len(str(info.value)) < 600


def test_sizes_below_the_element_budget_still_load_fast_per_axis():
    import time
    from dml_desc import budget
    start = time.perf_counter()
    for fmt, obj in (("tf", tf_with(size=[10 ** 8, 4], method="bicubic")),
                     ("onnx", onnx_with({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
                                        scales=None, sizes=[1, 1, 10 ** 8, 4], roi=[0, 0, 0, 0, 1, 1, 1, 1]))):
        with pytest.raises(DescError, match="per-axis budget"):
            conventions.load(fmt, obj, semantics=INSTALLED)
    assert time.perf_counter() - start < 2, "the budget refuses before anything is built"
    assert budget.max_axis() < 10 ** 8 <= budget.max_elements()


def test_the_budget_is_settable():
    from dml_desc import budget
    previous = budget.set_limits(elements=1000)
    try:
        with pytest.raises(DescError, match="size budget of 1000") as info:
            conventions.load("tf", tf_with(input_shape=[1, 40, 40, 1], size=[8, 8]))
        assert info.value.field == "input_shape"
        with pytest.raises(DescError):
            budget.set_limits(elements=0)
    finally:
        budget.set_limits(**previous)
    conventions.load("tf", tf_with(input_shape=[1, 40, 40, 1], size=[8, 8]))


def test_huge_unknown_keys_are_shortened_everywhere():
    key = "k" * 10 ** 6
    for fmt, obj in (("dml", dml_with(**{key: 1})), ("onnx", onnx_with(**{key: 1})), ("torch", torch_with(**{key: 1})),
                     ("dml", dml_with(**{"InputGradientTensor__" + key: 1}))):
        with pytest.raises(DescError) as info:
            conventions.load(fmt, obj, semantics=INSTALLED)
        assert len(str(info.value)) < 1000 and "kkk" in str(info.value)


def test_own_errors_never_name_internal_fields():
    for obj in (dml_with(Scales=[1, 1, 1e-50, 1.5]), dml_with(InputPixelOffsets=[0.5, 0.5, 1e39, 0.5])):
        with pytest.raises(DescError) as info:
            conventions.load("dml", obj)
        assert not info.value.field.startswith(("scale", "in_offset", "out_offset"))


def test_strict_json():
    from dml_desc.errors import parse_json
    cases = [('{"Scales": [1], "Scales": [2]}', "Scales", "twice"), (b'{"a": "\xff"}', "json", "UTF-8"),
             ("[" * 100000 + "]" * 100000, "json", "deeply"), ('{"a": NaN}', "json", "NaN"),
             ("1" * 5000, "json", "number")]
    for text, field, rule in cases:
        with pytest.raises(DescError) as info:
            parse_json(text)
        assert info.value.field == field and rule in info.value.rule
    with pytest.raises(DescError, match="twice"):
        dmljson.loads('{"Operator": "DML_OPERATOR_RESAMPLE_GRAD", "Operator": "DML_OPERATOR_RESAMPLE1"}')


# ---- ConvTransposeBackwardData: the ONNX Conv form, DML convolution and oneDNN, checked on input ------------

DECONV = [
    ("onnx", conv_onnx_with({"strides": [2, 0]}), "strides"),
    ("onnx", conv_onnx_with({"strides": 2}), "strides"),
    ("onnx", conv_onnx_with({"pads": [-1, 0, 0, 0]}), "pads"),
    ("onnx", conv_onnx_with({"pads": [1, 0]}), "pads"),
    ("onnx", conv_onnx_with({"group": 0}), "group"),
    ("onnx", conv_onnx_with({"group": True}), "group"),
    ("onnx", conv_onnx_with({"auto_pad": ["SAME_UPPER"]}), "auto_pad"),
    ("onnx", conv_onnx_with({"bogus": 1}), "attributes.bogus"),
    ("onnx", conv_onnx_with(attributes=None, input_shape=[1, 4, 0, 5]), "input_shape"),
    ("onnx", conv_onnx_with(input_shape=[1, 4, 2, 2]), "kernel"),
    ("onnx", conv_onnx_with(weights_shape=[2, 4]), "weights_shape"),
    ("onnx", conv_onnx_with(weights_shape=[2, 3, 3, 3]), "weights_shape"),
    ("onnx", conv_onnx_with(attributes=None, input_shape=[1, 4, 2 ** 30, 2 ** 30]), "diff_dst shape"),
    ("onnx", dict(CONV_ONNX, attributes=[1]), "attributes"),
    ("onnx", dict(CONV_ONNX, op_type="ConvTranspose"), "op_type"),
    ("onnx", dict(CONV_ONNX, extra=1), "extra"),
    ("onnx", 0, "onnx"),
    ("dml", conv_dml_with(BiasTensor={"DataType": "FLOAT32", "Sizes": [3]}), "BiasTensor.DimensionCount"),
    ("dml", conv_dml_with(BiasTensor={"DataType": "FLOAT16", "Sizes": [1, 3, 1, 1]}), "BiasTensor.DataType"),
    ("dml", conv_dml_with(BiasTensor={"DataType": "FLOAT32", "Sizes": [1, 3, 1, 1]}), "BiasTensor"),
    ("dml", conv_dml_with(InputTensor__Strides=[50, 1, 10, 2]), "InputTensor.Strides"),
    ("dml", conv_dml_with(Strides=[0, 1]), "Strides[0]"),
    ("dml", conv_dml_with(GroupCount=True), "GroupCount"),
    ("dml", dml_with(), "Operator"),
    ("onednn", deconv_onednn_with(inputs={0: {"dtype": ["f32"]}}), "inputs[0].dtype"),
    ("onednn", deconv_onednn_with(inputs={0: {"dtype": "s8"}}), "inputs[0].dtype"),
    ("onednn", deconv_onednn_with(attrs={"strides": [0, 1]}), "strides"),
    ("onednn", deconv_onednn_with(attrs={"pads_begin": [-1, 0]}), "pads_begin"),
]


@pytest.mark.parametrize("fmt,obj,field", DECONV, ids=[f"{i}-{c[0]}-{c[2]}" for i, c in enumerate(DECONV)])
def test_deconv_input_names_the_users_field(fmt, obj, field):
    from dml_desc.conventions import deconv
    with pytest.raises(DescError) as info:
        deconv.read(fmt, obj)
    assert info.value.field == field or info.value.field.endswith(field), str(info.value)


@pytest.mark.parametrize("obj", [CONV_ONNX, conv_onnx_with({"auto_pad": "SAME_UPPER"}),
                                 conv_onnx_with({"dilations": [2, 1]}, input_shape=[1, 4, 5, 3])])
def test_deconv_writers_write_what_their_loaders_read(obj):
    from dml_desc.conventions import deconv
    reading = deconv.read("onnx", obj)
    for dst in ("onednn", "dml", "onnx"):
        assert deconv.read(dst, deconv.write(dst, reading).obj).canonical == reading.canonical


# ---- lowering: a malformed ResizeGrad is refused by name; what is written passes onnx's checker and onnxruntime --

def resize_grad_model(**spec):
    from tests.fuzz.atheris_loaders import _lower_model
    base = {"attrs": {"mode": "linear"}, "x": [1, 1, 4, 4], "dy": [1, 1, 8, 8], "scales": [1, 1, 2, 2],
            "outputs": ["dX"]}
    base.update(spec)
    return _lower_model(base)


def graph_outputs(model, *names):
    from onnx import helper
    for name in names:
        model.graph.output.append(helper.make_tensor_value_info(name, 1, [1, 1, 4, 4]))
    return model


LOWERING = [
    (resize_grad_model(outputs=["dX", "second"], graph_outputs=["dX", "second"]), "outputs"),
    (resize_grad_model(outputs=[""], graph_outputs=[]), "outputs"),
    (resize_grad_model(outputs=[], graph_outputs=[]), "outputs"),
    (resize_grad_model(dy_elem=10), "dY"),                       # float16 dY, float X
    (resize_grad_model(elem=7, dy_elem=7), "dY"),                # int64 data
    (resize_grad_model(opset=1), "opset"),
    (resize_grad_model(scales_dtype="int64"), "scales"),
    (resize_grad_model(scales_dtype="float64"), "scales"),
    (resize_grad_model(scales=[[1, 1], [2, 2]]), "scales"),
    (resize_grad_model(extra_inputs=["dY"]), "inputs"),
    (resize_grad_model(attrs={"mode": "nearest_neıghbor"}), "mode"),
    (resize_grad_model(attrs={"mode": b"lin\xe4ar"}), "node rg"),  # a string attribute that is not UTF-8
]


@pytest.mark.parametrize("model,field", LOWERING, ids=[f"{i}-{c[1]}" for i, c in enumerate(LOWERING)])
def test_lowering_refuses_malformed_resize_grad_by_name(model, field):
    from onnx_ops.lower import lower
    with pytest.raises(DescError) as info:
        lower(model, semantics=INSTALLED)
    assert "rg" in info.value.field and field in info.value.field, str(info.value)


def test_valid_float64_identity_gradient_lowers(tmp_path):
    """Output shape equal to input shape in float64: was StopIteration in Emitter.rename."""
    pytest.importorskip("onnxruntime", reason="the lowered model is run on onnxruntime")
    import onnxruntime as ort
    from onnx_ops.lower import lower
    from onnx_ops.validate import check_written
    model = resize_grad_model(elem=11, dy_elem=11, dy=[1, 1, 4, 4], scales=[1, 1, 1, 1], graph_outputs=["dX"])
    lowered, report = lower(model, semantics=INSTALLED)
    check_written(lowered)
    dy = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    sess = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {"dY": dy, "X": dy})[0], dy)


def test_external_scales_resolve_next_to_the_model_not_the_working_directory(tmp_path, monkeypatch):
    import onnx
    from onnx_ops.lower import lower_file
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(resize_grad_model(), str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = lower_file(str(folder / "m.onnx"), str(folder / "out.onnx"), semantics=INSTALLED)
    assert [r.forms for r in report] and not any(r.dynamic for r in report)     # read as the constants they are
    out = onnx.load(str(folder / "out.onnx"), load_external_data=False)
    kept = {t.name: t.data_location for t in out.graph.initializer}
    assert kept["scales"] == onnx.TensorProto.EXTERNAL                           # still in m.data, untouched


# ---- the CLI: one line, exit 2, never a traceback ---------------------------------------------------------------

def cli(*argv):
    """`dml-desc ARGV` in this process (the same main() the console script runs)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    from types import SimpleNamespace
    from dml_desc.cli import main
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def assert_one_line_error(proc, *words):
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("note: ")]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("dml-desc: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_cli_bad_files(tmp_path):
    import json
    files = {"dup.json": b'{"Operator": "DML_OPERATOR_RESAMPLE_GRAD", "Operator": "x"}',
             "latin1.json": '{"Operator": "é"}'.encode("latin-1"),
             "deep.json": b"[" * 100000 + b"]" * 100000,
             "huge.json": json.dumps(dml_with(Scales=[1, 1, 1e39, 1.5])).encode()}
    expect = {"dup.json": "twice", "latin1.json": "UTF-8", "deep.json": "deeply", "huge.json": "Scales[2]"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert_one_line_error(cli("convert", "--from", "dml", "--to", "onnx", str(tmp_path / name)), expect[name])
    assert_one_line_error(cli("convert", "--from", "dml", "--to", "onnx", str(tmp_path)), "cannot be read")


def test_cli_bad_model_files(tmp_path):
    good = resize_grad_model().SerializeToString()
    models = {"empty.onnx": b"", "text.onnx": b"hello, not a model\n", "truncated.onnx": good[: len(good) // 2],
              "random.onnx": bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8))}
    for name, data in models.items():
        (tmp_path / name).write_bytes(data)
        proc = cli("lower", str(tmp_path / name), "-o", str(tmp_path / "out.onnx"))
        assert_one_line_error(proc)
        assert not (tmp_path / "out.onnx").exists(), "no 0-byte output"
    assert_one_line_error(cli("lower", str(tmp_path), "-o", str(tmp_path / "out.onnx")))
    (tmp_path / "good.onnx").write_bytes(good)
    assert_one_line_error(cli("lower", str(tmp_path / "good.onnx"), "-o", str(tmp_path / "missing" / "o.onnx")), "OUT")
    assert_one_line_error(cli("lower", str(tmp_path / "good.onnx"), "-o", str(tmp_path)), "OUT")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


def test_cli_writes_files_with_the_umask_mode_and_keeps_a_rewritten_files_mode(tmp_path):
    import os
    (tmp_path / "m.onnx").write_bytes(resize_grad_model().SerializeToString())
    old = os.umask(0o022)
    try:
        assert cli("lower", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "new.onnx")).returncode == 0
        assert (tmp_path / "new.onnx").stat().st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "m.onnx", 0o640)
        assert cli("lower", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.onnx")).returncode == 0
        assert (tmp_path / "m.onnx").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_cli_build_refuses_what_onnxruntime_cannot_run(tmp_path):
    import json
    (tmp_path / "c.json").write_text(json.dumps(CONV_ONNX))
    assert_one_line_error(cli("build", str(tmp_path / "c.json"), "-o", str(tmp_path / "c.onnx"), "--dtype", "f64"),
                          "dtype")
    (tmp_path / "big.json").write_text(json.dumps(torch_with(input_shape=[2 ** 40, 2, 4, 4])))
    assert_one_line_error(cli("build", str(tmp_path / "big.json"), "-o", str(tmp_path / "b.onnx")), "input_shape")


def test_cli_closed_pipe_exits_quietly():
    import subprocess
    import sys
    code = ("import os, sys\nr, w = os.pipe()\nos.close(r)\nos.dup2(w, 1)\n"
            "from dml_desc.cli import main\nsys.exit(main(['example', 'dml_resample_grad']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr


def test_conformance_refuses_an_unwritable_report_path_before_running(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "conformance", "--json", str(tmp_path / "no" / "r.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("dml-desc: error: --json"), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# ---- a clean terminal: input text never carries control sequences to the terminal --------------------------------

HOSTILE = "\x1b]0;owned\x07\x1b[2J\rFAKE: all checks passed\u202e\u2066"


def assert_clean(text):
    for ch in ("\x1b", "\x07", "\r", "\u202e", "\u2066"):
        assert ch not in text, repr(text)


def test_json_keys_and_values_are_escaped_on_the_terminal(tmp_path):
    import json
    bad = dict(DOC_EXAMPLE, **{HOSTILE: 1})
    path = tmp_path / f"desc{HOSTILE[:4]}.json"
    path.write_text(json.dumps(bad, ensure_ascii=False))
    proc = cli("convert", str(path), "--from", "dml", "--to", "onnx")
    assert proc.returncode == 2
    assert_clean(proc.stderr)
    assert "\\x1b]0;owned\\x07" in proc.stderr and "\\u202e" in proc.stderr     # shown, escaped
    proc = cli("convert", str(tmp_path / f"missing{HOSTILE}.json"), "--from", "dml", "--to", "onnx")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert_clean(proc.stderr)


def test_node_and_file_names_are_escaped_on_the_terminal(tmp_path):
    import onnx
    model = resize_grad_model()
    model.graph.node[0].name = HOSTILE
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    out = tmp_path / f"out{HOSTILE[:5]}.onnx"
    proc = cli("lower", str(path), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout + proc.stderr)
    assert "FAKE" in proc.stdout and "\\x1b" in proc.stdout


def test_the_error_field_itself_is_escaped_for_api_callers():
    e = DescError(HOSTILE, HOSTILE, "rule")
    assert_clean(str(e))
    assert_clean(e.field)


def test_a_written_models_failure_is_excused_only_when_it_is_the_inputs_in_full():
    from onnx import TensorProto, helper
    from onnx_ops.validate import checker_problem, check_written

    def broken(op):           # two inputs where one is allowed: the same first checker line for Relu and Neg
        g = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"], name="n")], "g",
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2]) for x in "ab"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    relu, neg = broken("Relu"), broken("Neg")
    import onnx
    if onnx.__version__.startswith("1.16."):       # onnx 1.16 names the op only after the first line; later do not
        assert checker_problem(relu).splitlines()[0] == checker_problem(neg).splitlines()[0]
    check_written(relu, baseline=relu)                     # the input's own failure, in full: excused
    with pytest.raises(DescError, match="fails onnx's checker"):
        check_written(neg, baseline=relu)


def test_the_references_nan_pattern_is_the_lowerings():
    """A NaN in dY reaches only the dX entries that depend on it, in the reference as in the lowered model
    (the gradient table's padding taps, weight 0, add nothing)."""
    import onnxruntime as ort
    from conformance.reference import resize_grad
    from onnx_ops.build import build_resize_grad
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    dy = np.ones((1, 1, 12), np.float32)
    dy[0, 0, 0] = np.nan
    model = build_resize_grad(res, np.float32, lowered=True, semantics=INSTALLED)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {i.name: dy if i.name == "dY" else np.zeros((1, 1, 6), np.float32) for i in session.get_inputs()}
    lowered = session.run(None, feed)[0]
    reference = resize_grad(dy, res)
    assert np.flatnonzero(np.isnan(reference)).tolist() == [0] == np.flatnonzero(np.isnan(lowered)).tolist()
    assert np.array_equal(np.isnan(reference), np.isnan(lowered))


def _api_cases():
    from conformance.reference import resize_grad
    from onnx_ops.build import build_resize_grad
    from onnx_ops.lower import lower, lower_file
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    model = build_resize_grad(res, np.float32, semantics=INSTALLED)
    return [
        (lambda: build_resize_grad(res, np.float32, lowered="no", semantics=INSTALLED), "lowered"),
        (lambda: build_resize_grad(res, np.float32, lowered=1, semantics=INSTALLED), "lowered"),
        (lambda: lower(model, providers="CPUExecutionProvider", semantics=INSTALLED), "providers"),
        (lambda: lower(model, providers=["Bogus"], semantics=INSTALLED), "providers"),
        (lambda: lower(model, providers=[], semantics=INSTALLED), "providers"),
        (lambda: lower_file("m.onnx", "o.onnx", providers="CPUExecutionProvider", semantics=INSTALLED), "providers"),
        (lambda: resize_grad(np.ones((1, 1, 12), object), res), "data.dtype"),
        (lambda: resize_grad(np.ones((1, 1, 12)), None), "res"),
        (lambda: lower_file(None, "o.onnx", semantics=INSTALLED), "path"),
        (lambda: conventions.load("torch", {"input_shape": np.array([1, 1, 6]), "mode": "linear", "size": [12]}),
         "input_shape"),
        (lambda: conventions.load("onnx", onnx_with(attributes={"mode": "linear", "axes": [True, 3]},
                                                    scales=[2, 2]), semantics=INSTALLED), "axes"),
        (lambda: conventions.load("onnx", onnx_with(opset=True), semantics=INSTALLED), "opset"),
    ]


@pytest.mark.parametrize("k", range(12))
def test_python_api_types_are_strict(k):
    call, field = _api_cases()[k]
    with pytest.raises(DescError) as e:
        call()
    assert e.value.field == field, str(e.value)


def test_a_known_provider_list_still_lowers():
    from onnx_ops.build import build_resize_grad
    from onnx_ops.lower import lower
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 6], "mode": "linear", "size": [12],
                                        "align_corners": False})
    _, report = lower(build_resize_grad(res, np.float32, semantics=INSTALLED), providers=["CPUExecutionProvider"],
                      semantics=INSTALLED)
    assert len(report) == 1


# ---- environment values and Ctrl-C: one line each ---------------------------------------------------------------

def _dml_desc(*argv, env=None, **kw):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-m", "dml_desc.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": root, **(env or {})}, timeout=120, **kw)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1e3", "\x1b[2J"])
def test_a_bad_budget_environment_value_is_one_line(value, tmp_path):
    import os
    import subprocess
    import sys
    env = {"DML_DESC_MAX_AXIS": value}
    assert _dml_desc("--version", env=env).returncode == 0
    desc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "torch_interpolate.json")
    proc = _dml_desc("build", desc, "-o", str(tmp_path / "m.onnx"), env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "DML_DESC_MAX_AXIS" in proc.stderr
    assert "\x1b" not in proc.stderr
    imported = subprocess.run([sys.executable, "-c", "import onnx_ops, dml_desc"], capture_output=True, text=True,
                              env={**os.environ, **env})
    assert imported.returncode == 0, imported.stderr


def test_ctrl_c_is_one_line_and_exit_130():
    import os
    import signal
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from dml_desc.cli import main; import dml_desc.conventions; "
                             "print('ready', flush=True); sys.exit(main(['convert', '-', '--from', 'dml', "
                             "'--to', 'onnx']))"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": root})
    assert proc.stdout.readline().strip() == "ready"
    import time
    time.sleep(1.0)                       # inside main(), waiting on stdin
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "dml-desc: interrupted\n", err
