"""Sequence-length distributions of `rnnx bench` (docs/bench.md), reproduced bit for bit.

SplitMix64 is integer arithmetic and the float steps are single IEEE double operations in
the same order as tools/rnnx/bench_problem.cpp (math.log1p is the C library's log1p), so a
seed gives the same lengths here as in `rnnx bench`. run_all.py still writes the lengths to
a file and hands the same file to every runner, so no runner depends on this equivalence;
`run_all.py --quick` checks it against `rnnx bench` once.
"""

import math

MASK64 = (1 << 64) - 1
LONG_SHARE = 8      # longtail: one sequence in 8 has the full length T
SHORT_SCALE = 8.0   # longtail: the others are 1 + an exponential of mean T / 8


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform01(self):
        return float(self.next() >> 11) * 2.0 ** -53


def make_lengths(spec, T, B, seed):
    """full | uniform | longtail | path of a file with one length per line."""
    rng = SplitMix64(seed)
    if spec == "full":
        return [T] * B
    if spec == "uniform":
        return [1 + min(T - 1, int(rng.uniform01() * float(T))) for _ in range(B)]
    if spec == "longtail":
        order = list(range(B))
        for i in range(B - 1, 0, -1):
            j = rng.next() % (i + 1)
            order[i], order[j] = order[j], order[i]
        long_count = max(1, B // LONG_SHARE)
        is_long = [False] * B
        for i in range(long_count):
            is_long[order[i]] = True
        lengths = [T] * B
        for b in range(B):
            if is_long[b]:
                continue
            e = -math.log1p(-rng.uniform01()) * float(T) / SHORT_SCALE
            lengths[b] = min(T, 1 + int(e))
        return lengths
    return read_lengths_file(spec, T, B)


def read_lengths_file(path, T, B):
    lengths = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                v = int(line.strip())
            except ValueError:
                raise ValueError(f"{path}:{line_no}: expected one integer length, got {line!r}")
            if not 0 <= v <= T:
                raise ValueError(f"{path}:{line_no}: length {v} must be in [0, --seq (= {T})]")
            lengths.append(v)
    if len(lengths) != B:
        raise ValueError(f"{path}: has {len(lengths)} lengths but --batch is {B}")
    return lengths


def write_lengths_file(path, lengths):
    with open(path, "w") as f:
        f.write("".join(f"{v}\n" for v in lengths))
