"""DirectML's documented ResampleGrad example through every path that can express it."""
import numpy as np
import pytest

from conformance.reference import resize, resize_grad
from dml_desc import DML_RESAMPLE_GRAD_OPERATOR_DESC, ConversionError, DML_BUFFER_TENSOR_DESC
from dml_desc.conventions.onnx import installed_semantics
from dml_desc import conventions, dmljson
from dml_desc.conventions import dml
from tests.conftest import DOC_EXAMPLE, DX_DOC, DY_DOC, X_DOC, Y_DOC

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run


def check(res):
    np.testing.assert_array_equal(resize(X_DOC, res), Y_DOC)
    np.testing.assert_array_equal(resize_grad(DY_DOC, res), DX_DOC)


def test_dataclass():
    desc = DML_RESAMPLE_GRAD_OPERATOR_DESC(
        input_gradient_tensor=DML_BUFFER_TENSOR_DESC.packed("FLOAT32", [1, 1, 1, 3]),
        output_gradient_tensor=DML_BUFFER_TENSOR_DESC.packed("FLOAT32", [1, 1, 2, 2]),
        interpolation_mode="NEAREST_NEIGHBOR", scales=[1, 1, 0.5, 1.5],
        input_pixel_offsets=[0.5] * 4, output_pixel_offsets=[-0.5] * 4)
    check(dml.to_canonical(desc))
    assert desc.input_gradient_tensor.total_tensor_size_in_bytes == 12


def test_json_round_trip():
    desc = dmljson.from_json(DOC_EXAMPLE)
    again = dmljson.from_json(dmljson.to_json(desc))
    assert again == desc
    check(dml.to_canonical(again))


@pytest.mark.parametrize("fmt", ["dml", "onnx", "torch"])
def test_every_convention_that_can_express_it(fmt):
    res, backward = conventions.load("dml", DOC_EXAMPLE)
    out, notes = conventions.dump(fmt, res, backward, semantics=INSTALLED)
    back, _ = conventions.load(fmt, out, semantics=INSTALLED)
    check(back)


@pytest.mark.parametrize("op", ["DML_OPERATOR_RESAMPLE1", "DML_OPERATOR_RESAMPLE2", "DML_OPERATOR_RESAMPLE3",
                                "DML_OPERATOR_RESAMPLE_GRAD1"])
def test_every_dml_operator(op):
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    desc, notes = dml.from_canonical(res, op)
    assert notes == ()
    check(dml.to_canonical(desc))


def test_torch_needs_the_shapes_and_says_so():
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    out, notes = conventions.dump("torch", res)
    assert out["mode"] == "nearest" and out["size"] == [1, 3]
    assert notes and "only for these shapes" in notes[0]


def test_onednn_refuses_ties_up():
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    with pytest.raises(ConversionError, match="round_prefer"):
        conventions.dump("onednn", res)


def test_tf_refuses_nchw():
    res, _ = conventions.load("dml", DOC_EXAMPLE)
    with pytest.raises(ConversionError, match="NHWC"):
        conventions.dump("tf", res)


def test_swapped_offset_reading_differs_and_round_trips():
    res = dml.to_canonical(dmljson.from_json(DOC_EXAMPLE), offset_reading="swapped")
    assert res.axes[3].in_offset == -0.5 and res.axes[3].out_offset == 0.5
    desc, _ = dml.from_canonical(res, offset_reading="swapped")
    assert dmljson.to_json(desc)["InputPixelOffsets"] == [0.5] * 4
