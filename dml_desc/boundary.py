"""The one error boundary of every command line (dml-desc and python -m conformance): bad input of any kind
prints one line and exits 2, never a traceback."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, TextIO, cast

from .errors import DescError, printable


class EscapingStream:
    """A text stream that writes every string through `errors.printable`: whatever a command prints (a user's
    field names, JSON keys, node names, file names, values) reaches the terminal without control sequences."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        """Write `text` escaped; returns its length as given (what print() expects)."""
        self.raw.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream under an EscapingStream, for the project's own control characters (a progress bar's \\r)."""
    return cast(TextIO, getattr(stream, "raw", stream)) if isinstance(stream, EscapingStream) else stream


def guarded(command: Callable[[], int], prog: str = "dml-desc") -> int:
    """The one error boundary of every command: any bad input prints one line and exits 2, never a traceback.
    Everything printed inside goes through `printable` (EscapingStream); Ctrl-C prints one line and exits 130.
    A closed pipe (`dml-desc convert ... | head`) ends quietly, as Python's documentation recommends."""
    streams = sys.stdout, sys.stderr
    escaped = EscapingStream(sys.stdout), EscapingStream(sys.stderr)      # TextIO by delegation (__getattr__)
    sys.stdout, sys.stderr = cast(TextIO, escaped[0]), cast(TextIO, escaped[1])
    try:
        return _guarded(command, prog)
    finally:
        sys.stdout, sys.stderr = streams


def _guarded(command: Callable[[], int], prog: str) -> int:
    try:
        code = command()
        sys.stdout.flush()           # a closed pipe shows here, inside the boundary
        return code
    except KeyboardInterrupt:        # Ctrl-C (and SIGTERM inside a file write): one line, the shell's 130
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())        # Python flushes stdout again at exit
        return 1
    except Exception as e:           # noqa: BLE001 (every input error ends here, as one line)
        line = _message(e)
        if line is None and os.environ.get("DML_DESC_TRACEBACK"):
            raise
        if line is None:             # a bug, not the input's fault: still one line, and how to see more
            line = (f"internal error, please report it: {type(e).__name__}: {str(e)[:200]} "
                    "(DML_DESC_TRACEBACK=1 shows the traceback)")
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 2


def _message(e: BaseException) -> str | None:
    """One line for the errors bad input causes; None for the rest (a bug)."""
    if isinstance(e, DescError):
        return str(e)
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{e.strerror or e}"
    if isinstance(e, UnicodeError):
        return f"input is not valid UTF-8 ({e})"
    if isinstance(e, RecursionError):
        return "input is nested too deeply"
    if isinstance(e, MemoryError):
        return ("out of memory: this step needs more memory than the process may use (docs/limits.md states "
                "each step's bound; lower DML_DESC_MAX_AXIS or DML_DESC_MAX_ELEMENTS to refuse such inputs early)")
    if isinstance(e, OverflowError):
        return f"a number is too large ({e})"
    if type(e).__name__ == "DecodeError" and type(e).__module__.startswith("google.protobuf"):
        return f"not an ONNX model (protobuf: {e})"
    return None
