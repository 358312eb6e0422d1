"""rnnx's recurrence written in differentiable tensor operations, for what the kernels do not
do themselves:

* double backward: where a backward is asked for a graph (create_graph=True, a gradient
  penalty, a Hessian-vector product), autograd differentiates this recurrence, as torch.nn's
  own CPU modules are differentiated (rnnx's kernels compute the first derivative only);
* ONNX export of what ONNX's LSTM node cannot express (projection, cell and projection
  clipping): each layer and direction's time loop becomes one ONNX Scan (scan=True).

Every option of the config (docs/math.md's equations: the cells, layers, directions,
projection, bias, lengths, packed input, ONNX's activations, gate clip, peepholes,
input_forget, reverse, both GRU variants, cell and projection clips with their NaN policy)
but dropout in training, whose masks are rnnx's own (refusal() says so).
"""

import torch

# ONNX's activation functions (docs/math.md), by name: f(v, alpha, beta).
_ACTIVATIONS = {
    "Sigmoid": lambda v, a, b: torch.sigmoid(v),
    "Tanh": lambda v, a, b: torch.tanh(v),
    "Relu": lambda v, a, b: torch.relu(v),
    "Affine": lambda v, a, b: a * v + b,
    "LeakyRelu": lambda v, a, b: torch.where(v >= 0, v, a * v),
    "ThresholdedRelu": lambda v, a, b: torch.where(v >= a, v, torch.zeros_like(v)),
    "ScaledTanh": lambda v, a, b: a * torch.tanh(b * v),
    "HardSigmoid": lambda v, a, b: torch.clamp(a * v + b, 0.0, 1.0),
    "Elu": lambda v, a, b: torch.where(v >= 0, v, a * torch.expm1(v)),
    "Softsign": lambda v, a, b: v / (1 + v.abs()),
    "Softplus": lambda v, a, b: torch.nn.functional.softplus(v),
}
# What each cell uses when the config names no activations (f, g, h in ONNX's terms).
_DEFAULT_ACTIVATIONS = {"lstm": ("Sigmoid", "Tanh", "Tanh"), "gru": ("Sigmoid", "Tanh"),
                        "rnn_tanh": ("Tanh",), "rnn_relu": ("Relu",)}


def refusal(kwargs, training_dropout):
    """What of the config this recurrence cannot run, in words, or None."""
    if training_dropout:
        return "dropout in training (rnnx's masks)"
    return None


def clip_range(clip):
    """A config's clip ([lo, hi], a dict, or None) as (lo, hi), or None when off."""
    if not clip:
        return None
    if isinstance(clip, dict):
        return (float(clip["lo"]), float(clip["hi"])) if clip.get("enabled", True) else None
    return float(clip[0]), float(clip[1])


class _Cell:
    """One config's cell step: step(x_t, h, c, w) -> (new h, new c); c None but for LSTM."""

    def __init__(self, k):
        self.cell = k["cell"]
        names = k.get("activations") or [(n, 0.0, 0.0) for n in _DEFAULT_ACTIVATIONS[self.cell]]
        self.acts = [(_ACTIVATIONS[n], float(a), float(b)) for n, a, b in names]
        gate = float(k.get("gate_clip") or 0.0)
        self.gate_clip = (-gate, gate) if gate > 0 else None
        self.cell_clip = clip_range(k.get("cell_clip"))
        self.proj_clip = clip_range(k.get("proj_clip"))
        self.replace_nan = k.get("clip_nan") == "replace"
        self.input_forget = bool(k.get("input_forget"))
        self.linear_before_reset = bool(k.get("gru_linear_before_reset", True))

    def act(self, q, v):
        f, a, b = self.acts[q]
        return f(v, a, b)

    def clamp(self, v, clip):
        """The clamp with the config's NaN policy: NaN stays NaN, or becomes hi."""
        if clip is None:
            return v
        out = torch.clamp(v, clip[0], clip[1])
        return torch.where(torch.isnan(v), torch.full_like(v, clip[1]), out) \
            if self.replace_nan else out

    def step(self, x_t, h, c, w):
        w_ih, w_hh, b_ih, b_hh, w_hr, w_p = w
        gi = x_t @ w_ih.t()
        if b_ih is not None:
            gi = gi + b_ih
        gclip = self.gate_clip
        if self.cell == "lstm":
            gh = h @ w_hh.t()
            if b_hh is not None:
                gh = gh + b_hh
            i, f, g, o = (gi + gh).chunk(4, 1)
            if w_p is not None:
                p_i, p_f, p_o = w_p.chunk(3, 0)
                i = i + p_i * c
                f = f + p_f * c
            i = self.act(0, self.clamp(i, gclip))
            f = 1 - i if self.input_forget else self.act(0, self.clamp(f, gclip))
            g = self.act(1, self.clamp(g, gclip))
            c_new = self.clamp(f * c + i * g, self.cell_clip)
            if w_p is not None:
                o = o + p_o * c_new
            h_new = self.act(0, self.clamp(o, gclip)) * self.act(2, c_new)
            if w_hr is not None:
                h_new = self.clamp(h_new @ w_hr.t(), self.proj_clip)
            return h_new, c_new
        if self.cell == "gru":
            H = h.shape[-1]
            w_rz, w_n = w_hh[:2 * H], w_hh[2 * H:]
            b_rz = None if b_hh is None else b_hh[:2 * H]
            b_n = None if b_hh is None else b_hh[2 * H:]
            gh = h @ w_rz.t()
            if b_rz is not None:
                gh = gh + b_rz
            ir, iz, i_n = gi.chunk(3, 1)
            hr, hz = gh.chunk(2, 1)
            r = self.act(0, self.clamp(ir + hr, gclip))
            z = self.act(0, self.clamp(iz + hz, gclip))
            # torch.nn's GRU (linear before reset) or ONNX's default (reset before linear).
            hn = h @ w_n.t() if self.linear_before_reset else (r * h) @ w_n.t()
            if b_n is not None:
                hn = hn + b_n
            pre = i_n + r * hn if self.linear_before_reset else i_n + hn
            n = self.act(1, self.clamp(pre, gclip))
            return (1 - z) * n + z * h, None
        gh = h @ w_hh.t()
        if b_hh is not None:
            gh = gh + b_hh
        return self.act(0, self.clamp(gi + gh, gclip)), None


def _time_loop(cell, w, inp, mask, h, c, reverse, scan):
    """One layer and direction over all steps: (outputs [T, B, P], final h, final c). A
    finished (or, reversed, not yet started) sequence keeps its state."""
    if scan:
        from torch._higher_order_ops.scan import scan as scan_op

        # The module's parameters are views of one buffer; scan refuses aliased inputs.
        w = tuple(None if t is None else t.clone() for t in w)

        def body(carry, xs):
            x_t, m = xs
            h_new, c_new = cell.step(x_t, carry[0], carry[1] if len(carry) > 1 else None, w)
            kept = [torch.where(m, h_new, carry[0])]
            if c_new is not None:
                kept.append(torch.where(m, c_new, carry[1]))
            return kept, h_new.clone()

        final, out = scan_op(body, [h] if c is None else [h, c], (inp, mask), reverse=reverse)
        return out, final[0], (final[1] if c is not None else None)
    T = inp.shape[0]
    out = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h_new, c_new = cell.step(inp[t], h, c, w)
        out[t] = h_new
        h = torch.where(mask[t], h_new, h)
        if c is not None:
            c = torch.where(mask[t], c_new, c)
    return torch.stack(out), h, c


def forward(kwargs, names, x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
            batch_first, scan=False):
    """rnnx::forward's (y, hy, cy) in differentiable operations, in the operator's layouts.
    names: the weights' parameter names (weight_ih_l0, ...); scan: each time loop as one
    torch scan (exported as ONNX's Scan) instead of a Python loop over the steps."""
    k = kwargs
    cell = _Cell(k)
    L = int(k.get("num_layers", 1))
    D = 2 if k.get("bidirectional") else 1
    H = int(k["hidden_size"])
    P = int(k.get("proj_size") or 0) or H
    named = dict(zip(names, weights))
    if batch_sizes is not None:  # packed: to padded time-major, in sorted order
        bs = [int(b) for b in batch_sizes]
        T, B = len(bs), bs[0]
        steps, at = [], 0
        for b in bs:
            step = x[at:at + b]
            at += b
            steps.append(torch.cat([step, step.new_zeros(B - b, step.shape[1])]))
        inp = torch.stack(steps)
        lens = torch.tensor([sum(1 for b in bs if b > i) for i in range(B)])
        order = sorted_indices if sorted_indices is not None else torch.arange(B)
    else:
        inp = x.transpose(0, 1) if batch_first else x
        T, B = inp.shape[0], inp.shape[1]
        lens = (torch.full((B,), T, dtype=torch.int64) if lengths is None
                else lengths.to("cpu", torch.int64))
        order = None
    mask = (torch.arange(T).unsqueeze(1) < lens.unsqueeze(0)).to(x.device).unsqueeze(2)  # T,B,1
    h0 = x.new_zeros(L * D, B, P) if hx is None else (hx if order is None else hx[:, order])
    c0 = None
    if cell.cell == "lstm":
        c0 = x.new_zeros(L * D, B, H) if cx is None else (cx if order is None else cx[:, order])
    hy, cy = [], []
    for layer in range(L):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = tuple(named.get(f"{n}{sfx}") for n in ("weight_ih", "weight_hh", "bias_ih",
                                                        "bias_hh", "weight_hr",
                                                        "weight_peephole"))
            reverse = bool(d) or bool(k.get("reverse"))
            out, h, c = _time_loop(cell, w, inp, mask, h0[layer * D + d],
                                   None if c0 is None else c0[layer * D + d], reverse, scan)
            outs.append(out)
            hy.append(h)
            if c is not None:
                cy.append(c)
        inp = torch.cat(outs, 2) if D == 2 else outs[0]
    y = torch.where(mask, inp, inp.new_full((), float(k.get("padding_fill") or 0.0)))
    hy = torch.stack(hy)
    cy = torch.stack(cy) if cy else None
    if batch_sizes is not None:
        y = torch.cat([y[t, :b] for t, b in enumerate(bs)])
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(B)
        hy = hy[:, inverse]
        cy = None if cy is None else cy[:, inverse]
    elif batch_first:
        y = y.transpose(0, 1)
    return y, hy, cy


def gradients(info, saved, grads, needs):
    """The backward's gradients with a graph: (dx, dhx, dcx, [dweights]) as the operator's
    autograd returns them. saved: (x, hx, cx, lengths, batch_sizes, sorted_indices,
    batch_first, weights); grads: (dy, dhy, dcy); needs: (x, hx, cx, any weight)."""
    x, hx, cx, lengths, batch_sizes, sorted_indices, batch_first, weights = saved
    names = [p.name for p in info.params]
    with torch.enable_grad():
        y, hy, cy = forward(info.kwargs, names, x, hx, cx, weights, lengths, batch_sizes,
                            sorted_indices, batch_first)
        outs, seeds = [], []
        for o, g in ((y, grads[0]), (hy, grads[1]), (cy, grads[2])):
            if o is not None and g is not None:
                outs.append(o)
                seeds.append(g)
        wanted = [t for t, n in zip((x, hx, cx), needs[:3]) if n and t is not None]
        ws = list(weights) if needs[3] else []
        got = list(torch.autograd.grad(outs, wanted + ws, seeds, create_graph=True,
                                       allow_unused=True))
    result = []
    for t, n in zip((x, hx, cx), needs[:3]):
        result.append(got.pop(0) if n and t is not None else None)
    wgrads = [g if g is not None else torch.zeros_like(w) for g, w in zip(got, ws)]
    return (*result, wgrads if needs[3] else [None] * len(weights))
