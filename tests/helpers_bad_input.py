"""Builders for the bad-input tests (test_bad_input*.py, test_file_safety.py): a valid description or model with
some fields changed, and the CLI run in this process."""
import copy

from tests.conftest import CONV_DML, CONV_ONNX, DOC_EXAMPLE

BIG = 10 ** 400


def dml_with(**changes):
    d = copy.deepcopy(DOC_EXAMPLE)
    for path, value in changes.items():
        target = d
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[k]
        if value is KeyError:
            target.pop(keys[-1])
        else:
            target[keys[-1]] = value
    return d


def onnx_with(attributes=None, **kw):
    base = {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {"mode": "linear"},
            "scales": [1, 1, 2, 2]}
    if attributes is not None:
        base["attributes"] = attributes
    base.update(kw)
    return base


ONEDNN = {"graph": [{"kind": "InterpolateBackward", "attrs": {"mode": {"value": "linear"},
                                                             "sizes": {"value": [8, 8]},
                                                             "data_format": {"value": "NCX"}},
                     "inputs": [{"shape": [1, 2, 4, 4]}, {"shape": [1, 2, 8, 8]}], "outputs": []}]}


def onednn_with(attrs=None, inputs=None, kind=None):
    d = copy.deepcopy(ONEDNN)
    op = d["graph"][0]
    if attrs:
        for k, v in attrs.items():
            if v is None:
                op["attrs"].pop(k)
            else:
                op["attrs"][k] = {"value": v}
    if inputs:
        op["inputs"] = inputs
    if kind:
        op["kind"] = kind
    return d


def torch_with(**kw):
    base = {"input_shape": [1, 2, 4, 4], "mode": "bilinear", "size": [8, 8]}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not KeyError}


def tf_with(**kw):
    base = {"input_shape": [1, 4, 4, 2], "size": [8, 8], "method": "bilinear"}
    base.update(kw)
    return base


def conv_dml_with(**changes):
    d = copy.deepcopy(CONV_DML)
    for path, value in changes.items():
        keys, target = path.split("__"), d
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return d


def conv_onnx_with(attributes=None, **kw):
    d = copy.deepcopy(CONV_ONNX)
    d["attributes"].update(attributes or {})
    d.update(kw)
    return d


def deconv_onednn_with(attrs=None, inputs=None):
    import json
    import os
    d = json.load(open(os.path.join(os.path.dirname(__file__), "..", "conformance", "data", "onednn-graph-json",
                                    "deconv_bwd_d.json")))
    op = d["graph"][0]
    for k, v in (attrs or {}).items():
        op["attrs"][k] = {"type": "s64[]", "value": v}
    for i, changes in (inputs or {}).items():
        op["inputs"][i].update(changes)
    return d


def resize_grad_model(**spec):
    from tests.fuzz.atheris_loaders import resize_grad_spec_model
    base = {"attrs": {"mode": "linear"}, "x": [1, 1, 4, 4], "dy": [1, 1, 8, 8], "scales": [1, 1, 2, 2],
            "outputs": ["dX"]}
    base.update(spec)
    return resize_grad_spec_model(base)


def cli(*argv):
    """`dml-desc ARGV` in this process (the same main() the console script runs)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    from types import SimpleNamespace
    from dml_desc.cli import main
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
