"""`--save-failures DIR`: each failure as files that reproduce it one case at a time.

DIR/CASE/ holds description.json (the description the backend got, in its convention), dy.npy (the dY it got, in
the case's dtype; bfloat16 as float32), expected.npy and got.npy (float64), and case.txt (the verdict, the worst
element, the diagnosis and the commands). `dml-desc run DIR/CASE/description.json --dy DIR/CASE/dy.npy --backend
numpy -o out.npy` gives expected.npy within the case's tolerance. A case failing in several dtypes gets one folder
per dtype other than f32 (CASE.f16, ...).
"""
from __future__ import annotations

import io
import json
import os
import re

import numpy as np


def folder_name(case: str, dtype: str) -> str:
    """A case name as a folder name: letters, digits and . _ = - kept, every other run of characters one '_'."""
    safe = re.sub(r"[^A-Za-z0-9._=-]+", "_", case).strip("_.") or "case"
    return safe if dtype == "f32" else f"{safe}.{dtype}"


def save_failure(root: str, record, extras: dict, got: np.ndarray, want: np.ndarray) -> str:
    """Write one failure under `root`; returns its folder."""
    from dml_desc.files import write_atomic
    folder = os.path.join(root, folder_name(record.case, record.dtype))
    os.makedirs(folder, exist_ok=True)
    description = extras.get("description")
    files = {"dy.npy": _npy(extras["dy"]), "expected.npy": _npy(want), "got.npy": _npy(got),
             "case.txt": case_text(record, folder).encode("utf-8")}
    if isinstance(description, dict):
        files["description.json"] = (json.dumps(description, indent=1) + "\n").encode("utf-8")
    for name, data in files.items():
        write_atomic(os.path.join(folder, name), data, field="--save-failures")
    return folder


def _npy(a) -> bytes:
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":            # .npy has no bfloat16
        a = a.astype(np.float32)
    buffer = io.BytesIO()
    np.save(buffer, a, allow_pickle=False)
    return buffer.getvalue()


def case_text(record, folder: str) -> str:
    """What failed, and how to run it again."""
    from .diagnosis import describe_worst
    lines = [f"case {record.case} [{record.backend}, {record.convention}, {record.dtype}, oracle {record.oracle}]",
             f"verdict: {record.reason}"]
    if record.worst:
        lines.append(describe_worst(record.worst))
    if record.diagnosis:
        lines.append(f"diagnosis: {record.diagnosis}")
    dtype = "" if record.dtype == "f32" else f" --dtype {record.dtype}"
    lines += ["", "reproduce (expected.npy, within the case's tolerance):",
              f"  dml-desc run {folder}/description.json --dy {folder}/dy.npy --backend numpy -o out.npy{dtype}",
              "your kernel on the same input:",
              f"  dml-desc run {folder}/description.json --dy {folder}/dy.npy --backend {record.backend} -o mine.npy"
              f"{dtype}"]
    return "\n".join(lines) + "\n"
