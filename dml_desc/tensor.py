"""DML_BUFFER_TENSOR_DESC, sized the way DirectMLX's DMLCalcBufferTensorSize sizes it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from . import budget
from .enums import DML_TENSOR_DATA_TYPE, ELEMENT_BYTES, DML_TENSOR_FLAGS, parse_enum
from .errors import DescError, integer, require

MAX_ELEMENTS = budget.DEFAULT_ELEMENTS     # the default; dml_desc.budget holds the setting
UINT64_MAX = 2 ** 64 - 1
UINT32_MAX = 2 ** 32 - 1


def calc_buffer_tensor_size(data_type: DML_TENSOR_DATA_TYPE, sizes: Sequence[int],
                            strides: Optional[Sequence[int]] = None) -> int:
    """Bytes a buffer needs: last addressed element + 1, rounded up to 4 bytes."""
    data_type = parse_enum(DML_TENSOR_DATA_TYPE, data_type, "DataType")
    require(data_type in ELEMENT_BYTES, "DataType", data_type.name, "has no fixed element size")
    element = ELEMENT_BYTES[data_type]
    sizes = _int_tuple(sizes, "Sizes")
    if strides is not None:
        strides = _int_tuple(strides, "Strides")
        require(len(strides) == len(sizes), "Strides", strides, f"must have {len(sizes)} entries")
    if strides is None:
        count = math.prod(sizes)
    else:
        count = sum((s - 1) * st for s, st in zip(sizes, strides)) + 1
    return (count * element + 3) & ~3


@dataclass
class DML_BUFFER_TENSOR_DESC:
    """directml.h DML_BUFFER_TENSOR_DESC. Sizes in elements (1 to 8 dimensions, outermost first);
    Strides in elements (None: packed); DimensionCount and TotalTensorSizeInBytes are derived when omitted
    and checked when given (DMLCalcBufferTensorSize, rounded up to 4 bytes).
    """
    data_type: DML_TENSOR_DATA_TYPE
    sizes: Tuple[int, ...]
    strides: Optional[Tuple[int, ...]] = None
    flags: DML_TENSOR_FLAGS = DML_TENSOR_FLAGS.NONE
    dimension_count: Optional[int] = None
    total_tensor_size_in_bytes: Optional[int] = None
    guaranteed_base_offset_alignment: int = 0
    name: str = field(default="Tensor", compare=False, repr=False)

    def __post_init__(self) -> None:
        n = self.name
        self.data_type = parse_enum(DML_TENSOR_DATA_TYPE, self.data_type, f"{n}.DataType")
        self.flags = parse_enum(DML_TENSOR_FLAGS, self.flags, f"{n}.Flags")
        self.sizes = _int_tuple(self.sizes, f"{n}.Sizes")
        require(1 <= len(self.sizes) <= 8, f"{n}.Sizes", self.sizes,
                "must have 1 to 8 dimensions (DML_TENSOR_DIMENSION_COUNT_MAX1)")
        require(all(1 <= s <= UINT32_MAX for s in self.sizes), f"{n}.Sizes", self.sizes,
                "every size must be a UINT from 1 to 2^32-1")
        budget.check_shape(self.sizes, f"{n}.Sizes")
        if self.dimension_count is None:
            self.dimension_count = len(self.sizes)
        integer(self.dimension_count, f"{n}.DimensionCount")
        require(self.dimension_count == len(self.sizes), f"{n}.DimensionCount", self.dimension_count,
                f"must equal len(Sizes)={len(self.sizes)}")
        require(self.data_type in ELEMENT_BYTES, f"{n}.DataType", self.data_type.name,
                "has no fixed element size")
        self._check_strides()
        needed = calc_buffer_tensor_size(self.data_type, self.sizes, self.strides)
        if self.total_tensor_size_in_bytes is None:
            self.total_tensor_size_in_bytes = needed
        integer(self.total_tensor_size_in_bytes, f"{n}.TotalTensorSizeInBytes")
        require(self.total_tensor_size_in_bytes <= UINT64_MAX, f"{n}.TotalTensorSizeInBytes",
                self.total_tensor_size_in_bytes, "must fit UINT64 (at most 2^64-1)")
        require(self.total_tensor_size_in_bytes >= needed, f"{n}.TotalTensorSizeInBytes",
                self.total_tensor_size_in_bytes, f"smaller than the {needed} bytes the sizes and strides address")
        a = self.guaranteed_base_offset_alignment
        require(isinstance(a, int) and not isinstance(a, bool) and 0 <= a <= UINT32_MAX and (a & (a - 1)) == 0,
                f"{n}.GuaranteedBaseOffsetAlignment", a, "must be 0 or a power of two (a UINT)")

    def _check_strides(self) -> None:
        if self.strides is None:
            return
        n = self.name
        self.strides = _int_tuple(self.strides, f"{n}.Strides")
        require(len(self.strides) == len(self.sizes), f"{n}.Strides", self.strides,
                f"must have DimensionCount={len(self.sizes)} entries")
        require(all(0 <= s <= UINT32_MAX for s in self.strides), f"{n}.Strides", self.strides,
                "every stride must be a UINT from 0 to 2^32-1")
        span = sum((s - 1) * st for s, st in zip(self.sizes, self.strides)) + 1
        require(span <= budget.max_elements(), f"{n}.Strides", self.strides,
                f"address {span} elements, more than the size budget {budget.max_elements()}")

    @classmethod
    def packed(cls, data_type: DML_TENSOR_DATA_TYPE, sizes: Sequence[int],
               name: str = "Tensor") -> "DML_BUFFER_TENSOR_DESC":
        """A packed tensor (no strides) of `sizes` elements of `data_type`."""
        return cls(data_type=data_type, sizes=tuple(sizes), name=name)


def _int_tuple(values: object, field_name: str) -> Tuple[int, ...]:
    if not isinstance(values, (list, tuple)):
        raise DescError(field_name, values, "must be a list of integers")
    items = tuple(values)
    for i, v in enumerate(items):
        require(isinstance(v, int) and not isinstance(v, bool), f"{field_name}[{i}]", v, "must be an integer")
    return items
