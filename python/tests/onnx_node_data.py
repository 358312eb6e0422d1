"""ONNX's own backend node tests for LSTM, GRU and RNN (Debian's libonnx-testdata,
data/node/test_{lstm,gru,rnn,simple_rnn}_*): where their data sets are and what one holds.
Shared by the two front ends' tests on the same data: the Python API's
(test_onnx_node_tests.py) and the `rnnx run` command's (tests/python/onnx_node_tests.py).
RNNX_ONNX_NODE_DATA points at another copy of data/node. Needs the onnx package."""

import glob
import os

import onnx
from onnx import numpy_helper

DATA = os.environ.get("RNNX_ONNX_NODE_DATA", "/usr/share/libonnx-testdata/data/node")
PREFIXES = ("test_lstm", "test_gru", "test_rnn", "test_simple_rnn")


def node_test_sets(data=DATA):
    """Every test_data_set_* folder of the recurrent node tests under `data`, sorted."""
    out = []
    for test in sorted(glob.glob(os.path.join(data, "test_*"))):
        if os.path.basename(test).startswith(PREFIXES):
            out += sorted(glob.glob(os.path.join(test, "test_data_set_*")))
    return out


def read_tensors(folder, prefix):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, prefix + "_*.pb")),
                       key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0])):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        out.append(numpy_helper.to_array(t))
    return out


def by_position(names, tensors):
    """Optional inputs and outputs may be named '' in the node: map the files by position."""
    out, k = {}, 0
    for pos, name in enumerate(names):
        if name:
            out[pos] = tensors[k]
            k += 1
    return out


def load(data_dir):
    """(op type, attributes, inputs by position, expected outputs by position) of a data set."""
    model = onnx.load(os.path.join(os.path.dirname(data_dir), "model.onnx"))
    node = model.graph.node[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    inputs = by_position(node.input, read_tensors(data_dir, "input"))
    outputs = by_position(node.output, read_tensors(data_dir, "output"))
    return node.op_type, attrs, inputs, outputs
