"""The built-in backends: the NumPy reference, onnxruntime (lowered or native, on a named execution provider),
oneDNN (the `onednn` extra) and torch autograd."""
from __future__ import annotations

import json
from importlib.util import find_spec
from typing import Optional

import numpy as np

from dml_desc.errors import TORCH_INSTALL
from dml_desc.reference import NUMPY_DTYPES, as_dtype, resize_grad

from ..catalog import Skip
from .base import Backend


class Builtin(Backend):
    """A built-in backend: its converter's refusals of catalog cases are listed in kernel_refusals.json."""
    refusal_table = True


class NumpyBackend(Builtin):
    """The NumPy reference (dml_desc.reference.resize_grad): float64 sums, the result in the input's dtype."""
    name, convention, dtypes = "numpy", "canonical", ("f64", "f32", "f16", "bf16")
    oracle = "numpy-reference"          # the cases whose expected value it computes are not run on it

    def run(self, res, dy, dtype):
        """dX = the reference's gradient of `res` on dy rounded to `dtype`."""
        return resize_grad(as_dtype(dy, dtype), res)

    def info(self) -> str:
        """The version and what runs, for `dml-desc run`."""
        return f"numpy {np.__version__}, NumPy reference (float64 sums)"


class OnnxruntimeBackend(Builtin):
    """onnxruntime on one execution provider. Lowered (default): the model `dml-desc build --lowered` writes
    (onnx_ops.build.build_lowered, the one lowered model), standard ops only. Native: the com.microsoft
    ResizeGrad node as built, which only onnxruntime's CUDA provider implements."""
    convention = "onnx"
    dtypes: tuple = ("f64", "f32", "f16")

    def __init__(self, provider: str = "CPUExecutionProvider", native: bool = False, semantics=None):
        from dml_desc.conventions.onnx import resolve_semantics     # None: the installed onnxruntime's
        self.provider, self.native, self.semantics = provider, native, resolve_semantics(semantics)
        self.name = ("onnxruntime-native:" if native else "onnxruntime:") + provider
        if native:
            self.dtypes = ("f32",)

    def available(self) -> Optional[str]:
        """None, or why onnxruntime or the execution provider is missing here."""
        from dml_desc.errors import DescError
        from onnx_ops.run import available_providers
        try:
            providers = available_providers()
        except DescError as e:
            return f"onnxruntime {e.rule}"
        if self.provider not in providers:
            return (f"this onnxruntime has no {self.provider} (it has {', '.join(providers)}); CUDA needs "
                    "onnxruntime-gpu, or onnxruntime-training 1.19.2 for CUDA 11.8 and the native ResizeGrad")
        if self.native and self.provider != "CUDAExecutionProvider":
            return f"onnxruntime implements the com.microsoft ResizeGrad kernel only on CUDA, not on {self.provider}"
        from onnx_ops.run import native_kernel_missing
        return native_kernel_missing(self.provider) if self.native else None

    def run(self, description, dy, dtype):
        """dX from the model `dml-desc build` writes for the ONNX description, run on the provider."""
        from dml_desc.conventions.onnx import OnnxResize, to_canonical
        from onnx_ops import build_resize_grad
        from onnx_ops.lower import native_cuda_fits
        r = OnnxResize.from_json(description)
        if self.native and not native_cuda_fits(r, to_canonical(r, self.semantics)):
            raise Skip("onnxruntime's CUDA ResizeGrad kernel does not compute this map (onnx_ops.lower."
                       "native_cuda_fits; `dml-desc lower --keep-cuda` lowers it too)")
        model = build_resize_grad(r, NUMPY_DTYPES[dtype], lowered=not self.native, semantics=self.semantics)
        return self._run_model(model, dy, dtype, r.input_shape)

    def run_canonical(self, res, dy, dtype) -> tuple:
        """(dX, notes) for canonical `res`, lowered straight from its map (onnx_ops.build.build_gradient): also
        where ONNX has no Resize spelling for it, with a note saying so (`dml-desc run`; lowered only)."""
        from onnx_ops.build import build_gradient
        model, notes = build_gradient(res, NUMPY_DTYPES[dtype], lowered=True, semantics=self.semantics)
        return self._run_model(model, dy, dtype, res.in_shape), notes

    def _run_model(self, model, dy, dtype, in_shape):
        """dX of a gradient model (inputs dY and X; X's values are not read) on this provider."""
        from onnx_ops.run import run_model
        dy = as_dtype(dy, dtype)
        return run_model(model, {"dY": dy, "X": np.zeros(in_shape, dy.dtype)}, provider=self.provider)[0]

    def info(self) -> str:
        """The version, the model kind and the provider, for `dml-desc run`."""
        from onnx_ops.run import onnxruntime
        how = "ResizeGrad (com.microsoft)" if self.native else "lowered ResizeGrad (standard ops)"
        return f"onnxruntime {onnxruntime().__version__}, {how}, {self.provider}"


class OnednnBackend(Builtin):
    """The real oneDNN (the `onednn` extra), the InterpolateBackward document through the Graph API (or the
    primitive API with api='primitive'), in a child process."""
    convention, dtypes = "onednn", ("f32", "bf16", "f16")

    def __init__(self, api: str = "graph"):
        self.api, self.name = api, "onednn" if api == "graph" else f"onednn-{api}"
        self.last: Optional[dict] = None         # the last run's result (onednn.run_one's)

    def available(self) -> Optional[str]:
        """None, or why libdnnl is missing here."""
        from dml_desc.runtimes import onednn
        return onednn.missing_reason()

    def run(self, description, dy, dtype):
        """dX from oneDNN for the InterpolateBackward document, retyped to `dtype`."""
        from dml_desc.conventions.onednn import find_op
        from dml_desc.runtimes import onednn
        doc = json.loads(json.dumps(description))
        op = find_op(doc, ("InterpolateBackward",))
        for t in op["inputs"] + op["outputs"]:
            t["dtype"] = dtype
        try:
            self.last = onednn.run_one(onednn.interpolate_job(op, dy, self.api))
        except onednn.OnednnError as e:
            if e.status == "dnnl_unimplemented" and dtype != "f32":
                raise Skip(f"oneDNN has no {dtype} kernel for this on this CPU: {e}") from None
            raise
        return self.last["out"]

    def info(self) -> str:
        """The version, API and kernel of the last run, for `dml-desc run`."""
        from dml_desc.runtimes import onednn
        return onednn.describe(self.last) if self.last else f"onednn, {self.api} API"


class TorchBackend(Builtin):
    """torch autograd through F.interpolate, from the torch description (F.interpolate's arguments). The suite runs
    it in f32; torch computes float64 coordinates in double, the map of a description whose `dtype` is float64."""
    name, convention, dtypes = "torch", "torch", ("f32",)

    def available(self) -> Optional[str]:
        """None, or how to install torch."""
        return None if find_spec("torch") else f"torch is not installed: {TORCH_INSTALL}"

    def run(self, description, dy, dtype):
        """dX = x.grad after F.interpolate(x, **description).backward(dy)."""
        import torch
        from dml_desc.conventions.torch import TorchInterpolate
        kw = TorchInterpolate.from_json(description).kwargs()
        tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}[dtype]
        x = torch.zeros(*description["input_shape"], dtype=tdt, requires_grad=True)
        torch.nn.functional.interpolate(x, **kw).backward(torch.tensor(np.asarray(dy, np.float64), dtype=tdt))
        assert x.grad is not None               # backward filled it: x requires grad
        return x.grad.float().numpy() if dtype == "bf16" else x.grad.numpy()

    def info(self) -> str:
        """The version and the call, for `dml-desc run`."""
        import torch
        return f"torch {torch.__version__}, autograd through F.interpolate"
