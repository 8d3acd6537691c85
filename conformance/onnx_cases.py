"""The ONNX Resize backend cases shipped in the installed onnx package, named after their export functions."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from onnx import NodeProto, helper


@dataclass
class OnnxCase:
    """One of onnx's Resize backend test cases: the node, its inputs X/roi/scales/sizes and onnx's expected Y."""
    name: str              # the export function, e.g. export_resize_upsample_scales_linear
    node: NodeProto
    x: np.ndarray
    roi: list[float] | None
    scales: list[float] | None
    sizes: list[int] | None
    expected: np.ndarray

    @property
    def attributes(self) -> dict:
        """The node's attributes as a plain dict (strings decoded)."""
        out = {}
        for a in self.node.attribute:
            v = helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, list) else v)
        return out


@lru_cache(maxsize=1)
def onnx_resize_cases() -> tuple:
    """Every Resize backend case shipped with the installed onnx (39 in onnx 1.16), by export function."""
    from onnx.backend.test.case.node import resize as module
    captured, cases = [], []
    original = module.expect
    module.expect = lambda node, inputs, outputs, name, **kw: captured.append((node, inputs, outputs))
    try:
        for fn in sorted(n for n in dir(module.Resize) if n.startswith("export")):
            start = len(captured)
            getattr(module.Resize, fn)()
            for node, inputs, outputs in captured[start:]:
                it = iter(inputs)
                ins: list[Any] = [next(it) if n else None for n in node.input] + [None] * 4   # None: omitted
                roi, scales, sizes = (None if v is None else v.tolist() for v in ins[1:4])
                cases.append(OnnxCase(fn, node, ins[0], roi, scales, sizes, outputs[0]))
    finally:
        module.expect = original
    return tuple(cases)


def case_to_resize(case: OnnxCase, opset: int = 19):
    """The case as an OnnxResize description (at `opset`)."""
    from dml_desc.conventions.onnx import OnnxResize
    return OnnxResize(list(case.x.shape), case.attributes, case.roi, case.scales, case.sizes, opset=opset)
