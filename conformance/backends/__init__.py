"""One backend interface for `dml-desc run`, the conformance suite and plug-ins.

A backend is anything with
  name        the name records and tables show ('numpy', 'onnxruntime:CPUExecutionProvider', 'py:mod:fn');
  convention  the description it consumes: 'dml', 'onednn', 'onnx', 'torch', 'tf' (the JSON that
              `dml-desc convert --to CONVENTION` prints), or 'canonical' (the library's Resampling itself,
              for the NumPy reference);
  dtypes      the suite dtype names it runs ('f64', 'f32', 'f16', 'bf16');
  available() None, or the reason it cannot run here (not installed, no such execution provider);
  run(description, dy, dtype) -> dX, dy and dX in the description's own layout.

The suite converts each case into the backend's convention exactly (conventions.dump) or skips the case
with the converter's reason; built-ins and plug-ins are the same thing to it. Names:
  numpy, onnxruntime (lowered, CPU), onnxruntime:PROVIDER (lowered, on that execution provider),
  onnxruntime-native:PROVIDER (the com.microsoft ResizeGrad kernel), onednn, torch,
  py:MODULE:NAME (a plug-in: see Plugin), or a name from the `dml_desc.backends` entry-point group.
The command lines run a plug-in in a worker process of its own (worker.py: worker.load(name) instead of resolve).
"""
from __future__ import annotations

from .base import CONVENTIONS, Backend, Plugin, to_description
from .registry import builtin_names, installed_plugins, resolve

__all__ = ["Backend", "Plugin", "CONVENTIONS", "to_description", "resolve", "builtin_names", "installed_plugins"]
