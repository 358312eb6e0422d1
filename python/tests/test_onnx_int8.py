"""ONNX Runtime's DynamicQuantizeLSTM (com.microsoft) and rnnx's int8 (docs/int8.md): a float
LSTM exported as the node with rnnx's own int8 weights runs in ONNX Runtime near rnnx's
math='int8' (both directions, ragged sequence_lens); the integers survive the round trip
exactly; the weights ONNX Runtime's quantize_dynamic writes (per channel) import with their
integers kept (exact=True); and what cannot be kept is refused by name."""

import numpy as np
import pytest

import rnnx
import rnnx.onnx

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import rnnx.torch as rt  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

I, H, T, B = 12, 20, 7, 5
LENGTHS = np.array([7, 3, 5, 1, 6], dtype=np.int32)


@pytest.fixture(autouse=True)
def int8_kernel(monkeypatch):
    if rnnx.build_info()["int8_gemm"] == "none":
        monkeypatch.setenv("RNNX_CPU_INT8_KERNEL", "scalar")


def float_lstm(bidirectional):
    torch.manual_seed(3)
    return torch.nn.LSTM(I, H, bidirectional=bidirectional).eval()


def sd_numpy(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


def dq_model(inputs, D):
    """A DynamicQuantizeLSTM graph with `inputs` (the dict of
    state_dict_to_dynamic_quantize_lstm) as initializers."""
    names = ["X", "W_quantized", "R_quantized", "B", "sequence_lens", "", "", "", "W_scale",
             "W_zero_point", "R_scale", "R_zero_point"]
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y"], domain="com.microsoft",
                            hidden_size=H,
                            direction="bidirectional" if D == 2 else "forward")
    inits = [numpy_helper.from_array(inputs[n], n) for n in names[1:4] + names[8:]]
    graph = helper.make_graph(
        [node], "dq",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I]),
         helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [B])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_exported_node_runs_near_rnnx_int8(bidirectional):
    m = float_lstm(bidirectional)
    D = 2 if bidirectional else 1
    inputs = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd_numpy(m), H, bidirectional)
    assert inputs["W_quantized"].shape == (D, I, 4 * H) and inputs["W_quantized"].dtype == np.int8
    assert inputs["R_scale"].shape == (D, 4 * H)
    assert np.abs(inputs["W_quantized"].astype(int)).max(axis=1).min() == 127
    x = np.random.default_rng(1).uniform(-1, 1, (T, B, I)).astype(np.float32)
    y_ort = dq_model(inputs, D).run(["Y"], {"X": x, "sequence_lens": LENGTHS})[0]
    y_ort = np.transpose(y_ort, (0, 2, 1, 3)).reshape(T, B, D * H)  # [T, D, B, H] -> [T, B, D*H]
    q = rt.quantize_dynamic(m)
    with torch.no_grad():
        y = q(torch.from_numpy(x), lengths=torch.from_numpy(LENGTHS.astype(np.int64)))[0].numpy()
        f = rt._torch_quantize.twin(m, (rt.LSTM, rt.GRU, rt.RNN), math="fp32")
        y_f = f(torch.from_numpy(x), lengths=torch.from_numpy(LENGTHS.astype(np.int64)))[0].numpy()
    mask = (np.arange(T)[:, None] < LENGTHS[None, :])[..., None]  # real positions
    rel = np.linalg.norm((y - y_ort) * mask) / np.linalg.norm(y_f * mask)
    assert rel < 0.03, rel
    assert np.linalg.norm((y_ort - y_f) * mask) / np.linalg.norm(y_f * mask) < 0.03


def test_round_trip_keeps_the_integers():
    m = float_lstm(True)
    out = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd_numpy(m), H, True)
    sd = rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
        out["W_quantized"], out["R_quantized"], out["W_scale"], out["W_zero_point"],
        out["R_scale"], out["R_zero_point"], out["B"], exact=True)
    again = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd, H, True)
    for k in ("W_quantized", "R_quantized"):
        assert np.array_equal(again[k], out[k]), k
    for k in ("W_scale", "R_scale"):  # recomputed from the dequantised floats: within an ulp
        np.testing.assert_allclose(again[k], out[k], rtol=2 ** -23, atol=0)


def test_ort_quantize_dynamic_weights_import_exactly(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    m = float_lstm(False)
    W, R, Bias = rnnx.onnx.state_dict_to_onnx("lstm", sd_numpy(m), H)
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=H)
    graph = helper.make_graph(
        [node], "f", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a.astype(np.float32), n)
                     for a, n in ((W, "W"), (R, "R"), (Bias, "B"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "f.onnx")
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"),
                     weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"], per_channel=True)
    q = onnx.load(tmp_path / "q.onnx")
    assert [n.op_type for n in q.graph.node] == ["DynamicQuantizeLSTM"]
    init = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
    sd = rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
        init["W_quantized"], init["R_quantized"], init["W_scale"], init["W_zero_point"],
        init["R_scale"], init["R_zero_point"], init["B"], exact=True)
    ours = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd, H)
    assert np.array_equal(ours["W_quantized"], init["W_quantized"])
    assert np.array_equal(ours["R_quantized"], init["R_quantized"])


def test_what_cannot_be_kept_is_refused():
    m = float_lstm(False)
    out = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd_numpy(m), H)
    halved = out["W_quantized"] // 2  # no channel reaches 127 any more
    with pytest.raises(rnnx.UnsupportedError, match=r"W_quantized\[0, .*would become"):
        rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
            halved, out["R_quantized"], out["W_scale"], out["W_zero_point"], out["R_scale"],
            out["R_zero_point"], out["B"], exact=True)
    # Without exact=True the floats import (rnnx then quantises them its own way).
    sd = rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
        halved, out["R_quantized"], out["W_scale"], out["W_zero_point"], out["R_scale"],
        out["R_zero_point"], out["B"])
    assert sd["weight_ih_l0"].shape == (4 * H, I)
    with pytest.raises(rnnx.InvalidArgumentError, match="W_quantized must be int8 or uint8"):
        rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
            out["W_quantized"].astype(np.float32), out["R_quantized"], out["W_scale"],
            out["W_zero_point"], out["R_scale"], out["R_zero_point"], out["B"])
    with pytest.raises(rnnx.InvalidArgumentError, match="per output channel"):
        rnnx.onnx.dynamic_quantize_lstm_to_state_dict(
            out["W_quantized"], out["R_quantized"], out["W_scale"][:, :3], None,
            out["R_scale"], out["R_zero_point"], out["B"])


def test_int8_quantize_rows_special_values():
    w = np.array([[0.0, 0.0], [1.0, -0.5], [np.nan, 1.0], [np.inf, 1.0], [127.0, 0.5]],
                 np.float32)
    q, s = rnnx.onnx.int8_quantize_rows(w)
    assert q.tolist() == [[0, 0], [127, -64], [0, 0], [0, 0], [127, 0]]  # 0.5 ties to even 0
    assert s[0] == 0 and np.isnan(s[2]) and np.isnan(s[3]) and s[4] == 1.0


def ort_quantized_lstm(tmp_path, bidirectional, per_channel=True, name="q"):
    """onnxruntime.quantization.quantize_dynamic of an ONNX LSTM with float_lstm's weights:
    (path of the DynamicQuantizeLSTM model, the float torch.nn.LSTM)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    m = float_lstm(bidirectional)
    D = 2 if bidirectional else 1
    W, R, Bias = rnnx.onnx.state_dict_to_onnx("lstm", sd_numpy(m), H, bidirectional)
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "sequence_lens"], ["Y"], hidden_size=H,
                            direction="bidirectional" if D == 2 else "forward")
    graph = helper.make_graph(
        [node], "f", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I]),
                      helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [B])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a.astype(np.float32), n)
                     for a, n in ((W, "W"), (R, "R"), (Bias, "B"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / f"{name}_f.onnx")
    quantize_dynamic(str(tmp_path / f"{name}_f.onnx"), str(tmp_path / f"{name}.onnx"),
                     weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"],
                     per_channel=per_channel)
    return tmp_path / f"{name}.onnx", m


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_dynamic_quantize_lstm_node_imports_as_an_int8_module(bidirectional, tmp_path):
    path, _ = ort_quantized_lstm(tmp_path, bidirectional)
    m = rnnx.onnx.dynamic_quantize_lstm_module(str(path))
    assert isinstance(m, rt.LSTM) and m.math == "int8" and not m.training
    assert m.bidirectional == bidirectional and m.hidden_size == H
    assert not any(p.requires_grad for p in m.parameters())
    # The module multiplies by the node's integers (exact=True checked it; restated here).
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    ours = rnnx.onnx.state_dict_to_dynamic_quantize_lstm(sd_numpy(m), H, bidirectional)
    assert np.array_equal(ours["W_quantized"], init["W_quantized"])
    assert np.array_equal(ours["R_quantized"], init["R_quantized"])
    # And runs as ONNX Runtime runs the node, to the activations' quantisation error.
    x = np.random.default_rng(2).uniform(-1, 1, (T, B, I)).astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    y_ort = session.run(["Y"], {"X": x, "sequence_lens": LENGTHS})[0]
    D = 2 if bidirectional else 1
    y_ort = np.transpose(y_ort, (0, 2, 1, 3)).reshape(T, B, D * H)
    with torch.no_grad():
        y = m(torch.from_numpy(x), lengths=torch.from_numpy(LENGTHS.astype(np.int64)))[0].numpy()
    mask = (np.arange(T)[:, None] < LENGTHS[None, :])[..., None]
    assert np.linalg.norm((y - y_ort) * mask) / np.linalg.norm(y_ort * mask) < 0.03


def test_a_node_that_cannot_be_imported_is_refused_by_name(tmp_path):
    path, _ = ort_quantized_lstm(tmp_path, False, per_channel=False)
    # Per-tensor scales: rnnx's int8 would quantise the weights to other integers.
    with pytest.raises(rnnx.UnsupportedError, match=r"W_quantized\[0, .*would become"):
        rnnx.onnx.dynamic_quantize_lstm_module(str(path))
    m = rnnx.onnx.dynamic_quantize_lstm_module(str(path), exact=False)  # the floats, requantised
    assert m.math == "int8"
    with pytest.raises(rnnx.InvalidArgumentError, match="node=3: the model has 1"):
        rnnx.onnx.dynamic_quantize_lstm_module(str(path), node=3)
    with pytest.raises(rnnx.InvalidArgumentError, match="node='nope': no DynamicQuantizeLSTM"):
        rnnx.onnx.dynamic_quantize_lstm_module(str(path), node="nope")
    # Weights computed in the graph (not initializers) are named.
    model = onnx.load(path)
    dq = model.graph.node[-1]
    w_name = dq.input[1]
    init = next(i for i in model.graph.initializer if i.name == w_name)
    model.graph.initializer.remove(init)
    model.graph.node.insert(0, helper.make_node("Identity", [w_name + "_src"], [w_name]))
    init.name = w_name + "_src"
    model.graph.initializer.append(init)
    with pytest.raises(rnnx.UnsupportedError, match="W .* is computed in the graph"):
        rnnx.onnx.dynamic_quantize_lstm_module(model)
    with pytest.raises(rnnx.InvalidArgumentError, match="exactly one DynamicQuantizeLSTM"):
        model.graph.node.append(helper.make_node("DynamicQuantizeLSTM", list(dq.input), ["Y2"],
                                                 domain="com.microsoft", hidden_size=H))
        rnnx.onnx.dynamic_quantize_lstm_module(model)


def test_node_attributes_and_inputs_rnnx_cannot_take_are_refused_by_name(tmp_path):
    path, _ = ort_quantized_lstm(tmp_path, True)
    model = onnx.load(path)
    dq = next(n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM")

    def edited(change):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        change(next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM"))
        return m

    def set_attr(node, name, value):
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(name, value))

    with pytest.raises(rnnx.UnsupportedError, match=r"attributes \['layout'\] have no rnnx"):
        rnnx.onnx.dynamic_quantize_lstm_module(edited(lambda n: set_attr(n, "layout", 1)))
    with pytest.raises(rnnx.InvalidArgumentError, match="hidden_size 7 but W has 4H = 80"):
        rnnx.onnx.dynamic_quantize_lstm_module(edited(lambda n: set_attr(n, "hidden_size", 7)))
    acts = ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Relu"]
    with pytest.raises(rnnx.UnsupportedError, match="different activations per direction"):
        rnnx.onnx.dynamic_quantize_lstm_module(edited(lambda n: set_attr(n, "activations", acts)))

    def drop_w_scale(n):
        n.input[8] = ""
    with pytest.raises(rnnx.InvalidArgumentError, match=f"'{dq.name}' has no W_scale"):
        rnnx.onnx.dynamic_quantize_lstm_module(edited(drop_w_scale))
    # The same activations in both directions map to rnnx's one list.
    m = rnnx.onnx.dynamic_quantize_lstm_module(
        edited(lambda n: set_attr(n, "activations", ["Sigmoid", "Tanh", "Relu"] * 2)))
    assert [a[0].lower() for a in m.activations] == ["sigmoid", "tanh", "relu"]
