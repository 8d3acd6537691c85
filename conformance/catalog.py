"""The case catalog: each case yields checks (case, convention, backend, dtype) -> errors vs an oracle."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


DOC_EXAMPLE = {"Operator": "DML_OPERATOR_RESAMPLE_GRAD",
               "InputGradientTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 3]},
               "OutputGradientTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
               "InterpolationMode": "NEAREST_NEIGHBOR", "Scales": [1, 1, 0.5, 1.5],
               "InputPixelOffsets": [0.5] * 4, "OutputPixelOffsets": [-0.5] * 4}
# oneDNN benchdnn shapes and oneDNN Graph JSON files (from oneDNN, Apache-2.0), copied from shared/reference
REFERENCE_DIR = Path(__file__).resolve().parent / "data"


@dataclass
class Check:
    """One check of the suite: a case, the convention it is described in, the backend that computes it and
    the dtype; `run()` returns (got, want, judge or tolerance) or raises Skip.
    """
    case: str
    convention: str
    backend: str
    dtype: str
    # run() and describe() take no arguments; `...`: the suites bind loop variables as lambda defaults, which mypy
    # cannot infer against Callable[[], T] (python/mypy#15459)
    run: Callable[..., tuple]         # -> (got, want, judge or tolerance[, oracle]) or raises Skip
    full_only: bool = False
    oracle: str = ""                  # where the expected value comes from; never the backend under test
    describe: Optional[Callable[..., object]] = None    # the case's description, printed when it fails


class Skip(Exception):
    """Raised by a check that cannot run here; the message is the reason recorded."""
    pass


class Unsupported(Exception):
    """Raised by a check whose backend does not implement the case (it says so, or raises NotImplementedError):
    recorded as 'unsupported', counted as the kernel's coverage, never as a failure."""
    pass


@dataclass
class Record:
    """The result of one check: status 'pass' | 'fail' | 'skip' | 'unsupported' (by the kernel under test), the
    max abs error, max_rel_err (the abs error over max(1, max |reference|), or benchdnn's element-wise relative
    error; None where meaningless), reason; for a numerical failure the worst element and the diagnosis (the
    alternative map the backend's dX matches, conformance.diagnosis), or None.
    """
    case: str
    convention: str
    backend: str
    dtype: str
    status: str
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    reason: str = ""
    oracle: str = ""
    description: object = None        # a failing case's description (JSON), for `dml-desc run` / `convert`
    arrays: Optional[tuple] = field(default=None, repr=False)     # (got, expected) of a failure, for --html
    worst: Optional[dict] = None      # a numerical failure's worst element: index, expected, got, edges
    diagnosis: Optional[str] = None   # 'matches <alternative>' where one explains the backend's dX exactly
    saved: Optional[str] = None       # the folder --save-failures wrote the failure to

    @property
    def numerical(self) -> bool:
        """A failure with numbers to compare (not an exception, a refusal or a wrong shape)."""
        return self.status == "fail" and self.max_abs_err is not None

    def as_json(self) -> dict:
        """The record as --json writes it (no arrays)."""
        return {k: v for k, v in self.__dict__.items() if k != "arrays"}


def parse_benchdnn(path: Path) -> list:
    """(set, name, ic, in_spatial, out_spatial) from benchdnn descriptor lines (mb forced to 2)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        group, desc = line.split("\t", 1)
        name = re.search(r'n"?([^"]*)"?$', desc)
        body = desc[:name.start()] if name else desc
        dims = {k: int(v) for k, v in re.findall(r"(mb|ic|id|ih|iw|od|oh|ow)(\d+)", body)}
        if "od" in dims:
            ins, outs = [dims["id"], dims.get("ih", dims["id"]), dims.get("iw", dims["id"])], \
                [dims["od"], dims.get("oh", dims["od"]), dims.get("ow", dims["od"])]
        elif "oh" in dims:
            ins, outs = [dims["ih"], dims.get("iw", dims["ih"])], [dims["oh"], dims.get("ow", dims["oh"])]
        else:
            ins, outs = [dims["iw"]], [dims["ow"]]
        out.append((group, name.group(1) if name else body, dims["ic"], ins, outs))
    return out


def benchdnn_problems():
    """Every benchdnn resampling shape (mb 2) in nearest and linear, NCX and NXC, as an InterpolateBackward
    document: yields (case name, mode, data format, document, big); big = only under --full."""
    for group, name, ic, ins, outs in parse_benchdnn(REFERENCE_DIR / "onednn-benchdnn-resampling-shapes.txt"):
        big = 2 * ic * _product(outs) > 400_000 or group == "shapes_maskrcnn"
        for mode in ("nearest", "linear"):
            for fmt in ("NCX", "NXC"):
                src = [2, ic] + ins if fmt == "NCX" else [2] + ins + [ic]
                dst = [2, ic] + outs if fmt == "NCX" else [2] + outs + [ic]
                doc = {"graph": [{"kind": "InterpolateBackward", "attrs": {
                    "mode": {"value": mode}, "sizes": {"value": outs}, "data_format": {"value": fmt}},
                    "inputs": [{"shape": src}, {"shape": dst}], "outputs": []}]}
                yield f"benchdnn:{group}:{name}:{mode}:{fmt}", mode, fmt, doc, big


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


CROSS_CASES = [   # (name, ONNX Resize form on NCHW): each is offered to every convention
    ("bilinear_x2_half_pixel", {"mode": "linear"}, [2, 3, 12, 20]),
    ("bilinear_align_corners_6x10_to_11x19", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     [2, 3, 11, 19]),
    ("nearest_x2_asymmetric_floor", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                     "nearest_mode": "floor"}, [2, 3, 12, 20]),
    ("nearest_down2_half_pixel_ties", {"mode": "nearest"}, [2, 3, 3, 5]),
    ("nearest_x1.5_half_pixel", {"mode": "nearest"}, [2, 3, 9, 15]),
    ("bicubic_x2_half_pixel", {"mode": "cubic"}, [2, 3, 12, 20]),
]


# The conventions that state each cross case exactly (the ONNX form read under any semantics; tf on the NHWC
# permutation). Every other convention must refuse, saying why. A converter that starts refusing one of these,
# or accepting one that is missing here, fails the suite: update this table on purpose, with the reason.
CROSS_ACCEPTED = {
    "bilinear_x2_half_pixel": ("dml", "onednn", "onnx", "torch", "tf", "jax"),
    "bilinear_align_corners_6x10_to_11x19": ("dml", "onnx", "torch", "tf"),     # oneDNN has no align_corners
    "nearest_x2_asymmetric_floor": ("dml", "onednn", "onnx", "torch", "tf", "jax"),   # JAX: floor((o + 1/2) / 2)
    "nearest_down2_half_pixel_ties": ("dml", "onnx", "torch", "tf"),   # oneDNN's nearest rounds ties the other way
    "nearest_x1.5_half_pixel": ("dml", "onnx", "torch", "tf"),          # (its tie rule again)
    "bicubic_x2_half_pixel": ("onnx", "torch", "jax"),   # DML and oneDNN have no cubic; TF quantizes it to 1/1024;
    # JAX: its cubic-pytorch (Keys a = -0.75)
}
