"""Coverage-guided fuzzing (atheris / libFuzzer) of every loader, converter, builder and the lowering.

Each input is one byte choosing a target, then the target's text: JSON for the descriptor loaders,
a JSON description of a ResizeGrad node for the lowering. Any exception other than the project's own
DescError is a finding; it is written to FINDINGS (type and innermost project frame, once each) and the
run goes on. Run it (not part of CI; the corpus is not kept in git):

    pip install atheris
    python tests/fuzz/atheris_loaders.py --seed-corpus /tmp/fuzz-corpus
    nice -n 19 python tests/fuzz/atheris_loaders.py /tmp/fuzz-corpus -fork=1 -ignore_crashes=1 \
        -ignore_ooms=1 -ignore_timeouts=1 -rss_limit_mb=3072 -timeout=20 -max_total_time=1800
"""
import json
import os
import sys
import traceback
from dml_desc.conventions.onnx import installed_semantics

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

FINDINGS = os.environ.get("FUZZ_FINDINGS", "/tmp/dml_desc_fuzz_findings.txt")
RESAMPLE = ("dml", "onednn", "onnx", "torch", "tf")
TARGETS = RESAMPLE + ("deconv-onednn", "deconv-dml", "deconv-onnx", "lower", "onnx-bytes")


def _seeds() -> dict:
    from tests.conftest import CONV_DML, CONV_ONNX, DOC_EXAMPLE
    onednn = {"graph": [{"kind": "InterpolateBackward", "attrs": {"mode": {"value": "linear"},
                                                                 "sizes": {"value": [8, 8]},
                                                                 "data_format": {"value": "NCX"}},
                         "inputs": [{"shape": [1, 2, 4, 4], "dtype": "f32"}, {"shape": [1, 2, 8, 8]}],
                         "outputs": []}]}
    deconv_doc = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "conformance", "data",
                                             "onednn-graph-json", "deconv_bwd_d.json")))
    return {
        "dml": [DOC_EXAMPLE], "onednn": [onednn],
        "onnx": [{"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {
            "mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize"},
            "roi": [0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7], "scales": [1, 1, 2, 1.5]},
            {"op_type": "ResizeGrad", "opset": 18, "input_shape": [2, 3, 5], "attributes": {
                "mode": "linear", "axes": [2], "antialias": 1}, "sizes": [3]}],
        "torch": [{"input_shape": [1, 2, 4, 4], "mode": "bilinear", "scale_factor": [1.5, 2.0],
                   "align_corners": True}],
        "tf": [{"input_shape": [1, 4, 4, 2], "size": [8, 3], "method": "bicubic", "half_pixel_centers": True}],
        "deconv-onednn": [deconv_doc], "deconv-dml": [CONV_DML], "deconv-onnx": [CONV_ONNX],
        "lower": [{"attrs": {"mode": "linear"}, "x": [1, 1, 4, 4], "dy": [1, 1, 8, 8], "elem": 1, "dy_elem": 1,
                   "scales": [1, 1, 2, 2], "opset": 19, "outputs": ["dX"]}],
    }


def resize_grad_spec_model(spec: dict):
    """A one-node ResizeGrad model from a JSON description (types, shapes, attributes, opset, outputs)."""
    from onnx import helper, numpy_helper
    import numpy as np
    from dml_desc.errors import require
    require(isinstance(spec, dict), "spec", spec, "must be an object")
    attrs = spec.get("attrs", {})
    require(isinstance(attrs, dict), "attrs", attrs, "must be an object")
    attrs = {k: v for k, v in attrs.items() if v != []}      # onnx.helper cannot type an empty list
    inits, inputs = [], ["dY", "X"]
    for name in ("roi", "scales"):
        value = spec.get(name)
        if value is None:
            inputs.append("")
            continue
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=spec.get(name + "_dtype", "float32")), name))
        inputs.append(name)
    inputs += spec.get("extra_inputs", [])
    node = helper.make_node("ResizeGrad", inputs, spec.get("outputs", ["dX"]), domain="com.microsoft",
                            name="rg", **attrs)
    outs = [helper.make_tensor_value_info(o, spec.get("elem", 1), spec.get("x")) for o in spec.get("graph_outputs",
                                                                                                    ["dX"])]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("dY", spec.get("dy_elem", 1), spec.get("dy")),
                                            helper.make_tensor_value_info("X", spec.get("elem", 1), spec.get("x"))],
                              outs, inits)
    opsets = [helper.make_opsetid("", spec.get("opset", 19)), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def run_one(target: str, payload: bytes) -> None:
    from dml_desc import DescError, conventions
    from dml_desc.conventions import deconv
    from dml_desc.errors import parse_json
    if target == "onnx-bytes":
        from onnx_ops.lower import lower
        from onnx_ops.lowering.validate import check_written, parse_model
        lowered, report = lower(parse_model(payload), semantics=INSTALLED)
        if report:
            check_written(lowered)
        return
    obj = parse_json(payload, "input")
    if target in RESAMPLE:
        res, backward = conventions.load(target, obj, semantics=INSTALLED)
        for fmt in RESAMPLE:
            try:
                conventions.dump(fmt, res, backward, semantics=INSTALLED)
            except DescError:
                pass
    elif target.startswith("deconv-"):
        fmt = target.split("-")[1]
        reading = deconv.read(fmt, obj)
        for dst in ("onednn", "dml", "onnx"):
            try:
                out = deconv.write(dst, reading).obj
            except DescError:
                continue
            deconv.read(dst, out)          # what we write, we read back
    else:
        from onnx_ops.lower import lower
        from onnx_ops.lowering.validate import check_written
        try:
            model = resize_grad_spec_model(obj)
        except DescError:
            raise
        except Exception:
            return                          # the harness could not build the model: not a finding
        lowered, _ = lower(model, semantics=INSTALLED)
        check_written(lowered)


def test_one(data: bytes) -> None:
    from dml_desc import DescError
    if not data:
        return
    target = TARGETS[data[0] % len(TARGETS)]
    try:
        run_one(target, data[1:])
    except DescError:
        pass
    except Exception as e:               # a finding: note it once, keep fuzzing
        _record(target, e, data)


def _record(target: str, e: Exception, data: bytes) -> None:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/work/main/" in f.filename
              and "/tests/fuzz/" not in f.filename]
    where = f"{frames[-1].filename.split('/work/main/')[-1]}:{frames[-1].lineno}" if frames else "?"
    key = f"{target} {type(e).__name__} {where}"
    seen = open(FINDINGS).read() if os.path.exists(FINDINGS) else ""
    if key not in seen:
        import hashlib
        saved = f"{FINDINGS}.{hashlib.sha1(data).hexdigest()[:12]}.bin"      # the whole input, to replay it
        with open(saved, "wb") as f:
            f.write(data)
        with open(FINDINGS, "a") as f:
            f.write(f"{key} :: {str(e)[:200]!r} :: input {data[:300]!r} :: saved {saved}\n")


def write_corpus(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    for target, docs in _seeds().items():
        for i, doc in enumerate(docs):
            with open(os.path.join(folder, f"seed-{target}-{i}"), "wb") as f:
                f.write(bytes([TARGETS.index(target)]) + json.dumps(doc).encode())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--seed-corpus"]:
        write_corpus(sys.argv[2])
        sys.exit(0)
    import atheris
    with atheris.instrument_imports():
        import dml_desc.conventions  # noqa: F401
        import dml_desc.conventions.deconv  # noqa: F401
        import onnx_ops.lower  # noqa: F401
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()
