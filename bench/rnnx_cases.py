"""Bench cases for the Python runners, as `rnnx bench` defines them.

A case's printable name, its lengths (full, uniform, longtail or a file, seeded), its real
tokens and its FLOP count are computed once, in C++ (bench/case/bench_case.hpp, linked by
`rnnx bench` and rnnx_onednn_peer); run_all.py and torch_peer.py ask
`rnnx bench --dry-run --json` for them (docs/bench.md, "Dry run") instead of deriving them
again, so no runner can disagree with another about what a case is.
"""

import json
import shlex
import subprocess

# The keys of a --dry-run record that are the flags giving the case, in the order of
# `rnnx bench --help`; every runner takes them.
CASE_KEYS = ("cell", "layers", "bidirectional", "input", "hidden", "proj", "batch", "seq")


class CaseError(Exception):
    """`rnnx bench` refused the case or the list; the message is its error line."""


def case_flags(case, seq=None, batch=None):
    """The flags that give `case` (a --dry-run record, or any mapping with CASE_KEYS),
    optionally with another longest length T (`seq`) or batch B."""
    values = dict(case)
    if seq is not None:
        values["seq"] = seq
    if batch is not None:
        values["batch"] = batch
    flags = []
    for key in CASE_KEYS:
        if isinstance(values[key], bool):
            flags += [f"--{key}"] if values[key] else []
        else:
            flags += [f"--{key}", str(values[key])]
    return flags


def describe(rnnx, case_args, lengths="full", seed=0, modes=("infer",), timeout=120):
    """`rnnx bench CASE_ARGS --dry-run --json`: one record per case, in order. CASE_ARGS is
    the case's flags (case_flags) or ["--cases", LIST]. Raises CaseError if rnnx refuses."""
    cmd = ([rnnx, "bench"] + list(case_args) +
           ["--lengths", str(lengths), "--seed", str(seed), "--mode", ",".join(modes),
            "--dry-run", "--json"])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CaseError(f"{shlex.join(cmd)}: {e}") from e
    if p.returncode != 0:
        raise CaseError(p.stderr.strip() or f"{shlex.join(cmd)}: exit {p.returncode}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
