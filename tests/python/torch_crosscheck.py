#!/usr/bin/python3
# Cross-checks `rnnx run` against PyTorch: random cases of torch.nn.LSTM/GRU/RNN and, for
# what torch.nn lacks (clipping, the original GRU, dropout masks in training), an autograd
# transcription of docs/math.md; outputs and all gradients, for each backend asked for.
"""Run with Debian's /usr/bin/python3 (it has torch and numpy):

    /usr/bin/python3 tests/python/torch_crosscheck.py --rnnx build/tools/rnnx/rnnx
        [--backend reference --backend cpu] [--filter SUBSTR] [--keep DIR] [--threads N]

Each case is written in the `rnnx run` format (docs/cli.md) with NaN in the padding of
x and dy, run, and compared. Exit status: 0 all passed, 1 a failure, 77 no requested
backend is available in this build (ctest reads 77 as "skipped").
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

SKIP_STATUS = 77
EXIT_UNSUPPORTED = 3
BASE_SEED = 20240611


# ----------------------------------------------------------------------------- the cases
def case(name, cell, I, H, T, B, **kw):
    c = dict(name=name, cell=cell, I=I, H=H, T=T, B=B, P=0, L=1, bidir=False, bias=True,
             bf=False, dtype="float64", lengths=None, h0=True, c0=True, dy=True, dhy=True,
             dcy=True, fill=0.0, file_dtype=None, len_dtype="int64", manual=False,
             gru_lbr=True, cell_clip=None, proj_clip=None, dropout=0.0, training=False,
             seed=0, dcount=0, explicit=False)
    c.update(kw)
    return c


CASES = [
    # float64 against torch.nn modules
    case("lstm_basic", "lstm", 4, 5, 6, 4, lengths=[6, 3, 0, 5]),
    case("lstm_l2_bidir", "lstm", 7, 6, 5, 5, L=2, bidir=True, lengths=[2, 5, 0, 1, 4],
         explicit=True),
    case("lstm_proj_bidir", "lstm", 5, 8, 6, 3, P=3, bidir=True, lengths=[4, 6, 1]),
    case("lstm_proj_l3_bidir_bf", "lstm", 3, 7, 5, 4, P=4, L=3, bidir=True, bf=True,
         lengths=[3, 0, 5, 2], explicit=True),
    case("lstm_nobias_l2", "lstm", 6, 5, 4, 3, L=2, bias=False, lengths=[1, 4, 3]),
    case("lstm_no_states_no_dhy", "lstm", 4, 6, 5, 3, L=2, bidir=True, h0=False, c0=False,
         dhy=False, dcy=False, lengths=[5, 0, 3]),
    case("lstm_forward_only", "lstm", 5, 4, 6, 4, L=2, bidir=True, dy=False, dhy=False,
         dcy=False, lengths=[0, 6, 2, 4]),
    case("lstm_no_lengths_file", "lstm", 3, 4, 4, 2, L=2, lengths=None, explicit=True),
    case("lstm_t1_b1", "lstm", 1, 1, 1, 1, lengths=[1]),
    case("lstm_proj_nobias_fill", "lstm", 6, 9, 5, 4, P=5, L=2, bidir=True, bias=False,
         fill=-3.5, lengths=[5, 2, 0, 3], len_dtype="int32"),
    case("lstm_max_len_below_T", "lstm", 4, 5, 7, 3, L=1, bidir=True, lengths=[3, 1, 4]),
    case("gru_basic", "gru", 4, 5, 6, 4, lengths=[2, 6, 0, 5]),
    case("gru_l2_bidir_bf", "gru", 5, 6, 5, 4, L=2, bidir=True, bf=True, lengths=[5, 3, 3, 0],
         len_dtype="int32"),
    case("gru_nobias_l3", "gru", 3, 4, 4, 3, L=3, bias=False, lengths=[4, 1, 2]),
    case("gru_all_empty", "gru", 3, 4, 3, 3, L=2, bidir=True, lengths=[0, 0, 0]),
    case("gru_nan_fill", "gru", 3, 5, 4, 3, fill="nan", lengths=[4, 0, 2], dy=False, dhy=False),
    case("rnn_tanh_basic", "rnn_tanh", 4, 6, 6, 4, lengths=[6, 1, 0, 3], explicit=True),
    case("rnn_tanh_l3_bidir_bf", "rnn_tanh", 5, 4, 5, 3, L=3, bidir=True, bf=True,
         lengths=[2, 5, 4]),
    case("rnn_relu_l2_bidir", "rnn_relu", 4, 7, 6, 4, L=2, bidir=True, lengths=[6, 0, 4, 5]),
    case("rnn_relu_nobias", "rnn_relu", 3, 5, 5, 3, bias=False, lengths=[5, 2, 1]),
    case("lstm_dropout_inference", "lstm", 4, 5, 5, 3, L=3, dropout=0.5, dy=False, dhy=False,
         dcy=False, lengths=[5, 2, 0]),
    # float64 case given float32 files: rnnx converts (exactly, the values are float32's)
    case("lstm_f32_files_in_f64_case", "lstm", 4, 5, 5, 3, L=2, bidir=True, file_dtype="float32",
         lengths=[5, 0, 3]),
    # float32
    case("f32_lstm_proj_l2_bidir", "lstm", 9, 12, 7, 5, P=6, L=2, bidir=True, dtype="float32",
         lengths=[7, 3, 0, 5, 1]),
    case("f32_gru_l2_bidir", "gru", 17, 10, 6, 4, L=2, bidir=True, dtype="float32",
         lengths=[6, 2, 5, 0]),
    case("f32_rnn_tanh_bf", "rnn_tanh", 8, 13, 6, 3, L=2, bf=True, dtype="float32",
         lengths=[1, 6, 4]),
    case("f32_rnn_relu", "rnn_relu", 6, 11, 5, 4, dtype="float32", lengths=[5, 5, 2, 0]),
    case("f32_lstm_awkward", "lstm", 33, 37, 9, 7, L=2, bidir=True, dtype="float32",
         lengths=[9, 1, 0, 4, 8, 9, 2]),
    case("f32_lstm_f64_files", "lstm", 5, 6, 4, 3, dtype="float32", file_dtype="float64",
         lengths=[4, 2, 3]),
    # 16-bit data: inputs of 16-bit values in float32 files, outputs as float32 files, held
    # to rnnx::norm_error_bound in norm
    case("f16_lstm_proj_l2_bidir", "lstm", 9, 12, 7, 5, P=6, L=2, bidir=True, dtype="float16",
         lengths=[7, 3, 0, 5, 1]),
    case("bf16_gru_l2_bidir_bf", "gru", 17, 10, 6, 4, L=2, bidir=True, bf=True,
         dtype="bfloat16", lengths=[6, 2, 5, 0]),
    case("f16_rnn_relu", "rnn_relu", 6, 11, 5, 4, dtype="float16", lengths=[5, 5, 2, 0]),
    # what torch.nn lacks, against the autograd transcription of docs/math.md
    case("manual_lstm_cell_clip", "lstm", 4, 6, 6, 4, L=2, bidir=True, manual=True,
         cell_clip=[-0.3, 0.25], lengths=[6, 0, 3, 5]),
    case("manual_lstmp_both_clips", "lstm", 5, 7, 5, 3, P=4, L=2, bidir=True, manual=True,
         cell_clip=[-0.4, 0.3], proj_clip=[-0.15, 0.1], lengths=[5, 2, 4], explicit=True),
    case("manual_gru_original", "gru", 4, 5, 6, 4, L=2, bidir=True, manual=True, gru_lbr=False,
         lengths=[6, 4, 0, 1]),
    case("manual_gru_original_bf_nobias", "gru", 3, 6, 5, 3, bias=False, bf=True, manual=True,
         gru_lbr=False, lengths=[2, 5, 3]),
    # dropout in training against docs/math.md's Philox masks; seed and call counter above
    # 2^32 so that their high words count
    case("manual_lstmp_dropout_train", "lstm", 4, 6, 5, 4, P=3, L=3, bidir=True, manual=True,
         dropout=0.4, seed=0x123456789, dcount=0x200000003, lengths=[5, 0, 2, 4]),
    case("manual_rnn_relu_dropout_training_forward", "rnn_relu", 3, 5, 4, 3, L=2, bf=True,
         manual=True, dropout=0.5, training=True, seed=11, dcount=2, dy=False, dhy=False,
         lengths=[4, 3, 1]),
    case("f32_manual_gru_dropout_train", "gru", 6, 7, 5, 3, L=2, bidir=True, manual=True,
         dtype="float32", dropout=0.3, seed=5, lengths=[5, 2, 4]),
    case("f32_manual_lstmp_clips", "lstm", 5, 8, 6, 3, P=5, L=2, manual=True, dtype="float32",
         cell_clip=[-0.35, 0.3], proj_clip=[-0.2, 0.12], lengths=[6, 3, 0]),
]


SIXTEEN_BIT = ("float16", "bfloat16")


def file_dtype(c):
    """The .npy type of the case's inputs and outputs: the 16-bit types travel as float32,
    which holds each of their values exactly (NumPy has no bfloat16)."""
    return "float32" if c["dtype"] in SIXTEEN_BIT else c["dtype"]


def representable(c, a):
    """a (float64) rounded to the case's type, the values rnnx and the oracle then share."""
    if c["dtype"] == "float16":
        return a.astype(np.float16).astype(np.float64)
    if c["dtype"] == "bfloat16":
        return torch.from_numpy(a).to(torch.bfloat16).to(torch.float64).numpy()
    vdt = np.float32 if "float32" in (c["dtype"], c["file_dtype"]) else np.float64
    return a.astype(vdt).astype(np.float64)


# ---------------------------------------------------------------------- tolerances
def norm_tolerance(out_dir, backward):
    """The bound in norm of 16-bit data, rnnx::norm_error_bound from error_bound.json, twice
    it as below."""
    with open(os.path.join(out_dir, "error_bound.json")) as f:
        bounds = json.load(f)
    return 2.0 * bounds["norm_backward" if backward else "norm_forward"]


def tolerance(out_dir, backward):
    """Bound on max|rnnx - expected| / max(1, max|expected|): the accuracy rnnx promises,
    rnnx::error_bound (docs/math.md), which `rnnx run` writes to error_bound.json; twice
    it, since PyTorch's float64 results carry their own rounding too."""
    with open(os.path.join(out_dir, "error_bound.json")) as f:
        bounds = json.load(f)
    return 2.0 * bounds["backward" if backward else "forward"]


# ------------------------------------------------------------------ PyTorch's side
def make_module(c):
    kw = dict(input_size=c["I"], hidden_size=c["H"], num_layers=c["L"], bias=c["bias"],
              batch_first=c["bf"], bidirectional=c["bidir"], dropout=c["dropout"])
    if c["cell"] == "lstm":
        return torch.nn.LSTM(proj_size=c["P"], **kw)
    if c["cell"] == "gru":
        return torch.nn.GRU(**kw)
    return torch.nn.RNN(nonlinearity="tanh" if c["cell"] == "rnn_tanh" else "relu", **kw)


def param_names(c):
    """PyTorch's state_dict keys, in _flat_weights order."""
    names = []
    for l in range(c["L"]):
        for sfx in ([""] if not c["bidir"] else ["", "_reverse"]):
            names += [f"weight_ih_l{l}{sfx}", f"weight_hh_l{l}{sfx}"]
            if c["bias"]:
                names += [f"bias_ih_l{l}{sfx}", f"bias_hh_l{l}{sfx}"]
            if c["P"]:
                names.append(f"weight_hr_l{l}{sfx}")
    return names


def param_shapes(c):
    G = {"lstm": 4, "gru": 3}.get(c["cell"], 1)
    H, D = c["H"], (2 if c["bidir"] else 1)
    Pp = c["P"] or H
    shapes = {}
    for name in param_names(c):
        l = int(name.split("_l")[1].split("_")[0])
        I_l = c["I"] if l == 0 else D * Pp
        kind = name[:9]
        shapes[name] = {"weight_ih": (G * H, I_l), "weight_hh": (G * H, Pp),
                        "bias_ih_l": (G * H,), "bias_hh_l": (G * H,),
                        "weight_hr": (Pp, H)}[kind]
    return shapes


def module_with(c, params):
    """The torch.nn module of the case holding our parameter values (float64)."""
    m = make_module(c).double()
    m.eval()  # dropout acts only in training; rnnx's inference forward ignores it too
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
    return m


def run_module(c, m, x, lengths, h0, c0):
    """The module on the non-empty sequences, packed with enforce_sorted=False.

    Returns (y of those sequences padded to T, hy, cy, their batch indices)."""
    nz = [b for b in range(c["B"]) if lengths[b] > 0]
    idx = torch.tensor(nz, dtype=torch.long)
    bdim = 0 if c["bf"] else 1
    xs = x.index_select(bdim, idx)
    packed = pack_padded_sequence(xs, torch.tensor([lengths[b] for b in nz]),
                                  batch_first=c["bf"], enforce_sorted=False)
    hx = h0.index_select(1, idx)
    if c["cell"] == "lstm":
        out, (hn, cn) = m(packed, (hx, c0.index_select(1, idx)))
    else:
        out, hn = m(packed, hx)
        cn = None
    yn, _ = pad_packed_sequence(out, batch_first=c["bf"], total_length=c["T"])
    return yn, hn, cn, idx


MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (Salmon et al., SC 2011) on numpy uint64 arrays holding 32-bit words."""
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    w0, w1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
    for _ in range(10):
        p0, p1 = m0 * c0, m1 * c2  # 32 x 32 -> 64 bits, no wrap-around
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK32
        k0, k1 = (k0 + w0) & MASK32, (k1 + w1) & MASK32
    return c0, c1, c2, c3


def dropout_keep(c, layer, width):
    """docs/math.md's dropout mask of layer `layer`'s output, [T, B, width] booleans."""
    T, B = c["T"], c["B"]
    e = np.arange(T * B * width, dtype=np.uint64)
    g = e // np.uint64(4)
    seed, call = np.uint64(c["seed"]), np.uint64(c["dcount"])
    full = lambda v: np.full(g.shape, v, dtype=np.uint64)
    words = philox4x32_10(g & MASK32, g >> np.uint64(32), full(layer), full(call & MASK32),
                          full(seed & MASK32), full((seed >> np.uint64(32)) ^ (call >> np.uint64(32))))
    word = np.choose((e % np.uint64(4)).astype(np.int64), words)
    u = (word >> np.uint64(8)).astype(np.float64) / 2.0 ** 24
    return (u >= c["dropout"]).reshape(T, B, width)


def manual_network(c, params, x, lengths, h0, c0):
    """docs/math.md transcribed with torch ops, one sequence at a time (time-major x)."""
    L, D, H = c["L"], (2 if c["bidir"] else 1), c["H"]
    Pp = c["P"] or H
    B = c["B"]
    # rnnx runs a training forward whenever it runs backward (docs/cli.md).
    drop = c["dropout"] > 0 and (c["training"] or c["dy"])
    clip = lambda v, cl: v if cl is None else torch.clamp(v, cl[0], cl[1])
    zero = lambda n: torch.zeros(n, dtype=torch.float64)

    def p(kind, l, d):
        name = f"{kind}_l{l}" + ("_reverse" if d else "")
        return params.get(name)

    def step(l, d, xt, h, cs):
        w_ih, w_hh, b_ih, b_hh = p("weight_ih", l, d), p("weight_hh", l, d), p("bias_ih", l, d), p("bias_hh", l, d)
        gi = w_ih @ xt + (b_ih if b_ih is not None else 0)
        bh = b_hh if b_hh is not None else zero(w_hh.shape[0])
        if c["cell"] == "lstm":
            a = gi + w_hh @ h + bh
            i, f, g, o = torch.sigmoid(a[:H]), torch.sigmoid(a[H:2 * H]), torch.tanh(a[2 * H:3 * H]), torch.sigmoid(a[3 * H:])
            cs = clip(f * cs + i * g, c["cell_clip"])
            m = o * torch.tanh(cs)
            h = clip(p("weight_hr", l, d) @ m, c["proj_clip"]) if c["P"] else m
            return h, cs
        if c["cell"] == "gru":
            rz = torch.sigmoid(gi[:2 * H] + w_hh[:2 * H] @ h + bh[:2 * H])
            r, z = rz[:H], rz[H:]
            if c["gru_lbr"]:
                n = torch.tanh(gi[2 * H:] + r * (w_hh[2 * H:] @ h + bh[2 * H:]))
            else:
                n = torch.tanh(gi[2 * H:] + w_hh[2 * H:] @ (r * h) + bh[2 * H:])
            return (1 - z) * n + z * h, cs
        a = gi + w_hh @ h + bh
        return (torch.tanh(a) if c["cell"] == "rnn_tanh" else torch.relu(a)), cs

    seqs = [[x[t, b] for t in range(lengths[b])] for b in range(B)]
    hy = [[None] * B for _ in range(L * D)]
    cy = [[None] * B for _ in range(L * D)]
    for l in range(L):
        new = []
        for b in range(B):
            n = lengths[b]
            outs = [[None] * D for _ in range(n)]
            for d in range(D):
                k = l * D + d
                h, cs = h0[k, b], (c0[k, b] if c0 is not None else None)
                for t in (range(n) if d == 0 else reversed(range(n))):
                    h, cs = step(l, d, seqs[b][t], h, cs)
                    outs[t][d] = h
                hy[k][b], cy[k][b] = h, cs
            new.append([torch.cat(o) for o in outs])
        if drop and l < L - 1:
            keep = dropout_keep(c, l, D * Pp)
            scale = 1.0 / (1.0 - c["dropout"]) if c["dropout"] < 1 else 0.0
            new = [[new[b][t] * torch.from_numpy(keep[t, b] * scale) for t in range(lengths[b])]
                   for b in range(B)]
        seqs = new
    y = torch.zeros(c["T"], B, D * Pp, dtype=torch.float64)
    rows = [(t, b) for b in range(B) for t in range(lengths[b])]
    if rows:
        ts, bs = zip(*rows)
        y = y.index_put((torch.tensor(ts), torch.tensor(bs)), torch.stack([seqs[b][t] for t, b in rows]))
    hy = torch.stack([torch.stack(r) for r in hy])
    cy = torch.stack([torch.stack(r) for r in cy]) if c["cell"] == "lstm" else None
    return y, hy, cy


def expected(c, inputs, params):
    """Everything `rnnx run` must write, in float64 numpy, from PyTorch's autograd."""
    B = c["B"]
    lengths = inputs["lengths"]
    lstm = c["cell"] == "lstm"
    x = torch.tensor(inputs["x"], requires_grad=True)
    h0 = torch.tensor(inputs["h0"], requires_grad=True)
    c0 = torch.tensor(inputs["c0"], requires_grad=True) if lstm else None
    if c["dropout"] > 0 and (c["training"] or c["dy"]) and not c["manual"]:
        raise SystemExit(f"{c['name']}: training with dropout needs manual=True")
    if c["manual"]:
        tp = {n: torch.tensor(v, requires_grad=True) for n, v in params.items()}
    else:
        m = module_with(c, params)
        tp = dict(m.named_parameters())
    dy, dhy = torch.tensor(inputs["dy"]), torch.tensor(inputs["dhy"])
    dcy = torch.tensor(inputs["dcy"]) if lstm else None
    bdim = 0 if c["bf"] else 1
    nz = [b for b in range(B) if lengths[b] > 0]

    y = np.full(inputs["y_shape"], np.nan if c["fill"] == "nan" else c["fill"])
    hy, cy = inputs["h0"].copy(), (inputs["c0"].copy() if lstm else None)
    grads = {"dx": np.zeros_like(inputs["x"]), "dh0": inputs["dhy"].copy()}
    if lstm:
        grads["dc0"] = inputs["dcy"].copy()
    for n in params:
        grads["grad_" + n] = np.zeros_like(params[n])
    if not nz:  # every sequence is empty: nothing to run, outputs are states and padding
        return dict(y=y, hy=hy, cy=cy, **grads)

    if c["manual"]:
        xt = x if not c["bf"] else x.transpose(0, 1)
        ym, hn, cn = manual_network(c, tp, xt, lengths, h0, c0)
        yn = ym if not c["bf"] else ym.transpose(0, 1)
        yn, hn = yn.index_select(bdim, torch.tensor(nz)), hn[:, nz]
        cn = cn[:, nz] if lstm else None
        idx = torch.tensor(nz)
    else:
        yn, hn, cn, idx = run_module(c, m, x, lengths, h0, c0)
    loss = (yn * dy.index_select(bdim, idx)).sum() + (hn * dhy.index_select(1, idx)).sum()
    if lstm:
        loss = loss + (cn * dcy.index_select(1, idx)).sum()
    leaves = [x, h0] + ([c0] if lstm else []) + [tp[n] for n in params]
    g = torch.autograd.grad(loss, leaves, allow_unused=True)
    zeros_or = lambda t, like: np.zeros_like(like) if t is None else t.detach().numpy()

    yn = yn.detach().numpy()
    for j, b in enumerate(nz):
        for t in range(lengths[b]):
            if c["bf"]:
                y[b, t] = yn[j, t]
            else:
                y[t, b] = yn[t, j]
    hy[:, nz] = hn.detach().numpy()
    if lstm:
        cy[:, nz] = cn.detach().numpy()
    grads["dx"] = zeros_or(g[0], inputs["x"])
    gh0 = zeros_or(g[1], inputs["h0"])
    grads["dh0"][:, nz] = gh0[:, nz]  # empty sequences keep dh0 = dhy
    k = 2
    if lstm:
        gc0 = zeros_or(g[2], inputs["c0"])
        grads["dc0"][:, nz] = gc0[:, nz]
        k = 3
    for n, gw in zip(params, g[k:]):
        grads["grad_" + n] = zeros_or(gw, params[n])
    return dict(y=y, hy=hy, cy=cy, **grads)


# ------------------------------------------------------------ the case, as rnnx reads it
def build_inputs(c, rng):
    T, B, I, H, L = c["T"], c["B"], c["I"], c["H"], c["L"]
    D = 2 if c["bidir"] else 1
    Pp = c["P"] or H
    lengths = c["lengths"] if c["lengths"] is not None else [T] * B
    # In float32 (16-bit) cases every value is a float32 (16-bit) number, so the float64
    # oracle and rnnx see the same inputs and only rnnx's arithmetic differs
    # (also when the files are float32 while the case is float64).
    rnd = lambda *shape, scale=1.0: representable(c, rng.uniform(-scale, scale, size=shape))
    k = 1.5 / math.sqrt(H)  # a little beyond PyTorch's init, so that gates saturate sometimes
    params = {n: rnd(*s, scale=k) for n, s in param_shapes(c).items()}
    x_shape = (B, T, I) if c["bf"] else (T, B, I)
    y_shape = (B, T, D * Pp) if c["bf"] else (T, B, D * Pp)
    pad_x = np.ones(x_shape, dtype=bool)  # True at padding
    pad_y = np.ones(y_shape, dtype=bool)
    for b in range(B):
        sel = (b, slice(0, lengths[b])) if c["bf"] else (slice(0, lengths[b]), b)
        pad_x[sel] = False
        pad_y[sel] = False
    x = np.where(pad_x, 0.0, rnd(*x_shape))
    dy = np.where(pad_y, 0.0, rnd(*y_shape)) if c["dy"] else np.zeros(y_shape)
    h0 = rnd(L * D, B, Pp) if c["h0"] else np.zeros((L * D, B, Pp))
    c0 = rnd(L * D, B, H) if c["c0"] else np.zeros((L * D, B, H))
    dhy = rnd(L * D, B, Pp) if c["dhy"] and c["dy"] else np.zeros((L * D, B, Pp))
    dcy = rnd(L * D, B, H) if c["dcy"] and c["dy"] else np.zeros((L * D, B, H))
    inputs = dict(x=x, dy=dy, h0=h0, c0=c0, dhy=dhy, dcy=dcy, lengths=lengths,
                  pad_x=pad_x, pad_y=pad_y, y_shape=y_shape)
    return inputs, params


def write_case(c, inputs, params, case_dir):
    lstm = c["cell"] == "lstm"
    spec = {"cell": c["cell"], "input_size": c["I"], "hidden_size": c["H"]}
    optional = {"proj_size": (c["P"], 0), "num_layers": (c["L"], 1),
                "bidirectional": (c["bidir"], False), "bias": (c["bias"], True),
                "batch_first": (c["bf"], False), "dtype": (c["dtype"], "float32"),
                "dropout": (c["dropout"], 0.0), "padding_fill": (c["fill"], 0.0),
                "gru_linear_before_reset": (c["gru_lbr"], True),
                "cell_clip": (c["cell_clip"], None), "proj_clip": (c["proj_clip"], None),
                "training": (c["training"], False), "seed": (c["seed"], 0),
                "dropout_counter": (c["dcount"], 0)}
    # Keys at their default are written only in "explicit" cases, so both paths are tested.
    for key, (value, default) in optional.items():
        if c["explicit"] or value != default:
            spec[key] = value
    spec["note"] = "written by tests/python/torch_crosscheck.py"
    spec["ignore"] = ["note", "README.txt"]
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(spec, f, indent=1)
    fdt = c["file_dtype"] or file_dtype(c)
    save = lambda name, a: np.save(os.path.join(case_dir, name + ".npy"), np.ascontiguousarray(a, dtype=fdt))
    # NaN in the padding of x and dy: rnnx must never read it.
    save("x", np.where(inputs["pad_x"], np.nan, inputs["x"]))
    if c["lengths"] is not None:
        np.save(os.path.join(case_dir, "lengths.npy"), np.array(inputs["lengths"], dtype=c["len_dtype"]))
    if c["h0"]:
        save("h0", inputs["h0"])
    if c["c0"] and lstm:
        save("c0", inputs["c0"])
    if c["dy"]:
        save("dy", np.where(inputs["pad_y"], np.nan, inputs["dy"]))
        if c["dhy"]:
            save("dhy", inputs["dhy"])
        if c["dcy"] and lstm:
            save("dcy", inputs["dcy"])
    for n, v in params.items():
        save(n, v)


# ----------------------------------------------------------------------- comparison
def compare(c, exp, out_dir, inputs):
    """Returns (list of problems, worst relative error, its tensor)."""
    lstm = c["cell"] == "lstm"
    names = ["y", "hy"] + (["cy"] if lstm else [])
    if c["dy"]:
        names += ["dx", "dh0"] + (["dc0"] if lstm else []) + ["grad_" + n for n in param_names(c)]
    problems = []
    got_files = sorted(f[:-4] for f in os.listdir(out_dir) if f.endswith(".npy"))
    if got_files != sorted(names):
        problems.append(f"files {got_files} != expected {sorted(names)}")
    worst, worst_name = 0.0, ""
    for n in names:
        path = os.path.join(out_dir, n + ".npy")
        if not os.path.exists(path):
            continue
        a = np.load(path)
        e = exp[n]
        if a.dtype != np.dtype(file_dtype(c)) or a.shape != e.shape:
            problems.append(f"{n}: {a.dtype}{a.shape}, expected {file_dtype(c)}{e.shape}")
            continue
        if c["dtype"] in SIXTEEN_BIT and not np.array_equal(representable(c, a), a, equal_nan=True):
            problems.append(f"{n}: values that are not {c['dtype']} numbers")
        a = a.astype(np.float64)
        # Padding is exact: y holds padding_fill, dx holds 0.
        if n in ("y", "dx"):
            pad = inputs["pad_y"] if n == "y" else inputs["pad_x"]
            want = e[pad]
            same = np.isnan(a[pad]) if c["fill"] == "nan" and n == "y" else a[pad] == want
            if not np.all(same):
                problems.append(f"{n}: padding holds {a[pad][~same][:3]}, expected {want[~same][:3]}")
            real = ~pad
            a, e = a[real], e[real]
        if np.isnan(a).any() or np.isinf(a).any():
            problems.append(f"{n}: non-finite values (padding read?)")
            continue
        backward = n not in ("y", "hy", "cy")
        if c["dtype"] in SIXTEEN_BIT:  # relative 2-norm of the whole tensor, as benchdnn
            scale = float(np.linalg.norm(e))
            err = float(np.linalg.norm(a - e)) / scale if scale > 0 else float(np.linalg.norm(a))
            tol = norm_tolerance(out_dir, backward)
        else:
            err = float(np.max(np.abs(a - e)) / max(1.0, float(np.max(np.abs(e))))) if e.size else 0.0
            tol = tolerance(out_dir, backward)
        if err > worst:
            worst, worst_name = err, n
        if not err <= tol:
            problems.append(f"{n}: relative error {err:.3g} > {tol:.3g}")
    return problems, worst, worst_name


def self_check_manual():
    """The transcription used for clipping and the original GRU must agree with torch.nn
    where both apply, or its verdicts mean nothing; Philox must give Random123's answer."""
    z = np.zeros(1, dtype=np.uint64)
    kat = [int(w[0]) for w in philox4x32_10(z, z, z, z, z, z)]
    if kat != [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]:
        raise SystemExit(f"Philox4x32-10 known-answer test failed: {[hex(w) for w in kat]}")
    rng = np.random.default_rng(7)
    for cell, P in (("lstm", 3), ("gru", 0), ("rnn_relu", 0)):
        c = case("selfcheck", cell, 3, 5, 4, 3, P=P, L=2, bidir=True, lengths=[4, 0, 2])
        inputs, params = build_inputs(c, rng)
        a = expected(c, inputs, params)
        b = expected(dict(c, manual=True), inputs, params)
        for k in a:
            if a[k] is not None and not np.allclose(a[k], b[k], rtol=1e-12, atol=1e-12, equal_nan=True):
                raise SystemExit(f"manual transcription disagrees with torch.nn ({cell}, {k})")


def probe_backends(rnnx):
    out = subprocess.run([rnnx, "info", "--json"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise SystemExit(f"`{rnnx} info --json` failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)["backends"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rnnx", required=True, help="path of the rnnx executable")
    ap.add_argument("--backend", action="append", choices=["reference", "cpu"],
                    help="backend to check (repeatable; default: both)")
    ap.add_argument("--filter", default="", help="run only cases whose name contains this")
    ap.add_argument("--keep", help="write the cases and results under this directory")
    ap.add_argument("--threads", type=int, default=0, help="passed to rnnx run (0 = OpenMP default)")
    ap.add_argument("--allow-unsupported", action="store_true",
                    help="count a case the backend refuses as unsupported (exit 3) as skipped")
    args = ap.parse_args()
    torch.set_num_threads(1)

    available = probe_backends(args.rnnx)
    backends = []
    for be in args.backend or ["reference", "cpu"]:
        if available.get(be, {}).get("available"):
            backends.append(be)
        else:
            print(f"SKIP backend {be}: not available in this build ({available.get(be, {}).get('detail')})")
    if not backends:
        return SKIP_STATUS

    self_check_manual()
    passed = failed = skipped = 0
    root = args.keep or tempfile.mkdtemp(prefix="rnnx_crosscheck_")
    for i, c in enumerate(CASES):
        if args.filter not in c["name"]:
            continue
        rng = np.random.default_rng(BASE_SEED + i)
        inputs, params = build_inputs(c, rng)
        exp = expected(c, inputs, params)
        case_dir = os.path.join(root, c["name"])
        os.makedirs(case_dir, exist_ok=True)
        write_case(c, inputs, params, case_dir)
        with open(os.path.join(case_dir, "README.txt"), "w") as f:
            f.write("A case of tests/python/torch_crosscheck.py; not read by rnnx.\n")
        for be in backends:
            out_dir = os.path.join(root, c["name"] + ".out." + be)
            run = subprocess.run([args.rnnx, "run", case_dir, "--out", out_dir, "--backend", be,
                                  "--threads", str(args.threads)],
                                 capture_output=True, text=True, timeout=300)
            label = f"{c['name']} [{be}, {c['dtype']}]"
            if run.returncode == EXIT_UNSUPPORTED and args.allow_unsupported:
                skipped += 1
                print(f"SKIP {label}: {run.stderr.strip()}")
                continue
            if run.returncode != 0:
                failed += 1
                print(f"FAIL {label}: rnnx run exited {run.returncode}: {run.stderr.strip()}")
                continue
            problems, worst, worst_name = compare(c, exp, out_dir, inputs)
            if problems:
                failed += 1
                print(f"FAIL {label}: " + "; ".join(problems))
            else:
                passed += 1
                print(f"PASS {label}: worst relative error {worst:.2e} ({worst_name or '-'})")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped (unsupported)" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
