"""Double backward for rnnx.torch's operators: where a backward is asked for a graph
(create_graph=True, a gradient penalty, a Hessian-vector product), the gradients come from the
same recurrence written in differentiable tensor operations, differentiated by autograd, as
torch.nn's own CPU modules are (rnnx's kernels compute the first derivative only). For every
option torch.nn's modules have (cells, layers, directions, projection, bias, padded with
lengths, packed); rnnx's own options are refused by name (refusal()).
"""

import torch


def refusal(kwargs, training_dropout):
    """The first option of the config that this path cannot differentiate twice, in words,
    or None."""
    cell = kwargs["cell"]
    checks = (
        (training_dropout, "dropout in training (rnnx's masks)"),
        (cell == "gru" and not kwargs.get("gru_linear_before_reset", True),
         "gru_linear_before_reset=False"),
        (_clip_on(kwargs.get("cell_clip")), "cell_clip"),
        (_clip_on(kwargs.get("proj_clip")), "proj_clip"),
        (bool(kwargs.get("peephole")), "peephole"),
        (float(kwargs.get("gate_clip") or 0) > 0, "gate_clip"),
        (bool(kwargs.get("input_forget")), "input_forget"),
        (bool(kwargs.get("activations")), "activations"),
        (bool(kwargs.get("reverse")), "reverse"),
    )
    for on, name in checks:
        if on:
            return name
    return None


def _clip_on(clip):
    if not clip:
        return False
    if isinstance(clip, dict):
        return bool(clip.get("enabled", True))
    return True


def _cell_step(cell, x_t, h, c, w):
    """One step of one layer and direction: (new h, new c) (c None but for LSTM)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    gi = x_t @ w_ih.t()
    gh = h @ w_hh.t()
    if b_ih is not None:
        gi = gi + b_ih
        gh = gh + b_hh
    if cell == "lstm":
        i, f, g, o = (gi + gh).chunk(4, 1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        if w_hr is not None:
            h_new = h_new @ w_hr.t()
        return h_new, c_new
    if cell == "gru":
        ir, iz, i_n = gi.chunk(3, 1)
        hr, hz, h_n = gh.chunk(3, 1)
        r = torch.sigmoid(ir + hr)
        z = torch.sigmoid(iz + hz)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (torch.relu(pre) if cell == "rnn_relu" else torch.tanh(pre)), None


def forward(info, x, hx, cx, weights, lengths, batch_sizes, sorted_indices, batch_first):
    """rnnx::forward's (y, hy, cy) in differentiable operations, in the operator's layouts."""
    k = info.kwargs
    cell, L, D, H, P = k["cell"], info.L, info.D, info.H, info.P
    named = {p.name: w for p, w in zip(info.params, weights)}
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
    zeros_h = x.new_zeros(L * D, B, P)
    h0 = zeros_h if hx is None else (hx if order is None else hx[:, order])
    c0 = None
    if cell == "lstm":
        c0 = x.new_zeros(L * D, B, H) if cx is None else (cx if order is None else cx[:, order])
    hy, cy = [], []
    for layer in range(L):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = (named[f"weight_ih{sfx}"], named[f"weight_hh{sfx}"], named.get(f"bias_ih{sfx}"),
                 named.get(f"bias_hh{sfx}"), named.get(f"weight_hr{sfx}"))
            h = h0[layer * D + d]
            c = None if c0 is None else c0[layer * D + d]
            out = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h_new, c_new = _cell_step(cell, inp[t], h, c, w)
                out[t] = h_new
                # A finished (or not yet started, backward) sequence keeps its state.
                h = torch.where(mask[t], h_new, h)
                if c is not None:
                    c = torch.where(mask[t], c_new, c)
            outs.append(torch.stack(out))
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
    with torch.enable_grad():
        y, hy, cy = forward(info, x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                            batch_first)
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
