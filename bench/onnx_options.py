#!/usr/bin/python3
"""ONNX's cell options (activation functions, peepholes, gate clip, input_forget): time rnnx's
generic step kernels, A/B between two builds of the Python bindings in one run.

Each (build, problem, mode) runs in its own process, the builds alternating round by round, so
drift on a shared machine hits both alike; a cell of the table is the median over --rounds
processes of each process's median of --repeat calls, and the ratio column is the median of the
per-round ratios (A / B: above 1, B is faster). Run with Debian's /usr/bin/python3 (NumPy).

  bench/onnx_options.py --a BUILD_BEFORE/python --b build/release/python [--threads 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# name -> (class, constructor keywords beyond sizes); T, B, I, H are set by flags.
PROBLEMS = {
    "lstm_peephole_clip": ("LSTM", {"peephole": True, "gate_clip": 3.0}),
    "lstm_acts": ("LSTM", {"activations": ["HardSigmoid", "Softsign", "Elu"]}),
    "lstm_input_forget": ("LSTM", {"input_forget": True}),
    "gru_acts": ("GRU", {"activations": ["HardSigmoid", "Softplus"]}),
    "gru_orig_clip": ("GRU", {"gru_linear_before_reset": False, "gate_clip": 3.0}),
    "rnn_softsign": ("RNN", {"activations": ["Softsign"]}),
}

WORKER = r"""
import json, sys, time
import numpy as np
import rnnx
cls, kw, T, B, I, H, mode, repeat, threads = json.loads(sys.argv[1])
m = getattr(rnnx, cls)(I, H, num_threads=threads, **kw)
rng = np.random.default_rng(0)
x = rng.standard_normal((T, B, I)).astype(np.float32)
dy = rng.standard_normal((T, B, H)).astype(np.float32)
def call():
    if mode == "infer":
        m.forward(x)
    else:
        m.forward(x, training=True)
        m.backward(dy)
for _ in range(2):
    call()
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    call()
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps(times[len(times) // 2] * 1e3))
"""


def run(python_dir, args, cls, kw, mode):
    env = {**os.environ, "PYTHONPATH": python_dir, "RNNX_AUTOTUNE": "0"}
    spec = [cls, kw, args.seq, args.batch, args.input, args.hidden, mode, args.repeat,
            args.threads]
    out = subprocess.run([sys.executable, "-c", WORKER, json.dumps(spec)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="python folder of build A (e.g. before)")
    ap.add_argument("--b", required=True, help="python folder of build B (e.g. after)")
    ap.add_argument("--seq", type=int, default=50)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--input", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="comma-separated problem names")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(PROBLEMS)
    unknown = [n for n in names if n not in PROBLEMS]
    if unknown:
        ap.error(f"unknown problem(s) {unknown}; known: {list(PROBLEMS)}")
    print(f"T={args.seq} B={args.batch} I={args.input} H={args.hidden} float32, "
          f"{args.threads} thread(s), RNNX_AUTOTUNE=0, {args.rounds} rounds x {args.repeat} calls")
    print("| problem | mode | A ms | B ms | A/B |")
    print("|---|---|---|---|---|")
    for name in names:
        cls, kw = PROBLEMS[name]
        for mode in ("infer", "fwdbwd"):
            a, b = [], []
            for _ in range(args.rounds):
                a.append(run(args.a, args, cls, kw, mode))
                b.append(run(args.b, args, cls, kw, mode))
            ratio = statistics.median(x / y for x, y in zip(a, b))
            print(f"| {name} | {mode} | {statistics.median(a):.2f} | {statistics.median(b):.2f} "
                  f"| {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
