"""`--html PATH`: one self-contained HTML page (inline CSS and SVG, no scripts, nothing loaded from the network).

It shows the summary matrix (backend x convention x mode: pass/fail/skip counts), the passes per oracle, the
skips grouped by reason, and every failure with its description, its max error and heat maps of the expected
dX, the backend's dX and their difference (the 2-D slice where they differ most).
"""
from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict

import numpy as np

from .output import coverage, failures_first, reason_group, summary_count

MODES = ("nearest", "linear", "cubic", "deconv", "other")
MAX_CELLS = 48          # a heat map shows at most 48 x 48 cells (bigger slices are cropped around the worst)


def mode_of(case: str) -> str:
    """The interpolation mode a case name states: nearest, linear, cubic, deconv, or other."""
    name = case.lower()
    for mode, words in (("deconv", ("deconv", "bridge")), ("cubic", ("cubic",)), ("linear", ("linear", "bilinear")),
                        ("nearest", ("nearest",))):
        if any(w in name for w in words):
            return mode
    return "other"


def html_report(records, versions: dict, extra: str = "") -> str:
    """The whole page for a run's records; `extra`: more HTML sections at the end (the cross-runtime matrix)."""
    counts = Counter(r.status for r in records)
    parts = [f"<h1>dml-desc conformance</h1><p class=total>{_e(summary_count(counts))}</p>",
             _coverage(coverage(records)),
             "<p class=versions>" + ", ".join(f"{_e(k)} {_e(v)}" for k, v in versions.items()) + "</p>",
             "<h2>Backend &times; convention &times; mode</h2>", _matrix(records),
             "<h2>Passes by oracle</h2>", _counter_table(Counter(r.oracle or "-" for r in records
                                                                  if r.status == "pass"), "oracle", "passes"),
             f"<h2>Failures ({counts['fail']})</h2>"]
    fails = failures_first([r for r in records if r.status == "fail"])
    parts += [_failure(i, r) for i, r in enumerate(fails)] or ["<p>None.</p>"]
    parts += ["<h2>Skips by reason</h2>", _counter_table(Counter(reason_group(r.reason) for r in records
                                                                 if r.status == "skip"), "reason", "skips")]
    parts += [extra] if extra else []
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>dml-desc conformance</title>"
            f"<style>{CSS}</style></head><body>" + "\n".join(parts) + "</body></html>\n")


CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f2f2f2}.total{font-size:18px}
td.c{text-align:center;font-variant-numeric:tabular-nums}.ok{background:#dff3df}.bad{background:#f8d0d0}
.skip{background:#eee}pre{background:#f7f7f7;padding:6px;white-space:pre-wrap;max-width:1100px}
.fail{border:1px solid #e0a0a0;padding:8px;margin:12px 0}.maps{display:flex;gap:18px;flex-wrap:wrap}
.maps figure{margin:0}figcaption{font-size:12px;color:#555}.versions{color:#666}.unsup{background:#e8e4f8}
.diag{background:#fff6d5;padding:4px 6px;margin:4px 0}.worst{font-family:monospace}"""


def _e(value) -> str:
    """`value` as HTML text: printable's escapes first (control characters, lone surrogates, which UTF-8 cannot
    encode, and bidi controls), then HTML's."""
    from dml_desc.errors import printable
    return html.escape(printable(str(value)))


def _matrix(records) -> str:
    """Rows backend / convention; a column per mode with 'pass / fail / skip' counts, coloured."""
    cells: defaultdict[tuple, Counter] = defaultdict(Counter)
    for r in records:
        cells[(r.backend, r.convention, mode_of(r.case))][r.status] += 1
    rows = sorted({(b, c) for b, c, _ in cells})
    modes = [m for m in MODES if any(key[2] == m for key in cells)]
    out = ["<table class=matrix><tr><th>backend</th><th>convention</th>" +
           "".join(f"<th>{m}</th>" for m in modes) + "</tr>"]
    for b, c in rows:
        tds = []
        for m in modes:
            n = cells.get((b, c, m))
            if not n:
                tds.append("<td class=c></td>")
                continue
            cls = "bad" if n["fail"] else "ok" if n["pass"] else "unsup" if n["unsupported"] else "skip"
            unsup = f" / {n['unsupported']}" if n["unsupported"] else ""
            tds.append(f"<td class='c {cls}' title='pass / fail / skip / unsupported by this kernel'>"
                       f"{n['pass']} / {n['fail']} / {n['skip']}{unsup}</td>")
        out.append(f"<tr><td>{_e(b)}</td><td>{_e(c)}</td>{''.join(tds)}</tr>")
    return "".join(out) + "</table><p>Cells: pass / fail / skip (/ unsupported by this kernel, where it left cases " \
        "out).</p>"


def _coverage(by_backend: dict) -> str:
    """One line per kernel that left cases out: what it ran of what it was offered, and why not the rest."""
    if not by_backend:
        return ""
    rows = []
    for backend, c in by_backend.items():
        offered = c["ran"] + c["unsupported"]
        why = "<br>".join(f"{n}: {_e(reason)}" for reason, n in c["unsupported_by_reason"].items())
        rows.append(f"<tr><td>{_e(backend)}</td><td class=c>{c['ran']} of {offered} "
                    f"({100 * c['ran'] // max(offered, 1)}%)</td><td class='c ok'>{c['passed']}</td>"
                    f"<td class='c {'bad' if c['failed'] else 'ok'}'>{c['failed']}</td>"
                    f"<td class='c unsup'>{c['unsupported']}</td><td>{why}</td></tr>")
    return ("<h2>Coverage</h2><table><tr><th>kernel</th><th>ran</th><th>passed</th><th>failed</th>"
            "<th>unsupported by this kernel</th><th>why</th></tr>" + "".join(rows) + "</table>")


def _counter_table(counter: Counter, what: str, n: str) -> str:
    if not counter:
        return "<p>None.</p>"
    rows = "".join(f"<tr><td>{_e(k)}</td><td class=c>{v}</td></tr>" for k, v in counter.most_common())
    return f"<table><tr><th>{what}</th><th>{n}</th></tr>{rows}</table>"


def _failure(i: int, r) -> str:
    err = "-" if r.max_abs_err is None else f"{r.max_abs_err:.3g}"
    from .diagnosis import describe_worst
    text = [f"<div class=fail id=fail{i}><b>{_e(r.case)}</b> &mdash; backend {_e(r.backend)}, {_e(r.convention)}, "
            f"{_e(r.dtype)}, oracle {_e(r.oracle)}<br>max abs error {err}; {_e(r.reason)}"]
    if r.worst:
        text.append(f"<div class=worst>{_e(describe_worst(r.worst))}</div>")
    if r.numerical:
        text.append(f"<div class=diag>diagnosis: {_e(r.diagnosis or 'no alternative explains it')}</div>")
    if r.description is not None:
        text.append(f"<pre>{_e(json.dumps(r.description, default=repr))}</pre>")
    if r.arrays is not None:
        text.append(heat_maps(*r.arrays))
    return "".join(text) + "</div>"


def worst_slice(got: np.ndarray, want: np.ndarray) -> tuple:
    """(got, want, label): the 2-D slice over the last two axes holding the largest difference."""
    got, want = np.atleast_2d(got), np.atleast_2d(want)
    if got.ndim > 2:
        diff = np.abs(got - want).reshape((-1,) + got.shape[-2:])
        k = int(diff.reshape(len(diff), -1).max(axis=1).argmax())
        lead = np.unravel_index(k, got.shape[:-2])
        label = "[" + ", ".join(str(int(j)) for j in lead) + ", :, :]"
        return got[lead], want[lead], label
    return got, want, "[:, :]"


def heat_maps(got: np.ndarray, want: np.ndarray) -> str:
    """Three inline SVG heat maps: expected, got and got - expected (shared colour scale for the first two)."""
    g, w, label = worst_slice(np.asarray(got, np.float64), np.asarray(want, np.float64))
    g, w = _crop(g, w)
    scale = max(float(np.abs(w).max(initial=0)), float(np.abs(g).max(initial=0)), 1e-30)
    d = g - w
    dscale = max(float(np.abs(d).max(initial=0)), 1e-30)
    return ("<div class=maps>" + _figure(w, scale, f"expected dX{label}") + _figure(g, scale, f"got dX{label}") +
            _legend(scale, "expected and got") + _figure(d, dscale, f"got - expected (max {dscale:.3g})") +
            _legend(dscale, "got - expected") + "</div>")


def _legend(scale: float, what: str) -> str:
    """A vertical colour bar from -scale (blue) through 0 (white) to +scale (red), with its values."""
    steps = 20
    h = 10
    rects = "".join(f"<rect x='0' y='{k * h}' width='16' height='{h}' fill='{_colour(1 - 2 * k / (steps - 1))}'/>"
                    for k in range(steps))
    labels = (f"<text x='20' y='10'>{scale:.3g}</text><text x='20' y='{steps * h // 2 + 4}'>0</text>"
              f"<text x='20' y='{steps * h}'>{-scale:.3g}</text>")
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' width='90' height='{steps * h + 2}' font-size='11'>"
           f"<g stroke='#888' stroke-width='0.5'>{rects}</g>{labels}</svg>")
    return f"<figure class=legend>{svg}<figcaption>scale: {_e(what)}</figcaption></figure>"


def _crop(g, w):
    """At most MAX_CELLS x MAX_CELLS, centred on the largest difference."""
    r, c = np.unravel_index(int(np.abs(g - w).argmax()), g.shape)
    r0 = max(0, min(int(r) - MAX_CELLS // 2, g.shape[0] - MAX_CELLS))
    c0 = max(0, min(int(c) - MAX_CELLS // 2, g.shape[1] - MAX_CELLS))
    return g[r0:r0 + MAX_CELLS, c0:c0 + MAX_CELLS], w[r0:r0 + MAX_CELLS, c0:c0 + MAX_CELLS]


def _figure(a: np.ndarray, scale: float, caption: str) -> str:
    cell = max(6, min(32, 240 // max(a.shape)))
    h, w = a.shape
    rects = []
    for i in range(h):
        for j in range(w):
            v = float(a[i, j])
            rects.append(f"<rect x='{j * cell}' y='{i * cell}' width='{cell}' height='{cell}' "
                         f"fill='{_colour(v / scale)}' stroke='#999' stroke-width='0.5'>"
                         f"<title>[{i}, {j}] {v:.6g}</title></rect>")
            if cell >= 28:          # a small map shows its values in the cells
                rects.append(f"<text x='{j * cell + cell / 2}' y='{i * cell + cell / 2 + 3}' font-size='9' "
                             f"text-anchor='middle'>{v:.2g}</text>")
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{w * cell + 1}' height='{h * cell + 1}' "
           f"viewBox='0 0 {w * cell + 1} {h * cell + 1}'>{''.join(rects)}</svg>")
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def _colour(t: float) -> str:
    """Blue (-1) - white (0) - red (+1)."""
    t = max(-1.0, min(1.0, t)) if np.isfinite(t) else 1.0
    if t >= 0:
        return f"rgb(255,{int(255 * (1 - t))},{int(255 * (1 - t))})"
    return f"rgb({int(255 * (1 + t))},{int(255 * (1 + t))},255)"


def no_network(page: str) -> bool:
    """True when the page names no external resource (no http(s) URL in src/href/url(), no script)."""
    return not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|<script""", page, re.I)
