"""16-bit data through rnnx.torch: a module converted with .bfloat16() or .half(), and a float32
module under torch.autocast("cpu", dtype=torch.bfloat16), run rnnx's bfloat16 / float16 data
types. Forward and backward agree with the same module in float64 on the same (16-bit) values
within rnnx.norm_error_bound; under autocast the float32 parameters get float32 gradients.
rnnx.Plan takes bfloat16 tensors as their bits and float16 ones as NumPy float16."""

import numpy as np
import pytest

import rnnx
from conftest import assert_near_in_norm

try:
    import torch
    import rnnx.torch as rtorch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

T, B, I, H = 7, 4, 10, 24
KINDS = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}


def bound(kind, backward, dtype="bfloat16"):
    config = rnnx.Config(cell=KINDS[kind], input_size=I, hidden_size=H, num_layers=2,
                         bidirectional=True, dtype=dtype)
    return rnnx.norm_error_bound(config, T, B, backward)


def pair(kind, dtype=None):
    """A module and its float64 twin holding the same parameters, representable in `dtype`
    (default torch.bfloat16)."""
    dtype = dtype or torch.bfloat16
    torch.manual_seed(0)
    cls = getattr(rtorch, kind)
    ours = cls(I, H, num_layers=2, bidirectional=True)
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(p.to(dtype).float())  # exact in dtype, so autocast's cast loses nothing
    ref = cls(I, H, num_layers=2, bidirectional=True).double()
    ref.load_state_dict({k: v.double() for k, v in ours.state_dict().items()})
    return ours, ref


def run(module, x, dy, **kw):
    """Forward on x (lengths [7, 3, 5, 1]), the loss sum(y * dy), backward: y, x's gradient
    and the parameters' gradients, all as float64 for comparison."""
    x = x.detach().requires_grad_()
    y, _ = module(x, lengths=[7, 3, 5, 1], **kw)
    (y.double() * dy).sum().backward()
    return y, x.grad, [p.grad for p in module.parameters()]


def compare(got, want, kind, dtype="bfloat16"):
    y, dx, dws = got
    yr, dxr, dwr = want
    assert_near_in_norm(y.double(), yr, bound(kind, False, dtype), "y")
    assert_near_in_norm(dx.double(), dxr, bound(kind, True, dtype), "dx")
    flat = torch.cat([g.double().reshape(-1) for g in dws])
    flat_ref = torch.cat([g.reshape(-1) for g in dwr])
    assert_near_in_norm(flat, flat_ref, bound(kind, True, dtype), "weight gradients")


@needs_torch
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_16bit_module_matches_float64(kind, dtype):
    dt = getattr(torch, dtype)
    ours, ref = pair(kind, dt)
    ours.to(dt)
    x = torch.rand(T, B, I, dtype=torch.float64).mul(2).sub(1).to(dt)
    dy = torch.rand(T, B, 2 * H, dtype=torch.float64)
    got = run(ours, x, dy)
    assert got[0].dtype == dt and got[1].dtype == dt
    assert all(g.dtype == dt for g in got[2])
    compare(got, run(ref, x.double(), dy), kind, dtype)


@needs_torch
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_autocast_runs_bfloat16_with_float32_parameters(kind):
    ours, ref = pair(kind)
    x = torch.rand(T, B, I, dtype=torch.float64).mul(2).sub(1).bfloat16().float()
    dy = torch.rand(T, B, 2 * H, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = run(ours, x, dy)
    assert got[0].dtype == torch.bfloat16, "outputs in the autocast dtype"
    assert got[1].dtype == torch.float32 and all(g.dtype == torch.float32 for g in got[2])
    compare(got, run(ref, x.double(), dy), kind)
    # Outside autocast the same module runs float32 again.
    y, _ = ours(x)
    assert y.dtype == torch.float32


@needs_torch
def test_bfloat16_input_needs_bfloat16_parameters():
    ours, _ = pair("LSTM")
    with pytest.raises(rnnx.InvalidArgumentError, match="input dtype torch.bfloat16 does not match"):
        ours(torch.zeros(T, B, I, dtype=torch.bfloat16))


def test_plan_takes_bfloat16_bits_and_refuses_floats():
    """rnnx.Plan with dtype="bfloat16" takes its tensors as 16-bit integers (the bf16 bits);
    a float32 array is refused, saying how to pass bf16."""
    cfg = rnnx.Config(cell="gru", input_size=3, hidden_size=4, dtype="bfloat16")
    plan = rnnx.Plan.padded(cfg, max_seq_len=2, batch=1)
    w = np.full(plan.weights_numel, 0x3D80, np.uint16)  # 0.0625
    x = np.full(plan.x_numel, 0x3F80, np.uint16)  # 1.0
    y = np.zeros(plan.y_numel, np.uint16)
    plan.forward(x, w, y)
    got = (y.astype(np.uint32) << 16).view(np.float32)
    assert np.all(np.isfinite(got)) and np.all(got != 0), got
    with pytest.raises(rnnx.InvalidArgumentError, match="pass its bits as int16 or uint16"):
        plan.forward(x.astype(np.float32), w, y)


def test_plan_takes_float16_arrays():
    """rnnx.Plan with dtype="float16" takes NumPy float16 arrays and agrees with the
    reference backend on them."""
    cfg = rnnx.Config(cell="lstm", input_size=3, hidden_size=4, dtype="float16")
    rng = np.random.default_rng(3)
    ys = []
    for backend in ("cpu", "reference"):
        plan = rnnx.Plan.padded(cfg, max_seq_len=3, batch=2, backend=backend)
        w = rng.uniform(-0.5, 0.5, plan.weights_numel).astype(np.float16)
        x = rng.uniform(-1, 1, plan.x_numel).astype(np.float16)
        y = np.zeros(plan.y_numel, np.float16)
        plan.forward(x, w, y)
        ys.append(y.astype(np.float64))
        rng = np.random.default_rng(3)  # the same values for the second backend
    assert np.all(ys[1] != 0)
    assert np.max(np.abs(ys[0] - ys[1])) <= 4e-3, (ys[0], ys[1])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_numpy_module_runs_float16(kind):
    """The NumPy classes take dtype=np.float16 (storage in float16, compute in float32) and
    agree with the float64 module on the same values within rnnx.norm_error_bound, forward
    and backward."""
    cls = getattr(rnnx, kind)
    m16 = cls(I, H, num_layers=2, bidirectional=True, dtype=np.float16,
              rng=np.random.default_rng(0))
    m64 = cls(I, H, num_layers=2, bidirectional=True, dtype=np.float64)
    m64.weights[:] = m16.weights.astype(np.float64)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (T, B, I)).astype(np.float16)
    dy = rng.uniform(-1, 1, (T, B, 2 * H))
    lengths = [7, 3, 5, 1]
    y16 = m16.forward(x, lengths=lengths, training=True)[0]
    y64 = m64.forward(x.astype(np.float64), lengths=lengths, training=True)[0]
    assert y16.dtype == np.float16
    assert_near_in_norm(y16.astype(np.float64), y64, bound(kind, False, "float16"), "y")
    g16 = m16.backward(dy.astype(np.float16))
    g64 = m64.backward(dy)
    assert g16[0].dtype == np.float16 and m16.grad.dtype == np.float16
    assert_near_in_norm(g16[0].astype(np.float64), g64[0], bound(kind, True, "float16"), "dx")
    assert_near_in_norm(m16.grad.astype(np.float64), m64.grad, bound(kind, True, "float16"),
                        "weight gradients")
