"""The character LM end to end at a tiny size (ctest example_charlm): it learns, its
checkpoint reloads into rnnx.torch.LSTM and torch.nn.LSTM with the same validation loss,
its int8 evaluation stays within 0.02 bits/char of float32 (on CPUs with VNNI),
it samples, --compare times every variant, bad flags and data get clear messages, and two
data-parallel ranks train the parameters one process trains on the combined batches."""

import os
import socket
import subprocess
import sys

import pytest
import torch

import checkpoint
import data
import sample
import train

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = ["--embed", "16", "--hidden", "64", "--proj", "32", "--cap", "64", "--batch-size", "16",
        "--lr", "1e-2", "--threads", "1", "--evals", "1", "--eval-tokens", "3000"]

pytestmark = pytest.mark.skipif(not os.path.isdir(data.FORTUNES_DIR),
                                reason=f"{data.FORTUNES_DIR} missing: apt-get install fortunes")


def run_tiny(tmp_path, *extra):
    return train.run(train.parse_args(TINY + ["--out", str(tmp_path), *extra]))


def test_data_split_cap_and_vocabulary():
    quotations = data.load_quotations()
    assert len(quotations) > 15000  # Debian 12's fortunes: 15,217
    tr, va = data.split(quotations, 0.05, 1)
    assert (tr, va) == data.split(quotations, 0.05, 1), "the split is seeded"
    assert len(tr) + len(va) == len(quotations) and len(va) == round(0.05 * len(quotations))
    vocab = data.Vocab.from_texts(tr)
    pieces, cap = data.make_pieces(tr, vocab, 64)
    # Nothing dropped: every character plus the closing boundary is a target of some piece.
    assert cap.tokens == sum(len(q) + 1 for q in tr) == sum(len(p) for p in pieces)
    assert cap.cut == sum(len(q) + 1 > 64 for q in tr) and max(len(p) for p in pieces) == 64
    assert vocab.decode(vocab.encode(tr[0])) == tr[0]
    batch = data.collate(pieces[:5])
    assert batch.tokens == sum(len(p) for p in pieces[:5])
    for b, p in enumerate(pieces[:5]):
        assert (batch.targets[len(p):, b] == data.IGNORE).all()
        assert batch.targets[:len(p), b].tolist() == p.targets


def test_learns_reloads_into_both_lstms_and_samples(tmp_path):
    s = run_tiny(tmp_path, "--steps", "300", "--samples", "2", "--sample-chars", "50")
    first = sum(b for _, b in s.hist.train[:5]) / 5
    last = s.hist.train[-1][1]
    assert last < first - 1.5, f"training bits/char fell from {first:.2f} to {last:.2f} only"
    assert s.val_bpc < s.unigram - 0.3, (s.val_bpc, s.unigram)
    assert len(s.samples) == 2 and all(isinstance(t, str) for t in s.samples)
    assert os.path.isfile(s.plot)
    # The checkpoint holds torch.nn.LSTM's names and loads into either LSTM; both give the
    # validation loss the run reported (the cell clip does not bind at this size).
    saved = torch.load(s.checkpoint)["state_dict"]
    want = {f"lstm.{n}" for n in torch.nn.LSTM(16, 64, 2, proj_size=32).state_dict()}
    assert want <= set(saved)
    for rnn in ("rnnx", "torch"):
        model, vocab = checkpoint.load(s.checkpoint, rnn)
        assert vocab.chars == s.vocab.chars
        bpc = train.evaluate(model, s.val_pieces, 16)
        assert abs(bpc - s.val_bpc) < 1e-4, (rnn, bpc, s.val_bpc)
    # int8 (docs/int8.md) where the CPU has VNNI: within 0.02 bits/char of float32.
    import rnnx
    if rnnx.build_info()["int8_gemm"] != "none":
        fp_bits, q_bits = s.int8
        assert abs(fp_bits - s.val_bpc) < 1e-4 and abs(q_bits - fp_bits) < 0.02, s.int8
    else:
        assert s.int8 is None
    # Sampling carries (h, c) step to step: the same seed gives the same text.
    model, vocab = checkpoint.load(s.checkpoint, "rnnx")
    again = sample.quotations(model, vocab, 2, 50, 0.8, 1)
    assert again == sample.quotations(model, vocab, 2, 50, 0.8, 1)


def test_compare_times_every_variant(tmp_path):
    s = run_tiny(tmp_path, "--steps", "0", "--cap", "256", "--compare", "--compare-steps", "3",
                 "--no-plot")
    names = [r["variant"] for r in s.rows]
    assert names == [v[0] for v in __import__("compare").VARIANTS]
    by = {r["variant"]: r for r in s.rows}
    assert by["rnnx ragged"]["ratio"] == 1.0
    assert by["rnnx ragged"]["padding"] == by["torch.nn packed"]["padding"] > 0
    assert by["rnnx bucketed"]["padding"] < by["rnnx padded"]["padding"]
    assert all(r["tokens_per_s"] > 0 for r in s.rows)


def test_a_missing_plotting_package_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises
    s = run_tiny(tmp_path, "--steps", "2", "--samples", "0")
    out = capsys.readouterr().out
    assert s.plot is None and not os.path.exists(os.path.join(tmp_path, "charlm.png"))
    assert out.count("matplotlib is not installed; no plot") == 1


@pytest.mark.parametrize("flags, message", [
    (["--batch-size", "0"], "--batch-size (= 0) must be at least 1"),
    (["--proj", "64", "--hidden", "64"], "--proj (= 64) must be less than --hidden (= 64)"),
    (["--batching", "sorted"], "argument --batching: invalid choice: 'sorted'"),
    (["--dropout", "1.5"], "--dropout (= 1.5) must lie in [0, 1)"),
])
def test_bad_flags_are_named(flags, message, capsys):
    with pytest.raises(SystemExit) as e:
        train.parse_args(flags)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_or_empty_data_folder(tmp_path, capsys):
    assert train.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 2
    assert "does not exist: install Debian's fortunes package" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.dat").write_bytes(b"\0")
    assert train.main(["--data", str(tmp_path / "empty"), "--out", str(tmp_path)]) == 2
    assert "holds no quotations (0 files read" in capsys.readouterr().err


@pytest.mark.parametrize("batch_size", ["16", "1"])
def test_two_ranks_train_what_one_process_trains(tmp_path, batch_size):
    """DistributedDataParallel over gloo, each rank its half of every batch, against one
    process on the whole batches: the same parameters after several steps (dropout off).
    With batches of one sequence, one rank has none each step (an empty batch for rnnx)."""
    common = TINY + ["--steps", "6", "--dropout", "0", "--evals", "0", "--samples", "0",
                     "--no-plot", "--batch-size", batch_size]
    # Loopback by address, not by name: a machine may resolve neither localhost nor its
    # own hostname (a fresh chroot does not), and gloo binds to what the name gives.
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = os.path.join(HERE, "train.py")
    subprocess.run([sys.executable, os.path.join(HERE, "torchrun.py"), "--nnodes=1",
                    "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={port}",
                    script, "--ddp", "--out", str(tmp_path / "ddp"), *common],
                   check=True, env=env, timeout=240)
    subprocess.run([sys.executable, script, "--out", str(tmp_path / "one"), *common],
                   check=True, env=env, timeout=240)
    ddp = torch.load(tmp_path / "ddp" / "charlm.pt")["state_dict"]
    one = torch.load(tmp_path / "one" / "charlm.pt")["state_dict"]
    assert ddp.keys() == one.keys()
    chars = torch.load(tmp_path / "one" / "charlm.pt")["chars"]
    init = train.new_model(train.parse_args(common), len(chars) + 2, "torch", 1).state_dict()
    moved = max(float((one[n] - init[n]).abs().max()) for n in one)
    assert moved > 1e-2, "the steps changed the parameters"
    for name in one:
        # Sums over tokens in another order: float32 rounding, amplified a little by Adam.
        err = float((ddp[name] - one[name]).abs().max())
        assert err < 1e-4 * max(1.0, float(one[name].abs().max())), (name, err)
