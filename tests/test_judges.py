"""benchdnn's judging rule and fill, as the suite applies them."""
import numpy as np
import pytest

from conformance.judges import benchdnn, benchdnn_fill, benchdnn_threshold, within


def test_thresholds_follow_benchdnn():
    assert benchdnn_threshold("nearest", "f32") == 0
    assert benchdnn_threshold("linear", "f32") == pytest.approx(7 * 2 ** -23)
    assert benchdnn_threshold("linear", "f16") == pytest.approx(7 * 2 ** -10)
    assert benchdnn_threshold("linear", "bf16") == pytest.approx(7 * 2 ** -7)


def test_per_element_rule():
    judge = benchdnn("linear", "f32")
    want = np.array([1.0, 1e-6, 0.0])
    assert judge(want * (1 + 5e-7), want)[0]
    assert not judge(want * (1 + 2e-6), want)[0]
    assert judge(np.array([1.0, 1e-6 + 1e-8, 1e-8]), want)[0]        # tiny values: absolute FLT_EPSILON
    assert not benchdnn("nearest", "f32")(np.array([1.0 + 2 ** -20]), np.array([1.0]))[0]


def test_expected_is_rounded_to_the_output_type():
    judge = benchdnn("nearest", "bf16")
    exact = np.array([1.0 + 2 ** -10])                      # not a bfloat16 value
    assert judge(np.array([1.0]), exact)[0]


def test_fill_is_small_exact_values():
    v = benchdnn_fill((4, 5), "f32")
    assert v.shape == (4, 5) and set(np.unique(v / 1.25)) <= set(range(17))
    assert np.all(benchdnn_fill((3,), "bf16") * 16 == np.round(benchdnn_fill((3,), "bf16") * 16))


def test_within():
    assert within(0.1)(np.array([1.05]), np.array([1.0]))[0]
    ok, abs_err, _, why = within(0.01)(np.array([1.05]), np.array([1.0]))
    assert not ok and abs_err == pytest.approx(0.05) and "tolerance" in why
