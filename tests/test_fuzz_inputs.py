"""Arbitrary JSON into every loader: a result or a DescError naming a field, never another exception."""
import copy

from hypothesis import HealthCheck, given, settings, strategies as st

from dml_desc import DescError, conventions
from dml_desc.conventions import deconv
from tests.conftest import DOC_EXAMPLE

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=6))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=5)),
                    max_leaves=20)
SEEDS = {
    "dml": DOC_EXAMPLE,
    "onnx": {"op_type": "Resize", "opset": 19, "input_shape": [1, 1, 4, 4], "attributes": {"mode": "linear"},
             "scales": [1, 1, 2, 2]},
    "torch": {"input_shape": [1, 2, 4, 4], "mode": "bilinear", "size": [8, 8]},
    "tf": {"input_shape": [1, 4, 4, 2], "size": [8, 8], "method": "bilinear"},
    "onednn": {"graph": [{"kind": "InterpolateBackward", "attrs": {"mode": {"value": "linear"},
                                                                 "sizes": {"value": [8, 8]}},
                          "inputs": [{"shape": [1, 4, 4, 2]}, {"shape": [1, 8, 8, 2]}], "outputs": []}]},
}


def mutate(obj, path, value):
    obj = copy.deepcopy(obj)
    target = obj
    for key in path[:-1]:
        target = target[key] if isinstance(target, dict) else target[int(key) % len(target)]
    if isinstance(target, dict):
        target[path[-1]] = value
    return obj


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list) and obj and isinstance(obj[0], (dict, list)):
        yield from paths(obj[0], prefix + (0,))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SEEDS)), st.data(), JSON)
def test_mutated_inputs_give_a_result_or_a_desc_error(fmt, data, value):
    seed = SEEDS[fmt]
    candidates = [p for p in paths(seed) if p]
    path = data.draw(st.sampled_from(candidates))
    obj = mutate(seed, path, value)
    try:
        conventions.load(fmt, obj)
    except DescError as e:
        assert e.field is not None and e.rule


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SEEDS)), JSON)
def test_arbitrary_documents(fmt, obj):
    try:
        conventions.load(fmt, obj)
    except DescError:
        pass


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_arbitrary_deconv_documents(obj):
    doc = {"graph": [{"kind": "ConvTransposeBackwardData", "attrs": obj if isinstance(obj, dict) else {},
                      "inputs": [{"shape": [1, 4, 5, 5]}, {"shape": [4, 2, 3, 3]}]}]}
    try:
        deconv.to_spec(doc)
    except DescError:
        pass
