"""An empty batch (B = 0, the last shard of a data-parallel step) is a valid no-op in every
Python front end, as in torch.nn.LSTM/GRU/RNN: empty y, h_n, c_n and input gradients, zero
weight gradients (kept when accumulating). T = 0 and a packed batch without steps stay
refused, as torch refuses them. Also `rnnx run` on a case whose x has B = 0."""

import json
import os
import subprocess

import numpy as np
import pytest

import rnnx

try:
    import torch
    from torch.nn.utils.rnn import PackedSequence

    import rnnx.torch as rt
except ImportError:  # the torch comparisons skip; the rest runs on NumPy alone
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

T, I, H = 5, 3, 4
CASES = [("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True)), ("LSTM", {}),
         ("GRU", dict(num_layers=2, bidirectional=True)), ("RNN", dict(nonlinearity="relu"))]
CASE_IDS = ["lstm_p2_l2_bidir", "lstm", "gru_l2_bidir", "rnn_relu"]


def sizes(kw):
    L = kw.get("num_layers", 1)
    D = 2 if kw.get("bidirectional") else 1
    P = kw.get("proj_size") or H
    return L, D, P


# ---- NumPy classes ---------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
@pytest.mark.parametrize("cls,kw", CASES, ids=CASE_IDS)
def test_numpy_module_empty_batch(cls, kw, batch_first):
    L, D, P = sizes(kw)
    lstm = cls == "LSTM"
    m = getattr(rnnx, cls)(I, H, batch_first=batch_first, dtype=np.float64, **kw)
    x = np.zeros((0, T, I) if batch_first else (T, 0, I))
    y_shape = (0, T, D * P) if batch_first else (T, 0, D * P)
    for training in (False, True):
        y, h = m.forward(x, training=training)
        hy, cy = h if lstm else (h, None)
        assert y.shape == y_shape and hy.shape == (L * D, 0, P)
        if lstm:
            assert cy.shape == (L * D, 0, H)
    # Explicit empty lengths and empty initial states are accepted too.
    h0 = np.zeros((L * D, 0, P))
    hx = (h0, np.zeros((L * D, 0, H))) if lstm else h0
    m.forward(x, lengths=[], hx=hx, training=True)
    out = m.backward(np.zeros(y_shape), np.zeros((L * D, 0, P)))
    dx, dh0, grads = out[0], out[1], out[-1]
    assert dx.shape == x.shape and dh0.shape == (L * D, 0, P)
    if lstm:
        assert out[2].shape == (L * D, 0, H)
    assert m.grad.shape == m.weights.shape and np.all(m.grad == 0)
    assert all(np.all(g == 0) for g in grads.values())
    # Accumulating adds nothing: the previous gradient stays as it was.
    m.grad[:] = np.linspace(-1, 1, m.grad.size)
    before = m.grad.copy()
    m.forward(x, training=True)
    m.backward(accumulate=True)
    np.testing.assert_array_equal(m.grad, before)


def test_numpy_module_packed_without_steps_is_refused():
    m = rnnx.LSTM(I, H, dtype=np.float64)
    with pytest.raises(rnnx.InvalidArgumentError, match="batch_sizes is empty"):
        m.forward(np.zeros((0, I)), batch_sizes=[])
    with pytest.raises(rnnx.InvalidArgumentError, match="max_seq_len \\(= 0\\)"):
        m.forward(np.zeros((0, 0, I)))


def test_low_level_plan_empty_batch():
    cfg = rnnx.Config(cell="lstm", input_size=I, hidden_size=H, num_layers=2, dtype="float64")
    for backend in ("reference", "cpu"):
        plan = rnnx.Plan.padded(cfg, T, 0, backend=backend)
        assert (plan.batch, plan.tokens, plan.max_seq_len) == (0, 0, T)
        assert (plan.x_numel, plan.y_numel, plan.h_numel, plan.c_numel) == (0, 0, 0, 0)
        assert plan.forward_workspace_size(False) == plan.forward_workspace_size(True) == 0
        assert plan.backward_workspace_size == 0
        assert 0 < plan.reserve_size <= 64
        assert "_b0_" in plan.problem_name
        x, y = np.zeros((T, 0, I)), np.zeros((T, 0, H))
        w = np.full(plan.weights_numel, 0.1)
        reserve = np.zeros(plan.reserve_size, np.uint8)
        plan.forward(x, w, y, reserve=reserve)  # inference: the reserve stays unmarked
        dw = np.full(plan.weights_numel, 7.0)
        with pytest.raises(rnnx.InvalidArgumentError,
                           match="reserve was not written by a training forward of this plan"):
            plan.backward(x, w, reserve, dweights=dw)
        assert np.all(dw == 7.0)
        plan.forward(x, w, y, hy=np.zeros((2, 0, H)), cy=np.zeros((2, 0, H)), training=True,
                     reserve=reserve)
        plan.backward(x, w, reserve, dy=y, dx=np.zeros_like(x), dweights=dw, accumulate=True)
        assert np.all(dw == 7.0)
        plan.backward(x, w, reserve, dweights=dw)
        assert np.all(dw == 0.0)
        with pytest.raises(rnnx.InvalidArgumentError, match="forward: weights has 0 elements"):
            plan.forward(x, np.zeros(0), y)
    with pytest.raises(rnnx.InvalidArgumentError, match="batch \\(= -1\\) must be at least 0"):
        rnnx.Plan.padded(cfg, T, -1)
    with pytest.raises(rnnx.InvalidArgumentError, match="max_seq_len \\(= 0\\)"):
        rnnx.Plan.padded(cfg, 0, 0)


# ---- rnnx.torch against torch.nn -------------------------------------------------------------


def torch_pair(cls, kw, batch_first):
    ref = getattr(torch.nn, cls)(I, H, batch_first=batch_first, dtype=torch.float64, **kw)
    ours = getattr(rt, cls)(I, H, batch_first=batch_first, dtype=torch.float64, **kw)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


@needs_torch
@pytest.mark.parametrize("with_hx", [False, True], ids=["no_hx", "hx"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
@pytest.mark.parametrize("cls,kw", CASES, ids=CASE_IDS)
def test_torch_module_matches_torch_on_empty_batch(cls, kw, batch_first, with_hx):
    torch.manual_seed(0)
    L, D, P = sizes(kw)
    lstm = cls == "LSTM"
    ref, ours = torch_pair(cls, kw, batch_first)
    shape = (0, T, I) if batch_first else (T, 0, I)
    results = []
    for m in (ref, ours):
        x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        hx = None
        if with_hx:
            h0 = torch.zeros(L * D, 0, P, dtype=torch.float64, requires_grad=True)
            hx = (h0, torch.zeros(L * D, 0, H, dtype=torch.float64, requires_grad=True)) if lstm else h0
        y, h = m(x, hx)
        states = list(h) if lstm else [h]
        (y.sum() + sum(s.sum() for s in states)).backward()
        hx_grads = [] if hx is None else [t.grad for t in (hx if lstm else (hx,))]
        results.append((y, states, x.grad, hx_grads, {n: p.grad for n, p in m.named_parameters()}))
    (y_r, s_r, dx_r, dh_r, g_r), (y_o, s_o, dx_o, dh_o, g_o) = results
    assert y_o.shape == y_r.shape and y_o.dtype == y_r.dtype
    assert [s.shape for s in s_o] == [s.shape for s in s_r]
    assert dx_o is not None and dx_o.shape == dx_r.shape
    assert [g.shape for g in dh_o] == [g.shape for g in dh_r]
    assert g_o.keys() == g_r.keys()
    for name, g in g_r.items():
        assert g_o[name] is not None, name
        assert g_o[name].shape == g.shape and torch.equal(g_o[name], g), name  # torch: zeros
        assert not torch.any(g_o[name]), name


@needs_torch
def test_torch_module_accumulates_nothing_and_runs_without_grad():
    torch.manual_seed(0)
    ref, ours = torch_pair("LSTM", dict(num_layers=2), False)
    x = torch.randn(T, 2, I, dtype=torch.float64)
    ours(x)[0].sum().backward()
    before = {n: p.grad.clone() for n, p in ours.named_parameters()}
    assert any(torch.any(g) for g in before.values())
    ours(torch.zeros(T, 0, I, dtype=torch.float64))[0].sum().backward()
    for n, p in ours.named_parameters():
        assert torch.equal(p.grad, before[n]), n
    with torch.no_grad():
        y, (hy, cy) = ours(torch.zeros(T, 0, I, dtype=torch.float64))
    assert y.shape == (T, 0, H) and hy.shape == cy.shape == (2, 0, H)


@needs_torch
def test_torch_module_refuses_what_torch_refuses():
    ref, ours = torch_pair("GRU", {}, False)
    empty = PackedSequence(torch.zeros(0, I, dtype=torch.float64), torch.zeros(0, dtype=torch.int64))
    with pytest.raises(Exception):
        ref(empty)
    with pytest.raises(rnnx.InvalidArgumentError, match="batch_sizes is empty"):
        ours(empty)
    zero_t = torch.zeros(0, 0, I, dtype=torch.float64)
    with pytest.raises(RuntimeError):
        ref(zero_t)
    with pytest.raises(rnnx.InvalidArgumentError, match="max_seq_len \\(= 0\\)"):
        ours(zero_t)


# ---- rnnx run --------------------------------------------------------------------------------


def rnnx_cli():
    path = os.environ.get("RNNX_CLI") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(rnnx.__file__)))),
        "tools", "rnnx", "rnnx")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


@pytest.mark.skipif(rnnx_cli() is None, reason="rnnx command not built beside the package "
                    "(or set RNNX_CLI)")
@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
def test_rnnx_run_empty_batch(tmp_path, batch_first):
    case, out = tmp_path / "case", tmp_path / "out"
    case.mkdir()
    json.dump({"cell": "lstm", "input_size": I, "hidden_size": H, "dtype": "float64",
               "batch_first": batch_first}, open(case / "case.json", "w"))
    rng = np.random.default_rng(1)
    bt = (0, T) if batch_first else (T, 0)
    np.save(case / "x.npy", np.zeros(bt + (I,)))
    np.save(case / "lengths.npy", np.zeros(0, dtype=np.int64))
    np.save(case / "dy.npy", np.zeros(bt + (H,)))
    for name, shape in [("weight_ih_l0", (4 * H, I)), ("weight_hh_l0", (4 * H, H)),
                        ("bias_ih_l0", (4 * H,)), ("bias_hh_l0", (4 * H,))]:
        np.save(case / (name + ".npy"), rng.uniform(-0.5, 0.5, shape))
    r = subprocess.run([rnnx_cli(), "run", str(case), "--out", str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "_b0_" in r.stdout and "training forward + backward" in r.stdout
    assert np.load(out / "y.npy").shape == bt + (H,)
    assert np.load(out / "hy.npy").shape == np.load(out / "cy.npy").shape == (1, 0, H)
    assert np.load(out / "dx.npy").shape == bt + (I,)
    assert np.load(out / "dh0.npy").shape == np.load(out / "dc0.npy").shape == (1, 0, H)
    for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
        g = np.load(out / f"grad_{name}.npy")
        assert g.shape == np.load(case / f"{name}.npy").shape and np.all(g == 0), name
    # T = 0 stays refused, with the message naming T.
    np.save(case / "x.npy", np.zeros((0, 0, I)))
    (case / "lengths.npy").unlink()
    (case / "dy.npy").unlink()
    r = subprocess.run([rnnx_cli(), "run", str(case), "--out", str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "has T (= 0) below 1" in r.stderr, r.stderr
