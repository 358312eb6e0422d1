"""ONNX's own backend node tests for LSTM, GRU and RNN (Debian's libonnx-testdata,
data/node/test_{lstm,gru,rnn,simple_rnn}_*) through rnnx.<Cell>.from_onnx(W, R, B, P,
**node attributes) and forward, on every backend: the automatic choice, reference, and cpu
(which must match too). Skipped without the onnx package or
the data; RNNX_ONNX_NODE_DATA points at another copy of data/node."""

import os

import numpy as np
import pytest

import rnnx
from conftest import assert_near, tolerance

pytest.importorskip("onnx")
from onnx_node_data import DATA, load, node_test_sets  # noqa: E402

CLASSES = {"LSTM": rnnx.LSTM, "GRU": rnnx.GRU, "RNN": rnnx.RNN}
SETS = node_test_sets()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("backend", [None, "reference", "cpu"], ids=["auto", "reference", "cpu"])
@pytest.mark.parametrize("data_dir", SETS,
                         ids=[os.path.relpath(d, DATA).replace(os.sep, "/") for d in SETS])
def test_onnx_node(data_dir, backend, dtype):
    op, attrs, inputs, expected = load(data_dir)
    X, W, R = inputs[0], inputs[1], inputs[2]
    B, lens, h0, c0, P = (inputs.get(k) for k in (3, 4, 5, 6, 7))
    weights = (W, R, B, P) if op == "LSTM" else (W, R, B)
    m = CLASSES[op].from_onnx(*weights, dtype=dtype, backend=backend, **attrs)
    if backend is None:
        # The automatic choice: cpu, which runs every ONNX option.
        assert m.backend == "cpu"
    layout = int(attrs.get("layout", 0))
    assert m.batch_first == (layout == 1)
    T = X.shape[1] if layout else X.shape[0]
    D, H = W.shape[0], R.shape[2]

    # forward with rnnx's shapes: states [D, B, H] (ONNX layout 1: [B, D, H]), y [.., D*H].
    def state(v):
        return None if v is None else (v.transpose(1, 0, 2) if layout else v)

    hx = (state(h0), state(c0)) if op == "LSTM" else state(h0)
    y, hy = m.forward(X, lengths=lens, hx=hx)
    hy, cy = hy if op == "LSTM" else (hy, None)
    y = y.reshape(y.shape[:2] + (D, H))
    got = {0: y if layout else y.transpose(0, 2, 1, 3), 1: state(hy), 2: state(cy)}
    # The expected outputs are float32: both sides carry float32's rounding, whatever
    # dtype rnnx runs in.
    cell = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}[op]
    tol = tolerance(dict(cell=cell, input_size=W.shape[2], hidden_size=H,
                         bidirectional=W.shape[0] == 2, dtype="float32"), T, X.shape[1 - layout])
    assert expected, "the test has no outputs"
    for pos, want in expected.items():
        assert_near(got[pos], want, tol, f"output {('Y', 'Y_h', 'Y_c')[pos]}")

    # onnx_forward gives the same, in ONNX's shapes.
    onnx_out = m.onnx_forward(X, sequence_lens=lens, initial_h=h0,
                              initial_c=c0 if op == "LSTM" else None)
    for pos in expected:
        np.testing.assert_array_equal(onnx_out[pos], got[pos])


def test_node_data_found_or_skipped():
    if not SETS:
        pytest.skip(f"no ONNX RNN node tests under {DATA}")
    names = {os.path.basename(os.path.dirname(d)) for d in SETS}
    assert any(n.startswith("test_lstm") for n in names)
