"""rnnx.torch.RNNCell / LSTMCell / GRUCell against torch.nn's cells: outputs and every gradient
in float64 (batched and unbatched, with and without a state, with and without bias), the
parameters and state_dict, replaced parameters, dtype and device moves, steps() (several
steps at once, ragged too), autocast and torch.compile, and the refusals."""

import pytest

torch = pytest.importorskip("torch")
import rnnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402
from rnnx import _torch_ops  # noqa: E402

if _torch_ops.AVAILABLE:
    import torch._dynamo  # noqa: E402

CELLS = ["LSTMCell", "GRUCell", "RNNCell"]


def pair(name, I=3, H=5, bias=True, **kw):
    torch.manual_seed(1)
    ref = getattr(torch.nn, name)(I, H, bias=bias, **kw).double()
    ours = getattr(rt, name)(I, H, bias=bias, **kw).double()
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def state(name, shape, requires_grad=False):
    def one():
        return torch.randn(*shape, dtype=torch.float64, requires_grad=requires_grad)
    return (one(), one()) if name == "LSTMCell" else one()


def flat(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_nn_with_every_gradient(name, batched, with_state, bias):
    ref, ours = pair(name, bias=bias)
    shape = (4, 3) if batched else (3,)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    hx = state(name, (4, 5) if batched else (5,), requires_grad=True) if with_state else None
    want, got = flat(ref(x, hx)), flat(ours(x, hx))
    for w, g in zip(want, got):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
    seeds = [torch.randn_like(w) for w in want]
    inputs = [x] + (flat(hx) if with_state else [])
    gw = torch.autograd.grad(want, inputs + list(ref.parameters()), seeds)
    gg = torch.autograd.grad(got, inputs + list(ours.parameters()), seeds)
    for w, g in zip(gw, gg):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("grad", [False, True])
def test_a_decoder_loop_matches_torch_nn_step_after_step(name, grad):
    """Step-wise decoding: the state fed back for several steps, the cell's cached call (the
    part's remembered plan) taken from the second step on; every step's state, and with
    autograd every gradient through the whole loop, equal torch.nn's. A parameter replaced
    in between ends the cached call and stays right."""
    ref, ours = pair(name)
    xs = torch.randn(6, 4, 3, dtype=torch.float64, requires_grad=grad)

    def loop(m):
        h = state(name, (4, 5))
        outs = []
        with torch.set_grad_enabled(grad):
            for t in range(xs.shape[0]):
                if t == 4:  # a new parameter tensor mid-loop, the same values
                    m.weight_hh = torch.nn.Parameter(m.weight_hh.detach().clone())
                h = m(xs[t], h)
                outs += flat(h)
        return outs

    torch.manual_seed(2)
    want = loop(ref)
    torch.manual_seed(2)
    got = loop(ours)
    if _torch_ops.AVAILABLE:  # the cached calls live on the operators' path (PyTorch 2.4+)
        assert "_rnnx_fast" in ours._rnnx_seq.__dict__, "the part remembered the step"
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
    if grad:
        seeds = [torch.randn_like(w) for w in want]
        gw = torch.autograd.grad(want, [xs, *ref.parameters()], seeds)
        gg = torch.autograd.grad(got, [xs, *ours.parameters()], seeds)
        for w, g in zip(gw, gg):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("grad", [False, True])
def test_a_step_after_steps_is_one_step(name, grad):
    """steps() remembers a call of several steps on the part; a step of the same batch after
    it must not take that call (it would read T steps of a one-step input)."""
    ref, ours = pair(name)
    xs = torch.randn(6, 4, 3, dtype=torch.float64, requires_grad=grad)
    hx = state(name, (4, 5))
    with torch.set_grad_enabled(grad):
        for _ in range(2):  # the second steps() is the cached call
            ours.steps(xs, hx)
        for t in range(3):
            got, want = flat(ours(xs[t], hx)), flat(ref(xs[t], hx))
            for w, g in zip(want, got):
                torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
def test_cached_training_steps_give_each_wanted_gradient(name):
    """The cached training call's backward (its own, not the operator's) for every choice of
    what needs a gradient: the input, the state, the parameters (frozen or not), against
    torch.nn's, from the second call on."""
    ref, ours = pair(name)
    for need_x, need_h, need_w in [(True, True, True), (False, True, False),
                                   (True, False, False), (False, False, True)]:
        for m in (ref, ours):
            m.requires_grad_(need_w)
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=need_x)
        hx = state(name, (4, 5), requires_grad=need_h)
        inputs = ([x] if need_x else []) + (flat(hx) if need_h else [])
        for _ in range(3):
            want, got = flat(ref(x, hx)), flat(ours(x, hx))
            seeds = [torch.randn_like(w) for w in want]
            gw = torch.autograd.grad(want, inputs + (list(ref.parameters()) if need_w else []),
                                     seeds)
            gg = torch.autograd.grad(got, inputs + (list(ours.parameters()) if need_w else []),
                                     seeds)
            for w, g in zip(gw, gg):
                torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
        if _torch_ops.AVAILABLE:
            assert "training" in ours._rnnx_seq.__dict__["_rnnx_fast"]


@pytest.mark.skipif(not _torch_ops.AVAILABLE, reason="double backward and is_grads_batched "
                    "run on the operators (PyTorch 2.4+)")
@pytest.mark.parametrize("name", CELLS)
def test_cached_steps_give_gradients_of_gradients_and_batched_gradients(name):
    """The cached training step's backward hands a graph of the gradients
    (create_graph=True) and is_grads_batched to the operator's general backward: both as
    torch.nn's cells give them, from the second step on."""
    ref, ours = pair(name)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    hx = state(name, (4, 5), requires_grad=True)
    inputs = [x] + flat(hx)
    for step in range(3):
        want, got = flat(ref(x, hx)), flat(ours(x, hx))
        if step == 0:
            continue
        gw = torch.autograd.grad(sum(w.pow(2).sum() for w in want),
                                 inputs + list(ref.parameters()), create_graph=True)
        gg = torch.autograd.grad(sum(g.pow(2).sum() for g in got),
                                 inputs + list(ours.parameters()), create_graph=True)
        for w, g in zip(gw, gg):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-10)
        hw = torch.autograd.grad(sum(w.sin().sum() for w in gw), [x, ref.weight_hh])
        hg = torch.autograd.grad(sum(g.sin().sum() for g in gg), [x, ours.weight_hh])
        for w, g in zip(hw, hg):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-10)
    assert "training" in ours._rnnx_seq.__dict__["_rnnx_fast"]
    eye = torch.eye(20, dtype=torch.float64).view(20, 4, 5)
    want = torch.autograd.grad(flat(ref(x, hx))[0], [x, *ref.parameters()], eye,
                               is_grads_batched=True)
    got = torch.autograd.grad(flat(ours(x, hx))[0], [x, *ours.parameters()], eye,
                              is_grads_batched=True)
    for w, g in zip(want, got):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
def test_concurrent_cached_steps_match_one_caller(name):
    """Threads stepping one cell at once through its cached inference call (workspaces of
    the call's own, one per caller at a time) get what one caller gets."""
    import threading
    _, ours = pair(name, I=8, H=32)
    ours.eval()
    xs = [torch.randn(3, 8, dtype=torch.float64) for _ in range(4)]
    with torch.no_grad():
        ours(xs[0])
        want = [[flat(ours(x)) for _ in range(50)] for x in xs]
    got = [None] * len(xs)

    def run(i):
        with torch.no_grad():
            got[i] = [flat(ours(xs[i])) for _ in range(50)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w_calls, g_calls in zip(want, got):
        for w, g in zip(w_calls, g_calls):
            for a, b in zip(w, g):
                assert torch.equal(a, b)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_nonlinearity(nonlinearity):
    ref, ours = pair("RNNCell", nonlinearity=nonlinearity)
    x = torch.randn(4, 3, dtype=torch.float64)
    torch.testing.assert_close(ours(x), ref(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
def test_parameters_and_state_dict_are_torch_nn_s(name):
    ref, ours = pair(name)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert list(ours.state_dict()) == list(ref.state_dict())
    back = getattr(torch.nn, name)(3, 5).double()
    back.load_state_dict(ours.state_dict())
    x = torch.randn(2, 3, dtype=torch.float64)
    for w, g in zip(flat(back(x)), flat(ours(x))):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
def test_new_weights_give_new_results(name):
    ref, ours = pair(name)
    x = torch.randn(2, 3, dtype=torch.float64)
    with torch.no_grad():
        ours(x)  # the cached inference call
        for p, q in zip(ref.parameters(), ours.parameters()):
            p.mul_(1.5)
            q.mul_(1.5)  # in place
        for w, g in zip(flat(ref(x)), flat(ours(x))):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
        ours.weight_hh = torch.nn.Parameter(ref.weight_hh.detach() * 0.5)  # replaced
        ref.weight_hh = torch.nn.Parameter(ref.weight_hh.detach() * 0.5)
        for w, g in zip(flat(ref(x)), flat(ours(x))):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
    if "assign" in torch.nn.Module.load_state_dict.__code__.co_varnames:
        fresh = getattr(rt, name)(3, 5).double()
        fresh.load_state_dict(ref.state_dict(), assign=True)
        for w, g in zip(flat(ref(x)), flat(fresh(x))):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELLS)
def test_moves_between_dtypes_and_from_meta(name):
    ref, ours = pair(name)
    x = torch.randn(2, 3)
    ours.float()
    ref.float()
    for w, g in zip(flat(ref(x)), flat(ours(x))):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
    meta = getattr(rt, name)(3, 5, device="meta")
    empty = meta.to_empty(device="cpu")
    empty.load_state_dict(ref.state_dict())
    for w, g in zip(flat(ref(x)), flat(empty(x))):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CELLS)
def test_steps_are_the_cell_called_step_by_step(name):
    _, ours = pair(name)
    T, B = 6, 4
    xs = torch.randn(T, B, 3, dtype=torch.float64)
    hx = state(name, (B, 5))
    y, last = ours.steps(xs, hx)
    s = hx
    outs = []
    for t in range(T):
        s = ours(xs[t], s)
        outs.append(flat(s)[0])
    torch.testing.assert_close(y, torch.stack(outs), rtol=0, atol=1e-12)
    for w, g in zip(flat(s), flat(last)):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-12)
    # Ragged: each sequence's state after its own last step, zeros past it.
    lengths = [6, 0, 3, 1]
    y, last = ours.steps(xs, hx, lengths=lengths)
    for b, n in enumerate(lengths):
        s = tuple(t[b] for t in hx) if name == "LSTMCell" else hx[b]
        for t in range(n):
            s = ours(xs[t, b], s)
        for w, g in zip(flat(s), flat(last)):
            torch.testing.assert_close(g[b], w, rtol=0, atol=1e-12)
        assert torch.all(y[n:, b] == 0)
    # Unbatched: (T, input_size).
    y1, _ = ours.steps(xs[:, 0], tuple(t[0] for t in hx) if name == "LSTMCell" else hx[0])
    torch.testing.assert_close(y1, ours.steps(xs[:, :1], tuple(t[:1] for t in hx)
                                              if name == "LSTMCell" else hx[:1])[0][:, 0])


@pytest.mark.parametrize("name", CELLS)
def test_autocast_bfloat16(name):
    _, ours = pair(name)
    ours.float()
    x = torch.randn(2, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = flat(ours(x))
    assert all(o.dtype == torch.bfloat16 for o in out)
    for w, g in zip(flat(ours(x)), out):
        torch.testing.assert_close(g.float(), w, rtol=0.05, atol=0.05)


@pytest.mark.skipif(not _torch_ops.AVAILABLE, reason="torch.compile of rnnx's operators needs "
                    "PyTorch 2.4 or later")
@pytest.mark.parametrize("name", CELLS)
def test_compiles_fullgraph(name):
    _, ours = pair(name)
    x = torch.randn(2, 3, dtype=torch.float64)
    hx = state(name, (2, 5))
    # Dynamo stops at every torch.nn.RNNBase subclass unless allow_rnn is set (docs/python.md);
    # a cell runs one step of one.
    with torch._dynamo.config.patch(allow_rnn=True):
        compiled = torch.compile(ours, fullgraph=True, backend="aot_eager")
        got = flat(compiled(x, hx))
    for w, g in zip(flat(ours(x, hx)), got):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("name", CELLS)
def test_refusals_name_the_argument(name):
    _, ours = pair(name)
    with pytest.raises(rnnx.InvalidArgumentError, match="Expected input to be 1D or 2D"):
        ours(torch.randn(1, 2, 3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0"):
        ours(torch.randn(2, 3, dtype=torch.float64), state(name, (5,)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4"):
        ours(torch.randn(2, 4, dtype=torch.float64))
    with pytest.raises(rnnx.InvalidArgumentError, match="steps: input must be 3-D"):
        ours.steps(torch.randn(3, dtype=torch.float64))
    if name == "LSTMCell":
        with pytest.raises(rnnx.InvalidArgumentError, match="tuple"):
            ours(torch.randn(2, 3, dtype=torch.float64), torch.zeros(2, 5, dtype=torch.float64))


@pytest.mark.parametrize("name", CELLS)
def test_copies_and_pickles(name):
    import copy
    import pickle
    _, ours = pair(name)
    x = torch.randn(2, 3, dtype=torch.float64)
    for other in (copy.deepcopy(ours), pickle.loads(pickle.dumps(ours))):
        assert [n for n, _ in other.named_parameters()] == [n for n, _ in ours.named_parameters()]
        for w, g in zip(flat(ours(x)), flat(other(x))):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        with torch.no_grad():
            other.weight_ih.mul_(2)  # its own parameters, not the original's
        assert not torch.equal(flat(other(x))[0], flat(ours(x))[0])


def test_cached_gradient_views_take_torch_s_strides_and_check_their_sizes():
    """The cached backward's per-parameter views of the flat gradient (_weight_grads): each
    in its parameter's shape with the strides torch gives a contiguous tensor of it (empty
    dimensions included), at its place in the flat buffer; sizes that do not add up to the
    flat gradient's are refused, not silently viewed."""
    weights = [torch.empty(3, 4), torch.empty(4, 0), torch.empty(0, 2), torch.empty(5)]
    flat = torch.arange(40.0)[7:]  # a view with a storage offset, as large as the four
    grads = _torch_ops._weight_grads(flat[:sum(w.numel() for w in weights)], weights)
    for g, w in zip(grads, weights):
        assert g.shape == w.shape and g.stride() == w.stride()
    assert torch.equal(grads[0].reshape(-1), flat[:12])
    assert torch.equal(grads[3], flat[12:17])
    with pytest.raises(rnnx.InternalError, match="hold 17 elements, the flat gradient 20"):
        _torch_ops._weight_grads(flat[:20], weights)
