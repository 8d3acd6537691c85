"""`dml-desc conformance` / `python -m conformance`: run the catalog, print a table, exit non-zero on failure."""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time


def add_arguments(p) -> None:
    p.add_argument("-k", dest="pattern", help="run only cases whose name contains PATTERN (or matches a glob)")
    p.add_argument("--backend", action="append", help="only these backends (repeatable)")
    p.add_argument("--dtype", action="append", choices=("f64", "f32", "f16", "bf16"))
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    p.add_argument("--full", action="store_true", help="include the largest benchdnn shapes")
    p.add_argument("--json", dest="json_path", metavar="PATH")
    p.add_argument("--junit", dest="junit_path", metavar="PATH")
    p.add_argument("--quiet", action="store_true", help="no progress bar, summary only")


def add_command(sub) -> None:
    c = sub.add_parser("conformance", help="run the conformance suite (the main job)")
    add_arguments(c)
    c.set_defaults(func=run)


def _selected(checks, args):
    out = []
    for c in checks:
        if args.pattern and args.pattern not in c.case and not fnmatch.fnmatch(c.case, args.pattern):
            continue
        if args.backend and c.backend not in args.backend:
            continue
        if args.dtype and c.dtype not in args.dtype:
            continue
        out.append(c)
    return out


def _versions() -> dict:
    import numpy
    import onnx
    import onnxruntime
    v = {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__}
    try:
        import torch
        v["torch"] = torch.__version__
    except ImportError:
        v["torch"] = None
    return v


def run(args) -> int:
    from .suite import catalog, run_check
    start = time.time()
    checks = _selected(catalog(args.full), args)
    if args.list:
        for c in checks:
            print(f"{c.case}\t{c.convention}\t{c.backend}\t{c.dtype}")
        return 0
    records = []
    for i, check in enumerate(checks, 1):
        records.append(run_check(check))
        if not args.quiet and sys.stderr.isatty() or (not args.quiet and i % 50 == 0):
            _progress(i, len(checks))
    if not args.quiet:
        _progress(len(checks), len(checks), end="\n")
    _table(records)
    counts = {s: sum(r.status == s for r in records) for s in ("pass", "fail", "skip")}
    print(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
          f"in {time.time() - start:.1f}s")
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"results": [r.__dict__ for r in records], "versions": _versions()}, f, indent=1)
    if args.junit_path:
        _junit(records, args.junit_path)
    return 1 if counts["fail"] else 0


def _progress(i, n, end="\r"):
    width = 30
    done = width * i // max(n, 1)
    print(f"[{'#' * done}{'.' * (width - done)}] {i}/{n}", end=end, file=sys.stderr, flush=True)


def _table(records) -> None:
    rows = [("case", "convention", "backend", "dtype", "max_abs", "max_rel", "verdict")]
    for r in records:
        fmt = (lambda v: "-" if v is None else f"{v:.2e}")
        verdict = r.status.upper() + (f" ({r.reason})" if r.status != "pass" and r.reason else "")
        rows.append((r.case[:58], r.convention, r.backend, r.dtype, fmt(r.max_abs_err), fmt(r.max_rel_err), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:6], widths)) + "  " + row[6][:160])


def _junit(records, path) -> None:
    from xml.etree import ElementTree as ET
    suite = ET.Element("testsuite", name="dml-desc-conformance", tests=str(len(records)),
                       failures=str(sum(r.status == "fail" for r in records)),
                       skipped=str(sum(r.status == "skip" for r in records)))
    for r in records:
        case = ET.SubElement(suite, "testcase", classname=f"{r.convention}.{r.backend}.{r.dtype}", name=r.case)
        if r.status == "fail":
            ET.SubElement(case, "failure", message=r.reason)
        elif r.status == "skip":
            ET.SubElement(case, "skipped", message=r.reason)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance", description="dml-desc conformance suite")
    add_arguments(p)
    return run(p.parse_args(argv))
