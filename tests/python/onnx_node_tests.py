#!/usr/bin/python3
"""Runs ONNX's own backend node tests for LSTM, GRU and RNN (Debian's libonnx-testdata,
data/node/test_{lstm,gru,rnn,simple_rnn}_*) through `rnnx run`.

Each test's model.onnx attributes become a case.json (direction, layout, activations,
clip, input_forget, linear_before_reset), its input tensors become x/W/R/B/P/lengths/h0/c0
.npy files (ONNX's gate orders, converted by rnnx itself), and rnnx's y/hy/cy are compared
with the expected outputs after rearranging [T, B, D*H] into ONNX's [T, D, B, H].
Every test runs on the reference and on the cpu backend, and must match on both (the cpu
runs ONNX's cell options too; a refusal is a failure).
Prints a line per run and `N passed, N failed`; exit 77 (skipped) without the test data.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

if importlib.util.find_spec("onnx") is None:  # pragma: no cover - CI installs python3-onnx
    print("onnx is not installed for this interpreter: skipped")
    sys.exit(77)
# The node tests' reader, shared with the Python API's test of the same data.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                                "tests"))
from onnx_node_data import DATA, load, node_test_sets  # noqa: E402


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def build_case(data_dir, case_dir):
    """Writes the case; returns (expected outputs by ONNX output index, layout, D, H)."""
    op_type, attrs, by_pos, out_by_pos = load(data_dir)

    cell = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}[op_type]
    H = int(attrs["hidden_size"])
    direction = text(attrs.get("direction", b"forward"))
    D = 2 if direction == "bidirectional" else 1
    layout = int(attrs.get("layout", 0))
    X = by_pos[0].astype(np.float64)
    W, R = by_pos[1], by_pos[2]
    I = W.shape[2]
    case = {
        "cell": cell, "input_size": int(I), "hidden_size": H, "num_layers": 1,
        "direction": direction, "batch_first": layout == 1, "dtype": "float64",
        "bias": True,
    }
    if op_type == "GRU":
        case["gru_linear_before_reset"] = bool(attrs.get("linear_before_reset", 0))
    if "clip" in attrs:
        case["gate_clip"] = float(attrs["clip"])
    if op_type == "LSTM":
        case["input_forget"] = bool(attrs.get("input_forget", 0))
        case["peephole"] = 7 in by_pos
    if "activations" in attrs:
        case["activations"] = [text(a) for a in attrs["activations"]]
        if "activation_alpha" in attrs:
            case["activation_alpha"] = [float(v) for v in attrs["activation_alpha"]]
        if "activation_beta" in attrs:
            case["activation_beta"] = [float(v) for v in attrs["activation_beta"]]
    os.makedirs(case_dir, exist_ok=True)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(case, f)
    np.save(os.path.join(case_dir, "x.npy"), X)
    np.save(os.path.join(case_dir, "W.npy"), W.astype(np.float64))
    np.save(os.path.join(case_dir, "R.npy"), R.astype(np.float64))
    if 3 in by_pos:
        np.save(os.path.join(case_dir, "B.npy"), by_pos[3].astype(np.float64))
    if 4 in by_pos:
        np.save(os.path.join(case_dir, "lengths.npy"), by_pos[4].astype(np.int64))
    # initial_h/c: ONNX [D, B, H] (layout 1: [B, D, H]); rnnx [L*D, B, H].
    for pos, name in ((5, "h0"), (6, "c0")):
        if pos in by_pos:
            v = by_pos[pos].astype(np.float64)
            if layout == 1:
                v = v.transpose(1, 0, 2)
            np.save(os.path.join(case_dir, name + ".npy"), np.ascontiguousarray(v))
    if 7 in by_pos:
        np.save(os.path.join(case_dir, "P.npy"), by_pos[7].astype(np.float64))
    return out_by_pos, layout, D, H


def to_onnx_outputs(out_dir, layout, D, H):
    """rnnx's y [T,B,D*H] (layout 1: [B,T,D*H]) and hy/cy [D,B,H] in ONNX's shapes."""
    y = np.load(os.path.join(out_dir, "y.npy"))
    if layout == 0:
        T, B = y.shape[0], y.shape[1]
        Y = y.reshape(T, B, D, H).transpose(0, 2, 1, 3)
    else:
        B, T = y.shape[0], y.shape[1]
        Y = y.reshape(B, T, D, H)
    res = {0: Y}
    for pos, name in ((1, "hy"), (2, "cy")):
        path = os.path.join(out_dir, name + ".npy")
        if os.path.exists(path):
            v = np.load(path)
            res[pos] = v.transpose(1, 0, 2) if layout == 1 else v
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rnnx", required=True, help="path of the rnnx command")
    ap.add_argument("--data", default=DATA, help="ONNX node test folder")
    ap.add_argument("--backend", action="append", help="reference and/or cpu (default both)")
    args = ap.parse_args()
    backends = args.backend or ["reference", "cpu"]
    sets = node_test_sets(args.data)
    if not sets:
        print("no ONNX RNN node tests under %s: skipped" % args.data)
        return 77
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for data_dir in sets:
            name = os.path.basename(os.path.dirname(data_dir))
            case_dir = os.path.join(tmp, name, "case")
            expected, layout, D, H = build_case(data_dir, case_dir)
            for backend in backends:
                out_dir = os.path.join(tmp, name, backend)
                run = subprocess.run([args.rnnx, "run", case_dir, "--out", out_dir,
                                      "--backend", backend], capture_output=True, text=True)
                label = "%s/%s [%s]" % (name, os.path.basename(data_dir), backend)
                if run.returncode != 0:
                    print("FAIL %s: exit %d: %s" % (label, run.returncode, run.stderr.strip()))
                    failed += 1
                    continue
                got = to_onnx_outputs(out_dir, layout, D, H)
                worst = 0.0
                ok = True
                for pos, want in expected.items():
                    have = got[pos]
                    # The expected values are float32: compare at float32 resolution.
                    if have.shape != want.shape or not np.allclose(have, want, rtol=1e-5,
                                                                   atol=1e-6):
                        ok = False
                    if have.shape == want.shape:
                        worst = max(worst, float(np.max(np.abs(have - want))))
                print("%s %s: max |diff| %.2e" % ("ok  " if ok else "FAIL", label, worst))
                passed += ok
                failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
