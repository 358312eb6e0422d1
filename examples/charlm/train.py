#!/usr/bin/env python3
"""Trains a character-level language model on the quotations of Debian's fortunes package,
with rnnx's drop-in LSTM over ragged batches (each sequence's own length, no padding work),
and compares it with padded, length-bucketed and torch.nn.LSTM training (--compare).

    PYTHONPATH=build/release/python /usr/bin/python3 examples/charlm/train.py --help
    python3 -m torch.distributed.run --nproc_per_node=2 examples/charlm/train.py --ddp

docs/charlm.md explains the model, the data, the flags and the data-parallel launch.
"""

import argparse
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

import checkpoint
import data
import report
import sample
from model import CharLM

LN2 = math.log(2.0)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("data")
    g.add_argument("--data", default=data.FORTUNES_DIR, help="folder of fortune files")
    g.add_argument("--val-fraction", type=float, default=0.05, help="quotations held out")
    g.add_argument("--cap", type=int, default=256,
                   help="longest sequence; longer quotations are cut into pieces of this length")
    g.add_argument("--batch-size", type=int, default=32, help="sequences per step (all ranks)")
    g.add_argument("--batching", choices=("ragged", "padded", "bucketed"), default="ragged",
                   help="ragged: lengths mixed as they come, each run to its own length; "
                   "padded: the same batches run to their longest length; bucketed: batches of "
                   "similar lengths run to their longest length")
    g = p.add_argument_group("model")
    g.add_argument("--rnn", choices=("rnnx", "torch"), default="rnnx",
                   help="rnnx.torch.LSTM, or torch.nn.LSTM (ragged: pack_padded_sequence)")
    g.add_argument("--embed", type=int, default=64)
    g.add_argument("--hidden", type=int, default=256)
    g.add_argument("--proj", type=int, default=128, help="LSTM projection size (0: none)")
    g.add_argument("--layers", type=int, default=2)
    g.add_argument("--dropout", type=float, default=0.1, help="between LSTM layers")
    g.add_argument("--cell-clip", type=float, default=50.0, help="clip c to [-v, v] (0: off)")
    g = p.add_argument_group("training")
    g.add_argument("--minutes", type=float, default=2.0, help="training time (unless --steps)")
    g.add_argument("--steps", type=int, default=None, help="train this many steps instead")
    g.add_argument("--lr", type=float, default=4e-3, help="peak learning rate (AdamW)")
    g.add_argument("--weight-decay", type=float, default=0.01)
    g.add_argument("--warmup", type=float, default=0.05, help="warm-up share of the run")
    g.add_argument("--clip-grad", type=float, default=1.0, help="gradient-norm clip")
    g.add_argument("--evals", type=int, default=4, help="validation passes during training")
    g.add_argument("--eval-tokens", type=int, default=40000,
                   help="validation tokens of the passes during training (the last uses all)")
    g.add_argument("--threads", type=int, default=0, help="threads per process (0: all cores)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--ddp", action="store_true",
                   help="data-parallel under torchrun (gloo): each rank takes its shard of every batch")
    g = p.add_argument_group("output")
    g.add_argument("--out", default="charlm-out", help="folder for checkpoint, plot and log")
    g.add_argument("--samples", type=int, default=3, help="quotations to sample at the end")
    g.add_argument("--sample-chars", type=int, default=400)
    g.add_argument("--temperature", type=float, default=0.8)
    g.add_argument("--compare", action="store_true",
                   help="then time every variant (rnnx/torch x ragged/padded/bucketed) on the same data")
    g.add_argument("--compare-steps", type=int, default=8, help="timed steps per variant")
    g.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    checks = [("--batch-size", args.batch_size, 1), ("--cap", args.cap, 1),
              ("--embed", args.embed, 1), ("--hidden", args.hidden, 1), ("--proj", args.proj, 0),
              ("--layers", args.layers, 1), ("--evals", args.evals, 0),
              ("--samples", args.samples, 0), ("--compare-steps", args.compare_steps, 1),
              ("--threads", args.threads, 0), ("--eval-tokens", args.eval_tokens, 1)]
    if args.steps is not None:
        checks.append(("--steps", args.steps, 0))
    for flag, value, least in checks:
        if value < least:
            p.error(f"{flag} (= {value}) must be at least {least}")
    if args.proj >= args.hidden:
        p.error(f"--proj (= {args.proj}) must be less than --hidden (= {args.hidden})")
    if not 0.0 <= args.dropout < 1.0:
        p.error(f"--dropout (= {args.dropout}) must lie in [0, 1)")
    if args.minutes < 0 or not 0.0 <= args.warmup < 1.0 or args.temperature <= 0:
        p.error("--minutes must be >= 0, --warmup in [0, 1), --temperature > 0")
    return args


class Dist:
    """Rank, world size and the collectives the loop needs; one process without --ddp."""

    def __init__(self, ddp):
        self.ddp = ddp
        self.rank, self.world, self.local_world = 0, 1, 1
        if ddp:
            if "RANK" not in os.environ:
                raise SystemExit("--ddp needs torchrun: python3 -m torch.distributed.run "
                                 "--nproc_per_node=N examples/charlm/train.py --ddp ...")
            torch.distributed.init_process_group("gloo")
            self.rank = torch.distributed.get_rank()
            self.world = torch.distributed.get_world_size()
            self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))

    @property
    def main(self):
        return self.rank == 0

    def agree(self, value):
        """Rank 0's float, on every rank (the clock that drives the schedule and the stop)."""
        if not self.ddp:
            return value
        t = torch.tensor([value if self.main else 0.0], dtype=torch.float64)
        torch.distributed.broadcast(t, 0)
        return float(t.item())

    def barrier(self):
        if self.ddp:
            torch.distributed.barrier()

    def close(self):
        if self.ddp:
            torch.distributed.destroy_process_group()


def lr_at(progress, args):
    """Linear warm-up, then cosine decay to 1/20 of the peak, over progress in [0, 1]."""
    if progress < args.warmup:
        return args.lr * (progress / args.warmup)
    t = min(1.0, (progress - args.warmup) / max(1e-9, 1.0 - args.warmup))
    return args.lr * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * t)))


def masked_loss_sum(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=data.IGNORE, reduction="sum")


def run_lengths(batch, batching):
    """What the LSTM gets: each sequence's length (ragged), or None (run padded)."""
    return batch.lengths if batching == "ragged" else None


@torch.no_grad()
def evaluate(model, pieces, batch_size, max_tokens=None):
    """Bits per character over the pieces (up to max_tokens of them), in batches as
    training forms them (lengths mixed), so that rnnx reuses training's algorithm choices."""
    model.eval()
    total, tokens = 0.0, 0
    for s in range(0, len(pieces), batch_size):
        if max_tokens is not None and tokens >= max_tokens:
            break
        batch = data.collate(pieces[s:s + batch_size])
        logits, _ = model(batch.inputs, batch.lengths)
        total += float(masked_loss_sum(logits, batch.targets))
        tokens += batch.tokens
    model.train()
    return total / max(tokens, 1) / LN2


def new_model(args, vocab_size, rnn, threads):
    torch.manual_seed(args.seed)  # the same initial weights for every variant and rank
    model = CharLM(vocab_size, args.embed, args.hidden, args.proj, args.layers, args.dropout,
                   args.cell_clip, rnn=rnn, num_threads=threads)
    if rnn == "rnnx" and args.ddp:
        # A rank's dropout masks differ from the other ranks' (seed + rank), and repeat
        # between runs; a module's counter gives every call a new mask.
        model.lstm.seed = args.seed * 1000003 + int(os.environ.get("RANK", 0))
    return model


def train(args, dist, model, train_pieces, val_pieces, log):
    """The training loop; returns the history the plot and the summary need."""
    net = torch.nn.parallel.DistributedDataParallel(model) if dist.ddp else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    rng = random.Random(args.seed)
    budget = args.minutes * 60.0
    by_steps = args.steps is not None
    total = args.steps if by_steps else budget
    eval_points = [(i + 1) / (args.evals + 1) for i in range(args.evals)]
    hist = report.History()
    bar = report.progress(total, by_steps, enabled=dist.main)
    step, tokens_seen, epoch = 0, 0, 0
    window = report.Window(40)  # recent steps: loss, tokens and time for the bar
    start = time.perf_counter()
    train_seconds = 0.0
    done = total == 0
    while not done:
        epoch += 1
        for order in data.batch_order(train_pieces, args.batch_size, args.batching, rng):
            elapsed = dist.agree(time.perf_counter() - start)
            progress = step / total if by_steps else elapsed / total
            if progress >= 1.0:
                done = True
                break
            for g in opt.param_groups:
                g["lr"] = lr_at(progress, args)
            batch_tokens = sum(len(train_pieces[i]) for i in order)
            shard = data.collate([train_pieces[i] for i in order[dist.rank::dist.world]])
            t0 = time.perf_counter()
            logits, _ = net(shard.inputs, run_lengths(shard, args.batching))
            loss_sum = masked_loss_sum(logits, shard.targets)
            # DDP averages gradients over ranks: scaling by world / all tokens makes the sum
            # the gradient of the mean over the whole batch, as one process would compute.
            (loss_sum * (dist.world / batch_tokens)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
            opt.step()
            opt.zero_grad(set_to_none=True)
            seconds = time.perf_counter() - t0
            train_seconds += seconds
            step += 1
            tokens_seen += batch_tokens
            window.add(float(loss_sum) / LN2, shard.tokens, batch_tokens, seconds)
            hist.train.append((tokens_seen, window.bits()))
            bar.update(step if by_steps else min(elapsed, total), step=step, bpc=window.bits(),
                       tokens_per_s=window.tokens_per_s(), epoch=epoch)
            while eval_points and progress >= eval_points[0]:
                eval_points.pop(0)
                if dist.main:
                    bpc = evaluate(model, val_pieces, args.batch_size, args.eval_tokens)
                    hist.val.append((tokens_seen, bpc))
                    bar.note(f"step {step}: validation {bpc:.3f} bits/char "
                             f"(first {args.eval_tokens} tokens)")
                dist.barrier()
    bar.close()
    hist.steps, hist.tokens_seen, hist.train_seconds = step, tokens_seen, train_seconds
    hist.wall_seconds = time.perf_counter() - start
    log(f"trained {step} steps ({epoch} epoch{'s' if epoch != 1 else ''} begun), "
        f"{tokens_seen:,} real tokens in {hist.wall_seconds:.0f} s: "
        f"{tokens_seen / max(train_seconds, 1e-9):,.0f} tokens/s in the steps")
    return hist


class Summary:
    """What a run leaves for its caller (the tests): history, scores, the comparison."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def run(args):
    """Loads the data, trains, evaluates, samples, saves, compares and plots, as asked.
    Raises data.DataError when the data folder is missing or empty."""
    dist = Dist(args.ddp)
    threads = args.threads or max(1, (os.cpu_count() or 1) // dist.local_world)
    torch.set_num_threads(threads)

    def log(message):
        if dist.main:
            print(message, flush=True)

    quotations = data.load_quotations(args.data)
    train_texts, val_texts = data.split(quotations, args.val_fraction, args.seed)
    vocab = data.Vocab.from_texts(train_texts)
    train_pieces, cap = data.make_pieces(train_texts, vocab, args.cap)
    val_pieces, _ = data.make_pieces(val_texts, vocab, args.cap)
    lengths = sorted(len(q) for q in quotations)
    log(f"data: {len(quotations):,} quotations from {args.data}, {sum(lengths):,} characters, "
        f"median length {lengths[len(lengths) // 2]}, 90th percentile "
        f"{lengths[int(0.9 * (len(lengths) - 1))]}, longest {lengths[-1]}")
    log(f"split: {len(train_texts):,} training and {len(val_texts):,} validation quotations "
        f"(seed {args.seed}); vocabulary {len(vocab)} (characters of the training split)")
    log(f"cap {args.cap}: {cap.cut:,} training quotations longer than the cap cut into pieces, "
        f"{cap.quotations - cap.cut:,} kept whole: {cap.pieces:,} sequences, {cap.tokens:,} tokens")
    unigram = data.unigram_bits(train_pieces, val_pieces, len(vocab))
    log(f"baseline: {unigram:.3f} bits/char on validation from character frequencies alone")
    os.makedirs(args.out, exist_ok=True)

    model = new_model(args, len(vocab), args.rnn, threads)
    n_params = sum(p.numel() for p in model.parameters())
    clip = f", cell_clip=±{args.cell_clip:g}" if args.rnn == "rnnx" and args.cell_clip > 0 else ""
    log(f"model: embedding {args.embed} -> {'rnnx.torch' if args.rnn == 'rnnx' else 'torch.nn'}"
        f".LSTM({args.embed}, {args.hidden}, num_layers={args.layers}, proj_size={args.proj}, "
        f"dropout={args.dropout}{clip}) -> linear {len(vocab)}; {n_params:,} parameters; "
        f"batching {args.batching}, {args.batch_size} sequences a step, {dist.world} "
        f"process{'es' if dist.world > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}")

    hist = train(args, dist, model, train_pieces, val_pieces, log)
    summary = Summary(hist=hist, unigram=unigram, val_bpc=None, rows=None, vocab=vocab,
                      val_pieces=val_pieces, checkpoint=None, plot=None, samples=[], int8=None)
    if dist.main:
        if args.rnn == "rnnx":
            log(report.setup_overhead(model.lstm.rnnx_network_stats(),
                                      model.lstm.rnnx_batch_setup_seconds, hist.steps,
                                      hist.train_seconds))
        summary.val_bpc = evaluate(model, val_pieces, args.batch_size)
        hist.val.append((hist.tokens_seen, summary.val_bpc))
        gain = unigram - summary.val_bpc
        log(f"validation: {summary.val_bpc:.3f} bits/char on all "
            f"{sum(len(p) for p in val_pieces):,} tokens, {abs(gain):.3f} "
            f"{'below' if gain >= 0 else 'above'} the baseline ({unigram:.3f})")
        if args.rnn == "rnnx":
            import int8_eval
            summary.int8 = int8_eval.compare(model, val_pieces, args.batch_size, log)
        summary.checkpoint = os.path.join(args.out, "charlm.pt")
        checkpoint.save(summary.checkpoint, model, vocab, args, summary.val_bpc)
        log(f"checkpoint: {summary.checkpoint} (torch.nn.LSTM's parameter names; loads into "
            "rnnx.torch.LSTM and torch.nn.LSTM)")
        if args.samples:
            log(f"samples (temperature {args.temperature}):")
            summary.samples = sample.quotations(model, vocab, args.samples, args.sample_chars,
                                                args.temperature, args.seed)
            for text in summary.samples:
                log("  | " + text.replace("\n", "\n  | "))
    dist.barrier()
    if args.compare and dist.main:
        import compare
        summary.rows = compare.run(args, train_pieces, len(vocab), threads, log)
    if dist.main and not args.no_plot:
        summary.plot = report.plot(hist, unigram, summary.rows, os.path.join(args.out, "charlm.png"),
                                   "rnnx.torch.LSTM" if args.rnn == "rnnx" else "torch.nn.LSTM")
        if summary.plot:
            log(f"plot: {summary.plot}")
    dist.close()
    return summary


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except data.DataError as e:
        print(f"charlm: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
