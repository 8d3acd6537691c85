"""Plug-ins behind a boundary: a plug-in backend (`py:MODULE:NAME`, `c:LIB:SYMBOL`, an installed
`dml_desc.backends` entry point) runs in a child worker process, never in the suite's.

Why a process: a plug-in that hangs can only be stopped from outside, a native kernel that crashes (SIGSEGV)
ends its process, and `sys.exit()` or `os._exit()` in a plug-in must not end the suite with its status. So:

- the worker receives the backend's spec string and constructs the backend itself, through the same
  `registry.resolve` the suite uses in-process; any Backend works there, built from its spec;
- one worker serves every case of a backend; a case's description crosses as JSON, dy and dX as .npy bytes
  (numpy arrays, never pickles);
- a case that raises (SystemExit and KeyboardInterrupt included), crashes the worker or runs past the case
  timeout fails with that reason; the worker is stopped and the next case starts a fresh one;
- Ctrl-C on the suite is the suite's (the worker runs in its own session and never sees the terminal's
  SIGINT): it stops the run with `dml-desc: interrupted`, exit 130, and the worker is ended;
- a plug-in that cannot be loaded (no such module, a constructor that raises, an exit or a crash while
  importing) is one line `dml-desc: error: ...` and exit 2, before any case runs.

The built-in backends run in the suite's process: they are the project's own code (oneDNN, which can abort,
already runs in its own child process: dml_desc.runtimes.onednn), and an onnxruntime session per case is cheap
there. The worker's imports never come from the working folder (conformance/import_guard.py); the registry
appends the working folder at the end of sys.path to import the plug-in.
"""
from __future__ import annotations

import atexit
import io
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from typing import Optional

import numpy as np

from dml_desc.errors import DescError, require

from ..catalog import Skip
from .base import Backend, checked_interface
from .registry import installed_plugins, resolve

DEFAULT_CASE_TIMEOUT = 60.0         # seconds a plug-in case may take (--case-timeout)
PLUGIN_PREFIXES = ("py:", "c:")     # and the names of installed dml_desc.backends entry points
_HEAD = struct.Struct("<QQ")        # a frame: JSON length, .npy length, then both
_MAX_FRAME = 1 << 40                # a longer frame is a garbled stream: read as the worker's end
# The worker's first statement replaces sys.path with the suite's (this package's root first, only while
# `conformance` itself is imported): nothing comes from the working folder that `python -c` puts first.
_BOOT = ("import sys; sys.path[:] = sys.argv[1:]; import conformance; del sys.path[0]; "
         "import conformance.import_guard as guard; guard.install(); "
         "from conformance.backends.worker import serve; serve()")


def is_plugin(name) -> bool:
    """Whether the backend name names a plug-in (run in a worker) rather than a built-in."""
    return isinstance(name, str) and (name.startswith(PLUGIN_PREFIXES) or name in installed_plugins())


def load(name: str, semantics=None, timeout: Optional[float] = DEFAULT_CASE_TIMEOUT, flag: str = "--backend"):
    """The backend `name` names: a plug-in as a WorkerBackend (started now, so a plug-in that cannot load is a
    DescError before any case runs), a built-in as registry.resolve gives it."""
    return WorkerBackend(name, semantics, timeout, flag) if is_plugin(name) else resolve(name, semantics, flag)


def close_all(backends) -> None:
    """End the worker of every WorkerBackend among `backends`."""
    for b in backends or ():
        if isinstance(b, WorkerBackend):
            b.close()


class PluginError(DescError):
    """A plug-in case that ended badly in the worker; its repr is the reason the case's record shows."""

    def __init__(self, flag: str, spec: str, reason: str):
        self.reason = reason
        super().__init__(flag, spec, reason)

    def __repr__(self) -> str:
        return self.reason


class _Refused(Exception):
    """The worker could not load the backend: the message is one line, as resolve's DescError said it."""


class WorkerBackend(Backend):
    """A plug-in backend in a child worker process (see the module docstring). `timeout`: seconds per case and
    per load (None: no limit, for `dml-desc run`). It carries what the plug-in declares: name, convention, dtypes,
    available(), info() and `supports` (conformance.support: a dict as it is, a function asked in the worker case
    by case); a plug-in is a kernel under test, so its converter refusals skip (refusal_table False)."""
    refusal_table = False
    _proc: Optional[subprocess.Popen]           # the worker: None until started, and once stopped
    _replies: Optional[queue.Queue]             # its replies, read by a thread

    def __init__(self, spec: str, semantics=None, timeout: Optional[float] = DEFAULT_CASE_TIMEOUT,
                 flag: str = "--backend"):
        self.spec, self.semantics, self.timeout, self.flag = spec, semantics, timeout, flag
        self._proc = self._replies = None
        self._busy = False
        _LIVE.add(self)                     # ended at exit whatever happens (Ctrl-C while it loads)
        try:
            declared = self._start()
        except _Refused as e:
            raise _one_line(flag, spec, str(e)) from None
        except PluginError as e:
            raise DescError(flag, spec, f"cannot be loaded: {e.reason}") from None
        self.name, self.convention, self.dtypes = declared["name"], declared["convention"], tuple(declared["dtypes"])
        self._available, self._info = declared["available"], declared["info"]
        self.supports = self._ask_support if declared["supports"] == FUNCTION else declared["supports"]

    def available(self) -> Optional[str]:
        """What the plug-in's available() said when it was loaded."""
        return self._available

    def info(self) -> str:
        """The plug-in's info() when it has one, else its name (for `dml-desc run`)."""
        return self._info or self.name

    def run(self, description, dy, dtype):
        """dX from the plug-in in the worker (a fresh worker after a crash or a timeout)."""
        return self._request({"op": "run", "description": description, "dtype": dtype}, dy)[1]

    def _ask_support(self, description, dtype) -> Optional[str]:
        """The plug-in's supports(description, dtype), asked in the worker: None, or why it leaves the case out."""
        return self._request({"op": "supports", "description": description, "dtype": dtype}, None)[0]["reason"]

    def _request(self, header: dict, array) -> tuple:
        """One case's request to the worker (a fresh one after a crash or a timeout) -> its (reply, array); what
        the plug-in raised is raised here (_reraised)."""
        if self._proc is None:
            try:
                self._start()
            except _Refused as e:
                raise PluginError(self.flag, self.spec, f"restarting the worker: {e}") from None
        reply = self._call(header, array, "this case")
        if "error" in reply[0]:
            raise _reraised(self.flag, self.spec, reply[0]["error"])
        return reply

    def close(self) -> None:
        """End the worker: stdin closed, so an idle one exits; one still running a case (Ctrl-C) is killed."""
        if self._proc is not None:
            self._stop(grace=0.0 if self._busy else 5.0)

    def _start(self) -> dict:
        """Start a worker and load the backend in it -> what it declares; _Refused or PluginError when not."""
        paths = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
        paths += [str(p) for p in sys.path]
        session = {"start_new_session": True} if os.name == "posix" else \
            {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        self._proc = subprocess.Popen([sys.executable, "-c", _BOOT] + paths, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, **session)
        self._replies = queue.Queue()
        threading.Thread(target=_read_replies, args=(self._proc.stdout, self._replies), daemon=True).start()
        header, _ = self._call({"op": "load", "spec": self.spec, "semantics": self.semantics, "flag": self.flag},
                               None, "loading the plug-in")
        if "error" in header:
            self._stop(grace=5.0)
            raise _Refused(header["error"]["message"])
        return header

    def _call(self, header: dict, array, what: str) -> tuple:
        """Send one request and wait for its reply -> (header, array); PluginError when the worker dies or runs
        past the timeout (the worker is then stopped)."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        assert self._proc is not None and self._replies is not None     # _start set them
        self._busy = True
        try:
            write_frame(self._proc.stdin, header, array)
            reply = self._replies.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except (BrokenPipeError, OSError):
            reply = None
        except queue.Empty:
            self._stop(grace=0.0)
            raise PluginError(self.flag, self.spec, f"{what} ran past the case timeout of {self.timeout:g} s "
                              "(--case-timeout); the worker process was stopped, the next case starts a new one") \
                from None
        self._busy = False              # still True after Ctrl-C: close() then kills the worker at once
        if reply is None:                   # its exit status is set before its pipes close: SIGKILL keeps it
            status = self._stop()
            raise PluginError(self.flag, self.spec, f"{what} ended the worker process ({status}); the next case "
                              "starts a new one")
        return reply

    def _stop(self, grace: float = 0.0) -> str:
        """End the worker: stdin closed, `grace` seconds to exit, then SIGKILL for it and what it started (before
        it is reaped) -> how it ended ('exit status 0', 'signal 11, SIGSEGV')."""
        proc, self._proc = self._proc, None
        assert proc is not None                     # callers stop a started worker only
        _close_quietly(proc.stdin)
        try:
            code = proc.wait(grace)
        except subprocess.TimeoutExpired:
            _kill(proc)
            code = proc.wait()
        _close_quietly(proc.stdout)
        return _status(code)


_LIVE: "weakref.WeakSet[WorkerBackend]" = weakref.WeakSet()
atexit.register(lambda: close_all(list(_LIVE)))


def _kill(proc) -> None:
    """SIGKILL the worker's process group (it is its session leader) before it is reaped; elsewhere kill()."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _close_quietly(stream) -> None:
    try:
        stream.close()
    except OSError:
        pass


def _status(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {-code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _one_line(flag: str, spec: str, message: str) -> DescError:
    """A DescError whose message is `message` as the worker's resolve() wrote it."""
    e = DescError(flag, spec, message)
    e.args = (message,)
    return e


def _reraised(flag: str, spec: str, error: dict) -> Exception:
    """The exception a plug-in raised in the worker, for the suite: Skip and NotImplementedError as they are
    (the suite gives them their meaning), anything else a PluginError whose reason is the plug-in's repr."""
    if error["kind"] == "Skip":
        return Skip(error["message"])
    if error["kind"] == "NotImplementedError":
        return NotImplementedError(error["message"])
    hint = {"SystemExit": ": the plug-in called sys.exit(); a kernel returns dX",
            "KeyboardInterrupt": ": raised by the plug-in itself"}.get(error["kind"], "")
    return PluginError(flag, spec, error["repr"] + hint)


# ---- the wire: frames of (JSON header, .npy bytes) --------------------------------------------------------

def write_frame(stream, header: dict, array) -> None:
    """One frame: the header as JSON, the array (if any) as .npy bytes; bfloat16 goes as float32 (exact)."""
    data = b""
    if array is not None:
        array = np.asarray(array)
        if array.dtype.name == "bfloat16":
            array = array.astype(np.float32)
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        data = buffer.getvalue()
    text = json.dumps(header).encode("utf-8", "surrogatepass")
    stream.write(_HEAD.pack(len(text), len(data)) + text + data)
    stream.flush()


def read_frame(stream):
    """(header, array or None), or None at the end of the stream (or a torn frame: the writer died)."""
    head = stream.read(_HEAD.size)
    if len(head) < _HEAD.size:
        return None
    n_text, n_data = _HEAD.unpack(head)
    if n_text + n_data > _MAX_FRAME:
        return None
    body = stream.read(n_text + n_data)
    if len(body) < n_text + n_data:
        return None
    header = json.loads(body[:n_text].decode("utf-8", "surrogatepass"))
    array = np.load(io.BytesIO(body[n_text:]), allow_pickle=False) if n_data else None
    return header, array


def _read_replies(stream, replies: queue.Queue) -> None:
    """The parent's reader thread: every reply frame into `replies`, then None when the worker's stdout ends."""
    while True:
        try:
            frame = read_frame(stream)
        except (OSError, ValueError):
            frame = None
        replies.put(frame)
        if frame is None:
            return


# ---- the worker process -----------------------------------------------------------------------------------

def serve() -> None:
    """The worker's loop: load the backend its first request names, then run cases until stdin closes."""
    import faulthandler
    requests, replies = _protocol_streams()
    faulthandler.enable()           # a native crash prints its Python stack on the suite's stderr
    backend = None
    while True:
        frame = read_frame(requests)
        if frame is None:
            return
        header, array = frame
        if header["op"] == "load":
            backend, reply, out = _load(header)
        elif header["op"] == "supports":
            reply, out = _supports(backend, header), None
        else:
            reply, out = _run(backend, header, array)
        write_frame(replies, reply, out)


def _protocol_streams() -> tuple:
    """The requests and replies streams (the original stdin and stdout); a plug-in's reads of stdin see an empty
    file and its prints go to stderr, so nothing it does can garble the wire."""
    requests, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return requests, replies


def _load(header: dict) -> tuple:
    """(backend, what it declares, None), or (None, the refusal, None): any exception the loading raises."""
    spec = header["spec"]
    try:
        backend = resolve(spec, header.get("semantics"), header.get("flag", "--backend"))
        return backend, declared(backend, spec), None
    except BaseException as e:              # noqa: BLE001 (SystemExit and KeyboardInterrupt too, on one line)
        message = str(e) if isinstance(e, DescError) else \
            f"{header.get('flag', '--backend')}={spec!r}: loading it raised {type(e).__name__}: {e}"
        return None, {"error": _error(e, message)}, None


FUNCTION = "function"        # what crosses for a `supports` function: the worker asks it case by case


def declared(backend, spec: str) -> dict:
    """What a loaded backend declares, checked: name, convention (one of the description formats), dtypes,
    available(), info() and supports (a dict, or FUNCTION)."""
    name = getattr(backend, "name", spec)
    require(isinstance(name, str) and name != "", f"{spec}.name", name, "must be a non-empty string")
    convention, dtypes = checked_interface(name, getattr(backend, "convention", None), getattr(backend, "dtypes", None))
    available = backend.available() if hasattr(backend, "available") else None
    require(available is None or isinstance(available, str), f"{name}.available()", available,
            "must return None or the reason it cannot run here")
    info = backend.info() if hasattr(backend, "info") else None
    from ..support import declared as declared_support
    supports = declared_support(getattr(backend, "supports", None), name)
    return {"name": name, "convention": convention, "dtypes": list(dtypes), "available": available,
            "info": None if info is None else str(info), "supports": FUNCTION if callable(supports) else supports}


def _supports(backend, header: dict) -> dict:
    """{'reason': None or why} from the backend's supports(description, dtype); what it raises is the reply."""
    try:
        reason = backend.supports(header["description"], header["dtype"])
        return {"reason": str(reason) if reason else None}
    except BaseException as e:              # noqa: BLE001 (the case's verdict, whatever was raised)
        return {"error": _error(e, str(e))}


def _run(backend, header: dict, dy) -> tuple:
    """(reply, dX) of one case; any exception the backend raises is the reply."""
    from dml_desc.reference import as_dtype
    try:
        out = np.asarray(backend.run(header["description"], as_dtype(dy, header["dtype"]), header["dtype"]))
        if out.dtype.kind not in "fiu" and out.dtype.name != "bfloat16":
            raise TypeError(f"returned {type(out).__name__} of {out.dtype}: dX must be an array of numbers")
        return {"ok": True}, out
    except BaseException as e:              # noqa: BLE001 (the case's verdict, whatever was raised)
        return {"error": _error(e, str(e))}, None


def _error(e: BaseException, message: str) -> dict:
    kind = "Skip" if isinstance(e, Skip) else type(e).__name__
    return {"kind": kind, "message": message[:2000], "repr": repr(e)[:2000]}
