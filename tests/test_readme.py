"""Every example in README.md and in docs/*.md runs as shown, read from the documents themselves so they cannot drift.

What runs, in each document's order, in one scratch folder per document holding a copy of examples/ (the paths
they show are relative to the repository root):
- every fenced ```python block, as a fresh `python -` (a newcomer pasting it); a line
  `print(...)  # -> TEXT` must print the line TEXT;
- every command line that starts with `dml-desc ` or `python ` (4-space indented, or in a ```sh / ```bash /
  ```console fence), through bash. `dml-desc` is the installed entry point next to this interpreter, or
  `python -m dml_desc.cli` where the project is not installed.
The set-up lines (`python3 -m venv ...`, `pip install ...`) are not run: they install.

A block that cannot run everywhere carries a marker on the line just before it, visible in the README's source:
    <!-- readme-test: requires NAME [NAME ...] -->   skipped where one is missing, naming it; a NAME is a Python
                                                     module, or oneDNN (the library the onednn extra installs)
    <!-- readme-test: skip REASON -->                 never run, for the REASON given
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# Documents other engineers are writing at the same time; the README links them before they exist here.
PENDING_DOCS: set = set()     # docs linked before they are written (none now)
MARKER = re.compile(r"<!--\s*readme-test:\s*(requires|skip)\s+(.*?)\s*-->")
COMMAND = re.compile(r"^(dml-desc|python) ")
EXPECTED = re.compile(r"^\s*print\(.*\)\s+#\s*->\s*(\S.*)$")


@dataclass
class Step:
    kind: str            # "python" or "sh"
    text: str
    line: int            # 1-based line in the document
    requires: tuple = ()
    skip: str = ""
    doc: str = "README.md"   # the document, relative to the repository root

    def __str__(self):
        return f"{self.doc}:{self.line}"


def readme_steps(text: str) -> list:
    """The runnable steps of a README, in order."""
    steps, lines, i, marker = [], text.splitlines(), 0, None
    while i < len(lines):
        line = lines[i]
        found = MARKER.search(line)
        if found:
            marker, i = found.groups(), i + 1
            continue
        fence = re.match(r"^```(\w*)", line)
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            body, lang = lines[i + 1:end], fence.group(1)
            if lang == "python":
                steps.append(_step("python", "\n".join(body) + "\n", i + 2, marker))
            elif lang in ("sh", "bash", "console", "shell"):
                steps += [_step("sh", cmd, i + 2 + k, marker) for k, cmd in enumerate(body) if COMMAND.match(cmd)]
            marker, i = None, end + 1
            continue
        if line.startswith("    ") and COMMAND.match(line[4:]):
            steps.append(_step("sh", line[4:], i + 1, marker))
        elif line.strip() and not line.startswith("    "):
            marker = None
        i += 1
    return steps


def _step(kind: str, text: str, line: int, marker) -> Step:
    if marker is None:
        return Step(kind, text, line)
    what, arg = marker
    return Step(kind, text, line, requires=tuple(arg.split())) if what == "requires" else Step(kind, text, line,
                                                                                                  skip=arg)


STEPS = readme_steps(README.read_text(encoding="utf-8"))
DOC_STEPS = [Step(s.kind, s.text, s.line, s.requires, s.skip, doc=path.relative_to(ROOT).as_posix())
             for path in DOCS for s in readme_steps(path.read_text(encoding="utf-8"))]


def missing(name: str) -> str | None:
    """Why `name` (a Python module, or oneDNN) is not available here; None when it is."""
    if name == "oneDNN":
        from dml_desc.runtimes.onednn import missing_reason
        return missing_reason()
    top = importlib.util.find_spec(name.split(".")[0])
    return None if top is not None and importlib.util.find_spec(name) is not None else f"{name} is not installed"


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One scratch folder per document, made on first use (see `_scratch`)."""
    return {}


@pytest.fixture
def workdir(step, workdirs, tmp_path_factory):
    """The scratch folder of `step`'s document: its steps run in order in one folder."""
    if step.doc not in workdirs:
        workdirs[step.doc] = _scratch(tmp_path_factory.mktemp(Path(step.doc).stem))
    return workdirs[step.doc]


def _scratch(work: Path) -> Path:
    """A scratch folder with examples/ and a bin/ whose `dml-desc` and `python` are this interpreter's."""
    shutil.copytree(ROOT / "examples", work / "examples")
    bindir = work / ".bin"
    bindir.mkdir()
    entry = Path(sys.executable).parent / "dml-desc"
    shims = {"python": f'exec "{sys.executable}" "$@"',
             "dml-desc": f'exec "{entry}" "$@"' if entry.exists() else f'exec "{sys.executable}" -m dml_desc.cli "$@"'}
    for name, body in shims.items():
        (bindir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bindir / name).chmod(0o755)
    return work


def _env(work: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{work / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.parametrize("step", STEPS + DOC_STEPS, ids=str)
def test_readme_step_runs_as_shown(step: Step, workdir):
    if step.skip:
        pytest.skip(f"{step}: marked not run: {step.skip}")
    for name in step.requires:
        why = missing(name)
        if why:
            pytest.skip(f"{step} needs {name}: {why}")
    if step.kind == "python":
        proc = subprocess.run([sys.executable, "-"], input=step.text, cwd=workdir, env=_env(workdir),
                              capture_output=True, text=True, timeout=600)
    else:
        proc = subprocess.run(["bash", "-c", step.text], cwd=workdir, env=_env(workdir), capture_output=True,
                              text=True, timeout=600)
    assert proc.returncode == 0, f"{step}: {step.text}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    if step.kind == "python":
        printed = [line.strip() for line in proc.stdout.splitlines()]
        for expected in (m.group(1).strip() for m in map(EXPECTED.match, step.text.splitlines()) if m):
            assert expected in printed, f"{step}: printed {printed}, the README shows {expected!r}"


def repository_copy(target: Path) -> Path:
    """The repository's files (no .git, environments or caches) copied to `target`: a checkout's root."""
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".pytest_cache",
                                                                ".hypothesis", "*.egg-info", "shared"))
    return target


def test_the_tour_runs_as_pasted_from_the_repository_root(tmp_path):
    """The README's commands and Python blocks (those without a marker; the markers' run above), in order, each in a
    fresh shell at a checkout's root with only the environment's bin folder first on PATH: `dml-desc` and `python`
    are the environment's own, as after the set-up command (issue 31: the tour must run as pasted there)."""
    bindir = Path(sys.executable).parent
    if not (bindir / "dml-desc").exists():
        pytest.skip(f"dml-desc is not installed in {bindir} (pip install -e . installs it)")
    root = repository_copy(tmp_path / "checkout")
    env = {"PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "PYTHONPATH": str(root)}      # what the editable install of this checkout gives
    steps = [s for s in STEPS if not s.requires and not s.skip]
    assert len([s for s in steps if s.kind == "sh"]) >= 10 and len([s for s in steps if s.kind == "python"]) >= 3
    for step in steps:
        argv = ["bash", "--noprofile", "--norc", "-c", "python -" if step.kind == "python" else step.text]
        proc = subprocess.run(argv, input=step.text if step.kind == "python" else None, cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, \
            f"{step}: {step.text}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_readme_has_the_promised_examples():
    """The tour's blocks and commands are found, use files that exist, and hold no pseudo-syntax."""
    commands = [s.text for s in STEPS if s.kind == "sh"]
    assert len([s for s in STEPS if s.kind == "python"]) >= 3
    assert "dml-desc build examples/onednn_deconv_bwd_d.json -o d.onnx" in commands
    for cmd in commands:
        assert not re.search(r"\[-|\bPATTERN\b|\.\.\.", cmd), f"not pasteable: {cmd}"
    for path in set(re.findall(r"\bexamples/[\w./-]+\.(?:json|py)\b", README.read_text(encoding="utf-8"))):
        assert (ROOT / path).exists(), f"README names {path}, which does not exist"


# Inline links and images `[text](target#anchor)` (or `(<target>)`), and reference definitions alone on their
# line `[label]: target#anchor`
LINK = re.compile(r"\]\((?:<([^>#]*)(?:#([^>]*))?>|([^)#\s]*)(?:#([^)\s]*))?)(?:\s+\"[^\"]*\")?\)"
                  r"|^ {0,3}\[[^\]]+\]:[ \t]+<?([^\s#>]+)(?:#([^\s>]*))?>?(?:[ \t]+\"[^\"]*\")?[ \t]*$", re.M)


def links(text: str) -> list:
    """(target, anchor) of every link in a Markdown text; target '' for a link within the same document."""
    out = []
    for m in LINK.finditer(text):
        target, anchor = next(((m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i) is not None))
        out.append((target, anchor or ""))
    return out


def heading_anchors(text: str) -> set:
    """The anchors GitHub gives a Markdown document's headings: lower case, punctuation dropped, spaces -> '-'."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+\s+(.*)$", text, re.M)}


def test_the_link_reader_finds_every_kind():
    text = "see [a](docs/a.md), ![p](x.svg \"title\"), [b](<docs/b c.md#sec>), [top](#intro)\n[r]: docs/r.md#x\n"
    assert links(text) == [("docs/a.md", ""), ("x.svg", ""), ("docs/b c.md", "sec"), ("", "intro"),
                           ("docs/r.md", "x")]
    assert heading_anchors("# Intro\n## The suite's `--json` (v2)\n") == {"intro", "the-suites---json-v2"}


@pytest.mark.parametrize("doc", [README] + DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path):
    """Every relative link in the README and docs/ names a file that exists (documents being written elsewhere
    aside, listed in PENDING_DOCS), and an anchor into a Markdown file names one of its headings."""
    text = doc.read_text(encoding="utf-8")
    found = links(text)
    if doc == README:
        assert len(found) >= len(DOCS), "the link reader finds fewer links than the README must have"
    for target, anchor in found:
        if re.match(r"^[a-z]+:", target):
            continue
        path = (doc.parent / target).resolve() if target else doc
        if path.relative_to(ROOT).as_posix() in PENDING_DOCS:
            continue
        assert path.exists(), f"{doc.relative_to(ROOT)} links {target}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in heading_anchors(path.read_text(encoding="utf-8")), \
                f"{doc.relative_to(ROOT)} links {target}#{anchor}: {path.name} has no such heading"


def test_readme_is_short_and_the_docs_are_linked():
    """The README is a newcomer's ten-minute read (issue 24: about 250 lines) and links every document in docs/."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 270
    for path in DOCS:
        assert f"({path.relative_to(ROOT).as_posix()})" in text, f"README does not link {path.name}"
    assert "semantics.md" in text and (ROOT / "docs" / "semantics.md").exists()


def test_code_cites_the_semantics_document_where_it_is():
    """Every mention of semantics.md in the code names docs/semantics.md, the file in the repository."""
    for pkg in ("dml_desc", "onnx_ops", "conformance", "bench"):
        for path in (ROOT / pkg).rglob("*.py"):
            for line in path.read_text(encoding="utf-8").splitlines():
                assert "semantics.md" not in line or "docs/semantics.md" in line, f"{path}: {line.strip()}"


def test_markers_are_few_and_name_what_they_need():
    markers = MARKER.findall(README.read_text(encoding="utf-8"))
    assert len(markers) <= 3, markers
    assert all(arg.strip() for _, arg in markers)
    for name in {n for s in STEPS + DOC_STEPS for n in s.requires}:
        assert name == "oneDNN" or re.fullmatch(r"[A-Za-z_][\w.]*", name), name


def test_the_parser_reads_fences_indents_and_markers():
    text = ("intro\n\n    dml-desc convert --help\n    pip install x\n\n<!-- readme-test: skip needs CUDA -->\n"
            "```python\nprint(1)  # -> 1\n```\n\n```sh\npython -m conformance --list-backends\nls\n```\n"
            "- a list item\n    continued python prose line\n")
    steps = readme_steps(text)
    assert [(s.kind, s.text.strip(), s.line, s.skip) for s in steps] == [
        ("sh", "dml-desc convert --help", 3, ""), ("python", "print(1)  # -> 1", 8, "needs CUDA"),
        ("sh", "python -m conformance --list-backends", 12, "")]


def public_api_without_docstrings() -> list:
    """Public functions and classes (and the public methods of public classes) of the three packages that have
    no docstring, as 'path:line:name'."""
    import ast
    missing = []
    for pkg in ("dml_desc", "onnx_ops", "conformance"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if any(p.startswith("_") and p not in ("__init__.py", "__main__.py") for p in parts):
                continue
            body = ast.parse(path.read_text(encoding="utf-8")).body
            documented = {c.name: {f.name for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                   and ast.get_docstring(f)} for c in body if isinstance(c, ast.ClassDef)}
            stack = [(node, "", set()) for node in body]
            while stack:
                node, prefix, inherited = stack.pop()
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or \
                        node.name.startswith("_"):
                    continue
                if ast.get_docstring(node) is None and node.name not in inherited:    # an override inherits its doc
                    missing.append(f"{'/'.join(parts)}:{node.lineno}:{prefix}{node.name}")
                if isinstance(node, ast.ClassDef):
                    bases = set().union(*(documented.get(getattr(b, "id", ""), set()) for b in node.bases))
                    stack += [(child, f"{prefix}{node.name}.", bases) for child in node.body]
    return missing


def test_public_api_is_documented():
    """Every public function and class says what it does (issue 13 counted 97 of 162 without a docstring)."""
    assert public_api_without_docstrings() == []
    import dml_desc
    first = dml_desc.__doc__.splitlines()
    assert "Start here" in first[2] and "conventions.load" in first[2] and "--help" in first[5]
    for pkg in ("dml_desc", "onnx_ops", "conformance"):
        assert (ROOT / pkg / "py.typed").exists()


# Private names imported across modules: only a third party's (onnxruntime.training has no public graph helper)
KNOWN_PRIVATE_IMPORTS = {("onnx_ops/training/__init__.py", "_graph_utils"),     # onnxruntime.training's, not ours
                         ("onnx_ops/training/coverage.py", "_training_graph_utils")}   # its gradient-graph step


def private_imports(pkg: str) -> set:
    """(path, name) for every `from X import _name` in package `pkg` where X is another module."""
    import ast
    found = set()
    for path in sorted((ROOT / pkg).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                found |= {(path.relative_to(ROOT).as_posix(), a.name) for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")}
    return found


def test_no_private_helper_is_imported_across_modules():
    """A helper another module uses is public (issue 21: `_pascal`, `_tensor`, `_closest`, `_reason_group`,
    `_torch`, `_inputs`, `_random_grad` were imported across modules)."""
    found = private_imports("conformance") | private_imports("dml_desc") | private_imports("onnx_ops")
    assert not found - KNOWN_PRIVATE_IMPORTS, sorted(found - KNOWN_PRIVATE_IMPORTS)


def test_no_table_is_called_just_dtypes():
    """Issue 21: `DTYPES` named six different tables. Each now says what it maps (ONNX_ELEM_OF_NUMPY,
    ONEDNN_DTYPES, DML_DATA_TYPE_OF, NUMPY_DTYPES, SUITE_DTYPES, CONFIG_DTYPES); a bare `DTYPES` is one again."""
    import ast
    bare = []
    for pkg in ("dml_desc", "onnx_ops", "conformance"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.ImportFrom):
                    names = [a.asname or a.name for a in node.names]
                else:
                    continue
                bare += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n == "DTYPES"]
    assert not bare, bare
