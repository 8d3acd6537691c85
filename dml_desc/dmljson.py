"""DirectML descriptors <-> JSON objects keyed by directml.h's own field names."""
from __future__ import annotations

from dataclasses import MISSING, fields
from enum import Enum
from typing import TYPE_CHECKING, Any, Union, cast

from .errors import did_you_mean, parse_json, require, short_key
from .convolution import DML_CONVOLUTION_OPERATOR_DESC
from .resample import RESAMPLE_DESCS, ResampleDescriptor, pascal_case
from .tensor import DML_BUFFER_TENSOR_DESC

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Descriptor = Union[ResampleDescriptor, DML_CONVOLUTION_OPERATOR_DESC]    # every class this module reads and writes

DESCS: dict[str, type[Descriptor]] = dict(RESAMPLE_DESCS)
DESCS[DML_CONVOLUTION_OPERATOR_DESC.OPERATOR] = DML_CONVOLUTION_OPERATOR_DESC
DERIVED = {"DimensionCount", "TotalTensorSizeInBytes"}
TENSOR_TYPES = ("DML_TENSOR_TYPE_BUFFER", "BUFFER")   # the only DML_TENSOR_DESC.Type a buffer tensor has


def to_json(desc: Descriptor) -> dict[str, Any]:
    """The JSON object of a DirectML descriptor: {"Operator": "DML_OPERATOR_...", field: value, ...} with
    directml.h's PascalCase field names, enums by name, tensors as nested objects.
    """
    out: dict[str, Any] = {"Operator": desc.OPERATOR}
    out.update(_fields_to_json(desc))
    return out


def _fields_to_json(obj: DataclassInstance) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(obj):
        if not f.compare and f.name == "name":
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        out[pascal_case(f.name)] = _value_to_json(value)
    return out


def _value_to_json(value: object) -> object:
    if isinstance(value, DML_BUFFER_TENSOR_DESC):
        return _fields_to_json(value)
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, tuple):
        return [_value_to_json(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return _fields_to_json(cast("DataclassInstance", value))
    return value


def from_json(obj: object) -> Descriptor:
    """The descriptor object of a JSON object (the inverse of to_json). "Operator" picks the class; every
    field is checked (a DescError names the field; unknown fields get the nearest known name).
    """
    require(isinstance(obj, dict), "descriptor", obj, "must be a JSON object")
    given = cast("dict[str, Any]", obj)
    op = given.get("Operator")
    require(isinstance(op, str) and op in DESCS, "Operator", op, f"must be one of {sorted(DESCS)}")
    operator = cast(str, op)
    # DML_OPERATOR_DESC.Type: optional, and when given it must name the same operator
    require(given.get("Type", operator) == operator, "Type", given.get("Type"),
            f"must equal Operator ({operator}) when given")
    cls = DESCS[operator]
    return cls(**_kwargs(cls, given, operator, ("Operator", "Type")))


def _kwargs(cls: type[DataclassInstance], obj: dict[str, Any], where: str, own: tuple[str, ...] = ()) -> dict[str, Any]:
    names = {pascal_case(f.name): f for f in fields(cls) if f.name != "name"}
    required = [key for key, f in names.items() if f.default is MISSING and f.default_factory is MISSING]
    missing = [key for key in required if key not in obj]
    unknown = sorted((k for k in obj if k not in names and k not in own), key=str)
    require(not unknown, f"{where}.{short_key(unknown[0]) if unknown else ''}",
            obj.get(unknown[0]) if unknown else None,
            f"unknown field{did_you_mean(unknown[0], missing or names) if unknown else ''}; {where} has "
            f"{sorted(names)}")
    require(not missing, f"{where}.{missing[0] if missing else ''}", None, "is required")
    kwargs: dict[str, Any] = {}
    for key, value in obj.items():
        if key in own:
            continue
        f = names[key]
        if f.name.endswith("_tensor") and value is not None:
            require(isinstance(value, dict), f"{where}.{key}", value, "must be a tensor description object")
            require(value.get("Type", "BUFFER") in TENSOR_TYPES, f"{key}.Type", value.get("Type"),
                    f"must be one of {list(TENSOR_TYPES)} when given (a DML_BUFFER_TENSOR_DESC)")
            value = DML_BUFFER_TENSOR_DESC(name=key, **_kwargs(DML_BUFFER_TENSOR_DESC, value, key, ("Type",)))
        kwargs[f.name] = value
    return kwargs


def dumps(desc: Descriptor, **kw: Any) -> str:
    """to_json as a JSON string (keyword arguments go to json.dumps)."""
    import json
    return json.dumps(to_json(desc), **kw)


def loads(text: str | bytes) -> Descriptor:
    """A descriptor from JSON text or UTF-8 bytes (strict: duplicate keys and NaN are refused)."""
    return from_json(parse_json(text))
