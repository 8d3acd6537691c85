"""Every F.interpolate call torch accepts, exactly: random calls (every mode and option, 1-3 spatial axes, size or
scale_factor, recompute_scale_factor, align_corners, antialias) against torch's own autograd, and the classes those
calls found, pinned with numbers torch 2.13 printed (so the pins need no torch)."""
import numpy as np
import pytest

from conformance.reference import resize, resize_grad
from dml_desc.conventions.torch import TorchInterpolate, forward_map, to_canonical
from dml_desc.errors import DescError

MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
         2: ["nearest", "nearest-exact", "bilinear", "bicubic", "lanczos", "area"],
         3: ["nearest", "nearest-exact", "trilinear", "area"]}
SCALES = [0.5, 0.6, 0.75, 1.0, 1.3, 1.5, 2.0, 2.5, 3.0, 0.9, 1.1, 2.1, 2.2, 1.9, 1.2, 0.45, 0.34, 3.3, 4.0]


def random_call(rng) -> TorchInterpolate:
    """One random F.interpolate call on a small input (same-length axes and doubled axes are common)."""
    n = int(rng.integers(1, 4))
    mode = str(rng.choice(MODES[n]))
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 3))] + [int(rng.integers(1, 12)) for _ in range(n)]
    t = TorchInterpolate(shape, mode)
    if rng.random() < 0.4:
        t.size = [int(rng.integers(1, 15)) for _ in range(n)]
        t.size = t.size[0] if rng.random() < 0.2 else t.size
        t.recompute_scale_factor = [None, None, False, True][int(rng.integers(0, 4))]   # True: torch refuses
    else:
        t.scale_factor = [float(rng.choice(SCALES)) if rng.random() < 0.5
                          else round(float(rng.uniform(0.2, 4)), int(rng.integers(1, 4))) for _ in range(n)]
        t.scale_factor = t.scale_factor[0] if rng.random() < 0.2 else t.scale_factor
        t.recompute_scale_factor = [None, True, False][int(rng.integers(0, 3))]
    if mode in ("linear", "bilinear", "bicubic", "trilinear") and rng.random() < 0.5:
        t.align_corners = bool(rng.random() < 0.5)
    if mode in ("bilinear", "bicubic") and rng.random() < 0.5 or mode == "lanczos" and rng.random() < 0.9:
        t.antialias = True
    return t


@pytest.mark.parametrize("seed", range(8))
def test_random_calls_match_torch_autograd(seed):
    check_random_calls(seed, None, 2e-5)


@pytest.mark.parametrize("seed", range(3))
def test_random_float64_calls_match_torch_autograd(seed):
    """float64 calls: torch computes coordinates and weights in double (nearest in float): exact to 1e-10, where the
    float32 model was off by about 1e-6 relative for bilinear and bicubic."""
    check_random_calls(100 + seed, "float64", 1e-10)


def check_random_calls(seed, dtype, tol):
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch oracle is optional")
    tdt = torch.float64 if dtype == "float64" else torch.float32
    rng = np.random.default_rng(seed)
    for _ in range(250):
        t = random_call(rng)
        t.dtype = dtype
        x = torch.tensor(rng.standard_normal(t.input_shape), dtype=tdt, requires_grad=True)
        try:
            y = torch.nn.functional.interpolate(x, **t.kwargs())
        except (ValueError, RuntimeError, NotImplementedError):
            with pytest.raises(DescError):          # a call torch refuses is refused here too
                to_canonical(t)
            continue
        if y.numel() == 0:                          # mode='area' pools to an empty output; the project refuses it
            with pytest.raises(DescError, match="empty output"):
                to_canonical(t)
            continue
        res = to_canonical(t)
        dy = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=tdt)
        y.backward(dy)
        grad = resize_grad(dy.numpy().astype(np.float64), res)
        assert grad.shape == tuple(x.shape), t
        np.testing.assert_allclose(grad, x.grad.numpy(), rtol=tol, atol=tol, err_msg=str(t))
        ins, outs = t.input_shape[2:], list(y.shape[2:])
        if t.antialias and 1 in ins + outs:
            continue            # torch's antialiased forward with a length-1 axis is broken (its backward is not)
        fwd = resize(x.detach().numpy().astype(np.float64), forward_map(t))
        np.testing.assert_allclose(fwd, y.detach().numpy(), rtol=tol, atol=tol, err_msg=str(t))


def gradient(t: TorchInterpolate, dy) -> list:
    res = to_canonical(t)
    return resize_grad(np.asarray(dy, dtype=np.float64).reshape(res.out_shape), res).ravel().tolist()


def test_nearest_same_length_copies():
    # scale_factor 1.3 on length 3 gives length 3: nearest_idx copies (the 1/1.3 map would give [3, 3, 0])
    t = TorchInterpolate([1, 1, 3], "nearest", scale_factor=1.3)
    assert gradient(t, [1, 2, 3]) == [1, 2, 3]
    assert to_canonical(t).notes        # the 1-D forward kernel resamples: torch's forward and backward differ


def test_nearest_doubled_axis_reads_o_shift_1():
    # scale_factor 2.2 on length 3 gives 6 = 2 * 3: nearest_idx reads o >> 1, not floor(o / 2.2)
    t = TorchInterpolate([1, 1, 3], "nearest", scale_factor=2.2)
    assert gradient(t, [1, 2, 3, 4, 5, 6]) == [3, 7, 11]
    x = np.arange(3.0).reshape(1, 1, 3)
    assert resize(x, forward_map(t)).ravel().tolist() == [0, 0, 0, 1, 1, 2]     # 1-D forward: floor(o / 2.2)
    t2 = TorchInterpolate([1, 1, 1, 3], "nearest", scale_factor=[1.0, 2.2])
    assert resize(x.reshape(1, 1, 1, 3), forward_map(t2)).ravel().tolist() == [0, 0, 1, 1, 2, 2]  # 2-D: o >> 1


def test_antialias_same_length_still_filters():
    t = TorchInterpolate([1, 1, 1, 2], "bilinear", scale_factor=[1.0, 1.3], antialias=True)
    np.testing.assert_allclose(gradient(t, [1, 2]), [1.692307710647583, 1.307692289352417], rtol=1e-7)
    assert gradient(TorchInterpolate([1, 1, 2], "linear", scale_factor=1.3), [1, 2]) == [1, 2]   # linear copies


def test_bicubic_copies_only_when_every_axis_keeps_its_length():
    t = TorchInterpolate([1, 1, 3, 2], "bicubic", scale_factor=[0.9, 1.3])   # -> [2, 2]: axis 3 keeps length 2
    np.testing.assert_allclose(gradient(t, [1, 2, 3, 4]),
                               [1.2572805881500244, 1.0033950805664062, 4.341400146484375, 2.399855375289917,
                                0.6446641087532043, 0.35340625047683716], rtol=5e-6)   # torch sums in float32
    same = TorchInterpolate([1, 1, 2, 2], "bicubic", scale_factor=[1.3, 1.3])
    assert gradient(same, [1, 2, 3, 4]) == [1, 2, 3, 4]


def test_recompute_scale_factor_with_size_is_refused_as_torch_refuses_it():
    with pytest.raises(DescError) as e:
        to_canonical(TorchInterpolate([1, 1, 4], "linear", size=[3], recompute_scale_factor=True))
    assert e.value.field == "recompute_scale_factor"
    assert to_canonical(TorchInterpolate([1, 1, 4], "linear", size=[3], recompute_scale_factor=False))


def test_area_is_adaptive_average_pooling():
    # 8 -> 3: windows [0, 3), [2, 6), [5, 8) (torch 2.13 printed [1, 3.5, 6] for arange(8))
    t = TorchInterpolate([1, 1, 8], "area", size=[3])
    assert resize(np.arange(8.0).reshape(1, 1, 8), to_canonical(t)).ravel().tolist() == [1, 3.5, 6]
    assert gradient(t, [3, 4, 3]) == [1, 1, 2, 1, 1, 2, 1, 1]


def test_lanczos_needs_antialias_as_torch_says():
    with pytest.raises(DescError, match="antialias") as e:
        to_canonical(TorchInterpolate([1, 1, 4, 4], "lanczos", size=[2, 2]))
    assert e.value.field == "antialias"
    # torch 2.13: scale_factor 1.3 on length 3 keeps the length and still filters (dY [1, 2, 3])
    t = TorchInterpolate([1, 1, 1, 3], "lanczos", scale_factor=[1, 1.3], antialias=True)
    np.testing.assert_allclose(gradient(t, [1, 2, 3]), [1.4168, 3.4235, 1.1598], atol=1e-4)
