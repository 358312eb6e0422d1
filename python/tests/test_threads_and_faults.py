"""Several Python threads on one plan (the GIL is released while it runs), and allocation
failure through the Python front end (docs/robustness.md)."""

import os
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


def test_allocation_failure_is_out_of_memory_and_the_plan_recovers(monkeypatch):
    plan, x, w, dy = _problem()
    y = np.empty((7, 5, 18), np.float32)
    # The library reads RNNX_TEST_FAIL_ALLOC_AFTER at every buffer it allocates itself: a
    # call without a workspace needs one.
    monkeypatch.setenv("RNNX_TEST_FAIL_ALLOC_AFTER", "0")
    with pytest.raises(rnnx.OutOfMemoryError, match="forward: workspace: cannot allocate") as e:
        plan.forward(x, w, y)
    assert isinstance(e.value, MemoryError)
    monkeypatch.setenv("RNNX_TEST_FAIL_ALLOC_AFTER", "soon")
    with pytest.raises(rnnx.InvalidArgumentError, match="RNNX_TEST_FAIL_ALLOC_AFTER"):
        plan.forward(x, w, y)
    monkeypatch.delenv("RNNX_TEST_FAIL_ALLOC_AFTER")
    plan.forward(x, w, y)
    fresh = np.empty_like(y)
    rnnx.Plan.padded(plan.config, 7, 5, lengths=[7, 0, 3, 7, 1], num_threads=1).forward(x, w, fresh)
    assert np.array_equal(y, fresh)
