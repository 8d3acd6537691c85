"""The Emitter every form writes its nodes with, and the placeholder for dims known only at run time."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper


class SymbolicDim(int):
    """A dim known only at run time, on an axis the node does not resize: 1 in arithmetic (the forms only
    carry it along), read from the tensor's shape where Emitter.reshape needs it."""

    axis: int

    def __new__(cls, axis: int):
        dim = super().__new__(cls, 1)
        dim.axis = axis
        return dim

    def __repr__(self):
        return f"SymbolicDim(axis={self.axis})"


def symbolic_dim(axis: int) -> SymbolicDim:
    """A placeholder for the size of axis `axis` that is only known at run time (read from Shape())."""
    return SymbolicDim(axis)


def is_symbolic(n) -> bool:
    """True when `n` is a SymbolicDim rather than an int."""
    return isinstance(n, SymbolicDim)


@dataclass
class Emitter:
    """Accumulates nodes and initializers under one name prefix."""
    prefix: str
    opset: int
    acc: type[np.floating]
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    count: int = 0
    dims_from: str = ""   # a tensor whose shape gives the run-time (symbolic) dims, by axis

    def name(self, what: str) -> str:
        """A fresh tensor name under the prefix: `<prefix>_<what><k>`."""
        self.count += 1
        return f"{self.prefix}_{what}{self.count}"

    def const(self, value, what: str, dtype=None) -> str:
        """Add an initializer holding `value` (in `dtype`, default the accumulation type); returns its name."""
        name = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype or self.acc), name))
        return name

    def node(self, op: str, inputs: list, what: str, **attrs) -> str:
        """Add one `op` node reading `inputs` with `attrs`; returns its output's name."""
        out = self.name(what)
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def rename(self, src: str, final: str) -> None:
        """Make the node that produced `src` write `final` directly (no trailing copy); an Identity when no node
        of ours produced it (an identity map: dX is dY)."""
        last = next((n for n in reversed(self.nodes) if src in n.output), None)
        if last is None:
            self.nodes.append(helper.make_node("Identity", [src], [final]))
            return
        last.output[list(last.output).index(src)] = final

    def reduce_sum(self, src: str, axes: list, keepdims: int = 0) -> str:
        """ReduceSum over `axes` (an input from opset 13, an attribute before)."""
        if self.opset >= 13:
            return self.node("ReduceSum", [src, self.const(axes, "axes", np.int64)], "sum", keepdims=keepdims)
        return self.node("ReduceSum", [src], "sum", axes=axes, keepdims=keepdims)

    def pad(self, src: str, pads: list) -> str:
        """Zero padding; the pads input exists from opset 11, an attribute before."""
        if self.opset >= 11:
            return self.node("Pad", [src, self.const(pads, "pads", np.int64)], "padded")
        return self.node("Pad", [src], "padded", pads=pads)

    def zeros(self, shape: str) -> str:
        """Zeros of the accumulation type, of the shape tensor `shape`."""
        return self.node("ConstantOfShape", [shape], "zeros", value=numpy_helper.from_array(np.zeros(1, self.acc)))

    def lengthened(self, src: str, zero_shape: str, axis: int) -> str:
        """`src` with the zeros of shape `zero_shape` appended on `axis` (a Concat: faster than a Pad,
        onnx_ops.forms.padded)."""
        return self.node("Concat", [src, self.zeros(zero_shape)], "lengthened", axis=axis)

    def crop(self, src: str, axes: list, ends: list) -> str:
        """The first `ends[k]` rows of `src` on each of `axes`, in one Slice."""
        if self.opset >= 10:
            return self.node("Slice", [src] + [self.const(v, what, np.int64) for v, what in
                                              (([0] * len(axes), "start"), (ends, "end"), (axes, "axis"))], "part")
        return self.node("Slice", [src], "part", starts=[0] * len(axes), ends=ends, axes=axes)

    def reshape(self, src: str, shape: list) -> str:
        """Reshape `src` to `shape` (symbolic dims read at run time)."""
        return self.node("Reshape", [src, self.shape(shape)], "view")

    def shape(self, shape: list) -> str:
        """A shape input: a constant, or with symbolic dims read from Shape(dims_from) at run time."""
        if not any(is_symbolic(n) for n in shape):
            return self.const(shape, "shape", np.int64)
        dims = self.node("Shape", [self.dims_from], "dims")
        parts = [self.node("Gather", [dims, self.const([n.axis], "axis", np.int64)], "dim")
                 if is_symbolic(n) else self.const([n], "size", np.int64) for n in shape]
        return self.node("Concat", parts, "shape", axis=0)

    def subgraph(self, build, inputs: Sequence[ValueInfoProto] = ()):
        """A subgraph (an If branch, a Loop body) of the nodes `build` emits; `build` returns its outputs as
        (name, element type, rank), rank None where the branches of an If give different ranks. The constants it
        made become Constant nodes inside it, so every initializer of the model stays used by a node of the main
        graph (tools that prune initializers look there only)."""
        outer, self.nodes, first_init = self.nodes, [], len(self.inits)
        try:
            outputs = build()
            nodes = self.nodes
        finally:
            self.nodes = outer
        consts = [helper.make_node("Constant", [], [t.name], value=t) for t in self.inits[first_init:]]
        del self.inits[first_init:]
        return helper.make_graph(consts + nodes, self.name("branch"), list(inputs),
                                 [helper.make_tensor_value_info(name, elem, None if rank is None else [None] * rank)
                                  for name, elem, rank in outputs])

    def scale(self, src: str, factor: float) -> str:
        """`src` multiplied by `factor` (no node when it is 1)."""
        return src if factor == 1 else self.node("Mul", [src, self.const(factor, "factor")], "scaled")


def cast_wrapped(em: Emitter, node, elem: int, compute):
    """Write dX = compute(dY) to `node`'s output and return what `compute` returns beside the tensor name
    (`compute(dy) -> (name, extra)`): float16 runs in float32 (a Cast in, a Cast out); the other types have the
    last node write dX itself (no trailing copy)."""
    cur = node.input[0]
    if elem == TensorProto.FLOAT16:
        cur = em.node("Cast", [cur], "f32", to=TensorProto.FLOAT)
    cur, extra = compute(cur)
    if elem == TensorProto.FLOAT16:
        em.nodes.append(helper.make_node("Cast", [cur], [node.output[0]], to=TensorProto.FLOAT16))
    else:
        em.rename(cur, node.output[0])
    return extra
