"""ONNX LSTM/GRU/RNN weights (W, R, B, P) <-> PyTorch-named weights (rnnx's layout).

ONNX stacks gate blocks as LSTM i, o, f, c and GRU z, r, h; PyTorch (and rnnx) as LSTM
i, f, g, o and GRU r, z, n (docs/math.md). ONNX keeps both biases in one tensor,
B = [Wb, Rb] per direction, and LSTM peepholes P in order i, o, f. ONNX operators are
single-layer, so everything here is layer 0, with direction index 1 as "_reverse".

The permutation lives here, in Python, until src/core gains its own converters; it only
moves whole gate blocks, so it is exact.
"""

import numpy as np

from . import _rnnx

# torch gate block k comes from ONNX gate block ONNX_TO_TORCH[cell][k].
ONNX_TO_TORCH = {
    "lstm": (0, 2, 3, 1),   # i <- i, f <- f, g <- c, o <- o   (ONNX: i0 o1 f2 c3)
    "gru": (1, 0, 2),       # r <- r, z <- z, n <- h           (ONNX: z0 r1 h2)
    "rnn": (0,),
}
# ONNX gate block k comes from torch gate block TORCH_TO_ONNX[cell][k].
TORCH_TO_ONNX = {
    cell: tuple(int(i) for i in np.argsort(perm)) for cell, perm in ONNX_TO_TORCH.items()
}
# ONNX peepholes P are (i, o, f); rnnx's weight_peephole_l{k} (issue 4) are (i, f, o).
PEEPHOLE_ONNX_TO_TORCH = (0, 2, 1)
GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def _cell_family(cell):
    if cell in ("rnn", "rnn_tanh", "rnn_relu"):
        return "rnn"
    if cell in ("lstm", "gru"):
        return cell
    raise _rnnx.InvalidArgumentError(f"cell '{cell}' is not one of: lstm, gru, rnn")


def permute_gates(a, perm, hidden_size):
    """Reorder the gate blocks (each hidden_size rows) along axis 0 of a."""
    a = np.asarray(a)
    blocks = a.reshape((len(perm), hidden_size) + a.shape[1:])
    return np.ascontiguousarray(blocks[list(perm)].reshape(a.shape))


def _to_numpy(a, name):
    if a is None:
        return None
    if hasattr(a, "detach"):  # torch tensor
        a = a.detach().cpu().numpy()
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


def onnx_to_state_dict(cell, W, R, B=None, P=None):
    """PyTorch-named layer-0 weights from ONNX tensors. Returns a dict name -> ndarray, with
    'weight_peephole_l0[_reverse]' (order i, f, o) when P is given. B absent means no bias
    (ONNX: zero bias), so no bias entries."""
    family = _cell_family(cell)
    W, R, B, P = (_to_numpy(a, n) for a, n in ((W, "W"), (R, "R"), (B, "B"), (P, "P")))
    D, _, H = onnx_sizes(family, W, R)
    G = GATES[family]
    perm = ONNX_TO_TORCH[family]
    if B is not None and B.shape != (D, 2 * G * H):
        raise _rnnx.InvalidArgumentError(f"B has shape {B.shape}, expected {(D, 2 * G * H)}")
    if P is not None:
        if family != "lstm":
            raise _rnnx.InvalidArgumentError(f"P (peepholes) is only defined for LSTM, not {cell}")
        if P.shape != (D, 3 * H):
            raise _rnnx.InvalidArgumentError(f"P has shape {P.shape}, expected {(D, 3 * H)}")
    out = {}
    for d in range(D):
        sfx = "_l0" + ("_reverse" if d == 1 else "")
        out["weight_ih" + sfx] = permute_gates(W[d], perm, H)
        out["weight_hh" + sfx] = permute_gates(R[d], perm, H)
        if B is not None:
            out["bias_ih" + sfx] = permute_gates(B[d, :G * H], perm, H)
            out["bias_hh" + sfx] = permute_gates(B[d, G * H:], perm, H)
        if P is not None:
            out["weight_peephole" + sfx] = permute_gates(P[d], PEEPHOLE_ONNX_TO_TORCH, H)
    return out


def state_dict_to_onnx(cell, state_dict, hidden_size, bidirectional=False, layer=0):
    """ONNX (W, R, B) of one layer from PyTorch-named weights (B is None without biases;
    projection weights have no ONNX counterpart and are refused)."""
    family = _cell_family(cell)
    H = int(hidden_size)
    perm = TORCH_TO_ONNX[family]
    if any(k.startswith("weight_hr_") for k in state_dict):
        raise _rnnx.UnsupportedError("ONNX has no LSTM projection (weight_hr_*)")
    Ws, Rs, Bs = [], [], []
    for d in range(2 if bidirectional else 1):
        sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")

        def get(name):
            v = state_dict[name + sfx]
            return _to_numpy(v, name + sfx)

        Ws.append(permute_gates(get("weight_ih"), perm, H))
        Rs.append(permute_gates(get("weight_hh"), perm, H))
        if "bias_ih" + sfx in state_dict:
            Bs.append(np.concatenate([permute_gates(get("bias_ih"), perm, H),
                                      permute_gates(get("bias_hh"), perm, H)]))
    return np.stack(Ws), np.stack(Rs), (np.stack(Bs) if Bs else None)
