"""DML_CONVOLUTION_OPERATOR_DESC, field for field, with DirectML's documented rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Sequence, Tuple, cast

from .enums import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE, DML_TENSOR_DATA_TYPE as DT, parse_enum
from .errors import integer, require
from .resample import pascal_case, tensor_desc
from .tensor import DML_BUFFER_TENSOR_DESC


def conv_out_size(n_in: int, k: int, stride: int, dilation: int, begin: int, end: int) -> int:
    """Forward convolution: floor((in + begin + end - (d*(k-1)+1)) / s) + 1."""
    return (n_in + begin + end - (dilation * (k - 1) + 1)) // stride + 1


def deconv_out_size(n_in: int, k: int, stride: int, dilation: int, begin: int, end: int, out_pad: int) -> int:
    """Transposed convolution: s*(in-1) + d*(k-1)+1 - begin - end + output_padding."""
    return stride * (n_in - 1) + dilation * (k - 1) + 1 - begin - end + out_pad


def _ints(values: object, name: str, n: int, minimum: int) -> Tuple[int, ...]:
    require(isinstance(values, (list, tuple)) and len(values) == n, name, values,
            f"must have DimensionCount={n} entries")
    entries = cast("Sequence[object]", values)
    for i, v in enumerate(entries):
        number = integer(v, f"{name}[{i}]", minimum)
        require(number <= 2 ** 32 - 1, f"{name}[{i}]", v, "must fit a UINT (at most 2^32-1)")
    return cast("Tuple[int, ...]", tuple(entries))


@dataclass
class DML_CONVOLUTION_OPERATOR_DESC:
    """directml.h DML_CONVOLUTION_OPERATOR_DESC, checked as DirectML validates it (tensor ranks, channel
    counts, output sizes). Strides, dilations and paddings are per spatial axis, in elements; tensors are
    NCHW / NCDHW. The data gradient of a transposed convolution is this op with Direction FORWARD and
    Mode CROSS_CORRELATION (see dml_desc.conventions.deconv).
    """
    input_tensor: DML_BUFFER_TENSOR_DESC
    filter_tensor: DML_BUFFER_TENSOR_DESC
    output_tensor: DML_BUFFER_TENSOR_DESC
    strides: Tuple[int, ...]
    dilations: Tuple[int, ...]
    start_padding: Tuple[int, ...]
    end_padding: Tuple[int, ...]
    output_padding: Tuple[int, ...]
    mode: DML_CONVOLUTION_MODE = DML_CONVOLUTION_MODE.CROSS_CORRELATION
    direction: DML_CONVOLUTION_DIRECTION = DML_CONVOLUTION_DIRECTION.FORWARD
    group_count: int = 1
    bias_tensor: Optional[DML_BUFFER_TENSOR_DESC] = None
    dimension_count: Optional[int] = None
    fused_activation: Optional[dict[str, Any]] = None
    OPERATOR: ClassVar[str] = "DML_OPERATOR_CONVOLUTION"

    def __post_init__(self) -> None:
        for name in ("input_tensor", "filter_tensor", "output_tensor"):
            setattr(self, name, tensor_desc(getattr(self, name), pascal_case(name)))
        if self.bias_tensor is not None:
            self.bias_tensor = tensor_desc(self.bias_tensor, "BiasTensor")
        self.mode = parse_enum(DML_CONVOLUTION_MODE, self.mode, "Mode")
        self.direction = parse_enum(DML_CONVOLUTION_DIRECTION, self.direction, "Direction")
        require(self.fused_activation is None, "FusedActivation", self.fused_activation,
                "must be empty (fused activations are outside this library's scope)")
        self._check_tensors()
        n = cast(int, self.input_tensor.dimension_count) - 2     # an int once the tensor's __post_init__ ran
        if self.dimension_count is None:
            self.dimension_count = n
        integer(self.dimension_count, "DimensionCount")
        require(self.dimension_count == n, "DimensionCount", self.dimension_count,
                f"must equal the tensors' spatial dimension count {n}")
        self.strides = _ints(self.strides, "Strides", n, 1)
        self.dilations = _ints(self.dilations, "Dilations", n, 1)
        self.start_padding = _ints(self.start_padding, "StartPadding", n, 0)
        self.end_padding = _ints(self.end_padding, "EndPadding", n, 0)
        self.output_padding = _ints(self.output_padding, "OutputPadding", n, 0)
        self._check_channels_and_sizes()

    def _check_tensors(self) -> None:
        t = (self.input_tensor, self.filter_tensor, self.output_tensor)
        require(t[0].dimension_count in (3, 4, 5), "InputTensor.DimensionCount", t[0].dimension_count,
                "DirectML convolution takes 3-, 4- or 5-D tensors (1 to 3 spatial dimensions)")
        for name, tensor in zip(("FilterTensor", "OutputTensor"), t[1:]):
            require(tensor.dimension_count == t[0].dimension_count, f"{name}.DimensionCount",
                    tensor.dimension_count, f"must equal InputTensor.DimensionCount={t[0].dimension_count}")
            require(tensor.data_type == t[0].data_type, f"{name}.DataType", tensor.data_type.name,
                    f"must equal InputTensor.DataType={t[0].data_type.name}")
        require(t[0].data_type in (DT.FLOAT32, DT.FLOAT16), "InputTensor.DataType", t[0].data_type.name,
                "DirectML convolution supports FLOAT32 and FLOAT16")

    def _check_channels_and_sizes(self) -> None:
        g, n = self.group_count, cast(int, self.dimension_count)      # n: set and checked by __post_init__
        require(isinstance(g, int) and not isinstance(g, bool) and g >= 1, "GroupCount", g, "must be an integer >= 1")
        x, w, y = self.input_tensor.sizes, self.filter_tensor.sizes, self.output_tensor.sizes
        forward = self.direction is DML_CONVOLUTION_DIRECTION.FORWARD
        require(x[1] % g == 0, "InputTensor.Sizes", list(x), f"channels {x[1]} are not divisible by GroupCount={g}")
        require(y[1] % g == 0, "OutputTensor.Sizes", list(y), f"channels {y[1]} are not divisible by GroupCount={g}")
        want = (y[1], x[1] // g) if forward else (x[1], y[1] // g)
        require(tuple(w[:2]) == want, "FilterTensor.Sizes", list(w),
                f"must start with {list(want)} ({'[OC, IC/groups]' if forward else '[IC, OC/groups]'})")
        require(y[0] == x[0], "OutputTensor.Sizes", list(y), f"batch must equal InputTensor's {x[0]}")
        for i in range(n):
            args = (w[2 + i], self.strides[i], self.dilations[i], self.start_padding[i], self.end_padding[i])
            size = conv_out_size(x[2 + i], *args) if forward else deconv_out_size(x[2 + i], *args,
                                                                                self.output_padding[i])
            require(y[2 + i] == size, "OutputTensor.Sizes", list(y),
                    f"spatial dim {i} must be {size} by the {'convolution' if forward else 'transposed'} formula")
            if forward:
                require(self.output_padding[i] == 0, "OutputPadding", list(self.output_padding),
                        "applies only with Direction=BACKWARD")
            else:
                require(self.output_padding[i] < max(self.strides[i], self.dilations[i]), "OutputPadding",
                        list(self.output_padding), "each entry must be smaller than the stride or the dilation")
        if self.bias_tensor is not None:
            b, bias_sizes = self.bias_tensor, [1, y[1]] + [1] * n
            require(b.dimension_count == len(y), "BiasTensor.DimensionCount", b.dimension_count,
                    f"must equal OutputTensor.DimensionCount={len(y)}")
            require(list(b.sizes) == bias_sizes, "BiasTensor.Sizes", list(b.sizes), f"must be {bias_sizes}")
            require(b.data_type == self.output_tensor.data_type, "BiasTensor.DataType", b.data_type.name,
                    f"must equal OutputTensor.DataType={self.output_tensor.data_type.name}")
