#!/usr/bin/python3
"""The side-by-side benchmark in one command: rnnx against oneDNN's RNN primitives and PyTorch.

For every case of bench/problems.txt x lengths (full, uniform, longtail) x thread count it
runs, each as its own process: `rnnx bench --backend cpu`, rnnx_onednn_peer (oneDNN, padded
T x B), torch_peer.py --variant padded and --variant packed, and for variable lengths rnnx on
the equivalent full batch (the "ragged" reference). It measures the GEMM peak once per thread
count, prints one table and writes bench/RESULTS.md (and the raw records to RESULTS.jsonl).
The cases, their names, lengths and FLOP counts are `rnnx bench --cases LIST --dry-run`'s
(rnnx_cases.py). Definitions: bench/README.md. Run with Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rnnx_cases  # noqa: E402

DISTRIBUTIONS = ("full", "uniform", "longtail")
MODES = ("infer", "train", "fwdbwd")
# The peers: oneDNN's RNN primitives, then PyTorch padded and packed for each --torch-python
# (the first as torch-padded / torch-packed, the next as torch2-padded, ...); main() sets it.
PEERS = ["onednn", "torch-padded", "torch-packed"]

# The issues' targets, for batches of at least TARGET_MIN_BATCH sequences, per ISA section:
# full length as x oneDNN's speed per thread count, variable lengths as x the fastest peer.
TARGET_MIN_BATCH = 32
TARGETS = {
    "avx512": {"issue": "#14", "full": {1: 1.15, 2: 1.05}, "var": {"uniform": 2.0, "longtail": 3.5}},
    "avx2": {"issue": "#25", "full": {1: 1.05, 2: 1.05}, "var": {"uniform": 2.0}},
}
TARGET_FULL_VS_ONEDNN = TARGETS["avx512"]["full"]
TARGET_VAR_VS_PEERS = TARGETS["avx512"]["var"]
# The ISA levels a run can be capped to, as each library's own switch, set for every runner:
# RNNX_CPU_ISA for rnnx and bench/peak, ONEDNN_MAX_CPU_ISA for the oneDNN peer and PyTorch's
# oneDNN, ATEN_CPU_CAPABILITY for PyTorch's own kernels, and the BLAS under PyTorch's GEMMs:
# MKL_ENABLE_INSTRUCTIONS for MKL (PyTorch from pip; without it MKL kept running AVX-512 in a
# run capped to AVX2, so that peer was not capped) and OPENBLAS_CORETYPE for OpenBLAS.
ISA_CAPS = {
    "avx2": {"RNNX_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"},
    "avx512": {"RNNX_CPU_ISA": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
               "ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512",
               "OPENBLAS_CORETYPE": "SkylakeX"},
}


def torch_peers(pythons):
    out = []
    for j, _ in enumerate(pythons):
        tag = "torch" if j == 0 else f"torch{j + 1}"
        out += [f"{tag}-padded", f"{tag}-packed"]
    return out


def machine_isa():
    flags = set(cpu_flags())
    return "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "scalar"


def section_of(args):
    """The ISA level a run measures, how, and the section of RESULTS.md it writes:
    ("avx2", "capped (...) on a CPU with avx512", "avx2-capped"). A capped run has a section of its
    own, so that it never replaces a run on a machine whose native level that is."""
    native = machine_isa()
    if args.isa in ("native", native):
        return native, "native", native
    caps = ", ".join(f"{k}={v}" for k, v in ISA_CAPS[args.isa].items())
    return args.isa, f"capped ({caps}) on a CPU with {native}", f"{args.isa}-capped"


# ----------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------

class BenchCase:
    """A case of the list with its lengths drawn: the record of `rnnx bench --dry-run`
    (docs/bench.md, "Dry run"), which names the case and counts its tokens and FLOPs."""

    def __init__(self, record):
        self.record = record
        self.line = record["line"]
        self.name = record["problem"]
        self.lengths = record["length_values"]
        self.tokens = record["tokens"]
        self.T = record["seq"]
        self.B = record["batch"]

    def flags(self, T=None, B=None):
        return rnnx_cases.case_flags(self.record, seq=T, batch=B)

    def flops(self, mode):
        return self.record["flops"][mode]

    def full(self):
        return all(v == self.T for v in self.lengths)


def read_cases(rnnx, path, distributions, seed, modes):
    """{distribution: [BenchCase]} for the list at `path`, one list per distribution in the
    order of the file."""
    try:
        return {d: [BenchCase(r) for r in rnnx_cases.describe(rnnx, ["--cases", path], d, seed, modes)]
                for d in distributions}
    except rnnx_cases.CaseError as e:
        raise SystemExit(f"run_all.py: the case list: {e}")


# ----------------------------------------------------------------------------------------
# Running the runners
# ----------------------------------------------------------------------------------------

class Runners:
    def __init__(self, args):
        self.args = args
        self.rnnx = args.rnnx or find_file(args.build, ["tools/rnnx/rnnx", "rnnx", "bin/rnnx"])
        self.onednn = args.onednn_peer or find_file(
            args.build, ["bench/rnnx_onednn_peer", "rnnx_onednn_peer", "bin/rnnx_onednn_peer"])
        self.machine_peak_tool = args.machine_peak or find_file(
            args.build, ["bench/peak/rnnx_machine_peak", "rnnx_machine_peak", "bin/rnnx_machine_peak"])
        self.torch_peer = os.path.join(HERE, "torch_peer.py")
        self.log = []  # (command, rc, stderr tail) of failed runs

    def env(self, runner, threads):
        e = dict(os.environ)
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            e[k] = str(threads)
        policy = wait_policy(self.args.wait_policy, runner)
        if policy:
            e["OMP_WAIT_POLICY"] = policy
        else:
            e.pop("OMP_WAIT_POLICY", None)
        if self.args.isa != "native":
            e.update(ISA_CAPS[self.args.isa])
        if runner.startswith("torch") and self.args.torch_malloc == "keep":
            # glibc keeps freed memory instead of returning it to the kernel, so PyTorch's
            # per-call tensors are not fresh pages (first touch ~0.3 GB/s, PERF-NOTES.md).
            e["GLIBC_TUNABLES"] = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
        return e

    def run(self, runner, cmd, threads):
        """Runs one command; returns (records, error text or None)."""
        if cmd is None:
            return [], "runner not found (see --build)"
        start = time.monotonic()
        try:
            p = subprocess.run(cmd, env=self.env(runner, threads), capture_output=True, text=True,
                               timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            self.log.append((cmd, "timeout", f"killed after {self.args.timeout} s"))
            return [], f"timed out after {self.args.timeout} s"
        except OSError as e:
            self.log.append((cmd, "oserror", str(e)))
            return [], str(e)
        recs = []
        for line in p.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        err = None
        if p.returncode != 0:
            tail = " | ".join(p.stderr.strip().splitlines()[-3:])[-400:]
            self.log.append((cmd, p.returncode, tail))
            err = f"exit {p.returncode}: {tail}" if tail else f"exit {p.returncode}"
        if self.args.verbose:
            print(f"  [{time.monotonic() - start:6.1f} s] {runner}: {shlex.join(cmd)}"
                  f"{'  -> ' + err if err else ''}", file=sys.stderr)
        return recs, err

    def common(self, modes, threads, lengths_arg, seed):
        return ["--lengths", lengths_arg, "--seed", str(seed), "--mode", ",".join(modes),
                "--threads", str(threads), "--repeat", str(self.args.repeat),
                "--warmup", str(self.args.warmup), "--json"]

    def rnnx_cmd(self, case, modes, threads, lengths_arg, seed, T=None, B=None):
        return ([self.rnnx, "bench", "--backend", self.args.rnnx_backend] + case.flags(T, B)
                + self.common(modes, threads, lengths_arg, seed))

    def onednn_cmd(self, case, modes, threads, lengths_arg, seed):
        if not self.onednn:
            return None
        return [self.onednn] + case.flags() + self.common(modes, threads, lengths_arg, seed)

    def torch_cmd(self, peer, case, modes, threads, lengths_arg, seed):
        """The command of a PyTorch peer (torch-padded, torch2-packed, ...)."""
        tag, variant = peer.split("-")
        python = self.args.torch_python[0 if tag == "torch" else int(tag[len("torch"):]) - 1]
        cmd = [python, self.torch_peer, "--variant", variant, "--rnnx", self.rnnx]
        cmd += case.flags() + self.common(modes, threads, lengths_arg, seed)
        if self.args.torch_budget_s > 0:
            cmd += ["--budget-s", str(self.args.torch_budget_s)]
        return cmd

    def gemm_peak(self, threads):
        if not self.onednn:
            return {}, "rnnx_onednn_peer not found"
        cmd = [self.onednn, "--gemm-peak", "--gemm-size", str(self.args.gemm_size), "--threads",
               str(threads), "--repeat", str(max(3, min(self.args.repeat, 10))), "--warmup", "1",
               "--json"]
        recs, err = self.run("onednn", cmd, threads)
        return {r["kind"]: r for r in recs}, err

    def machine_peak(self, threads):
        """The roofline's ceilings: float32 FMA and AMX bf16 on registers (bench/peak)."""
        if not self.machine_peak_tool:
            return {}, "rnnx_machine_peak not found"
        cmd = [self.machine_peak_tool, "--threads", str(threads), "--repeat", "5", "--json"]
        recs, err = self.run("rnnx", cmd, threads)
        return {r["kind"]: r for r in recs if "gflops" in r}, err


def wait_policy(setting, runner):
    """OMP_WAIT_POLICY for a runner. auto: PASSIVE for PyTorch only, whose OpenMP pool and
    OpenBLAS's threads otherwise spin against each other on 2 cores (PERF-NOTES.md); rnnx and
    oneDNN use one OpenMP runtime, where the default (spin, then sleep) is best for the many
    short parallel regions of a time loop."""
    if setting == "auto":
        return "PASSIVE" if runner.startswith("torch") else None
    return None if setting == "unset" else setting.upper()


def find_file(build, candidates):
    if not build:
        return None
    for c in candidates:
        p = os.path.join(build, c)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# ----------------------------------------------------------------------------------------
# Rows
# ----------------------------------------------------------------------------------------

def by_mode(recs, threads):
    out = {}
    for r in recs:
        if r.get("threads") == threads or len({x.get("threads") for x in recs}) == 1:
            out[r.get("mode")] = r
    return out


def combine_rounds(rounds):
    """One record per mode from the rounds of one runner (each a by_mode dict): the median of
    the rounds' medians, every round's kept in ms_rounds, and the fastest and slowest run of
    all rounds. A round that failed is left out."""
    out = {}
    for mode in dict.fromkeys(m for r in rounds for m in r):
        recs = [r[mode] for r in rounds if mode in r]
        ok = [r for r in recs if ms_of(r)]
        if not ok:
            out[mode] = recs[0]
            continue
        times = [ms_of(r) for r in ok]
        out[mode] = dict(ok[0], ms_median=statistics.median(times), ms_rounds=times)
        for key, pick in (("ms_min", min), ("ms_max", max)):  # the range over every run
            if all(key in r for r in ok):
                out[mode][key] = pick(r[key] for r in ok)
    return out


def rotated(jobs, k):
    """The jobs of round k, starting one further on each round: no runner always goes first
    (right after another runner's process) or always last."""
    k %= max(1, len(jobs))
    return jobs[k:] + jobs[:k]


def ms_of(rec):
    if rec and "error" not in rec and rec.get("ms_median"):
        return rec["ms_median"]
    return None


def ratio(num, den):
    return num / den if num and den else None


def make_row(case, dist, mode, threads, res, ragged_ref, peak, ceilings, section="avx512"):
    tokens = case.tokens
    row = {"problem": case.name, "lengths": dist, "mode": mode, "threads": threads,
           "real_tokens": tokens, "padded_tokens": case.T * case.B}
    rx = res["rnnx"].get(mode)
    rx_ms = ms_of(rx)
    flops = case.flops(mode)
    row["rnnx_impl"] = rx.get("impl") if rx else None
    row["rnnx_ms"] = rx_ms
    row["rnnx_ms_min"] = rx.get("ms_min") if rx_ms else None
    row["rnnx_ms_max"] = rx.get("ms_max") if rx_ms else None
    row["rnnx_gflops"] = flops / (rx_ms * 1e-3) / 1e9 if rx_ms else None
    row["pct_peak"] = 100.0 * row["rnnx_gflops"] / peak if row["rnnx_gflops"] and peak else None
    # The roofline: % of what the arithmetic units can do (bench/peak), float32 FMA and AMX bf16.
    for key, kind in (("pct_fma", "fma-f32"), ("pct_amx", "amx-bf16")):
        top = (ceilings.get(kind) or {}).get("gflops")
        row[key] = 100.0 * row["rnnx_gflops"] / top if row["rnnx_gflops"] and top else None
    if rx_ms and tokens:
        row["bytes_per_token"] = ((rx.get("workspace_bytes") or 0) + (rx.get("reserve_bytes") or 0)) / tokens
    else:
        row["bytes_per_token"] = None
    row["rnnx_error"] = (rx or {}).get("error") or (res["errors"].get("rnnx") if not rx_ms else None)
    for peer in PEERS:
        pr = res[peer].get(mode)
        pms = ms_of(pr)
        row[f"{peer}_ms"] = pms
        row[f"{peer}_impl"] = pr.get("impl") if pr else None
        row[f"x_{peer}"] = ratio(pms, rx_ms)
        if not pms:
            row[f"{peer}_error"] = (pr or {}).get("error") or res["errors"].get(peer)
    # Ragged: rnnx on a full batch of B' sequences of length T' = max(lens) (same number of
    # time steps), B' = round(tokens / T'), scaled linearly to the same number of tokens.
    row["ragged"] = None
    if ragged_ref:
        ref_ms = ms_of(ragged_ref["recs"].get(mode))
        if ref_ms and rx_ms:
            scaled = ref_ms * tokens / (ragged_ref["B"] * ragged_ref["T"])
            row["ragged_ref_ms"] = scaled
            row["ragged"] = rx_ms / scaled
        row["ragged_ref_shape"] = f"T'={ragged_ref['T']} B'={ragged_ref['B']}"
    # The fastest peer, and only when every peer ran: a missing peer could be faster.
    peers = [row[f"{p}_ms"] for p in PEERS if row[f"{p}_ms"]]
    row["x_best_peer"] = (min(peers) / rx_ms if not case.full() and len(peers) == len(PEERS)
                          and rx_ms else None)
    row["targets"] = targets(row, dist, case.full(), case.B, section)
    return row


def targets(row, dist, full, batch, section="avx512"):
    """[(label, ok or None when not measurable, % of the FMA peak that meeting it takes or
    None)] for the issue's targets that apply (those of the ISA section). The last says
    whether a miss is within the roofline: the peer's speed on the same FLOPs times the
    target, over the FMA peak."""
    t = []
    goals = TARGETS.get(section)
    if batch < TARGET_MIN_BATCH or goals is None:
        return t
    if full:
        need = goals["full"].get(row["threads"])
        x = row["x_onednn"]
        label = f"dnn>={need:g}@{row['threads']}t" if need else None
    else:
        need = goals["var"].get(dist)
        x = row["x_best_peer"]
        label = f"peers>={need:g}" if need else None
    if label:
        fma = row.get("pct_fma")
        takes = fma * need / x if x and fma else None
        t.append((label, None if x is None else x >= need, takes))
    return t


def target_cell(target):
    label, ok, takes = target
    if ok is None:
        return f"{label}:n/a"
    if ok:
        return f"{label}:ok"
    return f"{label}:MISS" + ("" if takes is None else f" (takes {takes:.0f}% fma)")


# ----------------------------------------------------------------------------------------
# Table
# ----------------------------------------------------------------------------------------

def fmt(v, spec, na="n/a"):
    return na if v is None else format(v, spec)


COLUMNS = [
    ("problem", "problem", lambda r: r["problem"]),
    ("lengths", "lengths", lambda r: r["lengths"]),
    ("mode", "mode", lambda r: r["mode"]),
    ("thr", "threads", lambda r: str(r["threads"])),
    ("tokens", "real tokens", lambda r: str(r["real_tokens"])),
    ("rnnx ms", "rnnx ms median (min-max)",
     lambda r: "n/a" if r["rnnx_ms"] is None else
     f"{r['rnnx_ms']:.2f} ({r['rnnx_ms_min']:.2f}-{r['rnnx_ms_max']:.2f})"),
    ("GF/s", "rnnx GFLOP/s (real tokens)", lambda r: fmt(r["rnnx_gflops"], ".1f")),
    ("%peak", "% of f32 GEMM peak", lambda r: fmt(r["pct_peak"], ".0f")),
    ("%fma", "% of f32 FMA peak", lambda r: fmt(r.get("pct_fma"), ".0f")),
    ("%amx", "% of AMX bf16 peak", lambda r: fmt(r.get("pct_amx"), ".1f")),
    ("B/tok", "workspace+reserve bytes / real token", lambda r: fmt(r["bytes_per_token"], ".0f")),
    ("x1dnn", "oneDNN ms / rnnx ms", lambda r: fmt(r["x_onednn"], ".2f")),
    ("xpt-pad", "torch padded ms / rnnx ms", lambda r: fmt(r["x_torch-padded"], ".2f")),
    ("xpt-pack", "torch packed ms / rnnx ms", lambda r: fmt(r["x_torch-packed"], ".2f")),
    ("ragged", "rnnx ms / equivalent full batch ms", lambda r: fmt(r["ragged"], ".2f", "-")),
    ("xbest", "fastest peer ms / rnnx ms", lambda r: fmt(r.get("x_best_peer"), ".2f", "-")),
    ("targets", "targets (a miss: the % of the f32 FMA peak meeting it takes)",
     lambda r: " ".join(target_cell(t) for t in r["targets"])),
]


def columns():
    """COLUMNS with a pair of ratio columns for every further --torch-python."""
    extra = []
    for peer in PEERS[3:]:
        tag, variant = peer.split("-")
        short = "pad" if variant == "padded" else "pack"
        extra.append((f"x{tag[len('torch'):]}pt-{short}", f"{tag} {variant} ms / rnnx ms",
                      lambda r, p=peer: fmt(r.get(f"x_{p}"), ".2f")))
    at = [c[0] for c in COLUMNS].index("ragged")
    return COLUMNS[:at] + extra + COLUMNS[at:]


def console_table(rows):
    cols = columns()
    cells = [[c[0] for c in cols]] + [[c[2](r) for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = []
    for k, row in enumerate(cells):
        lines.append("  ".join(v.ljust(w) if i < 4 or i == len(cols) - 1 else v.rjust(w)
                               for i, (v, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows):
    cols = columns()
    head = "| " + " | ".join(c[1] for c in cols) + " |"
    sep = "|" + "|".join("---" if i < 4 or i == len(cols) - 1 else "--:"
                         for i in range(len(cols))) + "|"
    body = ["| " + " | ".join(c[2](r) for c in cols) + " |" for r in rows]
    return "\n".join([head, sep] + body)


def target_summary(rows):
    met, missed, na, beyond = {}, {}, {}, {}
    for r in rows:
        for label, ok, takes in r["targets"]:
            d = na if ok is None else met if ok else missed
            d[label] = d.get(label, 0) + 1
            if ok is False and takes is not None and round(takes) >= 100:
                beyond[label] = beyond.get(label, 0) + 1
    labels = sorted(set(met) | set(missed) | set(na))
    return [f"{lab}: {met.get(lab, 0)} met, {missed.get(lab, 0)} missed "
            f"({beyond.get(lab, 0)} of them would take 100% of the f32 FMA peak or more), "
            f"{na.get(lab, 0)} not measured" for lab in labels]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16") if x in have]
    except OSError:
        pass
    return []


class BusyProbe:
    """Samples whether other processes compete for the CPUs: the runnable count of
    /proc/loadavg, taken between runs (when none of ours runs), minus this process."""

    def __init__(self):
        self.samples = 0
        self.busy = 0
        self.worst = 0

    def sample(self):
        try:
            with open("/proc/loadavg") as f:
                running = int(f.read().split()[3].split("/")[0]) - 1
        except (OSError, ValueError, IndexError):
            return
        self.samples += 1
        self.busy += running > 0
        self.worst = max(self.worst, running)

    def note(self):
        if self.busy:
            return (f"other processes were running at {self.busy} of {self.samples} samples taken "
                    f"between runs (up to {self.worst} at once): the machine was not idle, "
                    f"times are noisy, 2-thread times most of all")
        return None


def tool_output(cmd, env=None):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                              env=env).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


SECTION_TITLES = {"avx512": "AVX-512", "avx2": "AVX2 + FMA", "avx2-capped": "AVX2 + FMA",
                  "scalar": "baseline x86-64"}
RESULTS_TITLE = "# rnnx benchmark results"


def section_markers(section):
    return f"<!-- run_all.py section {section} -->", f"<!-- end of run_all.py section {section} -->"


def read_sections(path):
    """The sections of an existing RESULTS.md, by ISA. A file from before sections (one run,
    on AVX-512 when its flags say so) becomes the avx512 section."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    found = {}
    named = re.findall(r"<!-- run_all\.py section (\S+) -->", text)
    for section in list(SECTION_TITLES) + [s for s in named if s not in SECTION_TITLES]:
        start, end = section_markers(section)
        i, j = text.find(start), text.find(end)
        if i >= 0 and j > i:
            found[section] = text[i + len(start):j].strip("\n")
    if not found and text.startswith(RESULTS_TITLE):
        flags = re.search(r"^\* CPU: .*flags (.*)$", text, re.M)
        if flags and "avx512f" in flags.group(1).split():
            body = text[len(RESULTS_TITLE):].strip("\n")
            found["avx512"] = "\n".join(
                [f"## {SECTION_TITLES['avx512']} (native)", ""] +
                ["#" + line if line.startswith("## ") else line for line in body.splitlines()])
    return found


def write_sections(path, sections):
    """RESULTS.md: the title, then each ISA's section (avx512, avx2, scalar where measured).
    A level this machine cannot run and no earlier run measured says so."""
    order = [s for s in SECTION_TITLES if s in sections or s in ("avx512", "avx2")]
    order += sorted(s for s in sections if s not in SECTION_TITLES)  # never drop a table
    lines = [RESULTS_TITLE, "",
             "One section per ISA level, each written by `bench/run_all.py` on a machine with that "
             "level, or capped to it on a machine with more (`--isa avx2` on an AVX-512 machine: a "
             "section of its own, after the native one). A run rewrites its own section and "
             "keeps the others.", ""]
    for s in order:
        start, end = section_markers(s)
        title = SECTION_TITLES.get(s, s)
        body = sections.get(s) or (f"## {title}\n\nNot available here: no run "
                                   f"on a machine with {title} yet.")
        lines += [start, body, end, ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_unavailable(path, section, why):
    sections = read_sections(path)
    if section not in sections:
        sections[section] = f"## {SECTION_TITLES[section]}\n\nNot available here: {why}."
    write_sections(path, sections)


def write_results(path, args, rows, peaks, ceilings, runners, started, elapsed, notes,
                  section="avx512", how="native", section_key=None):
    """Writes the run as RESULTS.md's section `section_key` (default: the level's own,
    `section`)."""
    now = datetime.datetime.now().astimezone()
    goals = TARGETS.get(section, {})
    versions = "; ".join(
        f"{tag}: {tool_output([py, '-c', 'import torch; print(torch.__version__)']) or 'n/a'} "
        f"(`{py}`)" for tag, py in zip(["torch"] + [f"torch{j}" for j in range(2, 9)],
                                       args.torch_python))
    lines = [
        f"## {SECTION_TITLES.get(section, section)} ({how})",
        "",
        f"* Date: {now:%Y-%m-%d %H:%M %Z} (took {elapsed / 60:.1f} min)",
        f"* CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, flags {' '.join(cpu_flags())}",
        f"* Threads: {','.join(map(str, args.threads))}",
        f"* Command: `{shlex.join([sys.executable] + sys.argv)}`",
        f"* Commit: {tool_output(['git', '-C', HERE, 'rev-parse', '--short', 'HEAD']) or 'unknown'}"
        f"{' (working tree has changes)' if tool_output(['git', '-C', HERE, 'status', '--porcelain']) else ''}",
        f"* rnnx: `{runners.rnnx}` --backend {args.rnnx_backend}; oneDNN peer: `{runners.onednn}`; "
        f"PyTorch: {versions}",
        f"* Repeat {args.repeat}, warm-up {args.warmup}"
        f"{f'; {args.rounds} rounds, runners in turn, each time the median round' if args.rounds > 1 else ''}"
        f"{f', PyTorch capped at about {args.torch_budget_s:g} s per measurement (at least 3 runs)' if args.torch_budget_s > 0 else ''}; "
        f"seed {args.seed}",
        f"* OMP_WAIT_POLICY: {args.wait_policy} (rnnx: {wait_policy(args.wait_policy, 'rnnx') or 'unset'}, "
        f"oneDNN: {wait_policy(args.wait_policy, 'onednn') or 'unset'}, "
        f"PyTorch: {wait_policy(args.wait_policy, 'torch') or 'unset'}); "
        f"OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = thread count; "
        f"OPENBLAS_CORETYPE={ISA_CAPS.get(args.isa, {}).get('OPENBLAS_CORETYPE') or os.environ.get('OPENBLAS_CORETYPE', 'unset')}; "
        f"PyTorch malloc: {args.torch_malloc}",
        "",
    ]
    # Under the run's ISA cap, so that it says which level rnnx used.
    info = tool_output([runners.rnnx, "info"], dict(os.environ, **ISA_CAPS.get(args.isa, {}))) \
        if runners.rnnx else ""
    if info:
        lines += ["```", info, "```", ""]
    lines += ["### GEMM peak (oneDNN, m = n = k = %d, GFLOP/s)" % args.gemm_size, "",
              "| threads | sgemm | matmul f32 | matmul bf16 (f32 acc.) |", "|--:|--:|--:|--:|"]
    for t in args.threads:
        p = peaks.get(t, {})
        lines.append(f"| {t} | " + " | ".join(
            fmt((p.get(k) or {}).get("gflops"), ".1f") for k in ("sgemm", "matmul-f32", "matmul-bf16")) + " |")
    lines += ["", "### Machine peak (bench/peak: register-only loops, GFLOP/s)", "",
              "| threads | f32 FMA | AMX bf16 |", "|--:|--:|--:|"]
    for t in args.threads:
        c = ceilings.get(t, {})
        lines.append(f"| {t} | " + " | ".join(
            fmt((c.get(k) or {}).get("gflops"), ".1f") for k in ("fma-f32", "amx-bf16")) + " |")
    lines += ["", "%peak below is against the f32 peak: the larger of sgemm and matmul f32; "
              "%fma and %amx against the machine peaks (the roofline's ceilings: what the "
              "arithmetic units can do with no memory traffic).", "",
              "### Results", "", markdown_table(rows), "",
              "Ratios are peer ms / rnnx ms (> 1: rnnx is faster). GFLOP/s count real tokens only "
              "for every runner (bench/README.md). ragged = rnnx's time over its time on a full "
              "batch of B' = round(tokens / T') sequences of length T' = the longest length "
              "(same number of steps), scaled to the same number of tokens.", "",
              f"### Targets (issue {goals.get('issue', 'none for this level')})", ""]
    lines += [f"* {s}" for s in target_summary(rows)] + [""]
    if notes:
        lines += ["### Notes", ""] + [f"* {n}" for n in notes] + [""]
    errs = {}
    for r in rows:
        for k in ["rnnx"] + list(PEERS):
            e = r.get(f"{k}_error")
            if e:
                errs.setdefault(f"{k}: {e}", []).append(f"{r['problem']} {r['lengths']} {r['mode']} t{r['threads']}")
    if errs:
        lines += ["### Runs that gave no time", ""]
        for e, where in errs.items():
            lines.append(f"* {e} — {len(where)} row(s), e.g. {where[0]}")
        lines.append("")
    sections = read_sections(path)
    sections[section_key or section] = "\n".join(lines).strip("\n")
    write_sections(path, sections)


# ----------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", help="build folder holding tools/rnnx/rnnx and bench/rnnx_onednn_peer")
    p.add_argument("--rnnx", help="path of the rnnx command (default: found in --build)")
    p.add_argument("--onednn-peer", help="path of rnnx_onednn_peer (default: found in --build)")
    p.add_argument("--machine-peak", help="path of rnnx_machine_peak (default: found in --build)")
    p.add_argument("--rnnx-backend", default="cpu", help="backend of `rnnx bench` (default cpu)")
    p.add_argument("--torch-python", action="append",
                   help="a Python with torch (default /usr/bin/python3); again for a second "
                        "PyTorch beside it (columns torch2-*), e.g. a virtual environment's")
    p.add_argument("--isa", default="native", choices=["native"] + sorted(ISA_CAPS),
                   help="cap every runner at this ISA level (rnnx, bench/peak, oneDNN, "
                        "PyTorch); the run fills RESULTS.md's section of that level")
    p.add_argument("--problems", help="case list (default bench/problems.txt, "
                                      "bench/problems-quick.txt with --quick)")
    p.add_argument("--filter", help="regular expression: keep cases whose line or name matches")
    p.add_argument("--lengths", default=",".join(DISTRIBUTIONS),
                   help="comma-separated: full, uniform, longtail")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated: infer, train, fwdbwd")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per measurement (default 10)")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs first (default 2)")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every runner of a row this many times, in turn (each round's "
                        "--repeat runs in one process), and keep each runner's median round: "
                        "a change of the machine's speed then hits every runner alike")
    p.add_argument("--torch-budget-s", type=float, default=20.0,
                   help="cap PyTorch's timed runs at about this many seconds per measurement "
                        "(at least 3 runs; 0 = always --repeat): packed training is very slow")
    p.add_argument("--torch-malloc", choices=["default", "keep"], default="default",
                   help="keep: glibc never returns freed memory to the kernel in the PyTorch "
                        "runs, so they do not pay first touch on every call")
    p.add_argument("--wait-policy", default="auto", choices=["auto", "passive", "active", "unset"],
                   help="OMP_WAIT_POLICY of the runners (auto: PASSIVE for PyTorch only)")
    p.add_argument("--gemm-size", type=int, default=None, help="m = n = k of the GEMM peak (2048)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per runner process")
    p.add_argument("--skip", default="", help="comma-separated runners to skip: onednn, "
                                              "torch-padded, torch-packed, ragged")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: small problems, 1 thread, few runs (about a minute)")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--verbose", "-v", action="store_true", help="print every command run")
    a = p.parse_args(argv)
    if a.quick:
        a.problems = a.problems or os.path.join(HERE, "problems-quick.txt")
        a.threads = "1" if a.threads == "1,2" else a.threads
        a.lengths = "full,longtail" if a.lengths == ",".join(DISTRIBUTIONS) else a.lengths
        a.repeat = a.repeat or 2
        a.warmup = 1 if a.warmup is None else a.warmup
        a.gemm_size = a.gemm_size or 512
        a.torch_budget_s = min(a.torch_budget_s, 2.0)
    a.torch_python = a.torch_python or ["/usr/bin/python3"]
    a.problems = a.problems or os.path.join(HERE, "problems.txt")
    a.repeat = a.repeat or 10
    a.warmup = 2 if a.warmup is None else a.warmup
    a.gemm_size = a.gemm_size or 2048
    a.threads = [int(t) for t in a.threads.split(",") if t]
    a.modes = [m for m in a.modes.split(",") if m]
    a.lengths = [d for d in a.lengths.split(",") if d]
    a.skip = set(s for s in a.skip.split(",") if s)
    if a.rounds < 1:
        p.error(f"--rounds: {a.rounds} (must be at least 1)")
    for m in a.modes:
        if m not in MODES:
            p.error(f"--modes: '{m}' is not one of {', '.join(MODES)}")
    for d in a.lengths:
        if d not in DISTRIBUTIONS:
            p.error(f"--lengths: '{d}' is not one of {', '.join(DISTRIBUTIONS)}")
    if not a.build and not a.rnnx:
        p.error("give --build DIR (or --rnnx and --onednn-peer)")
    return a


def main(argv=None):
    args = parse_args(argv)
    PEERS[:] = ["onednn"] + torch_peers(args.torch_python)
    section, how, section_key = section_of(args)
    levels = ("scalar", "avx2", "avx512")
    if levels.index(section) > levels.index(machine_isa()):
        # Not a failure: the level's section says so (and keeps an earlier run's table).
        why = f"this CPU ({cpu_model()}) has no {SECTION_TITLES[section]}"
        print(f"run_all.py: --isa {args.isa}: {why}; nothing measured", file=sys.stderr)
        if not args.no_write:
            write_unavailable(args.out, section, why)
        return 0
    started = time.monotonic()
    runners = Runners(args)
    notes = []
    if not runners.rnnx:
        raise SystemExit(f"run_all.py: no rnnx command in {args.build} (build rnnx_cli, or give "
                         f"--rnnx): it times rnnx, and it says what each case is")
    if not runners.onednn:
        notes.append("rnnx_onednn_peer not found: oneDNN columns and the GEMM peak are n/a")
    cases = read_cases(runners.rnnx, args.problems, sorted(set(args.lengths) | {"full"}),
                       args.seed, args.modes)
    keep = range(len(cases["full"]))
    if args.filter:
        rx = re.compile(args.filter)
        keep = [i for i in keep if rx.search(cases["full"][i].line) or rx.search(cases["full"][i].name)]
    if not keep:
        raise SystemExit(f"no case in {args.problems} matches --filter {args.filter!r}")

    peaks = {}
    ceilings = {}
    for t in args.threads:
        peaks[t], err = runners.gemm_peak(t)
        if err:
            notes.append(f"GEMM peak at {t} thread(s): {err}")
        got = ", ".join(f"{k} {v.get('gflops', 0):.0f}" for k, v in peaks[t].items() if "gflops" in v)
        print(f"GEMM peak, {t} thread(s): {got or 'n/a'} GFLOP/s", file=sys.stderr)
        ceilings[t], err = runners.machine_peak(t)
        if err:
            notes.append(f"machine peak at {t} thread(s): {err}")
        got = ", ".join(f"{k} {v['gflops']:.0f}" for k, v in ceilings[t].items())
        print(f"machine peak, {t} thread(s): {got or 'n/a'} GFLOP/s", file=sys.stderr)

    busy = BusyProbe()
    rows = []
    raw = []
    work = [(i, d, t) for i in keep for d in args.lengths for t in args.threads]
    for k, (i, dist, threads) in enumerate(work, 1):
        case = cases[dist][i]
        if dist != "full" and case.full() and "full" in args.lengths:
            notes.append(f"{case.line}: {dist} lengths are all T (B = {case.B}); same as full, skipped")
            continue
        # Every runner draws the same lengths from the distribution and seed: rnnx and the
        # oneDNN peer with the one generator they link (bench/case), PyTorch by asking rnnx.
        res = {"errors": {}}
        t0 = time.monotonic()
        jobs = [("rnnx", runners.rnnx_cmd(case, args.modes, threads, dist, args.seed), dist)]
        for peer in PEERS:
            if peer in args.skip:
                res[peer] = {}
                res["errors"][peer] = "skipped (--skip)"
            elif peer == "onednn":
                jobs.append((peer, runners.onednn_cmd(case, args.modes, threads, dist, args.seed),
                             dist))
            else:
                jobs.append((peer, runners.torch_cmd(peer, case, args.modes, threads, dist,
                                                     args.seed), dist))
        ragged_ref = None
        if dist != "full" and case.tokens > 0 and "ragged" not in args.skip:
            Tr = max(case.lengths)
            Br = max(1, round(case.tokens / Tr))
            ragged_ref = {"T": Tr, "B": Br}
            jobs.append(("rnnx-ragged-ref", runners.rnnx_cmd(case, args.modes, threads, "full",
                                                             args.seed, T=Tr, B=Br), "full"))
        # Rounds: every runner once per round, in turn, so that a change of the machine's speed
        # (a VM's phases, a neighbour) falls on all of them alike; each keeps its rounds' median.
        rounds = {key: [] for key, _, _ in jobs}
        for rnd in range(args.rounds):
            for key, cmd, lengths_dist in rotated(jobs, rnd):
                busy.sample()
                recs, err = runners.run(key, cmd, threads)
                for r in recs:
                    raw.append(dict(r, runner=key, lengths_dist=lengths_dist, line=case.line,
                                    round=rnd))
                rounds[key].append(by_mode(recs, threads))
                if err:
                    res["errors"][key] = err
        for key, got in rounds.items():
            res[key] = combine_rounds(got)
        if ragged_ref is not None:
            ragged_ref["recs"] = res.pop("rnnx-ragged-ref")
            res["errors"].pop("rnnx-ragged-ref", None)
        for mode in args.modes:
            row = make_row(case, dist, mode, threads, res, ragged_ref,
                           best_f32_peak(peaks.get(threads, {})), ceilings.get(threads, {}),
                           section)
            rows.append(row)
            for key in ["rnnx"] + list(PEERS):
                rec = res.get(key, {}).get(mode) or {}
                got = rec.get("real_tokens", rec.get("tokens") if key == "rnnx" else None)
                if got is not None and got != case.tokens:
                    notes.append(f"{row['problem']} {dist}: {key} reports {got} real tokens, "
                                 f"rnnx bench --dry-run {case.tokens}")
        print(f"[{k}/{len(work)}] {case.name} {dist} threads={threads}: "
              f"{time.monotonic() - t0:.1f} s; rnnx "
              + ", ".join(f"{m} {fmt(ms_of(res['rnnx'].get(m)), '.2f')} ms" for m in args.modes),
              file=sys.stderr)

    elapsed = time.monotonic() - started
    if busy.note():
        notes.append(busy.note())
    print(console_table(rows))
    print()
    for t in args.threads:
        p = peaks.get(t, {})
        print(f"GEMM peak, {t} thread(s), GFLOP/s: " + ", ".join(
            f"{k} {fmt((p.get(k) or {}).get('gflops'), '.1f')}" for k in ("sgemm", "matmul-f32", "matmul-bf16")))
    for s in target_summary(rows):
        print(f"target {s}")
    for n in notes:
        print(f"note: {n}")
    if not args.no_write:
        write_results(args.out, args, rows, peaks, ceilings, runners, started, elapsed, notes,
                      section, how, section_key)
        stem = os.path.splitext(args.out)[0] + ("" if section_key == "avx512" else f"-{section_key}")
        with open(stem + ".jsonl", "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")
            for t, p in peaks.items():
                for r in p.values():
                    f.write(json.dumps(dict(r, runner="gemm-peak")) + "\n")
            for r in rows:
                f.write(json.dumps(dict(r, runner="row")) + "\n")
        print(f"wrote {args.out} and {stem}.jsonl", file=sys.stderr)
    # The smoke test fails when rnnx itself gave no time; peers may be missing (n/a).
    return 1 if any(r["rnnx_ms"] is None for r in rows) else 0


def best_f32_peak(p):
    vals = [(p.get(k) or {}).get("gflops") for k in ("sgemm", "matmul-f32")]
    vals = [v for v in vals if v]
    return max(vals) if vals else None


if __name__ == "__main__":
    sys.exit(main())
