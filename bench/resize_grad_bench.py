"""ResizeGrad speed on the shapes real models use: the lowered graph on onnxruntime CPU vs torch vs NumPy.

Run: python bench/resize_grad_bench.py [--quick] [--threads N] [--rounds R] [--no-numpy] [--no-memory] [-k TEXT]
                                      [--set all|issue11|issue19|issue34|current] [--unet | --no-unet]
Prints one row per case of the matrix (issue 11), side by side in one run:
  lowered   the lowered ResizeGrad on onnxruntime CPU, and the form the lowering picked
  torch     torch's backward (F.interpolate under autograd, NCX, float32 even for the float16 case)
  numpy     the NumPy reference (conformance.reference.resize_grad)
  limit     one read of dY plus one write of dX, timed in the same rounds as the peers (torch sums as many
            bytes as dY holds and zeroes as many as dX: in the cache or out of it as the peers' runs are; the
            header prints torch's and onnxruntime's copy bandwidth out of the cache)
  mem       peak extra memory of the ORT session's first run: in a fresh child process, the rise of the
            peak resident set (VmHWM, reset before the run) over the resident set before the run. It
            counts dX and every intermediate the run allocates, not the inputs or the constants.
Optional peers (PEERS) add a column each where they are installed, e.g. the dynamic-shape path or oneDNN.
The peers run interleaved, round after round, so a slow spell of a shared machine hits them all;
each time is the best over all rounds, after a pause and an untimed run (settle: onnxruntime's threads spin
after a run, and took a core from torch's). The summary line covers the issue's matrix (CASES); FIELD cases
follow it in the table. Over issue 19's and 34's rows, one line per target of issue 34 says whether it is met or
which cases miss it (verdicts). The header names the CPU model. Last, one training step of a small U-Net, ORT training
against torch, with the lowered ResizeGrad nodes' share of it (bench/unet_step.py): in the full run, or --unet.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time
from dataclasses import dataclass, field

# The peers run interleaved in one process, each block of runs after a pause (settle): torch's and oneDNN's OpenMP
# threads spin for a while after each call (OMP_WAIT_POLICY=ACTIVE, the default) and onnxruntime's after each run,
# and took the cores from the next peer. An earlier version set OMP_WAIT_POLICY=PASSIVE instead: torch's threads then
# slept after every parallel region and its backward read up to 2x slow (linear 112 -> 41: 1.05 ms against 0.53 ms
# in a process of its own). A value the caller sets is used as is.

import numpy as np
import onnx

from conformance.reference import resize_grad
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.errors import TORCH_INSTALL
from onnx_ops import build_resize_grad, lower
from onnx_ops.calibrate import cpu_model
from onnx_ops.run import session

import unet_step
from peak_memory import peak_extra_memory
from symbolic import make_symbolic

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime this benchmark runs


@dataclass(frozen=True)
class Case:
    name: str
    torch_mode: str                  # F.interpolate mode
    shape: tuple                     # X
    scales: tuple = ()               # per spatial axis, or
    sizes: tuple = ()                # per spatial axis
    align_corners: bool = False
    opset: int = 19
    dtype: str = "float32"
    attrs: dict = field(default_factory=dict, hash=False)

    def onnx_spec(self) -> onnx_conv.OnnxResize:
        mode = {"nearest": "nearest", "bicubic": "cubic"}.get(self.torch_mode, "linear")
        attrs = {"mode": mode}
        if mode == "nearest":       # torch's legacy nearest: floor(o * in / out)
            attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        elif self.align_corners:
            attrs["coordinate_transformation_mode"] = "align_corners"
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75
        ones = [1.0, 1.0]
        if self.scales:
            return onnx_conv.OnnxResize(list(self.shape), attrs, scales=ones + list(self.scales),
                                        opset=self.opset, op_type="ResizeGrad")
        return onnx_conv.OnnxResize(list(self.shape), attrs, sizes=list(self.shape[:2]) + list(self.sizes),
                                    opset=self.opset, op_type="ResizeGrad")


X4, X5 = (8, 32, 128, 128), (2, 16, 32, 64, 64)
CASES = [
    Case("bilinear 2x, opset 19", "bilinear", X4, scales=(2.0, 2.0)),
    Case("bilinear 2x, opset 17", "bilinear", X4, scales=(2.0, 2.0), opset=17),
    Case("bilinear scales 1.7", "bilinear", X4, scales=(1.7, 1.7)),
    Case("bilinear 128->217", "bilinear", X4, sizes=(217, 217)),
    Case("bilinear 128->47", "bilinear", X4, sizes=(47, 47)),
    Case("align_corners 65->513", "bilinear", (2, 21, 65, 65), sizes=(513, 513), align_corners=True),
    Case("align_corners 128->256", "bilinear", X4, sizes=(256, 256), align_corners=True),
    Case("nearest 2x", "nearest", X4, scales=(2.0, 2.0)),
    Case("nearest 128->192", "nearest", X4, sizes=(192, 192)),
    Case("bicubic 2x", "bicubic", X4, scales=(2.0, 2.0)),
    Case("trilinear 2x", "trilinear", X5, scales=(2.0, 2.0, 2.0)),
    Case("bilinear 2x, float16", "bilinear", X4, scales=(2.0, 2.0), dtype="float16"),
]
FIELD = [   # printed after the matrix, outside its summary: torch's legacy export of nearest 2x (the pool form)
    Case("nearest 2x, opset 17 (extra)", "nearest", X4, scales=(2.0, 2.0), opset=17),
]
ISSUE19 = [  # issue 19's shapes, as torch exports them (constant scales): the dynamic column is the real export's path
    Case("i19 nearest 2x, opset 17", "nearest", (6, 40, 96, 96), scales=(2.0, 2.0), opset=17),
    Case("i19 nearest 2x, opset 20", "nearest", (6, 40, 96, 96), scales=(2.0, 2.0), opset=20),
    Case("i19 bicubic 2x, opset 17", "bicubic", (6, 40, 96, 96), scales=(2.0, 2.0), opset=17),
    Case("i19 trilinear 2x, opset 17", "trilinear", (2, 12, 20, 40, 40), scales=(2.0, 2.0, 2.0), opset=17),
    Case("i19 bilinear 2x, opset 17", "bilinear", (6, 40, 96, 96), scales=(2.0, 2.0), opset=17),
    Case("i19 bilinear 2x, opset 20", "bilinear", (6, 40, 96, 96), scales=(2.0, 2.0), opset=20),
    Case("i19 align_corners 2x, opset 17", "bilinear", (6, 40, 96, 96), scales=(2.0, 2.0), align_corners=True,
         opset=17),       # constant scales, as torch exports scale_factor=2 (the static map is the same as sizes')
    Case("i19 bilinear 4x, opset 17", "bilinear", (6, 16, 48, 48), scales=(4.0, 4.0), opset=17),
]
X34 = (4, 48, 112, 112)
ISSUE34 = [  # issue 34's kinds on another shape: the cases over torch in its table, and the general linear ones
    Case("i34 bilinear 112->41", "bilinear", X34, sizes=(41, 41)),
    Case("i34 bilinear 112->41, opset 17", "bilinear", X34, sizes=(41, 41), opset=17),
    Case("i34 nearest 112->168", "nearest", X34, sizes=(168, 168)),
    Case("i34 nearest 2x", "nearest", X34, scales=(2.0, 2.0)),
    Case("i34 nearest 2x, opset 17", "nearest", X34, scales=(2.0, 2.0), opset=17),
    Case("i34 bilinear 2x, float16", "bilinear", X34, scales=(2.0, 2.0), dtype="float16"),
    Case("i34 bilinear 2x, float16, opset 17", "bilinear", X34, scales=(2.0, 2.0), dtype="float16", opset=17),
    Case("i34 bilinear scales 1.7", "bilinear", X34, scales=(1.7, 1.7)),
    Case("i34 align_corners 2x", "bilinear", X34, scales=(2.0, 2.0), align_corners=True),
    Case("i34 bilinear 2x, opset 17", "bilinear", X34, scales=(2.0, 2.0), opset=17),
    Case("i34 bicubic 2x", "bicubic", X34, scales=(2.0, 2.0)),
    Case("i34 bilinear x0.5", "bilinear", X34, scales=(0.5, 0.5)),          # F.interpolate(scale_factor=0.5)
    Case("i34 nearest x0.5, opset 17", "nearest", X34, scales=(0.5, 0.5), opset=17),
    Case("i34 nearest x1.5, odd 113", "nearest", (4, 48, 113, 113), scales=(1.5, 1.5)),   # no tile divides 113
    Case("i34 nearest x1.25, odd 97", "nearest", (8, 32, 97, 97), scales=(1.25, 1.25)),   # dY padded to 5-row periods
]
QUICK = [
    Case("bilinear 2x 1x8x32^2", "bilinear", (1, 8, 32, 32), scales=(2.0, 2.0)),
    Case("bilinear 32->47 f16", "bilinear", (1, 8, 32, 32), sizes=(47, 47), dtype="float16", opset=17),
]

SETS = {"all": CASES + FIELD + ISSUE19 + ISSUE34, "issue11": CASES + FIELD, "issue19": ISSUE19, "issue34": ISSUE34,
        "current": ISSUE19 + ISSUE34}

# Optional peers: name -> factory(case, lowered_model, feeds, threads) returning a zero-argument callable
# (one gradient) or None where the peer does not apply or is not installed. Other modules add theirs here.
PEERS: dict = {}


DYNAMIC_FORMS: dict = {}              # case name -> the form the dynamic path took


def _dynamic_peer(case: Case, lowered, feeds, threads):
    """The same gradient lowered with N and the spatial dims symbolic, as real exports have them: a shape-generic
    form where the scales are constant integers (onnx_ops.lowering.generic_forms), else the in-graph taps
    (onnx_ops.forms.dynamic)."""
    model = build_resize_grad(case.onnx_spec(), np.dtype(case.dtype))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = case.opset
    dynamic, report = lower(make_symbolic(model), semantics=INSTALLED)
    DYNAMIC_FORMS[case.name] = _form(report[0])
    return _ort_call(dynamic, feeds, threads) if report[0].dynamic else None


PEERS["dynamic"] = _dynamic_peer      # issue 9: target dynamic <= 2x lowered (static)
ONEDNN_KERNELS: dict = {}             # (case, layout) -> the kernel oneDNN picked


def _onednn_peer(layout: str):
    """oneDNN 3.2's resampling backward primitive (the onednn extra) on NCHW or NHWC data; no column entry
    where the library is absent, the dtype is not float32, or oneDNN cannot express the case exactly."""
    def factory(case: Case, lowered, feeds, threads):
        from dml_desc.conventions import onednn as onednn_conv
        from dml_desc.errors import DescError
        from dml_desc.runtimes import onednn as runtime
        if runtime.missing_reason() or case.dtype != "float32":
            return None
        res, dy = onnx_conv.to_canonical(case.onnx_spec(), semantics=INSTALLED), feeds["dY"]
        if layout == "NHWC":
            perm = (0,) + tuple(range(2, dy.ndim)) + (1,)
            res, dy = res.with_(axes=tuple(res.axes[i] for i in perm)), np.transpose(dy, perm)
        try:
            doc, _ = onednn_conv.from_canonical(res, data_format="NCX" if layout == "NCHW" else "NXC")
            run, result = runtime.in_process(runtime.interpolate_job(doc["graph"][0], dy, "primitive"), threads)
        except DescError:
            return None
        ONEDNN_KERNELS[(case.name, layout)] = result["kernel"]
        return run
    return factory


PEERS["onednn NCHW"] = _onednn_peer("NCHW")     # issue 14: oneDNN's generic kernel (simple:any)
PEERS["onednn NHWC"] = _onednn_peer("NHWC")     # issue 14: oneDNN's jit:avx512_core kernel


CLOCK = time.perf_counter     # --cpu-time: time.thread_time (one thread: the work runs in the calling thread)


def settle(fn) -> None:
    """Let the previous peer's threads go idle, then run `fn` once untimed. onnxruntime's pool threads spin for a
    while after each run: timed straight after it, torch's second thread shared a core with them and torch read
    its one-thread time (nearest 112->168: 5.4 ms interleaved, 2.7 ms alone)."""
    time.sleep(SETTLE_S)
    fn()


SETTLE_S = 0.05


def best_times(fns: dict, rounds: int, per_round: int = 3) -> dict:
    """Best time of each callable, measured interleaved: every round runs each peer `per_round` times."""
    for fn in fns.values():
        fn()                                   # warm-up
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            settle(fn)
            for _ in range(per_round):
                t = CLOCK()
                fn()
                best[k] = min(best[k], CLOCK() - t)
    return best


def build(case: Case):
    """(canonical map, ResizeGrad model at the case's opset, lowered model, lowering report)."""
    r = case.onnx_spec()
    res = onnx_conv.to_canonical(r, semantics=INSTALLED)
    model = build_resize_grad(r, np.dtype(case.dtype))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = case.opset
    lowered, report = lower(model, semantics=INSTALLED)
    return res, model, lowered, report


def copy_bandwidth(threads: int, mb: int = 64) -> float:
    """torch's copy bandwidth in bytes/s (bytes read + bytes written), best of interleaved runs."""
    import torch
    torch.set_num_threads(threads)
    src = torch.ones(mb * 2 ** 18)
    dst = torch.empty_like(src)
    t = best_times({"copy": lambda: dst.copy_(src)}, 5, 5)["copy"]
    return 2 * src.numel() * 4 / t


def ort_copy_bandwidth(threads: int, mb: int = 64) -> float:
    """onnxruntime's copy bandwidth in bytes/s (read + write): one Mul by 1, its cheapest full pass."""
    from onnx import TensorProto, helper
    n = mb * 2 ** 18
    graph = helper.make_graph([helper.make_node("Mul", ["a", "one"], ["b"])], "copy",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [n])],
                              [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    t = best_times({"copy": _ort_call(model, {"a": np.ones(n, np.float32)}, threads)}, 5, 5)["copy"]
    return 2 * n * 4 / t


def limit_call(dy_bytes: int, dx_bytes: int, threads: int):
    """One read of dY's bytes and one write of dX's bytes (torch sums and zeroes float32 words of those sizes), or
    None without torch: the memory floor of any gradient of these sizes, timed as the peers are (a DRAM bandwidth
    overstates it where the tensors stay in the cache between runs)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    src, dst = torch.ones(dy_bytes // 4), torch.empty(dx_bytes // 4)
    return lambda: (src.sum(), dst.zero_())


def bench_case(case: Case, threads: int, rounds: int, with_numpy: bool, with_memory: bool):
    res, _, lowered, report = build(case)
    dt = np.dtype(case.dtype)
    dy = np.random.default_rng(0).standard_normal(res.out_shape).astype(dt)
    feeds = {"dY": dy, "X": np.zeros(res.in_shape, dt)}
    peers = {"lowered": _ort_call(lowered, feeds, threads)}
    torch_call = _torch_call(case, dy, threads)
    if torch_call is not None:
        peers["torch"] = torch_call
        peers["limit"] = limit_call(dy.nbytes, math.prod(res.in_shape) * dt.itemsize, threads)
    for name, factory in PEERS.items():
        fn = factory(case, lowered, feeds, threads)
        if fn is not None:
            peers[name] = fn
    times = best_times(peers, rounds)
    if with_numpy:
        times.update(best_times({"numpy": lambda: resize_grad(dy.astype(np.float32), res)}, 1, 1))
    for k in ("torch", "numpy", "limit"):
        times.setdefault(k, float("nan"))
    row = {"case": case.name, "elements": dy.size, "form": _form(report[0]), **times,
           "memory": peak_extra_memory(lowered, feeds, threads) if with_memory else float("nan")}
    row["ops"] = sorted({n.op_type for n in lowered.graph.node})
    row["dynamic form"] = DYNAMIC_FORMS.get(case.name, "–")
    return row


def _form(rewrite) -> str:
    return ", ".join(dict.fromkeys(rewrite.forms))


def _ort_call(model, feeds, threads):
    sess = session(model, threads=threads)
    return lambda: sess.run(None, feeds)


def _torch_call(case: Case, dy, threads, device: str = "cpu"):
    """One torch backward of the case (float32), or None without torch; on a GPU the call waits for it."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    x = torch.zeros(case.shape, requires_grad=True, device=device)
    kw = {"align_corners": case.align_corners} if case.torch_mode != "nearest" else {}
    if case.scales:
        kw["scale_factor"] = case.scales
    else:
        kw["size"] = case.sizes
    y = torch.nn.functional.interpolate(x, mode=case.torch_mode, **kw)
    g = torch.from_numpy(dy.astype(np.float32)).to(device)
    if device == "cpu":
        return lambda: torch.autograd.grad(y, x, g, retain_graph=True)
    return lambda: (torch.autograd.grad(y, x, g, retain_graph=True), torch.cuda.synchronize())


def _versions() -> str:
    import onnxruntime
    try:
        import torch
        tv = torch.__version__
    except ImportError:
        tv = "not installed"
    return f"onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}, torch {tv}"


COLUMNS = ["case", "form", "lowered", "torch", "numpy", "limit", "lowered/torch", "lowered/limit", "mem"]


def format_row(r: dict, extra: list) -> list:
    ms = lambda v: "–" if v is None or math.isnan(v) else f"{v * 1e3:.3g} ms"   # noqa: E731
    ratio = lambda a, b: ("–" if not r.get(b) or math.isnan(r.get(a, math.nan) / r[b])   # noqa: E731
                          else f"{r[a] / r[b]:.2f}")
    mem = "–" if math.isnan(r["memory"]) else f"{r['memory'] / 2 ** 20:.0f} MiB"
    cells = [r["case"], r["form"], ms(r["lowered"]), ms(r.get("torch")), ms(r.get("numpy")), ms(r["limit"]),
             ratio("lowered", "torch"), ratio("lowered", "limit"), mem]
    return cells + [ms(r.get(k)) for k in extra] + [ratio("dynamic", "lowered"), ratio("dynamic", "torch"),
                                                    r.get("dynamic form", "–")]


def summary(rows: list) -> str:
    vs_torch = [r["lowered"] / r["torch"] for r in rows if r.get("torch") and math.isfinite(r["torch"])]
    vs_limit = [r["lowered"] / r["limit"] for r in rows if r["limit"] == r["limit"]]
    parts = []
    if vs_torch:
        parts.append(f"geometric mean lowered/torch {math.exp(np.mean(np.log(vs_torch))):.2f}, "
                     f"worst {max(vs_torch):.2f}")
    if vs_limit:
        parts.append(f"best lowered/limit {min(vs_limit):.1f}")
    vs_static = [r["dynamic"] / r["lowered"] for r in rows if r.get("dynamic")]
    if vs_static:
        parts.append(f"dynamic/lowered geometric mean {math.exp(np.mean(np.log(vs_static))):.2f}, "
                     f"worst {max(vs_static):.2f}")
    return "; ".join(parts)


TARGETS = {"torch": 1.0, "geomean": 0.5, "dynamic": 1.15, "limit": 3.0}   # issue 34's


def verdicts(rows: list, constant_scales: set) -> list:
    """One line per target of issue 34 over `rows`: met, or the cases that miss it, with their ratios."""
    def misses(key, over, limit, names=None):
        bad = [f"{r['case']} {r[key] / r[over]:.2f}" for r in rows if r.get(key) and r.get(over)
               and math.isfinite(r[key] / r[over]) and r[key] / r[over] > limit
               and (names is None or r["case"] in names)]
        return "met" if not bad else "missed by " + ", ".join(bad)
    ratios = [r["lowered"] / r["torch"] for r in rows if r.get("torch") and math.isfinite(r["torch"])]
    ratios += [r["dynamic"] / r["torch"] for r in rows if r.get("dynamic") and r.get("torch")
               and math.isfinite(r["torch"])]
    geomean = math.exp(np.mean(np.log(ratios))) if ratios else math.nan
    best = min((r["lowered"] / r["limit"] for r in rows if r["limit"] == r["limit"]), default=math.nan)
    return [f"static <= {TARGETS['torch']} x torch: {misses('lowered', 'torch', TARGETS['torch'])}",
            f"dynamic <= {TARGETS['torch']} x torch: {misses('dynamic', 'torch', TARGETS['torch'])}",
            f"geometric mean of static and dynamic / torch {geomean:.2f} (target <= {TARGETS['geomean']})",
            f"dynamic <= {TARGETS['dynamic']} x static, constant scales: "
            + misses("dynamic", "lowered", TARGETS["dynamic"], constant_scales),
            f"best lowered/limit {best:.1f} (target <= {TARGETS['limit']})"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=8, help="interleaved rounds of 3 runs per peer")
    p.add_argument("--quick", action="store_true", help="two small cases (smoke test)")
    p.add_argument("--no-numpy", action="store_true")
    p.add_argument("--no-memory", action="store_true", help="skip the child-process memory measurement")
    p.add_argument("-k", default="", help="only cases whose name contains this text")
    p.add_argument("--set", choices=sorted(SETS), default="all",
                   help="a matrix: issue 11's (8x32x128^2), issue 19's (6x40x96^2), issue 34's (4x48x112^2), "
                        "current (19's and 34's: the targets of issue 34), or all")
    p.add_argument("--cpu-time", action="store_true",
                   help="one thread, CPU time of the calling thread: a proxy for comparing forms on a loaded machine")
    p.add_argument("--unet", action=argparse.BooleanOptionalAction, default=None,
                   help="time one U-Net training step, ORT training vs torch (default: only in the full run)")
    args = p.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.cpu_time else time.perf_counter
    if args.cpu_time:
        args.threads = 1
    print(f"machine: {cpu_model()} ({platform.machine()}), {os.cpu_count()} cores, "
          f"threads={args.threads}; {_versions()}; clock: {'thread CPU time' if args.cpu_time else 'wall'}")
    try:
        print(f"torch copy bandwidth: {copy_bandwidth(args.threads) / 1e9:.1f} GB/s (read + write); onnxruntime's "
              f"(a Mul by 1): {ort_copy_bandwidth(args.threads) / 1e9:.1f} GB/s")
    except ImportError:
        print(f"torch not installed: no torch, limit or lowered/torch columns, and no summary against torch "
              f"(install the CPU wheel: {TORCH_INSTALL})")
    extra = list(PEERS)
    tail = ["dynamic/lowered", "dynamic/torch", "dynamic form"]
    print("| " + " | ".join(COLUMNS + extra + tail) + " |")
    print("|" + "---|" * (len(COLUMNS) + len(extra) + len(tail)))
    rows = []
    for case in QUICK if args.quick else SETS[args.set]:
        if args.k not in case.name:
            continue
        rows.append(bench_case(case, args.threads, args.rounds, not args.no_numpy, not args.no_memory))
        print("| " + " | ".join(format_row(rows[-1], extra)) + " |", flush=True)
    compared = [r for r in rows if r["case"] not in {c.name for c in FIELD + ISSUE19 + ISSUE34}]
    print(summary(compared) or "no summary: nothing to compare")
    issue19 = [r for r in rows if r["case"] in {c.name for c in ISSUE19}]
    if issue19:
        print("issue 19 (6x40x96^2 unless said): " + (summary(issue19) or "nothing to compare"))
    issue34 = [r for r in rows if r["case"] in {c.name for c in ISSUE34}]
    if issue34:
        print("issue 34 (4x48x112^2): " + (summary(issue34) or "nothing to compare"))
    judged = issue19 + issue34
    if judged:
        print("issue 34's targets over the i19 and i34 rows:")
        for line in verdicts(judged, {c.name for c in ISSUE19 + ISSUE34 if c.scales}):
            print("  " + line)
    if DYNAMIC_FORMS:
        print("dynamic forms: " + "; ".join(f"{c}: {f}" for c, f in DYNAMIC_FORMS.items()))
    if ONEDNN_KERNELS:
        print("oneDNN kernels: " + "; ".join(f"{c} {lay}: {k}" for (c, lay), k in ONEDNN_KERNELS.items()))
    if args.unet or (args.unet is None and not args.quick and not args.k):
        rows.append(unet_row(args))
    return rows


def unet_row(args) -> dict:
    """Print and return the U-Net training step's row (bench/unet_step.py); a note where it cannot run."""
    reason = unet_step.missing_reason()
    if reason:
        print(f"U-Net training step: skipped, {reason}")
        return {"case": "U-Net", "skipped": reason}
    case = unet_step.UNetCase(2, 32, 32, 4) if args.quick else unet_step.UNetCase()
    row = unet_step.bench_unet(case, args.threads, args.rounds, best_times)
    print(unet_step.format_unet(row), flush=True)
    return row


if __name__ == "__main__":
    main()
