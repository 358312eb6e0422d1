"""bfloat16 through rnnx.torch: a module converted with .bfloat16(), and a float32 module under
torch.autocast("cpu", dtype=torch.bfloat16), run rnnx's bfloat16 data type. Forward and
backward agree with the same module in float64 on the same (bf16) values within
rnnx.norm_error_bound; under autocast the float32 parameters get float32 gradients."""

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


def bound(kind, backward):
    config = rnnx.Config(cell=KINDS[kind], input_size=I, hidden_size=H, num_layers=2,
                         bidirectional=True, dtype="bfloat16")
    return rnnx.norm_error_bound(config, T, B, backward)


def pair(kind):
    """A module and its float64 twin holding the same (bf16-representable) parameters."""
    torch.manual_seed(0)
    cls = getattr(rtorch, kind)
    ours = cls(I, H, num_layers=2, bidirectional=True)
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(p.bfloat16().float())  # exact in bf16, so autocast's cast loses nothing
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


def compare(got, want, kind):
    y, dx, dws = got
    yr, dxr, dwr = want
    assert_near_in_norm(y.double(), yr, bound(kind, False), "y")
    assert_near_in_norm(dx.double(), dxr, bound(kind, True), "dx")
    flat = torch.cat([g.double().reshape(-1) for g in dws])
    flat_ref = torch.cat([g.reshape(-1) for g in dwr])
    assert_near_in_norm(flat, flat_ref, bound(kind, True), "weight gradients")


@needs_torch
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_bfloat16_module_matches_float64(kind):
    ours, ref = pair(kind)
    ours.bfloat16()
    x = torch.rand(T, B, I, dtype=torch.float64).mul(2).sub(1).bfloat16()
    dy = torch.rand(T, B, 2 * H, dtype=torch.float64)
    got = run(ours, x, dy)
    assert got[0].dtype == torch.bfloat16 and got[1].dtype == torch.bfloat16
    assert all(g.dtype == torch.bfloat16 for g in got[2])
    compare(got, run(ref, x.double(), dy), kind)


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
