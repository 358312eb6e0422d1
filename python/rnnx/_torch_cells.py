"""rnnx.torch's cells: torch.nn.RNNCell, LSTMCell and GRUCell on rnnx.

Each subclasses torch.nn's cell (same constructor arguments, parameters weight_ih, weight_hh,
bias_ih, bias_hh, state_dict and outputs) and runs a call as one step of the one-layer
sequence module (rnnx.torch.RNN/LSTM/GRU) whose parameters are the cell's own tensors: the same
operator, its cached inference call, autograd, torch.compile, export and autocast. steps() runs
several steps at once for a decoder that knows them (teacher forcing, a prompt), with lengths=
for a ragged batch.
"""

import torch

from . import _rnnx
from ._runtime import invalid
from ._torch_ops import compiling as _compiling

class _CellSizeError(_rnnx.InvalidArgumentError, RuntimeError):
    """A size that does not fit the cell: rnnx's InvalidArgumentError (a ValueError) that is
    also the RuntimeError torch.nn's cells raise."""


_CELL_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
_SEQ_NAMES = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
def _drop_part_keys(module, state_dict, prefix, local_metadata):
    for key in [k for k in state_dict if k.startswith(prefix + "_rnnx_seq.")]:
        del state_dict[key]
    return state_dict


def _forgive_part_keys(module, incompatible_keys):
    missing = incompatible_keys.missing_keys
    missing[:] = [k for k in missing if "_rnnx_seq." not in k]


class _RnnxCell:
    """The rnnx part of the cells; mixed in before torch.nn's cell."""

    def _rnnx_cell_init(self, seq_cls, **seq_kwargs):
        # Built on the meta device: it allocates nothing, and takes the cell's parameters next.
        # bool(bias): torch.nn's cells take any truthy value there (RNNCell(10, 20, 'relu')
        # is a bias), its sequence modules only a bool.
        seq = seq_cls(self.input_size, self.hidden_size, num_layers=1, bias=bool(self.bias),
                      device="meta", dtype=self.weight_ih.dtype, **seq_kwargs)
        # A submodule (torch.compile traces only registered ones) whose parameters are the
        # cell's own tensors: parameters() and named_parameters() list each once, under the
        # cell's names; state_dict() leaves its copies out and load_state_dict() does not ask
        # for them (the hooks below).
        self._rnnx_seq = seq
        self._register_state_dict_hook(_drop_part_keys)
        if hasattr(self, "register_load_state_dict_post_hook"):
            self.register_load_state_dict_post_hook(_forgive_part_keys)
        self._rnnx_share()

    def _rnnx_share(self):
        """Makes the sequence module's parameters the cell's current tensors (a parameter
        replaced, load_state_dict(assign=True), functional_call), then views of one flat
        buffer as the sequence module keeps them."""
        seq = self._rnnx_seq
        names = _CELL_NAMES if self.bias else _CELL_NAMES[:2]
        params = seq._parameters
        if all(params[s] is getattr(self, c) for c, s in zip(names, _SEQ_NAMES)):
            return seq
        for c, s in zip(names, _SEQ_NAMES):
            params[s] = getattr(self, c)  # plain tensors too (functional_call, torch.func)
        seq._flat_weights = [params[n] for n in seq._flat_weights_names]
        seq.__dict__.pop("_rnnx_fast", None)  # the cached call kept the old tensors
        seq.flatten_parameters()
        return seq

    def _apply(self, fn, *args, **kwargs):
        # .to(), .double(), .cuda(), to_empty(): the parameters' data moved; the sequence
        # module's flat buffer follows, as torch.nn.RNNBase's does after _apply.
        out = super()._apply(fn, *args, **kwargs)
        seq = self._modules.get("_rnnx_seq")
        if seq is not None:
            seq._flat_weights = [seq._parameters[n] for n in seq._flat_weights_names]
            seq.__dict__.pop("_rnnx_fast", None)
            self._rnnx_share()
            seq.flatten_parameters()
        return out

    def _rnnx_states(self, hx, batch, unbatched, lstm, input_size):
        """The cell's state (B, H) or (H,) as the sequence module's (1, B, H), checked as
        torch.nn's cells check it, with their messages: a state's rank (ValueError), then the
        sizes (_CellSizeError, a ValueError and a RuntimeError, as torch's are RuntimeErrors)."""
        cls = type(self).__name__
        if input_size != self.input_size:
            raise _CellSizeError(f"{cls}: input has inconsistent input_size: got {input_size} "
                                 f"expected {self.input_size}")
        if hx is None:
            return None
        if lstm and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise invalid(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
        states = list(hx) if lstm else [hx]
        for k, t in enumerate(states):
            what = f"hx[{k}]" if lstm else "hidden"
            if not isinstance(t, torch.Tensor) or t.dim() not in (1, 2):
                got = f"{t.dim()}D" if isinstance(t, torch.Tensor) else type(t).__name__
                raise invalid(f"{cls}: Expected {what} to be 1D or 2D, got {got} instead")
        for k, t in enumerate(states):
            if t.shape[-1] != self.hidden_size:
                raise _CellSizeError(f"{cls}: hidden{k} has inconsistent hidden_size: got "
                                     f"{t.shape[-1]}, expected {self.hidden_size}")
            rows = 1 if t.dim() == 1 else t.shape[0]
            if t.dim() != (1 if unbatched else 2) or rows != batch:
                raise _CellSizeError(f"{cls}: Input batch size {batch} doesn't match hidden{k} "
                                     f"batch size {rows}")
        shaped = [t.reshape(1, batch, t.shape[-1]) for t in states]
        return tuple(shaped) if lstm else shaped[0]

    def forward(self, input, hx=None):
        """torch.nn's cell call: input (B, input_size) or (input_size,), hx likewise (an
        (h, c) tuple for LSTMCell, zeros when None); returns h' (LSTMCell: (h', c'))."""
        seq = self._rnnx_seq
        fast = seq.__dict__.get("_rnnx_fast")
        if (fast is not None and type(input) is torch.Tensor and input.dim() == 2
                and not _compiling()):
            out = self._rnnx_fast_step(seq, fast, input, hx)
            if out is not None:
                return out
        if not _compiling():  # a compiled graph reads the tensors it was traced with
            self._rnnx_share()
        if not isinstance(input, torch.Tensor) or input.dim() not in (1, 2):
            got = f"{input.dim()}D" if isinstance(input, torch.Tensor) else type(input).__name__
            raise invalid(f"{type(self).__name__}: Expected input to be 1D or 2D, got {got} "
                          "instead")
        unbatched = input.dim() == 1
        batch = 1 if unbatched else input.shape[0]
        lstm = isinstance(self, torch.nn.LSTMCell)
        state = self._rnnx_states(hx, batch, unbatched, lstm, input.shape[-1])
        _, state = seq(input.reshape(1, batch, input.shape[-1]), state)
        shape = (self.hidden_size,) if unbatched else (batch, self.hidden_size)
        if lstm:
            return (state[0].reshape(shape), state[1].reshape(shape))
        return state.reshape(shape)

    def _rnnx_fast_step(self, seq, fast, input, hx):
        """A batched step like the sequence module's last cached call (its _rnnx_fast_call,
        which checks the rest), when the part still holds this cell's parameters and the
        states are 2-D tensors: the checks of the full call and two Module calls skipped.
        None when it does not apply."""
        mine, its = self._parameters, seq._parameters
        for c, q in zip(_CELL_NAMES if self.bias else _CELL_NAMES[:2], _SEQ_NAMES):
            if mine.get(c) is not its.get(q):
                return None
        return seq._rnnx_fast_call(fast, input, hx, cell=True)

    def steps(self, input, hx=None, lengths=None):
        """Several steps at once: input (T, B, input_size) time-major (or (T, input_size)),
        hx as forward's; returns (outputs (T, B, H), the last state as forward returns it),
        the same as calling the cell T times. lengths= [B] for a padded batch: each
        sequence's outputs past its length hold 0 and its state is its own last one."""
        seq = self._rnnx_seq
        if not _compiling():
            self._rnnx_share()
        if not isinstance(input, torch.Tensor) or input.dim() not in (2, 3):
            got = f"{input.dim()}-D" if isinstance(input, torch.Tensor) else type(input).__name__
            raise invalid(f"{type(self).__name__}.steps: input must be 3-D (T, B, input_size) "
                          f"or 2-D (T, input_size), got {got}")
        unbatched = input.dim() == 2
        batch = 1 if unbatched else input.shape[1]
        x = input.unsqueeze(1) if unbatched else input
        lstm = isinstance(self, torch.nn.LSTMCell)
        y, state = seq(x, self._rnnx_states(hx, batch, unbatched, lstm, input.shape[-1]),
                       lengths=lengths)
        shape = (self.hidden_size,) if unbatched else (batch, self.hidden_size)
        if unbatched:
            y = y.squeeze(1)
        if lstm:
            return y, (state[0].reshape(shape), state[1].reshape(shape))
        return y, state.reshape(shape)

    @property
    def rnnx_backend(self):
        """The backend the cell's calls run on."""
        return self._rnnx_seq.rnnx_backend

    def __repr__(self):
        # torch.nn's cell's, without the part.
        return f"{type(self).__name__}({self.extra_repr()})"


def _make_cells(LSTM, GRU, RNN):
    """The cell classes over rnnx.torch's sequence modules (torch.py defines those first)."""

    class LSTMCell(_RnnxCell, torch.nn.LSTMCell):
        """torch.nn.LSTMCell on rnnx. Extras: cell_clip=(lo, hi), clip_nan, backend,
        num_threads, math; steps() for several steps."""

        def __init__(self, *args, cell_clip=None, clip_nan="propagate", backend=None,
                     num_threads=0, math="from_environment", **kwargs):
            super().__init__(*args, **kwargs)
            self._rnnx_cell_init(LSTM, cell_clip=cell_clip, clip_nan=clip_nan, backend=backend,
                                 num_threads=num_threads, math=math)

    class GRUCell(_RnnxCell, torch.nn.GRUCell):
        """torch.nn.GRUCell on rnnx. Extras: gru_linear_before_reset (True: PyTorch's cell),
        backend, num_threads, math; steps() for several steps."""

        def __init__(self, *args, gru_linear_before_reset=True, backend=None, num_threads=0,
                     math="from_environment", **kwargs):
            super().__init__(*args, **kwargs)
            self._rnnx_cell_init(GRU, gru_linear_before_reset=gru_linear_before_reset,
                                 backend=backend, num_threads=num_threads, math=math)

    class RNNCell(_RnnxCell, torch.nn.RNNCell):
        """torch.nn.RNNCell (nonlinearity='tanh'|'relu') on rnnx. Extras: backend,
        num_threads, math; steps() for several steps."""

        def __init__(self, *args, backend=None, num_threads=0, math="from_environment",
                     **kwargs):
            super().__init__(*args, **kwargs)
            self._rnnx_cell_init(RNN, nonlinearity=self.nonlinearity, backend=backend,
                                 num_threads=num_threads, math=math)

    for cls in (LSTMCell, GRUCell, RNNCell):  # pickled by the names rnnx.torch gives them
        cls.__module__ = "rnnx.torch"
        cls.__qualname__ = cls.__name__
    return LSTMCell, GRUCell, RNNCell
