"""The habits (docs/contributing.md): `ruff check .` and `mypy` (configured in pyproject.toml) pass on the tree.
Each runs as its own process from the repository root; a test skips, saying so, where its tool is not installed
(the `test` extra installs both)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the `test` extra installs it)")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def test_ruff_finds_nothing():
    proc = _run_tool("ruff", "check", ".", "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_passes_on_the_typed_packages():
    proc = _run_tool("mypy", "--no-incremental")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_checks_every_package_that_ships_py_typed():
    """A package that promises types (py.typed) is in [tool.mypy]'s files (issue 35: onnx_ops and conformance
    shipped it unchecked)."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    checked = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"])
    typed = {p.parent.name for p in ROOT.glob("*/py.typed")}
    assert typed == {"dml_desc", "onnx_ops", "conformance"} and typed <= checked, (typed, checked)
