"""rnnx.torch through PyTorch 2's compilers: torch.ops.rnnx.forward/backward are dispatcher
operators with fake kernels and autograd (python/rnnx/_torch_ops.py), so torch.compile
traces a model around an rnnx LSTM/GRU/RNN in one graph (fullgraph=True, with Dynamo's
allow_rnn, docs/python.md says why) and torch.export exports it, padded and with lengths=,
and both give eager's answers on new inputs. PyTorch 2.4 or later (torch.library's fake and
autograd registration); older ones skip, saying so."""

import pytest

torch = pytest.importorskip("torch")
import rnnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402
from rnnx import _torch_ops  # noqa: E402

if not _torch_ops.AVAILABLE:
    pytest.skip(f"torch.library's fake and autograd registration are newer than PyTorch "
                f"{torch.__version__} (2.4+); rnnx.torch runs through an autograd.Function "
                "there", allow_module_level=True)

import torch._dynamo  # noqa: E402

CELLS = {"LSTM": rt.LSTM, "GRU": rt.GRU, "RNN": rt.RNN}


class Model(torch.nn.Module):
    """Embedding -> rnnx recurrent module (2 layers) -> Linear: the issue's shape."""

    def __init__(self, cell="LSTM", **kw):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.rnn = CELLS[cell](8, 16, num_layers=2, **kw)
        self.out = torch.nn.Linear(16 * (2 if kw.get("bidirectional") else 1), 20)

    def forward(self, tok, lengths=None):
        y, _ = self.rnn(self.emb(tok), lengths=lengths)
        return self.out(y)


@pytest.fixture(autouse=True)
def _dynamo():
    torch.manual_seed(0)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_rnn=True):
        yield
    torch._dynamo.reset()


def inputs(T=7, B=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(0, 20, (T, B), generator=g)
    lengths = torch.randint(0, T + 1, (B,), generator=g)
    lengths[0] = T
    return tok, lengths


def grads(m):
    return {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("train", [False, True])
def test_compile_fullgraph_one_graph_same_answers(cell, with_lengths, train):
    m = Model(cell, bidirectional=(cell == "GRU")).train(train)
    tok, lengths = inputs()
    args = (tok, lengths) if with_lengths else (tok,)
    explained = torch._dynamo.explain(m)(*args)
    assert explained.graph_break_count == 0, [str(b.reason) for b in explained.break_reasons]
    assert explained.graph_count == 1
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    for seed in (1, 2):  # new values, same shapes: no retrace needed, same answers
        tok, lengths = inputs(seed=seed)
        args = (tok, lengths) if with_lengths else (tok,)
        want = m(*args)
        got = compiled(*args)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        if train:
            m.zero_grad()
            want.square().sum().backward()
            expected = grads(m)
            m.zero_grad()
            got.square().sum().backward()
            for n, g in grads(m).items():
                torch.testing.assert_close(g, expected[n], rtol=0, atol=0, msg=f"d{n}")


def test_compile_with_inductor_matches_eager():
    m = Model("LSTM")
    tok, lengths = inputs()
    want = m(tok, lengths)
    got = torch.compile(m, fullgraph=True)(tok, lengths)
    torch.testing.assert_close(got, want)
    got.sum().backward()


def test_dropout_masks_under_compile_follow_eager():
    eager = Model("LSTM", dropout=0.5, seed=7)
    twin = Model("LSTM", dropout=0.5, seed=7)
    twin.load_state_dict(eager.state_dict())
    compiled = torch.compile(twin, fullgraph=True, backend="aot_eager")
    for seed in (1, 2, 3):
        tok, lengths = inputs(seed=seed)
        torch.testing.assert_close(compiled(tok, lengths), eager(tok, lengths), rtol=0, atol=0)
    assert twin.rnn.dropout_calls == eager.rnn.dropout_calls == 3


def test_without_allow_rnn_dynamo_breaks_the_graph_and_says_why():
    """Dynamo refuses every subclass of torch.nn.LSTM/GRU/RNN unless allow_rnn is set (its
    own modules too); rnnx's modules are such subclasses (drop-in: isinstance, state_dict)."""
    m = Model("LSTM").eval()
    tok, _ = inputs()
    with torch._dynamo.config.patch(allow_rnn=False):
        explained = torch._dynamo.explain(m)(tok)
    if explained.graph_break_count:
        assert any("allow_rnn" in str(b.reason) for b in explained.break_reasons)


@pytest.mark.parametrize("cell", list(CELLS))
def test_export_padded_and_with_lengths(cell):
    m = Model(cell).eval()
    tok, lengths = inputs()
    with torch.no_grad():
        padded = torch.export.export(m, (tok,))
        ragged = torch.export.export(m, (tok, lengths))
    ops = {str(n.target) for n in ragged.graph.nodes if n.op == "call_function"}
    assert "rnnx.forward.default" in ops, ops
    for seed in (1, 2):
        tok, lengths = inputs(seed=seed)
        with torch.no_grad():
            torch.testing.assert_close(padded.module()(tok), m(tok), rtol=0, atol=0)
            torch.testing.assert_close(ragged.module()(tok, lengths), m(tok, lengths),
                                       rtol=0, atol=0)


def test_opcheck_forward_and_backward_registrations():
    """PyTorch's own check of a custom operator: schema, fake kernel against the real one,
    autograd registration, and AOT dispatch."""
    m = rt.LSTM(4, 5, dtype=torch.float64)
    text = m._rnnx_op_config(torch.float64, 0.0)
    for lengths in (None, torch.tensor([3, 1])):
        for training in (False, True):  # inference: nothing requires grad
            x = torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=training)
            h0 = torch.randn(1, 2, 5, dtype=torch.float64, requires_grad=training)
            weights = [getattr(m, n).detach().clone().requires_grad_(training)
                       for n in m._flat_weights_names]
            # static_reserve: as the modules call it under torch.compile and torch.export
            # (eager calls leave the reserve's unused bytes unwritten, which opcheck's
            # comparison of outputs would flag).
            args = (x, h0, None, weights, lengths, None, None, text, m._rnnx_engines.id,
                    "cpu", 0, False, training, 0, True)
            torch.library.opcheck(torch.ops.rnnx.forward.default, args)


def test_backward_of_an_inference_call_is_refused():
    m = rt.LSTM(4, 5)
    x = torch.randn(3, 2, 4, requires_grad=True)
    weights = [getattr(m, n) for n in m._flat_weights_names]
    y, *_ = torch.ops.rnnx.forward(x, None, None, weights, None, None, None,
                                   m._rnnx_op_config(torch.float32, 0.0), m._rnnx_engines.id,
                                   "cpu", 0, False, False, 0, False)
    with pytest.raises(Exception, match="training=False"):
        y.sum().backward()


def test_a_failed_call_reports_rnnx_s_error():
    m = rt.LSTM(4, 5)
    x = torch.randn(3, 2, 4)
    with pytest.raises(Exception, match="lengths"):
        m(x, lengths=torch.tensor([4, 1]))  # longer than T


def test_eager_training_reuses_the_reserve():
    """A CPU reserve above 64 KiB comes from the engine's pool and goes back when autograd
    frees it: steps after the first reuse one buffer instead of mapping a fresh one each
    time. Smaller ones come from PyTorch's allocator, which keeps small blocks itself."""
    from rnnx import _torch_ops
    m = rt.LSTM(64, 256)
    x = torch.randn(20, 8, 64, requires_grad=True)
    pool = m._rnnx_engines.cpu.reserves
    seen = set()
    for _ in range(10):
        y, _ = m(x)
        y.sum().backward()
        seen.update(id(b) for b in pool._free)
    assert len(pool._free) == 1 and len(seen) == 1, (len(pool._free), len(seen))
    assert pool._free[0].nbytes > _torch_ops._POOLED_RESERVE_BYTES
    small = rt.LSTM(8, 16)
    for _ in range(3):
        y, _ = small(torch.randn(5, 3, 8, requires_grad=True))
        y.sum().backward()
    assert small._rnnx_engines.cpu.reserves._free == []


def test_operator_argument_errors_name_the_argument():
    m = rt.LSTM(4, 5)
    x = torch.randn(3, 2, 4)
    weights = [getattr(m, n).detach() for n in m._flat_weights_names]
    text = m._rnnx_op_config(torch.float32, 0.0)

    def forward(ws, training=False):
        return torch.ops.rnnx.forward(x, None, None, ws, None, None, None, text,
                                      m._rnnx_engines.id, "cpu", 0, False, training, 0, False)

    with pytest.raises(rnnx.InvalidArgumentError, match="weights: 3 tensors given.*has 4"):
        forward(weights[:3])
    y, hy, cy, reserve = forward(weights, training=True)
    with pytest.raises(rnnx.InvalidArgumentError, match="reserve has 0 bytes"):
        torch.ops.rnnx.backward(x, None, None, weights, None, None, None, text,
                                m._rnnx_engines.id, "cpu", 0, False, reserve[:0],
                                torch.ones_like(y), None, None, [True, False, False, True])
    dx, _, _, dw = torch.ops.rnnx.backward(x, None, None, weights, None, None, None, text,
                                           m._rnnx_engines.id, "cpu", 0, False, reserve,
                                           torch.ones_like(y), None, None,
                                           [True, False, False, True])
    assert dx.shape == x.shape and dw.numel() == sum(w.numel() for w in weights)


def test_operator_checks_each_operand_against_the_plan():
    """The CPU kernel hands rnnx its tensors by address: an x, h_0 or c_0 whose size, dtype
    or device disagrees with the plan the config and x's shape make is refused by name
    before rnnx reads it."""
    m = rt.LSTM(4, 5)
    x = torch.randn(3, 2, 4)
    weights = [getattr(m, n).detach() for n in m._flat_weights_names]
    text = m._rnnx_op_config(torch.float32, 0.0)

    def forward(x, hx=None, cx=None):
        return torch.ops.rnnx.forward(x, hx, cx, weights, None, None, None, text,
                                      m._rnnx_engines.id, "cpu", 0, False, False, 0, False)

    forward(x, torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"hx is \(1, 3, 5\).*needs 10 elements"):
        forward(x, torch.zeros(1, 3, 5))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"cx is \(1, 2, 4\)"):
        forward(x, None, torch.zeros(1, 2, 4))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"hx .*torch.float64"):
        forward(x, torch.zeros(1, 2, 5, dtype=torch.float64))
    with pytest.raises(rnnx.InvalidArgumentError, match=r"x is \(3, 2, 4\) torch.float64"):
        forward(x.double())
