"""The forms as a registry: one `Form` per spelling, in the order the choice walks them, as oneDNN walks its
implementation lists. `contract` emits the first form that `prefer`s the gradient, whose proof holds
(`applies`) and whose estimated cost passes its margin against the per-axis plan's (the general form, last,
which always applies). A calibration (onnx_ops.calibrate) may name another applicable form for a gradient's
`signature`; without one the choice depends on the gradient alone.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from enum import Enum
from fractions import Fraction
from functools import cached_property
from typing import Callable

import numpy as np

from dml_desc.canonical import Resampling

from .axis import emit_plan, plan_axes
from .block import block_factors, emit_block, emit_pool, pool_form
from .conv_transpose import conv_transpose_form, emit_conv_transpose
from .cost import PREFER_RESIZE, conv_cost, filter_conv_cost, kron_cost, pool_cost, resize_cost
from .deconv import combined, deconv_form, emit_conv
from .emitter import Emitter, is_symbolic
from . import filter_conv, kron_pairs
from .kron import emit_kron, kron_form
from .resize import emit_resize, find_resize

BY_RULE = math.inf    # a margin: the form is taken whenever it applies (a measured rule, not the estimate)
CANDIDATES = 3        # forms `dml-desc calibrate` measures per gradient: the model's choice and the next cheapest


class Gradient:
    """One contraction to spell: the map, the opset and the accumulation type, with what several forms read
    (the kron form, the block factors, the per-axis plan and its cost) computed once, when first asked."""

    def __init__(self, res: Resampling, opset: int, acc: type):
        self.res, self.opset, self.acc = res, opset, acc
        self.float32 = acc is np.float32     # onnxruntime's CPU Conv, ConvTranspose, Resize, AveragePool: float32

    @cached_property
    def kron(self):
        """The kron form (onnx_ops.forms.kron), or None."""
        return kron_form(self.res)

    @cached_property
    def blocks(self):
        """{axis: (F, weight)} when every resized axis sums blocks (onnx_ops.forms.block), else None."""
        return block_factors(self.res)

    @cached_property
    def plan(self) -> tuple:
        """(per-axis plans, estimated ns) of the general form (onnx_ops.forms.axis.plan_axes)."""
        return plan_axes(self.res, np.dtype(self.acc).itemsize)


@dataclass(frozen=True)
class Form:
    """One spelling: `applies(g)` gives its proof (None where the taps or the runtime rule it out),
    `cost(g, proof)` its estimated ns, `emit(em, src, g, proof)` (dX, per-axis report names). The cost model
    takes it when `prefer(g)` and its cost is at most `margin` x the per-axis plan's."""
    name: str                 # the calibration key, and the family of the names the report prints
    applies: Callable
    cost: Callable
    emit: Callable
    margin: float = 1.0
    prefer: Callable = lambda g: True     # the measured rule's precondition, checked before the proof

    def picks(self, g: Gradient, proof) -> bool:
        """True when the cost model takes this form (its proof holding)."""
        return self.margin == BY_RULE or self.cost(g, proof) <= self.margin * g.plan[1]


def _per_axis(g: Gradient, name: str) -> tuple:
    """The report names of a one-node form: `name` on every resized axis."""
    return (name,) * len(g.res.resized_axes)


def _deconv(g: Gradient):
    """One depthwise Conv's (spec, weights) when every axis is an uncorrected integer-factor deconvolution."""
    parts = deconv_form(g.res) if g.float32 and g.blocks else None
    return combined(g.res, parts) if parts else None


def _emit_resize(em, src, g, proof):
    cand, spelling = proof
    name = f"Resize({cand.mode.value}{', antialias' if cand.antialias else ''})"
    return emit_resize(em, src, g.res, spelling), _per_axis(g, name)


def _emit_plan(em, src, g, plans):
    cur, names = emit_plan(em, src, g.res, plans)
    order = {p.axis: name for p, name in zip(plans, names)}
    return cur, tuple(order[a] for a in g.res.resized_axes)


def _no_kron(g: Gradient) -> bool:
    return g.kron is None      # where kron applies it measured faster than Conv / ConvTranspose (README)


REGISTRY = (
    # nearest x2 pair sums: a column-pair MatMul, then AveragePool or Split + Add: by rule, where it measured
    # fastest (onnx_ops.forms.kron_pairs, docs/benchmarks.md)
    Form(kron_pairs.NAME, lambda g: True if kron_pairs.applies(g.res, g.opset, np.dtype(g.acc).itemsize) else None,
         lambda g, p: kron_pairs.cost(g.res, g.opset, np.dtype(g.acc).itemsize),
         lambda em, src, g, p: kron_pairs.emit(em, src, g.res), BY_RULE),
    # nearest x2 block sums as one AveragePool: by rule, where it measured fastest (onnx_ops.forms.cost)
    Form("avgpool", lambda g: pool_form(g.res, g.blocks, g.opset) if g.float32 else None,
         lambda g, p: pool_cost(g.res),
         lambda em, src, g, p: (emit_pool(em, src, g.res, p), ("avgpool",) * len(g.blocks)), BY_RULE),
    # kron: estimated for float32 whatever the type (as the choice always has)
    Form("kron", lambda g: g.kron, lambda g, p: kron_cost(g.res, p),
         lambda em, src, g, p: (emit_kron(em, src, g.res, p), p.names(len(g.res.axes)))),
    # one depthwise Conv of ones (nearest upsampling, no border rows): measured faster than Reshape + ReduceSum
    Form("conv(ones)", _deconv, lambda g, p: conv_cost(g.res),
         lambda em, src, g, p: (emit_conv(em, src, *p), _per_axis(g, "conv(ones)")), prefer=_no_kron),
    # integer downsampling as one ConvTranspose: measured faster than a nearest Resize
    Form("conv_transpose", lambda g: conv_transpose_form(g.res) if g.float32 else None,
         lambda g, p: conv_cost(g.res),
         lambda em, src, g, p: (emit_conv_transpose(em, src, g.res, p), _per_axis(g, "conv_transpose")),
         prefer=_no_kron),
    Form("block-sum", lambda g: (g.blocks or None) if g.float32 else None, lambda g, p: conv_cost(g.res),
         lambda em, src, g, p: (emit_block(em, src, g.res, p), ("block-sum",) * len(p)), prefer=_no_kron),
    Form("Resize", lambda g: find_resize(g.res, g.opset) if g.float32 else None,
         lambda g, p: resize_cost(g.res, p[0]), _emit_resize, PREFER_RESIZE),
    # integer-factor linear / cubic as depthwise Convs, the shape-generic form's spelling: where estimated cheaper
    # than the per-axis plan (onnx_ops.forms.filter_conv; its cost fitted in onnx_ops.forms.cost)
    Form(filter_conv.NAME, lambda g: filter_conv.filter_conv_form(g.res, g.opset) if g.float32 else None,
         lambda g, p: filter_conv_cost(g.res, p.edge_scaled, p.folds, np.dtype(g.acc).itemsize),
         lambda em, src, g, p: filter_conv.emit_static(em, src, g.res, p)),
    # the general form: per axis a band, dense, transposed band or gather, in the cheapest order
    Form("band", lambda g: g.plan[0], lambda g, p: g.plan[1], _emit_plan, BY_RULE),
)
FORMS = {form.name: form for form in REGISTRY}
# Former form names a calibration cache may still hold, as {old: current}: "deconv(ones)" was the depthwise Conv
# of ones (its node is a Conv, not a ConvTranspose), renamed "conv(ones)". `choose` reads an old name as the new.
RENAMED = {"deconv(ones)": "conv(ones)"}


def choose(g: Gradient, name: str | None = None) -> tuple:
    """(form, proof): the form named `name` (a current or RENAMED name) where it applies, else the cost model's
    choice."""
    named = FORMS.get(RENAMED.get(name, name))
    proof = named.applies(g) if named is not None else None
    if proof is not None:
        return named, proof
    for form in REGISTRY:
        if form.prefer(g) and (proof := form.applies(g)) is not None and form.picks(g, proof):
            return form, proof
    raise AssertionError("the per-axis plan always applies")


def signature(res: Resampling, opset: int, acc: type) -> str:
    """The calibration key of one static gradient: its canonical map (each axis's fields that differ from their
    defaults; "?" for a size known only at run time), the opset and the accumulation type, as sorted JSON."""
    axes = [{f.name: _plain(getattr(ax, f.name)) for f in fields(ax)
             if f.name in ("in_size", "out_size") or getattr(ax, f.name) != f.default} for ax in res.axes]
    whole = {f.name: _plain(getattr(res, f.name)) for f in fields(res) if f.name not in ("axes", "notes")}
    return json.dumps({"static": {**whole, "axes": axes}, "opset": opset, "acc": np.dtype(acc).name},
                      sort_keys=True)


def _plain(value):
    """A field's value as JSON writes it: enums by value, Fractions as text, run-time sizes as "?"."""
    if is_symbolic(value):
        return "?"
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Fraction):
        return str(value)
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def contract(em: Emitter, src: str, res: Resampling, choices: dict | None = None) -> tuple:
    """(dX, per-axis form names): dY `src` contracted in the form `choices` names for this gradient's
    signature (a calibration), else in the form the cost model picks."""
    g = Gradient(res, em.opset, em.acc)
    named = choices.get(signature(res, em.opset, em.acc)) if choices else None
    form, proof = choose(g, named)
    return form.emit(em, src, g, proof)


def candidates(res: Resampling, opset: int, acc: type, few: int = CANDIDATES) -> tuple:
    """The forms `dml-desc calibrate` measures for a gradient: the cost model's choice, then the cheapest other
    applicable forms by estimate, `few` in all."""
    g = Gradient(res, opset, acc)
    chosen = choose(g)[0].name
    ranked = sorted((form.cost(g, proof), k, form.name) for k, form in enumerate(REGISTRY)
                    if form.name != chosen and (proof := form.applies(g)) is not None)
    return (chosen,) + tuple(name for _, _, name in ranked[:few - 1])
