"""One table of conventions, each an object with the same two methods and one result shape.

`CONVENTIONS[(op, fmt)]` holds one object per operator family ("resize": dml, onednn, onnx, torch, tf; "deconv":
ConvTransposeBackwardData in onednn, dml and onnx). Every one has
- `read(obj, **options) -> Reading(canonical, backward, notes, layout)` and
- `write(canonical, backward=True, **options) -> Writing(obj, notes)`,
so `conventions.read` / `write` (and the older `load` / `dump` / `convert`) are walks of this table.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import dmljson
from ..canonical import Resampling
from ..errors import ConversionError, DescError, require
from ..convolution import DML_CONVOLUTION_OPERATOR_DESC
from ..resample import RESAMPLE_DESCS, ResampleDescriptor
from . import deconv, dml, jax, onednn, onnx, tf, torch
from .reading import Convention, Reading, Writing

RESIZE, DECONV = "resize", "deconv"


class DmlConvention:
    """DirectML RESAMPLE1/2/3 and RESAMPLE_GRAD/GRAD1 descriptors (dmljson's JSON form)."""
    name = "dml"

    def read(self, obj: Any, offset_reading: str = "forward") -> Reading:     # Any: parsed JSON, checked by dmljson
        """A descriptor's map; a RESAMPLE_GRAD* operator is a gradient."""
        desc = dmljson.from_json(obj)
        res = dml.to_canonical(_resample(desc), offset_reading)
        return Reading(res, "GRAD" in desc.OPERATOR, tuple(res.notes))

    def write(self, res: Resampling, backward: bool = True, operator: str | None = None, **options: Any) -> Writing:
        """RESAMPLE_GRAD / RESAMPLE1 by default, widened to RESAMPLE_GRAD1 / RESAMPLE2 when only a rounding
        direction states the map; an explicit `operator` (or offset_reading) is exact or refused."""
        op = operator or ("DML_OPERATOR_RESAMPLE_GRAD" if backward else "DML_OPERATOR_RESAMPLE1")
        try:
            desc, notes = dml.from_canonical(res, op, **options)
        except ConversionError:          # e.g. a rounding rule only RESAMPLE2 / GRAD1 can state
            if options or op not in ("DML_OPERATOR_RESAMPLE_GRAD", "DML_OPERATOR_RESAMPLE1"):
                raise
            desc, notes = dml.from_canonical(res, "DML_OPERATOR_RESAMPLE_GRAD1" if backward else
                                             "DML_OPERATOR_RESAMPLE2")
        return Writing(dmljson.to_json(desc), tuple(notes))


def _resample(desc: dmljson.Descriptor) -> ResampleDescriptor:
    """`desc` when it is a resampling descriptor; a DescError naming Operator for a convolution (a deconv)."""
    if isinstance(desc, DML_CONVOLUTION_OPERATOR_DESC):
        raise DescError("Operator", desc.OPERATOR, f"must be one of {sorted(RESAMPLE_DESCS)} for a resize (a "
                        "convolution is ConvTransposeBackwardData: conventions.read reads it)")
    return desc


class OnednnConvention:
    """A oneDNN Graph document with one Interpolate or InterpolateBackward op."""
    name = "onednn"

    def read(self, obj: object) -> Reading:
        """The op's map; InterpolateBackward is a gradient."""
        res = onednn.to_canonical(obj)
        return Reading(res, onednn.find_op(obj)["kind"] == "InterpolateBackward", tuple(res.notes))

    def write(self, res: Resampling, backward: bool = True, **options: Any) -> Writing:
        """onednn.from_canonical: data_format, dtype, use_scales, tolerance."""
        obj, notes = onednn.from_canonical(res, backward=backward, **options)
        return Writing(obj, tuple(notes))


class OnnxConvention:
    """ONNX Resize / com.microsoft ResizeGrad (OnnxResize's JSON form), under an explicit `semantics`."""
    name = "onnx"

    def read(self, obj: object, semantics: str | None = None) -> Reading:
        """The node's map under `semantics` (required: onnx.to_canonical refuses None by name)."""
        node = onnx.OnnxResize.from_json(obj)
        res = onnx.to_canonical(node, semantics)
        return Reading(res, node.op_type == "ResizeGrad", tuple(res.notes))

    def write(self, res: Resampling, backward: bool = True, **options: Any) -> Writing:
        """onnx.from_canonical: semantics (required), opset, tolerance."""
        node, notes = onnx.from_canonical(res, op_type="ResizeGrad" if backward else "Resize", **options)
        return Writing(node.to_json(), tuple(notes))


class ForwardOnlyConvention:
    """A framework call with a forward form only (torch F.interpolate, TF v1 resize): read as a forward."""

    def __init__(self, name: str, module: ModuleType, call: Any) -> None:
        self.name, self._module, self._call = name, module, call

    def read(self, obj: object) -> Reading:
        """The call's map (never a gradient: the gradient is the framework's autograd of it)."""
        res = self._module.to_canonical(self._call.from_json(obj))
        return Reading(res, False, tuple(res.notes))

    def write(self, res: Resampling, backward: bool = True, **options: Any) -> Writing:
        """The forward call whose map is `res` (`backward` is ignored: there is no gradient form); tolerance."""
        call, notes = self._module.from_canonical(res, **options)
        return Writing(call.to_json(), tuple(notes))


class TfConvention(ForwardOnlyConvention):
    """TF calls: the v1 resize ops, tf.image.resize and tf.raw_ops.ScaleAndTranslate (an "op" key picks them)."""

    def __init__(self) -> None:
        super().__init__("tf", tf, tf.TfResize)

    def read(self, obj: object) -> Reading:
        """The call's map (a forward: the gradient is TF's)."""
        res = tf.read(tf.call_from_json(obj))
        return Reading(res, False, tuple(res.notes))

    def write(self, res: Resampling, backward: bool = True, **options: Any) -> Writing:
        """The v1 op whose map is `res`, else tf.image.resize, else ScaleAndTranslate; tolerance."""
        call, notes = tf.write(res, **options)
        return Writing(call.to_json(), tuple(notes))


CONVENTIONS: dict[tuple[str, str], Convention] = {
    (RESIZE, "dml"): DmlConvention(),
    (RESIZE, "onednn"): OnednnConvention(),
    (RESIZE, "onnx"): OnnxConvention(),
    (RESIZE, "torch"): ForwardOnlyConvention("torch", torch, torch.TorchInterpolate),
    (RESIZE, "tf"): TfConvention(),
    (RESIZE, "jax"): ForwardOnlyConvention("jax", jax, jax.JaxResize),
    **{(DECONV, fmt): conv for fmt, conv in deconv.CONVENTIONS.items()},
}
FORMATS = tuple(fmt for op, fmt in CONVENTIONS if op == RESIZE)


def convention(fmt: str, op: str = RESIZE) -> Convention:
    """The registered convention for format `fmt` of operator family `op` ("resize" or "deconv")."""
    require(fmt in FORMATS, "format", fmt, f"must be one of {list(FORMATS)}")
    if (op, fmt) not in CONVENTIONS:
        raise ConversionError("to", fmt, "ConvTransposeBackwardData has no torch or tf form here (use "
                              f"{', '.join(f for o, f in CONVENTIONS if o == op)})")
    return CONVENTIONS[op, fmt]


def family(fmt: str, obj: object) -> str:
    """The operator family a description in format `fmt` belongs to: "deconv" or "resize"."""
    return DECONV if deconv.is_deconv(fmt, obj) else RESIZE


def family_of(canonical: object) -> str:
    """The operator family of a canonical form: a ConvSpec is "deconv", anything else "resize"."""
    return DECONV if isinstance(canonical, deconv.ConvSpec) else RESIZE
