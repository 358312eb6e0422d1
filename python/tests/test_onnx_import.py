"""from_onnx: ONNX W/R/B(/P) with ONNX gate orders (LSTM i,o,f,c; GRU z,r,h) imported into
rnnx, checked against a NumPy transcription of ONNX's operator definitions, and the
conversion round-trips exactly."""

import numpy as np
import pytest

import rnnx
from conftest import assert_near, tolerance


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def onnx_reference(op, x, W, R, B, linear_before_reset=0, activation="Tanh"):
    """ONNX LSTM/GRU/RNN (default activations, no sequence_lens, zero initial state).
    Returns Y [T, D, B, H] and Y_h [D, B, H], as ONNX does."""
    T, Bn, _ = x.shape
    D, _, H = R.shape
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    Y = np.zeros((T, D, Bn, H))
    Y_h = np.zeros((D, Bn, H))
    for d in range(D):
        Wb = B[d, :G * H] if B is not None else np.zeros(G * H)
        Rb = B[d, G * H:] if B is not None else np.zeros(G * H)
        h = np.zeros((Bn, H))
        c = np.zeros((Bn, H))
        steps = range(T) if d == 0 else range(T - 1, -1, -1)
        for t in steps:
            xw = x[t] @ W[d].T + Wb
            if op == "LSTM":
                a = xw + h @ R[d].T + Rb
                i, o, f, cc = (a[:, k * H:(k + 1) * H] for k in range(4))
                c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
                h = sigmoid(o) * np.tanh(c)
            elif op == "GRU":
                Rz, Rr, Rh = (R[d][k * H:(k + 1) * H] for k in range(3))
                Rbz, Rbr, Rbh = (Rb[k * H:(k + 1) * H] for k in range(3))
                z = sigmoid(xw[:, :H] + h @ Rz.T + Rbz)
                r = sigmoid(xw[:, H:2 * H] + h @ Rr.T + Rbr)
                if linear_before_reset:
                    hh = np.tanh(xw[:, 2 * H:] + r * (h @ Rh.T + Rbh))
                else:
                    hh = np.tanh(xw[:, 2 * H:] + (r * h) @ Rh.T + Rbh)
                h = (1 - z) * hh + z * h
            else:
                a = xw + h @ R[d].T + Rb
                h = np.tanh(a) if activation == "Tanh" else np.maximum(a, 0)
            Y[t, d] = h
        Y_h[d] = h
    return Y, Y_h


CASES = [("LSTM", 1, 0), ("LSTM", 2, 0), ("GRU", 1, 0), ("GRU", 2, 1), ("GRU", 1, 1),
         ("RNN", 2, 0), ("RNN", 1, 0)]


@pytest.mark.parametrize("op,D,lbr", CASES, ids=[f"{o}_d{d}_lbr{l}" for o, d, l in CASES])
def test_from_onnx_matches_onnx_semantics(op, D, lbr):
    rng = np.random.default_rng(CASES.index((op, D, lbr)))
    T, Bn, I, H = 5, 3, 4, 6
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    W = rng.uniform(-0.6, 0.6, (D, G * H, I))
    R = rng.uniform(-0.6, 0.6, (D, G * H, H))
    B = rng.uniform(-0.6, 0.6, (D, 2 * G * H))
    x = rng.standard_normal((T, Bn, I))
    if op == "LSTM":
        m = rnnx.LSTM.from_onnx(W, R, B, P=np.zeros((D, 3 * H)))
    elif op == "GRU":
        m = rnnx.GRU.from_onnx(W, R, B, linear_before_reset=lbr)
        assert m.config.gru_linear_before_reset == bool(lbr)
    else:
        m = rnnx.RNN.from_onnx(W, R, B, activation="Relu" if D == 1 else "Tanh")
    assert m.dtype == np.float64 and m.bidirectional == (D == 2)
    y, hy = m(x)
    hy = hy[0] if op == "LSTM" else hy
    Y, Y_h = onnx_reference(op, x, W, R, B, lbr, "Relu" if (op == "RNN" and D == 1) else "Tanh")
    tol = tolerance(m.config, T, Bn)
    assert_near(y, Y.transpose(0, 2, 1, 3).reshape(T, Bn, D * H), tol)
    assert_near(hy, Y_h, tol)

    # Round trip: back to ONNX gives the same tensors, bit for bit.
    W2, R2, B2 = m.to_onnx()
    np.testing.assert_array_equal(W2, W)
    np.testing.assert_array_equal(R2, R)
    np.testing.assert_array_equal(B2, B)


def test_gate_permutations():
    # Label every row by its ONNX gate, import, and read the PyTorch order back.
    H = 2
    W = np.repeat(np.arange(4.0), H)[None, :, None]  # ONNX blocks i=0, o=1, f=2, c=3
    sd = rnnx.onnx_to_state_dict("lstm", W, np.zeros((1, 4 * H, H)))
    assert list(sd["weight_ih_l0"][::H, 0]) == [0, 2, 3, 1]  # torch i, f, g, o
    W = np.repeat(np.arange(3.0), H)[None, :, None]  # ONNX z=0, r=1, h=2
    sd = rnnx.onnx_to_state_dict("gru", W, np.zeros((1, 3 * H, H)))
    assert list(sd["weight_ih_l0"][::H, 0]) == [1, 0, 2]  # torch r, z, n
    P = np.repeat(np.arange(3.0), H)[None, :]  # ONNX peepholes i=0, o=1, f=2
    sd = rnnx.onnx_to_state_dict("lstm", np.zeros((1, 4 * H, 1)), np.zeros((1, 4 * H, H)), P=P)
    assert list(sd["weight_peephole_l0"][::H]) == [0, 2, 1]  # i, f, o


def test_from_onnx_without_bias_and_float32():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((1, 12, 3)).astype(np.float32)
    R = rng.standard_normal((1, 12, 4)).astype(np.float32)
    m = rnnx.GRU.from_onnx(W, R)
    assert m.dtype == np.float32 and not m.bias
    W2, R2, B2 = m.to_onnx()
    assert B2 is None
    np.testing.assert_array_equal(W2, W)


def test_from_onnx_errors():
    W = np.zeros((1, 8, 3))
    R = np.zeros((1, 8, 2))
    # Peepholes and other activations run on the cpu backend (no longer refused).
    assert rnnx.LSTM.from_onnx(W, R, P=np.ones((1, 6)), backend="cpu").config.peephole
    with pytest.raises(rnnx.InvalidArgumentError, match="P has shape"):
        rnnx.LSTM.from_onnx(W, R, P=np.zeros((1, 5)))
    with pytest.raises(rnnx.InvalidArgumentError, match="B has shape"):
        rnnx.LSTM.from_onnx(W, R, np.zeros((1, 8)))
    with pytest.raises(rnnx.InvalidArgumentError, match="W dim 1 \\(= 8\\) must equal 3"):
        rnnx.GRU.from_onnx(W, R)
    with pytest.raises(rnnx.InvalidArgumentError, match="R has shape"):
        rnnx.LSTM.from_onnx(W, np.zeros((2, 8, 2)))
    assert rnnx.RNN.from_onnx(np.zeros((1, 2, 3)), np.zeros((1, 2, 2)), activation="Sigmoid",
                              backend="cpu").backend == "cpu"
    with pytest.raises(rnnx.UnsupportedError, match="single-layer"):
        rnnx.LSTM(3, 2, num_layers=2).to_onnx()
