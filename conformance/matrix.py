"""`dml-desc matrix`: the cross-runtime matrix (docs/cross-runtime.md keeps the last run).

For each real runtime installed (onnxruntime's forward, torch, oneDNN, TensorFlow, JAX) x mode x coordinate rule, on
a few small calls (up- and downsampling, odd lengths, same-length axes where the rule makes them):
- the runtime's forward is probed on basis inputs (one batched call: batch b holds unit input b), which gives its
  Jacobian J, and its own gradient on basis output gradients (batch b holds unit dY b), which gives G; the cell
  says whether G = J^T (within float32 rounding, TRANSPOSE_TOL);
- the project's description of the call (its convention's JSON, read by dml_desc.conventions) must reproduce G and
  J through the NumPy reference (within DESCRIPTION_TOL).
Where G is not J^T, or a runtime has no gradient, that is a finding: KNOWN_FINDINGS says what it is. A cell that
departs and matches no finding is UNEXPECTED (the test fails on it). onnxruntime has no CPU ResizeGrad kernel: its
gradient column is the lowered gradient (`dml-desc build --lowered`) run on onnxruntime's CPU.
"""
from __future__ import annotations

import datetime
import fnmatch
import json
import time
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any, Callable, Optional, cast

import numpy as np

from dml_desc import conventions
from dml_desc.reference import resize, resize_grad

TRANSPOSE_TOL = 1e-5        # float32 kernels: the same weights, multiplied and summed in another order
DESCRIPTION_TOL = 2e-5      # float32 runtime against the float64 reference of the description
RUNTIMES = ("onnxruntime", "torch", "onednn", "tensorflow", "jax")
SIZES = [((3, 5), (7, 3)), ((4, 6), (2, 9))]          # up and down on each axis, odd lengths


@dataclass(frozen=True)
class Finding:
    """A documented departure: cells of `runtime` whose mode and rule match the globs (fnmatch)."""
    runtime: str
    modes: str
    rules: str
    text: str

    def matches(self, runtime: str, mode: str, rule: str) -> bool:
        """Whether this finding is about that cell."""
        return runtime == self.runtime and fnmatch.fnmatch(mode, self.modes) and fnmatch.fnmatch(rule, self.rules)


KNOWN_FINDINGS = (
    Finding("torch", "bicubic", "scale_factor", "torch's bicubic backward copies an axis that keeps its length when "
            "every spatial axis does (scale_factor 1.3 on length 3), its forward resamples it by 1/1.3: the gradient "
            "is the transpose of to_canonical's map, the forward is forward_map's (docs/conventions-torch-tf.md)"),
    Finding("torch", "*antialias*", "scale_factor", "torch's antialiased backward filters an axis that keeps its "
            "length (scale_factor 1.3 on length 3), its forward copies it: the gradient is to_canonical's map, the "
            "forward forward_map's (docs/conventions-torch-tf.md)"),
    Finding("torch", "lanczos", "scale_factor", "torch's lanczos (antialiased) backward filters an axis that keeps "
            "its length, its forward copies it (docs/conventions-torch-tf.md)"),
    Finding("torch", "nearest", "scale_factor, 1-D", "torch's 1-D (and 3-D) nearest forward resamples an axis that "
            "keeps its length (scale_factor 1.3 on length 3: floor(o / 1.3)) and reads floor(o / 2.2) where out == 2 * "
            "in, while its backward (nearest_idx) copies the first and reads o >> 1 in the second: the gradient is "
            "to_canonical's map, the forward forward_map's (docs/conventions-torch-tf.md)"),
    Finding("tensorflow", "area", "*", "TensorFlow registers no gradient for ResizeArea (tf.image.resize's area): "
            "tape.gradient raises LookupError; only its forward is TF's"),
    Finding("onednn", "nearest", "*", "oneDNN's jit:avx512_core nearest backward kernel rounds some exact ties "
            "down where its forward rounds them up (28 -> 2, 26 -> 7; docs/semantics.md): that kernel's gradient is "
            "the transpose of dml_desc.conventions.onednn.backward_kernel_map, not of the forward (ref and AVX2 "
            "kernels agree with the forward)"),
)
GLOBAL_NOTES = {
    "onnxruntime": "The onnx description (a Resize-19 node) is read under the installed onnxruntime's semantics. "
                   "onnxruntime has no CPU kernel for com.microsoft::ResizeGrad (a CPU session fails to create: "
                   "onnxruntime-training finds no implementation, plain onnxruntime no such op), so "
                   "its gradient here is the lowered gradient of the ONNX description (standard ops, `dml-desc build "
                   "--lowered`) run on onnxruntime's CPU: the cell says whether that is the transpose of "
                   "onnxruntime's own Resize forward.",
    "torch": "torch 2.x CPU, float32: autograd through F.interpolate. The torch description (F.interpolate's "
             "arguments) is read by dml_desc.conventions.torch.to_canonical for the gradient, by forward_map for the "
             "forward.",
    "onednn": "oneDNN Graph Interpolate (forward) and InterpolateBackward (gradient) documents, as the onednn "
              "converter writes them, run through the Graph API, each data_format in a child process of its own: "
              "with C = 1 NCX and NXC tensors share their memory layout, and oneDNN's primitive cache then gives an "
              "NXC problem the kernel an earlier NCX one of the same sizes created (simple:any instead of "
              "jit:avx512_core; measured on oneDNN 3.2), so one process for both would make the kernel, and this "
              "table, depend on the order of the calls.",
    "tensorflow": "TensorFlow's own gradient kernels through tf.GradientTape (ResizeBilinearGrad, "
                  "ResizeNearestNeighborGrad, ResizeBicubicGrad, ScaleAndTranslateGrad), float32, NHWC.",
    "jax": "jax.vjp of jax.image.resize / scale_and_translate, float32, CPU.",
}


@dataclass
class Call:
    """One call of a runtime: its description (a function of the batch size) and its spatial shapes."""
    label: str
    in_sp: tuple
    out_sp: tuple
    make: Callable[..., object]       # make(batch[, backward]): oneDNN's also takes the direction


@dataclass
class Cell:
    """A runtime x mode x rule verdict over its calls."""
    runtime: str
    mode: str
    rule: str
    status: str = "transpose"         # transpose, not transpose, no gradient, refused
    transpose_err: float = 0.0        # max |G - J^T|
    gradient_err: float = 0.0         # max |G - description's gradient|
    forward_err: float = 0.0          # max |J - description's forward|
    calls: list = field(default_factory=list)
    departing: list = field(default_factory=list)       # the calls where G != J^T
    detail: str = ""
    finding: str = ""                 # the documented finding it matches, or "UNEXPECTED: ..."
    gradient_by: str = ""             # the map that reproduces the gradient where it is not the description's own

    @property
    def reproduced(self) -> bool:
        """Whether the description reproduces the runtime's gradient and forward."""
        return self.gradient_err <= DESCRIPTION_TOL and self.forward_err <= DESCRIPTION_TOL

    @property
    def ok(self) -> bool:
        """An exact transpose reproduced by the description, or a documented finding (or a refused call)."""
        return not self.finding.startswith("UNEXPECTED")

    def as_json(self) -> dict:
        """The cell as JSON."""
        return dict(self.__dict__, reproduced=self.reproduced, ok=self.ok)


# ---- the runtimes --------------------------------------------------------------------------------------------

class Runtime:
    """A runtime's calls, forward and gradient. `layout` packs the batch of basis arrays: NCX ([B, 1, *sp]), NXC
    ([B, *sp, 1]) or NX ([B, *sp])."""
    name = module = convention = ""
    layout = "NCX"

    def missing(self) -> Optional[str]:
        """None, or why the runtime is not here."""
        return None if find_spec(self.module) else f"{self.module} is not installed"

    def version(self) -> str:
        """The runtime's version string."""
        return __import__(self.module).__version__

    def cells(self) -> list:
        """[(mode, rule, [Call, ...])]."""
        raise NotImplementedError

    def run(self, pairs: list) -> list:
        """[(Y, DX or the exception)] for [(description_fwd, X, description_grad, DY)]."""
        out = []
        for dfwd, x, dgrad, dy in pairs:
            y = self.forward(dfwd, x)
            try:
                dx = self.gradient(dgrad, dy)
            except LookupError as e:           # TF: no gradient registered for the op
                dx = e
            out.append((y, dx))
        return out

    def measured(self) -> list:
        """Lines this run measured about the runtime as a whole."""
        return []

    def forward_description(self, call: Call, batch: int):
        """The description of the call's forward (the same as its gradient's where the format has one form)."""
        return call.make(batch)

    def layout_of(self, description) -> str:
        """The layout of the description's arrays."""
        return self.layout

    def forward(self, description, x):
        """The runtime's forward of the described call on x."""
        raise NotImplementedError

    def gradient(self, description, dy):
        """The runtime's own gradient of the described call for dy."""
        raise NotImplementedError

    def gradient_map(self, description):
        """The canonical map whose transpose the description says the gradient is."""
        return conventions.read(self.convention, description).canonical

    def forward_map(self, description):
        """The canonical map the description says the forward computes."""
        return self.gradient_map(description)


def _dims(shape) -> str:
    return "x".join(map(str, shape))


def _sized(make_one, sizes=SIZES) -> list:
    """A Call per (in, out) spatial pair, its description make_one(batch, in, out)."""
    return [Call(f"{_dims(i)} -> {_dims(o)}", i, o, _at_sizes(make_one, i, o)) for i, o in sizes]


def _at_sizes(make_one, i, o):
    """make_one with the spatial pair bound: a function of the batch."""
    return lambda b: make_one(b, i, o)


class Onnxruntime(Runtime):
    """onnxruntime's Resize-19 forward; the gradient is the lowered ResizeGrad (no CPU kernel exists)."""
    name, module, convention = "onnxruntime", "onnxruntime", "onnx"
    MODES: dict[str, dict[str, Any]] = {
        "nearest": {"mode": "nearest"}, "linear": {"mode": "linear"}, "cubic": {"mode": "cubic"},
        "linear antialias": {"mode": "linear", "antialias": 1}, "cubic antialias": {"mode": "cubic", "antialias": 1}}
    RULES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric",
             "tf_crop_and_resize")

    def __init__(self):
        from dml_desc.conventions.onnx import installed_semantics
        self.semantics = installed_semantics()

    def version(self) -> str:
        from dml_desc.conventions.onnx import installed_runtime
        return f"{installed_runtime()} (semantics {self.semantics})"

    def cells(self) -> list:
        out = []
        for mode, attrs in self.MODES.items():
            for rule in self.RULES:
                a = dict(attrs, coordinate_transformation_mode=rule)
                roi = [0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7] if rule == "tf_crop_and_resize" else None
                calls = [Call("3x5 -> 7x3 (scales 2.5, 0.6)", (3, 5), (7, 3),
                              lambda b, a=a, roi=roi: {"op_type": "Resize", "opset": 19, "input_shape": [b, 1, 3, 5],
                                                       "attributes": a, "roi": roi, "scales": [1, 1, 2.5, 0.6]}),
                         Call("4x6 -> 2x9 (sizes)", (4, 6), (2, 9),
                              lambda b, a=a, roi=roi: {"op_type": "Resize", "opset": 19, "input_shape": [b, 1, 4, 6],
                                                       "attributes": a, "roi": roi, "sizes": [b, 1, 2, 9]})]
                out.append((mode, rule, calls))
        return out

    def measured(self) -> list:
        """Whether this onnxruntime has a CPU ResizeGrad kernel: a session for the com.microsoft node, tried."""
        from dml_desc.conventions.onnx import OnnxResize
        from onnx_ops.build import build_resize_grad
        from onnx_ops.run import session
        node = OnnxResize([1, 1, 3, 5], {"mode": "linear"}, scales=[1, 1, 2, 2], op_type="ResizeGrad")
        try:
            session(build_resize_grad(node, np.float32))
        except Exception as e:      # noqa: BLE001 - onnxruntime's own refusal is what this reports
            return [f"com.microsoft::ResizeGrad on CPUExecutionProvider: the session fails: "
                    f"{str(e).splitlines()[0][:200]}"]
        return ["com.microsoft::ResizeGrad on CPUExecutionProvider: a session was created (a CPU kernel exists)"]

    def forward(self, description, x):
        from dml_desc.conventions.onnx import OnnxResize
        from onnx_ops.build import build_resize
        from onnx_ops.run import run_model
        model = build_resize(OnnxResize.from_json(_without_none(description)), np.float32, semantics=self.semantics)
        return run_model(model, {"X": x.astype(np.float32)})[0]

    def gradient(self, description, dy):
        from conformance.backends.builtin import OnnxruntimeBackend
        backend = OnnxruntimeBackend(semantics=self.semantics)
        return backend.run_canonical(self.gradient_map(description), dy, "f32")[0]

    def gradient_map(self, description):
        return conventions.load("onnx", _without_none(description), semantics=self.semantics)[0]


class Torch(Runtime):
    """torch autograd through F.interpolate (float32)."""
    name, module, convention = "torch", "torch", "torch"
    MODES: dict[str, dict[str, Any]] = {
        "nearest": {"mode": "nearest"}, "nearest-exact": {"mode": "nearest-exact"},
        "bilinear": {"mode": "bilinear"}, "bicubic": {"mode": "bicubic"}, "area": {"mode": "area"},
        "bilinear antialias": {"mode": "bilinear", "antialias": True},
        "bicubic antialias": {"mode": "bicubic", "antialias": True},
        "lanczos": {"mode": "lanczos", "antialias": True}}
    FACTORS = [((3, 5), (2.5, 0.6)), ((3, 4), (1.3, 2.2)), ((3, 4), (1.3, 1.2))]   # same-length axes: 1.3 on 3
    FACTORS_1D = [((5,), (0.6,)), ((3,), (1.3,)), ((3,), (2.2,))]     # 2.2 on 3: out == 2 * in

    def cells(self) -> list:
        out = []
        for mode, kw in self.MODES.items():
            out.append((mode, "size", _sized(lambda b, i, o, kw=kw: {"input_shape": [b, 1, *i], "size": list(o),
                                                                      **kw})))
            out.append((mode, "scale_factor", [self._factor_call(kw, i, f) for i, f in self.FACTORS]))
            if mode in ("nearest", "nearest-exact", "bilinear", "area"):       # 1-D: F.interpolate's other kernels
                kw1 = dict(kw, mode="linear") if mode == "bilinear" else kw
                out.append((mode, "scale_factor, 1-D", [self._factor_call(kw1, i, f) for i, f in self.FACTORS_1D]))
            if mode in ("bilinear", "bicubic", "bilinear antialias", "bicubic antialias"):
                out.append((mode, "align_corners", _sized(lambda b, i, o, kw=kw: {
                    "input_shape": [b, 1, *i], "size": list(o), "align_corners": True, **kw})))
        return out

    @staticmethod
    def _factor_call(kw, i, f):
        o = tuple(int(np.floor(n * s)) for n, s in zip(i, f))        # torch's floor(in * scale_factor)
        return Call(f"{_dims(i)} -> {_dims(o)} (scale_factor {', '.join(map(str, f))})", i, o,
                    lambda b: {"input_shape": [b, 1, *i], "scale_factor": list(f), **kw})

    def forward(self, description, x):
        import torch
        from dml_desc.conventions.torch import TorchInterpolate
        kw = TorchInterpolate.from_json(description).kwargs()
        with torch.no_grad():
            return torch.nn.functional.interpolate(torch.from_numpy(x.astype(np.float32)), **kw).numpy()

    def gradient(self, description, dy):
        from conformance.backends.builtin import TorchBackend
        return TorchBackend().run(description, dy, "f32")

    def gradient_map(self, description):
        from dml_desc.conventions import torch as t
        return t.to_canonical(t.TorchInterpolate.from_json(description))

    def forward_map(self, description):
        from dml_desc.conventions import torch as t
        return t.forward_map(t.TorchInterpolate.from_json(description))


class Onednn(Runtime):
    """oneDNN Graph Interpolate / InterpolateBackward (the `onednn` extra), every job in one child process."""
    name, module, convention = "onednn", "onednn", "onednn"
    TIES = [((28,), (2,)), ((26,), (7,))]        # exact nearest ties, 1-D (docs/semantics.md)

    def missing(self) -> Optional[str]:
        from dml_desc.runtimes import onednn
        return onednn.missing_reason()

    def version(self) -> str:
        return self._version or "unknown"

    _version = None

    def cells(self) -> list:
        out = []
        for mode in ("nearest", "linear"):
            for fmt in ("NCX", "NXC"):
                calls = [Call(f"{_dims(i)} -> {_dims(o)}", i, o, _onednn_call(mode, fmt, i, o))
                         for i, o in SIZES + self.TIES]
                out.append((mode, f"half_pixel, {fmt}", calls))
        return out

    def forward_description(self, call: Call, batch: int):
        return call.make(batch, False)

    def layout_of(self, description) -> str:
        return conventions.onednn.attrs_of(description["graph"][0]).get("data_format", "NXC")

    def run(self, pairs: list) -> list:
        """Each data_format's jobs in a child process of their own: with C = 1, NCX and NXC tensors have the same
        memory, and oneDNN's primitive cache then hands an NXC problem the kernel an earlier NCX one created
        (simple:any for jit:avx512_core), so a shared process would make the kernel depend on the order."""
        results = [None] * (2 * len(pairs))
        for fmt in ("NCX", "NXC"):
            mine = [k for k, p in enumerate(pairs) if self.layout_of(p[2]) == fmt]
            done = self._jobs([pairs[k] for k in mine]) if mine else []
            for n, k in enumerate(mine):
                results[2 * k: 2 * k + 2] = done[2 * n: 2 * n + 2]
        self.kernels = [r.get("kernel") if isinstance(r, dict) else None for r in results[1::2]]
        return [(_out(f), _out(g)) for f, g in zip(results[0::2], results[1::2])]

    def _jobs(self, pairs: list) -> list:
        """[forward result, backward result, ...] of the pairs, in one child process."""
        from dml_desc.runtimes import onednn
        jobs = []
        for dfwd, x, dgrad, dy in pairs:
            jobs.append({"kind": "graph", "op": dfwd["graph"][0], "inputs": {0: x.astype(np.float32)},
                         "primitive": ("resampling",), "blame": ("mode", "forward")})
            jobs.append(onednn.interpolate_job(dgrad["graph"][0], dy, "graph"))
        results = onednn.run_jobs(jobs)
        self._version = next((r["version"] for r in results if isinstance(r, dict)), self._version)
        return results


def _out(result):
    if isinstance(result, Exception):
        raise result
    return result["out"]


def _onednn_call(mode: str, fmt: str, i, o):
    """The oneDNN description at one (in, out) pair: a function of the batch (and the direction)."""
    return lambda b, backward=True: _onednn_doc(mode, fmt, b, i, o, backward)


def _onednn_doc(mode: str, fmt: str, batch: int, i, o, backward: bool) -> dict:
    from dml_desc.conventions.onednn import graph_document, logical_tensor
    src = [batch, 1, *i] if fmt == "NCX" else [batch, *i, 1]
    dst = [batch, 1, *o] if fmt == "NCX" else [batch, *o, 1]
    attrs = {"mode": {"type": "string", "value": mode}, "sizes": {"type": "s64[]", "value": list(o)},
             "coordinate_transformation_mode": {"type": "string", "value": "half_pixel"},
             "data_format": {"type": "string", "value": fmt}}
    ins = [logical_tensor(0, src, "f32")] + ([logical_tensor(1, dst, "f32")] if backward else [])
    outs = [logical_tensor(2 if backward else 1, src if backward else dst, "f32")]
    return graph_document({"id": 0, "name": "RESAMPLING_0", "kind": "InterpolateBackward" if backward else
                           "Interpolate", "attrs": attrs, "inputs": ins, "outputs": outs})


class Tensorflow(Runtime):
    """TF's v1 resize ops, tf.image.resize and ScaleAndTranslate, with their registered gradients (NHWC)."""
    name, module, convention, layout = "tensorflow", "tensorflow", "tf", "NXC"
    V1_RULES = {"align_corners": (True, False), "half_pixel_centers": (False, True), "asymmetric": (False, False)}
    V2 = ("area", "bilinear", "bicubic", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")
    KERNELS = ("lanczos3", "keyscubic", "triangle", "box")

    def cells(self) -> list:
        out = []
        for method in ("bilinear", "nearest", "bicubic"):
            for rule, (ac, hp) in self.V1_RULES.items():
                out.append((method, rule, _sized(lambda b, i, o, m=method, ac=ac, hp=hp: {
                    "input_shape": [b, *i, 1], "size": list(o), "method": m, "align_corners": ac,
                    "half_pixel_centers": hp})))
        for method in self.V2:
            aa = method != "area"           # area has no antialias variant
            out.append((method, "image.resize" + " antialias" * aa, _sized(lambda b, i, o, m=method, aa=aa: {
                "op": "image.resize", "input_shape": [b, *i, 1], "size": list(o), "method": m, "antialias": aa,
                "preserve_aspect_ratio": False})))
        for kernel in self.KERNELS:
            out.append((kernel, "ScaleAndTranslate", _sized(lambda b, i, o, k=kernel: {
                "op": "ScaleAndTranslate", "input_shape": [b, *i, 1], "size": list(o),
                "scale": [o[0] / i[0] * 1.1, o[1] / i[1] * 0.9], "translation": [0.4, -0.6], "kernel_type": k,
                "antialias": True})))
        return out

    def forward(self, description, x):
        from conformance.backends.tensorflow import TensorflowBackend
        return TensorflowBackend().forward(description, x.astype(np.float32))

    def gradient(self, description, dy):
        import tensorflow as tf
        from conformance.backends.tensorflow import forward_fn
        x = tf.zeros(description["input_shape"], tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward_fn(tf, description)(x)
        return tape.gradient(y, x, output_gradients=tf.constant(dy, tf.float32)).numpy()


class Jax(Runtime):
    """jax.vjp of jax.image.resize and scale_and_translate (float32)."""
    name, module, convention, layout = "jax", "jax", "jax", "NX"
    METHODS = ("nearest", "linear", "cubic", "lanczos3", "lanczos5")    # one call where compiling (~0.3 s) dominates

    def cells(self) -> list:
        out = []
        for method in self.METHODS:
            for rule, aa in (("resize", False), ("resize antialias", True)):
                if method == "nearest" and aa:
                    continue            # JAX ignores antialias for nearest
                out.append((method, rule, _sized(lambda b, i, o, m=method, aa=aa: {
                    "shape_in": [b, *i], "shape": [b, *o], "method": m, "antialias": aa}, SIZES[:2 - aa])))
            if method == "nearest":
                continue                # JAX: "not currently supported for scale_and_translate"
            out.append((method, "scale_and_translate", _sized(lambda b, i, o, m=method: {
                "shape_in": [b, *i], "shape": [b, *o], "method": m, "antialias": True, "spatial_dims": [1, 2],
                "scale": [o[0] / i[0] * 1.1, o[1] / i[1] * 0.9], "translation": [0.4, -0.6]}, SIZES[:1])))
        return out

    def run(self, pairs: list) -> list:
        """Each call's forward and vjp as one XLA program, compiled without optimisation passes (the probes are tiny;
        compiling is most of the time), the same arithmetic as conformance.backends.jax."""
        import jax
        from conformance.backends.jax import forward_fn
        out = []
        for dfwd, x, dgrad, dy in pairs:
            zeros = np.zeros(dgrad["shape_in"], np.float32)

            def both(x, dy, dfwd=dfwd, dgrad=dgrad, zeros=zeros):
                return forward_fn(dfwd)(x), jax.vjp(forward_fn(dgrad), zeros)[1](dy)[0]
            compiled = jax.jit(both).lower(x, dy).compile()
            out.append(tuple(np.asarray(a) for a in compiled(x, dy)))
        return out


RUNTIME_CLASSES = {"onnxruntime": Onnxruntime, "torch": Torch, "onednn": Onednn, "tensorflow": Tensorflow,
                   "jax": Jax}


def _without_none(description: dict) -> dict:
    return {k: v for k, v in description.items() if v is not None}


# ---- probing ------------------------------------------------------------------------------------------------

def _pack(basis: np.ndarray, sp: tuple, layout: str) -> np.ndarray:
    """Rows of `basis` (B x prod(sp)) as a batch of arrays in `layout`."""
    a = basis.reshape((len(basis),) + tuple(sp))
    return {"NCX": a[:, None], "NXC": a[..., None], "NX": a}[layout].astype(np.float32)


def _unpack(a) -> np.ndarray:
    a = np.asarray(a, np.float64)
    return a.reshape(len(a), -1)


def probe_runtime(runtime: Runtime) -> list:
    """The runtime's cells, probed."""
    plan, pairs = [], []
    for mode, rule, calls in runtime.cells():
        for call in calls:
            n_in, n_out = int(np.prod(call.in_sp)), int(np.prod(call.out_sp))
            dfwd, dgrad = runtime.forward_description(call, n_in), call.make(n_out)
            layout = runtime.layout_of(dgrad)
            x = _pack(np.eye(n_in), call.in_sp, layout)
            dy = _pack(np.eye(n_out), call.out_sp, layout)
            plan.append((mode, rule, call, dfwd, dgrad, x, dy))
            pairs.append((dfwd, x, dgrad, dy))
    results = _run_each(runtime, pairs)
    cells: dict[tuple[str, str], Cell] = {}
    for k, ((mode, rule, call, dfwd, dgrad, x, dy), result) in enumerate(zip(plan, results)):
        cell = cells.setdefault((mode, rule), Cell(runtime.name, mode, rule))
        cell.calls.append(call.label)
        _judge(runtime, cell, call, dfwd, dgrad, x, dy, result, k)
    for cell in cells.values():
        cell.finding = _finding(cell)
    return list(cells.values())


def _run_each(runtime: Runtime, pairs: list) -> list:
    """runtime.run over every pair; a runtime that refuses one call gives that call's exception."""
    try:
        return runtime.run(pairs)
    except Exception:               # noqa: BLE001 - some call was refused: run them one by one to say which
        out = []
        for pair in pairs:
            try:
                out.append(runtime.run([pair])[0])
            except Exception as e:  # noqa: BLE001 - a runtime's refusal is the cell's verdict, with its message
                out.append(e)
        return out


def _judge(runtime, cell: Cell, call: Call, dfwd, dgrad, x, dy, result, k: int) -> None:
    """Fold one call's result into its cell."""
    if isinstance(result, Exception):
        cell.status, cell.detail = "refused", f"{type(result).__name__}: {str(result).splitlines()[0][:200]}"
        return
    y, dx = result
    j = _unpack(y)                                      # row b: the response to unit input b (J^T's row b)
    if isinstance(dx, Exception):
        cell.status = "no gradient"
        cell.detail = f"{type(dx).__name__}: {str(dx).splitlines()[0][:160]}"
    else:
        g = _unpack(dx)                                 # row b: the gradient of unit dY b (J's row b)
        err = float(np.abs(g - j.T).max())
        cell.transpose_err = max(cell.transpose_err, err)
        if err > TRANSPOSE_TOL:
            cell.status = "not transpose"
            cell.departing.append(call.label)
        want = _unpack(resize_grad(dy.astype(np.float64), runtime.gradient_map(dgrad)))
        gerr = float(np.abs(g - want).max())
        if gerr > DESCRIPTION_TOL and isinstance(runtime, Onednn):     # the jit backward's own map
            gerr = _onednn_kernel_err(dgrad, dy, g, runtime.kernels[k])
            cell.gradient_by = f"dml_desc.conventions.onednn.backward_kernel_map(res, {runtime.kernels[k]!r})"
        cell.gradient_err = max(cell.gradient_err, gerr)
    fwant = _unpack(resize(x.astype(np.float64), runtime.forward_map(dfwd)))
    cell.forward_err = max(cell.forward_err, float(np.abs(j - fwant).max()))


def _onednn_kernel_err(dgrad, dy, g, kernel) -> float:
    from dml_desc.conventions.onednn import backward_kernel_map, to_canonical
    if not kernel:
        return float("inf")
    res = backward_kernel_map(to_canonical(dgrad), kernel)
    return float(np.abs(g - _unpack(resize_grad(dy.astype(np.float64), res))).max())


def _finding(cell: Cell) -> str:
    """The documented finding a departing cell matches, '' for an exact reproduced cell, else 'UNEXPECTED: ...'."""
    if cell.status == "refused" or (cell.status == "transpose" and cell.reproduced):
        return ""
    known = next((f.text for f in KNOWN_FINDINGS if f.matches(cell.runtime, cell.mode, cell.rule)), None)
    if known and cell.reproduced:       # a documented departure, and the description still says what runs
        return known
    what = [f"gradient {cell.status} (max |G - J^T| {cell.transpose_err:.2g})"] if cell.status != "transpose" else []
    if cell.gradient_err > DESCRIPTION_TOL:
        what.append(f"the description's gradient is {cell.gradient_err:.2g} off")
    if cell.forward_err > DESCRIPTION_TOL:
        what.append(f"the description's forward is {cell.forward_err:.2g} off")
    return "UNEXPECTED: " + "; ".join(what)


@dataclass
class Matrix:
    """A run: the cells, the runtimes' versions (None: not installed, with the reason) and when."""
    cells: list
    versions: dict
    missing: dict
    date: str
    seconds: float
    measured: dict = field(default_factory=dict)
    joined: list = field(default_factory=list)       # runtimes taken from another environment's run (--include)

    @property
    def ok(self) -> bool:
        """No UNEXPECTED cell."""
        return all(c.ok for c in self.cells)

    @classmethod
    def from_json(cls, obj: dict) -> "Matrix":
        """A run written by --json."""
        cells = [Cell(**{k: v for k, v in c.items() if k not in ("reproduced", "ok")}) for c in obj["cells"]]
        return cls(cells, obj["versions"], obj["not_installed"], obj["date"], 0.0, obj.get("measured", {}))

    def including(self, other: "Matrix") -> "Matrix":
        """This run, plus the runtimes `other` probed that this one did not (another environment's run)."""
        theirs = [n for n in RUNTIMES if n in other.versions and n not in self.versions]
        cells = self.cells + [c for c in other.cells if c.runtime in theirs]
        versions = {n: (self.versions.get(n) or f"{other.versions[n]} (run {other.date})") for n in RUNTIMES
                    if n in self.versions or n in theirs}
        versions["numpy"] = self.versions.get("numpy")
        missing = {n: why for n, why in self.missing.items() if n not in theirs}
        measured = dict(self.measured, **{n: other.measured.get(n, []) for n in theirs})
        order = {n: k for k, n in enumerate(RUNTIMES)}
        cells.sort(key=lambda c: order[c.runtime])
        joined = Matrix(cells, versions, missing, self.date, self.seconds, measured)
        joined.joined = theirs
        return joined

    def as_json(self) -> dict:
        """The run as JSON."""
        return {"date": self.date, "versions": self.versions, "not_installed": self.missing, "measured": self.measured,
                "cells": [c.as_json() for c in self.cells], "notes": GLOBAL_NOTES,
                "findings": [f.__dict__ for f in KNOWN_FINDINGS]}


def run_matrix(names=RUNTIMES) -> Matrix:
    """Probe every named runtime that is installed."""
    start = time.time()
    cells, versions, missing, measured = [], {}, {}, {}
    for name in names:
        runtime = RUNTIME_CLASSES[name]()
        reason = runtime.missing()
        if reason:
            missing[name] = reason
            continue
        cells += probe_runtime(runtime)
        versions[name] = runtime.version()
        measured[name] = runtime.measured()
    versions["numpy"] = np.__version__
    return Matrix(cells, versions, missing, datetime.date.today().isoformat(), time.time() - start, measured)


# ---- rendering ----------------------------------------------------------------------------------------------

def verdict(cell: Cell) -> str:
    """'exact transpose', 'NOT the transpose (max 0.31)', 'no gradient', 'refused: ...'."""
    if cell.status == "transpose":
        return "exact transpose"
    if cell.status == "not transpose":
        return f"NOT the transpose (G - J^T up to {cell.transpose_err:.2g} on {', '.join(cell.departing)})"
    return cell.status if cell.status == "no gradient" else f"refused: {cell.detail}"


def described_by(cell: Cell) -> str:
    """Which description reproduces the runtime (the gradient's and the forward's maps)."""
    if cell.status == "refused":
        return "-"
    marks = []
    if cell.status != "no gradient":
        by = f" by {cell.gradient_by}" if cell.gradient_by else ""
        marks.append(f"gradient {'yes' if cell.gradient_err <= DESCRIPTION_TOL else 'NO'}{by} "
                     f"({cell.gradient_err:.1e})")
    marks.append(f"forward {'yes' if cell.forward_err <= DESCRIPTION_TOL else 'NO'} ({cell.forward_err:.1e})")
    return ", ".join(marks)


def markdown(m: Matrix, command: str = "dml-desc matrix --markdown docs/cross-runtime.md") -> str:
    """The run as the markdown page docs/cross-runtime.md."""
    joined = (f"; {', '.join(m.joined)} from `dml-desc matrix --json RUN.json` in another environment, joined "
              "with --include RUN.json") if m.joined else ""
    lines = ["# Cross-runtime matrix: is each runtime's gradient its forward's transpose?", "",
             f"Last run {m.date} (`{command}`, {m.seconds:.0f} s{joined}). Versions: " +
             ", ".join(f"{k} {v}" for k, v in m.versions.items()) + ".", ""]
    if m.missing:
        lines += ["Not installed in that run: " + "; ".join(f"{k} ({v})" for k, v in m.missing.items()) + ".", ""]
    lines += [__doc__.split("\n\n", 1)[1].strip(), "", f"Tolerances: |G - J^T| <= {TRANSPOSE_TOL:g}, description "
              f"<= {DESCRIPTION_TOL:g}. Calls per cell: up- and downsampling with odd lengths (3x5 -> 7x3, "
              "4x6 -> 2x9), plus scale_factor calls that keep a length for torch and exact nearest ties for oneDNN.",
              "", "## Findings", ""]
    departing = [c for c in m.cells if c.finding]
    for text in dict.fromkeys(c.finding for c in departing):
        where = ", ".join(f"{c.runtime} {c.mode} / {c.rule}" for c in departing if c.finding == text)
        lines.append(f"- **{where}**: {text}")
    if not departing:
        lines.append("None: every gradient probed is the exact transpose of its own forward.")
    for name in RUNTIMES:
        mine = [c for c in m.cells if c.runtime == name]
        lines += ["", f"## {name}", ""]
        if not mine:
            lines.append(f"Not installed: {m.missing.get(name, 'not run')}.")
            continue
        lines += [GLOBAL_NOTES[name]] + ["", *(f"Measured: {line}" for line in m.measured.get(name, []))]
        lines += ["", "| mode | coordinate rule | gradient vs its forward | the description reproduces |",
                  "|---|---|---|---|"]
        lines += [f"| {c.mode} | {c.rule} | {verdict(c)} | {described_by(c)} |" for c in mine]
    return "\n".join(lines) + "\n"


def text_table(m: Matrix) -> str:
    """One line per cell, for the terminal."""
    rows = [f"{c.runtime:11s} {c.mode:18s} {c.rule:24s} {verdict(c)}" +
            (f"  [{c.finding[:90]}]" if c.finding else "") for c in m.cells]
    rows += [f"{name:11s} not installed: {why}" for name, why in m.missing.items()]
    bad = sum(not c.ok for c in m.cells)
    rows.append(f"{len(m.cells)} cells, {sum(c.status == 'transpose' for c in m.cells)} exact transposes, "
                f"{sum(bool(c.finding) and c.ok for c in m.cells)} documented findings, {bad} unexpected "
                f"in {m.seconds:.1f}s")
    return "\n".join(rows)


def html_section(m: Matrix) -> str:
    """The matrix as an HTML section (for conformance --html --matrix)."""
    import html
    e = html.escape
    parts = ["<h2>Cross-runtime matrix: gradient vs its own forward</h2>",
             "<p class=versions>" + e(", ".join(f"{k} {v}" for k, v in m.versions.items())) + "</p>"]
    if m.missing:
        parts.append("<p>Not installed: " + e("; ".join(f"{k} ({v})" for k, v in m.missing.items())) + "</p>")
    parts.append("<table><tr><th>runtime</th><th>mode</th><th>rule</th><th>gradient vs its forward</th>"
                 "<th>reproduced by</th><th>finding</th></tr>")
    for c in m.cells:
        cls = "bad" if not c.ok else "ok" if c.status == "transpose" and not c.finding else "skip" \
            if c.status == "refused" else "unsup"
        parts.append(f"<tr><td>{e(c.runtime)}</td><td>{e(c.mode)}</td><td>{e(c.rule)}</td>"
                     f"<td class='{cls}'>{e(verdict(c))}</td><td>{e(described_by(c))}</td><td>{e(c.finding)}</td></tr>")
    return "".join(parts) + "</table>"


def _read_run(path: str) -> Matrix:
    """--include RUN.json: a run this command wrote with --json."""
    from dml_desc.conventions import read_json
    from dml_desc.errors import DescError
    obj = read_json(path)
    try:
        return Matrix.from_json(cast(dict, obj))     # any other JSON: a TypeError, refused below
    except (KeyError, TypeError) as e:
        raise DescError("--include", path, f"is not a run written by `dml-desc matrix --json` ({e})") from None


# ---- the command --------------------------------------------------------------------------------------------

def add_command(sub) -> None:
    """Register `matrix` on the `dml-desc` subcommand parser."""
    import argparse
    p = sub.add_parser("matrix", help="for each installed runtime x mode x coordinate rule: is its gradient the "
                       "transpose of its own forward, and which description reproduces it",
                       description=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runtime", action="append", choices=RUNTIMES, help="only these runtimes (repeatable)")
    p.add_argument("--markdown", dest="markdown_path", metavar="FILE", help="write the run as markdown "
                   "(docs/cross-runtime.md keeps the last one)")
    p.add_argument("--json", dest="json_path", metavar="FILE", help="write every cell as JSON")
    p.add_argument("--html", dest="html_path", metavar="FILE", help="write the matrix as a self-contained HTML page")
    p.add_argument("--include", dest="include_path", metavar="RUN.json", help="add the runtimes another "
                   "environment's run (its --json) probed and this one lacks (the docs page joins two environments)")
    p.set_defaults(func=cmd_matrix)


def cmd_matrix(args) -> int:
    """Run the matrix; exit 1 when a cell departs in a way no finding documents."""
    from .output import check_writable, write_report
    from .report import CSS
    for flag, path in (("--markdown", args.markdown_path), ("--json", args.json_path), ("--html", args.html_path)):
        check_writable(flag, path)
    other = _read_run(args.include_path) if args.include_path else None
    m = run_matrix(tuple(args.runtime or RUNTIMES))
    print(text_table(m))
    if other is not None:
        m = m.including(other)
    if args.markdown_path:
        write_report(args.markdown_path, markdown(m), field="--markdown")
    if args.json_path:
        write_report(args.json_path, json.dumps(m.as_json(), indent=1), field="--json")
    if args.html_path:
        write_report(args.html_path, "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>dml-desc matrix"
               f"</title><style>{CSS}</style></head><body>{html_section(m)}</body></html>\n", field="--html")
    return 0 if m.ok else 1
