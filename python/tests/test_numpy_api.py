"""The NumPy front end (rnnx.LSTM/GRU/RNN) and the low-level Config/Plan bindings: weights by
PyTorch name, forward/backward against torch.nn when PyTorch is there, packed input, plan
caching, buffer reuse and every error path of the bindings."""

import numpy as np
import pytest

import rnnx
from conftest import assert_near, tolerance

try:
    import torch
except ImportError:  # the torch comparisons skip; the rest runs on NumPy alone
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def test_params_are_views_with_torch_names_and_shapes():
    m = rnnx.LSTM(5, 8, num_layers=2, bidirectional=True, proj_size=3, dtype=np.float64)
    names = list(m.params)
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert names[5] == "weight_ih_l0_reverse" and names[-1] == "weight_hr_l1_reverse"
    assert m.params["weight_ih_l1"].shape == (32, 6)
    assert m.params["bias_hh_l1_reverse"].shape == (32,)
    assert m.params["weight_hr_l0"].shape == (3, 8)
    m.params["bias_ih_l0"][:] = 7.0  # views write through to the flat buffer
    p = next(p for p in m.weight_params if p.name == "bias_ih_l0")
    assert np.all(m.weights[p.offset:p.offset + p.numel] == 7.0)
    sd = m.state_dict()
    sd["bias_ih_l0"][:] = 0.0  # copies do not
    assert np.all(m.params["bias_ih_l0"] == 7.0)
    k = 1 / np.sqrt(8)
    assert np.abs(m.weights).max() <= 7.0 and np.abs(m.params["weight_hh_l0"]).max() <= k


@needs_torch
@pytest.mark.parametrize("cls,kw", [
    ("LSTM", dict(proj_size=2)), ("GRU", {}), ("RNN", dict(nonlinearity="relu"))],
    ids=["lstm_p2", "gru", "rnn_relu"])
def test_forward_backward_against_torch(cls, kw):
    dtype = np.float64
    T, B, I, H, L = 5, 3, 4, 6, 2
    ref = getattr(torch.nn, cls)(I, H, num_layers=L, bidirectional=True, dtype=torch.float64, **kw)
    m = getattr(rnnx, cls)(I, H, num_layers=L, bidirectional=True, dtype=dtype, **kw)
    m.load_state_dict(ref.state_dict())  # torch tensors accepted
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, I))
    P = kw.get("proj_size") or H
    h0 = rng.standard_normal((2 * L, B, P))
    lstm = cls == "LSTM"
    c0 = rng.standard_normal((2 * L, B, H)) if lstm else None
    y, hy = m.forward(x, hx=(h0, c0) if lstm else h0, training=True)
    dy = rng.standard_normal(y.shape)
    dhy = rng.standard_normal((2 * L, B, P))
    out = m.backward(dy, dhy)
    dx, dh0, grads = out[0], out[1], out[-1]

    xt = torch.tensor(x, requires_grad=True)
    h0t = torch.tensor(h0, requires_grad=True)
    c0t = torch.tensor(c0, requires_grad=True) if lstm else None
    yt, hyt = ref(xt, (h0t, c0t) if lstm else h0t)
    hyt0 = hyt[0] if lstm else hyt
    ((yt * torch.tensor(dy)).sum() + (hyt0 * torch.tensor(dhy)).sum()).backward()
    tol_f, tol_b = tolerance(m.config, T, B), tolerance(m.config, T, B, backward=True)
    assert_near(y, yt, tol_f, "y")
    assert_near(hy[0] if lstm else hy, hyt0, tol_f, "hy")
    assert_near(dx, xt.grad, tol_b, "dx")
    assert_near(dh0, h0t.grad, tol_b, "dh0")
    if lstm:
        assert_near(out[2], c0t.grad, tol_b, "dc0")
    for name, p in ref.named_parameters():
        assert_near(grads[name], p.grad, tol_b, name)
    # accumulate adds to the flat gradient
    first = m.grad.copy()
    m.backward(dy, dhy, accumulate=True)
    assert_near(m.grad, 2 * first, tol_b, "accumulated")


def test_packed_input_equals_padded():
    m = rnnx.GRU(3, 5, bidirectional=True, dtype=np.float64)
    rng = np.random.default_rng(1)
    lengths = [2, 4, 1]
    T, B = 4, 3
    x = rng.standard_normal((T, B, 3))
    y_pad, h_pad = m.forward(x, lengths=lengths)
    # PyTorch's packing: sort by length (descending), rows time step by time step.
    order = sorted(range(B), key=lambda b: -lengths[b])
    batch_sizes = [sum(1 for b in range(B) if lengths[b] > t) for t in range(T)]
    rows = [x[t, order[i]] for t in range(T) for i in range(batch_sizes[t])]
    y_pk, h_pk = m.forward(np.stack(rows), batch_sizes=batch_sizes, sorted_indices=order)
    back = [y_pad[t, order[i]] for t in range(T) for i in range(batch_sizes[t])]
    np.testing.assert_allclose(y_pk, np.stack(back), rtol=0, atol=1e-14)
    np.testing.assert_allclose(h_pk, h_pad, rtol=0, atol=1e-14)


def test_batch_first_and_lengths_padding_fill():
    m = rnnx.LSTM(2, 3, padding_fill=np.nan, batch_first=True)
    x = np.random.default_rng(2).standard_normal((3, 4, 2)).astype(np.float32)
    y, (h, c) = m(x, lengths=[4, 0, 2])
    assert y.shape == (3, 4, 3) and y.dtype == np.float32
    assert np.all(np.isnan(y[1])) and np.all(np.isnan(y[2, 2:])) and not np.any(np.isnan(y[0]))
    assert np.all(h[:, 1] == 0) and np.all(c[:, 1] == 0)
    y_tm, _ = m(x.transpose(1, 0, 2), lengths=[4, 0, 2], batch_first=False)
    np.testing.assert_array_equal(y_tm.transpose(1, 0, 2), y)


def test_networks_are_cached_and_buffers_reused():
    m = rnnx.LSTM(3, 4, num_layers=2)
    x = np.zeros((5, 2, 3), np.float32)
    for _ in range(3):
        m.forward(x, training=True)
        m.backward(np.ones((5, 2, 4), np.float32))
    assert m.networks_built == 1
    assert len(m._engine._workspaces) == 1, "one thread keeps one workspace"
    ws = m._engine._workspaces[0]
    reserve = m._saved["reserve"].buffer
    assert np.shares_memory(m._saved["x"], x), "a dense x of the right dtype is not copied"
    m.forward(x, training=True)
    assert len(m._engine._workspaces) == 1 and m._engine._workspaces[0] is ws, "workspace reused"
    assert m._saved["reserve"].buffer is reserve, "reserve reused"
    m.forward(x, lengths=[5, 3])  # inference: a second network, made for inference
    assert m.networks_built == 2
    plan = m.plan_for(x.shape, lengths=[5, 3], purpose="inference")
    assert m.networks_built == 2 and plan.tokens == 8 and plan.purpose == "inference"
    assert plan.impl_name.startswith("cpu") and "lstm_l2" in plan.problem_name
    # A training forward of that shape runs on the training network (an inference network
    # refuses it: its algorithm search timed a forward only); a new shape makes no network.
    m.forward(x, lengths=[5, 3], training=True)
    assert m.networks_built == 2 and m.plan_for(x.shape, lengths=[5, 3]).purpose == "training"
    with pytest.raises(rnnx.InvalidArgumentError, match="built for inference"):
        plan.forward(x, m.weights, np.empty((5, 2, 4), np.float32), training=True,
                     reserve=np.empty(plan.reserve_size, np.uint8))
    with pytest.raises(rnnx.InvalidArgumentError, match="purpose 'eval' is not one of"):
        m.plan_for(x.shape, purpose="eval")


def test_reference_backend_agrees():
    rng = np.random.default_rng(3)
    fast = rnnx.LSTM(3, 5, num_layers=2, bidirectional=True, dtype=np.float64, rng=rng)
    slow = rnnx.LSTM(3, 5, num_layers=2, bidirectional=True, dtype=np.float64, backend="reference")
    slow.load_state_dict(fast.state_dict())
    x = rng.standard_normal((4, 3, 3))
    y1, _ = fast(x, lengths=[4, 0, 2])
    y2, _ = slow(x, lengths=[4, 0, 2])
    assert slow.plan_for(x.shape).impl_name == "reference"
    assert_near(y1, y2, tolerance(fast.config, 4, 3), "y")


def test_dropout_counter_numpy():
    m = rnnx.GRU(3, 4, num_layers=2, dropout=0.5, seed=9, dtype=np.float64)
    x = np.ones((3, 2, 3))
    y_eval, _ = m(x)
    y1, _ = m(x, training=True)
    y2, _ = m(x, training=True)
    assert not np.array_equal(y1, y2) and not np.array_equal(y1, y_eval)
    m.dropout_calls = 0
    y1b, _ = m(x, training=True)
    np.testing.assert_array_equal(y1, y1b)


def test_numpy_errors():
    m = rnnx.LSTM(4, 6)
    x = np.zeros((5, 3, 4), np.float32)
    with pytest.raises(rnnx.InvalidArgumentError, match="no training forward"):
        m.backward()
    with pytest.raises(rnnx.InvalidArgumentError, match=r"x dim 2 \(= 5\) must equal input_size"):
        m(np.zeros((5, 3, 5)))
    with pytest.raises(rnnx.InvalidArgumentError, match="3-D"):
        m(np.zeros((5, 4)))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"lengths\[2\] \(= -1\)"):
        m(x, lengths=[1, 2, -1])
    with pytest.raises(rnnx.InvalidArgumentError, match="integers"):
        m(x, lengths=[1.5, 2, 1])
    with pytest.raises(rnnx.InvalidArgumentError, match="pair"):
        m(x, hx=np.zeros((1, 3, 6)))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"h0 has shape \(1, 2, 6\)"):
        m(x, hx=(np.zeros((1, 2, 6)), None))
    with pytest.raises(rnnx.InvalidArgumentError, match="batch_sizes must be non-increasing"):
        m(np.zeros((5, 4)), batch_sizes=[2, 3])
    with pytest.raises(rnnx.InvalidArgumentError, match="sum\\(batch_sizes\\)"):
        m(np.zeros((6, 4)), batch_sizes=[3, 2])
    with pytest.raises(rnnx.InvalidArgumentError, match="sorted_indices is not a permutation"):
        m(np.zeros((5, 4)), batch_sizes=[3, 2], sorted_indices=[0, 0, 1])
    m.forward(x, training=True)
    with pytest.raises(rnnx.InvalidArgumentError, match="dy has shape"):
        m.backward(np.zeros((5, 3, 5)))
    with pytest.raises(rnnx.InvalidArgumentError, match="missing keys"):
        m.load_state_dict({"weight_ih_l0": np.zeros((24, 4))})
    with pytest.raises(rnnx.InvalidArgumentError, match="weight_hh_l0 has shape"):
        m.load_state_dict({k: np.zeros((1, 1)) if k == "weight_hh_l0" else v
                           for k, v in m.state_dict().items()})
    with pytest.raises(rnnx.InvalidArgumentError, match="proj_size .* only allowed with cell lstm"):
        rnnx.GRU(4, 6, proj_size=2)
    with pytest.raises(rnnx.InvalidArgumentError, match="hidden_size \\(= 0\\) must be >= 1"):
        rnnx.LSTM(4, 0)
    with pytest.raises(rnnx.InvalidArgumentError, match="dropout"):
        rnnx.LSTM(4, 3, dropout=1.5)
    with pytest.raises(rnnx.InvalidArgumentError, match="nonlinearity"):
        rnnx.RNN(4, 3, nonlinearity="sigmoid")
    with pytest.raises(rnnx.UnsupportedError) as e:
        rnnx.LSTM(4, 3, dtype=np.complex64)
    assert e.value.code == "unsupported"
    with pytest.raises(rnnx.InvalidArgumentError, match="backend 'gpu'"):
        rnnx.LSTM(4, 3, backend="gpu")(x)


def test_low_level_plan_and_buffer_checks():
    cfg = rnnx.Config(cell="gru", input_size=3, hidden_size=4, num_layers=2, dtype="float64")
    assert cfg.weights_numel() == sum(p.numel for p in cfg.weight_params())
    assert "gru" in repr(cfg)
    plan = rnnx.Plan.padded(cfg, 5, 2, lengths=[5, 3])
    assert (plan.x_numel, plan.y_numel, plan.h_numel, plan.c_numel) == (30, 40, 16, 0)
    assert plan.tokens == 8 and plan.reserve_size > 0 and plan.layout == "time_major"
    assert plan.buffer_alignment == 8  # the host backends' (256 on cuda)
    x = np.zeros((5, 2, 3))
    w = np.full(plan.weights_numel, 0.1)
    y = np.empty((5, 2, 4))
    plan.forward(x, w, y)
    assert np.all(y[3:, 1] == 0)
    with pytest.raises(rnnx.InvalidArgumentError, match="forward: x has element format 'f'"):
        plan.forward(x.astype(np.float32), w, y)
    with pytest.raises(rnnx.InvalidArgumentError, match="forward: y has 20 elements but the plan needs 40"):
        plan.forward(x, w, np.empty((5, 2, 2)))
    with pytest.raises(rnnx.InvalidArgumentError, match="C-contiguous"):
        plan.forward(np.zeros((2, 5, 3)).transpose(1, 0, 2), w, y)
    ro = np.empty((5, 2, 4))
    ro.flags.writeable = False
    with pytest.raises(rnnx.InvalidArgumentError, match="forward: y: a writable buffer"):
        plan.forward(x, w, ro)
    with pytest.raises(rnnx.InvalidArgumentError, match="buffer protocol"):
        plan.forward([0.0] * 30, w, y)
    with pytest.raises(rnnx.InvalidArgumentError, match="c0 given but the cell is not lstm"):
        plan.forward(x, w, y, c0=np.zeros(16))
    with pytest.raises(rnnx.InvalidArgumentError, match="reserve_size .* is smaller"):
        plan.forward(x, w, y, training=True, reserve=np.empty(8, np.uint8))
    with pytest.raises(rnnx.InvalidArgumentError, match="reserve was not written by a training forward"):
        plan.backward(x, w, np.zeros(plan.reserve_size, np.uint8))
    reserve = np.empty(plan.reserve_size, np.uint8)
    plan.forward(x, w, y, training=True, reserve=reserve)
    dw = np.empty(plan.weights_numel)
    plan.backward(x, w, reserve, dy=np.ones((5, 2, 4)), dweights=dw)
    assert np.isfinite(dw).all() and np.abs(dw).max() > 0
    with pytest.raises(rnnx.InvalidArgumentError, match="max_seq_len \\(= 0\\)"):
        rnnx.Plan.padded(cfg, 0, 2)
    with pytest.raises(rnnx.InvalidArgumentError, match="batch_sizes is empty"):
        rnnx.Plan.packed(cfg, [])
    with pytest.raises(rnnx.InvalidArgumentError, match="cell 'conv'"):
        rnnx.Config(cell="conv", input_size=1, hidden_size=1)
    with pytest.raises(rnnx.InvalidArgumentError, match="sizes|overflow|too large"):
        rnnx.Plan.padded(rnnx.Config(cell="lstm", input_size=1 << 40, hidden_size=1 << 20), 1 << 20, 1 << 20)


def test_error_bound_is_exposed_with_the_library_formula():
    # rnnx.error_bound is the C++ rnnx::error_bound (one definition): float32 bounds above
    # float64's, gradients above forward values, bf16 products above both.
    c32 = rnnx.Config(cell="lstm", input_size=16, hidden_size=32, num_layers=2)
    c64 = rnnx.Config(cell="lstm", input_size=16, hidden_size=32, num_layers=2,
                      dtype="float64")
    f = rnnx.error_bound(c32, 10, 4)
    assert 0 < rnnx.error_bound(c64, 10, 4) < f * 1e-8
    assert rnnx.error_bound(c32, 10, 4, backward=True) > f
    assert rnnx.error_bound(c32, 10, 4, bf16_products=True) > 100 * f
    # rnnx.norm_error_bound, bf16 in norm: 2 * 2^-8 * sqrt(n) over the n products in
    # sequence (T + L forward, 2 (T + L) + 1 backward) plus the float32 bound.
    assert rnnx.norm_error_bound(c32, 10, 4) == pytest.approx(
        2 / 256 * np.sqrt(12) + f, rel=1e-12)
    assert rnnx.norm_error_bound(c32, 10, 4, backward=True) == pytest.approx(
        2 / 256 * 5 + rnnx.error_bound(c32, 10, 4, backward=True), rel=1e-12)
    assert rnnx.norm_error_bound(c64, 10, 4) == rnnx.error_bound(c64, 10, 4)


def test_config_fields_round_trip_through_dict_repr_text_and_pickle():
    """rnnx.Config comes from the field table: every field by name, read back exactly."""
    import pickle
    fields = rnnx.Config.fields
    assert len(fields) == len(set(fields)) == 21
    assert set(rnnx.Config.defaults()) == set(fields)
    c = rnnx.Config(cell="lstm", input_size=3, hidden_size=5, proj_size=2, num_layers=2,
                    bidirectional=True, cell_clip=(-0.1, 1e300), proj_clip=(-1.5, 0.30000000000000004),
                    clip_nan="replace", dropout=0.25, seed=2 ** 64 - 1, dtype="float64",
                    padding_fill=float("-inf"), math="fp32", peephole=True, gate_clip=3.0,
                    input_forget=True,
                    activations=[("HardSigmoid", 0.2, 0.5), "Tanh", ("Elu", 1.0, None)])
    d = c.to_dict()
    assert list(d) == list(fields)
    assert all(getattr(c, name) == value for name, value in d.items())
    assert rnnx.Config(**d) == c
    assert eval(repr(c), {"rnnx": rnnx}) == c  # repr: the fields that differ from defaults
    assert pickle.loads(pickle.dumps(c)) == c
    assert hash(rnnx.Config(**d)) == hash(c)
    assert "cell_clip=-0.1:1e+300" in str(c) and str(c).startswith("cell=lstm ")
    assert c != rnnx.Config(**dict(d, padding_fill=0.0))
    assert (c == 3) is False
    assert repr(rnnx.Config(cell="gru", input_size=1, hidden_size=2)) == \
        "rnnx.Config(cell='gru', input_size=1, hidden_size=2)"
    with pytest.raises(TypeError, match="unexpected keyword argument 'hidden'.*hidden_size"):
        rnnx.Config(cell="lstm", input_size=1, hidden=2)
    with pytest.raises(TypeError, match="keyword argument hidden_size is required"):
        rnnx.Config(cell="lstm", input_size=1)
    with pytest.raises(TypeError, match="input_size must be an integer, got 2.5"):
        rnnx.Config(cell="lstm", input_size=2.5, hidden_size=1)
    with pytest.raises(TypeError, match="cell_clip must be None or a pair"):
        rnnx.Config(cell="lstm", input_size=1, hidden_size=1, cell_clip=5)
    with pytest.raises(rnnx.InvalidArgumentError, match=r"seed \(= -1\)"):
        rnnx.Config(cell="lstm", input_size=1, hidden_size=1, seed=-1)
    # The text form (rnnx.torch's operators take it) reads back exactly; any subset of the
    # fields, the rest at their defaults; the result validated.
    assert rnnx.Config.from_string(str(c)) == c
    assert rnnx.Config.from_string("hidden_size=2 cell=gru input_size=1") == \
        rnnx.Config(cell="gru", input_size=1, hidden_size=2)
    with pytest.raises(rnnx.InvalidArgumentError, match="hidden"):
        rnnx.Config.from_string("cell=lstm input_size=1 hidden=2")
    with pytest.raises(rnnx.InvalidArgumentError, match="clip_nan"):
        rnnx.Config.from_string("cell=lstm input_size=1 hidden_size=2 clip_nan=sometimes")
    with pytest.raises(rnnx.InvalidArgumentError, match="hidden_size"):
        rnnx.Config.from_string("cell=lstm input_size=1 hidden_size=0")


def test_plan_cpu_choices_force_what_runs_and_are_checked():
    """Plan.padded/packed(cpu=...): the cpu backend's choices per plan, beside the environment."""
    cfg = rnnx.Config(cell="gru", input_size=3, hidden_size=4, bidirectional=True)
    plan = rnnx.Plan.padded(cfg, 5, 2, num_threads=2,
                            cpu={"isa": "scalar", "gemm": "plain", "directions": "sequential"})
    assert plan.impl_name.startswith("cpu:scalar/plain"), plan.impl_name
    assert "dirs-concurrent" not in plan.impl_name
    assert plan.cpu_choices == "isa=scalar gemm=plain directions=sequential"
    same = rnnx.Plan.packed(cfg, [2, 2, 1], cpu="gemm=plain isa=scalar")
    assert same.impl_name.startswith("cpu:scalar/plain"), same.impl_name
    assert rnnx.Plan.padded(cfg, 5, 2).cpu_choices == ""
    with pytest.raises(rnnx.InvalidArgumentError, match=r"cpu choice gemm \(= \"fast\"\)"):
        rnnx.Plan.padded(cfg, 5, 2, cpu={"gemm": "fast"})
    with pytest.raises(rnnx.InvalidArgumentError, match="\"loop\" is not a choice"):
        rnnx.Plan.padded(cfg, 5, 2, cpu={"loop": "team"})
    with pytest.raises(rnnx.InvalidArgumentError, match="for backend cpu, not reference"):
        rnnx.Plan.padded(cfg, 5, 2, backend="reference", cpu={"gemm": "plain"})
    with pytest.raises(TypeError, match="cpu must be None, a string or a dict"):
        rnnx.Plan.padded(cfg, 5, 2, cpu=3)
    with pytest.raises(TypeError, match="cpu must be a dict of strings"):
        rnnx.Plan.padded(cfg, 5, 2, cpu={"gemm": 1})
    with pytest.raises(rnnx.InvalidArgumentError, match="must be a non-empty name without spaces"):
        rnnx.Plan.padded(cfg, 5, 2, cpu={"gemm": "plain isa=scalar"})
