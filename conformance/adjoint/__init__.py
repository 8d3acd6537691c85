"""Randomized adjoint oracle: gradients that are exactly the transpose of the executing runtime's forward.

A configuration is drawn from the whole ONNX Resize attribute space (opsets 10-24, ranks 1-6, every mode,
nearest_mode and coordinate_transformation_mode, antialias, cubic coefficients, exclude_outside, shuffled
and negative axes, keep_aspect_ratio_policy, roi incl. flipped, scales and sizes, up and down, three dtypes).
The oracle runs onnxruntime's own `Resize` on basis inputs: its responses are the columns of J, in the
runtime's own arithmetic (minus the response to a zero input, which carries extrapolation_value); then
dX = J^T dY. It judges three gradients of the ResizeGrad node onnxruntime's gradient builder writes
(inputs dY, X, roi, scales; sizes never passed; every forward attribute copied):

- "static": `onnx_ops.lower` with every shape known;
- "dynamic": `onnx_ops.lower` with every dim symbolic (onnx_ops.forms.dynamic);
- "reference": the NumPy reference (conformance.reference) of the canonical map the ONNX reader gives.

A failure is shrunk (fewest axes, smallest sizes, simplest attributes) and can be written as a description
file (`description(case)`) that `dml-desc run` and `dml-desc convert` read.

`adjoint_cases(n, seed)` yields plain cases (name, description, res, dtype, dy, expected, oracle) for a
suite runner; `run(n, seed)` judges them here (`python -m conformance.adjoint N SEED`). Deterministic for a seed.

The package, by job: `draw` (configurations), `oracles` (each runtime's forward transposed, the cases),
`paths` (the gradients judged, the judge), `shrink` (shrinking, the randomized run), `section` (the
conformance suite's checks). Every public name is importable from here.
"""
from .draw import (CONFIG_DTYPES, CTMS, MAX_IN, MAX_OUT, NEAREST, SUITE_DTYPE_OF, TORCH_MODES, Config, draw,
                   draw_onednn, draw_torch)
from .oracles import (AdjointCase, adjoint_cases, canonical, first_n, forward_matrix, forward_model, make_case,
                      onednn_cases, onednn_matrix, onednn_version, torch_autograd, torch_cases, torch_matrix)
from .paths import ADJOINT_TOL, GRADIENTS, PATHS, error, grad_model, gradient, judge, lowered_gradient, \
    reference_gradient
from .shrink import description, run, shrink
from .section import (ACCEPTED_REFUSALS, BACKEND_OF, DEFAULT_N, DEFAULT_SEED, accepted_refusal, adjoint_checks,
                      backend_adjoint_checks, drawn, may_match)

__all__ = ["CONFIG_DTYPES", "CTMS", "MAX_IN", "MAX_OUT", "NEAREST", "SUITE_DTYPE_OF", "TORCH_MODES", "Config", "draw",
           "draw_onednn", "draw_torch", "AdjointCase", "adjoint_cases", "canonical", "first_n", "forward_matrix",
           "forward_model", "make_case", "onednn_cases", "onednn_matrix", "onednn_version", "torch_autograd",
           "torch_cases", "torch_matrix", "ADJOINT_TOL", "GRADIENTS", "PATHS", "error", "grad_model", "gradient",
           "judge", "lowered_gradient", "reference_gradient", "description", "run", "shrink", "ACCEPTED_REFUSALS",
           "BACKEND_OF", "DEFAULT_N", "DEFAULT_SEED", "accepted_refusal", "adjoint_checks", "backend_adjoint_checks",
           "drawn", "may_match"]
