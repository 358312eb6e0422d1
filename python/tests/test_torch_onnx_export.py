"""torch.onnx.export of models holding rnnx.torch modules, plain (no extra argument):
standard ONNX LSTM/GRU/RNN nodes, sequence_lens from lengths=, ONNX's cell options, and
Scans for what no node expresses (projection, cell and projection clips), run by ONNX
Runtime to rnnx's outputs; a program holding rnnx's operator (torch.export first) through
custom_translation_table=rnnx.torch.onnx_translation_table(); training dropout and packed
input refused by name. Needs PyTorch 2.8+ with onnxscript and onnxruntime (the test
command's pip environment has them); skips, saying why, elsewhere."""

import itertools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript", reason="torch.onnx.export(dynamo=True) needs onnxscript")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
import rnnx.torch as rt  # noqa: E402
from rnnx import _torch_ops  # noqa: E402

if not _torch_ops.AVAILABLE or not hasattr(getattr(torch.onnx, "ops", None),
                                           "symbolic_multi_out"):
    pytest.skip(f"plain export needs torch.onnx.ops (PyTorch 2.8+; {torch.__version__})",
                allow_module_level=True)

CELLS = {"LSTM": rt.LSTM, "GRU": rt.GRU, "RNN": rt.RNN}


class Wrapper(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x, lengths):
        y, h = self.m(x, lengths=lengths)
        return (y,) + (h if isinstance(h, tuple) else (h,))


def export_and_run(model, x, lengths, tmp_path, program_first=False):
    """ONNX Runtime's outputs of the exported model and the graph's op types. program_first:
    torch.export.export first, then the program (which holds rnnx's operator) with the
    translation table; else the model itself, plainly."""
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if program_first:
            program = torch.onnx.export(torch.export.export(model, (x, lengths)), dynamo=True,
                                        verbose=False,
                                        custom_translation_table=rt.onnx_translation_table())
        else:
            program = torch.onnx.export(model, (x, lengths), verbose=False)
    program.save(path)
    graph = onnx.load(path).graph
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: v.numpy() for i, v in zip(session.get_inputs(), (x, lengths))}
    return session.run(None, feeds), {n.op_type for n in graph.node}


def compare(model, x, lengths, tmp_path, batch_first=False, program_first=False):
    got, ops = export_and_run(model, x, lengths, tmp_path, program_first)
    with torch.no_grad():
        want = [t.numpy() for t in model(x, lengths)]
    assert len(got) == len(want)
    for g, w in zip(got, want):  # every position: padding holds padding_fill in both
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return ops


@pytest.mark.parametrize("cell,layers,bidirectional,batch_first", [
    (c, L, d, bf) for c, L, d, bf in itertools.product(CELLS, (1, 2), (False, True),
                                                        (False, True))
    if not (L == 1 and bf)])
def test_exports_standard_nodes_that_onnx_runtime_runs(cell, layers, bidirectional,
                                                       batch_first, tmp_path):
    torch.manual_seed(0)
    m = CELLS[cell](4, 5, num_layers=layers, bidirectional=bidirectional,
                    batch_first=batch_first)
    x = torch.randn(3, 6, 4) if batch_first else torch.randn(6, 3, 4)
    ops = compare(Wrapper(m).eval(), x, torch.tensor([6, 2, 4]), tmp_path, batch_first)
    assert cell in ops and "rnnx" not in " ".join(ops), ops


@pytest.mark.parametrize("kw", [
    dict(cls="LSTM", peephole=True), dict(cls="LSTM", input_forget=True),
    dict(cls="LSTM", gate_clip=0.5), dict(cls="LSTM", reverse=True),
    dict(cls="GRU", gru_linear_before_reset=False), dict(cls="RNN", nonlinearity="relu"),
    dict(cls="LSTM", bias=False), dict(cls="GRU", activations=["HardSigmoid", "Softsign"],
                                       bidirectional=True),
    dict(cls="LSTM", activations=[("LeakyRelu", 0.1), "Tanh", ("ScaledTanh", 0.8, 1.2)]),
    dict(cls="LSTM", padding_fill=-1.0, bidirectional=True)],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_onnx_cell_options_are_exported(kw, tmp_path):
    torch.manual_seed(0)
    kw = dict(kw)
    m = CELLS[kw.pop("cls")](4, 5, **kw)
    compare(Wrapper(m).eval(), 2.0 * torch.randn(6, 3, 4), torch.tensor([6, 1, 4]), tmp_path)


@pytest.mark.parametrize("kw", [
    dict(proj_size=3), dict(proj_size=3, num_layers=2, bidirectional=True, batch_first=True),
    dict(cell_clip=(-0.4, 0.4), peephole=True), dict(proj_size=2, proj_clip=(-0.1, 0.1)),
    dict(proj_size=2, cell_clip=(-0.3, 0.3), clip_nan="replace", reverse=True,
         padding_fill=2.0),
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_what_no_onnx_node_expresses_is_exported_as_scans(kw, tmp_path):
    torch.manual_seed(0)
    m = rt.LSTM(4, 5, **kw)
    bf = kw.get("batch_first", False)
    x = 2.0 * (torch.randn(3, 6, 4) if bf else torch.randn(6, 3, 4))
    ops = compare(Wrapper(m).eval(), x, torch.tensor([6, 2, 4]), tmp_path, bf)
    assert "Scan" in ops and "LSTM" not in ops, ops


def test_a_program_holding_the_operator_exports_with_the_translation_table(tmp_path):
    torch.manual_seed(0)
    m = rt.LSTM(4, 5, num_layers=2, bidirectional=True)
    ops = compare(Wrapper(m).eval(), torch.randn(6, 3, 4), torch.tensor([6, 2, 4]), tmp_path,
                  program_first=True)
    assert "LSTM" in ops, ops


def test_the_translation_table_refuses_what_needs_the_module_route(tmp_path):
    m = rt.LSTM(4, 5, proj_size=3)
    with pytest.raises(Exception) as info:
        export_and_run(Wrapper(m).eval(), torch.randn(6, 3, 4), torch.tensor([6, 2, 4]),
                       tmp_path, program_first=True)
    text = "".join(str(e) for e in _chain(info.value))
    assert "proj_size" in text and "export the model itself" in text, text[-2000:]


def test_packed_input_is_refused_by_name(tmp_path):
    class Packed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = rt.GRU(4, 5)

        def forward(self, x, lengths):
            p = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
            return self.m(p)[1]

    with pytest.raises(Exception) as info:
        export_and_run(Packed().eval(), torch.randn(6, 3, 4), torch.tensor([6, 2, 4]), tmp_path)
    assert "PackedSequence" in "".join(str(e) for e in _chain(info.value))


def test_dropout_in_training_mode_is_refused(tmp_path):
    m = rt.LSTM(4, 5, num_layers=2, dropout=0.5, seed=1)
    with pytest.raises(Exception) as info:
        export_and_run(Wrapper(m).train(), torch.randn(6, 3, 4), torch.tensor([6, 2, 4]),
                       tmp_path)
    assert "eval()" in "".join(str(e) for e in _chain(info.value))


def _chain(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def test_translation_table_names_the_operator():
    table = rt.onnx_translation_table()
    assert list(table) == [torch.ops.rnnx.forward.default]


def test_zero_lengths_export(tmp_path):
    torch.manual_seed(0)
    m = rt.LSTM(4, 5, num_layers=2, bidirectional=True)
    compare(Wrapper(m).eval(), torch.randn(6, 3, 4), torch.tensor([6, 0, 4]), tmp_path)


@pytest.mark.parametrize("kw", [dict(num_layers=2, bidirectional=True),
                                dict(proj_size=3, bidirectional=True)],
                         ids=["nodes", "scans"])
def test_dynamic_time_and_batch(kw, tmp_path):
    """Exported with T and B dynamic, run at another T and B (a length 0 included)."""
    torch.manual_seed(0)
    model = Wrapper(rt.LSTM(4, 5, **kw)).eval()
    T, B = torch.export.Dim("T"), torch.export.Dim("B")
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(6, 3, 4), torch.tensor([6, 2, 4])),
                          dynamic_shapes=({0: T, 1: B}, {0: B}), verbose=False).save(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x, lengths = torch.randn(9, 5, 4), torch.tensor([9, 1, 0, 5, 7])
    got = session.run(None, {i.name: v.numpy() for i, v in zip(session.get_inputs(),
                                                                (x, lengths))})
    with torch.no_grad():
        want = model(x, lengths)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_export_as_onnx_nodes(cls, tmp_path):
    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = getattr(rt, cls)(4, 5)

        def forward(self, x, h):
            out = self.cell(x, (h, h) if cls == "LSTMCell" else h)
            return out if isinstance(out, tuple) else (out,)

    torch.manual_seed(0)
    model, x, h = Step().eval(), torch.randn(3, 4), torch.randn(3, 5)
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x, h), verbose=False).save(path)
    assert cls[:-4].upper() in {n.op_type for n in onnx.load(path).graph.node}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: v.numpy() for i, v in zip(session.get_inputs(), (x, h))})
    with torch.no_grad():
        want = model(x, h)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


# ---- int8 modules: ONNX Runtime's DynamicQuantizeLSTM --------------------------------------

def int8_model(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Wrapper(rt.quantize_dynamic(module)).eval()


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_an_int8_lstm_exports_as_dynamic_quantize_lstm_with_rnnx_integers(layers, bidirectional,
                                                                         tmp_path, monkeypatch):
    import rnnx
    import rnnx.onnx
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")
    torch.manual_seed(0)
    H = 16
    float_lstm = torch.nn.LSTM(12, H, num_layers=layers, bidirectional=bidirectional).eval()
    model = int8_model(float_lstm)
    x, lengths = torch.randn(7, 5, 12), torch.tensor([7, 3, 5, 1, 6])
    got, ops = export_and_run(model, x, lengths, tmp_path)
    assert "DynamicQuantizeLSTM" in ops and "LSTM" not in ops, ops
    with torch.no_grad():
        want = [t.numpy() for t in model(x, lengths)]
    # ONNX Runtime quantises a step's input per tensor and asymmetrically, rnnx per row: the
    # two agree to the quantisation error, not bit for bit (docs/int8.md).
    for g, w in zip(got, want):
        assert np.linalg.norm(g - w) / np.linalg.norm(w) < 0.03
    # The node's integers are rnnx's: the graph quantises the float weights by rnnx's rule,
    # which rnnx.onnx.state_dict_to_dynamic_quantize_lstm states; ONNX Runtime's constant
    # folding leaves them as initializers in its optimised model.
    opt = str(tmp_path / "opt.onnx")
    so = ort.SessionOptions()
    so.optimized_model_filepath = opt
    ort.InferenceSession(str(tmp_path / "model.onnx"), so, providers=["CPUExecutionProvider"])
    graph = onnx.load(opt).graph
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    nodes = [n for n in graph.node if n.op_type == "DynamicQuantizeLSTM"]
    assert len(nodes) == layers
    sd = {k: v.detach().numpy() for k, v in float_lstm.state_dict().items()}
    for layer, node in enumerate(nodes):
        want_q = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd, H, bidirectional, layer)
        for pos, name in ((1, "W_quantized"), (2, "R_quantized"), (8, "W_scale"),
                          (10, "R_scale")):
            assert node.input[pos] in inits, f"{name} of layer {layer} was not folded"
            np.testing.assert_array_equal(inits[node.input[pos]], want_q[name], err_msg=name)


@pytest.mark.parametrize("make,what", [
    (lambda: torch.nn.GRU(4, 5), "ONNX has no int8 GRU node"),
    (lambda: torch.nn.RNN(4, 5), "ONNX has no int8 RNN_TANH node"),
    (lambda: torch.nn.LSTM(4, 6, proj_size=3), "DynamicQuantizeLSTM has neither"),
])
def test_an_int8_module_without_an_int8_onnx_node_is_refused_by_name(make, what, tmp_path,
                                                                     monkeypatch):
    import rnnx
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")
    torch.manual_seed(0)
    model = int8_model(make())
    with pytest.raises(Exception, match=what):
        export_and_run(model, torch.randn(3, 2, 4), torch.tensor([3, 2]), tmp_path)


def test_an_int8_program_through_the_translation_table_is_refused_by_name(tmp_path,
                                                                          monkeypatch):
    import rnnx
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")
    torch.manual_seed(0)
    model = int8_model(torch.nn.LSTM(4, 5))
    with pytest.raises(Exception, match="DynamicQuantizeLSTM is emitted by the module"):
        export_and_run(model, torch.randn(3, 2, 4), torch.tensor([3, 2]), tmp_path,
                       program_first=True)


def test_an_int8_lstm_cell_exports_as_dynamic_quantize_lstm(tmp_path, monkeypatch):
    import rnnx
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")

    class Step(torch.nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.cell = cell

        def forward(self, x, h, c):
            return self.cell(x, (h, c))

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Step(rt.quantize_dynamic(torch.nn.LSTMCell(6, 8))).eval()
        args = (torch.randn(3, 6), torch.randn(3, 8), torch.randn(3, 8))
        path = str(tmp_path / "cell.onnx")
        torch.onnx.export(model, args, verbose=False).save(path)
    assert "DynamicQuantizeLSTM" in {n.op_type for n in onnx.load(path).graph.node}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: v.numpy() for i, v in zip(session.get_inputs(), args)})
    with torch.no_grad():
        want = [t.numpy() for t in model(*args)]
    for g, w in zip(got, want):
        assert np.linalg.norm(g - w) / np.linalg.norm(w) < 0.03
