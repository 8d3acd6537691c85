"""The file system as an attacker would use it: external data that escapes the model's folder, symlinks and
special files as outputs, a full disk, killed writers. Real files, real onnx / onnxruntime, real processes."""
import errno
import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from dml_desc import DescError
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.files import FileError, TEMP_MARK, read_bounded, stale_temp_files, write_atomic
from onnx_ops.lower import lower_file
from tests.helpers_model_files import SECRET, external_model, secret_file, set_location
from tests.helpers_signals import default_sigint

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- external data stays inside the model's folder, whatever onnx is installed ----------------------------------

def test_external_data_through_a_symlink_out_of_the_folder_is_refused_and_never_echoed(tmp_path):
    path = external_model(tmp_path / "in")
    secret = secret_file(tmp_path)
    data = tmp_path / "in" / "m.data"
    data.unlink()
    data.symlink_to(secret)
    with pytest.raises(DescError) as e:
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    assert "outside the model's folder" in str(e.value) and "initializer" in e.value.field
    assert "e+" not in str(e.value) and "root:x" not in str(e.value)        # no bytes of the target, as floats or text
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("location,rule", [
    ("/etc/passwd", "relative"), ("../outside/passwd", "'..'"), ("sub/../../outside/passwd", "'..'"),
    ("", "needs a location"), ("missing.bin", "cannot be read"), (".", "outside"),
])
def test_bad_locations_are_refused_naming_the_tensor_and_the_rule(tmp_path, location, rule):
    path = external_model(tmp_path / "in")
    secret_file(tmp_path)
    set_location(path, location)
    with pytest.raises(DescError) as e:
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    assert rule in str(e.value) and e.value.field.startswith("initializer ")
    assert "root:x" not in str(e.value)


def test_a_folder_or_fifo_as_data_file_is_refused(tmp_path):
    path = external_model(tmp_path / "in")
    data = tmp_path / "in" / "m.data"
    data.unlink()
    os.mkfifo(data)
    with pytest.raises(DescError, match="regular file"):
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)


def test_offset_and_length_must_lie_inside_the_data_file(tmp_path):
    path = external_model(tmp_path / "in")
    set_location(path, "m.data", offset=10 ** 9)
    with pytest.raises(DescError, match="past the end"):
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    model = onnx.load(str(path), load_external_data=False)
    next(e for e in model.graph.initializer[0].external_data if e.key == "length").value = "-5"
    (tmp_path / "in" / "m.onnx").write_bytes(model.SerializeToString())
    with pytest.raises(DescError, match="non-negative integer"):
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)


def test_lowering_into_another_folder_writes_a_new_data_file_never_through_a_symlink(tmp_path):
    path = external_model(tmp_path / "in", keep_scales=True)
    secret = secret_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    data = out / "x.onnx.data"                       # the name the project gives the data file: <model>.data
    data.symlink_to(secret)                          # a trap of that name
    with pytest.raises(DescError, match="symbolic link"):
        lower_file(str(path), str(out / "x.onnx"), semantics=INSTALLED)
    assert secret.read_bytes() == SECRET and sorted(os.listdir(out)) == ["x.onnx.data"]     # nothing written
    data.unlink()
    data.write_bytes(b"old contents")
    for _ in range(2):                               # repeated runs replace the data file, never append
        lower_file(str(path), str(out / "x.onnx"), semantics=INSTALLED)
        size = data.stat().st_size
        lowered = onnx.load(str(out / "x.onnx"))     # onnx reads the data back
    assert data.stat().st_size == size and b"old contents" not in data.read_bytes()
    assert sorted(os.listdir(out)) == ["x.onnx", "x.onnx.data"]
    original = onnx.load(str(path))
    want = {t.name: numpy_helper.to_array(t) for t in original.graph.initializer}
    for t in lowered.graph.initializer:
        if t.name in want:
            assert np.array_equal(numpy_helper.to_array(t), want[t.name])


def test_the_output_may_not_be_a_file_the_input_reads(tmp_path):
    path = external_model(tmp_path / "in")
    before = (tmp_path / "in" / "m.data").read_bytes()
    with pytest.raises(DescError, match="data file the input model reads"):
        lower_file(str(path), str(tmp_path / "in" / "m.data"), semantics=INSTALLED)
    assert (tmp_path / "in" / "m.data").read_bytes() == before


def test_an_absolute_location_is_never_written(tmp_path):
    from onnx_ops.lowering.validate import save_atomic
    model = onnx.load(str(external_model(tmp_path / "in")), load_external_data=False)
    for e in model.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = str(tmp_path / "in" / "m.data")
    with pytest.raises(DescError, match="relative"):
        save_atomic(model, str(tmp_path / "in" / "abs.onnx"))
    assert not (tmp_path / "in" / "abs.onnx").exists()


# ---- only regular files are replaced ----------------------------------------------------------------------------

def special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link"
    (tmp_path / "victim").write_bytes(b"victim")
    link.symlink_to(tmp_path / "victim")
    found = {"FIFO": fifo, "folder": folder, "symbolic link": link}
    import socket
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        found["socket"] = tmp_path / "sock"
    except OSError:
        pass
    finally:
        sock.close()
    try:
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        found["character device"] = tmp_path / "null"
    except (PermissionError, OSError):
        pass                                          # not root: the four kinds above still run
    return found


def test_write_atomic_replaces_only_regular_files(tmp_path):
    for kind, path in special_files(tmp_path).items():
        with pytest.raises(DescError) as e:
            write_atomic(str(path), b"data")
        assert kind in str(e.value) and str(path) in str(e.value)
        assert not stat.S_ISREG(os.lstat(path).st_mode)
    assert (tmp_path / "victim").read_bytes() == b"victim"
    assert not [p for p in os.listdir(tmp_path) if TEMP_MARK in p]
    with pytest.raises(DescError, match="non-empty"):
        write_atomic("", b"data")


def test_cli_writers_refuse_special_files(tmp_path):
    from tests.helpers_bad_input import cli
    targets = special_files(tmp_path)
    desc = os.path.join(ROOT, "examples", "dml_resample_grad.json")
    dy = tmp_path / "dy.npy"
    np.save(dy, np.ones((1, 1, 1, 3), np.float32))
    for kind, path in targets.items():
        for argv in (("build", desc, "-o", str(path)), ("run", desc, "--backend", "numpy", "--dy", str(dy),
                                                        "-o", str(path))):
            proc = cli(*argv)
            assert proc.returncode == 2 and kind in proc.stderr, proc.stderr
            assert not stat.S_ISREG(os.lstat(path).st_mode)
    proc = cli("run", desc, "--backend", "numpy", "--dy", str(dy), "-o", "")
    assert proc.returncode == 2 and "non-empty" in proc.stderr


def test_a_rewritten_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"x")
    os.chmod(target, 0o640)
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "b.bin"), b"new")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b.bin").stat().st_mode) == 0o640


# ---- failures become the project's error, naming the user's path ------------------------------------------------

def test_a_failing_check_leaves_the_target_and_no_temp_file(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")

    def refuse(tmp):
        assert os.path.basename(tmp).startswith(".a.bin" + TEMP_MARK)
        raise DescError("check", tmp, "refused")
    with pytest.raises(DescError, match="refused"):
        write_atomic(str(target), b"new", refuse)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["a.bin"]


def test_efbig_becomes_a_file_error_naming_the_users_path(tmp_path):
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
            "import signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "from dml_desc.files import write_atomic, FileError\n"
            "try:\n"
            "    write_atomic(sys.argv[1], b'x' * 5000)\n"
            "except FileError as e:\n"
            "    print(e.errno, e.filename, isinstance(e, OSError), type(e.__cause__).__name__); print(e)\n")
    target = tmp_path / "big.bin"
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    first, message = proc.stdout.splitlines()
    assert first == f"{errno.EFBIG} {target} True OSError", proc.stderr
    assert str(target) in message and TEMP_MARK not in message
    assert not target.exists() and os.listdir(tmp_path) == []


def test_permission_denied_is_a_file_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder; the EFBIG and ENOSPC tests cover FileError as root")
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o500)
    try:
        with pytest.raises(FileError) as e:
            write_atomic(str(folder / "a.bin"), b"x")
        assert e.value.errno == errno.EACCES and e.value.filename == str(folder / "a.bin")
    finally:
        os.chmod(folder, 0o700)


def _tmpfs_script(body: str) -> list:
    return ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs /mnt && {body}"]


def test_enospc_on_a_small_tmpfs_is_one_line_naming_the_file(tmp_path):
    probe = subprocess.run(_tmpfs_script("true"), capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace with a tmpfs here: {probe.stderr.decode().strip()[:100]}")
    code = ("import sys\nfrom dml_desc.files import write_atomic, FileError\n"
            "open('/mnt/keep.bin','wb').write(b'old')\n"
            "try:\n    write_atomic('/mnt/keep.bin', b'x' * 200000)\n"
            "except FileError as e:\n    print(e.errno, e.filename); print(e)\n"
            "import os; print(open('/mnt/keep.bin','rb').read(), sorted(os.listdir('/mnt')))\n")
    (tmp_path / "enospc.py").write_text(code)
    proc = subprocess.run(_tmpfs_script(f"PYTHONPATH={ROOT} {sys.executable} {tmp_path / 'enospc.py'}"),
                          capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{errno.ENOSPC} /mnt/keep.bin", proc.stderr
    assert "/mnt/keep.bin" in lines[1] and TEMP_MARK not in lines[1]
    assert lines[2] == "b'old' ['keep.bin']"


# ---- debris: temp files are removed on SIGTERM / SIGINT and cleaned up after SIGKILL ---------------------------

SLOW_WRITER = ("import sys, time\nfrom dml_desc.files import write_with\n"
               "def slow(tmp):\n    open(tmp, 'wb').write(b'partial'); print('writing', flush=True); time.sleep(30)\n"
               "write_with(sys.argv[1], slow)\n")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_write_leaves_the_old_file_and_no_debris(tmp_path, sig):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old model")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(target)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT}, preexec_fn=default_sigint)
    assert proc.stdout.readline().strip() == b"writing"
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert target.read_bytes() == b"old model"
    left = [p for p in os.listdir(tmp_path) if TEMP_MARK in p]
    if sig == signal.SIGKILL:
        assert len(left) == 1 and left[0].startswith(".m.onnx" + TEMP_MARK)     # recognisable
        assert stale_temp_files(str(target)) == [str(tmp_path / left[0])]
        write_atomic(str(target), b"new model")                                 # the next write cleans up
        left = [p for p in os.listdir(tmp_path) if TEMP_MARK in p]
        assert target.read_bytes() == b"new model"
    assert left == []


def test_a_live_writers_temp_file_is_not_taken_for_debris(tmp_path):
    (tmp_path / f".m.onnx{TEMP_MARK}{os.getpid()}.abcd").write_bytes(b"mine")
    assert stale_temp_files(str(tmp_path / "m.onnx")) == []


# ---- bounded reads ----------------------------------------------------------------------------------------------

def test_reads_are_bounded(tmp_path):
    with pytest.raises(DescError, match="larger than any valid"):
        read_bounded("/dev/zero", 1000, "JSON description")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(10 ** 6)                    # sparse: refused from its size, before reading
    with pytest.raises(DescError, match="it has 1000000 bytes"):
        read_bounded(str(big), 1000, "JSON description")


def test_cli_refuses_dev_zero_and_an_endless_stdin_quickly():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dml_desc.cli", "convert", "/dev/zero", "--from", "dml", "--to",
                           "onnx"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=60)
    assert proc.returncode == 2 and "cannot be read: it is a character device" in proc.stderr, proc.stderr
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run([sys.executable, "-m", "dml_desc.cli", "convert", "-", "--from", "dml", "--to", "onnx"],
                              stdin=zero, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT},
                              timeout=60)
    assert proc.returncode == 2 and "larger than any valid" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert time.monotonic() - start < 60


def test_a_model_past_two_gigabytes_is_refused_before_reading(tmp_path):
    from onnx_ops.lowering.validate import load_model
    big = tmp_path / "big.onnx"
    with open(big, "wb") as f:
        f.truncate(3 * 2 ** 30)                # sparse: no disk used
    with pytest.raises(DescError, match="2 GB"):
        load_model(str(big))


@pytest.mark.parametrize("page", ["security.md", "limits.md"])
def test_the_python_examples_of_the_docs_run_as_shown(page, tmp_path, monkeypatch):
    import re
    monkeypatch.chdir(tmp_path)
    text = open(os.path.join(ROOT, "docs", page), encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/{page} block {i}", "exec"), {})


def test_every_test_the_security_page_names_exists():
    import re
    page = open(os.path.join(ROOT, "docs", "security.md"), encoding="utf-8").read()
    named = set(re.findall(r"`(test_\w+)`", page))
    defined = set()
    for name in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if name.startswith("test_") and name.endswith(".py"):
            defined |= set(re.findall(r"^def (test_\w+)", open(os.path.join(ROOT, "tests", name)).read(), re.M))
    assert len(named) > 20 and named <= defined, sorted(named - defined)


def _immutable(path, on: bool) -> bool:
    import shutil
    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("what", ["file", "folder"])
def test_an_immutable_target_is_a_file_error(tmp_path, what):
    folder = tmp_path / "in"
    path = external_model(folder, threshold=10 ** 9)          # no external data: one file
    before = path.read_bytes()
    locked = path if what == "file" else folder
    if not _immutable(locked, True):
        pytest.skip("chattr +i is not available here (needs root and a file system with the immutable flag)")
    try:
        with pytest.raises(FileError) as e:
            lower_file(str(path), str(path), semantics=INSTALLED)
        assert e.value.errno == errno.EPERM and e.value.filename == str(path)
        assert isinstance(e.value.__cause__, OSError) and TEMP_MARK not in str(e.value)
    finally:
        _immutable(locked, False)
    assert path.read_bytes() == before and not [p for p in os.listdir(folder) if TEMP_MARK in p]


def test_a_file_that_is_not_a_model_is_never_echoed(tmp_path):
    secret = secret_file(tmp_path)
    with pytest.raises(DescError) as e:
        lower_file(str(secret), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    assert "not an ONNX model" in str(e.value) and "root:x" not in str(e.value)
    assert f"{len(SECRET)} bytes" in str(e.value)
