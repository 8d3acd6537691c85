"""Test helper: recognise onnxruntime's own refusal of an ai.onnx opset it does not support, by its exact text."""
import re


def refuses_opset(error: Exception, opset: int) -> bool:
    """True when `error` is onnxruntime's model-load refusal of ai.onnx `opset` (model_load_utils.h
    ValidateOpsetForDomain; measured on 1.19.2 with opset 22 and 1.32.0 with opset 29), false for any other error."""
    return re.search(r"ValidateOpsetForDomain\b.*ONNX Runtime only \*guarantees\* support for models stamped with "
                     rf"official released onnx opset versions\. Opset {opset} is under development", str(error),
                     re.S) is not None
