#!/usr/bin/env python3
"""rnnx's cuda backend against PyTorch's cuDNN RNNs on the same GPU, in one run (tools/gpu-check
--bench). For each case of issue 10's grid (LSTM T=100 B=64 H=1024, T=50 B=256 H=2048, T=200 B=4
H=256; full and uniform lengths; inference and forward+backward) it runs rnnx_cuda_bench, then
bench/cuda/torch_gpu_peer.py on the same lengths, padded and packed (packing timed), and prints
one table of medians with the ratios torch/rnnx (> 1: rnnx faster). Writes the table and every
raw JSON line under --out.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [  # (cell, T, B, I, H)
    ("lstm", 100, 64, 1024, 1024),
    ("lstm", 50, 256, 2048, 2048),
    ("lstm", 200, 4, 256, 256),
    ("gru", 100, 64, 1024, 1024),
]


def run_json(cmd, log):
    log.write("$ " + " ".join(cmd) + "\n")
    r = subprocess.run(cmd, capture_output=True, text=True)
    log.write(r.stdout + r.stderr)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bench", required=True, help="the rnnx_cuda_bench executable")
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="first case only, 5 repeats")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cases = CASES[:1] if a.quick else CASES
    repeat = 5 if a.quick else a.repeat
    rows = []
    start = time.time()
    with open(os.path.join(a.out, "gpu_bench.log"), "w") as log, \
            open(os.path.join(a.out, "gpu_bench.jsonl"), "w") as raw:
        for cell, T, B, I, H in cases:
            for lengths in ("full", "uniform"):
                common = ["--cell", cell, "--seq", str(T), "--batch", str(B), "--input", str(I),
                          "--hidden", str(H), "--mode", "infer,fwdbwd", "--repeat", str(repeat)]
                ours = run_json([a.bench] + common + ["--lengths", lengths], log)
                lens = ",".join(str(v) for v in ours[0]["lengths"])
                peers = {}
                for variant in ("padded", "packed"):
                    for r in run_json([sys.executable, os.path.join(HERE, "torch_gpu_peer.py")] + common
                                      + ["--lengths", lens, "--variant", variant], log):
                        peers[(variant, r["mode"])] = r
                for r in ours:
                    pad, pack = peers[("padded", r["mode"])], peers[("packed", r["mode"])]
                    row = {"case": r["case"], "lengths": lengths, "mode": r["mode"], "impl": r["impl"],
                           "rnnx_ms": r["median_ms"], "torch_padded_ms": pad["median_ms"],
                           "torch_packed_ms": pack["median_ms"], "tokens": r["tokens"],
                           "vs_padded": pad["median_ms"] / r["median_ms"],
                           "vs_packed": pack["median_ms"] / r["median_ms"]}
                    rows.append(row)
                    raw.write(json.dumps(row) + "\n")
                    print(f"  {row['case']:<44} {lengths:<8} {row['mode']:<6} rnnx {row['rnnx_ms']:8.3f} ms  "
                          f"padded x{row['vs_padded']:.2f}  packed x{row['vs_packed']:.2f}", flush=True)
    table = ["| case | lengths | mode | rnnx ms | torch padded ms | torch packed ms | padded / rnnx | packed / rnnx |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r['case']} | {r['lengths']} | {r['mode']} | {r['rnnx_ms']:.3f} | "
                     f"{r['torch_padded_ms']:.3f} | {r['torch_packed_ms']:.3f} | {r['vs_padded']:.2f} | "
                     f"{r['vs_packed']:.2f} |")
    text = "\n".join(table)
    with open(os.path.join(a.out, "RESULTS-gpu.md"), "w") as f:
        f.write(f"Medians of {repeat} calls, each synchronised; float32, strict (rnnx FMA math, "
                f"torch TF32 off); rnnx impl {rows[0]['impl'] if rows else '-'}; "
                f"{time.time() - start:.0f} s.\n\n" + text + "\n")
    print(text)


if __name__ == "__main__":
    main()
