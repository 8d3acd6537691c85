"""A conversion reported exact is exact: the target runtime, running the converted description, reproduces the
source runtime on random shapes (onnxruntime's Resize vs torch's F.interpolate), not only on the shapes the
converters' equality check looks at."""
import numpy as np
import pytest

from dml_desc import conventions
from dml_desc.conventions.onnx import installed_semantics
from dml_desc.conventions.common import exact
from dml_desc.errors import ConversionError
from tests.test_torch_calls import random_call

INSTALLED = installed_semantics()    # the ONNX semantics of the onnxruntime these tests run

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
torch = pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
F = torch.nn.functional


def ort_forward(node_json: dict, x: np.ndarray) -> np.ndarray:
    from dml_desc.conventions.onnx import OnnxResize
    from onnx_ops.build import build_resize
    model = build_resize(OnnxResize.from_json(node_json))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})[0]


def torch_forward(call: dict, x: np.ndarray) -> np.ndarray:
    kwargs = {k: v for k, v in call.items() if k != "input_shape"}
    return F.interpolate(torch.from_numpy(x), **kwargs).numpy()


def test_antialiased_bilinear_downsampling_converts_with_exclude_outside():
    call = {"input_shape": [1, 1, 16, 16], "mode": "bilinear", "scale_factor": [0.5, 0.5], "antialias": True}
    node, notes = conventions.convert("torch", "onnx", call, semantics=INSTALLED)
    assert node["attributes"]["exclude_outside"] == 1 and node["attributes"]["antialias"] == 1 and not notes
    x = np.random.default_rng(0).standard_normal(call["input_shape"]).astype(np.float32)
    np.testing.assert_allclose(ort_forward(node, x), torch_forward(call, x), atol=1e-6)   # was 0.22 apart


def test_onnx_antialiased_linear_is_not_torch_antialias():
    node = {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 16, 16],
            "attributes": {"mode": "linear", "antialias": 1}, "scales": [1.0, 1.0, 0.5, 0.5]}
    with pytest.raises(ConversionError) as e:
        conventions.convert("onnx", "torch", node, semantics=INSTALLED)
    assert e.value.field == "exclude_outside"


def test_exclude_outside_of_antialiased_linear_is_compared():
    # the hole: the parameter shortcut compared exclude_outside for cubic only, so these passed as equal
    res, _ = conventions.load("torch", {"input_shape": [1, 1, 8], "mode": "linear", "size": [3]})
    aa = res.with_(antialias=True, exclude_outside=True)
    with pytest.raises(ConversionError):
        exact(aa, aa.with_(exclude_outside=False), "test")


@pytest.mark.parametrize("seed", range(3))
def test_random_torch_calls_converted_to_onnx_run_alike(seed):
    """Exact conversions, and those accepted within --tolerance 1e-6 (most: torch's float32 in/out and ONNX's
    out/in round some coordinates differently), run alike in onnxruntime and torch."""
    rng = np.random.default_rng(100 + seed)
    converted = exact_ones = 0
    for _ in range(60):
        t = random_call(rng)
        call = t.to_json()
        x = rng.standard_normal(t.input_shape).astype(np.float32)
        try:
            y = torch_forward(call, x)
        except (ValueError, RuntimeError):
            continue
        if y.size == 0:             # mode='area' pools to an empty output (the project refuses it)
            continue
        try:
            node, notes = conventions.convert("torch", "onnx", call, opset=19, semantics=INSTALLED)
            exact_ones += 1
        except ConversionError as e:
            if t.mode in ("lanczos", "area"):       # filters ONNX Resize lacks: refused by mode
                assert e.field == "mode"
                continue
            assert "--tolerance" in e.rule and "max |dw|" in e.rule
            try:
                node, notes = conventions.convert("torch", "onnx", call, opset=19, tolerance=1e-6, semantics=INSTALLED)
            except ConversionError:
                continue
            assert "within --tolerance 1e-06" in notes[-1]
            notes = notes[:-1]
        if notes or (t.antialias and 1 in list(x.shape[2:]) + list(y.shape[2:])):
            continue           # torch's forward is not the map its gradient transposes (see the note)
        converted += 1
        np.testing.assert_allclose(ort_forward(node, x), y, atol=2e-5, rtol=2e-5, err_msg=str(call))
    assert converted >= 8 and exact_ones >= 3      # a coverage floor: most calls convert


@pytest.mark.parametrize("seed", range(2))
def test_random_antialiased_onnx_nodes_converted_to_torch_run_alike(seed):
    rng = np.random.default_rng(200 + seed)
    converted = 0
    for _ in range(40):
        shape = [1, 1] + [int(rng.integers(2, 12)) for _ in range(2)]
        mode = str(rng.choice(["linear", "cubic"]))
        attrs = {"mode": mode, "antialias": 1}
        if rng.random() < 0.5:
            attrs["exclude_outside"] = 1
        if mode == "cubic" and rng.random() < 0.7:
            attrs["cubic_coeff_a"] = -0.5
        sizes = [1, 1] + [int(rng.integers(2, 12)) for _ in range(2)]
        node = {"op_type": "Resize", "opset": 19, "input_shape": shape, "attributes": attrs, "sizes": sizes}
        try:
            call, _ = conventions.convert("onnx", "torch", node, semantics=INSTALLED)
        except ConversionError as e:
            assert "closest spelling" in e.rule or "max |dw|" in e.rule or e.field in ("exclude_outside",
                                                                                      "cubic_coeff_a")
            continue
        converted += 1
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(torch_forward(call, x), ort_forward(node, x), atol=2e-5, rtol=2e-5,
                                   err_msg=str(node))
    assert converted >= 3
