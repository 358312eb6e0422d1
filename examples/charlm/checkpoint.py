"""The checkpoint: the model's state_dict (the LSTM's parameters under torch.nn.LSTM's
names), the vocabulary and the model's sizes, loadable with an rnnx or a torch LSTM."""

import torch

import data
from model import CharLM

MODEL_FLAGS = ("embed", "hidden", "proj", "layers", "dropout", "cell_clip")


def save(path, model, vocab, args, val_bpc):
    torch.save({"state_dict": model.state_dict(), "chars": vocab.chars,
                "model": {k: getattr(args, k) for k in MODEL_FLAGS}, "val_bpc": val_bpc}, path)


def load(path, rnn="rnnx"):
    """(model, vocab) from a checkpoint, with rnnx.torch.LSTM or torch.nn.LSTM inside."""
    saved = torch.load(path)
    vocab = data.Vocab(saved["chars"])
    m = saved["model"]
    model = CharLM(len(vocab), m["embed"], m["hidden"], m["proj"], m["layers"], m["dropout"],
                   m["cell_clip"], rnn=rnn)
    model.load_state_dict(saved["state_dict"])
    return model, vocab
