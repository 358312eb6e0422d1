#!/usr/bin/python3
# `rnnx run` on deliberately broken cases: each must be refused with exit status 2 (1 for
# an unwritable output) and one stderr line `rnnx: error: ...` naming the file or key and
# the values; and the variants the format allows (.npy 2.0/3.0, mixed dtypes) must run.
# Also the command line itself: --version, unknown subcommands, each subcommand's errors
# pointing at its own --help, and what `info` and `run` say of the algorithm's origin.
"""Needs only numpy. Usage: /usr/bin/python3 tests/python/cli_errors.py --rnnx PATH"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

T, B, I, H = 5, 3, 3, 4


def base_case(d, cell="lstm"):
    """A valid case: one-layer unidirectional cell, lengths, h0 (and c0), dy."""
    rng = np.random.default_rng(1)
    G = {"lstm": 4, "gru": 3}.get(cell, 1)
    os.makedirs(d)
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"cell": cell, "input_size": I, "hidden_size": H, "dtype": "float64"}, f)
    save = lambda n, a: np.save(os.path.join(d, n + ".npy"), a)
    save("x", rng.uniform(-1, 1, (T, B, I)))
    save("lengths", np.array([5, 2, 0], dtype=np.int64))
    save("h0", rng.uniform(-1, 1, (1, B, H)))
    if cell == "lstm":
        save("c0", rng.uniform(-1, 1, (1, B, H)))
    save("dy", rng.uniform(-1, 1, (T, B, H)))
    save("weight_ih_l0", rng.uniform(-0.5, 0.5, (G * H, I)))
    save("weight_hh_l0", rng.uniform(-0.5, 0.5, (G * H, H)))
    save("bias_ih_l0", rng.uniform(-0.5, 0.5, (G * H,)))
    save("bias_hh_l0", rng.uniform(-0.5, 0.5, (G * H,)))


# --- mutations of the base case -------------------------------------------------------
def edit_json(**changes):
    def f(d):
        p = os.path.join(d, "case.json")
        spec = json.load(open(p))
        for k, v in changes.items():
            if v is DELETE:
                spec.pop(k)
            else:
                spec[k] = v
        json.dump(spec, open(p, "w"))
    return f


DELETE = object()


def write_text(name, text):
    return lambda d: open(os.path.join(d, name), "w").write(text)


def save(name, array):
    return lambda d: np.save(os.path.join(d, name + ".npy"), array)


def remove(name):
    return lambda d: os.remove(os.path.join(d, name))


def raw_npy(name, transform):
    """Rewrites name.npy's bytes through transform(bytes) -> bytes."""
    def f(d):
        p = os.path.join(d, name + ".npy")
        data = open(p, "rb").read()
        open(p, "wb").write(transform(data))
    return f


def npy_version(name, version):
    def f(d):
        p = os.path.join(d, name + ".npy")
        a = np.load(p)
        with open(p, "wb") as out:
            np.lib.format.write_array(out, a, version=version)
    return f


def both(*fs):
    def f(d):
        for g in fs:
            g(d)
    return f


def fortran(name):
    def f(d):
        p = os.path.join(d, name + ".npy")
        a = np.asfortranarray(np.load(p))
        np.save(p, a)
    return f


rng = np.random.default_rng(2)
CHECKS = [
    # (name, mutation, expected status, substrings of the error line)
    ("valid", lambda d: None, 0, []),
    ("unknown_key", edit_json(hiden_size=4), 2, ['unknown key "hiden_size"']),
    ("ignored_key", edit_json(framework="jax", ignore=["framework"]), 0, []),
    ("missing_cell", edit_json(cell=DELETE), 2, ['required key "cell" is missing']),
    ("bad_cell", edit_json(cell="lstmp"), 2, ['key "cell" must be one of', '"lstmp"']),
    ("size_as_string", edit_json(hidden_size="4"), 2, ['key "hidden_size" must be an integer, got "4"']),
    ("size_as_float", edit_json(num_layers=1.5), 2, ['key "num_layers" must be an integer, got 1.5']),
    ("negative_seed", edit_json(seed=-1), 2, ['key "seed" must be a non-negative integer, got -1']),
    ("bad_json", write_text("case.json", '{"cell": "lstm",'), 2, ["case.json: not valid JSON"]),
    ("json_not_object", write_text("case.json", "[1, 2]"), 2, ["must hold a JSON object"]),
    # Found by tests/fuzz/fuzz_case_folder: nlohmann's out_of_range escaped as exit status 1.
    ("json_number_beyond_double", write_text("case.json", '{"cell": "lstm", "input_size": 1e400}'),
     2, ["case.json: not valid JSON", "number overflow parsing '1e400'"]),
    ("missing_case_json", remove("case.json"), 2, ["case.json: cannot open"]),
    ("proj_with_gru", edit_json(cell="gru", proj_size=2), 2, ["case.json: proj_size (= 2)"]),
    ("bad_dtype_key", edit_json(dtype="half"), 2,
     ['key "dtype" must be one of float32, float64, bfloat16, float16']),
    ("bad_clip", edit_json(cell_clip=[1]), 2, ['key "cell_clip" must be null or [lo, hi]']),
    ("clip_lo_above_hi", edit_json(cell_clip=[1, -1]), 2, ["cell_clip lo (= 1", "hi (= -1"]),
    ("dropout_above_one", edit_json(dropout=1.5), 2, ["dropout (= 1.5"]),
    ("bad_clip_nan", edit_json(clip_nan="ignore"), 2, ['key "clip_nan" must be one of propagate, replace']),
    ("bad_math", edit_json(math="bf16"), 2, ['key "math" must be one of from_environment, fp32, allow_conversion, int8']),
    # int8 is inference only: a case with dy (a backward) is refused by name on any CPU.
    ("math_int8_with_backward", edit_json(math="int8", dtype="float32"), 2,
     ["math (= int8) runs inference only"]),
    ("math_allow_conversion", edit_json(math="allow_conversion"), 0, []),
    # Every field of the config is a key (the field table), reverse too, beside ONNX's direction.
    ("reverse_key", edit_json(reverse=True), 0, []),
    ("reverse_not_a_bool", edit_json(reverse="yes"), 2, ['key "reverse" must be true or false']),
    ("reverse_contradicts_direction", edit_json(direction="forward", reverse=True), 2,
     ['key "direction" (= "forward") contradicts "reverse"']),
    ("x_input_dim", save("x", np.zeros((T, B, I + 2))), 2, ["x.npy: dim 2 (= 5) must equal input_size (= 3)"]),
    ("x_2d", save("x", np.zeros((T, I))), 2, ["x.npy: shape (5, 3) must have 3 dimensions"]),
    ("x_int", save("x", np.zeros((T, B, I), dtype=np.int32)), 2, ["x.npy: dtype is int32, expected float32 or float64"]),
    ("x_missing", remove("x.npy"), 2, ["x.npy: missing"]),
    ("x_fortran", fortran("x"), 2, ["x.npy: fortran_order is True"]),
    ("x_truncated", raw_npy("x", lambda b: b[:-9]), 2, ["x.npy: truncated", "needs 360 data bytes but only 351"]),
    ("x_trailing", raw_npy("x", lambda b: b + b"\0" * 8), 2, ["x.npy: 8 bytes of unexpected data"]),
    ("x_header_truncated", raw_npy("x", lambda b: b[:20]), 2, ["x.npy: truncated: the header length says"]),
    ("x_not_npy", raw_npy("x", lambda b: b"PK\x03\x04" + b[4:]), 2, ["x.npy: not a .npy file"]),
    ("x_version_9", raw_npy("x", lambda b: b[:6] + b"\x09\x00" + b[8:]), 2, ["x.npy: unsupported .npy format version 9.0"]),
    ("x_big_endian", save("x", np.zeros((T, B, I), dtype=">f8")), 2, ["x.npy: dtype '>f8' is big-endian"]),
    ("x_float16", save("x", np.zeros((T, B, I), dtype="<f2")), 2, ["x.npy: dtype '<f2' is not supported"]),
    ("x_npy_v2", npy_version("x", (2, 0)), 0, []),
    ("x_npy_v3", npy_version("x", (3, 0)), 0, []),
    ("x_float32_in_f64_case", save("x", np.zeros((T, B, I), dtype=np.float32)), 0, []),
    ("lengths_above_T", save("lengths", np.array([5, 9, 0])), 2, ["lengths.npy: lengths[1] (= 9) must be in [0, T (= 5)]"]),
    ("lengths_negative", save("lengths", np.array([5, -1, 0], dtype=np.int32)), 2, ["lengths[1] (= -1)"]),
    ("lengths_float", save("lengths", np.array([5.0, 2.0, 0.0])), 2, ["lengths.npy: dtype is float64, expected int32 or int64"]),
    ("lengths_count", save("lengths", np.array([5, 2])), 2, ["lengths.npy: shape (2,) does not match [B] = (3,)"]),
    ("h0_shape", save("h0", np.zeros((2, B, H))), 2, ["h0.npy: shape (2, 3, 4) does not match [L*D, B, P'] = (1, 3, 4)"]),
    ("c0_shape", save("c0", np.zeros((1, B, H + 1))), 2, ["c0.npy: shape (1, 3, 5) does not match [L*D, B, H] = (1, 3, 4)"]),
    ("dy_shape", save("dy", np.zeros((T, B, H + 1))), 2, ["dy.npy: shape (5, 3, 5) does not match [T, B, D*P'] = (5, 3, 4)"]),
    ("dhy_without_dy", both(remove("dy.npy"), save("dhy", np.zeros((1, B, H)))), 2, ["dhy.npy: given without dy.npy"]),
    ("weight_missing", remove("weight_hh_l0.npy"), 2, ["weight_hh_l0.npy: missing", "with shape (16, 4)"]),
    ("weight_extra", save("weight_ih_l1", np.zeros((16, 4))), 2, ["weight_ih_l1.npy: not a weight of this case", "num_layers 1"]),
    ("weight_reverse_extra", save("weight_hh_l0_reverse", np.zeros((16, 4))), 2, ["weight_hh_l0_reverse.npy: not a weight of this case"]),
    ("bias_without_bias", edit_json(bias=False), 2, ["bias_hh_l0.npy: not a weight of this case", "bias false"]),
    ("weight_shape", save("weight_ih_l0", np.zeros((16, 4))), 2, ["weight_ih_l0.npy: shape (16, 4) does not match weight_ih_l0 = (16, 3)"]),
    ("bias_2d", save("bias_ih_l0", np.zeros((16, 1))), 2, ["bias_ih_l0.npy: shape (16, 1) does not match bias_ih_l0 = (16,)"]),
    ("unknown_file", save("h_0", np.zeros((1, B, H))), 2, ["h_0.npy: unknown file", 'list "h_0.npy" in "ignore"']),
    ("unknown_file_ignored", both(save("h_0", np.zeros((1, B, H))), edit_json(ignore=["h_0.npy"])), 0, []),
    ("earlier_outputs_pass", both(save("y", np.zeros(1)), save("grad_weight_ih_l0", np.zeros(1))), 0, []),
]

# Cases on a GRU base: the cell state is refused.
GRU_CHECKS = [
    ("gru_valid", lambda d: None, 0, []),
    ("gru_c0", save("c0", np.zeros((1, B, H))), 2, ["c0.npy: given but cell is gru; only lstm has a cell state"]),
    ("gru_dcy", save("dcy", np.zeros((1, B, H))), 2, ["dcy.npy: given but cell is gru"]),
]


def run(rnnx, args, env=None):
    return subprocess.run([rnnx] + args, capture_output=True, text=True, timeout=120,
                          env=None if env is None else {**os.environ, **env})


def check_status(name, proc, status, needles):
    problems = []
    if proc.returncode != status:
        problems.append(f"exit status {proc.returncode}, expected {status}")
    err = proc.stderr
    if status != 0:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("rnnx: error: "):
            problems.append(f"stderr is not one `rnnx: error: ` line: {err!r}")
        for n in needles:
            if n not in err:
                problems.append(f"stderr lacks {n!r}: {err.strip()!r}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rnnx", required=True)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="rnnx_cli_errors_")
    passed = failed = 0

    def report(name, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            print(f"FAIL {name}: " + "; ".join(problems))
        else:
            passed += 1
            print(f"PASS {name}")

    reference_y = None
    for cell, checks in (("lstm", CHECKS), ("gru", GRU_CHECKS)):
        for name, mutate, status, needles in checks:
            d = os.path.join(root, name)
            base_case(d, cell)
            mutate(d)
            out = os.path.join(root, name + ".out")
            proc = run(args.rnnx, ["run", d, "--out", out, "--backend", "reference"])
            problems = check_status(name, proc, status, needles)
            if status == 0 and proc.returncode == 0:
                y = np.load(os.path.join(out, "y.npy"))
                if y.dtype != np.float64:
                    problems.append(f"y.npy is {y.dtype}, expected the case dtype float64")
                if name == "valid":
                    reference_y = y
                elif name.startswith("x_npy_v") and not np.array_equal(y, reference_y):
                    problems.append("y differs from the version 1.0 run")
                if cell == "lstm" and not os.path.exists(os.path.join(out, "grad_bias_hh_l0.npy")):
                    problems.append("no grad_bias_hh_l0.npy although dy.npy is present")
            elif status != 0 and os.path.exists(out):
                problems.append("an output directory was created for a refused case")
            report(name, problems)

    # Command-line misuse and output problems.
    good = os.path.join(root, "valid")
    blocker = os.path.join(root, "a_file")
    open(blocker, "w").write("not a directory")
    for name, argv, status, needles in [
        ("no_out", ["run", good], 2, ["--out is required", "(see rnnx run --help)"]),
        ("bad_backend", ["run", good, "--out", root + "/o1", "--backend", "gpu"], 2,
         ["--backend", "(see rnnx run --help)"]),
        ("cuda_backend_on_host_buffers", ["run", good, "--out", root + "/o1", "--backend", "cuda"], 2,
         ["--backend cuda: this command runs on host buffers", "device buffers"]),
        ("negative_threads", ["run", good, "--out", root + "/o2", "--threads", "-1"], 2, ["--threads"]),
        ("case_dir_missing", ["run", root + "/nope", "--out", root + "/o3"], 2, ["nope: not a directory"]),
        ("out_is_a_file", ["run", good, "--out", blocker, "--backend", "reference"], 1, ["cannot create the output directory"]),
        ("no_subcommand", [], 2, ["a subcommand is required: info, run or bench", "(see rnnx --help)"]),
        # A misspelt subcommand or an unknown first option is named, with the subcommands.
        ("unknown_subcommand", ["frobnicate"], 2,
         ['unknown subcommand "frobnicate"', "the subcommands are info, run and bench", "(see rnnx --help)"]),
        ("unknown_option", ["--verbose"], 2, ["unknown option --verbose", "info, run or bench"]),
        # A subcommand's own error points at that subcommand's help, not the command's.
        ("run_no_args", ["run"], 2, ["case_dir is required", "(see rnnx run --help)"]),
        ("bench_no_flags", ["bench"], 2, ["is required", "(see rnnx bench --help)"]),
        ("bench_bad_value", ["bench", "--input", "x"], 2, ["--input", "(see rnnx bench --help)"]),
        ("bench_cuda_backend", ["bench", "--backend", "cuda", "--input", "4", "--hidden", "4", "--seq", "2",
                                "--batch", "2"], 2, ["--backend cuda: this command runs on host buffers",
                                                     "rnnx_cuda_bench"]),
        ("info_bad_flag", ["info", "--verbose"], 2, ["--verbose", "(see rnnx info --help)"]),
    ]:
        report(name, check_status(name, run(args.rnnx, argv), status, needles))

    # --version prints the library's version (the one `rnnx info` reports), nothing else.
    info = json.loads(run(args.rnnx, ["info", "--json"]).stdout)
    proc = run(args.rnnx, ["--version"])
    report("version", [] if proc.returncode == 0 and proc.stdout == f"rnnx {info['version']}\n"
           and not proc.stderr else [f"status {proc.returncode}, stdout {proc.stdout!r}, "
                                     f"stderr {proc.stderr!r}, expected 'rnnx {info['version']}'"])

    # Whether the cpu plan's algorithm came from the search or the heuristic, in `rnnx info`
    # (the probe's) and `rnnx run`: "/tuned" at the end of impl_name() means the search.
    def choice_problems(env, expect_choice):
        problems = []
        j = run(args.rnnx, ["info", "--json"], env)
        cpu = json.loads(j.stdout)["backends"]["cpu"]
        if not cpu["available"]:
            return []  # a build without the cpu backend: nothing to say
        searched = cpu["detail"].endswith("/tuned")
        if cpu.get("choice") != ("search" if searched else "heuristic"):
            problems.append(f"info --json: choice {cpu.get('choice')!r} for {cpu['detail']!r}")
        if expect_choice and cpu.get("choice") != expect_choice:
            problems.append(f"info --json: choice {cpu.get('choice')!r}, expected {expect_choice!r}")
        text = run(args.rnnx, ["info"], env).stdout
        want = "chosen by the search" if searched else "from the heuristic"
        if want not in text:
            problems.append(f"info does not say {want!r}: {text!r}")
        p = run(args.rnnx, ["run", good, "--out", root + "/o_choice", "--backend", "cpu"], env)
        if p.returncode != 0 or not ("(algorithm chosen by the search" in p.stdout
                                     or "(algorithm from the heuristic" in p.stdout):
            problems.append(f"run says nothing of the choice: {p.returncode} {p.stdout!r} {p.stderr!r}")
        if expect_choice == "heuristic" and "RNNX_AUTOTUNE=0" not in p.stdout:
            problems.append(f"run does not name RNNX_AUTOTUNE=0: {p.stdout!r}")
        return problems

    # Each command searches afresh; a search disturbed by other work (tests run side by side)
    # would fall back to the heuristic in one of them and not the others: keep every choice.
    report("choice_default", choice_problems({"RNNX_AUTOTUNE_SPREAD": "1e9"}, None))
    report("choice_autotune_off", choice_problems({"RNNX_AUTOTUNE": "0"}, "heuristic"))
    p = run(args.rnnx, ["run", good, "--out", root + "/o_ref", "--backend", "reference"])
    report("choice_reference", [] if p.returncode == 0 and "algorithm" not in p.stdout
           else [f"the reference backend chooses nothing: {p.stdout!r} {p.stderr!r}"])

    shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
