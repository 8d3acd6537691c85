"""The model generate_cpu_artifacts hands to onnxruntime: from a path or a ModelProto, with its external data.

Below PROTO_LIMIT bytes of external data the model goes as one ModelProto with the data loaded (onnxruntime's
path form loses external data, see generate_from_path); at or above it, by path in a private working folder.
"""
from __future__ import annotations

import contextlib
import copy
import os
import shutil
import tempfile

import numpy as np
import onnx

from dml_desc.errors import require

# Models whose external data add up to less than this are handed to onnxruntime as one ModelProto (its limit is
# protobuf's 2 GB); larger ones go by path (generate_from_path).
PROTO_LIMIT = 2_000_000_000


def read_model(model) -> tuple[onnx.ModelProto, str | None]:
    """The model without its external data, and the folder that data is read from (None for a ModelProto)."""
    if isinstance(model, (str, os.PathLike)):
        from ..lowering.validate import load_model
        path = os.fspath(model)
        require(os.path.isfile(path), "model", path, "must be an ONNX file")
        return load_model(path), os.path.dirname(os.path.abspath(path))
    require(isinstance(model, onnx.ModelProto), "model", type(model).__name__, "must be an onnx.ModelProto or a path")
    return model, None


def _external(proto) -> list:
    """Every tensor of the model stored as external data: initializers, sparse initializers, Constant values
    and other attribute tensors, subgraphs, functions, training_info (validate.external_tensors)."""
    from ..lowering.validate import external_tensors
    return [t for _, t in external_tensors(proto)]


def external_bytes(proto) -> int:
    """The bytes of the model's initializers stored as external data (from their length, else their dims)."""
    return sum(int(next((e.value for e in t.external_data if e.key == "length"), 0)) or
               int(np.prod(t.dims, dtype=np.int64)) * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
               for t in _external(proto))


def with_external_data(proto, folder):
    """A copy of proto with its external data read in from `folder` (the model file's folder), every external
    tensor anywhere in the model, by the project's checked reader (validate.inline_all_external: a location
    inside the folder, a regular file, offset and length inside it). onnx's loader skips sparse and training_info
    tensors, which onnxruntime would then read relative to the working folder."""
    if not _external(proto):
        return proto
    require(folder is not None, "model", "ModelProto", "holds external data references; pass the model's path "
            "(its data is read from the model file's folder) or onnx.load it with its data")
    from ..lowering.validate import inline_all_external
    loaded = copy.deepcopy(proto)
    inline_all_external(loaded, folder)
    return loaded


def generate_from_path(artifacts, proto, folder, kwargs) -> None:
    """Models too large for one ModelProto: onnxruntime's path form, run in a private temporary folder.

    onnxruntime-training 1.19.2's path form saves the model with its data as temp.onnx(.data) in the working
    folder and checks it by path after each block; a nested block deletes the shared temp.onnx.data when it is
    collected, so every model with external data fails. Here the working folder is a private one (removed
    afterwards, with everything in it), the model's data files are linked into it, and the blocks' cleanup waits
    until the artifacts are written."""
    from onnxruntime.training.onnxblock import blocks
    require(folder is not None, "model", "ModelProto", f"has over {PROTO_LIMIT} bytes of external data: pass its path")
    private = tempfile.mkdtemp(prefix="dml-desc-artifacts-")
    cleanup = blocks.Block.__del__
    try:
        for location in {next(e.value for e in t.external_data if e.key == "location") for t in _external(proto)}:
            os.makedirs(os.path.dirname(os.path.join(private, location)) or private, exist_ok=True)
            os.symlink(os.path.join(folder, location), os.path.join(private, location))
        path = os.path.join(private, "model.onnx")
        onnx.save(proto, path)
        blocks.Block.__del__ = lambda self: None
        with _working_folder(private):
            artifacts.generate_artifacts(path, **kwargs)
    finally:
        blocks.Block.__del__ = cleanup
        shutil.rmtree(private, ignore_errors=True)


@contextlib.contextmanager
def _working_folder(folder):
    """contextlib.chdir (Python 3.11+), for 3.10 too."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
