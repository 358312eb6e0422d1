"""Sampling quotations from the model one character at a time, carrying the LSTM's (h, c)
from one call to the next, as a deployed model generates."""

import torch

import data


@torch.no_grad()
def quotations(model, vocab, n, max_chars, temperature, seed):
    """n quotations, each until the model ends it or max_chars characters."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    ids = torch.full((1, n), data.BOUNDARY, dtype=torch.int64)
    state = None
    out = [[] for _ in range(n)]
    done = [False] * n
    for _ in range(max_chars):
        logits, state = model(ids, None, state)  # one step of all n, state carried
        probs = torch.softmax(logits[-1].double() / temperature, dim=-1)
        ids = torch.multinomial(probs, 1, generator=gen).view(1, n)
        for b in range(n):
            c = int(ids[0, b])
            if not done[b]:
                if c == data.BOUNDARY:
                    done[b] = True
                else:
                    out[b].append(c)
        if all(done):
            break
    model.train()
    return [vocab.decode(o) for o in out]
