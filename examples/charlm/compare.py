"""--compare: the same model trained for the same steps on the same sequences, once per
variant (rnnx or torch.nn.LSTM; ragged, padded or length-bucketed batches), timed step by
step, in one table with ratios to rnnx on ragged batches."""

import random
import statistics
import time

import torch

import data
from train import masked_loss_sum, new_model, run_lengths

# (label, rnn, batching)
VARIANTS = (
    ("rnnx ragged", "rnnx", "ragged"),
    ("rnnx padded", "rnnx", "padded"),
    ("rnnx bucketed", "rnnx", "bucketed"),
    ("torch.nn packed", "torch", "ragged"),
    ("torch.nn padded", "torch", "padded"),
    ("torch.nn bucketed", "torch", "bucketed"),
)


def batches_for(pieces, batch_size, batching, steps, seed):
    """`steps` batches drawn from the same sequences for every variant: the first
    steps x batch_size of a seeded shuffle, as they come or bucketed by length."""
    order = list(range(len(pieces)))
    random.Random(seed).shuffle(order)
    chosen = [pieces[i] for i in order[:steps * batch_size]]
    batches = data.batch_order(chosen, batch_size, batching, random.Random(seed))
    return [data.collate([chosen[i] for i in b]) for b in batches]


def time_variant(args, rnn, batching, pieces, vocab_size, threads):
    """Trains a new model on the variant's batches twice: once untimed (first touch of the
    buffers, PyTorch's allocator, rnnx's algorithm search for each new problem), then timed,
    as a long run would see them."""
    model = new_model(args, vocab_size, rnn, threads)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr * 0.1, weight_decay=args.weight_decay)
    batches = batches_for(pieces, args.batch_size, batching, args.compare_steps, args.seed)
    seconds, rates, tokens, padded = [], [], 0, 0
    for timed in (False, True):
        for batch in batches:
            t0 = time.perf_counter()
            logits, _ = model(batch.inputs, run_lengths(batch, batching))
            (masked_loss_sum(logits, batch.targets) / batch.tokens).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if timed:
                seconds.append(time.perf_counter() - t0)
                rates.append(batch.tokens / seconds[-1])
                tokens += batch.tokens
                padded += batch.padded_tokens
    # Medians: a step now and then takes far longer on a shared machine (another process,
    # the allocator touching new memory), and a mean over a few steps would show that.
    return {"tokens_per_s": statistics.median(rates), "ms_per_step": 1e3 * statistics.median(seconds),
            "padding": 1.0 - tokens / padded, "tokens": tokens, "seconds": seconds}


def run(args, pieces, vocab_size, threads, log):
    """Times every variant; prints and returns the table's rows."""
    log(f"\ncompare: {args.compare_steps} training steps of {args.batch_size} sequences per "
        f"variant, timed after an untimed pass over the same batches; same initial model and "
        f"sequences, {threads} thread{'s' if threads > 1 else ''}")
    rows = []
    for label, rnn, batching in VARIANTS:
        r = time_variant(args, rnn, batching, pieces, vocab_size, threads)
        r["variant"] = label
        rows.append(r)
        log(f"  {label:<18} {r['tokens_per_s']:>9,.0f} tokens/s")
    base = rows[0]["tokens_per_s"]
    for r in rows:
        r["ratio"] = r["tokens_per_s"] / base
    log(f"\n{'variant':<18} {'real tokens/s':>13} {'padding':>8} {'ms/step':>9} "
        f"{'vs rnnx ragged':>15}")
    for r in rows:
        log(f"{r['variant']:<18} {r['tokens_per_s']:>13,.0f} {100 * r['padding']:>7.1f}% "
            f"{r['ms_per_step']:>9.1f} {r['ratio']:>14.2f}x")
    log("(medians over the timed steps: real tokens per second of a step, and its time; padded "
        "and bucketed variants run every sequence to its batch's longest length, the loss masked)")
    return rows
