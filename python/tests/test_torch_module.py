"""rnnx.torch.LSTM/GRU/RNN against torch.nn.LSTM/GRU/RNN (Debian's PyTorch 1.13): outputs,
final states and every gradient (input, h0, c0, each parameter), for padded, padded with
lengths (zero lengths too) and packed input, batch_first, 1-3 layers, bidirectional,
proj_size, float32 and float64; plus dropout, module plumbing and error cases."""

import copy
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import rnnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

from conftest import assert_near, tolerance  # noqa: E402

@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)  # torch.nn's initialisation draws from the global generator


TORCH_MODES = {"lstm": (torch.nn.LSTM, rt.LSTM), "gru": (torch.nn.GRU, rt.GRU),
               "rnn_tanh": (torch.nn.RNN, rt.RNN), "rnn_relu": (torch.nn.RNN, rt.RNN)}


def make_pair(mode, I, H, L=1, bidir=False, proj=0, batch_first=False, dtype=torch.float64,
              bias=True, **extra):
    """A torch.nn module and an rnnx.torch module with the same weights."""
    ref_cls, rnnx_cls = TORCH_MODES[mode]
    kw = dict(num_layers=L, bidirectional=bidir, batch_first=batch_first, bias=bias, dtype=dtype)
    if mode == "lstm":
        kw["proj_size"] = proj
    if mode.startswith("rnn"):
        kw["nonlinearity"] = mode[4:]
    ref = ref_cls(I, H, **kw)
    ours = rnnx_cls(I, H, **kw, **extra)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def bound(T, B, I, H, L, P, dtype="float64"):
    # The gradient bound of the largest network these sizes describe (LSTM, both
    # directions, projection when P < H): an upper bound for every cell the tests compare.
    cfg = dict(cell="lstm", input_size=I, hidden_size=H, num_layers=L, bidirectional=True,
               dtype=dtype)
    projected = dict(cfg, proj_size=P) if P < H else cfg
    return max(tolerance(cfg, T, B, backward=True), tolerance(projected, T, B, backward=True))


def assert_close(a, b, tol, what):
    assert_near(a, b, tol, what)


def random_hx(mode, L, D, B, H, P, dtype, gen):
    h0 = torch.randn(L * D, B, P if P else H, dtype=dtype, generator=gen, requires_grad=True)
    if mode == "lstm":
        c0 = torch.randn(L * D, B, H, dtype=dtype, generator=gen, requires_grad=True)
        return h0, c0
    return h0, None


def run_and_grad(module, inp, hx, lengths, loss_w, extra_w):
    """Forward, a random linear loss over y, hy (and cy), backward. Returns outputs."""
    if lengths is None:
        out, hy = module(inp, hx)
    else:
        out, hy = module(inp, hx, lengths=lengths)
    y = out.data if hasattr(out, "batch_sizes") else out
    states = hy if isinstance(hy, tuple) else (hy,)
    loss = (y * loss_w).sum()
    for s, w in zip(states, extra_w):
        loss = loss + (s * w).sum()
    loss.backward()
    return y, states


CASES = [
    # mode, L, bidir, proj, batch_first, input kind, dtype
    ("lstm", 1, False, 0, False, "full", torch.float64),
    ("lstm", 2, True, 0, False, "lengths", torch.float64),
    ("lstm", 3, True, 3, True, "packed", torch.float64),
    ("lstm", 2, False, 4, False, "lengths", torch.float32),
    ("lstm", 2, True, 3, True, "lengths", torch.float32),
    ("lstm", 1, True, 0, False, "packed", torch.float32),
    ("gru", 1, False, 0, True, "full", torch.float64),
    ("gru", 2, True, 0, False, "packed", torch.float64),
    ("gru", 3, False, 0, False, "lengths", torch.float32),
    ("gru", 2, True, 0, True, "lengths", torch.float64),
    ("rnn_tanh", 2, True, 0, False, "lengths", torch.float64),
    ("rnn_tanh", 1, False, 0, True, "packed", torch.float32),
    ("rnn_relu", 2, False, 0, False, "full", torch.float64),
    ("rnn_relu", 3, True, 0, True, "lengths", torch.float32),
]


def case_id(c):
    mode, L, bidir, proj, bf, kind, dt = c
    return (f"{mode}_l{L}_{'bidir' if bidir else 'uni'}_p{proj}_{'bf' if bf else 'tm'}_{kind}_"
            f"{str(dt)[6:]}")


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_matches_torch(case):
    mode, L, bidir, proj, batch_first, kind, dtype = case
    gen = torch.Generator().manual_seed(1234)
    T, B, I, H = 6, 5, 7, 9
    D = 2 if bidir else 1
    P = proj if proj else H
    ref, ours = make_pair(mode, I, H, L, bidir, proj, batch_first, dtype)
    lengths = [6, 2, 5, 1, 6] if kind != "full" else None
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    if batch_first:
        x = x.transpose(0, 1).contiguous()
    h0, c0 = random_hx(mode, L, D, B, H, proj, dtype, gen)
    hx = (h0, c0) if mode == "lstm" else h0

    y_shape = (B, T, D * P) if batch_first else (T, B, D * P)
    loss_w = torch.randn(y_shape, dtype=dtype, generator=gen)
    extra_w = [torch.randn(h0.shape, dtype=dtype, generator=gen)]
    if mode == "lstm":
        extra_w.append(torch.randn(c0.shape, dtype=dtype, generator=gen))

    results = {}
    for name, module in (("ref", ref), ("rnnx", ours)):
        xi = x.clone().requires_grad_(True)
        h0i = h0.detach().clone().requires_grad_(True)
        c0i = c0.detach().clone().requires_grad_(True) if c0 is not None else None
        hxi = (h0i, c0i) if mode == "lstm" else h0i
        lw = loss_w
        if kind == "full":
            y, states = run_and_grad(module, xi, hxi, None, lw, extra_w)
        elif kind == "packed" or name == "ref":
            packed = pack_padded_sequence(xi, torch.tensor(lengths), batch_first=batch_first,
                                          enforce_sorted=False)
            out, hy = module(packed, hxi)
            assert hasattr(out, "batch_sizes"), "PackedSequence in, PackedSequence out"
            y, _ = pad_packed_sequence(out, batch_first=batch_first, total_length=T)
            states = hy if isinstance(hy, tuple) else (hy,)
            loss = (y * lw).sum() + sum((s * w).sum() for s, w in zip(states, extra_w))
            loss.backward()
        else:  # padded with lengths=
            y, states = run_and_grad(module, xi, hxi, lengths, lw, extra_w)
        grads = {"x": xi.grad, "h0": h0i.grad}
        if c0i is not None:
            grads["c0"] = c0i.grad
        for pname, p in module.named_parameters():
            grads[pname] = p.grad
        results[name] = (y, states, grads)

    tol = tolerance(dict(cell=mode, input_size=I, hidden_size=H, num_layers=L,
                         bidirectional=bidir, proj_size=proj,
                         dtype="float32" if dtype == torch.float32 else "float64"),
                    T, B, backward=True)
    (y_r, s_r, g_r), (y_o, s_o, g_o) = results["ref"], results["rnnx"]
    assert_close(y_o, y_r, tol, "y")
    for i, (a, b) in enumerate(zip(s_o, s_r)):
        assert_close(a, b, tol, ["hy", "cy"][i])
    assert set(g_o) == set(g_r)
    for k in g_r:
        assert g_o[k] is not None, f"no gradient for {k}"
        assert_close(g_o[k], g_r[k], tol, f"d{k}")


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_zero_lengths(mode):
    """Sequences of length 0: y is padding_fill, hy = h0 (cy = c0), dx = 0, dh0 = dhy;
    the others match torch.nn run on the non-empty sequences alone."""
    dtype = torch.float64
    gen = torch.Generator().manual_seed(7)
    T, B, I, H, L = 5, 4, 3, 6, 2
    ref, ours = make_pair(mode, I, H, L, True, 0, False, dtype, padding_fill=-3.0)
    lengths = [0, 5, 0, 2]
    keep = [1, 3]
    x = torch.randn(T, B, I, dtype=dtype, generator=gen, requires_grad=True)
    h0, c0 = random_hx(mode, L, 2, B, H, 0, dtype, gen)
    hx = (h0, c0) if mode == "lstm" else h0
    out, hy = ours(x, hx, lengths=lengths)
    states = hy if isinstance(hy, tuple) else (hy,)
    inits = (h0, c0) if mode == "lstm" else (h0,)
    wy = torch.randn(out.shape, dtype=dtype, generator=gen)
    ws = [torch.randn(s.shape, dtype=dtype, generator=gen) for s in states]
    ((out * wy).sum() + sum((s * w).sum() for s, w in zip(states, ws))).backward()
    for b in (0, 2):
        assert torch.all(out[:, b] == -3.0)
        assert torch.all(x.grad[:, b] == 0)
        for s, s0, w in zip(states, inits, ws):
            assert torch.equal(s[:, b], s0[:, b])
            assert torch.allclose(s0.grad[:, b], w[:, b])
    # padding after a short sequence is padding_fill too
    assert torch.all(out[2:, 3] == -3.0)

    # The non-empty sequences, alone, through torch.nn.
    xs = x.detach()[:, keep].clone().requires_grad_(True)
    subs = [s0.detach()[:, keep].clone().requires_grad_(True) for s0 in inits]
    packed = pack_padded_sequence(xs, torch.tensor([lengths[k] for k in keep]),
                                  enforce_sorted=False)
    out_r, hy_r = ref(packed, tuple(subs) if mode == "lstm" else subs[0])
    y_r, _ = pad_packed_sequence(out_r, total_length=T, padding_value=-3.0)
    states_r = hy_r if isinstance(hy_r, tuple) else (hy_r,)
    ((y_r * wy[:, keep]).sum()
     + sum((s * w[:, keep]).sum() for s, w in zip(states_r, ws))).backward()
    tol = bound(T, B, I, H, L, H)
    assert_close(out[:, keep], y_r, tol, "y")
    for a, b in zip(states, states_r):
        assert_close(a[:, keep], b, tol, "hy/cy")
    assert_close(x.grad[:, keep], xs.grad, tol, "dx")
    for s0, sub in zip(inits, subs):
        assert_close(s0.grad[:, keep], sub.grad, tol, "dh0/dc0")


def test_unbatched_input_matches_batch_of_one():
    ref, ours = make_pair("lstm", 4, 5, 2, True, 2)
    x = torch.randn(6, 4, dtype=torch.float64)
    out, (h, c) = ours(x)
    out_r, (h_r, c_r) = ref(x)
    assert out.shape == out_r.shape and h.shape == h_r.shape and c.shape == c_r.shape
    tol = bound(6, 1, 4, 5, 2, 2)
    assert_close(out, out_r, tol, "y")
    assert_close(h, h_r, tol, "hy")
    out2, _ = ours(x, (h_r.detach(), c_r.detach()))
    out2_r, _ = ref(x, (h_r.detach(), c_r.detach()))
    assert_close(out2, out2_r, tol, "y with hx")


def test_drop_in_module_plumbing():
    ref = torch.nn.LSTM(5, 8, num_layers=2, bidirectional=True, proj_size=3)
    ours = rt.LSTM(5, 8, num_layers=2, bidirectional=True, proj_size=3)
    assert isinstance(ours, torch.nn.LSTM)
    assert list(ours.state_dict()) == list(ref.state_dict())
    for k, v in ref.state_dict().items():
        assert ours.state_dict()[k].shape == v.shape
    ours.load_state_dict(ref.state_dict())  # strict
    # parameters are views of one flat buffer in rnnx's layout
    params = ours._rnnx_config(torch.float32, 0.0)[2]
    assert ours._rnnx_aliased(list(ours._flat_weights), params)
    # .double() re-flattens in the new dtype and matches torch.nn in float64
    ours.double()
    ref.double()
    assert ours._rnnx_flat.dtype == torch.float64
    assert ours._rnnx_aliased(list(ours._flat_weights), ours._rnnx_config(torch.float64, 0.0)[2])
    x = torch.randn(4, 3, 5, dtype=torch.float64)
    tol = bound(4, 3, 5, 8, 2, 3)
    assert_close(ours(x)[0], ref(x)[0], tol, "y after double()")
    # deepcopy keeps working (plans are rebuilt, not copied)
    twin = copy.deepcopy(ours)
    assert_close(twin(x)[0], ref(x)[0], tol, "y of a deepcopy")
    # networks are cached per config, dtype and purpose; a new shape is a batch on one
    built = ours.rnnx_networks_built
    for _ in range(3):
        ours(x)
    assert ours.rnnx_networks_built == built
    ours(x, lengths=[4, 1, 2])
    ours(x, lengths=[2, 4, 3])
    assert ours.rnnx_networks_built == built
    stats = ours.rnnx_network_stats()
    assert stats["backends_built"] == stats["slots"], "a slot rebinds to every later shape"
    assert "cell_clip" in repr(rt.LSTM(3, 4, proj_size=2, cell_clip=(-1, 1)))


def test_reassigned_parameter_gathers_weights():
    """A parameter replaced by another tensor breaks the flat aliasing: rnnx gathers the
    weights per call and gradients still reach the new parameter."""
    ref, ours = make_pair("gru", 3, 4, 2)
    new = torch.nn.Parameter(torch.randn(12, 4, dtype=torch.float64))
    ours.weight_hh_l1 = new
    ref.weight_hh_l1 = torch.nn.Parameter(new.detach().clone())
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    ours(x)[0].sum().backward()
    ref(x)[0].sum().backward()
    tol = bound(5, 2, 3, 4, 2, 4)
    assert_close(new.grad, ref.weight_hh_l1.grad, tol, "dweight_hh_l1")
    assert_close(ours.weight_ih_l0.grad, ref.weight_ih_l0.grad, tol, "dweight_ih_l0")


def test_retain_graph_and_overlapping_graphs():
    """Each call keeps its own reserve: two live graphs, and a graph backpropagated twice."""
    ref, ours = make_pair("lstm", 3, 4, 2, True)
    x1 = torch.randn(5, 2, 3, dtype=torch.float64)
    x2 = torch.randn(3, 4, 3, dtype=torch.float64)
    for m in (ref, ours):
        y1, _ = m(x1)
        y2, _ = m(x2, None)
        (y2 * 2).sum().backward(retain_graph=True)
        y1.sum().backward()
        (y2 * 2).sum().backward()
    tol = bound(5, 4, 3, 4, 2, 4)
    for (n, p_r), p_o in zip(ref.named_parameters(), ours.parameters()):
        assert_close(p_o.grad, p_r.grad, tol, f"d{n}")


def test_no_grad_and_eval():
    ref, ours = make_pair("gru", 3, 4, 2, dropout=0.5, seed=3)
    ref.eval()
    ours.eval()
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    with torch.no_grad():
        y, h = ours(x)
    assert y.grad_fn is None
    tol = bound(5, 2, 3, 4, 2, 4)
    assert_close(y, ref(x)[0], tol, "eval y (no dropout)")


def test_dropout_masks_counter_and_gradients():
    gen = torch.Generator().manual_seed(0)
    m = rt.LSTM(3, 5, num_layers=3, dropout=0.4, seed=11, dtype=torch.float64)
    x = torch.randn(4, 3, 3, dtype=torch.float64, generator=gen)
    m.train()
    y1 = m(x)[0]
    y2 = m(x)[0]
    assert not torch.equal(y1, y2), "each training call gets a new mask"
    assert m.dropout_calls == 2
    twin = rt.LSTM(3, 5, num_layers=3, dropout=0.4, seed=11, dtype=torch.float64)
    twin.load_state_dict(m.state_dict())
    assert torch.equal(twin(x)[0], y1) and torch.equal(twin(x)[0], y2), "same seed, same masks"
    m.eval()
    y_eval = m(x)[0]
    assert not torch.equal(y_eval, y1)

    # Backward uses the forward's mask: gradcheck with the counter pinned.
    m.train()
    h0 = torch.randn(3, 3, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    c0 = torch.randn(3, 3, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    xg = x.clone().requires_grad_(True)

    def f(x_, h_, c_):
        m.dropout_calls = 5
        y, (h, c) = m(x_, (h_, c_))
        return y, h, c

    assert torch.autograd.gradcheck(f, (xg, h0, c0), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_training_loop_follows_torch(mode):
    """20 SGD steps on a toy regression from the same weights: the same loss curve."""
    dtype = torch.float64
    torch.manual_seed(0)  # torch.nn's initialisation; lr 0.1 trains every seed tried
    gen = torch.Generator().manual_seed(0)
    ref, ours = make_pair(mode, 4, 8, 2, True, 0, True, dtype)
    head_r = torch.nn.Linear(16, 1, dtype=dtype)
    head_o = copy.deepcopy(head_r)
    x = torch.randn(6, 10, 4, dtype=dtype, generator=gen)  # batch_first
    lengths = torch.tensor([10, 3, 7, 1, 10, 5])
    target = torch.randn(6, 1, dtype=dtype, generator=gen)
    opt_r = torch.optim.SGD(list(ref.parameters()) + list(head_r.parameters()), lr=0.1)
    opt_o = torch.optim.SGD(list(ours.parameters()) + list(head_o.parameters()), lr=0.1)
    curves = {"ref": [], "rnnx": []}
    for step in range(20):
        for name, m, head, opt in (("ref", ref, head_r, opt_r), ("rnnx", ours, head_o, opt_o)):
            opt.zero_grad()
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            if name == "ref":
                _, hy = m(packed)
            else:
                _, hy = m(x, lengths=lengths)
            h = hy[0] if isinstance(hy, tuple) else hy
            feat = torch.cat([h[-2], h[-1]], dim=1)  # last layer, both directions
            loss = ((head(feat) - target) ** 2).mean()
            loss.backward()
            opt.step()
            curves[name].append(loss.item())
    r, o = np.array(curves["ref"]), np.array(curves["rnnx"])
    assert r[-1] < r[0] * 0.75, "the toy problem should train"
    np.testing.assert_allclose(o, r, rtol=1e-9, atol=0)
    assert ours._rnnx_aliased(list(ours._flat_weights), ours._rnnx_config(dtype, 0.0)[2]), \
        "optimizer steps keep the parameters in the flat buffer"


def lstm_reference(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, cell_clip, proj_clip):
    """One LSTM layer, one direction, step by step in plain torch (for the clip options)."""
    h, c = h0, c0
    ys = []
    for t in range(x.shape[0]):
        a = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = a.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        if cell_clip is not None:
            c = c.clamp(*cell_clip)
        m = torch.sigmoid(o) * torch.tanh(c)
        h = m @ w_hr.T if w_hr is not None else m
        if proj_clip is not None:
            h = h.clamp(*proj_clip)
        ys.append(h)
    return torch.stack(ys), h, c


def test_cell_and_projection_clipping():
    gen = torch.Generator().manual_seed(3)
    dtype = torch.float64
    m = rt.LSTM(3, 6, proj_size=2, cell_clip=(-0.4, 0.5), proj_clip=(-0.2, 0.25), dtype=dtype)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(4)  # large weights so that the clamps bite
    x = torch.randn(5, 2, 3, dtype=dtype, generator=gen, requires_grad=True)
    y, (h, c) = m(x)
    (y.sum() + c.sum()).backward()
    xr = x.detach().clone().requires_grad_(True)
    params = {n: p.detach().clone().requires_grad_(True) for n, p in m.named_parameters()}
    y_r, h_r, c_r = lstm_reference(xr, torch.zeros(2, 2, dtype=dtype), torch.zeros(2, 6, dtype=dtype),
                                   params["weight_ih_l0"], params["weight_hh_l0"],
                                   params["bias_ih_l0"], params["bias_hh_l0"],
                                   params["weight_hr_l0"], (-0.4, 0.5), (-0.2, 0.25))
    (y_r.sum() + c_r.sum()).backward()
    assert float(c_r.abs().max()) >= 0.4 and float(y_r.abs().max()) >= 0.2, "clamps must bite"
    tol = bound(5, 2, 3, 6, 1, 2)
    assert_close(y, y_r, tol, "y")
    assert_close(c[0], c_r, tol, "cy")
    assert_close(x.grad, xr.grad, tol, "dx")
    for n, p in m.named_parameters():
        assert_close(p.grad, params[n].grad, tol, f"d{n}")


def test_original_gru_variant():
    """gru_linear_before_reset=False: n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)."""
    gen = torch.Generator().manual_seed(4)
    dtype = torch.float64
    m = rt.GRU(3, 4, gru_linear_before_reset=False, dtype=dtype)
    x = torch.randn(5, 2, 3, dtype=dtype, generator=gen)
    y, h = m(x)
    m_config = dict(cell="gru", input_size=3, hidden_size=4, gru_linear_before_reset=False,
                    dtype="float64")
    W_ih, W_hh, b_ih, b_hh = (p.detach() for p in m.parameters())
    ht = torch.zeros(2, 4, dtype=dtype)
    for t in range(5):
        gi = x[t] @ W_ih.T + b_ih
        r = torch.sigmoid(gi[:, :4] + ht @ W_hh[:4].T + b_hh[:4])
        z = torch.sigmoid(gi[:, 4:8] + ht @ W_hh[4:8].T + b_hh[4:8])
        n = torch.tanh(gi[:, 8:] + (r * ht) @ W_hh[8:].T + b_hh[8:])
        ht = (1 - z) * n + z * ht
        assert_close(y[t], ht, tolerance(m_config, 5, 2), f"y[{t}]")
    assert "gru_linear_before_reset=False" in repr(m)


def test_errors():
    m = rt.LSTM(4, 6, num_layers=2)
    x = torch.randn(5, 3, 4)
    with pytest.raises(rnnx.InvalidArgumentError, match="input_size"):
        m(torch.randn(5, 3, 7))
    with pytest.raises(ValueError, match=r"lengths\[1\] \(= 9\)") as e:
        m(x, lengths=[5, 9, 1])
    assert e.value.code == "invalid_argument" and isinstance(e.value, rnnx.Error)
    with pytest.raises(ValueError, match="lengths has 2 entries but batch is 3"):
        m(x, lengths=[5, 1])
    with pytest.raises(rnnx.InvalidArgumentError, match=r"h_0 has shape \(2, 2, 6\)"):
        m(x, (torch.zeros(2, 2, 6), torch.zeros(2, 3, 6)))
    with pytest.raises(rnnx.InvalidArgumentError, match="tuple"):
        m(x, torch.zeros(2, 3, 6))
    with pytest.raises(rnnx.InvalidArgumentError, match="dtype"):
        m(x.double())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Complex modules")
        with pytest.raises(rnnx.UnsupportedError) as e:
            m.to(torch.complex64)(x.to(torch.complex64))
    assert e.value.code == "unsupported" and isinstance(e.value, NotImplementedError)
    with pytest.raises(rnnx.InvalidArgumentError, match="proj_clip needs an LSTM projection"):
        rt.LSTM(4, 6, proj_clip=(-1, 1))
    with pytest.raises(rnnx.InvalidArgumentError, match="cell_clip lo"):
        rt.LSTM(4, 6, cell_clip=(1, -1))
    with pytest.raises(rnnx.InvalidArgumentError, match="clip_nan"):
        rt.LSTM(4, 6, clip_nan="ignore")
    with pytest.raises(ValueError):
        rt.GRU(4, 6, proj_size=2)  # torch.nn's own check
    packed = pack_padded_sequence(x, torch.tensor([5, 2, 1]))
    with pytest.raises(rnnx.InvalidArgumentError, match="PackedSequence carries"):
        m(packed, lengths=[5, 2, 1])
