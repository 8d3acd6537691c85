"""Files the project reads and writes, safely: the one atomic writer and the bounded reader.

- `write_atomic(path, data)` / `write_with(path, write)`: the target is replaced only when it is a regular file
  (or absent); never through a symlink, never a device, FIFO, socket or folder. The data goes to a temporary file
  in the same folder named `.NAME.dml-desc-tmp.PID.RANDOM`, is fsynced, optionally checked, and renamed over the
  target, so a reader sees the old file or the complete new one. The temporary file is removed on any error,
  KeyboardInterrupt (SIGINT) or SIGTERM; ones a killed process left behind for the same target are removed the
  next time that target is written (`stale_temp_files`).
- `read_bounded(path, limit, what)`: a file or stdin ("-") read whole only when it is at most `limit` bytes.
- `open_regular(path)` / `read_regular(path, limit, what)`: a regular file only (never a FIFO, device or folder,
  refused without blocking), opened, or read whole only when it is at most `limit` bytes.

File-system failures (ENOSPC, EFBIG, EACCES, EPERM, EROFS ...) raise `FileError`, a DescError that is also an
OSError: `errno`, `strerror` and `filename` (the user's path, never the temporary file) are those of the failure,
and the original OSError is its `__cause__`.
"""
from __future__ import annotations

import os
import secrets
import signal
import stat
import sys
import threading
from contextlib import contextmanager
from typing import Callable

from .errors import DescError

TEMP_MARK = ".dml-desc-tmp."


class FileError(DescError, OSError):
    """A file the project could not read or write; an OSError too (errno, strerror, filename = the user's path)."""

    def __init__(self, path, error: OSError | None, rule: str, field: str = "file"):
        DescError.__init__(self, field, str(path), rule)
        self.errno = error.errno if error is not None else None
        self.strerror = error.strerror if error is not None else None
        self.filename = str(path)

    def __str__(self):
        return self.args[0]


def regular_target(path, field: str = "OUT") -> str:
    """`path` as a str, checked as an output: not empty, not a folder, device, FIFO, socket or symlink, and in a
    folder that exists. Returns the path."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise DescError(field, path, "must be a non-empty file path")
    path = os.fspath(path)
    if isinstance(path, bytes):
        raise DescError(field, path, "must be a file path given as text")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise FileError(path, e, f"cannot be examined ({e.strerror})", field) from e
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise DescError(field, path, f"is {_kind(info.st_mode)}; only a regular file is replaced: name a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise DescError(field, path, "is in a folder that does not exist")
    return path


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def new_file_mode() -> int:
    """The mode a new file gets under the current umask, read without changing it (Linux /proc; else 0o644)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


def stale_temp_files(path) -> list[str]:
    """Temporary files of `path` that a process no longer running left behind (its PID is in the name)."""
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    prefix = f".{name}{TEMP_MARK}"
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    stale = []
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid = entry[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            stale.append(os.path.join(folder, entry))
    return stale


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def write_atomic(path, data: bytes, check: Callable[[str], None] | None = None, field: str = "OUT") -> None:
    """Replace the regular file `path` (or create it) with `data`, atomically; `check(temp_path)` may refuse the
    written file (raise) before it replaces `path`. See the module docstring for what is refused."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DescError("data", type(data).__name__, "must be bytes")

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    write_with(path, write, check, field)


def write_with(path, write: Callable[[str], None], check: Callable[[str], None] | None = None,
               field: str = "OUT") -> None:
    """Like `write_atomic`, for a writer that needs a file name: `write(temp_path)` writes the new contents."""
    path = regular_target(path, field)
    for old in stale_temp_files(path):          # left by a killed process
        try:
            os.remove(old)
        except OSError:
            pass
    try:
        mode = os.lstat(path).st_mode & 0o7777     # a rewritten file keeps its mode
    except FileNotFoundError:
        mode = new_file_mode()
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}{TEMP_MARK}{os.getpid()}.{secrets.token_hex(4)}")
    with _terminate_as_interrupt():
        try:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                os.close(fd)
                write(tmp)
                _fsync(tmp)
            except OSError as e:
                raise FileError(path, e, f"cannot be written ({e.strerror or e})", field) from e
            if check is not None:
                check(tmp)
            try:
                os.chmod(tmp, mode)
                regular_target(path, field)        # nothing became a device or a link meanwhile
                os.replace(tmp, path)
                _fsync_folder(folder)              # the rename itself survives a power cut
            except OSError as e:
                raise FileError(path, e, f"cannot be replaced ({e.strerror or e})", field) from e
        finally:
            if os.path.lexists(tmp):
                try:
                    os.remove(tmp)
                except OSError:
                    pass


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass                      # some file systems refuse fsync on a folder: the rename is still atomic
    finally:
        os.close(fd)


@contextmanager
def _terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt inside the block (main thread only), so `finally` removes the temp file."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt("terminated (SIGTERM)")
    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def read_bounded(path, limit: int, what: str, field: str = "FILE") -> bytes:
    """The bytes of a file (or stdin for "-"), refused before reading past `limit` bytes (a device such as
    /dev/zero, an endless stream, a file larger than any valid `what`)."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise DescError(field, path, "must be a non-empty file path")
    path = os.fspath(path)
    rule = f"is larger than any valid {what} ({limit} bytes at most)"
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as f:
                info = os.fstat(f.fileno())
                if stat.S_ISDIR(info.st_mode):
                    raise DescError(field, path, "cannot be read: it is a folder; name a file")
                if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                    raise DescError(field, path, f"{rule}: it has {info.st_size} bytes")
                data = f.read(limit + 1)
    except IsADirectoryError:
        raise DescError(field, path, "cannot be read: it is a folder; name a file") from None
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    if len(data) > limit:
        raise DescError(field, path, rule)
    return data



def open_regular(path, field: str = "FILE"):
    """`path` opened for binary reading when it is a regular file (a symlink to one is fine). A folder, FIFO,
    socket or device is refused from its type before any read and without blocking: stat, then an O_NONBLOCK
    open checked again with fstat (it may have been replaced meanwhile). One DescError naming `field` and the
    path otherwise."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise DescError(field, path, "must be a non-empty file path")
    path = os.fspath(path)
    try:
        _check_regular(path, os.stat(path).st_mode, field)              # a FIFO is never opened
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    f = os.fdopen(fd, "rb")
    try:
        _check_regular(path, os.fstat(fd).st_mode, field)
    except BaseException:
        f.close()
        raise
    return f


def read_regular(path, limit: int, what: str, field: str = "FILE") -> bytes:
    """The bytes of the regular file `path` (open_regular), at most `limit` of them: a larger file is refused
    from its size, one that grows meanwhile after `limit` + 1 bytes."""
    rule = f"is larger than any valid {what} ({limit} bytes at most)"
    with open_regular(path, field) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise DescError(field, os.fspath(path), f"{rule}: it has {size} bytes")
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    if len(data) > limit:
        raise DescError(field, os.fspath(path), rule)
    return data


def _check_regular(path: str, mode: int, field: str) -> None:
    if not stat.S_ISREG(mode):
        raise DescError(field, path, f"cannot be read: it is {_kind(mode)}; name a regular file")
