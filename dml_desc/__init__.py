"""dml-desc: resampling and transposed-convolution gradients across DirectML, oneDNN, ONNX, PyTorch and TensorFlow."""
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
