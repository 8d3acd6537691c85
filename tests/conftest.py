import numpy as np
import pytest

DOC_EXAMPLE = {
    "Operator": "DML_OPERATOR_RESAMPLE_GRAD",
    "InputGradientTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 3]},
    "OutputGradientTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
    "InterpolationMode": "NEAREST_NEIGHBOR",
    "Scales": [1, 1, 0.5, 1.5],
    "InputPixelOffsets": [0.5, 0.5, 0.5, 0.5],
    "OutputPixelOffsets": [-0.5, -0.5, -0.5, -0.5],
}
X_DOC = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
Y_DOC = np.array([[[[1.0, 1.0, 2.0]]]])
DY_DOC = np.array([[[[4.0, 5.0, 6.0]]]])
# A DML convolution and an ONNX Conv description (ConvTransposeBackwardData), valid as they are.
CONV_DML = {"Operator": "DML_OPERATOR_CONVOLUTION",
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 2, 5, 5]},
            "FilterTensor": {"DataType": "FLOAT32", "Sizes": [3, 2, 3, 3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 3, 3, 3]},
            "Strides": [1, 1], "Dilations": [1, 1], "StartPadding": [0, 0], "EndPadding": [0, 0],
            "OutputPadding": [0, 0]}
CONV_ONNX = {"op_type": "Conv", "input_shape": [1, 4, 5, 5], "weights_shape": [2, 4, 3, 3],
             "attributes": {"strides": [2, 1], "pads": [1, 0, 1, 0]}}
DX_DOC = np.array([[[[9.0, 6.0], [0.0, 0.0]]]])


@pytest.fixture
def doc_example():
    import copy
    return copy.deepcopy(DOC_EXAMPLE)


def torch_or_skip():
    return pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
