"""The backend interface, and the plug-in wrapper for a user's function (`--backend py:MODULE:NAME`)."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from dml_desc import conventions
from dml_desc.canonical import Resampling
from dml_desc.errors import DescError, require
from dml_desc.reference import NUMPY_DTYPES

CONVENTIONS = ("dml", "onednn", "onnx", "torch", "tf", "jax")
SUITE_DTYPES = tuple(NUMPY_DTYPES)     # the suite's dtype names: f64, f32, f16, bf16 (one table)


class Backend:
    """A backend: subclass it, or give any object these attributes (see the package docstring)."""
    name: str = "backend"
    convention: str = "onnx"
    dtypes: tuple = ("f32",)
    supports: object = None  # what the kernel implements (conformance.support); None: everything it is offered
    refusal_table = False    # True for the built-ins: kernel_refusals.json lists their converters' refusals

    def available(self) -> Optional[str]:
        """None when the backend can run here, else the reason it cannot (shown as the skip reason)."""
        return None

    def run(self, description, dy: np.ndarray, dtype: str) -> np.ndarray:
        """dX for `description` (in self.convention) and the output gradient `dy` (of dtype `dtype`)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<backend {self.name} ({self.convention}; {', '.join(self.dtypes)})>"


def to_description(res: Resampling, convention: str, semantics: Optional[str] = None):
    """`res` as the backend convention's description: exactly what `dml-desc convert --to CONVENTION` prints
    for it (a gradient description where the format has one), or the Resampling itself for 'canonical'.
    A map the convention cannot state raises ConversionError with the converter's reason."""
    if convention == "canonical":
        return res
    semantics = conventions.onnx.resolve_semantics(semantics)     # None: the installed onnxruntime's, as convert
    return conventions.dump(convention, res, backward=True, semantics=semantics)[0]


def checked_interface(name: str, convention, dtypes) -> tuple:
    """(convention, dtypes) a plug-in named `name` declares, checked: one of the description formats, and a
    non-empty tuple of suite dtype names."""
    require(convention in CONVENTIONS, f"{name}.convention", convention, f"must be one of {', '.join(CONVENTIONS)}")
    require(isinstance(dtypes, (tuple, list)) and len(dtypes) > 0 and all(d in SUITE_DTYPES for d in dtypes),
            f"{name}.dtypes", dtypes, f"must be a non-empty tuple of {', '.join(SUITE_DTYPES)}")
    return convention, tuple(dtypes)


class Plugin(Backend):
    """A user's function as a backend: `fn(dy, description) -> dX`; `fn.convention` (default 'onnx'),
    `fn.dtypes` (default ('f32',)) and `fn.supports` (what it implements: conformance.support; default everything)
    are read from the function. Named `py:MODULE:NAME` in every record."""

    def __init__(self, fn: Callable, name: str):
        require(callable(fn), "--backend", name, "must name a callable: fn(dy, description) -> dX")
        self.fn, self.name = fn, name
        self.convention, self.dtypes = checked_interface(name, getattr(fn, "convention", "onnx"),
                                                         getattr(fn, "dtypes", ("f32",)))
        from ..support import declared
        self.supports = declared(getattr(fn, "supports", None), name)     # what it implements (None: everything)

    def run(self, description, dy, dtype):
        """dX = fn(dy, description), which must be an array of floats."""
        out = self.fn(dy, description)
        arr = np.asarray(out)
        if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
            raise DescError(f"{self.name}()", f"an array of {arr.dtype}", "must return dX as an array of floats")
        return arr
