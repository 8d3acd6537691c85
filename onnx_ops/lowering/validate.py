"""What the lowering reads and writes, checked: ONNX files, ResizeGrad nodes, and every model before it is saved.

- `load_model` / `parse_model`: an ONNX file or bytes, or a DescError (empty, truncated, not protobuf, no graph).
- `check_resize_grad`: a ResizeGrad node's arity, input types and ranks, outputs and the ai.onnx opset.
- `save_atomic`: write through a temporary file, checked by `check_written` before it replaces the target.
- `check_written`: onnx's checker (full_check=True, with strict shape inference) and an onnxruntime load,
  so the lowering never writes a model either rejects.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

import onnx
from google.protobuf.message import Message
from onnx import TensorProto

from dml_desc.errors import DescError, require
from dml_desc.files import read_region, read_regular, regular_target, write_atomic, write_files

from .walk import graphs

FLOATS = {TensorProto.FLOAT16: "float16", TensorProto.FLOAT: "float", TensorProto.DOUBLE: "double"}
ROI_TYPES = {**FLOATS, TensorProto.BFLOAT16: "bfloat16"}


def parse_model(data: bytes, where: str = "model") -> onnx.ModelProto:
    """An ONNX model from bytes: DescError for empty, truncated or random bytes (naming their size, never
    echoing them: the file may be one the user did not mean to show)."""
    from google.protobuf.message import DecodeError
    require(len(data) > 0, where, "", "is empty: not an ONNX model")
    try:
        model = onnx.load_model_from_string(bytes(data))
    except (DecodeError, RuntimeWarning, ValueError) as e:
        raise DescError(where, f"{len(data)} bytes", f"is not an ONNX model (protobuf: {e})") from None
    require(model.HasField("graph"), where, f"{len(data)} bytes", "is not an ONNX model (it has no graph)")
    return model


def load_model(path: str, load_external_data: bool = False) -> onnx.ModelProto:
    """An ONNX model file (external data is left in place unless asked for, and read relative to the file)."""
    require(isinstance(path, (str, os.PathLike)) and bool(os.fspath(path)), "path", path, "must be a file path")
    path = os.fspath(path)
    require(isinstance(path, str), "path", path, "must be a file path given as text")
    require(os.path.isfile(path), path, path, "is not a file" if os.path.exists(path) else "does not exist")
    model = parse_model(read_regular(path, MAX_PROTOBUF, "ONNX model (protobuf stops at 2 GB; larger models keep "
                                     "their tensors as external data)", "model"), path)
    check_external_data(model, os.path.dirname(os.path.abspath(path)))
    if load_external_data:
        inline_all_external(model, os.path.dirname(os.path.abspath(path)))
    return model


MAX_PROTOBUF = 2 ** 31 - 1       # protobuf's own limit for one message


# Where a tensor sits, as the field names of refusals show it: {field: a function of (item, index) -> text}
_STEPS = {
    "initializer": lambda t, i: f"initializer {t.name}",
    "sparse_initializer": lambda t, i: f"sparse initializer {t.values.name}",
    "node": lambda n, i: f"node {n.name or n.op_type}",
    "attribute": lambda a, i: f".{a.name}",
    "attribute_proto": lambda a, i: f"attribute {a.name}",
    "functions": lambda f, i: f"function {f.name}/",
    "training_info": lambda t, i: f"training_info[{i}].",
    "graph": lambda g, i: "", "t": lambda t, i: "", "sparse_tensor": lambda t, i: "",
    "g": lambda g, i: "/", "graphs": lambda g, i: f"[{i}]/", "tensors": lambda t, i: f"[{i}]",
    "sparse_tensors": lambda t, i: f"[{i}]", "initialization": lambda g, i: "initialization/",
    "algorithm": lambda g, i: "algorithm/", "values": lambda t, i: ".values", "indices": lambda t, i: ".indices",
}
_HOLDS_TENSORS: dict = {}


def all_tensors(message, where: str = ""):
    """(where, TensorProto) for every TensorProto anywhere in `message` (a ModelProto or any part of one), found
    through protobuf's own list of fields: initializers, sparse initializers, attribute tensors (t, tensors,
    sparse_tensor(s), a Constant's value and sparse_value), subgraphs, functions (their nodes and attribute
    defaults) and training_info graphs. A field onnx adds later is walked too."""
    for field, value in message.ListFields():
        if field.message_type is None or not _holds_tensors(field.message_type):
            continue
        repeated = not isinstance(value, Message)      # a repeated field's value is a container
        for i, item in enumerate(value if repeated else [value]):
            step = _STEPS.get(field.name)
            here = where + (step(item, i) if step else f".{field.name}[{i}]" if repeated else f".{field.name}")
            if isinstance(item, TensorProto):
                yield here, item
            else:
                yield from all_tensors(item, here)


def _holds_tensors(descriptor) -> bool:
    """Whether a message of this type can hold a TensorProto at any depth: TensorProto is reachable through its
    fields' types (found once per type)."""
    if descriptor.full_name not in _HOLDS_TENSORS:
        seen, todo = set(), [descriptor]
        while todo:
            d = todo.pop()
            if d.full_name not in seen:
                seen.add(d.full_name)
                todo.extend(f.message_type for f in d.fields if f.message_type is not None)
        _HOLDS_TENSORS[descriptor.full_name] = TensorProto.DESCRIPTOR.full_name in seen
    return _HOLDS_TENSORS[descriptor.full_name]


def external_tensors(model):
    """(where, TensorProto) for every tensor of `model` (anywhere: all_tensors) stored as external data."""
    return ((where, t) for where, t in all_tensors(model) if t.data_location == TensorProto.EXTERNAL)


# The keys onnxruntime reads (`checksum` is accepted and ignored by both onnx and onnxruntime). onnx's own
# `basepath` is refused: onnxruntime 1.19 refuses it ("model format error"), and a second base folder is what
# containment must not have.
EXTERNAL_KEYS = ("location", "offset", "length", "checksum")
MAX_OFFSET = 2 ** 63 - 1          # what onnxruntime's int64 offsets and lengths hold


@dataclass(frozen=True)
class ExternalRef:
    """One external-data reference, read once (external_reference) and used by every check, copy and write."""
    where: str                # the tensor, as refusals name it
    location: str             # as written in the model
    offset: int
    length: int | None
    path: str                 # the data file, resolved after symlinks, inside the model's folder


def external_reference(where: str, tensor, folder: str) -> ExternalRef:
    """`tensor`'s external data, read once: each key at most once and one of EXTERNAL_KEYS; `location` relative,
    without `..`, inside `folder` after symlinks are resolved; offset and length decimal integers."""
    info = {}
    for entry in tensor.external_data:
        require(entry.key in EXTERNAL_KEYS, f"{where}.external_data", entry.key,
                f"is not an external-data key onnxruntime reads (one of {list(EXTERNAL_KEYS)})")
        require(entry.key not in info, f"{where}.external_data", entry.key, "is given twice: readers disagree on "
                "which counts (onnx takes the last); each key may appear once")
        info[entry.key] = entry.value
    location = info.get("location", "")
    require(isinstance(location, str) and location != "", f"{where}.location", location,
            "external data needs a location (a file name relative to the model's folder)")
    require("\0" not in location and not os.path.isabs(location) and not location.startswith(("\\", "/")),
            f"{where}.location", location, "must be a relative path inside the model's folder")
    require(".." not in location.replace("\\", "/").split("/"), f"{where}.location", location,
            "must not leave the model's folder ('..')")
    root = os.path.realpath(folder)
    path = os.path.realpath(os.path.join(root, location))
    require(os.path.commonpath([root, path]) == root and path != root, f"{where}.location", location,
            "resolves (through a symbolic link) outside the model's folder")
    numbers = {}
    for key in ("offset", "length"):
        text = info.get(key)
        require(text is None or (isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 19
                                 and int(text) <= MAX_OFFSET), f"{where}.{key}", text,
                "must be a non-negative integer below 2**63")
        numbers[key] = int(text) if text is not None else None
    return ExternalRef(where, location, numbers["offset"] or 0, numbers["length"], path)


def check_external_data(model: onnx.ModelProto, folder: str, need_files: bool = True) -> list[ExternalRef]:
    """Every external-data reference of `model` (every tensor anywhere in it), read once and checked by the project
    whatever onnx is installed (external_reference); with `need_files`, each names a regular file and its offset
    and length lie inside it. Returns the references; a DescError names the tensor and the rule. Nothing read from
    a data file is ever printed."""
    refs = [external_reference(where, t, folder) for where, t in external_tensors(model)]
    if need_files:
        for ref in refs:
            _check_data_file(ref)
    return refs


def _check_data_file(ref: ExternalRef) -> None:
    try:
        st = os.stat(ref.path)
    except OSError as e:
        raise DescError(f"{ref.where}.location", ref.location, f"cannot be read: {e.strerror} (the data file must lie "
                        "in the model's folder)") from None
    require(stat.S_ISREG(st.st_mode), f"{ref.where}.location", ref.location, "must name a regular file")
    require(ref.offset <= st.st_size, f"{ref.where}.offset", ref.offset, f"lies past the end of the data file "
            f"({st.st_size} bytes)")
    require(ref.length is None or ref.offset + ref.length <= st.st_size, f"{ref.where}.length", ref.length,
            f"reaches past the end of the data file ({st.st_size} bytes from offset {ref.offset})")


def read_external(ref: ExternalRef) -> bytes:
    """The bytes of one checked reference, read from the regular file it names (never a FIFO or device, never
    through a link put there since the check: dml_desc.files.read_region)."""
    return read_region(ref.path, ref.offset, ref.length, f"{ref.where}.location")


def inline_external(where: str, tensor, folder: str) -> None:
    """Read one external tensor's data into it (raw_data), from its reference checked against `folder`."""
    tensor.raw_data = read_external(external_reference(where, tensor, folder))
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def inline_all_external(model: onnx.ModelProto, folder: str) -> None:
    """Every external tensor of `model`, anywhere in it, read in from `folder` (the model file's folder) by the
    project's own checked reader; onnx's loader misses sparse tensors and training_info, and reads a tensor it
    is given no folder for from the working folder."""
    for where, t in list(external_tensors(model)):
        inline_external(where, t, folder)


def check_resize_grad(node, types: dict, opset: int, consts=None) -> None:
    """Raise a DescError naming the node unless it is a ResizeGrad the lowering can replace with valid ops.
    `types` maps tensor names to TypeProto.Tensor (from shape inference), `consts` constant names to arrays or
    TensorProtos (initializers and Constant nodes); `opset` is the ai.onnx version."""
    types = dict(types)
    for name, value in (consts or {}).items():
        types.setdefault(name, _tensor_type(value))
    where = f"node {node.name or node.op_type}"
    require(opset >= 10, f"{where}.opset", opset, "lowering emits ai.onnx ops of opset 10 or later; "
            "the model imports an older ai.onnx")
    ins = list(node.input)
    require(2 <= len(ins) <= 4, f"{where}.inputs", ins, "ResizeGrad takes 2 to 4 inputs (dY, X, roi, scales)")
    require(bool(ins[0]) and bool(ins[1]), f"{where}.inputs", ins, "dY and X must be given")
    outs = list(node.output)
    require(len(outs) == 1, f"{where}.outputs", outs, "ResizeGrad has exactly one output (dX)")
    require(bool(outs[0]), f"{where}.outputs", outs, "the output dX must have a name")
    dy, x = _elem(types, ins[0]), _elem(types, ins[1])
    for role, elem in (("dY", dy), ("X", x)):
        if elem is not None:
            require(elem in FLOATS, f"{where}.{role}", _type_name(elem), "must be float16, float or double")
    if dy is not None and x is not None:
        require(dy == x, f"{where}.dY", _type_name(dy), f"must have X's element type {_type_name(x)}")
    if len(ins) > 2 and ins[2]:
        roi = _elem(types, ins[2])
        require(roi is None or roi in ROI_TYPES, f"{where}.roi", _type_name(roi), "must be a float tensor")
    if len(ins) > 3 and ins[3]:
        scales = _elem(types, ins[3])
        require(scales is None or scales == TensorProto.FLOAT, f"{where}.scales", _type_name(scales),
                "must be float (float32)")
        dims = _dims(types, ins[3])        # its length (X's rank, or len(axes)) is checked when the map is read
        require(dims is None or len(dims) == 1, f"{where}.scales", dims, "must be 1-D")


def _tensor_type(value):
    """A TypeProto.Tensor for a constant (numpy array or TensorProto)."""
    import numpy as np
    from onnx import helper
    if isinstance(value, TensorProto):
        return helper.make_tensor_type_proto(value.data_type, list(value.dims)).tensor_type
    value = np.asarray(value)
    elem = helper.np_dtype_to_tensor_dtype(value.dtype) if value.dtype != object else 0
    return helper.make_tensor_type_proto(elem, list(value.shape)).tensor_type


def _elem(types: dict, name: str):
    t = types.get(name)
    return t.elem_type if t is not None and t.elem_type else None


def _dims(types: dict, name: str):
    t = types.get(name)
    if t is None or not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]


def _type_name(elem) -> str:
    try:
        return TensorProto.DataType.Name(elem)
    except (ValueError, TypeError):
        return str(elem)


def check_written(model, what: str = "lowered model", baseline=None) -> None:
    """onnx's full check and an onnxruntime load (when onnxruntime is importable) of a ModelProto or a file
    path; a DescError names the node or the reason. A file path resolves external data next to the file.
    `baseline` (the model that was rewritten) excuses a failure it already has: e.g. an ORT training graph's
    MaxPoolGrad, which ORT registers in the ai.onnx domain where onnx's checker does not know it."""
    problem = checker_problem(model)
    if problem and _same_failure(problem, model) != _same_failure(checker_problem(baseline), baseline):
        raise DescError(what, _node_of(_first_line(problem)), f"fails onnx's checker: {_first_line(problem)}")
    problem = _ort_problem(model)
    if problem and _same_failure(problem, model) != _same_failure(_ort_problem(baseline), baseline):
        raise DescError(what, _node_of(_first_line(problem)), f"onnxruntime cannot load it: {_first_line(problem)}")


def _same_failure(text: str | None, model) -> str | None:
    """The whole failure text, with the model's own file name (a temporary file, or the input) taken out, so the
    written model's failure is excused only when it is the input's failure in full, not just its first line."""
    if text is None or not isinstance(model, (str, os.PathLike)):
        return text
    path = os.fspath(model)
    return text.replace(path, "<model>").replace(os.path.basename(path), "<model>")


def checker_problem(model) -> str | None:
    """The onnx checker's complaint about `model` (full check), or None when it passes or there is no model."""
    if model is None:
        return None
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, _decode_error(), *READ_ERRORS) as e:
        return str(e).strip() or type(e).__name__
    return None


def _ort_problem(model) -> str | None:
    """onnxruntime's reason for refusing to load `model`, or None (also when onnxruntime is absent, or when the
    only problem is a missing kernel for a node of another domain that we did not write)."""
    if model is None:
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        return None               # onnxruntime is optional: onnx's full check still ran
    if not hasattr(ort, "InferenceSession"):
        return None               # a broken install: onnx_ops.run says so when a model is run
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    source = model if isinstance(model, (str, os.PathLike)) else model.SerializeToString()
    try:
        ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as e:       # onnxruntime raises its own Fail / InvalidGraph / NotImplemented types
        text = re.sub(r"Load model from .*? failed:", "", str(e))     # the same problem, whatever the path
        return None if _foreign_kernel_missing(model, text) else (text.strip() or type(e).__name__)
    return None


def _foreign_kernel_missing(model, text: str) -> bool:
    """onnxruntime lacks a kernel or schema for a non-ai.onnx node (a training graph's other grads, or
    com.microsoft ResizeGrad itself on a build without training ops)."""
    unregistered = re.search(r"([\w.]+):(\w+)\(-?\d+\) is not a registered function/op", text)
    if unregistered:
        return unregistered.group(1) not in ("", "ai.onnx")
    m = re.search(r"Could not find an implementation for (\w+)\((\d+)\) node with name '([^']*)'", text)
    if not m:
        return False
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(model, load_external_data=False)
    node = next((n for n in model.graph.node if n.name == m.group(3) and n.op_type == m.group(1)), None)
    return node is not None and node.domain not in ("", "ai.onnx")


def _node_of(text: str) -> str:
    m = re.search(r"[Nn]ode \(?'?([^)':]+)'?\)?", text)
    return m.group(1).strip() if m else "model"


def _first_line(e) -> str:
    line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return line if len(line) <= 300 else line[:297] + "..."


READ_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeDecodeError)


def readable(what: str, read, *args):
    """`read(*args)`, with the errors onnx's helpers raise on a corrupt model (a tensor whose data does not match
    its shape, an unknown data or attribute type, bytes that are not UTF-8, shape inference failing) as a
    DescError naming `what`."""
    try:
        return read(*args)
    except DescError:
        raise
    except (*READ_ERRORS, onnx.shape_inference.InferenceError, onnx.checker.ValidationError, _decode_error()) as e:
        raise DescError(what, _first_line(e)[:160], f"cannot be read: the model is corrupt or not valid ONNX "
                        f"({type(e).__name__})") from None


def _decode_error():
    from google.protobuf.message import DecodeError
    return DecodeError


def check_text(model) -> None:
    """Every name a lowering reads is text: protobuf hands back bytes for strings that are not UTF-8."""
    for function in model.functions:
        require(all(isinstance(v, str) for v in [function.name, function.domain, *function.input, *function.output]),
                "function", function.name, "has a name that is not UTF-8 text")
        for node in function.node:
            _check_node_text(node)
    for g in graphs(model.graph):
        for node in g.node:
            _check_node_text(node)
        for what, items in (("initializer", g.initializer), ("graph input", g.input), ("graph output", g.output),
                            ("value_info", g.value_info)):
            for t in items:
                require(isinstance(t.name, str), what, t.name, "has a name that is not UTF-8 text")


def _check_node_text(node) -> None:
    for what, value in (("name", node.name), ("op_type", node.op_type), ("domain", node.domain)):
        require(isinstance(value, str), f"node {_text(node.name)}.{what}", value, "is not UTF-8 text")
    for value in list(node.input) + list(node.output):
        require(isinstance(value, str), f"node {_text(node.name)}", value, "names a tensor that is not UTF-8")
    for a in node.attribute:
        require(isinstance(a.name, str), f"node {_text(node.name)}.attribute", a.name, "is not UTF-8 text")


def _text(value) -> str:
    return value if isinstance(value, str) else repr(value)


def save_atomic(model: onnx.ModelProto, path: str, check: bool = True, baseline=None,
                data_files: dict | None = None) -> None:
    """Write through a temporary file in the same folder (dml_desc.files.write_atomic), so `path` is never
    half-written, and only a regular file (or nothing) is replaced. With `check`, the written file must pass onnx's
    full check and load in onnxruntime (check_written) before it replaces `path`; failures `baseline` (the model it
    was rewritten from) already has are excused. A new file gets the mode the umask gives; a rewritten one keeps
    its mode. The model is serialized as it is: onnx's own external-data writer (which appends to and follows
    existing files) is never used, and every external-data reference must stay inside `path`'s folder.
    `data_files` ({plain name: bytes}) are external-data files written beside `path` with it: all are staged and
    checked together (dml_desc.files.write_files), and nothing is written in `path`'s folder unless every check
    passes."""
    require(isinstance(model, onnx.ModelProto), "model", type(model).__name__, "must be an onnx.ModelProto")
    folder, name = os.path.split(os.path.abspath(regular_target(path)))
    check_external_data(model, folder, need_files=False)
    try:
        data = model.SerializeToString()
    except ValueError as e:          # protobuf refuses a message past 2 GB
        raise DescError("model", path, f"cannot be serialized ({e}): store large tensors as external data") from None

    def checked(tmp: str) -> None:
        check_external_data(model, os.path.dirname(tmp))
        if check:
            check_written(tmp, f"model for {path}", baseline)
    if data_files:
        require(name not in data_files, "OUT", path, "is named like its own data file; name another file")
        write_files(folder, {**data_files, name: data}, lambda staging: checked(os.path.join(staging, name)))
    else:
        write_atomic(path, data, checked)
