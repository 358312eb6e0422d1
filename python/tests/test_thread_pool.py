"""rnnx's own thread pool seen from Python: rnnx.torch follows torch.get_num_threads() at call
time unless the module was given num_threads, and calls from several Python threads share one
budget of running threads instead of oversubscribing the machine (docs/cpu.md, "Threads")."""

import os
import threading

import pytest

torch = pytest.importorskip("torch")
import rnnx  # noqa: E402
import rnnx.torch  # noqa: E402
from rnnx import _rnnx  # noqa: E402

BUDGET = _rnnx.build_info()["max_threads"]  # this thread's default: the pool's budget


def _lstm(**kwargs):
    torch.manual_seed(0)
    # Large enough that a call splits its time loop over two threads (a team loop).
    return rnnx.torch.LSTM(64, 128, **kwargs).eval()


def _x():
    return torch.randn(20, 16, 64)


def _peak_of(fn):
    """The most threads that ran rnnx's work at once during fn() (0 or 1: the caller alone)."""
    _rnnx.thread_stats(reset_peak=True)
    fn()
    return _rnnx.thread_stats()["peak_running"]


@pytest.fixture
def torch_threads():
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


@pytest.mark.skipif(BUDGET < 2, reason="one CPU: nothing to split")
def test_module_follows_torch_get_num_threads_at_call_time(torch_threads):
    m, x = _lstm(), _x()
    with torch.no_grad():
        torch.set_num_threads(1)
        assert _peak_of(lambda: m(x)) <= 1
        torch.set_num_threads(2)
        assert _peak_of(lambda: m(x)) == 2
        torch.set_num_threads(1)
        assert _peak_of(lambda: m(x)) <= 1
    # The call leaves the calling thread's own count as it found it.
    assert _rnnx.get_num_threads() == BUDGET


@pytest.mark.skipif(BUDGET < 2, reason="one CPU: nothing to split")
def test_cached_training_steps_follow_torch_get_num_threads(torch_threads):
    """The cached training call (its forward and backward straight to the binding, from the
    second step on) takes its thread count from torch.get_num_threads() at each call, as
    the full path does, and leaves the calling thread's count as it found it."""
    m = rnnx.torch.LSTM(64, 128)
    x = _x().requires_grad_()

    def step():
        y, _ = m(x)
        y.sum().backward()

    step()  # remembered from here on
    for threads, want in ((1, 1), (2, 2), (1, 1)):
        torch.set_num_threads(threads)
        peak = _peak_of(step)
        assert (peak <= 1) if want == 1 else (peak == 2), (threads, peak)
    assert "training" in m.__dict__.get("_rnnx_fast", {}) or not rnnx.torch._torch_ops.AVAILABLE
    assert _rnnx.get_num_threads() == BUDGET


@pytest.mark.skipif(BUDGET < 2, reason="one CPU: nothing to split")
def test_module_num_threads_wins_over_torch(torch_threads):
    m, x = _lstm(num_threads=1), _x()
    torch.set_num_threads(2)
    with torch.no_grad():
        assert _peak_of(lambda: m(x)) <= 1
    m2 = _lstm(num_threads=2)
    torch.set_num_threads(1)
    with torch.no_grad():
        assert _peak_of(lambda: m2(x)) == 2


@pytest.mark.skipif(BUDGET < 2, reason="one CPU: nothing to split")
def test_training_backward_follows_torch_threads(torch_threads):
    m, x = _lstm(), _x().requires_grad_()
    m.train()
    torch.set_num_threads(1)
    assert _peak_of(lambda: m(x)[0].sum().backward()) <= 1
    torch.set_num_threads(2)
    assert _peak_of(lambda: m(x)[0].sum().backward()) == 2


@pytest.mark.skipif(BUDGET < 2, reason="one CPU: nothing to share")
def test_two_python_threads_on_one_module_do_not_oversubscribe(torch_threads):
    """Each call asks for the whole budget; with two Python threads calling at once, the
    threads running rnnx's work never exceed it (before the pool: 2 x budget)."""
    torch.set_num_threads(BUDGET)
    m, x = _lstm(), _x()
    with torch.no_grad():
        want = m(x)[0]
    errors, results = [], []

    def caller():
        try:
            with torch.no_grad():
                for _ in range(30):
                    results.append(torch.equal(m(x)[0], want))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    _rnnx.thread_stats(reset_peak=True)
    threads = [threading.Thread(target=caller) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = _rnnx.thread_stats()
    assert not errors, errors
    assert all(results) and len(results) == 60  # the same bits on any team size
    assert stats["peak_running"] <= BUDGET, stats
    assert stats["peak_running"] >= 2, stats  # and the calls did use threads
    assert stats["running"] == 0, stats
    assert stats["calls_in_flight"] == 0, stats  # every call counted out again


def test_thread_count_is_per_python_thread():
    _rnnx.set_num_threads(1)
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(_rnnx.get_num_threads()))
        t.start()
        t.join()
        assert seen == [BUDGET]
        assert _rnnx.get_num_threads() == 1
    finally:
        _rnnx.set_num_threads(0)
    with pytest.raises(rnnx.InvalidArgumentError, match=r"n \(= -1\)"):
        _rnnx.set_num_threads(-1)


def test_omp_num_threads_sets_the_default(tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, OMP_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", "import rnnx; print(rnnx.build_info()['max_threads'])"],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"
