#!/usr/bin/python3
# `rnnx info` and `rnnx bench` end to end on tiny problems: the fields they promise, the
# token counts of each length distribution, the FLOP formula of docs/bench.md (written out
# again here, as the check of the one in bench/case), --dry-run and --cases, and the
# refusal of bad flags. Timings are not judged (speed lives in benchmarks, not tests).
"""Needs only numpy. Usage: /usr/bin/python3 tests/python/cli_bench.py --rnnx PATH"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

GATES = {"lstm": 4, "gru": 3, "gru-orig": 3, "rnn_tanh": 1, "rnn_relu": 1}
BENCH_KEYS = ["problem", "backend", "impl", "mode", "threads", "tokens", "ms_median", "ms_min",
              "ms_max", "gflops", "workspace_bytes", "reserve_bytes"]


def forward_flops(cell, I, H, P, L, D, tokens):
    """docs/bench.md: per real token, layer and direction 2*G*H*(I_l + P') + 2*H*P'."""
    Pp = P or H
    per = sum(D * (2 * GATES[cell] * H * ((I if l == 0 else D * Pp) + Pp) + (2 * H * Pp if P else 0))
              for l in range(L))
    return per * tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rnnx", required=True)
    args = ap.parse_args()
    passed = failed = 0

    def report(name, problems):
        nonlocal passed, failed
        print(("FAIL " if problems else "PASS ") + name + (": " + "; ".join(problems) if problems else ""))
        if problems:
            failed += 1
        else:
            passed += 1

    def run(argv, env=None):
        return subprocess.run([args.rnnx] + argv, capture_output=True, text=True, timeout=300,
                              env=None if env is None else {**os.environ, **env})

    # info, text and JSON
    p = run(["info"])
    report("info", [] if p.returncode == 0 and p.stdout.startswith("rnnx ") and "backend:" in p.stdout
           else [f"status {p.returncode}: {p.stdout!r} {p.stderr!r}"])
    p = run(["info", "--json"])
    problems = []
    try:
        info = json.loads(p.stdout)
        for k in ["version", "build_type", "compiler", "sanitizers", "backends", "cpu_isa_detected",
                  "cpu_isa_used", "cpu_features", "gemm_engine", "with_onednn", "with_blas", "math", "threads"]:
            if k not in info:
                problems.append(f"no key {k}")
        if not info["backends"]["reference"]["available"]:
            problems.append("the reference backend is not available")
    except (ValueError, KeyError) as e:
        problems.append(f"bad JSON ({e}): {p.stdout!r}")
        info = {"backends": {}}
    report("info_json", problems)
    backends = ["reference"] + (["cpu"] if info["backends"].get("cpu", {}).get("available") else [])

    tmp = tempfile.mkdtemp(prefix="rnnx_cli_bench_")
    lengths_file = os.path.join(tmp, "lengths.txt")
    with open(lengths_file, "w") as f:
        f.write("7\n0\n\n3\n 1 \n")
    problems_cfg = [
        # cell, I, H, P, L, bidir, B, T, lengths, expected tokens (None: only 1 <= len <= T)
        ("lstm", 5, 6, 0, 2, True, 4, 7, "full", 28),
        ("lstm", 5, 8, 3, 2, True, 4, 7, lengths_file, 11),
        ("gru", 9, 5, 0, 1, False, 16, 12, "longtail", None),
        ("gru-orig", 6, 5, 0, 2, True, 4, 7, lengths_file, 11),
        ("rnn_tanh", 3, 4, 0, 3, True, 8, 6, "uniform", None),
        ("rnn_relu", 4, 4, 0, 1, False, 4, 7, lengths_file, 11),
    ]
    for backend in backends:
        for cell, I, H, P, L, bidir, B, T, lengths, tokens in problems_cfg:
            for dtype in ("float32", "float64", "bfloat16", "float16"):
                argv = ["bench", "--cell", cell, "--input", str(I), "--hidden", str(H), "--layers", str(L),
                        "--batch", str(B), "--seq", str(T), "--lengths", lengths, "--seed", "3",
                        "--mode", "infer,train,fwdbwd", "--threads", "1", "--backend", backend,
                        "--dtype", dtype, "--repeat", "2", "--warmup", "1", "--json"]
                if P:
                    argv += ["--proj", str(P)]
                if bidir:
                    argv.append("--bidirectional")
                name = f"bench_{backend}_{cell}_{os.path.basename(lengths)}_{dtype}"
                p = run(argv)
                problems = []
                if p.returncode != 0:
                    report(name, [f"status {p.returncode}: {p.stderr.strip()}"])
                    continue
                rows = [json.loads(line) for line in p.stdout.splitlines()]
                if [r.get("mode") for r in rows] != ["infer", "train", "fwdbwd"]:
                    problems.append(f"modes {[r.get('mode') for r in rows]}")
                for r in rows:
                    missing = [k for k in BENCH_KEYS if k not in r]
                    if missing:
                        problems.append(f"missing keys {missing}")
                        continue
                    if tokens is not None and r["tokens"] != tokens:
                        problems.append(f"tokens {r['tokens']}, expected {tokens}")
                    if not 1 * B <= r["tokens"] <= T * B:
                        problems.append(f"tokens {r['tokens']} outside [B, T*B]")
                    flops = forward_flops(cell, I, H, P, L, 2 if bidir else 1, r["tokens"])
                    flops *= 3 if r["mode"] == "fwdbwd" else 1
                    if abs(r["flops"] - flops) > 1e-9 * flops:
                        problems.append(f"{r['mode']}: flops {r['flops']}, formula gives {flops}")
                    want = flops / (r["ms_median"] * 1e-3) / 1e9
                    if abs(r["gflops"] - want) > 1e-6 * want:
                        problems.append(f"{r['mode']}: gflops {r['gflops']} != flops / median = {want}")
                    if not r["ms_min"] <= r["ms_median"] <= r["ms_max"]:
                        problems.append(f"{r['mode']}: min/median/max out of order")
                    if r["threads"] != 1 or r["backend"] != backend or r["dtype"] != dtype:
                        problems.append(f"echoed fields wrong: {r}")
                    if (r["mode"] == "infer") != (r["reserve_bytes"] == 0):
                        problems.append(f"{r['mode']}: reserve_bytes {r['reserve_bytes']}")
                if len({r["tokens"] for r in rows}) != 1:
                    problems.append("tokens differ between modes")
                report(name, problems)

    # The seeded distributions are reproducible, and text output is one line per measurement.
    base_flags = {"--cell": "gru", "--input": "4", "--hidden": "4", "--batch": "32", "--seq": "50",
                  "--backend": "reference", "--repeat": "1", "--warmup": "0"}

    def bench_argv(*pairs):
        flags = dict(base_flags)
        flags.update(dict(zip(pairs[::2], pairs[1::2])))
        return ["bench"] + [v for kv in flags.items() for v in kv]

    toks = lambda extra: json.loads(run(bench_argv(*extra) + ["--json"]).stdout)["tokens"]
    a, b, c = toks(["--lengths", "longtail", "--seed", "9"]), toks(["--lengths", "longtail", "--seed", "9"]), \
        toks(["--lengths", "longtail", "--seed", "10"])
    report("longtail_seeded", [] if a == b and a < 32 * 50 // 2 else [f"tokens {a}, {b}, {c}"])
    u = toks(["--lengths", "uniform", "--seed", "9"])
    report("uniform_mean", [] if 32 * 50 // 4 < u < 3 * 32 * 50 // 4 else [f"uniform tokens {u}"])
    p = run(bench_argv("--mode", "infer,train", "--threads", "1,2"))
    report("text_lines", [] if p.returncode == 0 and len(p.stdout.splitlines()) == 4 else [p.stdout + p.stderr])

    # --dry-run describes what the measurement runs: the same name, lengths, tokens and FLOPs.
    flags = bench_argv("--lengths", "longtail", "--seed", "9", "--mode", "infer,fwdbwd") + ["--json"]
    problems = []
    try:
        d = json.loads(run(flags + ["--dry-run"]).stdout)
        rows = [json.loads(line) for line in run(flags).stdout.splitlines()]
        if len(d["length_values"]) != 32 or not all(1 <= v <= 50 for v in d["length_values"]):
            problems.append(f"length_values {d['length_values']}")
        if not d["tokens"] == sum(d["length_values"]) == rows[0]["tokens"]:
            problems.append(f"tokens {d['tokens']}, measured {rows[0]['tokens']}")
        if [d["problem"]] * 2 != [r["problem"] for r in rows]:
            problems.append(f"names {d['problem']} {[r['problem'] for r in rows]}")
        if {r["mode"]: r["flops"] for r in rows} != d["flops"]:
            problems.append(f"flops {d['flops']}, measured {[r['flops'] for r in rows]}")
        if d["padded_tokens"] != 32 * 50 or d["line"] != "gru uni l=1 i=4 h=4 p=0 t=50 b=32":
            problems.append(f"padded_tokens {d['padded_tokens']}, line {d['line']!r}")
    except (ValueError, KeyError, IndexError) as e:
        problems.append(f"bad output ({e})")
    report("dry_run", problems)

    # --cases: every case of a list in turn, the list's own text as its line.
    case_list = os.path.join(tmp, "cases.txt")
    with open(case_list, "w") as f:
        f.write("# two cases\nlstm bidir l=2 i=5 h=6 p=3 t=7 b=4  # LSTMP\n\ngru-orig i=3 h=4 t=5 b=2\n")
    common = ["bench", "--cases", case_list, "--backend", "reference", "--repeat", "1", "--warmup", "0",
              "--json", "--lengths", "uniform"]
    p, q = run(common + ["--dry-run"]), run(common)
    problems = []
    try:
        described = [json.loads(line) for line in p.stdout.splitlines()]
        timed = [json.loads(line) for line in q.stdout.splitlines()]
        if [d["line"] for d in described] != ["lstm bidir l=2 i=5 h=6 p=3 t=7 b=4", "gru-orig i=3 h=4 t=5 b=2"]:
            problems.append(f"lines {[d['line'] for d in described]}")
        if [(d["problem"], d["tokens"]) for d in described] != [(r["problem"], r["tokens"]) for r in timed]:
            problems.append(f"described {p.stdout!r}, timed {q.stdout!r}")
        if described[1]["problem"] != "gru-orig_l1_uni_t5_b2_i3_h4_p0_len-mixed":
            problems.append(f"name {described[1]['problem']}")
    except (ValueError, KeyError, IndexError) as e:
        problems.append(f"bad output ({e}): {p.stderr!r} {q.stderr!r}")
    report("cases", problems)

    # Math modes side by side: the converting plan's error against the fp32 plan's outputs.
    if "cpu" in backends:
        p = run(bench_argv("--mode", "fwdbwd", "--math", "fp32,allow_conversion", "--rounds", "2",
                           "--threads", "1") + ["--json"])
        problems = []
        try:
            rows = [json.loads(line) for line in p.stdout.splitlines()]
            if [r["math"] for r in rows] != ["fp32", "allow_conversion"] * 2:
                problems.append(f"math order {[r['math'] for r in rows]}")
            for r in rows[1::2]:
                err = r["err_vs_fp32"]
                # bf16 GEMMs move results by ~1e-2 at worst (README, "Math mode"); 0 without bf16.
                if not all(0 <= err[k] < 0.1 for k in ("y", "dx", "dweights")):
                    problems.append(f"err_vs_fp32 {err}")
        except (ValueError, KeyError) as e:
            problems.append(f"bad output ({e}): {p.stdout!r} {p.stderr!r}")
        report("math_ab", problems)
        p = run(["info"], env={"RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION": "1"})
        report("info_math", [] if p.returncode == 0 and "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION = \"1\" "
               "selects allow_conversion" in p.stdout else [p.stdout + p.stderr])

    # Refusals: status 2 and one error line.
    bad_file = os.path.join(tmp, "bad.txt")
    with open(bad_file, "w") as f:
        f.write("3\nseven\n")
    for name, extra, needle in [
        ("bad_mode", ["--mode", "inference"], "--mode 'inference'"),
        ("bad_threads", ["--threads", "two"], "--threads 'two'"),
        ("lengths_count", ["--lengths", lengths_file], "has 4 lengths but --batch is 32"),
        ("lengths_not_int", ["--lengths", bad_file], "bad.txt:2: expected one integer length"),
        ("lengths_missing", ["--lengths", os.path.join(tmp, "none")], "not full, uniform or longtail"),
        ("bad_cell", ["--cell", "lstmp"], "--cell"),
        ("hidden_zero", ["--hidden", "0"], "hidden_size (= 0)"),
        ("bad_math", ["--math", "bf16"], "--math 'bf16'"),
        ("rounds_zero", ["--rounds", "0"], "--rounds (= 0)"),
        ("bad_math_env", ["--env", "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION=on"],
         "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION (= \"on\")"),
        ("cases_and_case_flags", ["--cases", case_list], "excludes"),
    ]:
        env = None
        if extra[0] == "--env":
            k, v = extra[1].split("=", 1)
            env, extra = {k: v}, []
        p = run(bench_argv(*extra), env=env)
        lines = p.stderr.splitlines()
        ok = p.returncode == 2 and len(lines) == 1 and lines[0].startswith("rnnx: error: ") and needle in p.stderr
        report(name, [] if ok else [f"status {p.returncode}, stderr {p.stderr!r}"])

    bad_list = os.path.join(tmp, "bad-cases.txt")
    with open(bad_list, "w") as f:
        f.write("lstm i=3 h=4 t=5 b=2\ngru i=3 h=4 t=5\n")
    for name, path, needle in [("cases_missing_key", bad_list, "bad-cases.txt:2: missing b="),
                               ("cases_missing_file", os.path.join(tmp, "none"), "cannot be read")]:
        p = run(["bench", "--cases", path, "--dry-run"])
        ok = p.returncode == 2 and len(p.stderr.splitlines()) == 1 and needle in p.stderr
        report(name, [] if ok else [f"status {p.returncode}, stderr {p.stderr!r}"])

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
