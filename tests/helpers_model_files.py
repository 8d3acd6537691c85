"""Builders for the model-file tests (test_file_safety.py, test_model_file_attacks.py): a ResizeGrad model whose
tensors live in a data file, a secret outside its folder, and edits of external-data references."""
import onnx
from onnx import helper

from tests.helpers_bad_input import resize_grad_model

SECRET = b"root:x:0:0:root:/root:/bin/bash\n" * 4


def external_model(folder, location="m.data", threshold=0, keep_scales=False, model=None):
    """A ResizeGrad model (or `model`) whose scales (and every initializer) live in `folder/location`. With
    `keep_scales`, the scales are also a graph output (through an Identity), so the lowered model keeps them as
    external data."""
    folder.mkdir(exist_ok=True)
    model = model or resize_grad_model()
    if keep_scales:
        model.graph.node.append(helper.make_node("Identity", ["scales"], ["scales_out"], name="keep"))
        model.graph.output.append(helper.make_tensor_value_info("scales_out", onnx.TensorProto.FLOAT, [4]))
    onnx.save(model, str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location=location, size_threshold=threshold)
    return folder / "m.onnx"


def set_location(path, location, offset=None):
    model = onnx.load(str(path), load_external_data=False)
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
            if e.key == "offset" and offset is not None:
                e.value = str(offset)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def secret_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "passwd").write_bytes(SECRET)
    return outside / "passwd"


def external_tensor(name, location, values=(1.0, 2.0), dtype=onnx.TensorProto.FLOAT):
    """A tensor whose data is said to lie in `location` (nothing is read or written)."""
    t = helper.make_tensor(name, dtype, [len(values)], list(values))
    del t.float_data[:]
    del t.int64_data[:]
    t.data_location = onnx.TensorProto.EXTERNAL
    t.external_data.add(key="location", value=str(location))
    t.external_data.add(key="offset", value="0")
    t.external_data.add(key="length", value=str(4 * len(values) if dtype == onnx.TensorProto.FLOAT else
                                                8 * len(values)))
    return t
