"""dml-desc: resampling and transposed-convolution gradients across DirectML, oneDNN, ONNX, PyTorch and TensorFlow.

Start here: dml_desc.conventions.load(fmt, obj) / dump(fmt, res) read / write a resize ('dml', 'onednn', 'onnx',
'torch', 'tf'; exact, or ConversionError); conventions.read / write any description, a ConvTransposeBackwardData
too, as a Reading / Writing. conformance.reference.resize_grad is the NumPy gradient. Shell: `dml-desc convert |
build | lower | conformance | example --help`; onnx_ops.build_resize_grad builds the ONNX model and onnx_ops.lower
rewrites ResizeGrad into standard ops.
Conventions: shapes in the description's own layout (NCHW; NHWC for TF), scale = out/in, offsets in pixels.

The canonical form (Resampling) holds one AxisMap per axis: output index o reads input coordinate
x = (o - out_offset) / scale - in_offset. forward_taps / gradient_taps give its sparse matrices (Taps).
The DML_* classes are directml.h's descriptors field for field (dml_desc.dmljson reads and writes their JSON).
Errors: DescError (bad input, naming the field, the value and the rule) and its subclass ConversionError.
"""
from .canonical import AxisMap, Mode, Resampling, Rounding
from .convolution import DML_CONVOLUTION_OPERATOR_DESC
from .enums import DML_AXIS_DIRECTION, DML_INTERPOLATION_MODE, DML_TENSOR_DATA_TYPE
from .errors import ConversionError, DescError
from .resample import (DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE2_OPERATOR_DESC, DML_RESAMPLE3_OPERATOR_DESC,
                       DML_RESAMPLE_GRAD1_OPERATOR_DESC, DML_RESAMPLE_GRAD_OPERATOR_DESC, half_pixel)
from .tensor import DML_BUFFER_TENSOR_DESC, calc_buffer_tensor_size
from .weights import Taps, forward_taps, gradient_taps

__version__ = "0.1.0"
__all__ = [
    "AxisMap", "Mode", "Resampling", "Rounding", "DML_CONVOLUTION_OPERATOR_DESC", "DML_AXIS_DIRECTION",
    "DML_INTERPOLATION_MODE", "DML_TENSOR_DATA_TYPE", "ConversionError", "DescError",
    "DML_RESAMPLE1_OPERATOR_DESC", "DML_RESAMPLE2_OPERATOR_DESC", "DML_RESAMPLE3_OPERATOR_DESC",
    "DML_RESAMPLE_GRAD1_OPERATOR_DESC", "DML_RESAMPLE_GRAD_OPERATOR_DESC", "half_pixel", "DML_BUFFER_TENSOR_DESC",
    "calc_buffer_tensor_size", "Taps", "forward_taps", "gradient_taps",
]
