"""The character-level language model: embedding -> LSTM (2 layers, projection, dropout
between layers, cell clipping) -> linear over the vocabulary. The LSTM is rnnx's drop-in
rnnx.torch.LSTM, or torch.nn.LSTM to show what it replaces; the parameter names are
torch.nn.LSTM's either way, so a checkpoint loads into both."""

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def make_lstm(rnn, embed, hidden, proj, layers, dropout, cell_clip, num_threads):
    kwargs = dict(num_layers=layers, proj_size=proj, dropout=dropout if layers > 1 else 0.0)
    if rnn == "torch":
        # torch.nn.LSTM has no cell clipping: it runs without (the clip rarely binds).
        return torch.nn.LSTM(embed, hidden, **kwargs)
    import rnnx.torch  # imported here so that --rnn torch runs without rnnx built
    clip = None if cell_clip is None or cell_clip <= 0 else (-cell_clip, cell_clip)
    return rnnx.torch.LSTM(embed, hidden, cell_clip=clip, num_threads=num_threads, **kwargs)


class CharLM(torch.nn.Module):
    def __init__(self, vocab_size, embed=64, hidden=256, proj=128, layers=2, dropout=0.1,
                 cell_clip=50.0, rnn="rnnx", num_threads=0):
        super().__init__()
        self.rnn_kind = rnn
        self.embed = torch.nn.Embedding(vocab_size, embed)
        self.lstm = make_lstm(rnn, embed, hidden, proj, layers, dropout, cell_clip, num_threads)
        self.head = torch.nn.Linear(proj if proj > 0 else hidden, vocab_size)

    def forward(self, inputs, lengths=None, state=None):
        """inputs [T, B] character ids; lengths [B] (any order) or None for a batch run
        padded to its full length. Returns logits [T, B, V] and the final (h, c)."""
        x = self.embed(inputs)
        if lengths is None:
            y, state = self.lstm(x, state)
        elif self.rnn_kind == "torch":
            # What torch.nn.LSTM needs for variable lengths: pack, run, unpack.
            packed = pack_padded_sequence(x, torch.as_tensor(lengths), enforce_sorted=False)
            y, state = self.lstm(packed, state)
            y, _ = pad_packed_sequence(y, total_length=inputs.shape[0])
        else:
            y, state = self.lstm(x, state, lengths=lengths)
        return self.head(y), state
