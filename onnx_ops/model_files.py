"""Lowering model files: `lower_file` reads a model (its external data only from regular files inside its own
folder), lowers it (onnx_ops.lower) and writes it atomically, keeping or moving its external data.
"""
from __future__ import annotations

import os
from typing import Sequence

import onnx
from onnx import TensorProto

from dml_desc.errors import DescError, require

from .graph_walk import graphs, is_resize_grad
from .node_emit import Rewrite
from .validate import check_external_data, load_model, save_atomic


def lower_file(src: str, dst: str, providers: Sequence[str] = ("CPUExecutionProvider",),
               semantics: str | None = None, calibration=None) -> list[Rewrite]:
    """Lower a model file; `dst` may equal `src`. Written atomically, after onnx's full check and an onnxruntime
    load; external data is kept, and read relative to the model file (not the working directory), only from
    regular files inside the model's folder (onnx_ops.validate.check_external_data). Into another folder, the
    external data is written as a new file beside `dst` (never appended to, never through a symlink); `dst` and
    that file may not be a file the input reads. An
    onnxruntime training or eval graph also gets prepare_artifacts's repairs (training_repair.repair_for_lowering:
    MaxPoolGrad with symbolic dims, eval BatchNorm), listed in the report's `repairs`. Raises only DescError
    subclasses (FileError for the file system)."""
    from .lower import check_providers      # at call time: onnx_ops.lower imports this module for lower_file
    check_providers(providers)
    try:
        return _lower_file(src, dst, providers, semantics, calibration)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:    # onnx's own, reworded
        raise DescError("IN", src, f"is not a valid ONNX model: {str(e).strip().splitlines()[0][:200]}") from e
    except OSError as e:
        if isinstance(e, DescError):
            raise
        from dml_desc.files import FileError
        raise FileError(e.filename or src, e, f"cannot be read or written ({e.strerror or e})") from e


def _lower_file(src, dst, providers, semantics, calibration=None) -> list[Rewrite]:
    require(isinstance(dst, (str, os.PathLike)) and bool(os.fspath(dst)), "dst", dst, "must be a file path")
    model = load_model(src)           # a DescError for a folder, an empty, truncated or non-ONNX file
    src_dir, dst_dir = os.path.dirname(os.path.abspath(src)), os.path.dirname(os.path.abspath(dst))
    reads = {os.path.realpath(f) for f in check_external_data(model, src_dir)}
    require(os.path.realpath(dst) not in reads, "OUT", os.fspath(dst), "is a data file the input model reads; "
            "name another file")
    external = {t.name: t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    reading = _with_resize_grad_constants(model, external, src_dir)
    from .training_repair import RepairedRewrites, repair_for_lowering
    reading, repairs = repair_for_lowering(reading)     # an ORT training / eval graph: what prepare_artifacts does
    from .lower import lower                # at call time, as check_providers
    lowered, report = lower(reading, providers, semantics, calibration)
    report = RepairedRewrites(report, repairs)
    if external and os.path.realpath(src_dir) == os.path.realpath(dst_dir):
        for t in lowered.graph.initializer:       # the data file stays as it is: keep every reference to it
            if t.name in external:
                t.CopyFrom(external[t.name])
    elif external:
        _move_external_data(lowered, external, src_dir, dst_dir, reads | {os.path.realpath(src)})
    save_atomic(lowered, dst, baseline=src)     # failures the input already has are not ours
    return report


def _move_external_data(lowered, external: dict, src_dir: str, dst_dir: str, reads: set) -> None:
    """Copy the external tensors `lowered` keeps into one new data file in `dst_dir` (named like the input's
    first), written atomically, and point the model at it."""
    from dml_desc.files import write_atomic
    location = sorted(_location(t) for t in external.values())[0]
    target = os.path.join(dst_dir, location)
    require(os.path.realpath(target) not in reads, "OUT", target, "the external data would overwrite a file the "
            "input model reads; write the model to another folder")
    blob, offset = bytearray(), 0
    for t in lowered.graph.initializer:
        if t.name not in external:
            continue
        data = _read_external(external[t.name], src_dir)
        pad = -offset % 4096                      # onnx's own alignment for mmap
        blob += b"\0" * pad
        offset += pad
        blob += data
        del t.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
            t.external_data.add(key=key, value=value)
        offset += len(data)
    write_atomic(target, bytes(blob))


def _read_external(tensor, folder: str) -> bytes:
    """The bytes of one external tensor (its reference already checked by check_external_data)."""
    from dml_desc.files import FileError
    info = {e.key: e.value for e in tensor.external_data}
    path = os.path.join(folder, info["location"])
    try:
        with open(path, "rb") as f:
            f.seek(int(info.get("offset", 0)))
            return f.read(int(info["length"])) if "length" in info else f.read()
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror})", f"initializer {tensor.name}.location") from e


def _with_resize_grad_constants(model, external: dict, folder: str):
    """A copy of `model` whose external roi / scales tensors (those ResizeGrad nodes read) are loaded from
    `folder`, the model file's own folder, so they lower as the constants they are."""
    wanted = {n.input[i] for g in graphs(model.graph) for n in g.node if is_resize_grad(n)
              for i in (2, 3) if len(n.input) > i} & set(external)
    if not wanted:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        if t.name in wanted:
            t.raw_data = _read_external(t, folder)
            t.data_location = TensorProto.DEFAULT
            del t.external_data[:]
    return copy


def _location(tensor) -> str:
    return next(e.value for e in tensor.external_data if e.key == "location")
