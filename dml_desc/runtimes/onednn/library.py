"""Finding libdnnl.so.3 in this environment (the parent only looks) and opening it (the child process only)."""
from __future__ import annotations

import ctypes as C
import os
import sys
from pathlib import Path
from typing import cast

from ...errors import DescError
from .bindings import SIGNATURES

EXTRA = "pip install 'dml-desc[onednn]'"
LIB_ENV = "DML_DESC_ONEDNN_LIB"         # an explicit path to libdnnl.so.3
LIB_NAME = "libdnnl.so.3"
DISTRIBUTION = "onednn-cpu-gomp"


def find_library() -> Path | None:
    """libdnnl.so.3 inside this environment: $DML_DESC_ONEDNN_LIB, the onednn-cpu-gomp wheel's files, <prefix>/lib."""
    explicit = os.environ.get(LIB_ENV)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    for path in _wheel_files() + [Path(p) / "lib" / LIB_NAME for p in _prefixes()]:
        if path.is_file():
            return path.resolve()
    return None


def _wheel_files() -> list[Path]:
    from importlib import metadata
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return []
    return [Path(cast("os.PathLike[str]", dist.locate_file(f)))      # a pathlib.Path (typeshed: SimplePath)
            for f in dist.files or () if f.name == LIB_NAME]


def _prefixes() -> list[str]:
    import sysconfig
    return list(dict.fromkeys([sys.prefix, sysconfig.get_paths()["data"]]))


def missing_reason() -> str | None:
    """Why oneDNN cannot run here (None when it can)."""
    if find_library() is not None:
        return None
    if os.environ.get(LIB_ENV):
        return f"{LIB_ENV}={os.environ[LIB_ENV]} is not a file"
    return f"oneDNN (libdnnl.so.3) is not installed in this environment: {EXTRA} (Linux x86-64)"


def require_library() -> Path:
    """The path of libdnnl.so.3 in this environment, or a DescError saying how to install it."""
    lib = find_library()
    if lib is None:
        raise DescError("backend", "onednn", cast(str, missing_reason()))     # a str: no library was found
    return lib


def open_library(path: str | os.PathLike[str]) -> C.CDLL:
    """Open the shared library at `path` with ctypes and set the argtypes and restype of every function called."""
    lib = C.CDLL(str(path))
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def version_of(lib: C.CDLL) -> str:
    """An opened library's version, 'major.minor.patch'."""
    v = lib.dnnl_version().contents
    return f"{v.major}.{v.minor}.{v.patch}"
