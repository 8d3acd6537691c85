"""Lower random ResizeGrad configurations and the examples/; record sha256 of each serialized model.
Run from the repository root, before and after a change to the lowering, and compare the two files (`cmp`): the
bytes of every lowered model must be identical unless the change means to alter them (docs/contributing.md).

    python bench/lowered_hashes.py /tmp/before.json      # LOWERED_HASHES_N=800 configurations by default
"""
import contextlib
import glob
import hashlib
import io
import json
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from helpers_dynamic import grad_model, out_shape  # noqa: E402

from dml_desc.cli import main as cli_main  # noqa: E402
from onnx_ops import lower  # noqa: E402

CTMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"]
SCALES = [0.25, 1 / 3, 0.5, 0.6, 0.75, 1.0, 1.1, 1.25, 1.5, 2.0, 7 / 3, 3.0, 4.0]
KINDS = ["static", "symbolic-batch", "symbolic-spatial", "run-time-scales", "sizes"]
SEMS = ["ort-1.19", "ort-1.27", "onnx-spec"]


def config(rng):
    mode = str(rng.choice(["nearest", "linear", "cubic"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": str(rng.choice(CTMS))}
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    elif rng.random() < 0.3:
        attrs["antialias"] = int(rng.integers(0, 2))
    if mode == "cubic":
        attrs["exclude_outside"] = int(rng.integers(0, 2))
        attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5]))
    rank = int(rng.choice([3, 4, 5]))
    opset = int(rng.choice([11, 13, 18, 19, 21]))
    if opset < 18:
        attrs.pop("antialias", None)
    if opset < 19 and attrs["coordinate_transformation_mode"] == "half_pixel_symmetric":
        attrs["coordinate_transformation_mode"] = "half_pixel"
    kind = str(rng.choice(KINDS))
    elem = int(rng.choice([TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE]))
    resized = list(range(2, rank)) if rng.random() < 0.8 else [rank - 1]
    scales = [1.0] * rank
    for a in resized:
        scales[a] = float(rng.choice(SCALES))
    roi = None
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        roi = [0.0] * rank + [1.0] * rank
        for a in resized:
            roi[a] = float(rng.choice([0.0, 0.1, 0.25, -0.2]))
            roi[rank + a] = float(rng.choice([1.0, 0.8, 0.6, 1.3]))
    shape = [int(rng.integers(1, 4)) for _ in range(rank)]
    for a in resized:
        shape[a] = int(rng.integers(1, 14))
    if rng.random() < 0.35:     # the shape-generic forms: constant integer factors, symbolic lengths
        kind = "generic"
        if attrs["coordinate_transformation_mode"] in ("align_corners", "tf_crop_and_resize"):
            ctm = rng.choice(["half_pixel", "asymmetric", "pytorch_half_pixel"])
            attrs["coordinate_transformation_mode"] = str(ctm)
        roi = None
        same = rng.random() < 0.6
        f = float(rng.choice([2.0, 3.0, 4.0, 8.0]))
        for a in resized:
            scales[a] = f if same else float(rng.choice([2.0, 3.0, 4.0, 8.0]))
    return dict(attrs=attrs, rank=rank, kind=kind, opset=opset, elem=elem, scales=scales, roi=roi, shape=shape,
                semantics=SEMS[int(rng.integers(0, 3))])


def model_of(c):
    rank, kind, shape, scales = c["rank"], c["kind"], c["shape"], c["scales"]
    if kind == "static":
        x_dims = shape
        dy_dims = out_shape(c["attrs"], shape, scales, c["roi"])
    elif kind == "symbolic-batch":
        x_dims = ["N"] + shape[1:]
        dy_dims = ["N"] + list(out_shape(c["attrs"], shape, scales, c["roi"]))[1:]
    elif kind == "generic":
        x_dims = ["N", shape[1] if c["opset"] % 2 else "C"] + [f"d{a}" for a in range(2, rank)]
        dy_dims = x_dims[:2] + [f"o{a}" if scales[a] != 1 else f"d{a}" for a in range(2, rank)]
    else:
        x_dims = [f"d{a}" for a in range(rank)]
        dy_dims = [f"d{a}" if kind != "sizes" and scales[a] == 1 else f"o{a}" for a in range(rank)]
    return grad_model(c["attrs"], x_dims, dy_dims, None if kind == "sizes" else scales, c["roi"],
                      run_time=("scales",) if kind == "run-time-scales" else (), opset=c["opset"], elem=c["elem"])


def digest(c):
    try:
        m = model_of(c)
        lowered, report = lower(m, semantics=c["semantics"])
        forms = [str(r) for r in report]
        return hashlib.sha256(lowered.SerializeToString(deterministic=True)).hexdigest() + " " + repr(forms)
    except Exception as e:
        return f"error {type(e).__name__}: {e}"


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main(out: str) -> None:
    rng = np.random.default_rng(35)
    result = {}
    for k in range(int(os.environ.get("LOWERED_HASHES_N", 800))):
        c = config(rng)
        result[f"cfg{k} {json.dumps(c, sort_keys=True)}"] = digest(c)
    with tempfile.TemporaryDirectory() as d:
        for f in sorted(glob.glob(os.path.join(ROOT, "examples", "*.json"))):
            for extra in ([], ["--dtype", "f16"], ["--semantics", "onnx-spec"]):
                p = os.path.join(d, "o.onnx")
                err = io.StringIO()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    rc = cli_main(["build", f, "-o", p, "--lowered", *extra])
                key = f"example {os.path.basename(f)} {extra}"
                result[key] = _sha256(p) if rc == 0 else f"rc {rc} {err.getvalue()}"
                if os.path.exists(p):
                    os.remove(p)
    with open(out, "w") as f_out:
        json.dump(result, f_out, indent=0, sort_keys=True)
    errs = sum(v.startswith(("error", "rc")) for v in result.values())
    print(f"{len(result)} entries, {errs} errors/refusals")


if __name__ == "__main__":
    main(sys.argv[1])
