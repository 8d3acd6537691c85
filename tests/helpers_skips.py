"""Test helpers for the few documented refusals a test may skip or `assume` past (issue 21): each recognises one
rule by its exact text, so any other error still fails the test."""
import re

from dml_desc.errors import DescError


def refuses_opset(error: Exception, opset: int) -> bool:
    """True when `error` is onnxruntime's model-load refusal of ai.onnx `opset` (model_load_utils.h
    ValidateOpsetForDomain; measured on 1.19.2 with opset 22 and 1.32.0 with opset 29), false for any other error."""
    return re.search(r"ValidateOpsetForDomain\b.*ONNX Runtime only \*guarantees\* support for models stamped with "
                     rf"official released onnx opset versions\. Opset {opset} is under development", str(error),
                     re.S) is not None


def empty_output(error: DescError, field: str) -> bool:
    """True when `error` is to_canonical's refusal of `field` (ONNX "scales", torch "scale_factor") for rounding
    some axis to length 0 (dml_desc/conventions/onnx.py and torch.py), false for any other refusal."""
    return error.field == field and re.fullmatch(r"gives an empty output|give an empty output on axis \d+",
                                                 error.rule) is not None
