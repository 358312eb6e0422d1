"""Several Python threads on one plan (the GIL is released while it runs), and allocation
failure through the Python front end (docs/robustness.md)."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import rnnx


def _problem():
    cfg = rnnx.Config(cell="lstm", input_size=6, hidden_size=9, num_layers=2,
                      bidirectional=True, dropout=0.2, dtype="float32")
    plan = rnnx.Plan.padded(cfg, 7, 5, lengths=[7, 0, 3, 7, 1], num_threads=1)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (7, 5, 6)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, plan.weights_numel).astype(np.float32)
    dy = rng.uniform(-1, 1, (7, 5, 18)).astype(np.float32)
    return plan, x, w, dy


def _train_step(plan, x, w, dy, own_workspace):
    y = np.empty((7, 5, 18), np.float32)
    reserve = np.empty(plan.reserve_size, np.uint8)
    ws = None if own_workspace else np.empty(plan.forward_workspace_size(True), np.uint8)
    plan.forward(x, w, y, training=True, dropout_counter=4, reserve=reserve, workspace=ws)
    dw = np.empty(plan.weights_numel, np.float32)
    dx = np.empty_like(x)
    plan.backward(x, w, reserve, dy=dy, dx=dx, dweights=dw)
    return y, dx, dw


def test_threads_on_one_plan_give_the_bits_of_one_thread():
    plan, x, w, dy = _problem()
    want = _train_step(plan, x, w, dy, True)
    wrong, errors = [], []

    def worker(k):
        try:
            for i in range(20):
                got = _train_step(plan, x, w, dy, (k + i) % 2 == 0)
                if not all(np.array_equal(g, e) for g, e in zip(got, want)):
                    wrong.append(k)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not wrong


# Run in an interpreter of its own with tests/fault_preload's shared object preloaded: it
# replaces the allocation rnnx's own buffers use and refuses them after
# RNNX_TEST_FAIL_ALLOC_AFTER of them (the library has no test hook).
_FAULT_SCRIPT = """
import os, sys
import numpy as np
import rnnx
sys.path.insert(0, sys.argv[1])
from test_threads_and_faults import _problem
plan, x, w, dy = _problem()
y = np.empty((7, 5, 18), np.float32)
os.environ["RNNX_TEST_FAIL_ALLOC_AFTER"] = "0"
try:
    plan.forward(x, w, y)  # a call without a workspace needs one
    sys.exit("the workspace was allocated although allocations fail")
except rnnx.OutOfMemoryError as e:
    assert isinstance(e, MemoryError), type(e)
    assert "forward: workspace: cannot allocate" in str(e), str(e)
del os.environ["RNNX_TEST_FAIL_ALLOC_AFTER"]
plan.forward(x, w, y)
fresh = np.empty_like(y)
rnnx.Plan.padded(plan.config, 7, 5, lengths=[7, 0, 3, 7, 1], num_threads=1).forward(x, w, fresh)
assert np.array_equal(y, fresh)
print("recovered")
"""


def test_allocation_failure_is_out_of_memory_and_the_plan_recovers():
    preload = os.environ.get("RNNX_TEST_FAIL_ALLOC_PRELOAD")
    if not preload:
        pytest.skip("RNNX_TEST_FAIL_ALLOC_PRELOAD (tests/fault_preload's shared object, which "
                    "ctest's python_pytest names) is not set")
    env = dict(os.environ, LD_PRELOAD=preload)
    env.pop("RNNX_TEST_FAIL_ALLOC_AFTER", None)
    run = subprocess.run([sys.executable, "-c", _FAULT_SCRIPT, os.path.dirname(__file__)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "recovered", run.stdout + run.stderr
