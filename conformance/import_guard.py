"""Where the suite's imports come from: never from a stray `numpy.py` or `onnxruntime.py` in the working folder.
The standard library only: `python -m conformance` and the plug-in worker use it before they import anything else.

- `python -m` and `python -c` put the working folder first on sys.path; `take_working_folder_off()` removes that
  one entry (a folder the user lists in PYTHONPATH stays where it is);
- `install()` pins the project's packages (dml_desc, onnx_ops, conformance) to the folder this package was loaded
  from, wherever else a package of that name is (an older install, a folder in the working folder);
- plug-ins are imported in their worker process (conformance/backends/worker.py) after all of these, with the
  working folder appended at the end of sys.path by the registry: a module there is found only when nothing
  before it on the path has that name.
"""
from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

PROJECT = ("dml_desc", "onnx_ops", "conformance")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the folder holding the project's packages


def is_working_folder(entry: str) -> bool:
    """True for a sys.path entry naming the working folder ('' and '.' do)."""
    try:
        return os.path.realpath(entry or ".") == os.path.realpath(os.getcwd())
    except (OSError, TypeError, ValueError):        # a working folder that was removed, an odd entry
        return entry in ("", ".")


def take_working_folder_off() -> None:
    """Remove the working folder that `python -m` / `python -c` put first on sys.path, then install()."""
    if sys.path and not getattr(sys.flags, "safe_path", False) and is_working_folder(sys.path[0]):
        del sys.path[0]
    install()


class ProjectImports:
    """A meta path finder: the project's top-level packages from ROOT, whatever sys.path holds."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        """The spec of a top-level project package (None for any other name: the other finders decide)."""
        return PathFinder.find_spec(name, [ROOT]) if path is None and name in PROJECT else None


def install() -> None:
    """Put ProjectImports first on sys.meta_path (once)."""
    if not any(isinstance(f, ProjectImports) for f in sys.meta_path):
        sys.meta_path.insert(0, ProjectImports())
