"""Files the project reads and writes, safely: the one atomic writer and the bounded readers.

- `write_atomic(path, data)`: the target is replaced only when it is a regular file (or absent); never through a
  symlink, never a device, FIFO, socket or folder. The data goes to a temporary file in the same folder named
  `.NAME.dml-desc-tmp.PID.RANDOM`, created with O_CREAT | O_EXCL | O_NOFOLLOW and written and fsynced through
  that descriptor (never reopened by name), optionally checked, and renamed over the target once its name still
  holds that very file, so a reader sees the old file or the complete new one.
- `write_files(folder, {name: data})`: files written together (a model and its external data), staged in a
  private folder (mode 0700) inside `folder` under their final names, checked there, then renamed into place.
- `write_with(path, write)`: for a writer that needs a file name; the name lies in such a private folder.
- Temporary files and staging folders are removed on any error, KeyboardInterrupt (SIGINT) or SIGTERM; ones a
  killed process left behind for the same target are removed the next time that target is written
  (`stale_temp_files`).
- `read_bounded(path, limit, what)`: a file or stdin ("-") read whole only when it is at most `limit` bytes.
- `read_region(path, offset, length)`: bytes of a regular file, opened without following a link or blocking.
- `open_regular(path)` / `read_regular(path, limit, what)`: a regular file only (never a FIFO, device or folder,
  refused without blocking), opened, or read whole only when it is at most `limit` bytes.

File-system failures (ENOSPC, EFBIG, EACCES, EPERM, EROFS ...) raise `FileError`, a DescError that is also an
OSError: `errno`, `strerror` and `filename` (the user's path, never the temporary file) are those of the failure,
and the original OSError is its `__cause__`.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterator, NoReturn

from .errors import DescError

if TYPE_CHECKING:
    from _typeshed import StrPath

TEMP_MARK = ".dml-desc-tmp."


class FileError(DescError, OSError):
    """A file the project could not read or write; an OSError too (errno, strerror, filename = the user's path)."""

    def __init__(self, path: object, error: OSError | None, rule: str, field: str = "file") -> None:
        DescError.__init__(self, field, str(path), rule)
        self.errno = error.errno if error is not None else None
        self.strerror = error.strerror if error is not None else None
        self.filename = str(path)

    def __str__(self) -> str:
        message: str = self.args[0]        # DescError's one line
        return message


def regular_target(path: object, field: str = "OUT") -> str:
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


def stale_temp_files(path: StrPath) -> list[str]:
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


def write_atomic(path: StrPath, data: bytes, check: Callable[[str], None] | None = None, field: str = "OUT") -> None:
    """Replace the regular file `path` (or create it) with `data`, atomically; `check(temp_path)` may refuse the
    written file (raise) before it replaces `path`. The data is written through the descriptor that created the
    temporary file (O_CREAT | O_EXCL | O_NOFOLLOW), never by reopening its name, and the name must still hold that
    file when it is renamed. See the module docstring for what is refused."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DescError("data", type(data).__name__, "must be bytes")
    path = regular_target(path, field)
    mode = _prepare(path)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}{TEMP_MARK}{os.getpid()}.{secrets.token_hex(4)}")
    fd = None
    with _terminate_as_interrupt():
        try:
            try:
                fd = _create(tmp)
                _write_all(fd, data)
                os.fsync(fd)
            except OSError as e:
                raise FileError(path, e, f"cannot be written ({e.strerror or e})", field) from e
            if check is not None:
                check(tmp)
            try:
                os.fchmod(fd, mode)
                _still_ours(tmp, fd, path, field)
                _replace(tmp, path, field)
            except OSError as e:
                raise FileError(path, e, f"cannot be replaced ({e.strerror or e})", field) from e
        finally:
            if fd is not None:
                os.close(fd)
            _remove(tmp)


def write_files(folder: StrPath, files: dict[str, bytes], check: Callable[[str], None] | None = None,
                field: str = "OUT") -> None:
    """Write several files into `folder` together, each replacing a regular file (or nothing) of that name: a model
    and its external data. `files` maps plain names (no folder) to bytes, in the order they replace their targets.
    Each is written through the descriptor that created it into a private staging folder inside `folder` (mode
    0700, named `.LAST.dml-desc-tmp.PID.RANDOM`) under its final name, so `check(staging_folder)` sees them as
    they will lie; only after it passes are they renamed into place. Each file is replaced atomically; the group
    is not (a reader may see the new data file beside the old model for a moment)."""
    for name, data in files.items():
        if not _plain_name(name):
            raise DescError(field, name, "must be a plain file name (no folder)")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DescError(f"data for {name}", type(data).__name__, "must be bytes")

    def fill(staging: str) -> None:
        for name, data in files.items():
            try:
                fd = _create(os.path.join(staging, name))
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                raise FileError(os.path.join(folder, name), e, f"cannot be written ({e.strerror or e})", field) from e
    _staged(folder, list(files), fill, check, field)


def write_with(path: StrPath, write: Callable[[str], None], check: Callable[[str], None] | None = None,
               field: str = "OUT") -> None:
    """Like `write_atomic`, for a writer that needs a file name: `write(name)` writes the new contents to `name`.
    The name lies in a staging folder created for this write inside `path`'s folder (mode 0700: no other user can
    enter it, so no one can swap the name for a link while the writer reopens it); `check(name)` may refuse the
    file before it replaces `path`."""
    path = regular_target(path, field)
    name = os.path.basename(os.path.abspath(path))

    def fill(staging: str) -> None:
        staged = os.path.join(staging, name)
        try:
            write(staged)
            info = os.lstat(staged)
            if not stat.S_ISREG(info.st_mode):
                raise DescError(field, path, f"the writer left {_kind(info.st_mode)}, not a regular file")
            _fsync(staged)
        except OSError as e:
            if isinstance(e, DescError):
                raise
            raise FileError(path, e, f"cannot be written ({e.strerror or e})", field) from e
    _staged(os.path.dirname(os.path.abspath(path)), [name], fill,
            None if check is None else lambda staging: check(os.path.join(staging, name)), field)


def _staged(folder: StrPath, names: list[str], fill: Callable[[str], None], check: Callable[[str], None] | None,
            field: str) -> None:
    """Create a private staging folder in `folder`, `fill(staging)` it with `names` (raising FileError on a file
    system failure), `check(staging)`, then rename each over its target in `folder` (regular files only; a
    rewritten file keeps its mode). The staging folder is removed on any error, KeyboardInterrupt or SIGTERM."""
    folder = os.fspath(folder)
    targets = [regular_target(os.path.join(folder, n), field) for n in names]
    modes = [_prepare(t) for t in targets]
    with _terminate_as_interrupt():
        staging = None
        try:
            try:
                staging = tempfile.mkdtemp(prefix=f".{names[-1]}{TEMP_MARK}{os.getpid()}.", dir=folder)
            except OSError as e:
                raise FileError(targets[-1], e, f"cannot be written ({e.strerror or e})", field) from e
            fill(staging)
            if check is not None:
                check(staging)
            for name, target, mode in zip(names, targets, modes):
                try:
                    os.chmod(os.path.join(staging, name), mode)     # a folder only this process writes in
                    _replace(os.path.join(staging, name), target, field)
                except OSError as e:
                    raise FileError(target, e, f"cannot be replaced ({e.strerror or e})", field) from e
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)


def _plain_name(name: object) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
            and os.sep not in name and (os.altsep is None or os.altsep not in name))


def _prepare(path: str) -> int:
    """Remove the temporary files a killed process left for `path`; the mode its new contents get (its own when
    it exists, else the umask's)."""
    for old in stale_temp_files(path):
        _remove(old)
    try:
        return os.lstat(path).st_mode & 0o7777     # a rewritten file keeps its mode
    except FileNotFoundError:
        return new_file_mode()


def _create(path: str) -> int:
    """A new file, opened for writing: never an existing one, never through a symlink."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_CLOEXEC", 0), 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]


def _still_ours(tmp: str, fd: int, path: str, field: str) -> None:
    """The temporary name still holds the file this process wrote (not a file or link put in its place)."""
    named, written = os.lstat(tmp), os.fstat(fd)
    if (named.st_dev, named.st_ino) != (written.st_dev, written.st_ino):
        raise DescError(field, path, "its temporary file was replaced by another while it was written; "
                        "nothing was written (is the folder shared?)")


def _replace(staged: str, target: str, field: str) -> None:
    regular_target(target, field)              # nothing became a device or a link meanwhile
    os.replace(staged, target)
    _fsync_folder(os.path.dirname(os.path.abspath(target)))    # the rename itself survives a power cut


def _remove(path: str) -> None:
    """Remove a temporary file, or a staging folder (never following a link)."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    except OSError:
        pass


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
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
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block (main thread only), so `finally` removes the temp file."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> NoReturn:
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


def read_bounded(path: object, limit: int, what: str, field: str = "FILE") -> bytes:
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


def read_region(path: StrPath, offset: int = 0, length: int | None = None, field: str = "FILE") -> bytes:
    """`length` bytes (to the end when None) from `offset` of the regular file `path`. It is opened without
    following a final symlink and without blocking, and checked through that descriptor: a FIFO, device or link
    put in its place after a check is refused, never waited on or followed. A region past the file's end is a
    DescError naming the sizes (never the bytes)."""
    fd = _open_checked(os.fspath(path), field, getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        end = info.st_size if length is None else offset + length
        if not 0 <= offset <= end <= info.st_size:
            raise DescError(field, os.fspath(path), f"has {info.st_size} bytes: bytes {offset} to {end} lie outside it")
        data = bytearray()
        while len(data) < end - offset:
            chunk = os.pread(fd, min(end - offset - len(data), 1 << 30), offset + len(data))
            if not chunk:
                raise DescError(field, os.fspath(path), "became shorter while it was read")
            data += chunk
        return bytes(data)
    except OSError as e:
        if isinstance(e, DescError):
            raise
        raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    finally:
        os.close(fd)


def open_regular(path: object, field: str = "FILE") -> BinaryIO:
    """`path` opened for binary reading when it is a regular file (a symlink to one is fine). A folder, FIFO,
    socket or device is refused from its type before any read and without blocking: stat, then an O_NONBLOCK
    open checked again with fstat (it may have been replaced meanwhile). One DescError naming `field` and the
    path otherwise."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise DescError(field, path, "must be a non-empty file path")
    path = os.fspath(path)
    try:
        _check_regular(path, os.stat(path).st_mode, field)              # a FIFO is never opened
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    return os.fdopen(_open_checked(path, field), "rb")


def _open_checked(path: str, field: str, flags: int = 0) -> int:
    """A descriptor of `path` opened without blocking (and with `flags`, e.g. O_NOFOLLOW), then checked through
    that descriptor to be a regular file: one put in its place after a check is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise FileError(path, e, f"cannot be read ({e.strerror or e})", field) from e
    try:
        _check_regular(path, os.fstat(fd).st_mode, field)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: StrPath, limit: int, what: str, field: str = "FILE") -> bytes:
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
