#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/ (committed;
rerun after changing a seed). Findings are added to the same folders by hand, named
crash-*, so this script never removes files."""
import io
import json
import os
import random

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy(array, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, array)
    else:
        np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def header(text, data=b"", version=1):
    """A .npy file with a hand-written header dict (for headers NumPy would not write)."""
    text = text.encode("latin1")
    length = len(text).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + data


def npy_corpus():
    t = "fuzz_npy"
    put(t, "f4_2x3.npy", npy(np.arange(6, dtype="<f4").reshape(2, 3)))
    put(t, "f8_3.npy", npy(np.array([1.5, -2.0, np.nan], dtype="<f8")))
    put(t, "i4_4.npy", npy(np.array([3, 0, 2, 1], dtype="<i4")))
    put(t, "i8_scalar.npy", npy(np.array(7, dtype="<i8")))
    put(t, "f4_0x3.npy", npy(np.zeros((0, 3), dtype="<f4")))
    put(t, "f4_v2.npy", npy(np.ones((2, 2), dtype="<f4"), version=(2, 0)))
    put(t, "f4_v3.npy", npy(np.ones((1,), dtype="<f4"), version=(3, 0)))
    put(t, "bad_truncated.npy", npy(np.arange(6, dtype="<f4"))[:-5])
    put(t, "bad_extra.npy", npy(np.arange(2, dtype="<f4")) + b"\0\0\0\0")
    put(t, "bad_fortran.npy", npy(np.asfortranarray(np.ones((2, 3), dtype="<f4"))))
    put(t, "bad_big_endian.npy", npy(np.ones(2, dtype=">f4")))
    put(t, "bad_f2.npy", npy(np.ones(2, dtype="<f2")))
    put(t, "bad_huge_shape.npy",
        header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n"))
    put(t, "bad_overflow_entry.npy",
        header("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }\n"))
    put(t, "bad_header_len.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'")
    put(t, "bad_structured.npy", npy(np.zeros(1, dtype=[("a", "<f4")])))
    put(t, "bad_magic.npy", b"\x93NUMPX\x01\x00")


def folder(case, files):
    """The case folder target's input: case.json, then each file after a line '=== NAME'."""
    out = json.dumps(case).encode()
    for name, data in files.items():
        out += b"\n=== " + name.encode() + b"\n" + data
    return out


def torch_weights(cell, I, H, layers=1, bidir=False, bias=True, proj=0, dtype="<f4"):
    g = {"lstm": 4, "gru": 3}.get(cell, 1)
    rng = np.random.default_rng(0)
    files = {}
    out = proj or H
    for l in range(layers):
        for sfx in [""] + (["_reverse"] if bidir else []):
            i = I if l == 0 else out * (2 if bidir else 1)
            arr = lambda *shape: rng.uniform(-0.5, 0.5, shape).astype(dtype)
            files[f"weight_ih_l{l}{sfx}.npy"] = npy(arr(g * H, i))
            files[f"weight_hh_l{l}{sfx}.npy"] = npy(arr(g * H, out))
            if bias:
                files[f"bias_ih_l{l}{sfx}.npy"] = npy(arr(g * H))
                files[f"bias_hh_l{l}{sfx}.npy"] = npy(arr(g * H))
            if proj:
                files[f"weight_hr_l{l}{sfx}.npy"] = npy(arr(proj, H))
    return files


def case_corpus():
    t = "fuzz_case_folder"
    x = lambda T, B, I: npy(np.linspace(-1, 1, T * B * I, dtype="<f4").reshape(T, B, I))
    put(t, "lstm_lengths", folder(
        {"cell": "lstm", "input_size": 2, "hidden_size": 3},
        {"x.npy": x(3, 2, 2), "lengths.npy": npy(np.array([3, 0], dtype="<i8")),
         **torch_weights("lstm", 2, 3)}))
    put(t, "lstmp_bidir_backward", folder(
        {"cell": "lstm", "input_size": 2, "hidden_size": 3, "proj_size": 2,
         "bidirectional": True, "cell_clip": [-1, 1], "proj_clip": [-0.5, 0.5],
         "clip_nan": "replace", "training": True},
        {"x.npy": x(2, 2, 2), "dy.npy": npy(np.ones((2, 2, 4), dtype="<f4")),
         "h0.npy": npy(np.zeros((2, 2, 2), dtype="<f8")),
         **torch_weights("lstm", 2, 3, bidir=True, proj=2)}))
    put(t, "gru_batch_first_2layers", folder(
        {"cell": "gru", "input_size": 1, "hidden_size": 2, "num_layers": 2,
         "batch_first": True, "gru_linear_before_reset": False, "dtype": "float64",
         "padding_fill": "nan"},
        {"x.npy": x(2, 3, 1), "lengths.npy": npy(np.array([1, 3, 2], dtype="<i4")),
         **torch_weights("gru", 1, 2, layers=2, dtype="<f8")}))
    put(t, "rnn_onnx_weights", folder(
        {"cell": "rnn_tanh", "input_size": 2, "hidden_size": 2, "direction": "reverse",
         "activations": ["Relu"]},
        {"x.npy": x(2, 1, 2), "W.npy": npy(np.ones((1, 2, 2), dtype="<f4")),
         "R.npy": npy(np.eye(2, dtype="<f4")[None]), "B.npy": npy(np.zeros((1, 4), dtype="<f4"))}))
    put(t, "lstm_onnx_peephole", folder(
        {"cell": "lstm", "input_size": 1, "hidden_size": 1, "peephole": True,
         "input_forget": True, "gate_clip": 2.0, "activations": ["HardSigmoid", "Elu", "Affine"],
         "activation_alpha": [0.3, 1.0, 2.0], "activation_beta": [0.4, 0.1]},
        {"x.npy": x(2, 1, 1), "W.npy": npy(np.ones((1, 4, 1), dtype="<f4")),
         "R.npy": npy(np.ones((1, 4, 1), dtype="<f4")), "P.npy": npy(np.ones((1, 3), dtype="<f4"))}))
    put(t, "empty_batch", folder(
        {"cell": "rnn_relu", "input_size": 1, "hidden_size": 1, "bias": False},
        {"x.npy": npy(np.zeros((4, 0, 1), dtype="<f4")), **torch_weights("rnn", 1, 1, bias=False)}))
    put(t, "bad_lengths_dtype", folder(
        {"cell": "rnn_tanh", "input_size": 1, "hidden_size": 1, "ignore": ["notes"], "notes": 1},
        {"x.npy": x(1, 1, 1), "lengths.npy": npy(np.array([1.0], dtype="<f4")),
         **torch_weights("rnn", 1, 1)}))
    put(t, "bad_missing_weight", folder(
        {"cell": "gru", "input_size": 1, "hidden_size": 1},
        {"x.npy": x(1, 1, 1)}))
    put(t, "bad_json", b'{"cell": "lstm", "input_size": 2, "hidden_size": -1')


def random_corpus(target, count, size):
    rng = random.Random(target)
    for k in range(count):
        put(target, f"random_{k}", bytes(rng.randrange(256) for _ in range(size)))


if __name__ == "__main__":
    npy_corpus()
    case_corpus()
    random_corpus("fuzz_c_api", 6, 200)
    random_corpus("fuzz_onnx_import", 4, 120)
