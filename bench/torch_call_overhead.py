#!/usr/bin/python3
"""Per-call cost of rnnx.torch against torch.nn in one process: what step-wise generation
pays at every step. Tiny problems (T=1, B=1, H=16 by default) so that the call, not the
arithmetic, is measured: rnnx.torch.LSTM/GRU/RNN, torch.nn.LSTM/GRU/RNN, rnnx's NumPy class
and the bare plan (the C++ call through the binding), inference and training forward; and the
cells (rnnx.torch.LSTMCell/GRUCell/RNNCell against torch.nn's, one step of B rows).

Rounds interleave the variants; each cell is the median over --rounds of each round's mean
per call. Run it with the interpreter whose PyTorch you measure (Debian's /usr/bin/python3
for 1.13, the pip environment's for the current one; scripts/pip-env.sh prints its folder)
and PYTHONPATH=<build>/python unless rnnx is installed there. The issue's bound (#26):
rnnx.torch's inference call at most half of torch.nn's.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

import rnnx
import rnnx.torch as rt

TARGET_RATIO = 0.5  # rnnx.torch / torch.nn per inference call, at most
CELL_TARGET_RATIO = 1.0  # a cell's call, at most torch.nn's cell's (issue 46)
TRAIN_TARGET_RATIO = 1.5  # a module's training forward or step, at most 1.5x (issue 46)


def timer(fn, calls):
    def run():
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls
    return run


def module_calls(ref, ours, x, mode):
    """torch.nn's call and rnnx.torch's on x: inference (no_grad, eval), a training forward
    that builds the graph (train), or a forward and its backward (step)."""
    if mode == "infer":
        ref.eval()
        ours.eval()

        def call(m):
            def run():
                with torch.no_grad():
                    m(x)
            return run
        return {"torch.nn": call(ref), "rnnx.torch": call(ours)}
    xg = x.clone().requires_grad_()
    if mode == "step":  # a whole training step's calls: forward, then backward
        def step(m):
            def run():
                out = m(xg)
                (out[0] if isinstance(out, tuple) else out).sum().backward()
            return run
        return {"torch.nn": step(ref), "rnnx.torch": step(ours)}
    return {"torch.nn": lambda: ref(xg), "rnnx.torch": lambda: ours(xg)}


def variants(cell, T, B, I, H, mode):
    nn_cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}[cell]
    rt_cls = {"lstm": rt.LSTM, "gru": rt.GRU, "rnn_tanh": rt.RNN}[cell]
    np_cls = {"lstm": rnnx.LSTM, "gru": rnnx.GRU, "rnn_tanh": rnnx.RNN}[cell]
    ref = nn_cls(I, H)
    ours = rt_cls(I, H)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(T, B, I)
    out = {}
    if mode == "infer":
        xn = x.numpy()
        npm = np_cls(I, H)
        plan = rnnx.Plan.padded(npm.config, T, B)
        y = np.empty((T, B, H), np.float32)
        hy = np.empty((1, B, H), np.float32)
        cy = np.empty((1, B, H), np.float32) if cell == "lstm" else None
        ws = np.empty(max(plan.forward_workspace_size(False), 1), np.uint8)
        out["rnnx NumPy class"] = lambda: npm.forward(xn)
        out["rnnx plan (C++ call)"] = lambda: plan.forward(xn, npm.weights, y, hy=hy, cy=cy,
                                                           workspace=ws)
    out.update(module_calls(ref, ours, x, mode))
    return out


def cell_variants(cell, B, I, H, mode):
    """torch.nn's cell against rnnx.torch's, one step of B rows."""
    name = {"lstm": "LSTMCell", "gru": "GRUCell", "rnn_tanh": "RNNCell"}[cell]
    ref = getattr(torch.nn, name)(I, H)
    ours = getattr(rt, name)(I, H)
    ours.load_state_dict(ref.state_dict())
    return module_calls(ref, ours, torch.randn(B, I), mode)


def _choices(ap, text, allowed, flag):
    """The comma-separated values of `flag`, each one of `allowed` (else argparse's error,
    naming the flag, the value and what it may be)."""
    values = [v for v in text.split(",") if v]
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        ap.error(f"{flag} {text!r}: {', '.join(bad) or 'nothing'} is not one of "
                 f"{', '.join(allowed)} (comma-separated)")
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="lstm,gru,rnn_tanh")
    ap.add_argument("--modes", default="infer,train,step", help="infer (no_grad), train "
                    "(forward building the graph), step (forward and backward)")
    ap.add_argument("--kinds", default="seq,cell", help="seq (the modules), cell (RNNCell, "
                    "LSTMCell, GRUCell: one step of B rows)")
    ap.add_argument("--shape", default="1,1,16,16", help="T,B,I,H")
    ap.add_argument("--calls", type=int, default=2000, help="calls per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the cells to this file")
    args = ap.parse_args(argv)
    kinds = _choices(ap, args.kinds, ("seq", "cell"), "--kinds")
    cell_names = _choices(ap, args.cells, ("lstm", "gru", "rnn_tanh"), "--cells")
    modes = _choices(ap, args.modes, ("infer", "train", "step"), "--modes")
    try:
        T, B, I, H = (int(v) for v in args.shape.split(","))
        if min(T, B, I, H) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--shape {args.shape!r}: four positive integers T,B,I,H")
    if args.calls < 1 or args.rounds < 1:
        ap.error(f"--calls {args.calls} and --rounds {args.rounds} must be at least 1")
    torch.set_num_threads(1)
    print(f"PyTorch {torch.__version__}, rnnx {rnnx.__version__}, Python "
          f"{sys.version.split()[0]}; T={T} B={B} I={I} H={H}, 1 thread, median of "
          f"{args.rounds} rounds of {args.calls} calls (us per call)")
    rows = []
    failed = False
    for kind, cell, mode in ((k, c, m) for k in kinds for c in cell_names for m in modes):
        vs = (variants(cell, T, B, I, H, mode) if kind == "seq"
              else cell_variants(cell, B, I, H, mode))
        timers = {name: timer(fn, args.calls) for name, fn in vs.items()}
        for t in timers.values():  # warm up: plans, caches, first-touch memory
            t()
        samples = {name: [] for name in vs}
        for r in range(args.rounds):
            names = list(timers)
            names = names[r % len(names):] + names[:r % len(names)]
            for name in names:
                samples[name].append(timers[name]())
        med = {name: 1e6 * statistics.median(s) for name, s in samples.items()}
        ratio = med["rnnx.torch"] / med["torch.nn"]
        row = dict(kind=kind, cell=cell, mode=mode, us=med, ratio=ratio)
        rows.append(row)
        cells = "  ".join(f"{name} {v:7.1f}" for name, v in med.items())
        verdict = ""
        target = TARGET_RATIO if kind == "seq" and mode == "infer" else (
            CELL_TARGET_RATIO if kind == "cell" else TRAIN_TARGET_RATIO)
        if target is not None:
            ok = ratio <= target
            failed |= not ok
            verdict = f"  (target <= {target}: {'met' if ok else 'NOT met'})"
        print(f"{kind:4s} {cell:8s} {mode:5s} {cells}  rnnx.torch/torch.nn {ratio:.2f}{verdict}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(torch=torch.__version__, shape=[T, B, I, H], rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
