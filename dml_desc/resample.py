"""DML_RESAMPLE1/2/3 and DML_RESAMPLE_GRAD / GRAD1 operator descriptors, field for field."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional, Sequence, Tuple, Union, cast

from .enums import DML_AXIS_DIRECTION, DML_INTERPOLATION_MODE, DML_TENSOR_DATA_TYPE as DT, parse_enum
from .errors import float32_number, integer, require, short_key
from .tensor import DML_BUFFER_TENSOR_DESC

FLOATS = (DT.FLOAT32, DT.FLOAT16)
ALL_TYPES = FLOATS + (DT.INT32, DT.INT16, DT.INT8, DT.UINT32, DT.UINT16, DT.UINT8)
FEATURE_LEVELS = ("1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2", "6_0",
                  "6_1", "6_2", "6_3", "6_4")
LATEST = FEATURE_LEVELS[-1]
# A descriptor's support, newest first: (feature level, dimension counts, data types) per row.
SupportTable = Tuple[Tuple[str, Tuple[int, ...], Tuple[DT, ...]], ...]


def _level(value: object) -> int:
    text = value.upper() if isinstance(value, str) and value.isascii() else ""    # ASCII case only: no 'ﬂ'
    text = text.replace("DML_FEATURE_LEVEL_", "").replace(".", "_")
    require(text in FEATURE_LEVELS, "feature_level", value, f"must be one of {', '.join(FEATURE_LEVELS)}")
    return FEATURE_LEVELS.index(text)


class _ResampleLike:
    """Shared checks. Subclasses name their two tensors and list support per feature level."""
    OPERATOR: ClassVar[str]
    FORWARD_IN: ClassVar[str]      # the field holding the forward input's sizes
    FORWARD_OUT: ClassVar[str]
    SUPPORT: ClassVar[SupportTable]  # newest first
    # The fields every subclass (a dataclass) declares; rounding_direction only where hasattr() finds it.
    interpolation_mode: DML_INTERPOLATION_MODE
    scales: Tuple[float, ...]
    input_pixel_offsets: Tuple[float, ...]
    output_pixel_offsets: Tuple[float, ...]
    dimension_count: Optional[int]
    rounding_direction: DML_AXIS_DIRECTION

    def __post_init__(self) -> None:
        for name in (self.FORWARD_IN, self.FORWARD_OUT):
            setattr(self, name, tensor_desc(getattr(self, name), pascal_case(name)))
        a, b = self.forward_in, self.forward_out
        require(a.data_type == b.data_type, f"{pascal_case(self.FORWARD_OUT)}.DataType", b.data_type.name,
                f"must equal {pascal_case(self.FORWARD_IN)}.DataType={a.data_type.name}")
        require(a.dimension_count == b.dimension_count, f"{pascal_case(self.FORWARD_OUT)}.DimensionCount",
                b.dimension_count, f"must equal {pascal_case(self.FORWARD_IN)}.DimensionCount={a.dimension_count}")
        n = cast(int, a.dimension_count)      # an int once DML_BUFFER_TENSOR_DESC.__post_init__ ran
        self.interpolation_mode = parse_enum(DML_INTERPOLATION_MODE, self.interpolation_mode, "InterpolationMode")
        if hasattr(self, "rounding_direction"):
            self.rounding_direction = parse_enum(DML_AXIS_DIRECTION, self.rounding_direction, "RoundingDirection")
        if self.dimension_count is None:
            self.dimension_count = n
        integer(self.dimension_count, "DimensionCount")
        require(self.dimension_count == n, "DimensionCount", self.dimension_count,
                f"must equal the tensors' DimensionCount={n}")
        self.scales = _floats(self.scales, "Scales", n, positive=True)
        self.input_pixel_offsets = _floats(self.input_pixel_offsets, "InputPixelOffsets", n)
        self.output_pixel_offsets = _floats(self.output_pixel_offsets, "OutputPixelOffsets", n)
        self.check_support(LATEST)

    @property
    def forward_in(self) -> DML_BUFFER_TENSOR_DESC:
        return cast(DML_BUFFER_TENSOR_DESC, getattr(self, self.FORWARD_IN))

    @property
    def forward_out(self) -> DML_BUFFER_TENSOR_DESC:
        return cast(DML_BUFFER_TENSOR_DESC, getattr(self, self.FORWARD_OUT))

    def check_support(self, feature_level: str = LATEST) -> None:
        """Raise unless this feature level supports the dimension count and data type."""
        level = _level(feature_level)
        rows = [r for r in self.SUPPORT if _level(r[0]) <= level]
        require(bool(rows), "feature_level", feature_level,
                f"{self.OPERATOR} needs DML_FEATURE_LEVEL_{self.SUPPORT[-1][0]} or later")
        _, dims, types = rows[0]
        n, dt = self.forward_in.dimension_count, self.forward_in.data_type
        require(n in dims, "DimensionCount", n,
                f"{self.OPERATOR} at feature level {feature_level} supports {list(dims)} dimensions")
        require(dt in types, f"{pascal_case(self.FORWARD_IN)}.DataType", dt.name,
                f"{self.OPERATOR} supports {[t.name for t in types]}")


def tensor_desc(value: object, name: str) -> DML_BUFFER_TENSOR_DESC:
    """`value` (a DML_BUFFER_TENSOR_DESC or a dict of its fields) as a tensor description named `name`."""
    if isinstance(value, DML_BUFFER_TENSOR_DESC):
        value.name = name
        return value
    require(isinstance(value, dict), name, value, "must be a DML_BUFFER_TENSOR_DESC or a dict")
    fields = cast("dict[str, Any]", value)
    known = set(DML_BUFFER_TENSOR_DESC.__dataclass_fields__) - {"name"}
    unknown = sorted((k for k in fields if k not in known), key=str)
    require(not unknown, f"{name}.{short_key(unknown[0]) if unknown else ''}", None,
            f"unknown field; a tensor has {sorted(known)}")
    for needed in ("data_type", "sizes"):
        require(needed in fields, f"{name}.{needed}", None, "is required")
    return DML_BUFFER_TENSOR_DESC(name=name, **fields)


def _floats(values: object, name: str, n: int, positive: bool = False) -> Tuple[float, ...]:
    """DirectML's FLOAT array: each entry a finite float32 (a scale > 0 that does not round to 0)."""
    require(isinstance(values, (list, tuple)), name, values, "must be a list of numbers")
    entries = cast("Sequence[object]", values)
    require(len(entries) == n, name, list(entries), f"must have DimensionCount={n} entries")
    return tuple(float32_number(v, f"{name}[{i}]", positive) for i, v in enumerate(entries))


def pascal_case(snake: str) -> str:
    """'input_gradient_tensor' -> 'InputGradientTensor': a field's name as DirectML spells it."""
    return "".join(w.capitalize() for w in snake.split("_"))


_RESAMPLE_SUPPORT: SupportTable = (("5_1", (1, 2, 3, 4), ALL_TYPES), ("2_1", (4,), FLOATS))
_GRAD_SUPPORT: SupportTable = (("5_1", (1, 2, 3, 4), FLOATS), ("3_0", (4,), FLOATS))


@dataclass
class DML_RESAMPLE1_OPERATOR_DESC(_ResampleLike):
    """directml.h DML_RESAMPLE1_OPERATOR_DESC, field for field (snake_case; JSON uses the PascalCase names).
    Per axis, Scales is output size / input size and input coordinate x maps to output coordinate
    (x + InputPixelOffsets) * Scales + OutputPixelOffsets, in pixels (0.5 / -0.5: half-pixel centers).
    Nearest rounds half down. Sizes follow the tensor's own layout (usually NCHW).
    """
    input_tensor: DML_BUFFER_TENSOR_DESC
    output_tensor: DML_BUFFER_TENSOR_DESC
    interpolation_mode: DML_INTERPOLATION_MODE
    scales: Tuple[float, ...]
    input_pixel_offsets: Tuple[float, ...]
    output_pixel_offsets: Tuple[float, ...]
    dimension_count: Optional[int] = None
    OPERATOR: ClassVar[str] = "DML_OPERATOR_RESAMPLE1"
    FORWARD_IN: ClassVar[str] = "input_tensor"
    FORWARD_OUT: ClassVar[str] = "output_tensor"
    SUPPORT: ClassVar[SupportTable] = _RESAMPLE_SUPPORT


@dataclass
class DML_RESAMPLE2_OPERATOR_DESC(DML_RESAMPLE1_OPERATOR_DESC):
    """directml.h DML_RESAMPLE2_OPERATOR_DESC: RESAMPLE1 plus RoundingDirection for nearest
    (INCREASING rounds the coordinate up, DECREASING down).
    """
    rounding_direction: DML_AXIS_DIRECTION = DML_AXIS_DIRECTION.INCREASING
    OPERATOR: ClassVar[str] = "DML_OPERATOR_RESAMPLE2"
    SUPPORT: ClassVar[SupportTable] = (("5_1", (1, 2, 3, 4), ALL_TYPES),)


@dataclass
class DML_RESAMPLE3_OPERATOR_DESC(DML_RESAMPLE2_OPERATOR_DESC):
    """directml.h DML_RESAMPLE3_OPERATOR_DESC: RESAMPLE2 plus Antialiased."""
    antialiased: bool = False
    OPERATOR: ClassVar[str] = "DML_OPERATOR_RESAMPLE3"
    SUPPORT: ClassVar[SupportTable] = (("6_4", (1, 2, 3, 4), ALL_TYPES),)

    def __post_init__(self) -> None:
        require(isinstance(self.antialiased, bool), "Antialiased", self.antialiased, "must be a boolean")
        super().__post_init__()


@dataclass
class DML_RESAMPLE_GRAD_OPERATOR_DESC(_ResampleLike):
    """directml.h DML_RESAMPLE_GRAD_OPERATOR_DESC: the gradient of RESAMPLE1. InputGradientTensor is dY (the
    forward output's sizes), OutputGradientTensor is dX (the forward input's sizes). Scales and offsets are
    the forward's (the default "forward" offset reading; see dml_desc.conventions.dml).
    """
    input_gradient_tensor: DML_BUFFER_TENSOR_DESC
    output_gradient_tensor: DML_BUFFER_TENSOR_DESC
    interpolation_mode: DML_INTERPOLATION_MODE
    scales: Tuple[float, ...]
    input_pixel_offsets: Tuple[float, ...]
    output_pixel_offsets: Tuple[float, ...]
    dimension_count: Optional[int] = None
    OPERATOR: ClassVar[str] = "DML_OPERATOR_RESAMPLE_GRAD"
    FORWARD_IN: ClassVar[str] = "output_gradient_tensor"    # dX has the forward input's sizes
    FORWARD_OUT: ClassVar[str] = "input_gradient_tensor"    # dY has the forward output's sizes
    SUPPORT: ClassVar[SupportTable] = _GRAD_SUPPORT


@dataclass
class DML_RESAMPLE_GRAD1_OPERATOR_DESC(DML_RESAMPLE_GRAD_OPERATOR_DESC):
    """directml.h DML_RESAMPLE_GRAD1_OPERATOR_DESC: RESAMPLE_GRAD plus RoundingDirection for nearest."""
    rounding_direction: DML_AXIS_DIRECTION = DML_AXIS_DIRECTION.INCREASING
    OPERATOR: ClassVar[str] = "DML_OPERATOR_RESAMPLE_GRAD1"
    SUPPORT: ClassVar[SupportTable] = (("5_1", (1, 2, 3, 4), FLOATS),)


# Any of the five resampling descriptors (type hints).
ResampleDescriptor = Union[DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE2_OPERATOR_DESC, DML_RESAMPLE3_OPERATOR_DESC,
                           DML_RESAMPLE_GRAD_OPERATOR_DESC, DML_RESAMPLE_GRAD1_OPERATOR_DESC]
RESAMPLE_DESCS: dict[str, type[ResampleDescriptor]] = {c.OPERATOR: c for c in (
    DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE2_OPERATOR_DESC, DML_RESAMPLE3_OPERATOR_DESC,
    DML_RESAMPLE_GRAD_OPERATOR_DESC, DML_RESAMPLE_GRAD1_OPERATOR_DESC)}


def half_pixel(cls: type[ResampleDescriptor], mode: DML_INTERPOLATION_MODE, in_sizes: Sequence[int],
               out_sizes: Sequence[int], data_type: DT = DT.FLOAT32, **extra: Any) -> ResampleDescriptor:
    """A descriptor with DirectMLX's defaults: Scales = out/in, offsets 0.5 / -0.5."""
    require(cls in RESAMPLE_DESCS.values(), "cls", cls, f"must be one of {sorted(RESAMPLE_DESCS)}")
    for name, sizes in (("in_sizes", in_sizes), ("out_sizes", out_sizes)):
        require(isinstance(sizes, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                                         for v in sizes), name, sizes, "must be a list of sizes >= 1")
    require(len(in_sizes) == len(out_sizes), "out_sizes", out_sizes, f"must have {len(in_sizes)} entries")
    n = len(in_sizes)
    tensors = {cls.FORWARD_IN: DML_BUFFER_TENSOR_DESC.packed(data_type, in_sizes),
               cls.FORWARD_OUT: DML_BUFFER_TENSOR_DESC.packed(data_type, out_sizes)}
    build: Callable[..., ResampleDescriptor] = cls     # __post_init__ turns the lists into tuples
    return build(interpolation_mode=mode, scales=[o / i for o, i in zip(out_sizes, in_sizes)],
                 input_pixel_offsets=[0.5] * n, output_pixel_offsets=[-0.5] * n, **tensors, **extra)
