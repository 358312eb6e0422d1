"""The data of the character-level language model: Debian's fortunes (one quotation per
sequence), a seeded split by quotation, a character vocabulary, the length cap, and the
three ways of forming batches (ragged as they come, and length-bucketed)."""

import math
import os
import random
from dataclasses import dataclass

import torch

FORTUNES_DIR = "/usr/share/games/fortunes"
BOUNDARY = 0  # starts every quotation's input and ends its targets
UNKNOWN = 1  # characters the training split never shows
IGNORE = -100  # target at padding: cross-entropy skips it


class DataError(Exception):
    """The data folder is missing or holds no quotations."""


def load_quotations(folder=FORTUNES_DIR):
    """Every quotation of a fortune folder: its files split on lines holding only '%',
    skipping the .dat index files and the .u8 duplicates, blank quotations dropped."""
    if not os.path.isdir(folder):
        raise DataError(f"data folder {folder} does not exist: install Debian's fortunes "
                        "package (apt-get install fortunes) or pass --data FOLDER")
    quotations, files = [], 0
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith((".dat", ".u8")) or name.startswith(".") or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        files += 1
        current = []
        for line in text.split("\n") + ["%"]:
            if line == "%":
                quotation = "\n".join(current).strip("\n")
                if quotation.strip():
                    quotations.append(quotation)
                current = []
            else:
                current.append(line)
    if not quotations:
        raise DataError(f"data folder {folder} holds no quotations ({files} files read; "
                        "expected text files of quotations separated by lines holding '%')")
    return quotations


def split(quotations, val_fraction, seed):
    """(train, val): a seeded random split by quotation."""
    if not 0.0 < val_fraction < 1.0:
        raise DataError(f"--val-fraction (= {val_fraction}) must lie in (0, 1)")
    order = list(range(len(quotations)))
    random.Random(seed).shuffle(order)
    n_val = max(1, int(round(val_fraction * len(quotations))))
    if n_val >= len(quotations):
        raise DataError(f"{len(quotations)} quotations are too few to split off {n_val} for validation")
    return [quotations[i] for i in order[n_val:]], [quotations[i] for i in order[:n_val]]


class Vocab:
    """Characters of the training split, most frequent first, after BOUNDARY and UNKNOWN."""

    def __init__(self, chars):
        self.chars = list(chars)
        self.index = {c: i + 2 for i, c in enumerate(self.chars)}

    @classmethod
    def from_texts(cls, texts):
        counts = {}
        for t in texts:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        return cls(sorted(counts, key=lambda c: (-counts[c], c)))

    def __len__(self):
        return len(self.chars) + 2

    def encode(self, text):
        return [self.index.get(c, UNKNOWN) for c in text]

    def decode(self, ids):
        return "".join(self.chars[i - 2] if i >= 2 else "" for i in ids)


@dataclass
class Piece:
    """One training sequence: inputs and targets of equal length (targets shifted by one)."""
    inputs: list
    targets: list

    def __len__(self):
        return len(self.inputs)


@dataclass
class CapReport:
    quotations: int
    cut: int  # quotations longer than the cap
    pieces: int  # sequences after cutting
    tokens: int  # targets (real tokens), the same before and after cutting


def make_pieces(texts, vocab, cap):
    """Each quotation becomes inputs [BOUNDARY, c1..cn], targets [c1..cn, BOUNDARY]; one
    longer than `cap` is cut into consecutive pieces of at most `cap` (each piece starts
    from a zero state; nothing is dropped)."""
    if cap < 1:
        raise DataError(f"--cap (= {cap}) must be at least 1")
    pieces, cut = [], 0
    for t in texts:
        ids = [BOUNDARY] + vocab.encode(t) + [BOUNDARY]
        inputs, targets = ids[:-1], ids[1:]
        if len(inputs) > cap:
            cut += 1
        for start in range(0, len(inputs), cap):
            pieces.append(Piece(inputs[start:start + cap], targets[start:start + cap]))
    report = CapReport(len(texts), cut, len(pieces), sum(len(p) for p in pieces))
    return pieces, report


@dataclass
class Batch:
    """Time-major padded tensors of a batch, and each sequence's length."""
    inputs: torch.Tensor  # [T, B] int64, BOUNDARY at padding
    targets: torch.Tensor  # [T, B] int64, IGNORE at padding
    lengths: list

    @property
    def tokens(self):
        return sum(self.lengths)

    @property
    def padded_tokens(self):
        return self.inputs.shape[0] * self.inputs.shape[1]


def collate(pieces):
    """The pieces as a padded batch; no pieces (a data-parallel rank's share of a batch
    smaller than the number of ranks) gives an empty batch of one step."""
    T = max((len(p) for p in pieces), default=1)
    inputs = torch.full((T, len(pieces)), BOUNDARY, dtype=torch.int64)
    targets = torch.full((T, len(pieces)), IGNORE, dtype=torch.int64)
    for b, p in enumerate(pieces):
        inputs[:len(p), b] = torch.tensor(p.inputs)
        targets[:len(p), b] = torch.tensor(p.targets)
    return Batch(inputs, targets, [len(p) for p in pieces])


def batch_order(pieces, batch_size, batching, rng):
    """One epoch's batches as lists of piece indices. 'ragged' and 'padded': a shuffle cut
    into batches, lengths mixed as they come. 'bucketed': as the usual bucket iterators do,
    pools of 50 batches sorted by length and cut into batches of similar lengths, the batch
    order shuffled."""
    order = list(range(len(pieces)))
    rng.shuffle(order)
    if batching == "bucketed":
        pool = 50 * batch_size
        order = [i for start in range(0, len(order), pool)
                 for i in sorted(order[start:start + pool], key=lambda i: len(pieces[i]))]
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if batching == "bucketed":
        rng.shuffle(batches)
    return batches


def unigram_bits(train_pieces, val_pieces, vocab_size):
    """Bits per character of the validation targets under the training targets' character
    frequencies (add-one smoothed): the score a model that ignores context gets."""
    counts = [1] * vocab_size
    for p in train_pieces:
        for t in p.targets:
            counts[t] += 1
    total = sum(counts)
    bits, n = 0.0, 0
    for p in val_pieces:
        for t in p.targets:
            bits -= math.log2(counts[t] / total)
            n += 1
    return bits / max(n, 1)
