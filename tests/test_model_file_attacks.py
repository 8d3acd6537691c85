"""Issue 30: a downloaded model attacking the machine that lowers it, through its external-data references and the
files `lower` writes. Each attack is run as the issue found it; real files, real onnx / onnxruntime, real
processes, and the CLI where the issue used it."""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from dml_desc import DescError
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.files import TEMP_MARK, write_atomic, write_with
from onnx_ops.lower import lower_file
from tests.helpers_bad_input import cli, resize_grad_model
from tests.helpers_model_files import external_model, external_tensor, secret_file, set_location

INSTALLED = installed_semantics()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttackerKey attacker@evil\n"


def rewrite(path, edit):
    """Load the model file at `path` without its data, `edit(model)`, write it back."""
    model = onnx.load(str(path), load_external_data=False)
    result = edit(model)
    path.write_bytes(model.SerializeToString())
    return result


def subprocess_cli(*argv, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "dml_desc.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=timeout)


# ---- one reading of each reference: a repeated or unknown key is refused before anything is written -------------

def test_a_second_location_cannot_overwrite_a_file_outside_the_output_folder(tmp_path):
    """The issue's attack: [location=/abs/victim, location=m.data] on a kept tensor holding the attacker's bytes;
    the check read the last entry, the data-file writer the first, and wrote the victim."""
    model = resize_grad_model()
    model.graph.initializer.append(numpy_helper.from_array(np.frombuffer(KEY, np.uint8), "note"))
    model.graph.node.append(helper.make_node("Identity", ["note"], ["note_out"], name="keep"))
    model.graph.output.append(helper.make_tensor_value_info("note_out", onnx.TensorProto.UINT8, [len(KEY)]))
    path = external_model(tmp_path / "d1", model=model)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")

    def second_location(model):
        note = next(t for t in model.graph.initializer if t.name == "note")
        entries = [(e.key, e.value) for e in note.external_data]
        del note.external_data[:]
        note.external_data.add(key="location", value=str(victim))
        for key, value in entries:
            note.external_data.add(key=key, value=value)
    rewrite(path, second_location)
    (tmp_path / "out1").mkdir()
    proc = cli("lower", str(path), "-o", str(tmp_path / "out1" / "low.onnx"))
    assert victim.read_bytes() == b"precious\n" and os.listdir(tmp_path / "out1") == []
    assert proc.returncode == 2 and "initializer note.external_data='location': is given twice" in proc.stderr, \
        proc.stderr


@pytest.mark.parametrize("key,value,rule", [("offset", "0", "given twice"), ("length", "16", "given twice"),
                                            ("basepath", "/etc", "not an external-data key"),
                                            ("Location", "m.data", "not an external-data key")])
def test_a_repeated_or_unknown_external_data_key_is_refused(tmp_path, key, value, rule):
    path = external_model(tmp_path / "in")
    rewrite(path, lambda m: m.graph.initializer[0].external_data.add(key=key, value=value))
    with pytest.raises(DescError) as e:
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    assert rule in str(e.value) and e.value.field == "initializer scales.external_data"
    assert not (tmp_path / "out.onnx").exists()


def test_offset_and_length_past_int64_are_refused_not_a_traceback(tmp_path):
    path = external_model(tmp_path / "in")

    def huge(model):
        next(e for e in model.graph.initializer[0].external_data if e.key == "offset").value = "9" * 5000
    rewrite(path, huge)
    with pytest.raises(DescError, match="below 2\\*\\*63"):
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)


# ---- every tensor anywhere in the model is checked --------------------------------------------------------------

def _sparse_value(model, location):
    sparse = helper.make_sparse_tensor(external_tensor("sv", location),
                                       helper.make_tensor("si", onnx.TensorProto.INT64, [2], [0, 3]), [4])
    model.graph.node.append(helper.make_node("Constant", [], ["sparse"], sparse_value=sparse, name="c"))
    return "node c.sparse_value.values"


def _training_graph(part):
    def add(model, location):
        graph = helper.make_graph([], "t", [], [], initializer=[external_tensor("w", location)])
        getattr(model.training_info.add(), part).CopyFrom(graph)
        return f"training_info[0].{part}/initializer w"
    return add


def _function_default(model, location):
    function = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                    [helper.make_opsetid("", 17)])
    function.attribute_proto.append(helper.make_attribute("w", external_tensor("w", location)))
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("local", 1))
    return "function f/attribute w"


def _function_subgraph(model, location):
    branch = helper.make_graph([], "b", [], [helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [2])],
                               initializer=[external_tensor("w", location)])
    body = [helper.make_node("If", ["a"], ["b"], then_branch=branch, else_branch=branch, name="if")]
    model.functions.append(helper.make_function("local", "g", ["a"], ["b"], body, [helper.make_opsetid("", 17)]))
    model.opset_import.append(helper.make_opsetid("local", 1))
    return "function g/node if.else_branch/initializer w"


def _sparse_attribute(model, location):
    sparse = helper.make_sparse_tensor(external_tensor("sv", location),
                                       helper.make_tensor("si", onnx.TensorProto.INT64, [2], [0, 3]), [4])
    node = helper.make_node("Custom", [], ["custom"], name="n", domain="local")
    node.attribute.append(helper.make_attribute("s", [sparse]))
    model.graph.node.append(node)
    model.opset_import.append(helper.make_opsetid("local", 1))
    return "node n.s[0].values"


PLACES = {"Constant sparse_value": _sparse_value, "training_info initialization": _training_graph("initialization"),
          "training_info algorithm": _training_graph("algorithm"), "function attribute default": _function_default,
          "If body in a function": _function_subgraph, "sparse_tensors attribute": _sparse_attribute}


@pytest.mark.parametrize("place", PLACES)
def test_external_tensors_everywhere_are_checked(tmp_path, place):
    """The places the old walk skipped: an absolute location there reached onnxruntime (which opened it) and,
    under the newest onnx, the written model."""
    path = external_model(tmp_path / "in")
    secret = secret_file(tmp_path)
    where = rewrite(path, lambda m: PLACES[place](m, secret))
    with pytest.raises(DescError) as e:
        lower_file(str(path), str(tmp_path / "out.onnx"), semantics=INSTALLED)
    assert e.value.field == f"{where}.location" and "must be a relative path" in str(e.value), str(e.value)
    assert not (tmp_path / "out.onnx").exists()


def test_a_fifo_behind_a_sparse_value_is_refused_not_waited_on(tmp_path):
    """Under the training build, onnxruntime opened the sparse_value's file: a FIFO there hung `lower` for good."""
    path = external_model(tmp_path / "in")
    os.mkfifo(tmp_path / "in" / "pipe")
    rewrite(path, lambda m: _sparse_value(m, "pipe"))
    proc = subprocess_cli("lower", str(path), "-o", str(tmp_path / "out.onnx"), timeout=120)
    assert proc.returncode == 2 and "node c.sparse_value.values.location='pipe': must name a regular file" \
        in proc.stderr, proc.stderr


def test_an_external_constant_is_never_read_from_the_working_folder(tmp_path):
    """onnx reads an external tensor given no folder from the working folder: a Constant's value is copied from the
    model's own folder, and a FIFO of that name where `lower` runs is never opened."""
    path = external_model(tmp_path / "in", keep_scales=True)

    def external_constant(model):
        constant = external_tensor("cv", "m.data", values=(1.0, 2.0))    # the scales' first 8 bytes: 1.0, 1.0
        model.graph.node.append(helper.make_node("Constant", [], ["cv"], value=constant, name="c"))
        model.graph.output.append(helper.make_tensor_value_info("cv", onnx.TensorProto.FLOAT, [2]))
    rewrite(path, external_constant)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    os.mkfifo(elsewhere / "m.data")
    (tmp_path / "out").mkdir()
    proc = subprocess_cli("lower", str(path), "-o", str(tmp_path / "out" / "x.onnx"), cwd=elsewhere, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lowered = onnx.load(str(tmp_path / "out" / "x.onnx"))               # the data moved into out/x.onnx.data
    constant = next(n for n in lowered.graph.node if n.name == "c").attribute[0].t
    assert numpy_helper.to_array(constant).tolist() == [1.0, 1.0]
    assert sorted(os.listdir(tmp_path / "out")) == ["x.onnx", "x.onnx.data"]


# ---- what is written goes only into the output folder, after every check ----------------------------------------

def test_a_data_file_is_never_written_through_a_symlinked_sub_folder_of_the_output(tmp_path):
    """location `sub/authorized_keys`, checked against the input folder, was written to out/sub/ -> elsewhere."""
    (tmp_path / "in" / "sub").mkdir(parents=True)
    path = external_model(tmp_path / "in", keep_scales=True)
    os.replace(tmp_path / "in" / "m.data", tmp_path / "in" / "sub" / "authorized_keys")
    set_location(path, "sub/authorized_keys")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "authorized_keys").write_bytes(b"ssh-ed25519 the owner's key\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sub").symlink_to(elsewhere)
    proc = cli("lower", str(path), "-o", str(tmp_path / "out" / "low.onnx"))
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "authorized_keys").read_bytes() == b"ssh-ed25519 the owner's key\n"
    assert sorted(os.listdir(tmp_path / "out")) == ["low.onnx", "low.onnx.data", "sub"]
    scales = next(t for t in onnx.load(str(tmp_path / "out" / "low.onnx")).graph.initializer if t.name == "scales")
    assert numpy_helper.to_array(scales).tolist() == [1, 1, 2, 2]


def test_an_output_named_like_the_inputs_data_file_loads(tmp_path):
    """`lower in/m.onnx -o out/m.data` wrote the data to out/m.data, then the model over it: exit 0, unloadable."""
    pytest.importorskip("onnxruntime", reason="the written model is loaded in onnxruntime")
    import onnxruntime as ort
    path = external_model(tmp_path / "in", keep_scales=True)
    (tmp_path / "out").mkdir()
    proc = cli("lower", str(path), "-o", str(tmp_path / "out" / "m.data"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["m.data", "m.data.data"]
    session = ort.InferenceSession(str(tmp_path / "out" / "m.data"), providers=["CPUExecutionProvider"])
    feed = {"dY": np.ones((1, 1, 8, 8), np.float32), "X": np.ones((1, 1, 4, 4), np.float32)}
    assert session.run(["scales_out"], feed)[0].tolist() == [1, 1, 2, 2]


def test_the_data_file_may_not_replace_a_file_the_input_reads(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    path = external_model(tmp_path / "in", keep_scales=True)
    os.replace(tmp_path / "in" / "m.data", tmp_path / "in" / "sub" / "x.onnx.data")
    set_location(path, "sub/x.onnx.data")
    before = (tmp_path / "in" / "sub" / "x.onnx.data").read_bytes()
    with pytest.raises(DescError, match="its data file x.onnx.data would replace a file the input model reads"):
        lower_file(str(path), str(tmp_path / "in" / "sub" / "x.onnx"), semantics=INSTALLED)
    assert (tmp_path / "in" / "sub" / "x.onnx.data").read_bytes() == before
    assert os.listdir(tmp_path / "in" / "sub") == ["x.onnx.data"]


def test_a_refused_output_leaves_no_data_file(tmp_path):
    """Check first, write last: the data file used to be written before the model's own checks."""
    path = external_model(tmp_path / "in", keep_scales=True)
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "x.onnx")
    with pytest.raises(DescError, match="FIFO"):
        lower_file(str(path), str(out / "x.onnx"), semantics=INSTALLED)
    assert os.listdir(out) == ["x.onnx"]


def test_save_atomic_writes_data_files_only_after_the_model_passes_its_checks(tmp_path):
    from onnx_ops.lowering.validate import save_atomic
    model = onnx.load(str(external_model(tmp_path / "in")), load_external_data=False)
    model.graph.node[0].input[1] = "nowhere"            # onnx's checker refuses an input nothing produces
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DescError, match="fails onnx's checker"):
        save_atomic(model, str(out / "x.onnx"), data_files={"m.data": (tmp_path / "in" / "m.data").read_bytes()})
    assert os.listdir(out) == []


# ---- values read from external data are never printed -----------------------------------------------------------

def test_scales_read_from_a_file_beside_the_model_are_not_echoed(tmp_path):
    """scales[0]=209670422528 in the refusal decoded to 'SECR'."""
    path = external_model(tmp_path / "home")
    notes = b"SECRET-PASSPHRASE-do-not-share\n"
    (tmp_path / "home" / "notes.txt").write_bytes(notes)
    set_location(path, "notes.txt")
    proc = cli("lower", str(path), "-o", str(tmp_path / "home" / "low.onnx"))
    assert proc.returncode == 2 and "value read from external data, not shown" in proc.stderr, proc.stderr
    message = proc.stderr.replace(str(tmp_path), "")
    for v in np.frombuffer(notes[:16], "<f4").astype(float):
        shown = {repr(v), str(v), f"{v:g}", f"{v:.6g}", f"{v:.9g}", f"{v:e}"}
        shown |= {str(int(v)), f"{int(v):,}"} if np.isfinite(v) and abs(v) >= 1 else set()
        assert not any(text in message for text in shown), (shown, message)
    assert not re.search(r"\d{4,}", message), message


# ---- the atomic writer writes through the descriptor it created -------------------------------------------------

def test_write_atomic_opens_its_temporary_file_once_exclusively_and_never_by_name_again(tmp_path):
    code = ("import os, sys\nfrom dml_desc.files import write_atomic, TEMP_MARK\nopens = []\n"
            "def hook(event, args):\n"
            "    if event == 'open' and TEMP_MARK in str(args[0]):\n        opens.append(args[2])\n"
            "sys.addaudithook(hook)\nwrite_atomic(sys.argv[1], b'data')\n"
            "need = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW\n"
            "print(len(opens), all(f & need == need for f in opens))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.bin")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.stdout.split() == ["1", "True"], proc.stderr
    assert (tmp_path / "a.bin").read_bytes() == b"data"


def test_a_temporary_file_swapped_for_a_link_is_never_renamed_into_place(tmp_path):
    target, victim = tmp_path / "m.onnx", tmp_path / "victim"
    target.write_bytes(b"old model")
    victim.write_bytes(b"victim")

    def swap(tmp):                  # another user of a shared folder, between the write and the rename
        os.remove(tmp)
        os.symlink(victim, tmp)
    with pytest.raises(DescError, match="replaced by another"):
        write_atomic(str(target), b"new model", swap)
    assert target.read_bytes() == b"old model" and not target.is_symlink() and victim.read_bytes() == b"victim"
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "victim"]


def test_write_with_names_a_file_in_a_private_folder(tmp_path):
    seen = []

    def writer(name):
        folder = os.path.dirname(name)
        seen.append((folder, os.stat(folder).st_mode & 0o777, os.path.basename(name)))
        with open(name, "wb") as f:
            f.write(b"data")
    write_with(str(tmp_path / "a.bin"), writer)
    (folder, mode, name), = seen
    assert os.path.dirname(folder) == str(tmp_path) and TEMP_MARK in folder and mode == 0o700 and name == "a.bin"
    assert os.listdir(tmp_path) == ["a.bin"] and (tmp_path / "a.bin").read_bytes() == b"data"


def test_load_model_reads_every_external_tensor_itself(tmp_path):
    """onnx's loader skips a Constant's sparse_value; the project's reads it, from the model's folder."""
    from onnx_ops.lowering.validate import load_model
    path = external_model(tmp_path / "in")                           # m.data: the scales 1, 1, 2, 2
    rewrite(path, lambda m: _sparse_value(m, "m.data"))
    model = load_model(str(path), load_external_data=True)
    sparse = next(n for n in model.graph.node if n.name == "c").attribute[0].sparse_tensor
    assert numpy_helper.to_array(sparse.values).tolist() == [1.0, 1.0]
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
