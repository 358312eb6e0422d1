"""ONNX's cell options through the Python package (peephole, input_forget, clip, reverse,
activations with activation_alpha/activation_beta, on LSTM, GRU and RNN): forward against a
transcription of ONNX's operator equations written in ONNX's own layout and gate orders,
backward against autograd of the same transcription in torch (when PyTorch is there) and
against central differences of rnnx's own forward (always), plus the error cases, the
automatic choice of backend, round trips and the drop-in torch modules."""

import collections

import numpy as np
import pytest

import rnnx
from conftest import assert_near, tolerance

try:
    import torch
except ImportError:  # the autograd comparison skips; everything else runs on NumPy
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
CLASSES = {"LSTM": rnnx.LSTM, "GRU": rnnx.GRU, "RNN": rnnx.RNN}


# ---- ONNX's equations, for NumPy arrays or torch tensors (xp = np or torch) -------------

def activation(xp, name, alpha, beta):
    """ONNX's activation functions (operator docs of LSTM/GRU/RNN)."""
    fns = {
        "Sigmoid": lambda v: 1.0 / (1.0 + xp.exp(-v)),
        "Tanh": lambda v: xp.tanh(v),
        "Relu": lambda v: xp.where(v > 0, v, 0 * v),
        "Affine": lambda v: alpha * v + beta,
        "LeakyRelu": lambda v: xp.where(v >= 0, v, alpha * v),
        "ThresholdedRelu": lambda v: xp.where(v > alpha, v, 0 * v),
        "ScaledTanh": lambda v: alpha * xp.tanh(beta * v),
        "HardSigmoid": lambda v: xp.clip(alpha * v + beta, 0.0, 1.0),
        "Elu": lambda v: xp.where(v >= 0, v, alpha * (xp.exp(v) - 1.0)),
        "Softsign": lambda v: v / (1.0 + xp.abs(v)),
        "Softplus": lambda v: xp.log(1.0 + xp.exp(v)),
    }
    return fns[name]


def onnx_equations(xp, op, X, W, R, B, P, h0, c0, mask, directions, acts, clip=None,
                   input_forget=False, linear_before_reset=False):
    """ONNX LSTM/GRU/RNN, layout 0. X [T, B, I]; W, R, B, P in ONNX's layout and gate
    orders (LSTM i, o, f, c; GRU z, r, h; peepholes i, o, f); h0, c0 [D, B, H]; mask
    [T, B, 1] is 1 where t < sequence_lens[b]; directions: 'forward'/'reverse' per
    direction; acts[d]: that direction's (name, alpha, beta) list. Past a sequence's end
    the state is kept and Y is 0. Returns Y [T, D, B, H], Y_h, Y_c [D, B, H] (Y_c None
    unless LSTM)."""
    T, H = X.shape[0], R.shape[-1]
    G = GATES[op]
    cl = (lambda v: xp.clip(v, -clip, clip)) if clip else (lambda v: v)
    Ys, Yh, Yc = [], [], []
    for d, direction in enumerate(directions):
        fns = [activation(xp, *a) for a in acts[d]]
        Wb, Rb = B[d, :G * H], B[d, G * H:]
        h = h0[d]
        c = c0[d] if op == "LSTM" else None
        out = [None] * T
        for t in (range(T) if direction == "forward" else range(T - 1, -1, -1)):
            m = mask[t]
            xw = X[t] @ W[d].T + Wb
            if op == "LSTM":
                f, g, hf = fns
                a = xw + h @ R[d].T + Rb
                ai, ao, af, ac = (a[:, k * H:(k + 1) * H] for k in range(4))
                pi, po, pf = ((P[d, k * H:(k + 1) * H] for k in range(3)) if P is not None
                              else (0.0, 0.0, 0.0))
                i = f(cl(ai + pi * c))
                fg = 1.0 - i if input_forget else f(cl(af + pf * c))
                cn = fg * c + i * g(cl(ac))
                o = f(cl(ao + po * cn))
                hn = o * hf(cn)
                c = m * cn + (1 - m) * c
            elif op == "GRU":
                f, g = fns
                Rz, Rr, Rh = (R[d][k * H:(k + 1) * H] for k in range(3))
                Rbz, Rbr, Rbh = (Rb[k * H:(k + 1) * H] for k in range(3))
                z = f(cl(xw[:, :H] + h @ Rz.T + Rbz))
                r = f(cl(xw[:, H:2 * H] + h @ Rr.T + Rbr))
                if linear_before_reset:
                    n = g(cl(xw[:, 2 * H:] + r * (h @ Rh.T + Rbh)))
                else:
                    n = g(cl(xw[:, 2 * H:] + (r * h) @ Rh.T + Rbh))
                hn = (1.0 - z) * n + z * h
            else:
                hn = fns[0](cl(xw + h @ R[d].T + Rb))
            out[t] = m * hn
            h = m * hn + (1 - m) * h
        Ys.append(xp.stack(out))
        Yh.append(h)
        Yc.append(c)
    Y = xp.stack(Ys, 1)
    return Y, xp.stack(Yh), (xp.stack(Yc) if op == "LSTM" else None)


# ---- the cases ----------------------------------------------------------------------------

Case = collections.namedtuple("Case", "name op attrs peephole lengths")

CASES = [
    Case("lstm_peephole_bidir", "LSTM", dict(direction="bidirectional"), True, [4, 1, 3]),
    Case("lstm_input_forget", "LSTM", dict(input_forget=1), False, [4, 2, 3]),
    Case("lstm_clip", "LSTM", dict(clip=0.6), False, [4, 4, 4]),
    Case("lstm_reverse", "LSTM", dict(direction="reverse"), False, [4, 0, 2]),
    # alpha: HardSigmoid 0.3, ScaledTanh 1.3, Elu 0.7; beta: HardSigmoid 0.45, ScaledTanh 0.8.
    Case("lstm_acts_alpha_beta", "LSTM",
         dict(activations=["HardSigmoid", "ScaledTanh", "Elu"],
              activation_alpha=[0.3, 1.3, 0.7], activation_beta=[0.45, 0.8]), False, [4, 3, 1]),
    # Per direction; alpha: LeakyRelu 0.1, Affine 0.9; beta: Affine 0.2.
    Case("lstm_acts_per_direction", "LSTM",
         dict(direction="bidirectional",
              activations=["Sigmoid", "LeakyRelu", "Tanh", "sigmoid", "softsign", "affine"],
              activation_alpha=[0.1, 0.9], activation_beta=[0.2]), False, [4, 2, 3]),
    Case("lstm_everything", "LSTM",
         dict(direction="reverse", input_forget=1, clip=0.8,
              activations=["HardSigmoid", "Tanh", "Softsign"]), True, [4, 1, 3]),
    Case("gru_acts_clip", "GRU",
         dict(activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.25, 0.05],
              activation_beta=[0.55], clip=0.7), False, [4, 2, 3]),
    Case("gru_lbr_reverse", "GRU", dict(direction="reverse", linear_before_reset=1), False,
         [4, 1, 3]),
    Case("gru_bidir_acts", "GRU",
         dict(direction="bidirectional", activations=["Sigmoid", "Softsign", "HardSigmoid",
                                                      "Tanh"]), False, [4, 3, 2]),
    Case("rnn_scaled_tanh_clip", "RNN",
         dict(activations=["ScaledTanh"], activation_alpha=[1.2], activation_beta=[0.7],
              clip=0.9), False, [4, 2, 3]),
    Case("rnn_reverse_softplus", "RNN", dict(direction="reverse", activations=["Softplus"]), False,
         [4, 1, 0]),
    Case("rnn_bidir_thresholded_elu", "RNN",
         dict(direction="bidirectional", activations=["ThresholdedRelu", "Elu"],
              activation_alpha=[-0.2, 0.5]), False, [4, 2, 3]),
]
IDS = [c.name for c in CASES]
T, BATCH, I, H = 4, 3, 3, 5


def case_data(case):
    """ONNX tensors (float64) and the per-direction activation lists of a case."""
    rng = np.random.default_rng(IDS.index(case.name))
    D = 2 if case.attrs.get("direction") == "bidirectional" else 1
    G = GATES[case.op]
    data = dict(
        W=rng.uniform(-0.6, 0.6, (D, G * H, I)), R=rng.uniform(-0.6, 0.6, (D, G * H, H)),
        B=rng.uniform(-0.6, 0.6, (D, 2 * G * H)),
        P=rng.uniform(-0.6, 0.6, (D, 3 * H)) if case.peephole else None,
        X=rng.standard_normal((T, BATCH, I)), h0=rng.uniform(-0.5, 0.5, (D, BATCH, H)),
        c0=rng.uniform(-0.5, 0.5, (D, BATCH, H)) if case.op == "LSTM" else None)
    return data, D


def build(case, data, **kwargs):
    cls = CLASSES[case.op]
    if case.op == "LSTM":
        return cls.from_onnx(data["W"], data["R"], data["B"], data["P"], **case.attrs, **kwargs)
    return cls.from_onnx(data["W"], data["R"], data["B"], **case.attrs, **kwargs)


def directions(case, D):
    d = case.attrs.get("direction", "forward")
    return ["forward", "reverse"] if D == 2 else [d]


def case_activations(m):
    return [m.config.direction_activations(d) for d in range(m.config.num_directions)]


def mask_of(lengths):
    return (np.arange(T)[:, None] < np.asarray(lengths)[None, :]).astype(np.float64)[..., None]


def reference(case, data, D, acts, dirs=None, **overrides):
    a = dict(case.attrs, **overrides)
    return onnx_equations(np, case.op, data["X"], data["W"], data["R"], data["B"], data["P"],
                          data["h0"], data["c0"], mask_of(case.lengths),
                          dirs or directions(case, D), acts,
                          clip=a.get("clip"), input_forget=bool(a.get("input_forget", 0)),
                          linear_before_reset=bool(a.get("linear_before_reset", 0)))


def run(m, case, data, training=False):
    lstm = case.op == "LSTM"
    hx = (data["h0"], data["c0"]) if lstm else data["h0"]
    y, hy = m.forward(data["X"], lengths=case.lengths, hx=hx, training=training)
    return (y,) + (hy if lstm else (hy,))


def as_onnx_y(y, D):
    return y.reshape(T, BATCH, D, H).transpose(0, 2, 1, 3)


# ---- forward -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_onnx_equations(case):
    data, D = case_data(case)
    m = build(case, data, dtype=np.float64)
    assert m.backend == "cpu" and m.config.uses_onnx_options
    assert m.direction == case.attrs.get("direction", "forward")
    acts = case_activations(m)
    Y, Y_h, Y_c = reference(case, data, D, acts)
    out = run(m, case, data)
    tol = tolerance(m.config, T, BATCH)
    assert_near(as_onnx_y(out[0], D), Y, tol)
    assert_near(out[1], Y_h, tol)
    if case.op == "LSTM":
        assert_near(out[2], Y_c, tol)
    # Every option changes the result: the comparison above is not blind to it.
    plain = dict(clip=None, input_forget=0)
    default_acts = {"LSTM": [("Sigmoid", 0, 0), ("Tanh", 0, 0), ("Tanh", 0, 0)],
                    "GRU": [("Sigmoid", 0, 0), ("Tanh", 0, 0)], "RNN": [("Tanh", 0, 0)]}[case.op]
    without = dict(data, P=None)
    Y0, _, _ = reference(case, without, D, [default_acts] * D, dirs=["forward"] * D, **plain)
    assert np.abs(Y0 - Y).max() > 1e-3


def test_alpha_beta_are_consumed_in_order():
    case = CASES[IDS.index("lstm_acts_alpha_beta")]
    m = build(case, case_data(case)[0])
    assert m.activations == [("HardSigmoid", 0.3, 0.45), ("ScaledTanh", 1.3, 0.8),
                             ("Elu", 0.7, 0.0)]
    case = CASES[IDS.index("lstm_acts_per_direction")]
    m = build(case, case_data(case)[0])
    assert m.config.direction_activations(1) == [("Sigmoid", 0.0, 0.0), ("Softsign", 0.0, 0.0),
                                                 ("Affine", 0.9, 0.2)]
    assert m.config.direction_activations(0)[1] == ("LeakyRelu", 0.1, 0.0)
    # Unset values keep ONNX's defaults.
    acts = rnnx.onnx.onnx_activations(["leakyrelu", "HardSigmoid", "ScaledTanh"], [0.5])
    assert acts == (("LeakyRelu", 0.5, 0.0), ("HardSigmoid", 0.2, 0.5), ("ScaledTanh", 1.0, 1.0))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_constructor_options_equal_from_onnx(case):
    data, D = case_data(case)
    m = build(case, data, dtype=np.float64)
    c = m.config
    kw = dict(reverse=c.reverse, gate_clip=c.gate_clip, activations=c.activations,
              bidirectional=c.bidirectional, dtype=np.float64)
    if case.op == "LSTM":
        kw.update(peephole=c.peephole, input_forget=c.input_forget)
    if case.op == "GRU":
        kw.update(gru_linear_before_reset=c.gru_linear_before_reset)
    n = CLASSES[case.op](I, H, **kw)
    n.load_state_dict(m.state_dict())
    if case.peephole:
        assert m.params["weight_peephole_l0"].shape == (3 * H,)
        # ONNX P is i, o, f; rnnx's peepholes are i, f, o.
        np.testing.assert_array_equal(m.params["weight_peephole_l0"],
                                      data["P"][0][np.r_[0:H, 2 * H:3 * H, H:2 * H]])
    for a, b in zip(run(m, case, data), run(n, case, data)):
        np.testing.assert_array_equal(a, b)


# ---- backward ------------------------------------------------------------------------------

def loss_weights(case, D, seed=99):
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal((T, BATCH, D * H))
    dhy = rng.standard_normal((D, BATCH, H))
    dcy = rng.standard_normal((D, BATCH, H)) if case.op == "LSTM" else None
    return dy, dhy, dcy


def loss(out, dy, dhy, dcy):
    value = np.sum(out[0] * dy) + np.sum(out[1] * dhy)
    return value + (np.sum(out[2] * dcy) if dcy is not None else 0.0)


def rnnx_gradients(m, case, data, dy, dhy, dcy):
    run(m, case, data, training=True)
    res = m.backward(dy, dhy, dcy) if case.op == "LSTM" else m.backward(dy, dhy)
    return res


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_torch_autograd(case):
    data, D = case_data(case)
    m = build(case, data, dtype=np.float64)
    dy, dhy, dcy = loss_weights(case, D)
    res = rnnx_gradients(m, case, data, dy, dhy, dcy)
    dx, dh0, grads = res[0], res[1], res[-1]

    t = {k: (None if v is None else torch.tensor(v, requires_grad=True)) for k, v in data.items()}
    Y, Y_h, Y_c = onnx_equations(
        torch, case.op, t["X"], t["W"], t["R"], t["B"], t["P"], t["h0"], t["c0"],
        torch.tensor(mask_of(case.lengths)), directions(case, D), case_activations(m),
        clip=case.attrs.get("clip"), input_forget=bool(case.attrs.get("input_forget", 0)),
        linear_before_reset=bool(case.attrs.get("linear_before_reset", 0)))
    y = Y.permute(0, 2, 1, 3).reshape(T, BATCH, D * H)
    L = (y * torch.tensor(dy)).sum() + (Y_h * torch.tensor(dhy)).sum()
    if case.op == "LSTM":
        L = L + (Y_c * torch.tensor(dcy)).sum()
    L.backward()
    tol = tolerance(m.config, T, BATCH, backward=True)
    assert_near(dx, t["X"].grad.numpy(), tol)
    assert_near(dh0, t["h0"].grad.numpy(), tol)
    if case.op == "LSTM":
        assert_near(res[2], t["c0"].grad.numpy(), tol)
    # The ONNX-layout gradients, moved to PyTorch names by the same block permutation.
    want = rnnx.onnx_to_state_dict(case.op.lower(), t["W"].grad.numpy(), t["R"].grad.numpy(),
                                   t["B"].grad.numpy(),
                                   None if t["P"] is None else t["P"].grad.numpy())
    assert set(want) == set(grads)
    for name, g in want.items():
        assert_near(grads[name], g, tol, name)
    if case.attrs.get("input_forget"):
        # f = 1 - i: the forget gate's weights (rows H..2H in rnnx's i, f, g, o) get nothing.
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            assert not np.any(grads[name][H:2 * H]), name


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_finite_differences(case):
    """Directional derivatives of the loss along random directions, by central differences
    of rnnx's own forward (no PyTorch needed)."""
    data, D = case_data(case)
    m = build(case, data, dtype=np.float64)
    dy, dhy, dcy = loss_weights(case, D)
    res = rnnx_gradients(m, case, data, dy, dhy, dcy)
    rng = np.random.default_rng(7)
    step = 1e-6
    # Central differences: truncation ~ step^2 * |L'''| and rounding ~ eps * |L| / step
    # (~1e-9 here); 1e-6 relative leaves room for both.
    def check(grad, perturb, shape):
        v = rng.standard_normal(shape)
        plus, minus = perturb(step * v), perturb(-step * v)
        fd = (loss(plus, dy, dhy, dcy) - loss(minus, dy, dhy, dcy)) / (2 * step)
        exact = float(np.sum(grad * v))
        assert abs(fd - exact) <= 1e-6 * max(1.0, abs(exact)), (fd, exact)

    w0 = m.weights.copy()

    def with_weights(dw):
        m.weights[:] = w0 + dw
        out = run(m, case, data)
        m.weights[:] = w0
        return out

    check(m.grad, with_weights, w0.shape)
    check(res[0], lambda dx: run(m, case, dict(data, X=data["X"] + dx)), data["X"].shape)
    check(res[1], lambda dh: run(m, case, dict(data, h0=data["h0"] + dh)), data["h0"].shape)
    if case.op == "LSTM":
        check(res[2], lambda dc: run(m, case, dict(data, c0=data["c0"] + dc)), data["c0"].shape)


# ---- backends, round trips, shapes ------------------------------------------------------------

def test_backend_choice():
    W, R = np.zeros((1, 8, 3)), np.zeros((1, 8, 2))
    # No ONNX-only option: cpu. An all-zero P adds nothing and is dropped.
    m = rnnx.LSTM.from_onnx(W, R, P=np.zeros((1, 6)))
    assert m.backend == "cpu" and not m.config.peephole
    assert "weight_peephole_l0" not in m.state_dict()
    m = rnnx.LSTM.from_onnx(W, R, P=np.zeros((1, 6)), peephole=True)
    assert m.backend == "cpu" and "weight_peephole_l0" in m.state_dict()
    # The default activations, spelled out, are not an ONNX-only option.
    assert rnnx.LSTM(3, 2, activations=["Sigmoid", "TANH", "tanh"]).backend == "cpu"
    # All-Relu RNN activations are torch.nn.RNN's relu cell, which cpu runs.
    m = rnnx.RNN.from_onnx(np.zeros((2, 2, 3)), np.zeros((2, 2, 2)), activations=["Relu", "Relu"])
    assert m.backend == "cpu" and m.nonlinearity == "relu" and m.direction == "bidirectional"
    # The cpu backend runs ONNX's options too; the reference only when asked for.
    assert rnnx.GRU(3, 2, direction="reverse").backend == "cpu"
    assert rnnx.GRU(3, 2, reverse=True, backend="reference").backend == "reference"
    assert rnnx.GRU(3, 2, reverse=True, backend="cpu").backend == "cpu"
    m = rnnx.RNN.from_onnx(np.zeros((1, 2, 3)), np.zeros((1, 2, 2)), clip=1.0, backend="cpu")
    assert m.backend == "cpu" and m.config.gate_clip == 1.0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_onnx_round_trip(case):
    data, D = case_data(case)
    m = build(case, data)
    attrs = m.onnx_attributes()
    tensors = m.to_onnx()
    assert len(tensors) == (4 if case.peephole else 3)
    n = CLASSES[case.op].from_onnx(*tensors, **attrs)
    assert repr(n.config) == repr(m.config)
    np.testing.assert_array_equal(n.weights, m.weights)
    for got, want in zip(tensors, (data["W"], data["R"], data["B"], data["P"])):
        np.testing.assert_array_equal(got, want)


def test_onnx_forward_layout_1():
    case = CASES[IDS.index("lstm_peephole_bidir")]
    data, D = case_data(case)
    m0 = build(case, data, dtype=np.float64)
    m1 = build(case, data, dtype=np.float64, layout=1)
    assert m1.batch_first and m1.onnx_attributes()["layout"] == 1
    Y0, Yh0, Yc0 = m0.onnx_forward(data["X"], case.lengths, data["h0"], data["c0"])
    Y1, Yh1, Yc1 = m1.onnx_forward(data["X"].transpose(1, 0, 2), case.lengths,
                                   data["h0"].transpose(1, 0, 2), data["c0"].transpose(1, 0, 2))
    assert Y0.shape == (T, D, BATCH, H) and Y1.shape == (BATCH, T, D, H)
    assert Yh1.shape == (BATCH, D, H)
    np.testing.assert_array_equal(Y1, Y0.transpose(2, 0, 1, 3))
    np.testing.assert_array_equal(Yh1, Yh0.transpose(1, 0, 2))
    np.testing.assert_array_equal(Yc1, Yc0.transpose(1, 0, 2))
    Y, Y_h, Y_c = reference(case, data, D, case_activations(m0))
    tol = tolerance(m0.config, T, BATCH)
    assert_near(Y0, Y, tol)


def test_onnx_attributes_as_bytes():
    """Attributes read with onnx.helper.get_attribute_value hold bytes for strings."""
    W, R = np.zeros((1, 6, 3)), np.zeros((1, 6, 2))
    m = rnnx.GRU.from_onnx(W, R, direction=b"reverse", activations=[b"HardSigmoid", b"Tanh"],
                           activation_alpha=[0.3], hidden_size=2)
    assert m.reverse and m.activations[0] == ("HardSigmoid", 0.3, 0.5)


# ---- errors ----------------------------------------------------------------------------------

def test_errors():
    W, R = np.zeros((1, 8, 3)), np.zeros((1, 8, 2))
    E = rnnx.InvalidArgumentError
    with pytest.raises(E, match="activation 'Sigmod' is not one of") as e:
        rnnx.LSTM.from_onnx(W, R, activations=["Sigmod", "Tanh", "Tanh"])
    assert e.value.code == "invalid_argument" and "activations[0]" in str(e.value)
    with pytest.raises(E, match="activations has 2 entries; lstm takes 3 per direction"):
        rnnx.LSTM.from_onnx(W, R, activations=["Sigmoid", "Tanh"])
    with pytest.raises(E, match="activations has 3 entries; gru takes 2 per direction"):
        rnnx.GRU(3, 2, bidirectional=True, activations=["Sigmoid", "Tanh", "Sigmoid"])
    with pytest.raises(E, match="activation_alpha has 2 values but the activations take 1"):
        rnnx.LSTM.from_onnx(W, R, activations=["LeakyRelu", "Tanh", "Tanh"],
                            activation_alpha=[0.1, 0.2])
    with pytest.raises(E, match="activation_beta has 1 values but the activations take 0"):
        rnnx.LSTM.from_onnx(W, R, activations=["LeakyRelu", "Tanh", "Tanh"], activation_beta=[1])
    with pytest.raises(E, match="without activations"):
        rnnx.LSTM.from_onnx(W, R, activation_alpha=[1.0])
    with pytest.raises(E, match="activations\\[1\\] has key 'alfa'"):
        rnnx.GRU(3, 2, activations=["Sigmoid", {"name": "Elu", "alfa": 1.0}])
    with pytest.raises(E, match="activations\\[0\\] has 4 items"):
        rnnx.RNN(3, 2, activations=[("Elu", 1.0, 0.0, 2.0)])
    with pytest.raises(E, match="activations must be None or a list"):
        rnnx.RNN(3, 2, activations="Tanh")
    with pytest.raises(E, match="clip \\(= 0\\) must be > 0"):
        rnnx.LSTM.from_onnx(W, R, clip=0)
    with pytest.raises(E, match="gate_clip \\(= -1[.0]*\\) must be >= 0"):
        rnnx.LSTM(3, 2, gate_clip=-1)
    with pytest.raises(E, match="direction 'bidirectional' needs W dim 0 = 2, got 1"):
        rnnx.LSTM.from_onnx(W, R, direction="bidirectional")
    with pytest.raises(E, match="direction 'sideways' is not one of"):
        rnnx.LSTM.from_onnx(W, R, direction="sideways")
    with pytest.raises(E, match="hidden_size \\(= 3\\) must equal R dim 2 \\(= 2\\)"):
        rnnx.LSTM.from_onnx(W, R, hidden_size=3)
    with pytest.raises(E, match="layout \\(= 2\\)"):
        rnnx.LSTM.from_onnx(W, R, layout=2)
    with pytest.raises(E, match="non-zero peepholes but peephole=False"):
        rnnx.LSTM.from_onnx(W, R, P=np.ones((1, 6)), peephole=False)
    with pytest.raises(E, match="cannot be combined with bidirectional"):
        rnnx.LSTM(3, 2, bidirectional=True, reverse=True)
    with pytest.raises(E, match="contradicts"):
        rnnx.LSTM(3, 2, bidirectional=True, direction="forward")
    with pytest.raises(E, match="peephole is only allowed with cell lstm, not gru"):
        rnnx.GRU(3, 2, peephole=True)
    with pytest.raises(E, match="input_forget is only allowed with cell lstm"):
        rnnx.RNN(3, 2, input_forget=True)
    with pytest.raises(E, match="from_onnx: reverse comes from the ONNX"):
        rnnx.LSTM.from_onnx(W, R, reverse=True)
    cfg = rnnx.Config(cell="lstm", input_size=3, hidden_size=3, peephole=True)
    flat = np.zeros(cfg.weights_numel(), np.float32)
    with pytest.raises(E, match="P has shape \\(1, 6\\), expected \\(1, 9\\)"):
        rnnx._rnnx.import_onnx_layer(cfg, 0, np.zeros((1, 12, 3)), np.zeros((1, 12, 3)), None,
                                     np.zeros((1, 6)), flat)
    with pytest.raises(E, match="W has shape \\(1, 12, 2\\), expected \\(1, 12, 3\\)"):
        rnnx._rnnx.import_onnx_layer(cfg, 0, np.zeros((1, 12, 2)), np.zeros((1, 12, 3)), None,
                                     None, flat)
    with pytest.raises(E, match="weights has 3 elements but the plan needs"):
        rnnx._rnnx.import_onnx_layer(cfg, 0, np.zeros((1, 12, 3)), np.zeros((1, 12, 3)),
                                     weights=np.zeros(3, np.float32))


def test_config_options():
    c = rnnx.Config(cell="lstm", input_size=3, hidden_size=4, peephole=True, gate_clip=2.5,
                    input_forget=True, reverse=True,
                    activations=["sigmoid", ("LeakyRelu", 0.2), {"name": "hardsigmoid",
                                                                 "beta": 0.3}])
    assert (c.reverse, c.peephole, c.gate_clip, c.input_forget) == (True, True, 2.5, True)
    assert c.activations == [("Sigmoid", 0.0, 0.0), ("LeakyRelu", 0.2, 0.0),
                             ("HardSigmoid", 0.2, 0.3)]
    assert c.uses_onnx_options
    assert "peephole=True" in repr(c) and "HardSigmoid" in repr(c)
    names = [p.name for p in c.weight_params()]
    assert names[-1] == "weight_peephole_l0"
    assert c.weight_params()[-1].shape == (12,)
    d = rnnx.Config(cell="gru", input_size=3, hidden_size=4, bidirectional=True)
    assert d.activations == [] and not d.uses_onnx_options
    assert d.direction_activations(1) == [("Sigmoid", 0.0, 0.0), ("Tanh", 0.0, 0.0)]
    assert rnnx._rnnx.default_activation("ELU") == ("Elu", 1.0, 0.0)


# ---- the drop-in torch modules ------------------------------------------------------------------

@needs_torch
def test_torch_module_with_onnx_options():
    kw = dict(num_layers=2, bidirectional=True, peephole=True, gate_clip=0.9, input_forget=True,
              activations=["HardSigmoid", "Tanh", ("ScaledTanh", 1.1, 0.9)])
    tm = rnnx.torch.LSTM(I, H, dtype=torch.float64, **kw)
    assert tm.rnnx_backend == "cpu"
    names = [n for n, _ in tm.named_parameters()]
    assert names[4] == "weight_peephole_l0" and names[-1] == "weight_peephole_l1_reverse"
    nm = rnnx.LSTM(I, H, dtype=np.float64, **kw)
    nm.load_state_dict(tm.state_dict())
    assert list(nm.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, BATCH, I))
    xt = torch.tensor(x, requires_grad=True)
    yt, (ht, ct) = tm(xt, lengths=[4, 2, 3])
    y, (h, c) = nm.forward(x, lengths=[4, 2, 3], training=True)
    np.testing.assert_array_equal(yt.detach().numpy(), y)
    (yt.sum() + ht.sum()).backward()
    dx, _, _, grads = nm.backward(np.ones_like(y), np.ones_like(h))
    # The same plan on both sides; the torch module sums its gradients in another order.
    tol = tolerance(nm.config, T, BATCH, backward=True)
    assert_near(xt.grad, dx, tol, "dx")
    for name, p in tm.named_parameters():
        assert_near(p.grad, grads[name], tol, name)
    # GRU and RNN take reverse, gate_clip and activations, on the cpu backend too.
    g = rnnx.torch.GRU(I, H, reverse=True, activations=["Sigmoid", "Softsign"])
    assert g.rnnx_backend == "cpu" and "reverse=True" in repr(g)
    g(torch.randn(T, BATCH, I))
    assert rnnx.torch.RNN(I, H, gate_clip=1.0, backend="cpu").rnnx_backend == "cpu"
    with pytest.raises(rnnx.InvalidArgumentError, match="cannot be combined with bidirectional"):
        rnnx.torch.LSTM(I, H, bidirectional=True, reverse=True)
