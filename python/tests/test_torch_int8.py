"""Math mode int8 from Python (docs/int8.md): rnnx.torch modules with math='int8' and
rnnx.torch.quantize_dynamic against the float model (every cell, projection, both GRU
variants, ragged lengths), the float state_dict kept, eval-mode graphs whose backward is
refused by name, training refused, and the NumPy modules. Runs on the scalar definition
(RNNX_CPU_INT8_KERNEL=scalar) where the CPU has no AVX512-VNNI."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rnnx

torch = pytest.importorskip("torch")
import rnnx.torch as rt  # noqa: E402

# Relative 2-norm error of the outputs against float32 (docs/int8.md's bound for these sizes).
BOUND = 0.03


@pytest.fixture(autouse=True)
def int8_kernel(monkeypatch):
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")
    yield


def rel(a, b):
    return float((a - b).norm() / b.norm())


CASES = [
    ("lstm", lambda: torch.nn.LSTM(24, 48, num_layers=2, bidirectional=True)),
    ("lstmp", lambda: torch.nn.LSTM(24, 48, num_layers=2, proj_size=16, batch_first=True)),
    ("gru", lambda: torch.nn.GRU(24, 48, num_layers=2, bidirectional=True)),
    ("gru_orig", lambda: rt.GRU(24, 48, gru_linear_before_reset=False)),
    ("rnn_tanh", lambda: torch.nn.RNN(24, 48, num_layers=2)),
    ("rnn_relu", lambda: torch.nn.RNN(24, 48, nonlinearity="relu", bidirectional=True)),
    ("lstm_peephole_clip", lambda: rt.LSTM(24, 48, proj_size=12, peephole=True,
                                           cell_clip=(-2, 2), proj_clip=(-0.5, 0.5))),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_quantize_dynamic_near_float(name, make):
    torch.manual_seed(0)
    m = make().eval()
    q = rt.quantize_dynamic(m)
    assert q.math == "int8" and q is not m
    assert not any(p.requires_grad for p in q.parameters())
    for k, v in m.state_dict().items():  # the float weights stay the source of truth
        assert torch.equal(q.state_dict()[k], v), k
    B, T = 6, 9
    x = torch.randn(B, T, 24) if m.batch_first else torch.randn(T, B, 24)
    lengths = torch.tensor([9, 3, 7, 1, 9, 5])
    with torch.no_grad():
        ref = rt._torch_quantize.twin(m, (rt.LSTM, rt.GRU, rt.RNN), math="fp32")
        y_ref, h_ref = ref(x, lengths=lengths)
        y, h = q(x, lengths=lengths)
    assert rel(y, y_ref) < BOUND
    for a, b in zip(h if isinstance(h, tuple) else (h,),
                    h_ref if isinstance(h_ref, tuple) else (h_ref,)):
        assert rel(a, b) < BOUND
    # Without lengths, against torch.nn's own float module where it is one.
    if not hasattr(m, "_rnnx_ready"):
        with torch.no_grad():
            assert rel(q(x)[0], m(x)[0]) < BOUND


def test_int8_in_an_eval_graph_refuses_backward():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16))
    rnn = rt.quantize_dynamic(torch.nn.LSTM(16, 32).eval())
    x = torch.randn(5, 2, 8)
    y, _ = rnn(model(x))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=r"math='int8'\) runs inference only"):
        y.sum().backward()


def test_int8_training_refused_by_name():
    m = rt.LSTM(8, 16, math="int8")  # train mode, parameters requiring grad
    with pytest.raises(rnnx.InvalidArgumentError, match="runs inference only: call eval"):
        m(torch.randn(3, 2, 8))
    m.eval()
    with torch.no_grad():
        assert m(torch.randn(3, 2, 8))[0].shape == (3, 2, 16)


def test_quantize_dynamic_in_place_and_nested():
    torch.manual_seed(2)
    model = torch.nn.ModuleDict({"enc": torch.nn.GRU(8, 16), "head": torch.nn.Linear(16, 2)})
    same = rt.quantize_dynamic(model, inplace=True)
    assert same is model and isinstance(model["enc"], rt.GRU) and model["enc"].math == "int8"
    assert isinstance(model["head"], torch.nn.Linear)


def test_numpy_module_int8():
    kw = dict(num_layers=2, bidirectional=True, rng=np.random.default_rng(3))
    f = rnnx.GRU(12, 20, math="fp32", **kw)
    q = rnnx.GRU(12, 20, math="int8", **dict(kw, rng=np.random.default_rng(3)))
    x = np.random.default_rng(4).uniform(-1, 1, (6, 3, 12)).astype(np.float32)
    y = f.forward(x, lengths=[6, 2, 5])[0]
    yq = q.forward(x, lengths=[6, 2, 5])[0]
    assert np.linalg.norm(yq - y) / np.linalg.norm(y) < BOUND
    with pytest.raises(rnnx.InvalidArgumentError, match="inference only"):
        q.forward(x, lengths=[6, 2, 5], training=True)


def test_refused_where_no_vnni():
    # In a process of its own: the ISA cap is read once per process.
    code = ("import torch, rnnx, rnnx.torch as rt\n"
            "m = rt.GRU(8, 16, math='int8').eval()\n"
            "try:\n"
            "    with torch.no_grad(): m(torch.randn(3, 2, 8))\n"
            "except rnnx.UnsupportedError as e: print('refused:', e)\n")
    env = dict(os.environ, RNNX_CPU_ISA="scalar")
    env.pop("RNNX_CPU_INT8_KERNEL", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert "refused: math (= int8) needs AVX512-VNNI" in out, out  # and names AVX-VNNI


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_quantized_cells_in_a_decoder_loop(kind):
    torch.manual_seed(4)
    make = {"lstm": torch.nn.LSTMCell, "gru": torch.nn.GRUCell, "rnn": torch.nn.RNNCell}[kind]
    cell = make(16, 32).eval()
    model = torch.nn.ModuleDict({"cell": cell, "out": torch.nn.Linear(32, 16)})
    q = rt.quantize_dynamic(model)
    assert type(q["cell"]).__name__ == type(cell).__name__ and q["cell"].__module__ == "rnnx.torch"
    assert all(torch.equal(q.state_dict()[k], v) for k, v in model.state_dict().items())
    ref = rt._torch_quantize.cell_twin(cell, (rt.LSTMCell, rt.GRUCell, rt.RNNCell), math="fp32")
    x = torch.randn(3, 16)
    hq = hf = None
    outs_q, outs_f = [], []
    with torch.no_grad():
        for _ in range(6):  # feeds its own output back, as a decoder does
            hq = q["cell"](x if not outs_q else q["out"](outs_q[-1]), hq)
            hf = ref(x if not outs_f else model["out"](outs_f[-1]), hf)
            outs_q.append(hq[0] if kind == "lstm" else hq)
            outs_f.append(hf[0] if kind == "lstm" else hf)
    assert rel(torch.stack(outs_q), torch.stack(outs_f)) < BOUND
    # The float cell itself (torch.nn's) gives the float reference's values.
    with torch.no_grad():
        h = cell(x)
    assert rel(h[0] if kind == "lstm" else h, ref(x)[0] if kind == "lstm" else ref(x)) < 1e-5


def test_quantize_dynamic_keeps_rnnx_options():
    torch.manual_seed(5)
    m = rt.GRU(8, 16, activations=["HardSigmoid", "Tanh"], gate_clip=2.0, reverse=True,
               padding_fill=-1.0).eval()
    q = rt.quantize_dynamic(m)
    assert (q.activations, q.gate_clip, q.reverse, q.padding_fill) == \
        (m.activations, m.gate_clip, m.reverse, m.padding_fill)
    x = torch.randn(4, 2, 8)
    lengths = torch.tensor([4, 2])
    with torch.no_grad():
        y, _ = q(x, lengths=lengths)
        assert rel(y, m(x, lengths=lengths)[0]) < BOUND
    assert torch.all(y[2:, 1] == -1.0)  # padding_fill past the second sequence's end


def _int8_peers():
    """bench/int8_peers.py as a module, or a skip where bench/ is not beside the tests."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "int8_peers.py")
    if not os.path.exists(path):
        pytest.skip("bench/ is not beside this test (an installed package's tests)")
    spec = importlib.util.spec_from_file_location("int8_peers", path)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    return peers


@pytest.mark.parametrize("flag", ["--onednn-peer", "--machine-peak"])
def test_int8_peers_names_a_bad_tool(capsys, flag):
    """bench/int8_peers.py: a --onednn-peer or --machine-peak that is not an executable is
    refused by name (the first used to end in a traceback from subprocess at the first
    round); '' leaves the tool out."""
    peers = _int8_peers()
    with pytest.raises(SystemExit):
        peers.parse_args([flag, "/nonexistent/tool"])
    assert f"{flag} '/nonexistent/tool' is not an executable" in capsys.readouterr().err
    assert getattr(peers.parse_args([flag, ""]), flag[2:].replace("-", "_")) == ""


def test_int8_peers_counts_the_multiply_adds_of_each_cell():
    """The int8 floor's work: per step and row, G x H x (I + R) for the gates' products over
    the input and the recurrent state (R = P with a projection) and P x H for the projection,
    counted here independently as the products of the weight matrices' shapes."""
    peers = _int8_peers()
    T, B, I = 7, 3, 5
    for cell, H, P, shapes in (
            ("lstm", 4, 0, [(16, 5), (16, 4)]),
            ("gru", 4, 0, [(12, 5), (12, 4)]),
            ("lstm", 6, 2, [(24, 5), (24, 2), (2, 6)])):
        assert peers.multiply_adds(cell, T, B, I, H, P) == T * B * sum(r * c for r, c in shapes)


def test_int8_peers_reads_the_vnni_rate_or_says_why_not(tmp_path, monkeypatch):
    """int8_peers.py's floor takes rnnx_machine_peak's int8-avx512-vnni record (GOP/s), and
    says why there is none: int8 on another kernel, no tool, or a tool without the record."""
    peers = _int8_peers()
    tool = tmp_path / "peak"
    tool.write_text("#!/bin/sh\n"
                    "echo '{\"kind\":\"fma-f32\",\"gflops\":100.0}'\n"
                    "echo '{\"kind\":\"int8-avx512-vnni\",\"gflops\":467.5}'\n")
    tool.chmod(0o755)
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho '{\"kind\":\"int8-avx512-vnni\",\"error\":\"no VNNI\"}'\n")
    silent.chmod(0o755)
    monkeypatch.setattr(peers.rnnx, "build_info", lambda: {"int8_gemm": "avx512-vnni"})
    assert peers.int8_core_rate(str(tool)) == (467.5, None)
    rate, why = peers.int8_core_rate(str(silent))
    assert rate is None and "gave no int8-avx512-vnni rate" in why
    rate, why = peers.int8_core_rate("")
    assert rate is None and "no rnnx_machine_peak" in why
    monkeypatch.setattr(peers.rnnx, "build_info", lambda: {"int8_gemm": "amx-int8"})
    rate, why = peers.int8_core_rate(str(tool))
    assert rate is None and "int8 on amx-int8" in why
