"""A corpus of invalid descriptors and attribute sets: each raises DescError naming the field. Models, the
Python API and the CLI are test_bad_input_models.py and test_bad_input_cli.py; the builders, helpers_bad_input.py."""
import pytest

from dml_desc import DescError, conventions, dmljson
from dml_desc.conventions.onnx import installed_semantics
from tests.conftest import CONV_DML, CONV_ONNX
from tests.helpers_bad_input import (BIG, conv_dml_with, conv_onnx_with, deconv_onednn_with, dml_with,
                                      onednn_with, onnx_with, tf_with, torch_with)

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


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
    ("torch", torch_with(mode="bogus"), "mode"),
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
    named = info.value.field                # the field, or a place inside it (input_shape[2], attrs.scales.value[0])
    assert named.endswith(field) or field.split("[")[0] in named, str(info.value)
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


@pytest.mark.parametrize("fmt,obj,field", [("dml", CONV_DML, "Operator"), ("onednn", deconv_onednn_with(), "kind"),
                                           ("onnx", CONV_ONNX, "weights_shape")])
def test_a_deconv_given_to_the_resize_loader_is_refused_by_name(fmt, obj, field):
    """conventions.load reads resizes only: a ConvTransposeBackwardData description is a DescError naming the key
    (the DML convolution descriptor was an AttributeError)."""
    with pytest.raises(DescError) as info:
        conventions.load(fmt, obj, semantics="ort-1.27")
    assert info.value.field == field, str(info.value)


@pytest.mark.parametrize("obj", [CONV_ONNX, conv_onnx_with({"auto_pad": "SAME_UPPER"}),
                                 conv_onnx_with({"dilations": [2, 1]}, input_shape=[1, 4, 5, 3])])
def test_deconv_writers_write_what_their_loaders_read(obj):
    from dml_desc.conventions import deconv
    reading = deconv.read("onnx", obj)
    for dst in ("onednn", "dml", "onnx"):
        assert deconv.read(dst, deconv.write(dst, reading).obj).canonical == reading.canonical
