#!/usr/bin/python3
# Ctrl-C during `rnnx bench` (docs/bench.md, "Interrupting"): SIGINT in the middle of the
# measurements and in the middle of the algorithm search ends the command promptly, killed by
# SIGINT (a shell's status 130) after saying how many measurements finished; every stdout
# line printed is whole, and the search's cache file holds only whole `key<TAB>choice` lines.
# Timings are not judged.
"""Standard library only. Usage: /usr/bin/python3 tests/python/cli_interrupt.py --rnnx PATH"""

import argparse
import ctypes
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# Killed by SIGINT, as Popen reports it; a shell reports 128 + 2 = 130 (docs/cli.md).
EXIT_INTERRUPTED = -signal.SIGINT
PROMPT_S = 10.0         # generous: other jobs may share the machine; a hang is what we catch
TEXT_LINE = re.compile(r"^\S+ float32 \S+ \S+ (infer|train|fwdbwd) +threads=\d+ tokens=\d+ .* "
                       r"reserve \d+\.\d\d MiB$")
DONE = re.compile(r"rnnx: interrupted after (\d+) finished measurement\(s\)")


class Bench:
    """An `rnnx bench` process whose stdout is collected line by line as it comes."""

    def __init__(self, rnnx, argv, env, ignore_sigint=False):
        def preexec():
            if ignore_sigint:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.p = subprocess.Popen([rnnx, "bench"] + argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env={**os.environ, **env},
                                  preexec_fn=preexec)
        self.out = b""
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def _read(self):
        for chunk in iter(lambda: self.p.stdout.read1(65536), b""):
            self.out += chunk

    def wait_lines(self, n, timeout):
        deadline = time.monotonic() + timeout
        while self.out.count(b"\n") < n and self.p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.out.count(b"\n") >= n

    def interrupt(self):
        """SIGINT, then (status or None if it hung, seconds it took, stdout, stderr)."""
        t0 = time.monotonic()
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=PROMPT_S)
        except subprocess.TimeoutExpired:
            rc = None
            self.p.kill()
            self.p.wait()
        took = time.monotonic() - t0
        self.reader.join()
        err = self.p.stderr.read().decode(errors="replace")
        self.p.stderr.close()
        self.p.stdout.close()
        return rc, took, self.out.decode(errors="replace"), err


def check_lines(out, json_lines):
    """Problems with the printed measurements: each line whole (ends in a newline, parses)."""
    problems = []
    if out and not out.endswith("\n"):
        problems.append(f"stdout ends in a torn line: {out.splitlines()[-1]!r}")
    for line in out.splitlines():
        if json_lines:
            try:
                rec = json.loads(line)
                if "ms_median" not in rec or "reserve_bytes" not in rec:
                    problems.append(f"incomplete record: {line!r}")
            except ValueError:
                problems.append(f"not JSON: {line!r}")
        elif not TEXT_LINE.match(line):
            problems.append(f"not a whole text line: {line!r}")
    return problems


def check_interrupted(rc, took, out, err, json_lines):
    problems = []
    if rc is None:
        problems.append(f"still running {PROMPT_S:.0f} s after SIGINT (killed)")
    elif rc != EXIT_INTERRUPTED:
        problems.append(f"status {rc}, expected {EXIT_INTERRUPTED}; stderr {err!r}")
    problems += check_lines(out, json_lines)
    m = DONE.search(err)
    lines = out.count("\n")
    if rc == EXIT_INTERRUPTED:
        if not m:
            problems.append(f"stderr does not say it was interrupted: {err!r}")
        elif not lines - 1 <= int(m.group(1)) <= lines:
            # The count is bumped right after a line is flushed: it may lag by the one line
            # that the signal separated from its count.
            problems.append(f"stderr says {m.group(1)} measurements finished, stdout has {lines}")
    return problems, f"{lines} line(s), exit {rc} {took:.2f} s after SIGINT"


def check_cache(path):
    problems = []
    if not os.path.exists(path):
        return problems, 0
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        problems.append(f"cache file ends in a torn line: {data.splitlines()[-1]!r}")
    lines = data.splitlines()
    for line in lines:
        key, tab, choice = line.partition(b"\t")
        if not tab or not key or not choice or b"\t" in choice:
            problems.append(f"cache line is not key<TAB>choice: {line!r}")
    return problems, len(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rnnx", required=True)
    args = ap.parse_args()
    passed = failed = 0

    def report(name, problems, detail=""):
        nonlocal passed, failed
        print(("FAIL " if problems else "PASS ") + name + (f" ({detail})" if detail else "")
              + (": " + "; ".join(problems) if problems else ""), flush=True)
        failed += bool(problems)
        passed += not problems

    info = json.loads(subprocess.run([args.rnnx, "info", "--json"], capture_output=True,
                                     text=True, timeout=120).stdout)
    backend = "cpu" if info["backends"].get("cpu", {}).get("available") else "reference"
    tmp = tempfile.mkdtemp(prefix="rnnx_cli_interrupt_")
    cache = os.path.join(tmp, "autotune.tsv")
    # Small steps and endless rounds: lines stream out, and SIGINT lands while 2 threads work.
    small = ["--backend", backend, "--cell", "lstm", "--input", "32", "--hidden", "32",
             "--batch", "8", "--seq", "20", "--mode", "infer,fwdbwd", "--threads", "2,1",
             "--repeat", "5", "--warmup", "1", "--rounds", "1000000"]

    for json_lines in (True, False):
        name = "interrupt_measurements_" + ("json" if json_lines else "text")
        b = Bench(args.rnnx, small + (["--json"] if json_lines else []),
                  {"RNNX_AUTOTUNE_CACHE": cache})
        if not b.wait_lines(3, 120):
            rc, _, out, err = b.interrupt()
            report(name, [f"no 3 lines within 120 s (exit {rc}): {out!r} {err!r}"])
            continue
        time.sleep(0.05)
        rc, took, out, err = b.interrupt()
        problems, detail = check_interrupted(rc, took, out, err, json_lines)
        report(name, problems, detail)

    # The signal taken by a worker thread rather than the main one (the kernel mostly picks
    # the main thread): the handler hands it on, and the outcome is the same.
    SYS_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())
    b = Bench(args.rnnx, small + ["--json"], {"RNNX_AUTOTUNE": "0"})
    workers = []
    if b.wait_lines(3, 120):
        workers = [int(t) for t in os.listdir(f"/proc/{b.p.pid}/task") if int(t) != b.p.pid]
    if SYS_TGKILL and workers:
        libc = ctypes.CDLL(None, use_errno=True)
        t0 = time.monotonic()
        libc.syscall(SYS_TGKILL, b.p.pid, workers[-1], signal.SIGINT)
        try:
            rc = b.p.wait(timeout=PROMPT_S)
        except subprocess.TimeoutExpired:
            rc = None
        rc2, took, out, err = b.interrupt()  # kills it if it hung; collects the output
        problems, detail = check_interrupted(rc if rc is not None else rc2,
                                             time.monotonic() - t0, out, err, True)
        if rc is None:
            problems.insert(0, f"still running {PROMPT_S:.0f} s after SIGINT to a worker")
        report("interrupt_worker_thread", problems, f"{len(workers)} worker(s); {detail}")
    else:
        b.interrupt()
        print("SKIP interrupt_worker_thread: no worker thread or no tgkill here")

    # SIGINT while plans are being built, i.e. while the search measures its candidates and
    # appends its choices to the cache file. Each batch size is a new search key.
    if backend == "cpu":
        for k, delay in enumerate((0.3, 0.6, 1.0, 1.5)):
            b = Bench(args.rnnx, ["--backend", "cpu", "--cell", "lstm", "--input", "128",
                                  "--hidden", "128", "--batch", str(32 + k), "--seq", "50",
                                  "--threads", "1,2", "--repeat", "1000", "--json"],
                      {"RNNX_AUTOTUNE_CACHE": cache})
            time.sleep(delay)
            rc, took, out, err = b.interrupt()
            problems, detail = check_interrupted(rc, took, out, err, True)
            cache_problems, n = check_cache(cache)
            report(f"interrupt_search_{k}", problems + cache_problems,
                   f"{detail}, cache {n} line(s)")
    else:
        print("SKIP interrupt_search: no cpu backend (no algorithm search)")

    # A job started with SIGINT ignored (a background job of a script) keeps ignoring it.
    b = Bench(args.rnnx, ["--backend", backend, "--cell", "gru", "--input", "8", "--hidden", "8",
                          "--batch", "2", "--seq", "3", "--repeat", "2", "--rounds", "30",
                          "--json"], {"RNNX_AUTOTUNE": "0"}, ignore_sigint=True)
    b.wait_lines(1, 60)
    if b.p.poll() is None:
        b.p.send_signal(signal.SIGINT)
    try:
        rc = b.p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        b.p.kill()
        rc = b.p.wait()
    b.reader.join()
    out = b.out.decode(errors="replace")
    problems = [] if rc == 0 else [f"status {rc}, expected 0 (SIGINT ignored)"]
    if out.count("\n") != 30:
        problems.append(f"{out.count(chr(10))} lines, expected 30")
    report("sigint_ignored_stays_ignored", problems + check_lines(out, True))
    b.p.stdout.close()
    b.p.stderr.close()

    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
