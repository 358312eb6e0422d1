"""ONNX LSTM/GRU/RNN: weights (W, R, B, P) <-> PyTorch-named weights (rnnx's layout), and
ONNX's attributes (direction, activations with activation_alpha/activation_beta, clip).

ONNX stacks gate blocks as LSTM i, o, f, c and GRU z, r, h; PyTorch (and rnnx) as LSTM
i, f, g, o and GRU r, z, n (docs/math.md). ONNX keeps both biases in one tensor,
B = [Wb, Rb] per direction, and LSTM peepholes P in order i, o, f (rnnx: i, f, o). The
gate orders live in one place, src/core/gate_order.hpp: the conversions here go through
rnnx's C++ converters (rnnx._rnnx.import_onnx_layer / export_onnx_layer), which only move
whole gate blocks, so they are exact. ONNX operators are single-layer: everything here is
one layer, with direction index 1 as "_reverse".
"""

import numpy as np

from . import _rnnx

GATES = {"lstm": 4, "gru": 3, "rnn": 1}
# The functions of one direction: LSTM f, g, h; GRU f, g; RNN f.
ACTIVATIONS_PER_DIRECTION = {"lstm": 3, "gru": 2, "rnn": 1}
# The activations that read ONNX's activation_alpha / activation_beta lists, which are
# consumed in order by the activations that take a value: rnnx::onnx_takes_alpha / _beta,
# the one definition every front end uses.
TAKES_ALPHA = _rnnx.ONNX_TAKES_ALPHA
TAKES_BETA = _rnnx.ONNX_TAKES_BETA
DIRECTIONS = ("forward", "reverse", "bidirectional")


def activation_attributes(functions):
    """ONNX's `activations`, `activation_alpha` and `activation_beta` attributes for every
    direction's functions, as (name, alpha, beta) in ONNX's order: the alphas and betas of
    the functions that take one only (as onnx_activations reads them back), each list left
    out (None) when empty."""
    names = [n for n, _, _ in functions]
    alpha = [float(a) for n, a, _ in functions if n in TAKES_ALPHA]
    beta = [float(b) for n, _, b in functions if n in TAKES_BETA]
    return names, alpha or None, beta or None


def _cell_family(cell):
    if cell in ("rnn", "rnn_tanh", "rnn_relu"):
        return "rnn"
    if cell in ("lstm", "gru"):
        return cell
    raise _rnnx.InvalidArgumentError(f"cell '{cell}' is not one of: lstm, gru, rnn")


def _text(value):
    """ONNX attributes read with onnx.helper.get_attribute_value are bytes."""
    return value.decode() if isinstance(value, bytes) else value


def _to_numpy(a, name):
    if a is None:
        return None
    if hasattr(a, "detach"):  # torch tensor
        a = a.detach().cpu().resolve_neg().resolve_conj()
        if str(a.dtype) == "torch.bfloat16":  # NumPy has none; float32 holds it exactly
            a = a.float()
        a = a.numpy()
    a = np.asarray(a)
    if a.dtype.kind != "f":
        raise _rnnx.InvalidArgumentError(f"{name} must be floating point, got dtype {a.dtype}")
    return a


def onnx_sizes(cell, W, R):
    """(num_directions, input_size, hidden_size) from ONNX W [D, G*H, I] and R [D, G*H, H]."""
    family = _cell_family(cell)
    G = GATES[family]
    W = np.asarray(W)
    R = np.asarray(R)
    if W.ndim != 3:
        raise _rnnx.InvalidArgumentError(f"W must be 3-D [num_directions, {G}*hidden_size, "
                                         f"input_size], got shape {W.shape}")
    if R.ndim != 3:
        raise _rnnx.InvalidArgumentError(f"R must be 3-D [num_directions, {G}*hidden_size, "
                                         f"hidden_size], got shape {R.shape}")
    D, GH, I = W.shape
    H = R.shape[2]
    if D not in (1, 2):
        raise _rnnx.InvalidArgumentError(f"W dim 0 (= {D}) must be 1 or 2 (num_directions)")
    if GH != G * H:
        raise _rnnx.InvalidArgumentError(
            f"W dim 1 (= {GH}) must equal {G} * hidden_size (= {G} * {H}, from R dim 2)")
    if R.shape != (D, G * H, H):
        raise _rnnx.InvalidArgumentError(f"R has shape {R.shape}, expected {(D, G * H, H)}")
    return D, I, H


def onnx_direction(direction, num_directions=None):
    """(bidirectional, reverse) for ONNX's direction attribute; None follows num_directions
    (2: bidirectional, otherwise forward). Checks that the two agree."""
    if direction is None:
        direction = "bidirectional" if num_directions == 2 else "forward"
    direction = str(_text(direction)).lower()
    if direction not in DIRECTIONS:
        raise _rnnx.InvalidArgumentError(f"direction '{direction}' is not one of: "
                                         + ", ".join(DIRECTIONS))
    if num_directions is not None and (num_directions == 2) != (direction == "bidirectional"):
        raise _rnnx.InvalidArgumentError(
            f"direction '{direction}' needs W dim 0 = {2 if direction == 'bidirectional' else 1}, "
            f"got {num_directions}")
    return direction == "bidirectional", direction == "reverse"


def onnx_activations(activations, activation_alpha=None, activation_beta=None):
    """ONNX's activations attribute as rnnx activations, a tuple of (name, alpha, beta).

    Names are ONNX's, matched case-insensitively. activation_alpha and activation_beta are
    consumed in order by the activations that take them (alpha: Affine, LeakyRelu,
    ThresholdedRelu, ScaledTanh, HardSigmoid, Elu; beta: Affine, ScaledTanh, HardSigmoid);
    the others keep ONNX's defaults. Values left over are an error. None: no activations
    (the cell's defaults)."""
    if activations is None:
        if activation_alpha is not None or activation_beta is not None:
            raise _rnnx.InvalidArgumentError("activation_alpha/activation_beta given without "
                                             "activations")
        return None
    if isinstance(activations, (str, bytes)):
        raise _rnnx.InvalidArgumentError(f"activations must be a list of names, got "
                                         f"{activations!r}")
    alpha = [] if activation_alpha is None else [float(v) for v in activation_alpha]
    beta = [] if activation_beta is None else [float(v) for v in activation_beta]
    names = []
    for k, name in enumerate(activations):
        name = _text(name)
        if not isinstance(name, str):
            raise _rnnx.InvalidArgumentError(f"activations[{k}] must be a name, got {name!r}")
        names.append(name)
    return tuple(tuple(a) for a in _rnnx.onnx_activations(names, alpha, beta))


def _layer_config(family, input_size, hidden_size, bidirectional, bias, peephole, num_layers=1):
    return _rnnx.Config(cell="rnn_tanh" if family == "rnn" else family, input_size=input_size,
                        hidden_size=hidden_size, num_layers=num_layers,
                        bidirectional=bidirectional, bias=bias, peephole=peephole,
                        dtype="float64")


def _result_dtype(*arrays):
    dt = np.result_type(*[a for a in arrays if a is not None])
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float64)


def onnx_to_state_dict(cell, W, R, B=None, P=None):
    """PyTorch-named layer-0 weights from ONNX tensors. Returns a dict name -> ndarray, with
    'weight_peephole_l0[_reverse]' (order i, f, o) when P is given. B absent means no bias
    (ONNX: zero bias), so no bias entries."""
    family = _cell_family(cell)
    W, R, B, P = (_to_numpy(a, n) for a, n in ((W, "W"), (R, "R"), (B, "B"), (P, "P")))
    D, I, H = onnx_sizes(family, W, R)
    if P is not None and family != "lstm":
        raise _rnnx.InvalidArgumentError(f"P (peepholes) is only defined for LSTM, not {cell}")
    cfg = _layer_config(family, I, H, D == 2, B is not None, P is not None)
    flat = np.zeros(cfg.weights_numel(), dtype=np.float64)
    _rnnx.import_onnx_layer(cfg, 0, W, R, B, P, flat)
    dtype = _result_dtype(W, R, B, P)
    return {p.name: flat[p.offset:p.offset + p.numel].reshape(p.shape).astype(dtype)
            for p in cfg.weight_params()}


def state_dict_to_onnx(cell, state_dict, hidden_size, bidirectional=False, layer=0):
    """ONNX (W, R, B) of one layer from PyTorch-named weights (B is None without biases),
    or (W, R, B, P) when the state dict has LSTM peepholes (weight_peephole_l{layer}).
    Projection weights have no ONNX counterpart and are refused."""
    family = _cell_family(cell)
    H = int(hidden_size)
    layer = int(layer)
    if any(k.startswith("weight_hr_") for k in state_dict):
        raise _rnnx.UnsupportedError("ONNX has no LSTM projection (weight_hr_*)")
    sfx = f"_l{layer}"
    if "weight_ih" + sfx not in state_dict:
        raise _rnnx.InvalidArgumentError(f"state_dict has no weight_ih{sfx}")
    w_ih = _to_numpy(state_dict["weight_ih" + sfx], "weight_ih" + sfx)
    if w_ih.ndim != 2:
        raise _rnnx.InvalidArgumentError(f"weight_ih{sfx} must be 2-D, got shape {w_ih.shape}")
    # Layers above 0 read D*H inputs whatever input_size is; layer 0 reads w_ih's columns.
    input_size = w_ih.shape[1] if layer == 0 else 1
    cfg = _layer_config(family, input_size, H, bool(bidirectional),
                        "bias_ih" + sfx in state_dict, "weight_peephole" + sfx in state_dict,
                        num_layers=layer + 1)
    flat = np.zeros(cfg.weights_numel(), dtype=np.float64)
    dtypes = []
    for p in cfg.weight_params():
        if p.layer != layer:
            continue
        if p.name not in state_dict:
            raise _rnnx.InvalidArgumentError(f"state_dict has no {p.name}")
        v = _to_numpy(state_dict[p.name], p.name)
        if tuple(v.shape) != tuple(p.shape):
            raise _rnnx.InvalidArgumentError(f"{p.name} has shape {tuple(v.shape)}, expected "
                                             f"{tuple(p.shape)}")
        flat[p.offset:p.offset + p.numel] = v.reshape(-1)
        dtypes.append(v.dtype)
    W, R, B, P = _rnnx.export_onnx_layer(cfg, layer, flat)
    dtype = _result_dtype(*[np.empty(0, dt) for dt in dtypes])
    out = tuple(None if a is None else a.astype(dtype) for a in (W, R, B, P))
    return out if cfg.peephole else out[:3]


# ONNX Runtime's com.microsoft DynamicQuantizeLSTM: the LSTM with int8 (or uint8) weights,
# W_quantized [D, I, 4H] and R_quantized [D, H, 4H] (ONNX's W and R transposed), scales and
# zero points per tensor [D] or per output channel [D, 4H], gates i, o, f, c, B and P as
# ONNX's LSTM. rnnx's math='int8' (docs/int8.md) quantises float weights per output channel,
# symmetrically, with round half to even: the function below is that rule, so that an
# exported node carries the very integers rnnx multiplies by.

def int8_quantize_rows(w):
    """rnnx's weight quantisation of each row of w [..., K] (one output channel a row):
    (q int8 [..., K], scale float32 [...]); scale = max|row| / 127, q = round-half-even(
    w * (127 / max)) in [-127, 127]; an all-zero row scale 0, a row with NaN or inf scale NaN
    and q 0 (src/cpu/kernels/packed_gemm_s8.inl)."""
    w = np.asarray(w, dtype=np.float32)
    amax = np.abs(w).max(axis=-1) if w.shape[-1] else np.zeros(w.shape[:-1], np.float32)
    bad = ~np.isfinite(w).all(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (amax / np.float32(127)).astype(np.float32)
        inv = (np.float32(127) / amax).astype(np.float32)
        q = np.rint(w * inv[..., None]).clip(-127, 127)
    zero = bad | (amax == 0)
    q = np.where(zero[..., None], 0, q).astype(np.int8)
    scale = np.where(bad, np.float32(np.nan), scale).astype(np.float32)
    return q, scale


def _dequantize(q, scale, zero_point, name):
    q = None if q is None else np.asarray(q)
    if q is not None and q.dtype not in (np.int8, np.uint8):
        raise _rnnx.InvalidArgumentError(f"{name} must be int8 or uint8, got dtype {q.dtype}")
    if q is None or q.ndim != 3:
        raise _rnnx.InvalidArgumentError(f"{name} must be 3-D [D, rows, 4H], got "
                                         f"{None if q is None else q.shape}")
    D, _, G = q.shape
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.zeros_like(scale, dtype=np.int32) if zero_point is None else \
        np.asarray(zero_point).astype(np.int32)
    if scale.shape not in ((D,), (D, G)) or zp.shape != scale.shape:
        raise _rnnx.InvalidArgumentError(
            f"{name}'s scale and zero point must both be [D] = [{D}] (per tensor) or [D, 4H] = "
            f"[{D}, {G}] (per output channel), got {scale.shape} and {zp.shape}")
    if scale.ndim == 1:
        scale, zp = scale[:, None], zp[:, None]
    return ((q.astype(np.int32) - zp[:, None, :]).astype(np.float32) *
            scale[:, None, :]).astype(np.float32)


def dynamic_quantize_lstm_to_state_dict(W_quantized, R_quantized, W_scale, W_zero_point,
                                        R_scale, R_zero_point, B=None, P=None, exact=False):
    """PyTorch-named float weights of one LSTM layer from DynamicQuantizeLSTM's inputs: each
    weight (q - zero_point) * scale. rnnx's math='int8' quantises these floats back to the
    same integers when the node's weights are symmetric per output channel with each
    channel's largest |q| at 127 (what onnxruntime.quantization.quantize_dynamic writes with
    per_channel=True, and what state_dict_to_dynamic_quantize_lstm writes). exact=True checks
    that it does and raises rnnx.UnsupportedError naming the first weight that would change
    (per-tensor scales, zero points, uint8 weights, channels that never reach 127)."""
    Wf = _dequantize(W_quantized, W_scale, W_zero_point, "W_quantized")
    Rf = _dequantize(R_quantized, R_scale, R_zero_point, "R_quantized")
    if exact:
        for name, q, f in (("W_quantized", W_quantized, Wf), ("R_quantized", R_quantized, Rf)):
            back, _ = int8_quantize_rows(np.swapaxes(f, 1, 2))
            q = np.swapaxes(np.asarray(q).astype(np.int32), 1, 2)
            diff = np.argwhere(back.astype(np.int32) != q)
            if len(diff):
                d, g, k = diff[0]
                raise _rnnx.UnsupportedError(
                    f"{name}[{d}, {k}, {g}] = {q[d, g, k]} would become {back[d, g, k]} in "
                    "rnnx's int8 (which quantises each output channel symmetrically to a "
                    "largest |q| of 127)")
    return onnx_to_state_dict("lstm", np.swapaxes(Wf, 1, 2), np.swapaxes(Rf, 1, 2), B, P)


def state_dict_to_dynamic_quantize_lstm(state_dict, hidden_size, bidirectional=False, layer=0):
    """DynamicQuantizeLSTM's weight inputs for one layer of an LSTM's PyTorch-named weights,
    quantised as rnnx's math='int8' quantises them: a dict of W_quantized [D, I, 4H],
    R_quantized [D, H, 4H] (int8), W_scale, R_scale [D, 4H] (float32), W_zero_point,
    R_zero_point [D, 4H] (int8 zeros), B [D, 8H] (or None) and P [D, 3H] (or None)."""
    out = state_dict_to_onnx("lstm", state_dict, hidden_size, bidirectional, layer)
    W, R, B = out[:3]
    P = out[3] if len(out) > 3 else None
    res = {"B": None if B is None else np.asarray(B, np.float32),
           "P": None if P is None else np.asarray(P, np.float32)}
    for name, m in (("W", W), ("R", R)):
        q, scale = int8_quantize_rows(m)  # rows of ONNX's [D, 4H, K]: output channels
        res[f"{name}_quantized"] = np.ascontiguousarray(np.swapaxes(q, 1, 2))
        res[f"{name}_scale"] = scale
        res[f"{name}_zero_point"] = np.zeros(scale.shape, np.int8)
    return res


def _dq_node(model, node):
    """(ModelProto, the DynamicQuantizeLSTM NodeProto) of `model` (a path, bytes or
    ModelProto) and `node` (a name, an index among such nodes, or None: the only one)."""
    import onnx
    if isinstance(model, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(model))
    elif not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    nodes = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    if node is None:
        if len(nodes) != 1:
            raise _rnnx.InvalidArgumentError(
                f"node=None needs exactly one DynamicQuantizeLSTM node, the model has "
                f"{len(nodes)}: pass its name or index")
        return model, nodes[0]
    if isinstance(node, int):
        if not 0 <= node < len(nodes):
            raise _rnnx.InvalidArgumentError(f"node={node}: the model has {len(nodes)} "
                                             "DynamicQuantizeLSTM nodes")
        return model, nodes[node]
    named = [n for n in nodes if n.name == node]
    if not named:
        raise _rnnx.InvalidArgumentError(
            f"node='{node}': no DynamicQuantizeLSTM of that name (the model's: "
            f"{[n.name for n in nodes]})")
    return model, named[0]


def dynamic_quantize_lstm_module(model, node=None, exact=True):
    """An rnnx.torch.LSTM(math='int8'), frozen and in eval mode, running ONNX Runtime's
    com.microsoft DynamicQuantizeLSTM `node` of `model` (an ONNX file's path, its bytes or an
    onnx.ModelProto; node: the node's name, its index among the model's DynamicQuantizeLSTM
    nodes, or None for the only one). hidden_size, direction, clip (rnnx's gate_clip),
    input_forget and activations come from the node's attributes; the float parameters from
    its int8 weights, scales and zero points (initializers), B and P, through
    dynamic_quantize_lstm_to_state_dict(exact=exact): with exact=True (the default) rnnx's
    int8 multiplies by the node's very integers, or the import is refused naming the first
    weight that would change. Call it as the node's LSTM: x [T, B, I], lengths for
    sequence_lens, (h0, c0) for initial_h and initial_c."""
    import torch
    from onnx import numpy_helper

    from . import torch as rt
    model, nd = _dq_node(model, node)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    names = list(nd.input) + [""] * (12 - len(nd.input))

    def value(k, what, required):
        name = names[k]
        if not name:
            if required:
                raise _rnnx.InvalidArgumentError(f"DynamicQuantizeLSTM '{nd.name}' has no {what}")
            return None
        if name not in inits:
            raise _rnnx.UnsupportedError(
                f"DynamicQuantizeLSTM '{nd.name}': {what} ('{name}') is computed in the graph, "
                "not an initializer; fold it first (an ONNX Runtime session's "
                "optimized_model_filepath writes the folded model)")
        return inits[name]

    Wq, Rq = value(1, "W", True), value(2, "R", True)
    B, P = value(3, "B", False), value(7, "P", False)
    Ws, Wz = value(8, "W_scale", True), value(9, "W_zero_point", False)
    Rs, Rz = value(10, "R_scale", True), value(11, "R_zero_point", False)
    attrs = {a.name: _onnx_attr(a) for a in nd.attribute}
    unknown = set(attrs) - {"hidden_size", "direction", "clip", "input_forget", "activations",
                            "activation_alpha", "activation_beta"}
    if unknown:
        raise _rnnx.UnsupportedError(f"DynamicQuantizeLSTM '{nd.name}': attributes "
                                     f"{sorted(unknown)} have no rnnx counterpart")
    sd = dynamic_quantize_lstm_to_state_dict(Wq, Rq, Ws, Wz, Rs, Rz, B, P, exact=exact)
    D, I, G = np.asarray(Wq).shape
    H = G // 4
    if "hidden_size" in attrs and int(attrs["hidden_size"]) != H:
        raise _rnnx.InvalidArgumentError(f"DynamicQuantizeLSTM '{nd.name}': hidden_size "
                                         f"{attrs['hidden_size']} but W has 4H = {G} columns")
    bidirectional, reverse = onnx_direction(attrs.get("direction"), D)
    acts = onnx_activations(attrs.get("activations"), attrs.get("activation_alpha"),
                            attrs.get("activation_beta"))
    if acts is not None and D == 2:
        if acts[:3] != acts[3:]:
            raise _rnnx.UnsupportedError(
                f"DynamicQuantizeLSTM '{nd.name}': different activations per direction "
                f"({acts[:3]} and {acts[3:]}); rnnx applies one list to both")
        acts = acts[:3]
    m = rt.LSTM(I, H, bias=B is not None, bidirectional=bidirectional, reverse=reverse,
                peephole=P is not None, gate_clip=float(attrs.get("clip", 0.0)),
                input_forget=bool(attrs.get("input_forget", 0)),
                activations=None if acts is None else [list(a) for a in acts], math="int8")
    m.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v, np.float32))
                       for k, v in sd.items()})
    for p in m.parameters():
        p.requires_grad_(False)
    return m.eval()


def _onnx_attr(a):
    from onnx import helper
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v
