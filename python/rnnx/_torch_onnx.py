"""torch.onnx.export of models holding rnnx.torch modules: torch.ops.rnnx.forward translated
to ONNX's own LSTM, GRU and RNN nodes (one per layer, both directions in one node), with
`sequence_lens` from lengths=, so any ONNX runtime runs the exported model.

    torch.onnx.export(model, args, "model.onnx", dynamo=True,
                      custom_translation_table=rnnx.torch.onnx_translation_table())

PyTorch's exporter (2.6+, with onnxscript) calls `forward` below with the operator's
arguments: tensors as symbolic ONNX values, the rest as Python values. What ONNX's nodes
cannot express is refused with rnnx.UnsupportedError naming it, never dropped silently:
projection (proj_size), cell and projection clipping (ONNX's `clip` clips the gates' inputs:
rnnx's gate_clip, which is exported), dropout (export in eval()), padding_fill other than 0
(ONNX writes 0 past a sequence's end) and PackedSequence input (export the padded batch
with lengths= instead).
"""

import json

from . import _rnnx

# PyTorch's gate blocks in ONNX's order, as indices into PyTorch's: LSTM i f g o -> i o f c,
# GRU r z n -> z r h; the peepholes (rnnx: i f o) -> ONNX's P: i o f.
_GATES = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_tanh": (0,), "rnn_relu": (0,)}
_PEEPHOLES = (0, 2, 1)
_ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}
# Activations rnnx's cells use when none are given, in ONNX's names.
_DEFAULT_ACTIVATIONS = {"lstm": ["Sigmoid", "Tanh", "Tanh"], "gru": ["Sigmoid", "Tanh"],
                        "rnn_tanh": ["Tanh"], "rnn_relu": ["Relu"]}


def _refuse(what):
    raise _rnnx.UnsupportedError(f"rnnx.torch ONNX export: {what}")


def _check_exportable(kw, batch_sizes):
    if batch_sizes is not None:
        _refuse("a PackedSequence input has no ONNX equivalent; export the padded batch with "
                "lengths= (ONNX's sequence_lens)")
    if kw.get("proj_size"):
        _refuse(f"proj_size={kw['proj_size']}: ONNX's LSTM has no projection")
    for name in ("cell_clip", "proj_clip"):
        if kw.get(name) is not None:
            _refuse(f"{name}={tuple(kw[name])}: ONNX has no {name.split('_')[0]} clipping "
                    "(its `clip` attribute is rnnx's gate_clip)")
    if kw.get("dropout"):
        _refuse(f"dropout={kw['dropout']} applies in training; export the model in eval()")
    if kw.get("padding_fill"):
        _refuse(f"padding_fill={kw['padding_fill']}: ONNX's outputs are 0 past a sequence's "
                "end")


def forward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
            backend, num_threads, batch_first, training, dropout_counter, static_reserve):
    """The ONNX graph of torch.ops.rnnx.forward: (y, hy, cy, reserve)."""
    from onnxscript import opset18 as op

    kw = json.loads(config)
    _check_exportable(kw, batch_sizes)
    cell = kw["cell"]
    H = int(kw["hidden_size"])
    L = int(kw.get("num_layers", 1))
    D = 2 if kw.get("bidirectional") else 1
    lstm = cell == "lstm"
    per_direction = 2 + (2 if kw.get("bias", True) else 0) + (1 if kw.get("peephole") else 0)
    if len(weights) != L * D * per_direction:
        _refuse(f"{len(weights)} weight tensors for {L} layers x {D} directions of "
                f"{per_direction}")
    gates = _GATES[cell]

    def blocks(t, order):
        """t's blocks along dim 0 (equal parts, as many as `order` names) in that order."""
        if len(order) == 1:
            return t
        parts = op.Split(t, axis=0, num_outputs=len(order))
        return op.Concat(*[parts[i] for i in order], axis=0)

    attrs = {"hidden_size": H}
    if D == 2:
        attrs["direction"] = "bidirectional"
    elif kw.get("reverse"):
        attrs["direction"] = "reverse"
    names = kw.get("activations")
    if names:
        attrs["activations"] = [a[0] for a in names]
        alphas = [float(a[1]) for a in names]
        betas = [float(a[2]) for a in names]
        if any(alphas):
            attrs["activation_alpha"] = alphas
        if any(betas):
            attrs["activation_beta"] = betas
    else:
        attrs["activations"] = _DEFAULT_ACTIVATIONS[cell] * D
    if kw.get("gate_clip"):
        attrs["clip"] = float(kw["gate_clip"])
    if lstm and kw.get("input_forget"):
        attrs["input_forget"] = 1
    if cell == "gru":
        attrs["linear_before_reset"] = 1 if kw.get("gru_linear_before_reset", True) else 0

    seq = None if lengths is None else op.Cast(lengths, to=6)  # INT32
    inp = op.Transpose(x, perm=[1, 0, 2]) if batch_first else x
    hys, cys = [], []
    for layer in range(L):
        W, R, B, P = [], [], [], []
        for d in range(D):
            group = weights[(layer * D + d) * per_direction:(layer * D + d + 1) * per_direction]
            W.append(op.Unsqueeze(blocks(group[0], gates), [0]))
            R.append(op.Unsqueeze(blocks(group[1], gates), [0]))
            if kw.get("bias", True):
                B.append(op.Unsqueeze(op.Concat(blocks(group[2], gates),
                                                blocks(group[3], gates), axis=0), [0]))
            if kw.get("peephole"):
                P.append(op.Unsqueeze(blocks(group[-1], _PEEPHOLES), [0]))

        def stack(vs):
            return None if not vs else (vs[0] if len(vs) == 1 else op.Concat(*vs, axis=0))

        h0 = None if hx is None else op.Slice(hx, [layer * D], [(layer + 1) * D], [0])
        args = [inp, stack(W), stack(R), stack(B), seq, h0]
        if lstm:
            c0 = None if cx is None else op.Slice(cx, [layer * D], [(layer + 1) * D], [0])
            args += [c0, stack(P)]
            Y, Yh, Yc = op.LSTM(*args, **attrs)
            cys.append(Yc)
        elif cell == "gru":
            Y, Yh = op.GRU(*args, **attrs)
        else:
            Y, Yh = op.RNN(*args, **attrs)
        hys.append(Yh)
        # Y [T, D, B, H] -> [T, B, D * H], the next layer's input and the output.
        inp = op.Reshape(op.Transpose(Y, perm=[0, 2, 1, 3]), op.Constant(value_ints=[0, 0, -1]))
    y = op.Transpose(inp, perm=[1, 0, 2]) if batch_first else inp
    hy = hys[0] if L == 1 else op.Concat(*hys, axis=0)
    none = op.ConstantOfShape(op.Constant(value_ints=[0]))  # a tensor of shape (0,)
    cy = (cys[0] if L == 1 else op.Concat(*cys, axis=0)) if lstm else op.CastLike(none, x)
    reserve = op.Cast(none, to=2)  # UINT8, empty: inference keeps nothing
    return y, hy, cy, reserve


def translation_table():
    """{torch.ops.rnnx.forward.default: its ONNX translation}: torch.onnx.export's
    custom_translation_table (dynamo=True)."""
    import torch
    if not hasattr(torch.ops, "rnnx") or not hasattr(torch.ops.rnnx, "forward"):
        raise _rnnx.UnsupportedError(
            f"rnnx.torch ONNX export needs PyTorch 2.6 or later (torch.export-based "
            f"exporter and rnnx's operator); this is {torch.__version__}")
    return {torch.ops.rnnx.forward.default: forward}
