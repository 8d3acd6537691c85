"""DirectML descriptors <-> JSON objects keyed by directml.h's own field names."""
from __future__ import annotations

from dataclasses import MISSING, fields
from enum import Enum

from .errors import DescError, require
from .convolution import DML_CONVOLUTION_OPERATOR_DESC
from .resample import RESAMPLE_DESCS, _pascal
from .tensor import DML_BUFFER_TENSOR_DESC

DESCS = dict(RESAMPLE_DESCS)
DESCS[DML_CONVOLUTION_OPERATOR_DESC.OPERATOR] = DML_CONVOLUTION_OPERATOR_DESC
DERIVED = {"DimensionCount", "TotalTensorSizeInBytes"}


def to_json(desc) -> dict:
    out = {"Operator": desc.OPERATOR}
    out.update(_fields_to_json(desc))
    return out


def _fields_to_json(obj) -> dict:
    out = {}
    for f in fields(obj):
        if not f.compare and f.name == "name":
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        out[_pascal(f.name)] = _value_to_json(value)
    return out


def _value_to_json(value):
    if isinstance(value, DML_BUFFER_TENSOR_DESC):
        return _fields_to_json(value)
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, tuple):
        return [_value_to_json(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return _fields_to_json(value)
    return value


def from_json(obj: dict):
    require(isinstance(obj, dict), "descriptor", obj, "must be a JSON object")
    op = obj.get("Operator")
    require(isinstance(op, str) and op in DESCS, "Operator", op, f"must be one of {sorted(DESCS)}")
    cls = DESCS[op]
    return cls(**_kwargs(cls, obj, op))


def _kwargs(cls, obj: dict, where: str) -> dict:
    names = {_pascal(f.name): f for f in fields(cls) if f.name != "name"}
    required = [key for key, f in names.items() if f.default is MISSING and f.default_factory is MISSING]
    missing = [key for key in required if key not in obj]
    require(not missing, f"{where}.{missing[0] if missing else ''}", None, "is required")
    unknown = sorted(set(obj) - set(names) - {"Operator", "Type"})
    require(not unknown, f"{where}.{unknown[0] if unknown else ''}", obj.get(unknown[0]) if unknown else None,
            f"unknown field; {where} has {sorted(names)}")
    kwargs = {}
    for key, value in obj.items():
        if key in ("Operator", "Type"):
            continue
        f = names[key]
        if f.name.endswith("_tensor") and value is not None:
            require(isinstance(value, dict), f"{where}.{key}", value, "must be a tensor description object")
            value = DML_BUFFER_TENSOR_DESC(name=key, **_kwargs(DML_BUFFER_TENSOR_DESC, value, key))
        kwargs[f.name] = value
    return kwargs


def dumps(desc, **kw) -> str:
    import json
    return json.dumps(to_json(desc), **kw)


def loads(text: str):
    import json
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise DescError("json", text[:60], f"is not valid JSON ({e})") from None
    return from_json(obj)
