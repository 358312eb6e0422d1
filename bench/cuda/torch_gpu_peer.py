#!/usr/bin/env python3
"""PyTorch peer of rnnx_cuda_bench: torch.nn.LSTM/GRU/RNN on the GPU (cuDNN) on the same batch.

--variant padded  the padded batch [T, B, I] (cuDNN runs T x B whatever the lengths).
--variant packed  pack_padded_sequence(enforce_sorted=False) with the lengths on the host, the
                  packed run, pad_packed_sequence: the whole path of a user with padded data
                  and lengths, timed including the packing.
Modes: infer (eval, no_grad) and fwdbwd (forward, then backward of y, hy [, cy] against fixed
gradients, to the input and every weight). Each call is timed with the device synchronised
after it (as rnnx_cuda_bench does); the median of --repeat after --warmup. float32 runs with
TF32 off unless --tf32 (PyTorch's default lets cuDNN use TF32; rnnx's float32 is strict unless
its math mode allows conversion). Prints one JSON object per mode.
"""

import argparse
import json
import statistics
import time

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cell", default="lstm", choices=["lstm", "gru", "rnn_tanh", "rnn_relu"])
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--bidirectional", action="store_true")
    p.add_argument("--input", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--lengths", required=True, help="comma-separated, one per sequence (rnnx_cuda_bench's)")
    p.add_argument("--mode", default="infer")
    p.add_argument("--variant", default="padded", choices=["padded", "packed"])
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    dev = torch.device("cuda")
    dtype = getattr(torch, a.dtype)
    lengths = [int(v) for v in a.lengths.split(",")]
    if len(lengths) != a.batch:
        p.error(f"--lengths has {len(lengths)} values, --batch is {a.batch}")
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(a.cell, torch.nn.RNN)
    kw = {} if a.cell in ("lstm", "gru") else {"nonlinearity": "tanh" if a.cell == "rnn_tanh" else "relu"}
    torch.manual_seed(0)
    m = cls(a.input, a.hidden, num_layers=a.layers, bidirectional=a.bidirectional, **kw).to(dev, dtype)
    D = 2 if a.bidirectional else 1
    x = (torch.rand(a.seq, a.batch, a.input, device=dev, dtype=dtype) * 2 - 1)
    h0 = torch.rand(a.layers * D, a.batch, a.hidden, device=dev, dtype=dtype) * 2 - 1
    c0 = torch.rand_like(h0)
    dy = torch.rand(a.seq, a.batch, D * a.hidden, device=dev, dtype=dtype) * 2 - 1
    dh = torch.rand_like(h0)
    lens_cpu = torch.tensor(lengths, dtype=torch.int64)
    lstm = a.cell == "lstm"

    def once(train):
        xi = x.detach().requires_grad_(train)
        state = (h0, c0) if lstm else h0
        if a.variant == "packed":
            packed = pack_padded_sequence(xi, lens_cpu, enforce_sorted=False)
            out, st = m(packed, state)
            y, _ = pad_packed_sequence(out, total_length=a.seq)
        else:
            y, st = m(xi, state)
        if train:
            outs = [y] + (list(st) if lstm else [st])
            grads = [dy] + ([dh, dh] if lstm else [dh])
            torch.autograd.backward(outs, grads)
        torch.cuda.synchronize()

    for mode in a.mode.split(","):
        train = mode == "fwdbwd"
        m.train(train)
        ctx = torch.enable_grad() if train else torch.no_grad()
        with ctx:
            for _ in range(a.warmup):
                once(train)
            ms = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                once(train)
                ms.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"runner": f"torch-{a.variant}" + ("-tf32" if a.tf32 else ""), "mode": mode,
                          "median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms),
                          "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}),
              flush=True)


if __name__ == "__main__":
    main()
