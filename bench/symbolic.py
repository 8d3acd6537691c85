"""A model's graph inputs and outputs with every dim but the channels (dim 1) symbolic, as real exports have them."""
import onnx


def make_symbolic(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` itself, each input's and output's dims other than dim 1 renamed to `<name>_<k>` (no fixed size)."""
    for v in list(model.graph.input) + list(model.graph.output):
        for k, d in enumerate(v.type.tensor_type.shape.dim):
            if k != 1:
                d.dim_param = f"{v.name}_{k}"
    return model
