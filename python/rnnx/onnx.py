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
