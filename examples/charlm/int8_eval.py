"""The trained model evaluated in int8 beside float32 (docs/int8.md): the LSTM quantised in one
call (rnnx.torch.quantize_dynamic: its float parameters stay the model's), the validation
bits per character and inference speed of both, on the same batches."""

import time

import torch

from train import evaluate


def timed_bits(model, pieces, batch_size):
    """Validation bits per character and real tokens per second (one pass after an untimed
    one: the first quantises and packs the weights and searches each new batch shape)."""
    evaluate(model, pieces, batch_size)
    t0 = time.perf_counter()
    bits = evaluate(model, pieces, batch_size)
    return bits, sum(len(p) for p in pieces) / (time.perf_counter() - t0)


def compare(model, val_pieces, batch_size, log):
    """Logs float32 and int8 validation bits per character and tokens per second; returns
    (float bits, int8 bits) or None where this machine refuses int8 (no VNNI)."""
    import rnnx
    import rnnx.torch

    if model.rnn_kind != "rnnx":
        return None
    where = rnnx.build_info()["int8_gemm"]
    if where == "none":
        log("int8: not run: this CPU (or RNNX_CPU_ISA) has no AVX512-VNNI or AVX-VNNI, which "
            "math='int8' needs (rnnx info)")
        return None
    quantized = rnnx.torch.quantize_dynamic(model)
    with torch.no_grad():
        fp_bits, fp_rate = timed_bits(model, val_pieces, batch_size)
        q_bits, q_rate = timed_bits(quantized, val_pieces, batch_size)
    model.train()
    log(f"int8 ({where}): validation {q_bits:.3f} bits/char vs float32 {fp_bits:.3f} "
        f"({q_bits - fp_bits:+.4f}); inference {q_rate:,.0f} vs {fp_rate:,.0f} tokens/s "
        f"({q_rate / fp_rate:.2f}x)")
    return fp_bits, q_bits
