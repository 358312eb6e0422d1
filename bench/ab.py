#!/usr/bin/python3
"""A/B of two builds of rnnx on a case list, in one run: `rnnx bench` of build A and of build B
alternate case by case and round by round (one process per build, case and length
distribution), so that drift on a shared machine hits both alike; each case runs by its flags,
so build A may predate `rnnx bench --cases`. A row is one case, length distribution, mode and
thread count: each build's median over the rounds of its per-round median time, and the median
of the per-round ratios A / B (above 1: B is faster).

  bench/ab.py --a BUILD_BEFORE/tools/rnnx/rnnx --b build/release/tools/rnnx/rnnx \\
      [--cases bench/problems.txt] [--filter REGEX] [--lengths full,uniform] [--rounds 5]

Set RNNX_AUTOTUNE=0 to compare the heuristic choices (otherwise each process searches anew).
"""

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

import rnnx_cases

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the rnnx command of build A (before)")
    p.add_argument("--b", required=True, help="the rnnx command of build B (after)")
    p.add_argument("--cases", default=os.path.join(HERE, "problems.txt"), help="case list")
    p.add_argument("--filter", help="regular expression: keep the case lines that match")
    p.add_argument("--lengths", default="full,uniform", help="comma-separated distributions")
    p.add_argument("--modes", default="infer,fwdbwd", help="comma-separated: infer, train, fwdbwd")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    p.add_argument("--json", help="also write every raw record here")
    p.add_argument("--bench-flags", default="",
                   help="more flags for both builds' `rnnx bench`, e.g. '--dtype float64'")
    return p.parse_args(argv)


def case_lines(path, pattern):
    """The case lines of a list (comments and blank lines dropped), those matching pattern."""
    keep = []
    with open(path) as f:
        for line in f:
            text = line.split("#", 1)[0].strip()
            if text and (pattern is None or re.search(pattern, text)):
                keep.append(text)
    if not keep:
        sys.exit(f"ab.py: no case of {path} matches --filter {pattern!r}")
    return keep


def run(cmd, flags, lengths, args):
    out = subprocess.run(
        [cmd, "bench"] + flags + shlex.split(args.bench_flags) +
        ["--lengths", lengths, "--mode", args.modes, "--threads", args.threads, "--repeat",
         str(args.repeat), "--json"],
        check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def key(rec):
    return (rec["problem"], rec["mode"], rec["threads"])


def main():
    args = parse_args()
    lines = case_lines(args.cases, args.filter)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        cases_file = f.name
    try:
        # Build B says what the cases are; each runs by its flags, which older builds take too.
        cases = rnnx_cases.describe(args.b, ["--cases", cases_file])
    finally:
        os.unlink(cases_file)
    times = {}  # key -> {"a": [ms per round], "b": [...]}
    raw = []
    for r in range(args.rounds):
        for lengths in args.lengths.split(","):
            # Alternate which build goes first, so neither always runs on a warmer machine.
            order = [("a", args.a), ("b", args.b)] if r % 2 == 0 else [("b", args.b), ("a", args.a)]
            for case in cases:
                for side, cmd in order:
                    for rec in run(cmd, rnnx_cases.case_flags(case), lengths, args):
                        rec["build"] = side
                        rec["ab_round"] = r
                        raw.append(rec)
                        times.setdefault(key(rec), {"a": [], "b": []})[side].append(rec["ms_median"])
        print(f"ab.py: round {r + 1} of {args.rounds} done", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            for rec in raw:
                f.write(json.dumps(rec) + "\n")

    print(f"{'problem':<52} {'mode':<6} {'thr':>3} {'A ms':>10} {'B ms':>10} {'A/B':>6}")
    ratios = []
    for k in sorted(times):
        a, b = times[k]["a"], times[k]["b"]
        n = min(len(a), len(b))
        if n == 0:
            continue
        ratio = statistics.median(a[i] / b[i] for i in range(n))
        ratios.append(ratio)
        print(f"{k[0]:<52} {k[1]:<6} {k[2]:>3} {statistics.median(a):>10.3f} "
              f"{statistics.median(b):>10.3f} {ratio:>6.3f}")
    if ratios:
        print(f"rows: {len(ratios)}; A/B median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
