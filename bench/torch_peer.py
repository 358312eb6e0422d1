#!/usr/bin/python3
"""PyTorch peer of `rnnx bench`: times torch.nn.LSTM/GRU/RNN on the CPU on the same problem.

--variant padded  runs the padded batch [T, B, I] (cost follows T x B whatever the lengths).
--variant packed  packs with pack_padded_sequence(enforce_sorted=False), runs the packed
                  sequence and unpacks the output with pad_packed_sequence: the whole path a
                  user with padded data and lengths takes, as rnnx takes padded data + lengths.
Modes: infer (eval, no_grad), train (forward with autograd recording), fwdbwd (forward, then
backward of sum(y*dy) + sum(hy*dhy) [+ sum(cy*dcy)] w.r.t. the input and all weights).
The case's name, lengths and FLOP count are `rnnx bench --dry-run`'s (--rnnx; rnnx_cases.py).
Run with Debian's /usr/bin/python3 (python3-torch). Prints the JSON schema of `rnnx bench`.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rnnx_cases  # noqa: E402

import torch  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cell", default="lstm", choices=["lstm", "gru", "gru-orig", "rnn_tanh", "rnn_relu"])
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--bidirectional", action="store_true")
    p.add_argument("--input", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--proj", type=int, default=0)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--lengths", default="full", help="full, uniform, longtail or a file, one length a line")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", default="infer", help="infer, train, fwdbwd or a comma-separated list")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", default="padded", choices=["padded", "packed"])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="cap the timed runs of one measurement at about this many seconds "
                        "(at least 3 runs); 0 = always --repeat")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rnnx", default=shutil.which("rnnx"),
                   help="the rnnx command, which says the case's name, lengths and FLOPs "
                        "(rnnx bench --dry-run; default: rnnx on PATH)")
    a = p.parse_args(argv)
    if not a.rnnx:
        p.error("--rnnx: no rnnx command on PATH; give its path (it describes the case)")
    if a.proj and a.cell != "lstm":
        p.error(f"--proj (= {a.proj}) needs --cell lstm")
    for m in a.mode.split(","):
        if m not in ("infer", "train", "fwdbwd"):
            p.error(f"--mode '{m}' is not one of infer, train, fwdbwd")
    return a


def make_module(a):
    kw = dict(num_layers=a.layers, bidirectional=a.bidirectional)
    if a.cell == "lstm":
        return torch.nn.LSTM(a.input, a.hidden, proj_size=a.proj, **kw)
    if a.cell == "gru":
        return torch.nn.GRU(a.input, a.hidden, **kw)
    return torch.nn.RNN(a.input, a.hidden, nonlinearity="tanh" if a.cell == "rnn_tanh" else "relu", **kw)


def uniform(shape, gen):
    return torch.rand(shape, generator=gen) * 2.0 - 1.0


def main():
    a = parse_args()
    modes = a.mode.split(",")
    try:
        case = rnnx_cases.describe(a.rnnx, rnnx_cases.case_flags(vars(a)), a.lengths, a.seed, modes)[0]
    except rnnx_cases.CaseError as e:
        print(f"torch_peer.py: error: {e}", file=sys.stderr)
        return 2
    lens = case["length_values"]
    real_tokens = case["tokens"]
    name = case["problem"]
    backend = f"torch-{a.variant}"
    base = dict(problem=name, backend=backend)

    def emit(rec):
        if a.json:
            print(json.dumps(rec), flush=True)
        elif "error" in rec:
            print(f"{name} {backend} {rec['mode']} threads={a.threads}: {rec['error']}", flush=True)
        else:
            print(f"{name} {backend} {rec['impl']} {rec['mode']:6s} threads={a.threads} "
                  f"tokens={rec['tokens']} (real {real_tokens})  median {rec['ms_median']:.3f} ms "
                  f"(min {rec['ms_min']:.3f}, max {rec['ms_max']:.3f})  {rec['gflops']:.2f} GFLOP/s "
                  f"on real tokens", flush=True)

    if a.cell == "gru-orig" or (a.variant == "packed" and min(lens) == 0):
        why = ("PyTorch has only the linear-before-reset GRU" if a.cell == "gru-orig"
               else "pack_padded_sequence refuses lengths of 0")
        for m in modes:
            emit(dict(base, mode=m, threads=a.threads, lengths=a.lengths, error=why))
        return 3

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    D = 2 if a.bidirectional else 1
    P = a.proj if a.proj > 0 else a.hidden
    T, B = a.seq, a.batch
    mod = make_module(a)  # PyTorch initialises weights U(-1/sqrt(H), 1/sqrt(H)), as rnnx bench
    gen = torch.Generator().manual_seed(a.seed + 1)
    x = uniform((T, B, a.input), gen)
    h0 = uniform((a.layers * D, B, P), gen)
    c0 = uniform((a.layers * D, B, a.hidden), gen)
    dy = uniform((T, B, D * P), gen)
    dhy = uniform((a.layers * D, B, P), gen)
    dcy = uniform((a.layers * D, B, a.hidden), gen)
    lengths_t = torch.tensor(lens, dtype=torch.int64)
    lstm = a.cell == "lstm"
    hx = (h0, c0) if lstm else h0

    def forward(inp):
        if a.variant == "padded":
            y, h = mod(inp, hx)
        else:
            packed = pack_padded_sequence(inp, lengths_t, enforce_sorted=False)
            yp, h = mod(packed, hx)
            y, _ = pad_packed_sequence(yp, total_length=T)
        return y, h

    def run_infer():
        with torch.no_grad():
            forward(x)

    x_grad = x.clone().requires_grad_(True)

    def run_train():
        with torch.enable_grad():
            forward(x_grad)

    def run_fwdbwd():
        with torch.enable_grad():
            y, h = forward(x_grad)
            loss = (y * dy).sum()
            if lstm:
                loss = loss + (h[0] * dhy).sum() + (h[1] * dcy).sum()
            else:
                loss = loss + (h * dhy).sum()
            # Gradients accumulate into .grad as in a training loop without zeroing:
            # no fresh allocation per call, the cheapest way for PyTorch.
            loss.backward()

    runs = {"infer": run_infer, "train": run_train, "fwdbwd": run_fwdbwd}
    status = 0
    for m in modes:
        rec = dict(base, mode=m, threads=a.threads, lengths=a.lengths)
        try:
            mod.train(m != "infer")
            once = runs[m]
            for i in range(a.warmup):
                t0 = time.perf_counter()
                once()
                if a.budget_s > 0 and time.perf_counter() - t0 > a.budget_s / 5:
                    break  # a slow case: one warm-up run is enough
            repeat = a.repeat
            ms = []
            for i in range(repeat):
                t0 = time.perf_counter()
                once()
                ms.append((time.perf_counter() - t0) * 1e3)
                if i == 0 and a.budget_s > 0:
                    repeat = max(min(3, a.repeat), min(a.repeat, math.ceil(a.budget_s * 1e3 / max(ms[0], 1e-3))))
                if len(ms) >= repeat:
                    break
        except RuntimeError as e:
            status = 3
            emit(dict(rec, error=f"torch: {e}".replace("\n", " ")))
            continue
        med = statistics.median(ms)
        flops = case["flops"][m]
        tokens = T * B if a.variant == "padded" else real_tokens
        rec.update(
            impl=f"aten-native/torch-{torch.__version__}",
            dtype="float32", seed=a.seed, tokens=tokens, padded_tokens=T * B, real_tokens=real_tokens,
            repeat=len(ms), ms_median=med, ms_min=min(ms), ms_max=max(ms), flops=flops,
            gflops=flops / (med * 1e-3) / 1e9 if med > 0 else 0.0,
            workspace_bytes=None, reserve_bytes=None)
        emit(rec)
    return status


if __name__ == "__main__":
    sys.exit(main())
