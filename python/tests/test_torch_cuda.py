"""rnnx.torch on CUDA tensors (the cuda backend, docs/cuda.md): the module moved to the GPU
against the same module on the CPU, forward and backward, float64 and float32, ragged lengths
with zeros, packed input, dropout masks equal to the CPU's, a non-default stream. Skips, saying
why, where there is no GPU or this build has no cuda backend, built in or from the rnnx-cuda
wheel's plugin; under RNNX_REQUIRE_GPU=1 (tools/gpu-check on a GPU machine) each of those is a
failure naming what is missing (tools/gpu-check runs it on one, --cuda-wheel with the plugin)."""

import copy
import os

import pytest

# tools/gpu-check sets it on a GPU machine (nvidia-smi lists a GPU, or /dev/nvidiaN exists):
# there a test that cannot run is a failure, never a skip.
_REQUIRE_GPU = os.environ.get("RNNX_REQUIRE_GPU", "0") not in ("", "0")
try:
    import torch
except ImportError as e:
    if not _REQUIRE_GPU:
        pytest.skip(f"no torch ({e})", allow_module_level=True)
    # Without torch nothing below can be defined: one error at collection, naming it, which
    # ends the pytest run (gpu-check's python stage fails before it gets here: it asks
    # torch first).
    raise ImportError(f"RNNX_REQUIRE_GPU=1 (a GPU machine) but torch cannot be imported: {e}")
import rnnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

from conftest import assert_near, tolerance  # noqa: E402

_info = rnnx.build_info()
_missing = []
if not torch.cuda.is_available():
    _missing.append(f"torch.cuda.is_available() is False (torch {torch.__version__}, "
                    f"CUDA {torch.version.cuda}, {torch.cuda.device_count()} device(s))")
if "cuda" not in _info["backends"] and not _info["plugins"].startswith("cuda from "):
    _missing.append("this rnnx build has no cuda backend (RNNX_WITH_CUDA; backends: "
                    f"{_info['backends']}) and no cuda plugin loads (the rnnx-cuda wheel; "
                    f"plugins: {_info['plugins'] or 'none'}; rnnx from "
                    f"{os.path.dirname(rnnx.__file__)})")
if _missing and not _REQUIRE_GPU:
    pytest.skip("; ".join(_missing) + " (the cuda backend's tests run on tools/gpu-check)",
                allow_module_level=True)


@pytest.fixture(autouse=True)
def _cuda_usable():
    # Each test fails (at set-up) rather than the whole module at collection, so that the
    # modules run in the same pytest session (tools/gpu-check --cuda-wheel) still report.
    if _missing:
        pytest.fail("RNNX_REQUIRE_GPU=1 (a GPU machine) but " + "; ".join(_missing),
                    pytrace=False)


def run(m, x, lengths, hx=None):
    """Forward and backward; outputs and every gradient, on the CPU."""
    x = x.detach().clone().requires_grad_(True)
    y, h = m(x, hx, lengths=lengths)
    hs = h if isinstance(h, tuple) else (h,)
    loss = (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype, device=y.device).view_as(y)).sum()
    loss = loss + sum((t * 0.5).sum() for t in hs)
    m.zero_grad()
    loss.backward()
    out = {"y": y, "x.grad": x.grad}
    out.update({f"h{i}": t for i, t in enumerate(hs)})
    out.update({f"grad {n}": p.grad for n, p in m.named_parameters()})
    return {k: v.detach().cpu() for k, v in out.items()}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("cls,kw", [
    (rt.LSTM, dict(num_layers=2, bidirectional=True)),
    (rt.LSTM, dict(proj_size=3, cell_clip=(-0.4, 0.5))),
    (rt.GRU, dict(num_layers=2)),
    (rt.RNN, dict(nonlinearity="relu", bidirectional=True)),
])
def test_cuda_matches_cpu(cls, kw, dtype):
    torch.manual_seed(0)
    I, H, T, lengths = 5, 7, 6, [6, 0, 3, 6, 1]
    cpu = cls(I, H, **kw).to(dtype)
    gpu = copy.deepcopy(cpu).cuda()
    x = torch.randn(T, len(lengths), I, dtype=dtype)
    want = run(cpu, x, lengths)
    got = run(gpu, x.cuda(), lengths)
    assert next(gpu.parameters()).is_cuda
    assert (cpu.rnnx_backend, gpu.rnnx_backend) == ("cpu", "cuda")
    tol = tolerance(cpu.config, T, len(lengths), backward=True)
    for k in want:
        assert_near(got[k], want[k], tol, k)


def test_packed_input_and_dropout_masks_match_cpu():
    torch.manual_seed(1)
    cpu = rt.LSTM(4, 6, num_layers=3, dropout=0.4, seed=123).double()
    gpu = copy.deepcopy(cpu).cuda()
    x = torch.randn(7, 4, 4, dtype=torch.float64)
    lens = torch.tensor([7, 2, 5, 3])
    packed = pack_padded_sequence(x, lens, enforce_sorted=False)
    y_cpu, _ = cpu(packed)
    y_gpu, _ = gpu(pack_padded_sequence(x.cuda(), lens, enforce_sorted=False))
    # The same seed and call counter: the same masks, so the same outputs.
    assert_near(y_gpu.data.cpu(), y_cpu.data, tolerance(cpu.config, 7, 4), "y")
    assert cpu.dropout_calls == gpu.dropout_calls == 1


def test_runs_on_the_current_stream():
    torch.manual_seed(2)
    m = rt.GRU(3, 5).cuda()
    x = torch.randn(4, 2, 3, device="cuda")
    want, _ = m(x)
    s = torch.cuda.Stream()  # non-blocking, as PyTorch's streams are
    s.wait_stream(torch.cuda.current_stream())  # x and the parameters were made on the current one
    with torch.cuda.stream(s):
        got, _ = m(x)
    s.synchronize()
    # Within rounding: another stream gets another pooled cuDNN handle and workspace, and
    # cuDNN promises no bit-equality between them.
    torch.testing.assert_close(got, want)


def test_mixed_devices_are_refused():
    m = rt.LSTM(3, 4).cuda()
    with pytest.raises(rnnx.InvalidArgumentError, match="cuda"):
        m(torch.randn(2, 1, 3))  # input on the CPU, parameters on the GPU
    with pytest.raises(rnnx.InvalidArgumentError, match="h_0 is on cpu"):
        m(torch.randn(2, 1, 3, device="cuda"), (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4).cuda()))


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_half_modules_and_autocast_on_cuda(half):
    """A module converted to float16 or bfloat16 on the GPU runs cuDNN on 16-bit data; a float32
    module under torch.autocast("cuda") does the same and its parameters get float32
    gradients. Both against the float64 module, in norm (16-bit roundoff)."""
    torch.manual_seed(3)
    I, H, T, lengths = 8, 16, 6, [6, 4, 6, 0]
    ref = rt.LSTM(I, H, num_layers=2).double()
    x = torch.rand(T, len(lengths), I, dtype=torch.float64).mul(2).sub(1)
    want = run(ref, x, lengths)
    ours = copy.deepcopy(ref).to(half).cuda()
    got = run(ours, x.to(half).cuda(), lengths)
    assert got["y"].dtype == half
    for k in ("y", "x.grad", "h0", "h1"):
        rel = (got[k].double() - want[k]).norm() / want[k].norm().clamp_min(1e-12)
        assert rel < 5e-2, (k, float(rel))
    f32 = copy.deepcopy(ref).float().cuda()
    with torch.autocast("cuda", dtype=half):
        y, _ = f32(x.float().cuda(), lengths=lengths)
    assert y.dtype == half
    y.float().sum().backward()
    assert all(p.grad.dtype == torch.float32 for p in f32.parameters())



def test_non_contiguous_output_gradients_stay_alive():
    """dy, dhy and dcy that are not contiguous (y.sum() + hy.mean() makes expanded ones) are
    copied dense for rnnx; each copy must live until rnnx's backward has read it, or the
    caching allocator hands its block to the next copy (issue #27: wrong gradients)."""
    torch.manual_seed(0)
    cpu = rt.LSTM(5, 7, num_layers=2, dtype=torch.float64)
    gpu = copy.deepcopy(cpu).cuda()
    grads = []
    for m, dev in ((cpu, "cpu"), (gpu, "cuda")):
        x = torch.randn(6, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        x = x.to(dev).requires_grad_()
        y, (hy, cy) = m(x, lengths=[6, 2, 4])
        (y.sum() + hy.mean() + cy.mean()).backward()
        grads.append({"x": x.grad.cpu(), **{n: p.grad.cpu() for n, p in m.named_parameters()}})
    tol = tolerance(dict(cell="lstm", input_size=5, hidden_size=7, num_layers=2,
                         dtype="float64"), 6, 3, backward=True)
    for k in grads[0]:
        assert_near(grads[1][k], grads[0][k], tol, f"d{k}")


def test_cuda_modules_are_flattened_once():
    """On CUDA the parameters are views of one flat buffer in rnnx's layout, as on the CPU:
    a call hands the cuda backend that buffer, not a copy gathered from every tensor, and the
    gradients (read through the views) match the CPU's."""
    torch.manual_seed(0)
    cpu = rt.LSTM(4, 6, num_layers=2, bidirectional=True)
    gpu = copy.deepcopy(cpu).cuda()
    params = gpu._rnnx_config(torch.float32, 0.0)[2]
    assert gpu._rnnx_flat is not None and gpu._rnnx_flat.device.type == "cuda"
    assert gpu._rnnx_aliased(list(gpu._flat_weights), params)
    x = torch.randn(5, 3, 4)
    got = run(gpu, x.cuda(), [5, 2, 4])
    want = run(cpu, x, [5, 2, 4])
    for k in want:
        assert_near(got[k], want[k], 1e-4, f"flattened CUDA module: {k}")


def test_eval_calls_keep_cudnns_weights_and_follow_in_place_changes():
    """An eval-mode CUDA module passes its parameters' version (docs/cuda.md "Weights
    versions"): from the second call on the network keeps cuDNN's copy of the weights, later
    calls read it and give what the CPU gives, and in-place changes (torch.no_grad edits, an
    optimizer's step) give the new results at once."""
    torch.manual_seed(3)
    cpu = rt.LSTM(8, 16, num_layers=2, bidirectional=True).eval()
    gpu = copy.deepcopy(cpu).cuda().eval()
    x = torch.randn(7, 3, 8)
    with torch.no_grad():
        for _ in range(4):
            assert_near(gpu(x.cuda())[0].cpu(), cpu(x)[0], 1e-5, "y")
        assert gpu.rnnx_network_stats()["kept_weights_bytes"] > 0, gpu.rnnx_network_stats()
        for step in range(3):
            for m in (cpu, gpu):
                m.weight_hh_l1.mul_(0.5)
                m.bias_ih_l0.add_(0.25)
            for _ in range(3):
                assert_near(gpu(x.cuda())[0].cpu(), cpu(x)[0], 1e-5, f"y after change {step}")
    for m in (cpu, gpu):
        m.train()
        m(x.to(next(m.parameters()).device))[0].sum().backward()
        torch.optim.SGD(m.parameters(), lr=0.5).step()
        m.eval()
    with torch.no_grad():
        for _ in range(3):
            assert_near(gpu(x.cuda())[0].cpu(), cpu(x)[0], 1e-4, "y after an optimizer step")
