"""`dml-desc conformance` / `python -m conformance`: run the catalog, print a table, exit non-zero on failure.

Exit codes: 0 all checks passed or skipped, 1 a check failed, 2 a usage error (e.g. a filter that matches nothing).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time

from .backends.base import SUITE_DTYPES
from .backends.worker import DEFAULT_CASE_TIMEOUT, close_all
from .output import (STATUSES, check_folder, check_writable, cut, failures_first, summary, summary_count,
                     summary_lines, write_report)

# The backend families users type, each naming the suite's backends by prefix (order matters: CUDA first). A
# suite backend name (onnxruntime:CPUExecutionProvider, ort-cpu-deconv, ...) is accepted too, as an alias of
# itself; any other backend name (py:MODULE:NAME, onnxruntime:PROVIDER, onnxruntime-native:PROVIDER,
# onednn-primitive, an installed plug-in) runs every kernel case on that backend.
BACKEND_FAMILIES = {"numpy": ("numpy",), "onnxruntime-cuda": ("onnxruntime:CUDA", "onnxruntime-native:CUDA"),
                    "onnxruntime": ("ort-cpu", "onnxruntime"), "torch": ("torch",), "onednn": ("onednn",),
                    "converter": ("converter",)}


class UsageError(Exception):
    """A filter or option that selects nothing: one line on stderr, exit 2."""


def family(backend: str) -> str:
    """The user-facing name of a suite backend: 'ort-cpu-lowered' -> 'onnxruntime'."""
    return next((name for name, prefixes in BACKEND_FAMILIES.items() if backend.startswith(prefixes)), backend)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The conformance options, shared by `dml-desc conformance` and `python -m conformance`."""
    p.add_argument("-k", dest="pattern", help="run only cases whose name contains PATTERN (or matches a glob)")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help=f"only these backends (repeatable): {', '.join(BACKEND_FAMILIES)}, a name from "
                   "--list-backends, "
                   "onnxruntime:PROVIDER, onnxruntime-native:PROVIDER, onednn-primitive, or your own kernel as "
                   "py:MODULE:NAME (see docs/own-kernel.md); those run every kernel case")
    p.add_argument("--dtype", action="append", choices=SUITE_DTYPES)
    p.add_argument("--list", action="store_true", help="list the selected checks and exit")
    p.add_argument("--list-backends", action="store_true", help="list the backend names and what they run, and exit")
    p.add_argument("--full", action="store_true", help="include the largest benchdnn shapes, and run every "
                   "dtype (f32, bf16, f16) of each benchdnn shape on the real oneDNN (the default takes f32 and one "
                   "of bf16/f16 per shape, in turn)")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every result and the versions as JSON")
    p.add_argument("--junit", dest="junit_path", metavar="PATH", help="write JUnit XML")
    p.add_argument("--html", dest="html_path", metavar="PATH", help="write a self-contained HTML report: the "
                   "backend x convention x mode matrix, every failure with its description and pictures")
    p.add_argument("--quiet", action="store_true", help="print only failures and the summary line")
    p.add_argument("--fuzz", type=bounded_int(0, MAX_FUZZ), default=None, metavar="N",
                   help="randomized adjoint cases (conformance/adjoint/) judged against onnxruntime's own Resize "
                   f"transposed (default 12; 0 to {MAX_FUZZ})")
    p.add_argument("--seed", type=bounded_int(0, None), default=0, metavar="S",
                   help="the adjoint cases' seed, an integer >= 0 (default 0)")
    p.add_argument("--case-timeout", type=seconds, default=DEFAULT_CASE_TIMEOUT, metavar="SECONDS",
                   help="a plug-in case (py:, c:, an installed plug-in) running longer fails, and its worker "
                   f"process is restarted (default {DEFAULT_CASE_TIMEOUT:g}; see docs/own-kernel.md)")
    p.add_argument("--save-failures", dest="save_dir", metavar="DIR", help="write each failure to DIR/CASE/: "
                   "description.json, dy.npy, expected.npy, got.npy (and case.txt with the commands that rerun it)")
    p.add_argument("--unsupported-fails", action="store_true", help="count the cases a kernel does not implement "
                   "(it declares so, or raises NotImplementedError) as failures; by default they are its coverage")
    p.add_argument("--matrix", action="store_true", help="add the cross-runtime matrix (`dml-desc matrix`: each "
                   "installed runtime's gradient against its own forward) to the --html report")
    p.add_argument("--semantics", choices=("ort-1.19", "ort-1.27", "onnx-spec"),
                   help="the ONNX Resize semantics to check against (nearest tie rule); default: the installed "
                   "onnxruntime's (ort-1.19 up to 1.26, ort-1.27 from 1.27)")


MAX_FUZZ = 100_000          # --fuzz's bound (100,000 drawn cases run for hours)


def bounded_int(low: int, high):
    """An argparse `type=`: an integer in low..high (high None: no upper bound), else argparse's one-line error."""
    def parse(text: str) -> int:
        rule = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {rule}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r} must be {rule}")
        return value
    return parse


def seconds(text: str) -> float:
    """An argparse `type=` for --case-timeout: a finite number of seconds > 0."""
    import math
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds > 0 (e.g. 60)")
    return value


def add_command(sub: argparse._SubParsersAction) -> None:
    """Register `conformance` on the `dml-desc` subcommand parser."""
    c = sub.add_parser("conformance", help="run the conformance suite (the main job)",
                       description="Run the conformance suite. Exit 0 when nothing failed, 1 when a check failed, "
                       "2 when a filter matches nothing.")
    add_arguments(c)
    c.set_defaults(func=run)
    from .matrix import add_command as add_matrix
    add_matrix(sub)


def _matches_backend(backend: str, wanted, aliases=None) -> bool:
    """Whether `backend` is one of the wanted names (a family, a suite name, or a plug-in's spec in `aliases`)."""
    return any(backend == w or family(backend) == w or (aliases or {}).get(w) == backend for w in wanted)


def plugin_workers(extras, semantics, timeout) -> list:
    """The extra backends with each plug-in (py:, c:, an installed plug-in) started in its worker process
    (conformance/backends/worker.py); the other names stay names."""
    from .backends.worker import is_plugin, load
    return [load(b, semantics, timeout) if is_plugin(b) else b for b in extras]


def extra_backends(names) -> list:
    """The --backend names that are backends of their own (not a family or a suite backend name): resolved
    now, so a name that is none is one line naming the closest valid one."""
    from .backends import resolve
    from .backends.registry import installed_plugins
    plugins = installed_plugins()
    out = []
    for name in names or ():
        if name == "onnxruntime:CPUExecutionProvider":
            continue                    # a default backend: its kernel checks are in the catalog already
        if ":" in name or name in plugins:
            out.append(name)
            continue
        if name in BACKEND_FAMILIES or name in SUITE_NAMES:
            continue                    # a filter (oneDNN: the batched checks of onednn_suite run the cases)
        resolve(name)                   # raises: no such backend (with the closest name)
    return out


# The suite's own backend names (each an alias of itself in --backend).
SUITE_NAMES = ("numpy", "converter", "ort-cpu", "ort-cpu-deconv", "torch-autograd", "onednn-primitive",
               "onednn-graph", "onednn-writer", "onnxruntime:CPUExecutionProvider", "onnxruntime:CUDAExecutionProvider",
               "onnxruntime-native:CUDAExecutionProvider", "torch")


def _selected(checks, args, aliases=None) -> list:
    """The checks the filters select; a filter that matches nothing is a UsageError naming the valid values.
    `aliases`: {spec: the name its backend records}, for a plug-in that names itself."""
    if args.backend:
        for name in args.backend:
            if not any(_matches_backend(c.backend, [name], aliases) for c in checks):
                from .backends.registry import closest_hint
                state = "has no checks in this catalog" if name in BACKEND_FAMILIES else \
                    f"is no backend{closest_hint(name, [])}"
                raise UsageError(f"--backend {name!r} {state}; the backends with checks are "
                                 f"{', '.join(sorted({family(c.backend) for c in checks}))} (--list-backends "
                                 "shows every name)")
    if args.pattern and not any(_name_matches(c.case, args.pattern) for c in checks):
        raise UsageError(f"-k {args.pattern!r} matches no case name; `--list` prints all {len(checks)} checks")
    out = [c for c in checks if (not args.pattern or _name_matches(c.case, args.pattern))
           and (not args.backend or _matches_backend(c.backend, args.backend, aliases))
           and (not args.dtype or c.dtype in args.dtype)]
    if not out:
        raise UsageError("the filters together (" + " ".join(_filters(args)) + ") match no check; "
                         f"the dtypes are {', '.join(SUITE_DTYPES)} and --list shows every check")
    return out


def _name_matches(case: str, pattern: str) -> bool:
    return pattern in case or fnmatch.fnmatch(case, pattern)


def _filters(args) -> list:
    return ([f"-k {args.pattern}"] if args.pattern else []) + [f"--backend {b}" for b in args.backend or ()] + \
        [f"--dtype {d}" for d in args.dtype or ()]


def _list_backends(checks) -> None:
    """One line per user-facing backend name: the suite backends it selects, with their check counts."""
    from collections import Counter
    counts = Counter(c.backend for c in checks)
    for fam in list(BACKEND_FAMILIES) + sorted({family(b) for b in counts} - set(BACKEND_FAMILIES)):
        parts = ", ".join(f"{b} ({n})" for b, n in sorted(counts.items()) if family(b) == fam) or "no checks here"
        print(f"{fam:18s} {parts}")
    from .backends.registry import installed_plugins
    plugins = ", ".join(installed_plugins()) or "none installed"
    print(f"{'(any of these)':18s} runs every kernel case: onnxruntime:PROVIDER, onnxruntime-native:PROVIDER, "
          f"onednn-primitive, py:MODULE:NAME (docs/own-kernel.md), dml_desc.backends plug-ins ({plugins})")


def _versions(semantics=None) -> dict:
    import numpy
    import onnx
    from dml_desc.conventions.onnx import installed_runtime, resolve_semantics
    v = {"onnx": onnx.__version__, "onnxruntime": installed_runtime(), "numpy": numpy.__version__,
         "onnx_semantics": resolve_semantics(semantics)}
    try:
        import torch
        v["torch"] = torch.__version__
    except ImportError:
        v["torch"] = None
    return v


def run(args: argparse.Namespace) -> int:
    """Run the selected checks; print the table (or only failures with --quiet) and the summary lines.
    Exit 1 when a check failed or nothing passed, 2 on a usage error."""
    for flag, path in (("--json", args.json_path), ("--junit", args.junit_path),
                       ("--html", getattr(args, "html_path", None))):
        check_writable(flag, path)       # before the suite runs, not after
    from dml_desc.errors import require
    require(bool(not getattr(args, "matrix", False) or getattr(args, "html_path", None)), "--matrix", True,
            "adds a section to the --html report: give --html PATH too (`dml-desc matrix` prints the matrix alone)")
    save_dir = getattr(args, "save_dir", None)
    if save_dir:
        check_folder(save_dir)
    start = time.time()
    semantics = getattr(args, "semantics", None)
    timeout = getattr(args, "case_timeout", DEFAULT_CASE_TIMEOUT)
    extras = plugin_workers(extra_backends(args.backend), semantics, timeout)
    try:
        return _run_suite(args, extras, start, semantics, save_dir)
    finally:
        close_all(extras)


def _run_suite(args, extras, start, semantics, save_dir=None) -> int:
    """The run itself, on the extra backends (names, or plug-ins in their workers); failures saved in `save_dir`."""
    from .suite import catalog, run_check
    from dml_desc.conventions.onnx import describe_semantics
    checks = catalog(args.full, semantics, extras)
    from .adjoint import DEFAULT_N, adjoint_checks, backend_adjoint_checks, may_match  # the randomized section
    n, seed = DEFAULT_N if getattr(args, "fuzz", None) is None else args.fuzz, getattr(args, "seed", 0)
    drawn = not (args.list and not args.pattern)     # --list names the randomized section without drawing it
    if drawn and (not args.pattern or may_match(args.pattern, n, seed)):
        _quiet_onnxruntime()                    # the section runs onnxruntime's forward to draw its cases
        checks += adjoint_checks(n, seed) + backend_adjoint_checks(extras, n, seed, semantics)
    if args.list_backends:
        _list_backends(checks)
        return 0
    try:
        checks = _selected(checks, args, {b.spec: b.name for b in extras if hasattr(b, "spec")})
    except UsageError as e:
        print(f"dml-desc: error: {e}", file=sys.stderr)
        return 2
    if args.list:
        for c in checks:
            print(f"{c.case}\t{c.convention}\t{c.backend}\t{c.dtype}")
        if not drawn:
            print(f"adjoint/*\t(the randomized adjoint section: {n} configurations drawn when it runs, seed {seed}; "
                  "-k adjoint --list names them)")
        return 0
    if any(not c.backend.startswith("numpy") for c in checks):
        _quiet_onnxruntime()                    # importing onnxruntime (and torch with it) only when it runs
    if not args.quiet:
        print(f"ONNX semantics: {describe_semantics(semantics)}")
    bar = not args.quiet and sys.stderr.isatty()     # off a terminal: no carriage-return progress
    records = []
    for i, check in enumerate(checks, 1):
        records.append(run_check(check, save_dir))
        if bar and (i % 10 == 0 or i == len(checks)):
            _progress(i, len(checks))
    if bar:
        print(file=sys.stderr)
    if getattr(args, "unsupported_fails", False):
        for r in records:
            if r.status == "unsupported":
                r.status = "fail"
    print_table(failures_first([r for r in records if r.status == "fail"]) if args.quiet else records)
    _failure_descriptions(records)
    counts = {s: sum(r.status == s for r in records) for s in STATUSES}
    print(f"{'' if args.quiet else chr(10)}{summary_count(counts)} in {time.time() - start:.1f}s")
    for line in summary_lines(records):
        print(line)
    if args.json_path:
        document = {"results": [r.as_json() for r in records], "summary": summary(records),
                    "versions": _versions(semantics)}
        write_report(args.json_path, json.dumps(document, indent=1, default=_jsonable), field="--json")
    if args.junit_path:
        _junit(records, args.junit_path)
    if getattr(args, "html_path", None):
        from .report import html_report
        extra = ""
        if getattr(args, "matrix", False):
            from .matrix import html_section, run_matrix
            extra = html_section(run_matrix())
        write_report(args.html_path, html_report(records, _versions(semantics), extra), field="--html")
    if counts["pass"] == 0 and counts["fail"] == 0:     # a failure says so itself; this is an all-skipped run
        what = "skipped" if not counts.get("unsupported") else "skipped or unsupported by this kernel"
        print(f"dml-desc: error: no check passed (everything selected was {what}): nothing was verified",
              file=sys.stderr)
        return 1
    return 1 if counts["fail"] else 0


def _failure_descriptions(records) -> None:
    """Each failing case (numerical failures first): the verdict, the worst element, the diagnosis, its description
    (in its backend's convention, ready for `dml-desc run` / `convert`) and where --save-failures wrote it."""
    from .diagnosis import describe_worst
    for r in failures_first([r for r in records if r.status == "fail"]):
        print(f"FAILED {r.case} [{r.backend}, {r.dtype}, oracle {r.oracle}]: {r.reason}")
        if r.worst:
            print(f"  {describe_worst(r.worst)}")
        if r.numerical:
            print("  diagnosis: " + (r.diagnosis or "no alternative explains it (conformance/diagnosis.py lists "
                                                    "those tried)"))
        if r.description is not None:
            print(f"  description ({r.convention}): " + json.dumps(r.description, default=_jsonable))
        if r.saved:
            print(f"  saved: {r.saved}")


def _jsonable(value):
    return repr(value)


def _quiet_onnxruntime() -> None:
    """onnxruntime's process-wide logger prints warnings about the models the suite builds on purpose (a
    deprecated coordinate mode, say) in colour on stderr; the verdicts say what matters."""
    try:
        import onnxruntime
        onnxruntime.set_default_logger_severity(3)
    except (ImportError, AttributeError):
        pass


def _progress(i, n):
    width = 30
    done = width * i // max(n, 1)
    from dml_desc.boundary import raw_stream        # the bar's own \r, past the escaping of input text
    print(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n}", end="", file=raw_stream(sys.stderr), flush=True)


def print_table(records) -> None:
    """One row per record; '-' where an error column means nothing (no numeric comparison, or no nonzero
    reference value for a relative error)."""
    if not records:
        return
    rows = [("case", "convention", "backend", "dtype", "max_abs", "max_rel", "verdict")]
    for r in records:
        fmt = (lambda v: "-" if v is None else f"{v:.2e}")
        verdict = r.status.upper() + (f" ({r.reason})" if r.status != "pass" and r.reason else "")
        if r.diagnosis:
            verdict = f"FAIL (diagnosis: {r.diagnosis}; {r.reason})"
        rows.append((cut(r.case, 58), r.convention, r.backend, r.dtype, fmt(r.max_abs_err), fmt(r.max_rel_err),
                     verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:6], widths)) + "  " + cut(row[6], 200))


def _junit(records, path) -> None:
    from xml.etree import ElementTree as ET
    suite = ET.Element("testsuite", name="dml-desc-conformance", tests=str(len(records)),
                       failures=str(sum(r.status == "fail" for r in records)),
                       skipped=str(sum(r.status == "skip" for r in records)))
    for r in records:
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"{r.convention}.{r.backend}.{r.dtype}"),
                             name=xml_text(r.case))
        props = ET.SubElement(case, "properties")
        for key in ("backend", "convention", "dtype", "oracle"):
            ET.SubElement(props, "property", name=key, value=xml_text(getattr(r, key)))
        if r.status == "fail":
            failure = ET.SubElement(case, "failure", message=xml_text(r.reason))
            if r.description is not None:
                failure.text = xml_text(json.dumps(r.description, default=_jsonable))
        elif r.status in ("skip", "unsupported"):
            ET.SubElement(case, "skipped", message=xml_text(r.reason))
    write_report(path, ET.tostring(suite, encoding="unicode", xml_declaration=True), field="--junit")


def xml_text(value) -> str:
    """`value` as text XML 1.0 can hold: dml_desc.errors.printable's escapes (control characters, lone
    surrogates, bidi controls), and U+FFFE / U+FFFF, which XML excludes too, as \\ufffe / \\uffff."""
    from dml_desc.errors import printable
    return printable(str(value)).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def main(argv: list[str] | None = None) -> int:
    """`python -m conformance [options]`; the same options as `dml-desc conformance`."""
    from dml_desc import __version__
    from dml_desc.cli import OneLineParser        # usage errors as one line, as `dml-desc conformance` has them
    p = OneLineParser(prog="dml-desc conformance", usage="python -m conformance [options]",
                      description="dml-desc conformance suite. Exit 0 when nothing failed, 1 when a check failed, "
                      "2 when a filter matches nothing.")
    p.add_argument("--version", action="version", version=f"dml-desc conformance {__version__}")
    add_arguments(p)
    from dml_desc.boundary import guarded   # the one error boundary: one line and exit 2 on bad input
    return guarded(lambda: run(p.parse_args(argv)))     # errors: "dml-desc: error: ..."
