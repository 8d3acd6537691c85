"""The one registry of spellings: one `Form` per spelling, in the order every planner walks them, as oneDNN walks
its implementation lists. A form declares where it applies, one `Scope` per place:

- static:   every resized length known when lowering (g: `Gradient`): `contract` emits the first form that
            `prefer`s the gradient, whose proof holds (`applies`) and whose estimated cost passes its margin
            against the per-axis plan's (band, last, always applies);
- generic:  constant integer factors, lengths known only at run time (g: `RunTimeGradient`, its `form` the
            onnx_ops.lowering.generic_forms.GenericForm proven for every length), taken by rule;
- run-time: scales or sizes known only at run time (the plan of the run-time path, onnx_ops.forms.dynamic):
            band's run-time scope, "general", last, always applies.

A node with run-time lengths walks the generic and the run-time scopes together (RUN_TIME_WALK). A scope's name is
the key a calibration (onnx_ops.calibrate) records: its form's name for a static scope, the spelling's for the
others. A calibration may name another applicable scope for a node's signature; without one the choice depends on
the node alone. To add a spelling: one `Form` at its rank in REGISTRY, with a scope for each place it applies.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from enum import Enum
from fractions import Fraction
from functools import cached_property
from typing import Callable

import numpy as np

from dml_desc.canonical import Resampling

from .axis import emit_plan, plan_axes
from .block import block_factors, emit_block, emit_pool, pool_form
from .conv_transpose import conv_transpose_form, emit_conv_transpose
from .cost import KRON_MARGIN, PREFER_RESIZE, conv_cost, filter_conv_cost, kron_cost, pool_cost, resize_cost
from .deconv import combined, deconv_form, emit_conv
from .emitter import Emitter, is_symbolic
from . import dynamic, filter_conv, generic_emit, kron_pairs, padded, periodic, scatter
from .kron import emit_kron, kron_form
from .resize import emit_resize, find_resize

BY_RULE = math.inf    # a margin: the form is taken whenever it applies (a measured rule, not the estimate)
CANDIDATES = 3        # forms `dml-desc calibrate` measures per static gradient: the choice and the next cheapest
STATIC, GENERIC, RUN_TIME = "static", "generic", "run-time"
STATIC_WALK, RUN_TIME_WALK = (STATIC,), (GENERIC, RUN_TIME)     # the scopes one node's planner walks


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
class RunTimeGradient:
    """A node whose lengths are known only at run time: the run-time path's plan (onnx_ops.forms.dynamic.DynamicPlan),
    the shape-generic form proven for every length (onnx_ops.lowering.generic_forms.GenericForm, or None), X's and
    dY's tensors, the opset and the accumulation type."""
    plan: object
    form: object
    x: str
    dy: str
    opset: int
    acc: type

    @property
    def float32(self) -> bool:
        """onnxruntime's CPU Conv, Resize and AveragePool take float32 only."""
        return self.acc is np.float32


def _always(g) -> bool:
    return True


def _no_estimate(g, proof) -> float:
    return 0.0


@dataclass(frozen=True)
class Scope:
    """Where a form applies and how: `applies(g)` gives its proof (None where the taps or the runtime rule it out),
    `cost(g, proof)` its estimated ns, `emit(em, src, g, proof)` (dX, per-axis report names). A planner takes it
    when `prefer(g)` and its cost is at most `margin` x the per-axis plan's (BY_RULE: whenever it applies).
    `name` is the key a calibration records (a static scope's is its form's)."""
    where: str                # STATIC, GENERIC or RUN_TIME
    name: str
    applies: Callable
    emit: Callable
    cost: Callable = _no_estimate
    margin: float = BY_RULE
    prefer: Callable = _always     # the measured rule's precondition, checked before the proof

    def picks(self, g, proof) -> bool:
        """True when the cost model takes this scope (its proof holding)."""
        return self.margin == BY_RULE or self.cost(g, proof) <= self.margin * g.plan[1]


def static(applies: Callable, cost: Callable, emit: Callable, margin: float = 1.0,
           prefer: Callable = _always) -> Scope:
    """A form's static scope (g: Gradient), named after its form, taken by estimate (or BY_RULE)."""
    return Scope(STATIC, "", applies, emit, cost, margin, prefer)


def generic(name: str, holds: Callable, emit: Callable, rule: Callable | None = None) -> Scope:
    """A shape-generic spelling `name`, by rule: it applies where `holds(form, g)` of the node's GenericForm and is
    taken where also `rule(form, g)` (the measured rule); `emit(em, src, g, form) -> dX`."""
    return Scope(GENERIC, name, lambda g: g.form if g.form is not None and holds(g.form, g) else None,
                 lambda em, src, g, form: (emit(em, src, g, form), form.names(name, em.opset)),
                 prefer=(lambda g: g.form is None or not holds(g.form, g) or rule(g.form, g)) if rule else _always)


def run_time(name: str, applies: Callable, emit: Callable) -> Scope:
    """A spelling of maps known only at run time (g: RunTimeGradient), by rule."""
    return Scope(RUN_TIME, name, applies, emit)


@dataclass(frozen=True, init=False)
class Form:
    """One spelling: its name (the static calibration key, the report's family) and its scopes, in the order a
    walk tries them."""
    name: str
    scopes: tuple

    def __init__(self, name: str, *scopes: Scope):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "scopes", tuple(replace(s, name=s.name or name) for s in scopes))

    @property
    def static(self) -> Scope | None:
        """The static scope, or None where the form has none."""
        return next((s for s in self.scopes if s.where == STATIC), None)


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
    cur, axis_names = emit_plan(em, src, g.res, plans)
    order = {p.axis: name for p, name in zip(plans, axis_names)}
    return cur, tuple(order[a] for a in g.res.resized_axes)


def _no_kron(g: Gradient) -> bool:
    return g.kron is None      # where kron applies it measured faster than Conv / ConvTranspose (README)


def _emit_general(em, src, g, plan):
    return dynamic.emit_dynamic(em, src, g.x, plan), dynamic.axis_forms(plan, em.opset)


_block32 = lambda f, g: g.float32 and f.block            # nearest block sums in float32 (shape-generic)
# linear / cubic filter Convs by rule on 1 or 2 spatial axes (calibration may still take them on 3): onnxruntime
# has no NCHWc kernel for 3-D Convs, and on volumes the run-time path measured faster (trilinear, 2 threads,
# onnxruntime 1.19.2, sepconv -> run-time path, ms: x2 2x12x20x40^2 4.49 -> 3.16, 1x16x16x64^2 6.29 -> 5.51,
# 4x4x32^3 2.74 -> 2.42; x4 1x8x8x24^2 0.87 -> 0.63)
_filter32 = lambda f, g: g.float32 and not f.block and f.spatial
_planar = lambda f, g: f.rank <= 4
_checked = generic_emit.shape_checked


REGISTRY = (
    # nearest x2 pair sums: a column-pair MatMul, then AveragePool or Split + Add: by rule, where it measured
    # fastest (onnx_ops.forms.kron_pairs, docs/benchmarks.md; shape-generic: docs/dynamic-forms.md)
    Form(kron_pairs.NAME,
         static(lambda g: True if kron_pairs.applies(g.res, g.opset, np.dtype(g.acc).itemsize) else None,
                lambda g, p: kron_pairs.cost(g.res, g.opset, np.dtype(g.acc).itemsize),
                lambda em, src, g, p: kron_pairs.emit(em, src, g.res), BY_RULE),
         generic("kronpairs", lambda f, g: _block32(f, g) and f.pair_columns, generic_emit.emit_kron_pairs,
                 rule=lambda f, g: f.kron_pairs_faster(g.opset))),
    # nearest x2 block sums as one AveragePool: by rule, where it measured fastest (onnx_ops.forms.cost)
    Form("avgpool",
         static(lambda g: pool_form(g.res, g.blocks, g.opset) if g.float32 else None, lambda g, p: pool_cost(g.res),
                lambda em, src, g, p: (emit_pool(em, src, g.res, p), ("avgpool",) * len(g.blocks)), BY_RULE),
         generic("pool", lambda f, g: _block32(f, g) and f.pool_fits(g.opset), _checked(generic_emit.emit_pool))),
    # kron: estimated for float32 whatever the type (as the choice always has)
    Form("kron", static(lambda g: g.kron, lambda g, p: kron_cost(g.res, p),
                        lambda em, src, g, p: (emit_kron(em, src, g.res, p), p.names(len(g.res.axes))), KRON_MARGIN)),
    # one depthwise Conv of ones (nearest upsampling, no border rows): measured faster than Reshape + ReduceSum
    Form("conv(ones)",
         static(_deconv, lambda g, p: conv_cost(g.res),
                lambda em, src, g, p: (emit_conv(em, src, *p), _per_axis(g, "conv(ones)")), prefer=_no_kron),
         generic("conv", lambda f, g: _block32(f, g) and f.conv_ok, _checked(generic_emit.emit_conv))),
    # integer downsampling as one ConvTranspose: measured faster than a nearest Resize
    Form("conv_transpose",
         static(lambda g: conv_transpose_form(g.res) if g.float32 else None, lambda g, p: conv_cost(g.res),
                lambda em, src, g, p: (emit_conv_transpose(em, src, g.res, p), _per_axis(g, "conv_transpose")),
                prefer=_no_kron)),
    # integer downsampling whose gradient writes each dY row into its own block of X (onnx_ops.forms.scatter):
    # static where estimated cheaper (after kron, which takes whole blocks as fast), shape-generic by rule; float32
    # (onnxruntime's CPU Resize) from opset 11 (Resize's coordinate_transformation_mode)
    Form("scatter",
         static(lambda g: scatter.static_form(g.res) if g.float32 and g.opset >= 11 else None,
                lambda g, p: scatter.cost(g.res, p, np.dtype(g.acc).itemsize),
                lambda em, src, g, p: scatter.emit_static(em, src, g.res, p)),
         generic("scatter", lambda f, g: f.down and g.float32, _checked(scatter.emit_generic))),
    # block sums as Reshape + ReduceSum (shape-generic in float64 too)
    Form("block-sum",
         static(lambda g: (g.blocks or None) if g.float32 else None, lambda g, p: conv_cost(g.res),
                lambda em, src, g, p: (emit_block(em, src, g.res, p), ("block-sum",) * len(p)), prefer=_no_kron),
         generic("block", lambda f, g: f.block, _checked(generic_emit.emit_block))),
    # one Resize whose taps are the gradient's up to a factor; shape-generic where the static lowering takes it
    Form("Resize",
         static(lambda g: find_resize(g.res, g.opset) if g.float32 else None,
                lambda g, p: resize_cost(g.res, p[0]), _emit_resize, PREFER_RESIZE),
         generic("resize", lambda f, g: f.resize is not None and g.float32 and g.opset >= 18,
                 _checked(generic_emit.emit_resize), rule=lambda f, g: f.prefer_resize)),
    # integer-factor linear / cubic as depthwise Convs (onnx_ops.forms.filter_conv): static where estimated cheaper
    # than the per-axis plan (its cost fitted in onnx_ops.forms.cost); shape-generic by rule, one Conv per axis
    # above SEPARABLE_TAPS taps per output (its folds slice at run time: from opset 10)
    Form(filter_conv.NAME,
         static(lambda g: filter_conv.filter_conv_form(g.res, g.opset) if g.float32 else None,
                lambda g, p: filter_conv_cost(g.res, p.edge_scaled, p.folds, np.dtype(g.acc).itemsize),
                lambda em, src, g, p: filter_conv.emit_static(em, src, g.res, p)),
         generic("sepconv", lambda f, g: _filter32(f, g) and g.opset >= 10, _checked(generic_emit.emit_sepconv),
                 rule=lambda f, g: f.taps > filter_conv.SEPARABLE_TAPS and _planar(f, g)),
         generic("conv", _filter32, _checked(generic_emit.emit_conv), rule=_planar)),
    # the general form on dY padded with zero rows, where that map's tiles divide the longer axes (onnx_ops.forms.
    # padded): static, where estimated cheaper than the per-axis plan on the real lengths
    Form("padded",
         static(lambda g: padded.padded_form(g.res, np.dtype(g.acc).itemsize), lambda g, p: p.cost,
                lambda em, src, g, p: padded.emit_padded(em, src, g.res, p)),
         generic("periodic", lambda f, g: isinstance(f, periodic.PeriodicForm),
                 lambda em, src, g, form: periodic.emit_periodic(em, src, g.x, form))),
    # the general form: per axis a band, dense, transposed band or gather, in the cheapest order; at run time the
    # band built from onnxruntime's own taps in the graph (onnx_ops.forms.dynamic)
    Form("band", static(lambda g: g.plan[0], lambda g, p: g.plan[1], _emit_plan, BY_RULE),
         run_time("general", lambda g: g.plan, _emit_general)),
)
FORMS = {form.name: form for form in REGISTRY}
# Former form names a calibration cache may still hold, as {old: current}: "deconv(ones)" was the depthwise Conv
# of ones (its node is a Conv, not a ConvTranspose), renamed "conv(ones)". `pick` reads an old name as the new.
RENAMED = {"deconv(ones)": "conv(ones)"}


def scopes(where: tuple):
    """The scopes of the kinds in `where`, in the registry's order."""
    return (scope for form in REGISTRY for scope in form.scopes if scope.where in where)


def names(where: tuple) -> tuple:
    """The calibration keys of the scopes in `where`, each once, in the registry's order."""
    return tuple(dict.fromkeys(scope.name for scope in scopes(where)))


def pick(where: tuple, g, name: str | None = None) -> tuple:
    """(scope, proof): the scope named `name` (a current or RENAMED name) where it applies, else the first one the
    rule or the cost model takes, of the scopes in `where`."""
    name = RENAMED.get(name, name) if name is not None else None
    for scope in scopes(where):
        if scope.name == name and (proof := scope.applies(g)) is not None:
            return scope, proof
    for scope in scopes(where):
        if scope.prefer(g) and (proof := scope.applies(g)) is not None and scope.picks(g, proof):
            return scope, proof
    raise AssertionError("the last scope of every walk always applies")


def ranked(where: tuple, g, few: int | None = None) -> tuple:
    """The scopes `dml-desc calibrate` measures for a node: the choice by rule and cost model, then the other
    applicable ones by estimate (in the registry's order where there is none), `few` in all (None: all)."""
    chosen = pick(where, g)[0].name
    others = sorted((scope.cost(g, proof), k, scope.name) for k, scope in enumerate(scopes(where))
                    if scope.name != chosen and (proof := scope.applies(g)) is not None)
    return ((chosen,) + tuple(dict.fromkeys(name for _, _, name in others)))[:few]


def choose(g: Gradient, name: str | None = None) -> tuple:
    """(scope, proof) of a static gradient: the form named `name` where it applies, else the cost model's choice."""
    return pick(STATIC_WALK, g, name)


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
    scope, proof = choose(g, named)
    return scope.emit(em, src, g, proof)


def candidates(res: Resampling, opset: int, acc: type, few: int = CANDIDATES) -> tuple:
    """The forms `dml-desc calibrate` measures for a static gradient: the cost model's choice, then the cheapest
    other applicable forms by estimate, `few` in all."""
    return ranked(STATIC_WALK, Gradient(res, opset, acc), few)
