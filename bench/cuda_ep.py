"""The lowered ResizeGrad on onnxruntime's CUDA execution provider (onnxruntime-gpu): the benchmark's shapes, static
and with symbolic dims, against the NumPy reference and torch's autograd on the same GPU.

Run: python bench/cuda_ep.py [--set all|issue11|issue19|issue34|current] [-k TEXT] [--rounds R]
For each case of bench/resize_grad_bench.py's set, two models run on CUDAExecutionProvider with their inputs and
outputs on the GPU (IOBinding): the lowered model (static) and the case's ResizeGrad with N and the spatial dims
symbolic, lowered (dynamic). Each runs under two provider settings: onnxruntime's defaults, and use_tf32=0 (its
MatMul and Conv otherwise round their inputs to TF32 on Ampere and newer). One row per model and setting:
  error     the largest difference from the NumPy reference (float64 sums) over dY's largest value
  repeat    whether a second run gives the same bits
  cpu       the nodes onnxruntime placed on its CPU provider in a profiled run (Memcpy nodes counted apart)
  time      the best of R rounds, beside torch's backward on the GPU (float32) and one read of dY plus one write of
            dX at torch's device-to-device copy bandwidth (limit)
Exit status 1 if a gradient differs by more than TOLERANCE (use_tf32=0) or a second run differs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from conformance.reference import resize_grad
from onnx_ops import build_resize_grad, lower
from onnx_ops.run import onnxruntime
from resize_grad_bench import INSTALLED, SETS, _form, _torch_call, best_times, build
from symbolic import make_symbolic

PROVIDER = "CUDAExecutionProvider"       # --provider CPUExecutionProvider tries the script without a GPU
SETTINGS = {"default": {}, "use_tf32=0": {"use_tf32": "0"}}
DEVICE = "cuda"
TOLERANCE = {"float32": 1e-5, "float16": 2e-3}      # of dY's scale, with use_tf32=0


def cuda_session(model, options: dict, profile: bool = False):
    """A session on CUDA only (refused, not run on the CPU, where the provider does not start)."""
    ort = onnxruntime()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if profile:
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "cuda_ep")
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=[(PROVIDER, options)] if options
                                else [PROVIDER])
    if sess.get_providers()[0] != PROVIDER:
        raise SystemExit(f"cuda_ep: {PROVIDER} did not start (onnxruntime {ort.__version__}: "
                         f"{sess.get_providers()}); see docs/cross-runtime.md for the CUDA libraries it needs")
    return sess


def bound_call(sess, feeds: dict):
    """(call, fetch): one run with inputs and outputs on the GPU, and dX copied to the host."""
    ort = onnxruntime()
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, DEVICE, 0))
    for out in sess.get_outputs():
        binding.bind_output(out.name, DEVICE)
    return (lambda: sess.run_with_iobinding(binding)), (lambda: binding.copy_outputs_to_cpu()[0])


def cpu_nodes(model, options: dict, feeds: dict) -> tuple:
    """(node count, Memcpy count, sorted op types) of the nodes a profiled run placed on the CPU provider."""
    sess = cuda_session(model, options, profile=True)
    call, _ = bound_call(sess, feeds)
    call()
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    on_cpu = {e["name"]: e["args"]["op_name"] for e in events
              if e.get("cat") == "Node" and e.get("args", {}).get("provider") == "CPUExecutionProvider"}
    memcpy = {e["name"] for e in events if e.get("cat") == "Node" and e["args"].get("op_name", "").startswith("Memcpy")}
    return len(on_cpu), len(memcpy), sorted(set(on_cpu.values()))


def dynamic_model(case):
    """The case's ResizeGrad at its opset with N and the spatial dims symbolic, lowered (the export's path)."""
    model = build_resize_grad(case.onnx_spec(), np.dtype(case.dtype))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = case.opset
    dynamic, report = lower(make_symbolic(model), semantics=INSTALLED)
    return dynamic, _form(report[0])


def device_bandwidth(mb: int = 256) -> float:
    """torch's device-to-device copy in bytes/s (read + write)."""
    import torch
    src = torch.ones(mb * 2 ** 18, device=DEVICE)
    dst = torch.empty_like(src)
    t = best_times({"copy": lambda: (dst.copy_(src), DEVICE == "cpu" or torch.cuda.synchronize())}, 5, 5)["copy"]
    return 2 * src.numel() * 4 / t


def check_case(case, rounds: int, bandwidth: float) -> list:
    """The rows of one case: each model (static, dynamic) under each provider setting."""
    res, _, static, report = build(case)
    dt = np.dtype(case.dtype)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(dt)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, dt)}
    want = resize_grad(dy.astype(np.float64), res)
    scale = float(np.abs(dy).max())
    models = {"static": (static, _form(report[0])), "dynamic": dynamic_model(case)}
    torch_call = _torch_call(case, dy, 1 if DEVICE == "cuda" else 2, device=DEVICE)
    rows = []
    for kind, (model, form) in models.items():
        for setting, options in SETTINGS.items():
            call, fetch = bound_call(cuda_session(model, options), feeds)
            call()
            first = fetch()
            call()
            times = best_times({"lowered": call, "torch": torch_call}, rounds)
            error = float(np.abs(first.astype(np.float64) - want).max()) / scale
            n_cpu, n_memcpy, ops = cpu_nodes(model, options, feeds)
            rows.append({"case": case.name, "model": kind, "setting": setting, "form": form, "error": error,
                         "repeat": bool(np.array_equal(first, fetch(), equal_nan=True)), "cpu nodes": n_cpu,
                         "memcpy": n_memcpy, "cpu ops": ops, "lowered ms": times["lowered"] * 1e3,
                         "torch ms": times["torch"] * 1e3,
                         "limit ms": (dy.nbytes + first.nbytes) / bandwidth * 1e3,
                         "ok": error <= TOLERANCE[case.dtype] or setting == "default"})
    return rows


def antialias_probe(provider: str):
    """onnxruntime's antialiased Resize forward (the resize form's one node) on `provider` against its own CPU
    provider: ranks 3-5, every set of resized spatial axes, linear and cubic, (N, C, 1/scale) = (1, 1, 2), (2, 3, 2),
    (2, 3, 3). One line per (rank, resized axes, mode), yielded as measured: the largest difference and the first
    configuration that differs. Each line runs in a child process: onnxruntime-gpu 1.31.1 aborted the process on a
    5-D Resize (std::terminate), and the lines after it still run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from itertools import combinations
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=spawn)
    for rank in (3, 4, 5):
        for axes in (a for k in range(1, rank - 1) for a in combinations(range(2, rank), k)):
            for mode in ("linear", "cubic"):
                try:
                    worst, first = pool.submit(_probe_line, provider, rank, axes, mode).result()
                except BrokenProcessPool:
                    worst, first = float("nan"), "onnxruntime aborted the process"
                    pool = ProcessPoolExecutor(1, mp_context=spawn)
                yield (f"antialias Resize rank {rank} axes {axes} {mode:6}: {provider} - CPU max {worst:.1e}"
                       + (f" (first: {first})" if first else ""))
    pool.shutdown()


def _probe_line(provider: str, rank: int, axes: tuple, mode: str) -> tuple:
    """(largest difference, first configuration that differs or None) of one antialias_probe line."""
    from onnx import TensorProto, helper
    ort = onnxruntime()
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4
    options = SETTINGS["use_tf32=0"] if provider == "CUDAExecutionProvider" else {}
    worst, first, rng = 0.0, None, np.random.default_rng(0)
    for n, c, f in ((1, 1, 2), (2, 3, 2), (2, 3, 3)):
        shape = [n, c] + [d * f for d in [5, 6, 8][-(rank - 2):]]
        graph = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, antialias=1)], "aa",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [helper.make_tensor("s", TensorProto.FLOAT, [rank],
                                                      [1.0 / f if a in axes else 1.0 for a in range(rank)])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9).SerializeToString()
        x = {"x": rng.standard_normal(shape).astype(np.float32)}
        try:
            want = ort.InferenceSession(model, quiet, providers=["CPUExecutionProvider"]).run(None, x)[0]
        except Exception:                    # onnxruntime's own refusal (cubic on 3-D and 5-D)
            return float("nan"), "onnxruntime refuses it"
        got = ort.InferenceSession(model, quiet, providers=[(provider, options)]).run(None, x)[0]
        err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
        first = first or (f"N={n} C={c} /{f}" if err > 1e-5 else None)
        worst = max(worst, err)
    return worst, first


def format_row(r: dict) -> str:
    ops = ",".join(r["cpu ops"]) or "-"
    return (f"{r['case'][:38]:38} {r['model']:7} {r['setting']:10} err {r['error']:8.1e} "
            f"{'same' if r['repeat'] else 'DIFFERS':7} cpu {r['cpu nodes']:3} ({ops[:40]}) memcpy {r['memcpy']:2} "
            f"{r['lowered ms']:7.3f} ms torch {r['torch ms']:7.3f} ms x{r['lowered ms'] / r['torch ms']:5.2f} "
            f"limit x{r['lowered ms'] / r['limit ms']:5.1f}  {r['form'][:50]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--set", default="all", choices=sorted(SETS))
    p.add_argument("-k", dest="pattern", default="")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", dest="json_path")
    p.add_argument("--provider", default=PROVIDER, help=argparse.SUPPRESS)
    p.add_argument("--probe", action="store_true", help="first compare onnxruntime's antialiased Resize forward on "
                   "CUDA with its CPU provider (antialias_probe)")
    args = p.parse_args(argv)
    import torch
    ort = onnxruntime()
    if args.provider == "CPUExecutionProvider":            # a dry run of the script itself, without a GPU
        globals().update(PROVIDER=args.provider, SETTINGS={"default": {}}, DEVICE="cpu")
    elif not torch.cuda.is_available() or PROVIDER not in ort.get_available_providers():
        print(f"cuda_ep: needs a GPU torch sees and onnxruntime-gpu (onnxruntime {ort.__version__} has "
              f"{ort.get_available_providers()})")
        return 2
    bandwidth = device_bandwidth()
    where = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU"
    print(f"onnxruntime {ort.__version__} {PROVIDER}, torch {torch.__version__} on {where}; "
          f"torch device copy {bandwidth / 1e9:.0f} GB/s; ONNX semantics {INSTALLED}")
    if args.probe:
        for line in antialias_probe(PROVIDER):
            print(line, flush=True)
    rows = []
    for case in SETS[args.set]:
        if args.pattern in case.name:
            for row in check_case(case, args.rounds, bandwidth):
                print(format_row(row), flush=True)
                rows.append(row)
    bad = [r for r in rows if not (r["ok"] and r["repeat"])]
    print(f"{len(rows) - len(bad)} of {len(rows)} rows exact (use_tf32=0: within {TOLERANCE}) and repeatable")
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
