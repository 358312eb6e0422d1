"""Math mode (Config math=, rnnx.LSTM/GRU/RNN(math=...), the torch modules' math=): the
setting reaches the plan (impl_name), allow_conversion stays within bf16's error of fp32
(every result and gradient, in norm and element by element, under rnnx.norm_error_bound and
rnnx.error_bound), float64 ignores it, and a bad value is refused naming the argument."""

import numpy as np
import pytest

import rnnx
from conftest import assert_near, assert_near_in_norm, norm_tolerance

try:
    import torch
    import rnnx.torch as rtorch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

T, B = 6, 3  # the problem of run()


def gemm_of(impl):
    return impl.split("/")[1]


def bf16_machine():
    return rnnx.build_info()["bf16_gemm"] != "none"


def run(math, cls=rnnx.LSTM, dtype=np.float32):
    m = cls(12, 20, num_layers=2, bidirectional=True, dtype=dtype, math=math,
            rng=np.random.default_rng(3))
    x = np.random.default_rng(4).uniform(-1, 1, (T, B, 12)).astype(dtype)
    out = m.forward(x, lengths=[6, 2, 5], training=True)
    grads = m.backward(dy=np.ones_like(out[0]))
    return m, out, grads


def results(out, grads):
    """(name, is a gradient, array) for every result of run(): y, hy, cy, dx, dh0, dc0 and
    the weight gradients as one flat array."""
    y, states = out
    states = states if isinstance(states, tuple) else (states,)
    *state_grads, params = grads
    return ([("y", False, y)] + [(n, False, s) for n, s in zip(("hy", "cy"), states)] +
            [(n, True, g) for n, g in zip(("dx", "dh0", "dc0"), state_grads)] +
            [("dweights", True, np.concatenate([v.ravel() for v in params.values()]))])


@pytest.mark.parametrize("cls", [rnnx.LSTM, rnnx.GRU, rnnx.RNN], ids=["lstm", "gru", "rnn"])
def test_allow_conversion_is_close_to_fp32(cls):
    m32, out32, g32 = run("fp32", cls)
    mbf, outbf, gbf = run("allow_conversion", cls)
    assert m32.config.math == "fp32" and mbf.config.math == "allow_conversion"
    assert "bf16" not in gemm_of(m32.last_plan.impl_name)
    if bf16_machine():
        assert "bf16" in gemm_of(mbf.last_plan.impl_name), mbf.last_plan.impl_name
    compared = []
    for (name, backward, want), (_, _, got) in zip(results(out32, g32), results(outbf, gbf)):
        # Each side within its own bound: bf16's for the converting run, float32's for the
        # other. In norm (benchdnn's comparison of bf16 results) and element by element.
        assert_near_in_norm(got, want, norm_tolerance(mbf.config, T, B, backward), name)
        tol = (rnnx.error_bound(mbf.config, T, B, backward, bf16_products=True) +
               rnnx.error_bound(m32.config, T, B, backward))
        assert_near(got, want, tol, name)
        compared.append(name)
    lstm = cls is rnnx.LSTM
    assert compared == ["y", "hy"] + ["cy"] * lstm + ["dx", "dh0"] + ["dc0"] * lstm + ["dweights"]


def test_float64_ignores_the_mode():
    m, _, _ = run("allow_conversion", dtype=np.float64)
    # float64's engine as build_info names it: "..., float64 openblas-dgemm" (or "plain" in a
    # build without BLAS).
    float64_engine = rnnx.build_info()["gemm_engine"].split("float64 ")[1].split(" ")[0]
    assert gemm_of(m.last_plan.impl_name) == float64_engine
    assert m.config.resolved_math == "fp32"


def test_environment_is_read_for_from_environment(monkeypatch):
    monkeypatch.setenv("RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION", "1")
    cfg = rnnx.Config(cell="gru", input_size=3, hidden_size=4)
    assert cfg.math == "from_environment" and cfg.resolved_math == "allow_conversion"
    monkeypatch.setenv("RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION", "true")
    with pytest.raises(rnnx.InvalidArgumentError, match="RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION"):
        cfg.resolved_math
    assert rnnx.Config(cell="gru", input_size=3, hidden_size=4, math="fp32").resolved_math == "fp32"


def test_bad_math_is_refused():
    with pytest.raises(rnnx.InvalidArgumentError, match=r"math \(= \"bf16\"\)"):
        rnnx.LSTM(3, 4, math="bf16")
    with pytest.raises(rnnx.InvalidArgumentError, match=r"math \(= \"half\"\)"):
        rnnx.Config(cell="lstm", input_size=3, hidden_size=4, math="half")


@needs_torch
def test_torch_module_math():
    torch.manual_seed(0)
    ref = rtorch.LSTM(8, 16, math="fp32")
    conv = rtorch.LSTM(8, 16, math="allow_conversion")
    conv.load_state_dict(ref.state_dict())
    assert "math='allow_conversion'" in repr(conv)
    x = torch.rand(5, 2, 8) * 2 - 1
    y32, _ = ref(x)
    ybf, _ = conv(x)
    cfg = rnnx.Config(cell="lstm", input_size=8, hidden_size=16, math="allow_conversion")
    assert_near_in_norm(ybf, y32, norm_tolerance(cfg, 5, 2), "y")
    with pytest.raises(rnnx.InvalidArgumentError, match="math"):
        rtorch.GRU(8, 16, math="tf32")
