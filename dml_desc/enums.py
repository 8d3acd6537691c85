"""DirectML enums with their directml.h numeric values."""
from enum import IntEnum
from typing import TypeVar


class DML_TENSOR_DATA_TYPE(IntEnum):
    """directml.h DML_TENSOR_DATA_TYPE; JSON accepts the name with or without the prefix, or the number."""
    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13


class DML_INTERPOLATION_MODE(IntEnum):
    """directml.h DML_INTERPOLATION_MODE: NEAREST_NEIGHBOR or LINEAR (DirectML has no cubic)."""
    NEAREST_NEIGHBOR = 0
    LINEAR = 1


class DML_AXIS_DIRECTION(IntEnum):
    """directml.h DML_AXIS_DIRECTION; RESAMPLE2/3 and GRAD1 use it as RoundingDirection (INCREASING = ceil)."""
    INCREASING = 0
    DECREASING = 1


class DML_TENSOR_FLAGS(IntEnum):
    """directml.h DML_TENSOR_FLAGS."""
    NONE = 0
    OWNED_BY_DML = 1


class DML_CONVOLUTION_MODE(IntEnum):
    """directml.h DML_CONVOLUTION_MODE."""
    CONVOLUTION = 0
    CROSS_CORRELATION = 1


class DML_CONVOLUTION_DIRECTION(IntEnum):
    """directml.h DML_CONVOLUTION_DIRECTION."""
    FORWARD = 0
    BACKWARD = 1


ELEMENT_BYTES = {
    DML_TENSOR_DATA_TYPE.FLOAT32: 4, DML_TENSOR_DATA_TYPE.FLOAT16: 2,
    DML_TENSOR_DATA_TYPE.UINT32: 4, DML_TENSOR_DATA_TYPE.UINT16: 2,
    DML_TENSOR_DATA_TYPE.UINT8: 1, DML_TENSOR_DATA_TYPE.INT32: 4,
    DML_TENSOR_DATA_TYPE.INT16: 2, DML_TENSOR_DATA_TYPE.INT8: 1,
    DML_TENSOR_DATA_TYPE.FLOAT64: 8, DML_TENSOR_DATA_TYPE.UINT64: 8,
    DML_TENSOR_DATA_TYPE.INT64: 8,
}


E = TypeVar("E", bound=IntEnum)


def parse_enum(enum_type: type[E], value: object, field: str) -> E:
    """Accept an enum member, its DML name (with or without the prefix) or its number."""
    from .errors import DescError
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.isascii():     # ASCII case only: 'ﬂoat32'.upper() is 'FLOAT32'
        name = value.upper()
        prefix = enum_type.__name__ + "_"
        name = name[len(prefix):] if name.startswith(prefix) else name
        if name in enum_type.__members__:
            return enum_type[name]
    elif isinstance(value, int) and not isinstance(value, bool) and value in set(enum_type):
        return enum_type(value)
    names = ", ".join(enum_type.__members__)
    raise DescError(field, value, f"must be one of {enum_type.__name__} {{{names}}}")
