"""The report files the suite and the matrix write: checked before a run, written atomically after it."""
from __future__ import annotations


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
    """A report path given with `flag`: refused before the suite runs unless a regular file can be written there."""
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
