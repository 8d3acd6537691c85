"""The ConvTransposeBackwardData bridge, for its callers: the forms live in onnx_ops.forms.deconv (integer
upsampling: a depthwise Conv per axis plus border corrections) and onnx_ops.forms.conv_transpose (integer
downsampling: one depthwise ConvTranspose)."""
from .forms.conv_transpose import conv_transpose_form, emit_conv_transpose
from .forms.deconv import (AxisDeconv, axis_deconv, build_bridge_model, combined, deconv_form, emit_conv,
                           emit_deconv, middle_row_kernel)

__all__ = ["AxisDeconv", "axis_deconv", "build_bridge_model", "combined", "conv_transpose_form", "deconv_form",
           "emit_conv", "emit_conv_transpose", "emit_deconv", "middle_row_kernel"]
