"""ctypes bindings of oneDNN 3.2's C API: the enum values, structs and signatures of the functions called, and
the engine/stream context every call goes through (a non-success status raises Failed)."""
from __future__ import annotations

import ctypes as C

# ---- enum values of oneDNN 3.2's headers (dnnl_types.h, dnnl_graph_types.h) ------------------------------
STATUS = {0: "dnnl_success", 1: "dnnl_out_of_memory", 2: "dnnl_invalid_arguments", 3: "dnnl_unimplemented",
          4: "dnnl_last_impl_reached", 5: "dnnl_runtime_error", 6: "dnnl_not_required", 7: "dnnl_invalid_graph",
          8: "dnnl_invalid_graph_op", 9: "dnnl_invalid_shape", 10: "dnnl_invalid_data_type"}
DATA_TYPES = {"f16": 1, "bf16": 2, "f32": 3}
OP_KINDS = {"ConvTransposeBackwardData": 17, "Interpolate": 31, "InterpolateBackward": 32}
ATTRS = {   # name -> (id, kind): the attributes of the ops above and their relatives
    "scales": (0x20, "f32[]"), "groups": (0x32, "s64"), "dilations": (0x41, "s64[]"), "dst_shape": (0x42, "s64[]"),
    "output_padding": (0x45, "s64[]"), "pads_begin": (0x46, "s64[]"), "pads_end": (0x47, "s64[]"),
    "sizes": (0x49, "s64[]"), "src_shape": (0x4A, "s64[]"), "strides": (0x4B, "s64[]"),
    "weights_shape": (0x4C, "s64[]"), "auto_pad": (0x81, "string"),
    "coordinate_transformation_mode": (0x82, "string"), "data_format": (0x83, "string"), "mode": (0x84, "string"),
    "weights_format": (0x87, "string"),
}
CPU, FPMATH_STRICT, POLICY_FUSION, LAYOUT_STRIDED, MAX_NDIMS = 1, 0, 1, 2, 12
FORWARD_TRAINING, RESAMPLING = 64, {"nearest": 196592, "linear": 196593}
DECONVOLUTION_DIRECT, QUERY_IMPL_INFO_STR = 10, 8
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_DIFF_SRC, ARG_DIFF_DST = 1, 17, 33, 129, 145
ISAS = {0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0xf: "avx2_vnni", 0x1f: "avx2_vnni_2", 0x27: "avx512_core",
        0x67: "avx512_core_vnni", 0xe7: "avx512_core_bf16", 0x1ef: "avx512_core_fp16", 0xfef: "avx512_core_amx",
        0x1fef: "avx512_core_amx_fp16"}

Dims = C.c_int64 * MAX_NDIMS
H = C.c_void_p
PH = C.POINTER(C.c_void_p)


class LogicalTensor(C.Structure):
    """dnnl_graph_logical_tensor_t (224 bytes)."""
    _fields_ = [("id", C.c_size_t), ("ndims", C.c_int), ("dims", Dims), ("data_type", C.c_int),
                ("property", C.c_int), ("layout_type", C.c_int), ("strides", Dims)]


class ExecArg(C.Structure):
    """dnnl_exec_arg_t: an argument index and its dnnl_memory_t (the primitive API)."""
    _fields_ = [("arg", C.c_int), ("memory", H)]


class Version(C.Structure):
    """dnnl_version_t, as dnnl_version() returns it."""
    _fields_ = [("major", C.c_int), ("minor", C.c_int), ("patch", C.c_int), ("hash", C.c_char_p),
                ("cpu_runtime", C.c_uint), ("gpu_runtime", C.c_uint)]


PLT = C.POINTER(LogicalTensor)
S = C.c_int   # dnnl_status_t
# The C functions called (a job's child process exits after its chunk of jobs, and the operating system frees
# what the library allocated, so no *_destroy function is called except dnnl_primitive_destroy).
SIGNATURES = {
    "dnnl_version": (C.POINTER(Version), []),
    "dnnl_get_effective_cpu_isa": (C.c_int, []),
    "dnnl_engine_create": (S, [PH, C.c_int, C.c_size_t]),
    "dnnl_stream_create": (S, [PH, H, C.c_uint]),
    "dnnl_stream_wait": (S, [H]),
    "dnnl_memory_desc_create_with_strides": (S, [PH, C.c_int, Dims, C.c_int, Dims]),
    "dnnl_memory_create": (S, [PH, H, H, H]),
    "dnnl_resampling_forward_primitive_desc_create": (S, [PH, H, C.c_int, C.c_int, C.POINTER(C.c_float), H, H, H]),
    "dnnl_resampling_backward_primitive_desc_create": (S, [PH, H, C.c_int, C.POINTER(C.c_float), H, H, H, H]),
    "dnnl_deconvolution_forward_primitive_desc_create": (S, [PH, H, C.c_int, C.c_int, H, H, H, H, Dims, Dims, Dims,
                                                             Dims, H]),
    "dnnl_deconvolution_backward_data_primitive_desc_create": (S, [PH, H, C.c_int, H, H, H, Dims, Dims, Dims, Dims,
                                                                   H, H]),
    "dnnl_primitive_desc_query": (S, [H, C.c_int, C.c_int, H]),
    "dnnl_primitive_create": (S, [PH, H]),
    "dnnl_primitive_execute": (S, [H, H, C.c_int, C.POINTER(ExecArg)]),
    "dnnl_primitive_destroy": (S, [H]),
    "dnnl_graph_op_create": (S, [PH, C.c_size_t, C.c_int, C.c_char_p]),
    "dnnl_graph_op_add_input": (S, [H, PLT]),
    "dnnl_graph_op_add_output": (S, [H, PLT]),
    "dnnl_graph_op_set_attr_f32": (S, [H, C.c_int, C.POINTER(C.c_float), C.c_size_t]),
    "dnnl_graph_op_set_attr_s64": (S, [H, C.c_int, C.POINTER(C.c_int64), C.c_size_t]),
    "dnnl_graph_op_set_attr_str": (S, [H, C.c_int, C.c_char_p, C.c_size_t]),
    "dnnl_graph_graph_create_with_fpmath_mode": (S, [PH, C.c_int, C.c_int]),
    "dnnl_graph_add_op": (S, [H, H]),
    "dnnl_graph_graph_finalize": (S, [H]),
    "dnnl_graph_graph_filter": (S, [H, C.c_int]),
    "dnnl_graph_graph_get_partition_num": (S, [H, C.POINTER(C.c_size_t)]),
    "dnnl_graph_graph_get_partitions": (S, [H, C.c_size_t, PH]),
    "dnnl_graph_partition_is_supported": (S, [H, C.POINTER(C.c_uint8)]),
    "dnnl_graph_partition_get_input_ports_num": (S, [H, C.POINTER(C.c_size_t)]),
    "dnnl_graph_partition_get_input_ports": (S, [H, C.c_size_t, PLT]),
    "dnnl_graph_partition_get_output_ports_num": (S, [H, C.POINTER(C.c_size_t)]),
    "dnnl_graph_partition_get_output_ports": (S, [H, C.c_size_t, PLT]),
    "dnnl_graph_compiled_partition_create": (S, [PH, H]),
    "dnnl_graph_partition_compile": (S, [H, H, C.c_size_t, C.POINTER(PLT), C.c_size_t, C.POINTER(PLT), H]),
    "dnnl_graph_compiled_partition_query_logical_tensor": (S, [H, C.c_size_t, PLT]),
    "dnnl_graph_tensor_create": (S, [PH, PLT, H, H]),
    "dnnl_graph_compiled_partition_execute": (S, [H, H, C.c_size_t, PH, C.c_size_t, PH]),
}


class Failed(Exception):
    """A oneDNN call returned a status other than dnnl_success; `call` and `status` name them."""

    def __init__(self, call: str, status: int):
        self.call, self.status = call, STATUS.get(status, f"status {status}")
        super().__init__(f"{call} returned {self.status}")


class Context:
    """An opened library with its CPU engine and stream; `call` runs a C function and checks its status."""

    def __init__(self, lib: C.CDLL) -> None:
        self.lib = lib
        self.engine, self.stream = H(), H()
        self.call("dnnl_engine_create", C.byref(self.engine), CPU, 0)
        self.call("dnnl_stream_create", C.byref(self.stream), self.engine, 1)
        isa = lib.dnnl_get_effective_cpu_isa()
        self.isa = ISAS.get(isa, hex(isa))          # the most capable ISA oneDNN may use here

    def call(self, name: str, *args: object) -> None:
        """lib.name(*args), or Failed with oneDNN's status name."""
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise Failed(name, status)
