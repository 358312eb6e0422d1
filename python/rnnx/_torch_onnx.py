"""torch.onnx.export of models holding rnnx.torch modules, every config:

    torch.onnx.export(model, (x, lengths), "model.onnx")      # PyTorch 2.8+ (dynamo=True)

* What ONNX's own LSTM, GRU and RNN nodes express becomes those nodes (one per layer, both
  directions in one node, `sequence_lens` from lengths=), which every ONNX runtime runs:
  the cells, layers, directions, bias, batch_first, hx, and ONNX's options (activations,
  `clip` = rnnx's gate_clip, peepholes, input_forget, reverse, both GRU variants);
  with lengths=, a Where after the last node writes padding_fill past each end (what a
  node writes there is left to the runtime: ONNX Runtime's LSTM writes state values).
* What no ONNX node expresses (projection, cell and projection clipping) becomes the
  recurrence in tensor operations (rnnx/_torch_recurrence.py), each layer and direction's
  time loop one ONNX Scan.
* An int8 module (math='int8', rnnx.torch.quantize_dynamic) becomes ONNX Runtime's
  com.microsoft DynamicQuantizeLSTM, one per layer: int8 weights quantised from the float
  parameters in the graph by rnnx's own rule (per output channel, symmetric, round half to
  even; rnnx.onnx.int8_quantize_rows), so the node multiplies the integers rnnx does. No
  int8 node exists for GRU, RNN or the Scan form: those are refused by name (an int8 module
  is a demand, not exported as float behind the user's back).

While torch.onnx.export traces a module's forward (torch.onnx.is_in_onnx_export()), the
module builds these graphs itself (module_forward, through torch.onnx.ops.symbolic_multi_out
for the nodes) instead of calling rnnx's operator. A program already holding
torch.ops.rnnx.forward (torch.export.export first) is exported with
custom_translation_table=rnnx.torch.onnx_translation_table() (forward below, the same nodes
in onnxscript; the Scan form needs the module route). Refused by name: dropout in training
(export in eval()) and PackedSequence input (export the padded batch with lengths=).
"""

from . import _rnnx
from . import _torch_recurrence
from . import onnx as _onnx

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


def exporting():
    """Whether torch.onnx.export is tracing this call."""
    import torch
    onnx = getattr(torch, "onnx", None)
    return onnx is not None and hasattr(onnx, "is_in_onnx_export") and onnx.is_in_onnx_export()


def check_exportable(kw, batch_sizes):
    if batch_sizes is not None:
        _refuse("a PackedSequence input has no ONNX equivalent; export the padded batch with "
                "lengths= (ONNX's sequence_lens)")
    if kw.get("dropout"):
        _refuse(f"dropout={kw['dropout']} applies in training; export the model in eval()")
    if kw.get("math") == "int8":
        _check_int8_exportable(kw)


def _check_int8_exportable(kw):
    if kw["cell"] != "lstm":
        _refuse(f"math='int8' {kw['cell']}: ONNX has no int8 {kw['cell'].upper()} node (ONNX "
                "Runtime's int8 recurrent node is DynamicQuantizeLSTM); export the float "
                "model (math='fp32') instead")
    scan = _needs_scan(kw)
    if scan is not None:
        _refuse(f"math='int8' with {scan}: DynamicQuantizeLSTM has neither; export the float "
                "model (math='fp32') instead")


def _int8_rows(w):
    """rnnx's weight quantisation (rnnx.onnx.int8_quantize_rows) of each row of w [..., K]
    in torch operations: (q int8, scale float32), the same float32 operations in the same
    order, so the same integers."""
    import torch
    w = w.to(torch.float32)
    amax = w.abs().amax(dim=-1)
    scale = amax / 127.0
    zero = amax == 0
    inv = torch.where(zero, torch.ones_like(amax), 127.0 / torch.where(zero, 1.0, amax))
    q = torch.round(w * inv.unsqueeze(-1)).clamp(-127, 127)
    q = torch.where(zero.unsqueeze(-1), torch.zeros_like(q), q)
    return q.to(torch.int8), scale


def _needs_scan(kw):
    """What of the config no ONNX node expresses, in words, or None."""
    if kw.get("proj_size"):
        return f"proj_size={kw['proj_size']} (ONNX's LSTM has no projection)"
    for name in ("cell_clip", "proj_clip"):
        if _torch_recurrence.clip_range(kw.get(name)) is not None:
            return (f"{name}={tuple(kw[name])} (ONNX's `clip` clips the gates' inputs: "
                    "rnnx's gate_clip)")
    return None


class _Layout:
    """The ONNX node of one config: its op, attributes and where its weights come from."""

    def __init__(self, kw, weights):
        cell = kw["cell"]
        self.cell, self.lstm = cell, cell == "lstm"
        self.H = int(kw["hidden_size"])
        self.L = int(kw.get("num_layers", 1))
        self.D = 2 if kw.get("bidirectional") else 1
        self.bias = bool(kw.get("bias", True))
        self.peephole = bool(kw.get("peephole"))
        self.gates = _GATES[cell]
        self.op = _ONNX_OP[cell]
        per_direction = 2 + (2 if self.bias else 0) + (1 if self.peephole else 0)
        if len(weights) != self.L * self.D * per_direction:
            _refuse(f"{len(weights)} weight tensors for {self.L} layers x {self.D} directions "
                    f"of {per_direction}")
        self.per_direction = per_direction
        attrs = {"hidden_size": self.H}
        if self.D == 2:
            attrs["direction"] = "bidirectional"
        elif kw.get("reverse"):
            attrs["direction"] = "reverse"
        names = kw.get("activations")
        if names:
            # rnnx's one list applies to each direction; ONNX lists every direction's.
            acts, alphas, betas = _onnx.activation_attributes(list(names) * self.D)
            attrs["activations"] = acts
            if alphas:
                attrs["activation_alpha"] = alphas
            if betas:
                attrs["activation_beta"] = betas
        else:
            attrs["activations"] = _DEFAULT_ACTIVATIONS[cell] * self.D
        if kw.get("gate_clip"):
            attrs["clip"] = float(kw["gate_clip"])
        if self.lstm and kw.get("input_forget"):
            attrs["input_forget"] = 1
        if cell == "gru":
            attrs["linear_before_reset"] = 1 if kw.get("gru_linear_before_reset", True) else 0
        self.attrs = attrs

    def groups(self, weights, layer):
        """Per direction of the layer: (w_ih, w_hh, b_ih, b_hh, peephole), None where absent."""
        out = []
        for d in range(self.D):
            at = (layer * self.D + d) * self.per_direction
            g = list(weights[at:at + self.per_direction])
            b = g[2:4] if self.bias else [None, None]
            out.append((g[0], g[1], b[0], b[1], g[-1] if self.peephole else None))
        return out


# ---- the module's route: torch operations and torch.onnx.ops' ONNX nodes -------------------

def module_forward(kw, names, x, hx, cx, weights, lengths, batch_sizes, batch_first):
    """(y, hy, cy) of a module's call while torch.onnx.export traces it: ONNX's nodes where
    they express the config, else the recurrence with one Scan per time loop."""
    import torch
    check_exportable(kw, batch_sizes)
    int8 = kw.get("math") == "int8"
    if _needs_scan(kw) is not None:
        return _torch_recurrence.forward(kw, names, x, hx, cx, weights, lengths, None, None,
                                         batch_first, scan=True)
    if not hasattr(getattr(torch.onnx, "ops", None), "symbolic_multi_out"):
        _refuse(f"PyTorch {torch.__version__} has no torch.onnx.ops.symbolic_multi_out "
                "(2.8+), which emits ONNX's LSTM/GRU/RNN nodes")
    lay = _Layout(kw, weights)
    H, D = lay.H, lay.D

    def blocks(t, order):
        if len(order) == 1:
            return t
        parts = t.chunk(len(order), 0)
        return torch.cat([parts[i] for i in order], 0)

    seq = None if lengths is None else lengths.to(torch.int32)
    inp = x.transpose(0, 1) if batch_first else x
    T, B = inp.shape[0], inp.shape[1]
    hys, cys = [], []
    for layer in range(lay.L):
        gs = lay.groups(weights, layer)
        W = torch.stack([blocks(g[0], lay.gates) for g in gs])
        R = torch.stack([blocks(g[1], lay.gates) for g in gs])
        Bv = (torch.stack([torch.cat([blocks(g[2], lay.gates), blocks(g[3], lay.gates)])
                           for g in gs]) if lay.bias else None)
        h0 = None if hx is None else hx[layer * D:(layer + 1) * D]
        inputs = [inp, W, R, Bv, seq, h0]
        n_out = 2
        if lay.lstm:
            c0 = None if cx is None else cx[layer * D:(layer + 1) * D]
            Pv = (torch.stack([blocks(g[4], _PEEPHOLES) for g in gs]) if lay.peephole
                  else None)
            inputs += [c0, Pv]
            n_out = 3
        op, version = lay.op, None
        if int8:
            # DynamicQuantizeLSTM: W [D, I, 4H] and R [D, H, 4H] (ONNX's transposed), then
            # scales and zero points per output channel after the LSTM's inputs.
            (Wq, Ws), (Rq, Rs) = _int8_rows(W), _int8_rows(R)
            zp = torch.zeros(Ws.shape, dtype=torch.int8)
            inputs[1:3] = [Wq.transpose(1, 2), Rq.transpose(1, 2)]
            inputs += [Ws, zp, Rs, zp]
            op, version = "com.microsoft::DynamicQuantizeLSTM", 1
        while inputs[-1] is None:  # ONNX leaves trailing optional inputs out
            inputs.pop()
        outs = torch.onnx.ops.symbolic_multi_out(
            op, inputs, lay.attrs, dtypes=[x.dtype] * n_out,
            shapes=[[T, D, B, H]] + [[D, B, H]] * (n_out - 1), version=version)
        hys.append(outs[1])
        if lay.lstm:
            cys.append(outs[2])
        # Y [T, D, B, H] -> [T, B, D * H], the next layer's input and the output.
        inp = outs[0].permute(0, 2, 1, 3).reshape(T, B, D * H)
    if lengths is not None:  # ONNX leaves what a node writes past an end to the runtime
        fill = float(kw.get("padding_fill") or 0.0)
        mask = (torch.arange(T).unsqueeze(1) < lengths.to(torch.int64).unsqueeze(0))
        inp = torch.where(mask.unsqueeze(2), inp, inp.new_full((), fill))
    y = inp.transpose(0, 1) if batch_first else inp
    hy = hys[0] if lay.L == 1 else torch.cat(hys)
    cy = (cys[0] if lay.L == 1 else torch.cat(cys)) if lay.lstm else None
    return y, hy, cy


# ---- the translation table's route: onnxscript, for programs holding rnnx's operator ------

def forward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
            backend, num_threads, batch_first, training, dropout_counter, static_reserve):
    """The ONNX graph of torch.ops.rnnx.forward: (y, hy, cy, reserve)."""
    from onnxscript import opset18 as op

    from . import _torch_ops  # which imports this module

    kw = _torch_ops.config_info(config).kwargs
    check_exportable(kw, batch_sizes)
    if kw.get("math") == "int8":
        _refuse("math='int8': DynamicQuantizeLSTM is emitted by the module itself while "
                "torch.onnx.export traces it; export the model rather than a program holding "
                "torch.ops.rnnx.forward")
    scan = _needs_scan(kw)
    if scan is not None:
        _refuse(f"{scan}: this is exported as the recurrence with ONNX Scans, which the module "
                "builds while torch.onnx.export traces it; export the model itself rather "
                "than a program holding torch.ops.rnnx.forward")
    lay = _Layout(kw, weights)
    H, D = lay.H, lay.D

    def blocks(t, order):
        """t's blocks along dim 0 (equal parts, as many as `order` names) in that order."""
        if len(order) == 1:
            return t
        parts = op.Split(t, axis=0, num_outputs=len(order))
        return op.Concat(*[parts[i] for i in order], axis=0)

    def stack(vs):
        vs = [op.Unsqueeze(v, [0]) for v in vs]
        return vs[0] if len(vs) == 1 else op.Concat(*vs, axis=0)

    seq = None if lengths is None else op.Cast(lengths, to=6)  # INT32
    inp = op.Transpose(x, perm=[1, 0, 2]) if batch_first else x
    hys, cys = [], []
    for layer in range(lay.L):
        gs = lay.groups(weights, layer)
        W = stack([blocks(g[0], lay.gates) for g in gs])
        R = stack([blocks(g[1], lay.gates) for g in gs])
        Bv = (stack([op.Concat(blocks(g[2], lay.gates), blocks(g[3], lay.gates), axis=0)
                     for g in gs]) if lay.bias else None)
        h0 = None if hx is None else op.Slice(hx, [layer * D], [(layer + 1) * D], [0])
        args = [inp, W, R, Bv, seq, h0]
        if lay.lstm:
            c0 = None if cx is None else op.Slice(cx, [layer * D], [(layer + 1) * D], [0])
            args += [c0, stack([blocks(g[4], _PEEPHOLES) for g in gs]) if lay.peephole
                     else None]
            Y, Yh, Yc = op.LSTM(*args, **lay.attrs)
            cys.append(Yc)
        elif lay.cell == "gru":
            Y, Yh = op.GRU(*args, **lay.attrs)
        else:
            Y, Yh = op.RNN(*args, **lay.attrs)
        hys.append(Yh)
        # Y [T, D, B, H] -> [T, B, D * H], the next layer's input and the output.
        inp = op.Reshape(op.Transpose(Y, perm=[0, 2, 1, 3]), op.Constant(value_ints=[0, 0, -1]))
    if lengths is not None:  # padding_fill past each end, whatever the runtime wrote there
        T = op.Squeeze(op.Shape(inp, start=0, end=1))
        steps = op.Range(op.Constant(value_int=0), T, op.Constant(value_int=1))
        mask = op.Less(op.Unsqueeze(steps, [1]), op.Unsqueeze(op.Cast(lengths, to=7), [0]))
        fill = op.CastLike(op.Constant(value_float=float(kw.get("padding_fill") or 0.0)), inp)
        inp = op.Where(op.Unsqueeze(mask, [2]), inp, fill)
    y = op.Transpose(inp, perm=[1, 0, 2]) if batch_first else inp
    hy = hys[0] if lay.L == 1 else op.Concat(*hys, axis=0)
    none = op.ConstantOfShape(op.Constant(value_ints=[0]))  # a tensor of shape (0,)
    cy = (cys[0] if lay.L == 1 else op.Concat(*cys, axis=0)) if lay.lstm else op.CastLike(none, x)
    reserve = op.Cast(none, to=2)  # UINT8, empty: inference keeps nothing
    return y, hy, cy, reserve


def translation_table():
    """{torch.ops.rnnx.forward.default: its ONNX translation}: torch.onnx.export's
    custom_translation_table (dynamo=True), for a program that holds rnnx's operator (a
    module exported directly needs none)."""
    import torch
    if not hasattr(torch.ops, "rnnx") or not hasattr(torch.ops.rnnx, "forward"):
        raise _rnnx.UnsupportedError(
            f"rnnx.torch ONNX export needs PyTorch 2.6 or later (torch.export-based "
            f"exporter and rnnx's operator); this is {torch.__version__}")
    return {torch.ops.rnnx.forward.default: forward}
