"""What a conformance run prints and writes, shared by the CLI (conformance.cli), the HTML report
(conformance.report) and the matrix (conformance.matrix): the counts and summaries of a run's records, and the
checked, atomic writing of a report file."""
from __future__ import annotations


STATUSES = ("pass", "fail", "skip", "unsupported")


def summary_count(counts: dict) -> str:
    """'6 passed, 0 failed, 0 skipped' (', 3 unsupported by this kernel' where a kernel left cases out)."""
    text = f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"
    return text + (f", {counts['unsupported']} unsupported by this kernel" if counts.get("unsupported") else "")


def summary(records) -> dict:
    """{'passes_by_oracle': {oracle: n}, 'skips_by_reason': {reason: n}, 'coverage': ...} of a run. coverage, per
    backend that left cases out: {backend: {'ran', 'unsupported', 'passed', 'failed', 'unsupported_by_reason'}}."""
    from collections import Counter
    return {"passes_by_oracle": dict(Counter(r.oracle or "-" for r in records if r.status == "pass").most_common()),
            "skips_by_reason": dict(Counter(reason_group(r.reason) for r in records
                                            if r.status == "skip").most_common()),
            "coverage": coverage(records)}


def coverage(records) -> dict:
    """For each backend with unsupported cases: how many of the cases it was offered it ran, and why not the rest."""
    from collections import Counter
    out = {}
    for backend in sorted({r.backend for r in records if r.status == "unsupported"}):
        mine = [r for r in records if r.backend == backend]
        counts = Counter(r.status for r in mine)
        out[backend] = {"ran": counts["pass"] + counts["fail"], "passed": counts["pass"], "failed": counts["fail"],
                        "unsupported": counts["unsupported"],
                        "unsupported_by_reason": dict(Counter(unsupported_group(r.reason) for r in mine
                                                              if r.status == "unsupported").most_common())}
    return out


def unsupported_group(reason: str) -> str:
    """An unsupported reason without the case's own values: 'it declares modes=('nearest', 'linear')'."""
    reason = reason.removeprefix("unsupported by this kernel: ")
    return cut(reason.split("; this case has", 1)[0], 160)


def failures_first(records) -> list:
    """Failures with numbers (a wrong dX) before those without (an exception, a refusal, a wrong shape)."""
    return sorted(records, key=lambda r: not r.numerical)


def reason_group(reason: str) -> str:
    """A skip reason without its case-specific tail (after the first ': ' or '; '), so like skips group."""
    import re
    return cut(re.split(r": |; ", reason, maxsplit=1)[0], 160)


def summary_lines(records) -> list:
    """'passes by oracle: ...' and one 'skipped N: reason' line per reason group."""
    s = summary(records)
    lines = ["passes by oracle: " + ", ".join(f"{k} {v}" for k, v in s["passes_by_oracle"].items())] \
        if s["passes_by_oracle"] else []
    for backend, c in s["coverage"].items():
        offered = c["ran"] + c["unsupported"]
        lines.append(f"coverage of {backend}: ran {c['ran']} of the {offered} cases offered "
                     f"({100 * c['ran'] // max(offered, 1)}%): {c['passed']} passed, {c['failed']} failed, "
                     f"{c['unsupported']} unsupported by this kernel")
        lines += [f"  unsupported {n}: {why}" for why, n in c["unsupported_by_reason"].items()]
    return lines + [f"  skipped {n}: {why}" for why, n in s["skips_by_reason"].items()]


def write_report(path: str, text: str, field: str = "OUT") -> None:
    """Write a report file whole, through the project's one atomic writer (dml_desc.files)."""
    from dml_desc.files import write_atomic
    write_atomic(path, text.encode("utf-8"), field=field)


def check_folder(path: str) -> None:
    """--save-failures DIR: a folder that exists or can be made (its parent exists), writable."""
    import os
    from dml_desc.errors import require
    require(not os.path.exists(path) or os.path.isdir(path), "--save-failures", path, "is a file; name a folder")
    parent = os.path.dirname(os.path.abspath(path))
    require(os.path.isdir(path) or os.path.isdir(parent), "--save-failures", path,
            "is in a folder that does not exist")
    require(os.access(path if os.path.isdir(path) else parent, os.W_OK), "--save-failures", path, "cannot be written")


def check_writable(flag: str, path) -> None:
    """A report file `path` (given by `flag`) that can be written: a regular file or none yet, in a folder that
    exists; checked before the run, not after."""
    import os
    from dml_desc.errors import require
    from dml_desc.files import regular_target
    if not path:
        return
    regular_target(path, flag)        # a device, FIFO, socket, symlink or folder is refused (dml_desc.files)
    folder = os.path.dirname(os.path.abspath(path))
    require(not os.path.isdir(path), flag, path, "is a folder; name a file")
    require(os.path.isdir(folder), flag, path, "is in a folder that does not exist")
    require(os.access(folder, os.W_OK) and (not os.path.exists(path) or os.access(path, os.W_OK)), flag, path,
            "cannot be written")


def cut(text: str, n: int) -> str:
    """`text` at most n characters, cut at a word boundary with '...' (never mid-word)."""
    if len(text) <= n:
        return text
    head = text[:n - 4]
    head = head.rsplit(" ", 1)[0] if " " in head[n // 2:] else head
    return head.rstrip(",;:(") + " ..."
