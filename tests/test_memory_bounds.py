"""Memory bounded by the axis lengths, checked under `ulimit -v` in a subprocess: descriptors far inside the size
budget that used to allocate a dense p x q block kernel (nearest 20000 -> 20001: 3.2 GB; 4194303 -> 4194304:
128 TiB) or full rows x window band index arrays (linear x2 on a 2^21 axis: 2.7 GB peak) now run in a
fraction of that. The limits are virtual memory (imports included), generous for the new code and below what
the old code needed."""
import os
import shutil
import subprocess
import sys

import pytest
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(not shutil.which("sh"), reason="needs a POSIX shell for ulimit")


def run_limited(code: str, kbytes: int, *args) -> subprocess.CompletedProcess:
    """`python -c code args` under `ulimit -v kbytes`."""
    script = f'ulimit -v {kbytes} && exec "$0" -c "$1" "${{@:2}}"'
    return subprocess.run(["bash", "-c", script, sys.executable, code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=600)


def test_a_coprime_nearest_axis_builds_lowered_without_a_dense_kernel(tmp_path):
    desc = tmp_path / "near.json"
    desc.write_text('{"mode": "nearest", "input_shape": [1, 1, 20000], "size": [20001]}')
    code = "import sys; from dml_desc.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = run_limited(code, 2_000_000, "build", str(desc), "-o", str(tmp_path / "m.onnx"), "--lowered")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.onnx").stat().st_size < 2_000_000


def taps_code(torch_call: str, expression: str) -> str:
    """A child program: the gradient taps of axis 2 of a torch call (a dict literal), then print(expression)."""
    return ("from dml_desc import conventions\nfrom dml_desc.weights import gradient_taps\n"
            f"res, _ = conventions.load('torch', {torch_call})\n"
            "taps = gradient_taps(res.axes[2], res)\n"
            f"print({expression})\n")


def test_the_longest_coprime_axis_the_budget_accepts_is_no_block_kernel():
    code = taps_code("{'input_shape': [1, 1, 4194303], 'mode': 'nearest', 'size': [4194304]}",
                     "taps.block_kernel() is None")
    proc = run_limited(code, 1_500_000)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr[-500:]


def test_a_band_on_a_long_axis_is_checked_in_bounded_slices():
    code = "from onnx_ops.forms import shared_band\n" + taps_code(
        "{'input_shape': [1, 1, 2 ** 21], 'mode': 'linear', 'size': [2 ** 22], 'align_corners': False}",
        "shared_band(taps, 2, 16).name()")
    proc = run_limited(code, 2_000_000)
    assert proc.returncode == 0 and proc.stdout.strip() == "band 131072x34->16, shared", proc.stderr[-500:]


def test_the_small_band_check_still_refuses_a_wrong_band():
    import numpy as np
    from dml_desc import conventions
    from dml_desc.weights import gradient_taps
    from onnx_ops.forms import bands as forms           # the module whose BAND_CHECK_ROWS the check reads
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 64], "mode": "linear", "size": [128],
                                        "align_corners": False})
    taps = gradient_taps(res.axes[2], res)
    plan = forms.shared_band(taps, 2, 8)
    assert forms.band_matches(plan, taps)
    previous = forms.BAND_CHECK_ROWS
    try:
        forms.BAND_CHECK_ROWS = 1                       # one tile per slice: the slicing itself is exercised
        assert forms.band_matches(plan, taps)
        wrong = forms.Band(plan.axis, plan.tile, plan.width, plan.starts, plan.matrices * np.float64(1.001),
                           plan.cols)
        assert not forms.band_matches(wrong, taps)
    finally:
        forms.BAND_CHECK_ROWS = previous


def test_a_gradient_table_past_the_memory_bound_is_refused_before_allocating():
    """Every output of a zero-length crop reads one input: that input's gradient row holds every output. The
    table (rows x widest row) is refused by its estimate, naming the bound, under a 1.5 GB ulimit."""
    code = ("from dml_desc import DescError, conventions\nfrom dml_desc.weights import gradient_taps\n"
            "res, _ = conventions.load('onnx', {'op_type': 'Resize', 'opset': 19, 'input_shape': [1, 1, 2 ** 22],"
            " 'attributes': {'mode': 'nearest', 'coordinate_transformation_mode': 'tf_crop_and_resize'},"
            " 'roi': [0, 0, 0.5, 1, 1, 0.5], 'sizes': [1, 1, 2 ** 22 - 1]}, semantics='ort-1.27')\n"
            "try:\n    gradient_taps(res.axes[2], res)\nexcept DescError as e:\n    print(e.field, '|', e.rule)\n")
    proc = run_limited(code, 1_500_000)
    assert proc.returncode == 0, proc.stderr[-500:]
    field, rule = proc.stdout.strip().split(" | ")
    assert field == "taps" and "memory bound of 67108864 (2^26) entries" in rule


def test_a_small_zero_length_crop_still_has_its_gradient():
    import numpy as np
    from dml_desc import conventions
    from dml_desc.weights import gradient_taps
    res, _ = conventions.load("onnx", {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 8],
                                       "attributes": {"mode": "nearest",
                                                      "coordinate_transformation_mode": "tf_crop_and_resize"},
                                       "roi": [0, 0, 0.5, 1, 1, 0.5], "sizes": [1, 1, 5]}, semantics=INSTALLED)
    taps = gradient_taps(res.axes[2], res)
    assert taps.dense().sum() == np.count_nonzero(taps.weight)
