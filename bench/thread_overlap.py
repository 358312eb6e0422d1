#!/usr/bin/python3
"""Two Python threads calling one module, against one thread making all the calls: how well
concurrent callers share the machine (issue 44). For each variant, the time of 2 threads x N
calls divided by the time of 1 thread x 2N calls: 1.0 is no gain and no loss, below 1 the
calls overlap usefully, above 1 they get in each other's way (oversubscription: every
per-step barrier waits for a descheduled partner).

Variants: torch.nn, rnnx.torch following torch.get_num_threads() (the default), and
rnnx.torch with num_threads=1. Rounds interleave the variants, each cell is the median over
--rounds. Run it with the interpreter whose PyTorch you measure and PYTHONPATH=<build>/python
unless rnnx is installed there. The issue's bound: rnnx.torch (default) at most torch.nn's
ratio. Measure on a quiet machine (`uptime`).
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time

import torch

import rnnx
import rnnx.torch as rt


def module_pairs(cell, I, H):
    nn_cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell]
    rt_cls = {"lstm": rt.LSTM, "gru": rt.GRU}[cell]
    ref = nn_cls(I, H).eval()
    follow = rt_cls(I, H).eval()
    one = rt_cls(I, H, num_threads=1).eval()
    for m in (follow, one):
        m.load_state_dict(ref.state_dict())
    return {"torch.nn": ref, "rnnx.torch": follow, "rnnx.torch num_threads=1": one}


def run_calls(module, x, calls, threads):
    def work():
        with torch.no_grad():
            for _ in range(calls // threads):
                module(x)
    workers = [threading.Thread(target=work) for _ in range(threads)]
    start = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
    ap.add_argument("--input", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--steps", type=int, default=50, help="T")
    ap.add_argument("--batch", type=int, default=16, help="B")
    ap.add_argument("--calls", type=int, default=120, help="calls in all, per measurement")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="torch.set_num_threads (0: leave PyTorch's default)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args()
    if a.calls < 2 or a.calls % 2:
        ap.error(f"--calls (= {a.calls}) must be an even number >= 2")
    if a.rounds < 1:
        ap.error(f"--rounds (= {a.rounds}) must be >= 1")
    if a.torch_threads > 0:
        torch.set_num_threads(a.torch_threads)
    torch.manual_seed(0)
    mods = module_pairs(a.cell, a.input, a.hidden)
    x = torch.randn(a.steps, a.batch, a.input)
    for m in mods.values():  # warm-up: plans, workers, caches
        run_calls(m, x, 4, 2)
    ratios = {k: [] for k in mods}
    single = {k: [] for k in mods}
    double = {k: [] for k in mods}
    for r in range(a.rounds):
        names = list(mods)
        names = names[r % len(names):] + names[:r % len(names)]  # rotated: none always first
        for k in names:
            t1 = run_calls(mods[k], x, a.calls, 1)
            t2 = run_calls(mods[k], x, a.calls, 2)
            ratios[k].append(t2 / t1)
            single[k].append(t1 / a.calls * 1e3)
            double[k].append(t2 / a.calls * 1e3)
    result = {
        "problem": f"{a.cell} I={a.input} H={a.hidden} T={a.steps} B={a.batch} eval",
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "rnnx_threads_default": rnnx.build_info()["max_threads"], "cpus": os.cpu_count(),
        "calls": a.calls, "rounds": a.rounds,
        "ratio_2threads_over_1": {k: statistics.median(v) for k, v in ratios.items()},
        "ms_per_call_1thread": {k: statistics.median(v) for k, v in single.items()},
        "ms_per_call_2threads": {k: statistics.median(v) for k, v in double.items()},
    }
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"# {result['problem']}; PyTorch {result['torch']} on {result['torch_threads']} "
          f"threads, rnnx's default {result['rnnx_threads_default']}; {a.calls} calls, "
          f"median of {a.rounds} rounds")
    # ms/call: the wall time of all calls over their number, so with 2 threads it is the
    # time per call the pair delivers (throughput), comparable across the variants.
    print(f"{'variant':28s} {'2 threads / 1':>14s} {'ms/call (1 thread)':>19s} "
          f"{'ms/call (2 threads)':>20s}")
    for k in mods:
        print(f"{k:28s} {result['ratio_2threads_over_1'][k]:14.2f} "
              f"{result['ms_per_call_1thread'][k]:19.3f} {result['ms_per_call_2threads'][k]:20.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
