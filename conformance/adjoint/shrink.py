"""Shrinking a failing adjoint case to the simplest configuration that still fails, and the randomized run."""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Iterator, cast

from .draw import Config
from .oracles import AdjointCase, adjoint_cases, make_case
from .paths import PATHS, judge


def _simpler(cfg: Config) -> Iterator[Config]:
    """Candidate configurations one step simpler than `cfg`."""
    rank = len(cfg.shape)
    axes = cfg.attrs.get("axes")
    listed = [a % rank for a in axes] if axes is not None else list(range(rank))
    for i in range(rank):                         # drop an axis
        if rank == 1:
            break
        if i in listed and axes is None and len(listed) == 1:
            continue
        c = copy.deepcopy(cfg)
        c.shape = cfg.shape[:i] + cfg.shape[i + 1:]
        pos = listed.index(i) if i in listed else None
        if axes is not None:
            kept = [a for a in axes if a % rank != i]
            if not kept:
                continue
            c.attrs["axes"] = [(a % rank) - (a % rank > i) - (rank - 1 if a < 0 else 0) for a in kept]
        if pos is not None:
            for name in ("scales", "sizes"):
                v = getattr(c, name)
                if v is not None:
                    setattr(c, name, v[:pos] + v[pos + 1:])
            if c.roi is not None:
                k = len(listed)
                c.roi = c.roi[:pos] + c.roi[pos + 1:k] + c.roi[k:k + pos] + c.roi[k + pos + 1:]
        yield c
    for i, d in enumerate(cfg.shape):             # smaller sizes
        if d > 1:
            c = copy.deepcopy(cfg)
            c.shape[i] = d - 1
            yield c
    if cfg.sizes is not None:
        for i, s in enumerate(cfg.sizes):
            if s > 1:
                c = copy.deepcopy(cfg)
                assert c.sizes is not None      # a copy of cfg's
                c.sizes[i] = s - 1
                yield c
    for name in ("antialias", "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "cubic_coeff_a",
                 "nearest_mode"):
        if name in cfg.attrs:
            c = copy.deepcopy(cfg)
            del c.attrs[name]
            yield c
    if axes is not None and any(a < 0 for a in axes):
        c = copy.deepcopy(cfg)
        c.attrs["axes"] = [a % rank for a in axes]
        yield c
    mode = cfg.attrs.get("mode", "nearest")
    if mode != "nearest":                         # cubic -> linear -> nearest, their own attributes dropped
        c = copy.deepcopy(cfg)
        c.attrs["mode"] = "linear" if mode == "cubic" else "nearest"
        for name in ("cubic_coeff_a", "exclude_outside") + (("antialias",) if mode == "linear" else ()):
            c.attrs.pop(name, None)
        yield c
    if cfg.dtype != "float32":
        yield replace(cfg, dtype="float32")
    if cfg.opset not in (11, 19):
        yield replace(cfg, opset=19 if cfg.opset >= 18 else 11 if cfg.opset >= 11 else cfg.opset)


def shrink(case: AdjointCase, fails, budget: int = 300) -> AdjointCase:
    """The smallest case (fewest axes, smallest sizes, simplest attributes) for which `fails(case)` holds."""
    if case.config is None:          # a torch call: printed as drawn
        return case
    best, steps = case, 0
    progress = True
    while progress and steps < budget:
        progress = False
        for cfg in _simpler(cast(Config, best.config)):     # an ONNX case's: make_case keeps it
            steps += 1
            cand = make_case(cfg, 0, best.name)
            if cand is not None and fails(cand):
                best, progress = cand, True
                break
            if steps >= budget:
                break
    return best


def description(case: AdjointCase, path: str) -> str:
    """The shrunk failure as a description file's text (`dml-desc run` / `dml-desc convert --from onnx`)."""
    return json.dumps(case.description, indent=2)


def run(n: int, seed: int, paths=PATHS, verbose: bool = False) -> list:
    """Judge n cases on every path -> [(case, path, message)] of the failures, each shrunk."""
    failures = []
    for case in adjoint_cases(n, seed):
        for path in paths:
            msg = judge(case, path)
            if msg is None or (msg.startswith("refused") and case.res is None and path == "reference"):
                continue
            kind = msg.split(":")[0]
            small = shrink(case, lambda c, path=path, kind=kind: (judge(c, path) or "").split(":")[0] == kind)
            failures.append((small, path, judge(small, path)))
            if verbose:
                print(path, judge(small, path), description(small, path).replace("\n", " "))
    return failures
