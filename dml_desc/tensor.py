"""DML_BUFFER_TENSOR_DESC, sized the way DirectMLX's DMLCalcBufferTensorSize sizes it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Tuple

from .enums import DML_TENSOR_DATA_TYPE, ELEMENT_BYTES, DML_TENSOR_FLAGS, parse_enum
from .errors import DescError, require

MAX_ELEMENTS = 2 ** 40


def calc_buffer_tensor_size(data_type, sizes, strides=None) -> int:
    """Bytes a buffer needs: last addressed element + 1, rounded up to 4 bytes."""
    element = ELEMENT_BYTES[DML_TENSOR_DATA_TYPE(data_type)]
    if strides is None:
        count = math.prod(sizes)
    else:
        count = sum((s - 1) * st for s, st in zip(sizes, strides)) + 1
    return (count * element + 3) & ~3


@dataclass
class DML_BUFFER_TENSOR_DESC:
    data_type: DML_TENSOR_DATA_TYPE
    sizes: Tuple[int, ...]
    strides: Optional[Tuple[int, ...]] = None
    flags: DML_TENSOR_FLAGS = DML_TENSOR_FLAGS.NONE
    dimension_count: Optional[int] = None
    total_tensor_size_in_bytes: Optional[int] = None
    guaranteed_base_offset_alignment: int = 0
    name: str = field(default="Tensor", compare=False, repr=False)

    def __post_init__(self):
        n = self.name
        self.data_type = parse_enum(DML_TENSOR_DATA_TYPE, self.data_type, f"{n}.DataType")
        self.flags = parse_enum(DML_TENSOR_FLAGS, self.flags, f"{n}.Flags")
        self.sizes = _int_tuple(self.sizes, f"{n}.Sizes")
        require(len(self.sizes) >= 1, f"{n}.Sizes", self.sizes, "must have at least one dimension")
        require(all(s >= 1 for s in self.sizes), f"{n}.Sizes", self.sizes, "every size must be >= 1")
        require(math.prod(self.sizes) <= MAX_ELEMENTS, f"{n}.Sizes", self.sizes,
                f"more than 2^40 elements ({math.prod(self.sizes)})")
        if self.dimension_count is None:
            self.dimension_count = len(self.sizes)
        require(isinstance(self.dimension_count, int) and not isinstance(self.dimension_count, bool),
                f"{n}.DimensionCount", self.dimension_count, "must be an integer")
        require(self.dimension_count == len(self.sizes), f"{n}.DimensionCount", self.dimension_count,
                f"must equal len(Sizes)={len(self.sizes)}")
        require(self.data_type in ELEMENT_BYTES, f"{n}.DataType", self.data_type.name,
                "has no fixed element size")
        self._check_strides()
        needed = calc_buffer_tensor_size(self.data_type, self.sizes, self.strides)
        if self.total_tensor_size_in_bytes is None:
            self.total_tensor_size_in_bytes = needed
        require(isinstance(self.total_tensor_size_in_bytes, int) and not isinstance(
            self.total_tensor_size_in_bytes, bool), f"{n}.TotalTensorSizeInBytes", self.total_tensor_size_in_bytes,
            "must be an integer")
        require(self.total_tensor_size_in_bytes >= needed, f"{n}.TotalTensorSizeInBytes",
                self.total_tensor_size_in_bytes, f"smaller than the {needed} bytes the sizes and strides address")
        a = self.guaranteed_base_offset_alignment
        require(isinstance(a, int) and a >= 0 and (a & (a - 1)) == 0, f"{n}.GuaranteedBaseOffsetAlignment",
                a, "must be 0 or a power of two")

    def _check_strides(self):
        if self.strides is None:
            return
        n = self.name
        self.strides = _int_tuple(self.strides, f"{n}.Strides")
        require(len(self.strides) == len(self.sizes), f"{n}.Strides", self.strides,
                f"must have DimensionCount={len(self.sizes)} entries")
        require(all(s >= 0 for s in self.strides), f"{n}.Strides", self.strides, "strides must be >= 0")
        span = sum((s - 1) * st for s, st in zip(self.sizes, self.strides)) + 1
        require(span <= MAX_ELEMENTS, f"{n}.Strides", self.strides, "address more than 2^40 elements")

    @classmethod
    def packed(cls, data_type, sizes, name="Tensor") -> "DML_BUFFER_TENSOR_DESC":
        return cls(data_type=data_type, sizes=tuple(sizes), name=name)


def _int_tuple(values, field_name: str) -> Tuple[int, ...]:
    try:
        items = tuple(values)
    except TypeError:
        raise DescError(field_name, values, "must be a list of integers") from None
    require(all(isinstance(v, int) and not isinstance(v, bool) for v in items), field_name, values,
            "every entry must be an integer")
    return items
