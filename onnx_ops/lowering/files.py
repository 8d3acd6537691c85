"""Lowering model files: `lower_file` (onnx_ops.lower) reads a model (its external data only from regular files
inside its own folder), lowers it (onnx_ops.lower.lower) and writes it atomically, keeping or moving its external
data.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Sequence

import onnx
from onnx import TensorProto

from dml_desc.errors import DescError, require

from .walk import all_nodes, graphs, is_resize_grad
from .emit import Rewrite
from .validate import check_external_data, external_reference, external_tensors, inline_external, load_model, \
    read_external, save_atomic

NOT_SHOWN = "value read from external data, not shown"


def lower_model_file(lower_model, src: str, dst: str, providers: Sequence[str] = ("CPUExecutionProvider",),
                     semantics: str | None = None, calibration=None) -> list[Rewrite]:
    """onnx_ops.lower.lower_file: read `src`, lower it with `lower_model(model, providers, semantics, calibration)`
    (onnx_ops.lower.lower, above this module) and write `dst`; the contract is lower_file's."""
    try:
        return _lower_file(lower_model, src, dst, providers, semantics, calibration)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:    # onnx's own, reworded
        raise DescError("IN", src, f"is not a valid ONNX model: {str(e).strip().splitlines()[0][:200]}") from e
    except OSError as e:
        if isinstance(e, DescError):
            raise
        from dml_desc.files import FileError
        raise FileError(e.filename or src, e, f"cannot be read or written ({e.strerror or e})") from e


def _lower_file(lower_model, src, dst, providers, semantics, calibration=None) -> list[Rewrite]:
    require(isinstance(dst, (str, os.PathLike)) and bool(os.fspath(dst)), "dst", dst, "must be a file path")
    model = load_model(src)           # a DescError for a folder, an empty, truncated or non-ONNX file
    src_dir, dst_dir = os.path.dirname(os.path.abspath(src)), os.path.dirname(os.path.abspath(dst))
    reads = {ref.path for ref in check_external_data(model, src_dir)}
    require(os.path.realpath(dst) not in reads, "OUT", os.fspath(dst), "is a data file the input model reads; "
            "name another file")
    reading, loaded = _with_resize_grad_constants(model, src_dir)
    from ..training.repair import RepairedRewrites, repair_for_lowering
    with _values_hidden(loaded):
        reading, repairs = repair_for_lowering(reading)     # an ORT training / eval graph: what prepare_artifacts does
        lowered, report = lower_model(reading, providers, semantics, calibration)
    report = RepairedRewrites(report, repairs)
    _keep_references(lowered, model)
    if os.path.realpath(src_dir) == os.path.realpath(dst_dir):
        save_atomic(lowered, dst, baseline=src)     # failures the input already has are not ours
    elif any(True for _ in external_tensors(lowered)):
        name = data_file_name(dst)
        require(os.path.realpath(os.path.join(dst_dir, name)) not in reads | {os.path.realpath(src)}, "OUT",
                os.fspath(dst), f"its data file {name} would replace a file the input model reads; write the model "
                "to another folder or name")
        save_atomic(lowered, dst, baseline=src, data_files={name: _moved_external_data(lowered, src_dir, name)})
    else:
        save_atomic(lowered, dst, baseline=src)
    return report


def data_file_name(dst) -> str:
    """The external-data file written beside a lowered model in another folder: `<its file name>.data`, a plain
    name in its own folder (never a name or sub-folder the model chose)."""
    return os.path.basename(os.path.abspath(dst)) + ".data"


def _keep_references(lowered, model) -> None:
    """The main graph's external initializers keep their references to the input's data files (those loaded to be
    read as constants included): kept as they are into the same folder, moved into another."""
    external = {t.name: t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    for t in lowered.graph.initializer:
        if t.name in external:
            t.CopyFrom(external[t.name])


def _moved_external_data(lowered, src_dir: str, name: str) -> bytearray:
    """Every external tensor `lowered` keeps (anywhere in it), copied into one blob for the data file `name` beside
    the written model, with its reference pointed there. Each source reference is read once, checked
    (onnx_ops.lowering.validate.external_reference) and read from its regular file; nothing is written here."""
    blob = bytearray()
    for where, t in list(external_tensors(lowered)):
        data = read_external(external_reference(where, t, src_dir))
        blob += b"\0" * (-len(blob) % 4096)       # onnx's own alignment for mmap
        offset = len(blob)
        blob += data
        del t.external_data[:]
        for key, value in (("location", name), ("offset", str(offset)), ("length", str(len(data)))):
            t.external_data.add(key=key, value=value)
    return blob


def _with_resize_grad_constants(model, folder: str):
    """(a copy of `model` whose external roi / scales tensors, those ResizeGrad nodes read from initializers or
    Constant nodes, are loaded from `folder`, the model file's own folder, so they lower as the constants they
    are; whether any was loaded)."""
    wanted = {n.input[i] for n in all_nodes(model) if is_resize_grad(n) for i in (2, 3) if len(n.input) > i}
    wanted.discard("")
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    found = [(f"initializer {t.name}", t) for g in graphs(copy.graph) for t in g.initializer if t.name in wanted]
    found += [(f"node {n.name or n.op_type}.value", a.t) for n in all_nodes(copy)
              if n.op_type == "Constant" and list(n.output)[:1] and n.output[0] in wanted
              for a in n.attribute if a.name == "value"]
    loaded = [(where, t) for where, t in found if t.data_location == TensorProto.EXTERNAL]
    for where, t in loaded:
        inline_external(where, t, folder)
    return (copy, True) if loaded else (model, False)


@contextmanager
def _values_hidden(loaded: bool):
    """With constants read from external data (`loaded`), a refusal shows the field and the rule, with numbers
    hidden, never the value: the data file may be one the user did not mean to show."""
    try:
        yield
    except DescError as e:
        from dml_desc.files import FileError
        if not loaded or isinstance(e, FileError):
            raise
        rule = _NUMBER.sub("#", e.rule)
        raise DescError(e.field, NOT_SHOWN, f"{rule} (numbers shown as #: the model reads constants from external "
                        "data)") from None


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
