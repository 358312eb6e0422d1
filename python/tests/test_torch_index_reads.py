"""Device index tensors (lengths=, a PackedSequence's sorted_indices and unsorted_indices) are
read to the host once while they live unmodified (rnnx._runtime.as_index_list's cache): on
CUDA each read is a device-to-host copy and a wait, and a training step used to read
sorted_indices three times (module, operator forward, backward) and lengths three times.
Counted here on the CPU, with the cache turned on for CPU tensors (_runtime._caches_reads,
which keeps it to device tensors), through the one function that reads them
(_runtime._tensor_to_numpy); an in-place change or a new tensor is read again, and the
results stay torch.nn's. Without the switch a CPU tensor is read at every use."""

import collections

import pytest

torch = pytest.importorskip("torch")
import rnnx.torch as rt  # noqa: E402
from rnnx import _runtime  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402


def count_reads(monkeypatch):
    """A Counter of the index tensors read to the host, by shape."""
    counts = collections.Counter()
    real = _runtime._tensor_to_numpy

    def counted(t):
        counts[tuple(t.shape)] += 1
        return real(t)

    monkeypatch.setattr(_runtime, "_tensor_to_numpy", counted)
    return counts


@pytest.fixture
def reads(monkeypatch):
    monkeypatch.setattr(_runtime, "_caches_reads", lambda t: True)
    return count_reads(monkeypatch)


def twins(cls=rt.LSTM):
    torch.manual_seed(0)
    ref = getattr(torch.nn, cls.__name__)(4, 5, num_layers=2)
    m = cls(4, 5, num_layers=2)
    m.load_state_dict(ref.state_dict())
    return m, ref


def test_a_packed_training_step_reads_its_index_pair_once(reads):
    m, ref = twins()
    x = torch.randn(6, 3, 4, requires_grad=True)
    p = pack_padded_sequence(x, torch.tensor([6, 2, 4]), enforce_sorted=False)
    y, (h, c) = m(p)
    # sorted_indices and unsorted_indices (3 each) in one read, batch_sizes (6 steps) in one.
    assert reads == {(6,): 2}, dict(reads)
    reads.clear()
    (y.data.sum() + h.sum() + c.sum()).backward()
    assert reads == {}, dict(reads)
    # The same PackedSequence again: nothing read.
    m(p)
    assert reads == {}, dict(reads)
    want, (wh, wc) = ref(p)
    torch.testing.assert_close(y.data, want.data)
    torch.testing.assert_close(h, wh)


def test_lengths_are_read_once_and_again_after_an_in_place_change(reads):
    m, ref = twins(rt.GRU)
    x = torch.randn(6, 3, 4, requires_grad=True)
    lengths = torch.tensor([6, 2, 4])
    y, h = m(x, lengths=lengths)
    y.sum().backward()
    assert reads == {(3,): 1}, dict(reads)
    m(x, lengths=lengths)
    assert reads == {(3,): 1}, dict(reads)
    lengths[1] = 5  # in place: the version counter moves, the values are read again
    y, h = m(x, lengths=lengths)
    assert reads == {(3,): 2}, dict(reads)
    want, wh = ref(pack_padded_sequence(x, lengths, enforce_sorted=False))
    torch.testing.assert_close(h, wh)
    # Equal values in another tensor are read from it, not taken from the cache.
    m(x, lengths=torch.tensor([6, 5, 4]))
    assert reads == {(3,): 3}, dict(reads)


def test_a_refused_index_tensor_is_still_refused_when_cached():
    m, _ = twins()
    x = torch.randn(6, 3, 4)
    bad = torch.tensor([6.5, 2.0, 4.0])
    for _ in range(2):
        with pytest.raises(Exception, match=r"lengths must hold integers"):
            m(x, lengths=bad)


def test_cpu_index_tensors_are_read_at_every_use(monkeypatch):
    counts = count_reads(monkeypatch)
    m, _ = twins()
    x = torch.randn(6, 3, 4)
    lengths = torch.tensor([6, 2, 4])
    m(x, lengths=lengths)
    m(x, lengths=lengths)
    assert counts[(3,)] >= 2  # no cache: a CPU tensor may change without its version moving
    lengths.numpy()[1] = 5  # exactly that: the version counter stays
    y, _ = m(x, lengths=lengths)
    assert float(y[4:, 1].abs().sum()) > 0  # positions 2..4 of sequence 1 now computed
