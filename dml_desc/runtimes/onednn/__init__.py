"""The real oneDNN (libdnnl.so.3, oneDNN 3.2 from the `onednn` extra) through ctypes, contained in a child process.

Two C APIs are bound, every function with its argtypes and restype:
- the Graph API (dnnl_graph_*): a oneDNN Graph JSON op is added with `add_op`, compiled and executed as is;
- the primitive API: resampling forward and backward and deconvolution backward-data primitives, which report
  the kernel they picked (`impl_info_str`) and, unlike the Graph API's ConvTransposeBackwardData, take dilations.

oneDNN can abort the process (an uncaught dnnl::error), so every call runs in a child Python process: a batch
of jobs goes in, one result per job comes back, and an abort or a oneDNN error status becomes a DescError with
oneDNN's status name and the op attribute at fault. The parent never opens the library.

The modules, by job: `library` (finding and opening libdnnl), `bindings` (enums, structs, the signatures of the
functions called, the engine/stream context), `memory` (descriptors over NumPy arrays), `primitives` and
`graph` (the runners), `child` (the child process), `isolation` (the parent's side), `jobs` (jobs from the
library's descriptions). This module re-exports their public names.
"""
from .isolation import OnednnError, in_process, run_jobs, run_one
from .jobs import (accepts_job, axis_forward_job, axis_matrix, deconv_job, describe, interpolate_backward,
                   interpolate_job)
from .library import (DISTRIBUTION, EXTRA, LIB_ENV, LIB_NAME, find_library, missing_reason, open_library,
                      require_library, version_of)

__all__ = ["DISTRIBUTION", "EXTRA", "LIB_ENV", "LIB_NAME", "OnednnError", "accepts_job", "axis_forward_job",
           "axis_matrix", "deconv_job", "describe", "find_library", "in_process", "interpolate_backward",
           "interpolate_job", "missing_reason", "open_library", "require_library", "run_jobs", "run_one",
           "version_of"]
