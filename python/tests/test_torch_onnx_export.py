"""torch.onnx.export of models holding rnnx.torch modules (custom_translation_table=
rnnx.torch.onnx_translation_table()): standard ONNX LSTM/GRU/RNN nodes, sequence_lens from
lengths=, ONNX's cell options, run by ONNX Runtime to rnnx's outputs on the real positions;
what ONNX cannot express is refused by name. Needs PyTorch 2.6+ with onnxscript and
onnxruntime (the test command's pip environment has them); skips, saying why, elsewhere."""

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

if not _torch_ops.AVAILABLE or not hasattr(torch.onnx, "export"):
    pytest.skip(f"rnnx's operator needs PyTorch 2.4+ ({torch.__version__})",
                allow_module_level=True)

CELLS = {"LSTM": rt.LSTM, "GRU": rt.GRU, "RNN": rt.RNN}


class Wrapper(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x, lengths):
        y, h = self.m(x, lengths=lengths)
        return (y,) + (h if isinstance(h, tuple) else (h,))


def export_and_run(model, x, lengths, tmp_path):
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (x, lengths), dynamo=True, verbose=False,
                                    custom_translation_table=rt.onnx_translation_table())
    program.save(path)
    graph = onnx.load(path).graph
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: v.numpy() for i, v in zip(session.get_inputs(), (x, lengths))}
    return session.run(None, feeds), {n.op_type for n in graph.node}


def compare(model, x, lengths, tmp_path, batch_first=False):
    got, ops = export_and_run(model, x, lengths, tmp_path)
    with torch.no_grad():
        want = [t.numpy() for t in model(x, lengths)]
    y, want_y = got[0], want[0]
    for b, n in enumerate(lengths.tolist()):  # the real positions; ONNX writes 0 after
        sl = (b, slice(0, n)) if batch_first else (slice(0, n), b)
        np.testing.assert_allclose(y[sl], want_y[sl], rtol=1e-5, atol=1e-5)
    for g, w in zip(got[1:], want[1:]):
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
    dict(cls="LSTM", bias=False)], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_onnx_cell_options_are_exported(kw, tmp_path):
    torch.manual_seed(0)
    kw = dict(kw)
    m = CELLS[kw.pop("cls")](4, 5, **kw)
    compare(Wrapper(m).eval(), 2.0 * torch.randn(6, 3, 4), torch.tensor([6, 1, 4]), tmp_path)


@pytest.mark.parametrize("kw,message", [
    (dict(proj_size=3), "proj_size"),
    (dict(cell_clip=(-1.0, 1.0)), "cell_clip"),
    (dict(padding_fill=-1.0), "padding_fill"),
])
def test_what_onnx_cannot_express_is_refused_by_name(kw, message, tmp_path):
    m = rt.LSTM(4, 5, **kw)
    with pytest.raises(Exception) as info:
        export_and_run(Wrapper(m).eval(), torch.randn(6, 3, 4), torch.tensor([6, 2, 4]),
                       tmp_path)
    text = "".join(str(e) for e in _chain(info.value))
    assert message in text and "rnnx.torch ONNX export" in text, text[-2000:]


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
