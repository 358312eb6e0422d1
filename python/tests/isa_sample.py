"""A sample of rnnx's work for the runs under qemu-x86_64 (scripts/test-qemu-levels.sh): every
cell, ragged and packed batches, both directions, projection and clipping, dropout, forward
and backward, through the installed package's NumPy API (no PyTorch).

    isa_sample.py write OUT.npz            outputs on this machine (run natively, RNNX_CPU_ISA
                                           capped to the level qemu will emulate)
    isa_sample.py check OUT.npz --isa L    checks that the detected level is L, computes the
                                           same outputs and compares them bit for bit

The kernels of one ISA level compute the same bits wherever they run (and on any thread
count), so a run under qemu at a level must equal a native run capped to it; a difference
means the detection chose other kernels or the emulated CPU computes differently. (A build
with OpenBLAS differs in float64: OpenBLAS picks its own kernels by its own detection. The
wheels have no OpenBLAS.)
"""

import argparse
import os
import sys

import numpy as np

# The heuristic's choices, not the search's: a search times its candidates, and a build with
# oneDNN may then pick another engine in each run (other bits); it is slow under qemu too.
os.environ.setdefault("RNNX_AUTOTUNE", "0")
import rnnx  # noqa: E402

CASES = [
    # name, class, constructor kwargs, T, B, lengths
    ("lstm_bidir_proj_clip", rnnx.LSTM,
     dict(input_size=7, hidden_size=19, num_layers=2, bidirectional=True, proj_size=5,
          cell_clip=(-0.5, 0.5), dropout=0.3, seed=3), 6, 4, [6, 0, 3, 5]),
    ("gru_lbr", rnnx.GRU, dict(input_size=9, hidden_size=17, num_layers=1), 5, 3, [2, 5, 1]),
    ("gru_orig_bidir", rnnx.GRU,
     dict(input_size=4, hidden_size=33, bidirectional=True, gru_linear_before_reset=False),
     7, 2, [7, 4]),
    ("rnn_relu_2l", rnnx.RNN, dict(input_size=6, hidden_size=40, num_layers=2,
                                   nonlinearity="relu"), 4, 5, [4, 4, 1, 0, 3]),
    ("lstm_f64", rnnx.LSTM, dict(input_size=5, hidden_size=16, dtype=np.float64), 3, 2, [3, 2]),
]


def run_case(cls, kwargs, T, B, lengths):
    m = cls(**kwargs, rng=11)
    dtype = m.dtype
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, size=(T, B, m.input_size)).astype(dtype)
    out = m.forward(x, lengths=lengths, training=True)
    y = out[0]
    dy = rng.uniform(-1, 1, size=y.shape).astype(dtype)
    grads = m.backward(dy=dy)
    inference = m.forward(x, lengths=lengths, training=False)[0]
    return {"y": y, "inference": inference, "dx": grads[0], "dweights": m.grad.copy()}


def compute():
    arrays = {}
    for name, cls, kwargs, T, B, lengths in CASES:
        for key, value in run_case(cls, kwargs, T, B, lengths).items():
            arrays[f"{name}/{key}"] = value
    return arrays


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["write", "check"])
    ap.add_argument("file")
    ap.add_argument("--isa", help="with check: the level rnnx must detect")
    a = ap.parse_args()
    info = rnnx.build_info()
    print(f"isa_sample: detected {info['cpu_isa_detected']}, used {info['cpu_isa_used']}, "
          f"flags '{info['cpu_features']}'")
    arrays = compute()
    if a.action == "write":
        np.savez(a.file, **arrays)
        print(f"isa_sample: wrote {len(arrays)} arrays to {a.file}")
        return 0
    failures = []
    if a.isa and info["cpu_isa_detected"] != a.isa:
        failures.append(f"detected level {info['cpu_isa_detected']}, expected {a.isa}")
    want = np.load(a.file)
    if sorted(want.files) != sorted(arrays):
        failures.append(f"arrays differ: {sorted(set(want.files) ^ set(arrays))}")
    for key in sorted(set(want.files) & set(arrays)):
        if not np.array_equal(want[key], arrays[key]):
            diff = np.max(np.abs(want[key].astype(np.float64) - arrays[key]))
            failures.append(f"{key}: differs from the native run (max |diff| {diff:.3g})")
    for f in failures:
        print(f"isa_sample: FAIL {f}", file=sys.stderr)
    print(f"isa_sample: {len(arrays) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
