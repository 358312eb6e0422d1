"""Double backward (create_graph=True) through rnnx.torch's modules against torch.nn's in
float64: a gradient penalty's gradients for every option torch.nn has (cells, layers,
directions, projection, no bias, batch_first, lengths, packed input with states),
gradgradcheck; rnnx's own options (clips, peepholes, ONNX's activations, ...) against the
kernels' first derivative and by gradgradcheck; training dropout refused by name. The
operators' path (PyTorch 2.4+); before it, and inside torch.func's transforms, a second
derivative is refused by name."""

import pytest

torch = pytest.importorskip("torch")
import rnnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402
from rnnx import _torch_ops  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

pytestmark = pytest.mark.skipif(not _torch_ops.AVAILABLE,
                                reason="double backward runs on the operators (PyTorch 2.4+)")

CASES = [
    ("LSTM", {}), ("LSTM", dict(proj_size=2)), ("GRU", {}), ("RNN", {}),
    ("RNN", dict(nonlinearity="relu")), ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)), ("RNN", dict(bias=False)),
    ("LSTM", dict(num_layers=2, proj_size=3, bidirectional=True)),
]


def pair(cls, **kw):
    torch.manual_seed(3)
    ref = getattr(torch.nn, cls)(3, 4, **kw).double()
    ours = getattr(rt, cls)(3, 4, **kw).double()
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def close(got, want, what):
    scale = max(1.0, want.abs().max().item())
    err = (got - want).abs().max().item()
    assert err <= 1e-12 * scale, f"{what}: max error {err} (scale {scale})"


def penalty_grads(m, inputs, run):
    """d/d(inputs) of |d loss / d(inputs)|^2, loss = run(m): a second derivative."""
    loss = run(m)
    g = torch.autograd.grad(loss, inputs(m), create_graph=True)
    return torch.autograd.grad(sum(t.pow(2).sum() for t in g), inputs(m))


@pytest.mark.parametrize("cls,kw", CASES)
def test_gradient_penalty_matches_torch_nn(cls, kw):
    ref, ours = pair(cls, **kw)
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)

    def run(m):
        y, h = m(x)
        hh = h[0] if isinstance(h, tuple) else h
        return y.pow(2).sum() + hh.sin().sum()

    def inputs(m):
        return [x, *m.parameters()]

    for (name, _), got, want in zip([("x", None), *ours.named_parameters()],
                                    penalty_grads(ours, inputs, run),
                                    penalty_grads(ref, inputs, run)):
        close(got, want, f"{cls} {kw} d/d{name}")


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_packed_input_with_states(cls):
    ref, ours = pair(cls, num_layers=2, bidirectional=True)
    x = torch.randn(5, 3, 3, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(4, 3, 4, dtype=torch.float64, requires_grad=True)
    hx = (h0, torch.randn(4, 3, 4, dtype=torch.float64)) if cls == "LSTM" else h0

    def run(m):
        y, h = m(pack_padded_sequence(x, [3, 5, 2], enforce_sorted=False), hx)
        hh = h[0] if isinstance(h, tuple) else h
        return y.data.pow(2).sum() + hh.pow(3).sum()

    def inputs(m):
        return [x, h0, *m.parameters()]

    for got, want in zip(penalty_grads(ours, inputs, run), penalty_grads(ref, inputs, run)):
        close(got, want, f"{cls} packed")


def test_lengths_match_each_sequence_alone():
    ref, ours = pair("LSTM", num_layers=2, bidirectional=True)
    x = torch.randn(5, 3, 3, dtype=torch.float64, requires_grad=True)
    lengths = [5, 2, 0]
    y = ours(x, lengths=torch.tensor(lengths))[0]
    g = torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)[0]
    got = torch.autograd.grad(g.pow(2).sum(), x)[0]
    total = 0
    for b, n in enumerate(lengths):  # disjoint columns: the squares add up
        if n:
            gb = torch.autograd.grad(ref(x[:n, b:b + 1])[0].pow(2).sum(), x, create_graph=True)[0]
            total = total + gb.pow(2).sum()
    close(got, torch.autograd.grad(total, x)[0], "lengths")


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_gradgradcheck(cls):
    _, ours = pair(cls, num_layers=2)
    x = torch.randn(3, 2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda xx: ours(xx)[0], (x,))


RNNX_OPTIONS = [
    ("LSTM", dict(cell_clip=(-0.3, 0.3))), ("LSTM", dict(proj_size=2, proj_clip=(-0.2, 0.2))),
    ("LSTM", dict(peephole=True)), ("LSTM", dict(input_forget=True, reverse=True)),
    ("LSTM", dict(cell_clip=(-0.3, 0.3), clip_nan="replace", bidirectional=True)),
    ("GRU", dict(gru_linear_before_reset=False)), ("RNN", dict(gate_clip=0.4)),
    ("GRU", dict(activations=["HardSigmoid", "Softsign"], bidirectional=True)),
    ("LSTM", dict(activations=[("LeakyRelu", 0.1), "Softplus", ("ScaledTanh", 0.8, 1.2)])),
    ("RNN", dict(activations=[("Affine", 0.5, 0.1)])),
]


def _rnnx_only(cls, kw):
    torch.manual_seed(5)
    return getattr(rt, cls)(3, 4, **kw).double()


@pytest.mark.parametrize("cls,kw", RNNX_OPTIONS, ids=lambda v: str(v))
def test_rnnx_options_first_derivative_matches_the_kernels(cls, kw):
    """The tensor recurrence's first derivative (create_graph=True) equals the kernels' own
    (no graph) for rnnx's options: both are the same equations."""
    m = _rnnx_only(cls, kw)
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([5, 3])

    def grads(create_graph):
        y, h = m(x, lengths=lengths)
        hh = h[0] if isinstance(h, tuple) else h
        loss = y.pow(2).sum() + hh.sin().sum()
        return torch.autograd.grad(loss, [x, *m.parameters()], create_graph=create_graph)

    for got, want in zip(grads(True), grads(False)):
        close(got.detach(), want, f"{cls} {kw}")


@pytest.mark.parametrize("cls,kw", RNNX_OPTIONS, ids=lambda v: str(v))
def test_rnnx_options_gradgradcheck(cls, kw):
    m = _rnnx_only(cls, kw)
    x = torch.randn(3, 2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda xx: m(xx, lengths=torch.tensor([3, 2]))[0], (x,))


def test_training_dropout_is_refused_by_name():
    m = rt.LSTM(3, 4, num_layers=2, dropout=0.5).double().train()
    x = torch.randn(2, 1, 3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(rnnx.UnsupportedError, match="dropout"):
        torch.autograd.grad(m(x)[0].sum(), x, create_graph=True)
