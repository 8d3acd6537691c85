"""What the lowering knows about a model before it rewrites anything: the graph facts (a `GraphInfo`: shapes,
element types, constants, names in use), and, per ResizeGrad node, its reading: the static map (OnnxResize,
Resampling, element type) when every resized length is known, else the plan of the dynamic path
(onnx_ops.forms.dynamic), with the ONNX reader's checks named after the node.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml_desc import budget
from dml_desc.canonical import AxisMap
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.errors import DescError, is_number, require

from ..forms import dynamic, symbolic_dim
from ..forms.dynamic import DynamicPlan
from .walk import graphs, model_names
from ..model import LOWERING_OPSET, resize_reader_opset

NP_OF: dict[int, type[np.floating]] = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float32,
                                       TensorProto.DOUBLE: np.float64}


@dataclass
class DynamicRead:
    """A ResizeGrad whose shapes are symbolic: the plan computing its taps at run time, and the element type."""
    plan: DynamicPlan
    elem: int | None


def _constants(nodes) -> dict:
    """Outputs of ai.onnx Constant nodes holding a tensor (value) or a float / int list."""
    out = {}
    for n in nodes:
        if n.op_type != "Constant" or n.domain not in ("", "ai.onnx"):
            continue
        for a in n.attribute:
            if a.name == "value":
                if a.t.data_location != TensorProto.EXTERNAL:     # onnx would read it from the working folder
                    out[n.output[0]] = numpy_helper.to_array(a.t)
            elif a.name in ("value_floats", "value_float"):
                out[n.output[0]] = np.asarray(helper.get_attribute_value(a), np.float32)
            elif a.name in ("value_ints", "value_int"):
                out[n.output[0]] = np.asarray(helper.get_attribute_value(a), np.int64)
    return out


@dataclass(frozen=True, eq=False)
class GraphInfo:
    """Shapes, element types and constant inputs of a model (or of one function body), and how it is lowered.
    Built whole by `graph_info` (a function body's by `for_function`) and never changed afterwards; `taken` is
    the one shared set that fresh names are reserved in (onnx_ops.lowering.walk.fresh_prefix)."""
    opset: int           # the ai.onnx opset the nodes are read at
    types: dict          # tensor name -> its TypeProto.Tensor (shape inference)
    consts: dict         # tensor name -> the values of an initializer or Constant node
    runtime: set         # initializers that are also graph inputs: defaults a feed replaces, read at run time
    taken: set           # every tensor name in the model, and the prefixes already handed out
    semantics: str       # the ONNX semantics the taps follow (dml_desc.conventions.onnx.SEMANTICS)
    choices: dict = field(default_factory=dict)   # calibrated {signature: form} (onnx_ops.calibrate); none by default
    ranks: dict = field(default_factory=dict)     # function inputs: the rank every call site gives them

    def for_function(self, function, model) -> "GraphInfo":
        """The facts of one model-local function's body: its opset, its Constant nodes, its inputs' ranks."""
        opsets = {o.domain: o.version for o in function.opset_import}
        return replace(self, opset=opsets.get("", opsets.get("ai.onnx", self.opset)), types={}, runtime=set(),
                       consts=_constants(function.node), ranks=self._call_ranks(function, model))

    def _call_ranks(self, function, model) -> dict:
        """{function input: rank} from the shapes at every call site; different ranks are refused."""
        seen: dict[str, dict[int, str]] = {}     # formal input -> {rank: a call site}
        for g in graphs(model.graph):
            for call in g.node:
                if call.op_type != function.name or call.domain != function.domain:
                    continue
                for formal, actual in zip(function.input, call.input):
                    t = self.types.get(actual)
                    if t is not None and t.HasField("shape"):
                        seen.setdefault(formal, {})[len(t.shape.dim)] = call.name or call.op_type
        for formal, ranks in seen.items():
            require(len(ranks) == 1, f"function {function.name}.{formal}", sorted(ranks),
                    f"is called with inputs of different ranks (by {sorted(ranks.values())}); "
                    "a ResizeGrad in the function is lowered for one rank")
        return {formal: next(iter(ranks)) for formal, ranks in seen.items()}

    def dims(self, name: str):
        """Dims (int, or the dim_param / None when symbolic) of a tensor, or None when its rank is unknown."""
        t = self.types.get(name)
        if t is None or not t.HasField("shape"):
            return [None] * self.ranks[name] if name in self.ranks else None
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]

    def const(self, node, index: int):
        """(values, name): a constant's values, (None, name) when read at run time, (None, "") when absent."""
        name = node.input[index] if len(node.input) > index else ""
        if not name or name in self.runtime or name not in self.consts:
            return None, name
        return self.consts[name].ravel().tolist(), name

    def read(self, node):
        """The static (OnnxResize, Resampling, elem) of a node, or a DynamicRead when something is run time."""
        where = f"node {node.name or node.op_type}"
        require(len(node.input) >= 2 and node.input[0] and node.input[1], f"{where}.inputs", list(node.input),
                "ResizeGrad needs dY and X")
        attrs = {a.name: _attr(a) for a in node.attribute}
        (roi, roi_name), (scales, scales_name) = self.const(node, 2), self.const(node, 3)
        x, dy = self.dims(node.input[1]), self.dims(node.input[0])
        rank = _rank(where, x, dy, attrs, scales, roi)
        x, dy = x or [None] * rank, dy or [None] * rank
        require(len(dy) == len(x), f"{where}.dY", dy, f"rank must equal X's rank {len(x)}")
        has_scales = bool(scales_name) and (scales is None or len(scales) > 0)
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        axes = _checked(where, lambda: _axes_of(attrs, x, scales, roi, roi_name, has_scales, self.opset))
        require(has_scales or policy == "stretch" or all(isinstance(d, int) for d in x + dy),
                f"{where}.keep_aspect_ratio_policy", policy,
                "needs X and dY with known shapes (or the scales input): the forward's single aspect-preserving "
                "scale is recovered from both shapes when the model is lowered")
        elem = self.elem_type(node)
        kinds = [_axis_kind(a, pos, x, dy, scales if has_scales else None, has_scales, roi, attrs)
                 for pos, a in enumerate(axes)]
        if "dynamic" not in kinds:
            return self._static(node, where, attrs, x, dy, axes, kinds, roi, scales if has_scales else None, elem)
        _refuse_dynamic_nhwc_crop(where, attrs, x, axes, kinds, scales if has_scales else None, roi)
        plan = _plan(where, attrs, rank, axes, kinds, scales, scales_name if has_scales else "", roi_name, elem,
                     self.opset)
        _check_run_time_tables(where, plan, x, dy, self.opset)
        return DynamicRead(plan, elem)

    def elem_type(self, node):
        """X's element type (else dY's), checked to be one ResizeGrad takes; None when unknown."""
        for name in (node.input[1], node.input[0]):
            t = self.types.get(name)
            if t is not None and t.elem_type:
                require(t.elem_type in NP_OF, f"node {node.name or node.op_type}.X",
                        TensorProto.DataType.Name(t.elem_type), "ResizeGrad takes float16, float or double")
                return t.elem_type
        return None

    def _static(self, node, where, attrs, x, dy, axes, kinds, roi, scales, elem):
        """Static taps: every resized axis has static sizes; unresized run-time dims become placeholders."""
        unresized = {a for a, kind in zip(axes, kinds) if kind == "same"} | set(range(len(x))) - set(axes)
        for a in sorted(unresized):           # an unresized axis keeps X's length: dY must agree before it stands in
            require(not (isinstance(x[a], int) and isinstance(dy[a], int)) or x[a] == dy[a], f"{where}.dY", dy,
                    f"axis {a} is not resized (scale 1 or not in axes), so its length must be X's {x[a]}")
        same = {a: next((d for d in (x[a], dy[a]) if isinstance(d, int)), None) for a in unresized}
        run_time = [a for a, d in same.items() if d is None]          # 1 stands in, then a SymbolicDim
        x = [(same[a] or 1) if a in same else d for a, d in enumerate(x)]
        dy = [(same[a] or 1) if a in same else d for a, d in enumerate(dy)]
        require(scales is not None or all(isinstance(d, int) for d in dy), f"{where}.dY", dy,
                "needs a known shape (run shape inference)")
        sizes = None if scales is not None else [dy[a] for a in axes] if "axes" in attrs else dy
        if sizes is not None and attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            sizes = _policy_sizes(where, attrs, x, dy, axes, roi, self.opset)
        r = onnx_conv.OnnxResize(x, attrs, roi, scales, sizes, opset=resize_reader_opset(self.opset),
                                 op_type="ResizeGrad")
        res = _checked(where, lambda: onnx_conv.to_canonical(r, self.semantics))
        require(all(not isinstance(d, int) or d == o for d, o in zip(dy, res.out_shape)), f"{where}.dY", dy,
                f"must have the forward output shape {list(res.out_shape)}")
        require(elem is not None, f"{where}.X", node.input[1], "needs a known element type (run shape inference)")
        if run_time:
            res = res.with_(axes=tuple(AxisMap.identity(symbolic_dim(a)) if a in run_time else m
                                       for a, m in enumerate(res.axes)))
        return r, res, elem


def graph_info(model: onnx.ModelProto, semantics: str | None = None, choices: dict | None = None) -> GraphInfo:
    """The facts of `model` for lowering it: shapes from onnx's shape inference, constants, names in use.
    `semantics` (required: dml_desc.conventions.onnx.SEMANTICS) and `choices` (calibrated forms) are kept with them."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    consts = {t.name: numpy_helper.to_array(t) for g in graphs(model.graph) for t in g.initializer
              if t.data_location != TensorProto.EXTERNAL}
    consts.update(_constants(n for g in graphs(model.graph) for n in g.node))
    return GraphInfo(
        opset=next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), LOWERING_OPSET),
        types={v.name: v.type.tensor_type for g in graphs(inferred.graph)
               for v in list(g.input) + list(g.value_info) + list(g.output)},
        consts=consts,
        # an initializer that is also a graph input is a default that a feed replaces: read at run time
        # (before IR 4 every initializer had to be an input, so there it is a constant)
        runtime={v.name for v in model.graph.input} if model.ir_version >= 4 else set(),
        taken=model_names(model),
        semantics=onnx_conv.check_semantics(semantics),    # required: never the installed onnxruntime's
        choices=choices or {})


def _policy_sizes(where, attrs, x, dy, axes, roi, opset) -> list:
    """Sizes for which keep_aspect_ratio_policy gives dY's shape with the forward's scale. The gradient builder
    drops the forward's sizes; the scale it picked is float32(dY / X) of the axis that decided it, so each axis
    is tried; every candidate that reproduces dY's shape must give the same map."""
    policy = attrs["keep_aspect_ratio_policy"]
    found: dict[tuple, list] = {}           # the map's axes -> the sizes that gave it
    for k in axes:
        s = float(np.float32(dy[k]) / np.float32(x[k]))
        sizes = [dy[a] if a == k else (math.ceil(s * x[a]) + 1 if policy == "not_larger"
                                       else max(1, math.floor(s * x[a]) - 1)) for a in axes]
        node = onnx_conv.OnnxResize(x, attrs, roi, sizes=sizes, opset=resize_reader_opset(opset), op_type="ResizeGrad")
        try:
            res = onnx_conv.to_canonical(node, onnx_conv.STAND_IN_SEMANTICS)    # shapes only
        except DescError:
            continue
        if list(res.out_shape) == list(dy):
            found.setdefault(res.axes, sizes)
    require(len(found) == 1, f"{where}.keep_aspect_ratio_policy", policy,
            f"with X {list(x)} and dY {list(dy)} " + ("no single aspect-preserving scale gives dY's shape"
                                                      if not found else "two scales give dY's shape (the gradient "
                                                      "node has no sizes): give the forward the scales input instead "
                                                      "of sizes, the one scale on every resized axis"))
    return next(iter(found.values()))


def _checked(where: str, read):
    try:
        return read()
    except DescError as e:
        raise DescError(f"{where}.{e.field}", e.value, e.rule) from None


def _rank(where, x, dy, attrs, scales, roi) -> int:
    """X's rank: from the shapes, else from scales / roi without an axes attribute (a function body)."""
    for dims in (x, dy):
        if dims is not None:
            return len(dims)
    if "axes" not in attrs and scales:
        return len(scales)
    if "axes" not in attrs and roi:
        return len(roi) // 2
    raise DescError(f"{where}.X", None, "has no known rank: give X a shape (shape inference), or a constant "
                    "scales input, or call the function with inputs of known shape")


def _axes_of(attrs, x, scales, roi, roi_name, has_scales, opset):
    """The axes the scales / sizes / roi entries refer to (validated by the ONNX convention reader)."""
    rank = len(x)
    dummy = onnx_conv.OnnxResize(list(x), attrs, opset=resize_reader_opset(opset), op_type="ResizeGrad")
    axes = dummy.attr("axes")
    n = len(axes) if isinstance(axes, list) else rank
    dummy.input_shape = _stand_in(x, attrs, scales if has_scales else None, n)
    if dummy.attr("coordinate_transformation_mode") == "tf_crop_and_resize":
        dummy.roi = roi if roi is not None or not roi_name else [0.0] * n + [1.0] * n
    if has_scales:
        dummy.scales = scales if scales is not None else [1.0] * n
    else:
        dummy.sizes = [2] * n
    onnx_conv.to_canonical(dummy, onnx_conv.STAND_IN_SEMANTICS)  # every attribute and constant input checked, by name
    return [a % rank for a in axes] if axes is not None else list(range(rank))


def _stand_in(x, attrs, scales, n) -> list:
    """X's shape with run-time dims replaced by sizes that keep every constant scale's output non-empty and
    in the size budget (dml_desc.budget), so that only the user's own values can be refused."""
    rank = len(x)
    axes = attrs.get("axes")
    axes = [a % rank if isinstance(a, int) and -rank <= a < rank else None for a in axes] \
        if isinstance(axes, list) else list(range(rank))
    shape = [d if isinstance(d, int) else 2 ** min(10, 30 // rank) for d in x]
    for pos, a in enumerate(axes[:n]):
        if a is None or isinstance(x[a], int) or scales is None or pos >= len(scales):
            continue
        s = float(np.float32(scales[pos])) if is_number(scales[pos]) else 1.0
        if 0 < s < 1:             # large enough for at least one output, small enough for the budget
            shape[a] = max(shape[a], min(2 ** 21, math.ceil(1 / s)))
        elif s > 1:
            shape[a] = max(1, min(shape[a], int(2 ** 21 // s)))
    return shape


def _axis_kind(a, pos, x, dy, scales, has_scales, roi, attrs) -> str:
    """'same' (not resized), 'static' (resized, sizes known now) or 'dynamic' (decided at run time)."""
    tf_crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    if has_scales:
        if scales is None:
            return "dynamic"
        if np.float32(scales[pos]) == 1:
            return "same"
        return "static" if isinstance(x[a], int) and (roi is not None or not tf_crop) else "dynamic"
    if isinstance(x[a], int) and isinstance(dy[a], int):
        if x[a] == dy[a]:
            return "same"
        return "static" if roi is not None or not tf_crop else "dynamic"
    return "same" if x[a] is not None and x[a] == dy[a] else "dynamic"     # one dim_param: equal sizes


def _refuse_dynamic_nhwc_crop(where, attrs, x, axes, kinds, scales, roi) -> None:
    """onnxruntime's 4-D antialias kernel with scales [1, h, w, 1] extrapolates tf_crop_and_resize outputs with
    weights that depend on the last axis (dml_desc.conventions.onnx_reader._refuse_nhwc_crop); where shapes or scales
    known only at run time cannot exclude that case, it is refused here, not at run time."""
    if len(x) != 4 or not attrs.get("antialias") or attrs.get("mode", "nearest") == "nearest" \
            or attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize" or x[3] == 1 \
            or "static" in (dict(zip(axes, kinds)).get(0), dict(zip(axes, kinds)).get(3)):
        return
    pos = {a: i for i, a in enumerate(axes)}
    if scales is not None:
        s = {a: float(np.float32(scales[i])) for a, i in pos.items()}
        if s.get(0, 1.0) != 1.0 or s.get(3, 1.0) != 1.0 or (s.get(1, 1.0) == 1.0 and s.get(2, 1.0) == 1.0):
            return                       # not that kernel, or nothing it resamples
    if roi is not None and all(0 <= roi[pos[a]] <= 1 and 0 <= roi[len(axes) + pos[a]] <= 1
                               for a in (1, 2) if a in pos):
        return                           # the crop stays inside the input: nothing extrapolates
    raise DescError(f"{where}.antialias", attrs["antialias"], "with tf_crop_and_resize on 4-D input whose shape or "
                    "scales are known only at run time: where axes 0 and 3 keep scale 1 and axis 3 is longer than 1, "
                    "onnxruntime's forward extrapolates with weights that depend on axis 3, which no gradient is the "
                    "transpose of (docs/adjoint.md); give X's last dim (1) or constant scales and shapes")


def _check_run_time_tables(where, plan: DynamicPlan, x, dy, opset: int) -> None:
    """The size budget on what the dynamic path will build at run time, where an axis's lengths are known now:
    each length within the per-axis budget, each table it builds for the axis within max_table()."""
    for a, _ in plan.axes:
        n, m = x[a], dy[a]
        for name, size in (("X", n), ("dY", m)):
            if isinstance(size, int):
                budget.check_axis(size, f"{where}.{name}.shape[{a}]")
        if isinstance(n, int) and isinstance(m, int) and n > 0 and m > 0:
            entries, what = dynamic.largest_table(plan, a, n, m, opset)
            budget.check_table(entries, f"{where}.X.shape[{a}]", n,
                               f"on the run-time path (X {n} rows, dY {m} rows), {what}")


def _plan(where, attrs, rank, axes, kinds, scales, scales_name, roi_name, elem, opset) -> DynamicPlan:
    require(bool(scales_name) or opset >= 11, f"{where}.scales", None,
            "Resize-10 has no sizes input: a ResizeGrad at opset 10 needs scales")
    require(elem is not None or opset >= 15, f"{where}.X", None,
            f"needs a known element type at opset {opset} (CastLike, opset 15, would read it at run time)")
    moved = [(a, pos) for pos, (a, kind) in enumerate(zip(axes, kinds)) if kind != "same"]
    # onnxruntime copies when the whole shape is unchanged: an axis with a scale in (1, 2) may keep its size
    # while another changes, and must then be resampled (sizes give scale 1 exactly to unchanged axes)
    stretch = bool(scales_name) and (scales is None or any(1 < np.float32(scales[pos]) < 2 for _, pos in moved))
    scale_of = tuple(float(np.float32(scales[pos])) for _, pos in moved) if scales_name and scales is not None else ()
    return DynamicPlan(rank, tuple(moved), attrs, scales_name, roi_name, len(axes), stretch, elem is not None,
                       _nhwc_cubic(attrs, rank, axes, scales, bool(scales_name)), scale_of)


def _nhwc_cubic(attrs, rank, axes, scales, has_scales) -> str:
    """How the dynamic path meets onnxruntime's NHWC cubic kernel (onnx_ops.forms.dynamic.DynamicPlan.nhwc_cubic).
    With sizes, a same-length axis has scale 1 and every kernel copies it."""
    if not has_scales or rank != 4 or attrs.get("mode") != "cubic" or attrs.get("antialias"):
        return ""
    if scales is None:
        return "run time"
    chosen = onnx_conv.nhwc_cubic(rank, "cubic", False, {a: float(np.float32(v)) for a, v in zip(axes, scales)})
    return "always" if chosen else ""


def _attr(a):
    v = helper.get_attribute_value(a)
    return v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, (list, tuple)) else v)
