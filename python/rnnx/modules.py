"""rnnx.RNN, rnnx.LSTM, rnnx.GRU: a config and its weights, run on NumPy arrays.

The weights are one flat buffer (`weights`) in rnnx's layout, with views by PyTorch name
(`params`), so a torch.nn state_dict maps one to one. `forward(..., training=True)` keeps
what `backward` needs; `backward` then gives dx, dh0 (, dc0) and the weight gradients.
Plans are cached per sequence shape and buffers are reused across calls. ONNX's cell
options (reverse, peephole, gate_clip, input_forget, activations) and `from_onnx` /
`to_onnx` / `onnx_forward` cover ONNX's LSTM/GRU/RNN operators.
"""

import collections
import math as _pymath
import operator

import numpy as np

from . import _rnnx
from . import _runtime
from . import onnx as _onnx
from ._runtime import invalid

# NumPy has no bfloat16; rnnx.Plan takes bfloat16 tensors as their bits.
_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
           np.dtype(np.float16): "float16"}


def _dtype_name(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise _rnnx.UnsupportedError(f"dtype {dtype!r} is not a NumPy dtype (np.float32, "
                                     "np.float64 or np.float16)") from None
    if dt not in _DTYPES:
        raise _rnnx.UnsupportedError(f"dtype {dt} is not supported (float32, float64 or "
                                     "float16)")
    return _DTYPES[dt]


def _size_arg(value, name):
    """A size argument as an int. Like torch.nn, a float (2.5, or even 2.0) is refused
    rather than truncated, so a computed size that went wrong is not silently rounded."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r} "
                        f"({type(value).__name__})") from None
    if not -2 ** 63 <= n < 2 ** 63:  # the binding's int64 would refuse it without a name
        raise invalid(f"{name} (= {n}) is outside int64's range")
    return n


def _direction_args(direction, bidirectional, reverse):
    """(bidirectional, reverse) from the constructor's arguments; direction (ONNX's
    'forward', 'reverse' or 'bidirectional') is an alternative to the two flags."""
    bidirectional, reverse = bool(bidirectional), bool(reverse)
    if direction is None:
        return bidirectional, reverse
    b, r = _onnx.onnx_direction(direction)
    if (bidirectional and not b) or (reverse and not r):
        raise invalid(f"direction='{direction}' contradicts bidirectional={bidirectional}, "
                      f"reverse={reverse}")
    return b, r


class _Recurrent:
    """Common implementation; the public classes fix the cell."""

    _family = None  # 'rnn', 'lstm', 'gru'

    def __init__(self, cell, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, gru_linear_before_reset=True,
                 cell_clip=None, proj_clip=None, clip_nan="propagate", padding_fill=0.0, seed=0,
                 dtype=np.float32, backend=None, num_threads=0, init="uniform", rng=None,
                 reverse=False, peephole=False, gate_clip=0.0, input_forget=False,
                 activations=None, direction=None, math="from_environment"):
        self.batch_first = bool(batch_first)
        self.dtype = np.dtype(_dtype_name(dtype))
        bidirectional, reverse = _direction_args(direction, bidirectional, reverse)
        kwargs = dict(
            cell=cell, input_size=_size_arg(input_size, "input_size"),
            hidden_size=_size_arg(hidden_size, "hidden_size"),
            proj_size=_size_arg(proj_size, "proj_size"),
            num_layers=_size_arg(num_layers, "num_layers"), bidirectional=bidirectional,
            bias=bool(bias), gru_linear_before_reset=bool(gru_linear_before_reset),
            cell_clip=_runtime.clip_arg(cell_clip, "cell_clip"),
            proj_clip=_runtime.clip_arg(proj_clip, "proj_clip"), clip_nan=str(clip_nan),
            dropout=_runtime.real_arg(dropout, "dropout"), seed=_runtime.seed_arg(seed),
            dtype=_DTYPES[self.dtype], padding_fill=_runtime.real_arg(padding_fill, "padding_fill"),
            reverse=reverse, peephole=bool(peephole),
            gate_clip=_runtime.real_arg(gate_clip, "gate_clip"), input_forget=bool(input_forget),
            activations=activations, math=str(math))
        config = _rnnx.Config(**kwargs)  # parses and checks everything, activations included
        # Kept parsed, as a tuple of (name, alpha, beta): the engine caches configs by these
        # arguments, so they must be hashable.
        kwargs["activations"] = tuple(config.activations) or None
        self._config_kwargs = kwargs
        self._engine = _runtime.Engine(_runtime.resolve_backend(config, backend), num_threads)
        self.config, self._config_key = self._engine.config(**kwargs)
        self.weight_params = _runtime.layout(self.config)
        self.weights = np.zeros(self.config.weights_numel(), dtype=self.dtype)
        self.grad = None  # flat weight gradient of the last backward
        self.dropout_calls = 0  # dropout counter: advanced once per training forward
        self._saved = None
        if init == "uniform":
            # torch.nn's initialisation: U(-1/sqrt(H), 1/sqrt(H)) for every parameter.
            gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
            k = 1.0 / _pymath.sqrt(self.config.hidden_size)
            self.weights[:] = gen.uniform(-k, k, size=self.weights.size)
        elif init != "zeros":
            raise invalid(f"init '{init}' is not one of: uniform, zeros")

    # ---- configuration -------------------------------------------------------------------

    input_size = property(lambda self: self.config.input_size)
    hidden_size = property(lambda self: self.config.hidden_size)
    num_layers = property(lambda self: self.config.num_layers)
    bidirectional = property(lambda self: self.config.bidirectional)
    bias = property(lambda self: self.config.bias)
    dropout = property(lambda self: self.config.dropout)
    reverse = property(lambda self: self.config.reverse)
    gate_clip = property(lambda self: self.config.gate_clip)
    activations = property(lambda self: self.config.activations)
    backend = property(lambda self: self._engine.backend,
                       doc="The backend the module runs on ('cpu' or 'reference').")

    @property
    def direction(self):
        """ONNX's name of the direction: 'forward', 'reverse' or 'bidirectional'."""
        c = self.config
        return "bidirectional" if c.bidirectional else ("reverse" if c.reverse else "forward")

    @property
    def params(self):
        """OrderedDict name -> view of `weights` with PyTorch's shape (writes go through)."""
        return self._views(self.weights)

    def _views(self, flat):
        return collections.OrderedDict(
            (p.name, flat[p.offset:p.offset + p.numel].reshape(p.shape)) for p in self.weight_params)

    def state_dict(self):
        """Copies of the parameters, by PyTorch name and shape."""
        return collections.OrderedDict((k, v.copy()) for k, v in self.params.items())

    def load_state_dict(self, state_dict, strict=True, prefix=""):
        """Load from a mapping name -> array (NumPy arrays or torch tensors, e.g. a torch.nn
        module's state_dict()). `prefix` is stripped from the keys ('lstm.' for a submodule).
        With strict, missing and unexpected keys are errors."""
        if not hasattr(state_dict, "items"):
            raise invalid(f"load_state_dict: state_dict must be a mapping name -> array, got "
                          f"{type(state_dict).__name__}")
        own = self.params
        given = {}
        for key, value in state_dict.items():
            if prefix:
                if not key.startswith(prefix):
                    continue
                key = key[len(prefix):]
            given[key] = value
        missing = [k for k in own if k not in given]
        unexpected = [k for k in given if k not in own]
        if strict and (missing or unexpected):
            raise invalid(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, value in given.items():
            if name not in own:
                continue
            arr = _runtime.as_real_array(value, f"load_state_dict: {name}", self.dtype)
            if tuple(arr.shape) != own[name].shape:
                raise invalid(f"load_state_dict: {name} has shape {tuple(arr.shape)}, "
                              f"expected {own[name].shape}")
            own[name][...] = arr
        return missing, unexpected

    @classmethod
    def _from_onnx(cls, family, W, R, B, P, onnx_kwargs, ctor_kwargs):
        """The module for one ONNX LSTM/GRU/RNN node: its inputs W, R, B (, P) and its
        attributes (onnx_kwargs), with other constructor arguments in ctor_kwargs."""
        a = onnx_kwargs
        W, R, B, P = (_onnx._to_numpy(t, n) for t, n in ((W, "W"), (R, "R"), (B, "B"), (P, "P")))
        D, I, H = _onnx.onnx_sizes(family, W, R)
        if a.get("hidden_size") is not None and int(a["hidden_size"]) != H:
            raise invalid(f"hidden_size (= {a['hidden_size']}) must equal R dim 2 (= {H})")
        bidirectional, reverse = _onnx.onnx_direction(a.get("direction"), D)
        acts = _onnx.onnx_activations(a.get("activations"), a.get("activation_alpha"),
                                      a.get("activation_beta"))
        kw = dict(ctor_kwargs)
        for key in ("bidirectional", "reverse", "direction", "activations", "gate_clip",
                    "peephole", "input_forget", "num_layers", "bias"):
            if key in kw:
                raise invalid(f"from_onnx: {key} comes from the ONNX tensors and attributes; "
                              f"it cannot be passed as well")
        clip = a.get("clip")
        if clip is not None:
            if not _runtime.real_arg(clip, "clip") > 0:
                raise invalid(f"clip (= {clip}) must be > 0 (ONNX's gate clip threshold)")
            kw["gate_clip"] = float(clip)
        layout = int(a.get("layout") or 0)
        if layout not in (0, 1):
            raise invalid(f"layout (= {layout}) must be 0 ([T, B, ...]) or 1 ([B, T, ...])")
        if "batch_first" in kw and bool(kw["batch_first"]) != (layout == 1):
            raise invalid(f"batch_first={kw['batch_first']} contradicts layout={layout}")
        kw["batch_first"] = layout == 1
        if family == "lstm":
            if P is not None and P.shape != (D, 3 * H):
                raise invalid(f"P has shape {P.shape}, expected {(D, 3 * H)} "
                              "[num_directions, 3*hidden_size]")
            peephole = a.get("peephole")
            nonzero = P is not None and bool(np.any(P != 0))
            if peephole is None:
                peephole = nonzero
            elif not peephole and nonzero:
                raise invalid("P has non-zero peepholes but peephole=False")
            kw["peephole"] = bool(peephole)
            if not peephole:
                P = None
            kw["input_forget"] = bool(a.get("input_forget") or 0)
        elif P is not None:
            raise invalid(f"P (peepholes) is only defined for LSTM, not {family}")
        if acts is not None:
            kw["activations"] = acts
        kw.setdefault("dtype", W.dtype if W.dtype in _DTYPES else np.float32)
        module = cls(I, H, num_layers=1, bias=B is not None, bidirectional=bidirectional,
                     reverse=reverse, init="zeros", **kw)
        _rnnx.import_onnx_layer(module.config, 0, W, R, B, P, module.weights)
        return module

    def _check_onnx(self):
        c = self.config
        if c.num_layers != 1:
            raise _rnnx.UnsupportedError(f"ONNX RNN operators are single-layer; this module has "
                                         f"num_layers = {c.num_layers}")
        if c.proj_size:
            raise _rnnx.UnsupportedError("ONNX has no LSTM projection (proj_size > 0)")

    def to_onnx(self):
        """ONNX (W, R, B) of this single-layer module (B is None without bias), or
        (W, R, B, P) for an LSTM with peepholes. Arrays of the module's dtype."""
        self._check_onnx()
        W, R, B, P = _rnnx.export_onnx_layer(self.config, 0, self.weights)
        out = tuple(None if t is None else t.astype(self.dtype) for t in (W, R, B, P))
        return out if self.config.peephole else out[:3]

    def onnx_attributes(self):
        """ONNX's attributes of this module's operator (hidden_size, direction, layout,
        activations with activation_alpha/activation_beta, clip, input_forget,
        linear_before_reset), as keyword arguments that from_onnx accepts."""
        self._check_onnx()
        c = self.config
        a = dict(hidden_size=c.hidden_size, direction=self.direction,
                 layout=1 if self.batch_first else 0)
        if c.activations:
            # ONNX lists every direction's functions (LSTM: 3, or 6 if bidirectional).
            flat = [x for d in range(c.num_directions) for x in c.direction_activations(d)]
            names, alpha, beta = _onnx.activation_attributes(flat)
            a["activations"] = names
            if alpha:
                a["activation_alpha"] = alpha
            if beta:
                a["activation_beta"] = beta
        if c.gate_clip > 0:
            a["clip"] = c.gate_clip
        if c.cell == "lstm":
            a["input_forget"] = int(c.input_forget)
        if c.cell == "gru":
            a["linear_before_reset"] = int(c.gru_linear_before_reset)
        return a

    def onnx_forward(self, X, sequence_lens=None, initial_h=None, initial_c=None):
        """forward with ONNX's inputs and outputs: X [T, B, I] (layout 1, i.e. batch_first:
        [B, T, I]), sequence_lens [B], initial_h/initial_c [D, B, H] (layout 1: [B, D, H]).
        Returns (Y, Y_h) or, for LSTM, (Y, Y_h, Y_c): Y [T, D, B, H] (layout 1: [B, T, D, H]),
        Y_h/Y_c [D, B, H] (layout 1: [B, D, H]). Y is zero past each sequence's end."""
        self._check_onnx()
        c = self.config
        layout1 = self.batch_first

        def state(v, name):
            if v is None:
                return None
            v = _runtime.as_real_array(v, name, self.dtype)
            if v.ndim != 3:
                raise invalid(f"{name} must be 3-D, got shape {v.shape}")
            return np.swapaxes(v, 0, 1) if layout1 else v

        h0 = state(initial_h, "initial_h")
        lstm = c.cell == "lstm"
        hx = (h0, state(initial_c, "initial_c")) if lstm else h0
        if not lstm and initial_c is not None:
            raise invalid(f"initial_c given but the cell is {c.cell}")
        # Converted here so that a bad value is reported under ONNX's name for it.
        lengths = (None if sequence_lens is None
                   else _runtime.as_index_list(sequence_lens, "sequence_lens"))
        y, hy = self.forward(X, lengths=lengths, hx=hx, batch_first=layout1)
        y = y.reshape(y.shape[:2] + (c.num_directions, c.hidden_size))
        Y = y if layout1 else y.transpose(0, 2, 1, 3)
        states = hy if lstm else (hy,)
        states = tuple(np.ascontiguousarray(np.swapaxes(v, 0, 1)) if layout1 else v
                       for v in states)
        return (np.ascontiguousarray(Y),) + states

    # ---- shapes ----------------------------------------------------------------------------

    def _state_shape(self, batch, width):
        c = self.config
        return (c.num_layers * c.num_directions, batch, width)

    def _check_state(self, value, name, batch, width):
        if value is None:
            return None
        arr = _runtime.as_real_array(value, name, self.dtype)
        want = self._state_shape(batch, width)
        if arr.shape != want:
            raise invalid(f"{name} has shape {arr.shape}, expected {want} "
                          f"[num_layers * num_directions, batch, {width}]")
        return arr

    def _prepare(self, x, lengths, batch_first, batch_sizes, sorted_indices, purpose):
        """x as a dense array of the module's dtype, the plan (built for `purpose`), and the
        output shape."""
        c = self.config
        x = _runtime.as_real_array(x, "x", self.dtype)
        if batch_sizes is not None:
            if lengths is not None:
                raise invalid("give either lengths (padded x) or batch_sizes (packed x), not both")
            if x.ndim != 2:
                raise invalid(f"packed x must be 2-D [tokens, input_size], got shape {x.shape}")
            bs = _runtime.as_index_list(batch_sizes, "batch_sizes")
            si = None if sorted_indices is None else _runtime.as_index_list(sorted_indices,
                                                                             "sorted_indices")
            key = _runtime.shape_key_packed(bs, si)
            if x.shape[0] != sum(bs):
                raise invalid(f"x dim 0 (= {x.shape[0]}) must equal sum(batch_sizes) (= {sum(bs)})")
            batch = bs[0] if bs else 0
            y_shape = (x.shape[0], c.num_directions * c.output_size)
        else:
            if x.ndim != 3:
                raise invalid(f"x must be 3-D [T, B, input_size] (or [B, T, input_size] with "
                              f"batch_first), got shape {x.shape}")
            if batch_first:
                batch, T = x.shape[0], x.shape[1]
            else:
                T, batch = x.shape[0], x.shape[1]
            lens = None if lengths is None else _runtime.as_index_list(lengths, "lengths")
            key = _runtime.shape_key_padded(T, batch, lens, batch_first)
            y_shape = x.shape[:2] + (c.num_directions * c.output_size,)
        if x.shape[-1] != c.input_size:
            raise invalid(f"x dim {x.ndim - 1} (= {x.shape[-1]}) must equal input_size "
                          f"(= {c.input_size})")
        plan = self._engine.plan(self.config, self._config_key, key, purpose)
        return x, plan, batch, y_shape

    # ---- execution -------------------------------------------------------------------------

    def forward(self, x, lengths=None, hx=None, training=False, batch_first=None,
                batch_sizes=None, sorted_indices=None):
        """Run the network over x.

        x: [T, B, input_size] (or [B, T, input_size] with batch_first; the default is the
        module's), or packed rows [tokens, input_size] with batch_sizes (and optionally
        sorted_indices), as in PyTorch's PackedSequence. lengths: [B] in any order, 0 allowed.
        hx: h0 [L*D, B, P'] or, for LSTM, (h0, c0) with c0 [L*D, B, H]; None means zeros.
        training: apply dropout and keep what backward needs.
        Returns (y, hy) or, for LSTM, (y, (hy, cy)); y is [T, B, D*P'] (or as x).
        """
        c = self.config
        lstm = c.cell == "lstm"
        batch_first = self.batch_first if batch_first is None else bool(batch_first)
        x, plan, batch, y_shape = self._prepare(x, lengths, batch_first, batch_sizes, sorted_indices,
                                                "training" if training else "inference")
        h0, c0 = self._split_hx(hx)
        h0 = self._check_state(h0, "h0", batch, c.output_size)
        c0 = self._check_state(c0, "c0", batch, c.hidden_size) if lstm else None
        y = np.empty(y_shape, dtype=self.dtype)
        hy = np.empty(self._state_shape(batch, c.output_size), dtype=self.dtype)
        cy = np.empty(self._state_shape(batch, c.hidden_size), dtype=self.dtype) if lstm else None
        reserve = None
        counter = 0
        if training:
            self._saved = None  # its reserve goes back to the pool first
            reserve = _runtime.ReserveHandle(self._engine.reserves,
                                             self._engine.reserves.acquire(plan.reserve_size))
            counter = self.dropout_calls
            self.dropout_calls += 1
        self._engine.forward(plan, x, self.weights, y, h0=h0, c0=c0, hy=hy, cy=cy,
                             training=training, dropout_counter=counter,
                             reserve=None if reserve is None else reserve.buffer)
        if training:
            self._saved = dict(plan=plan, x=x, h0=h0, c0=c0, weights=self.weights, reserve=reserve,
                               y_shape=y_shape, batch=batch)
        return (y, (hy, cy)) if lstm else (y, hy)

    __call__ = forward

    def _split_hx(self, hx):
        if hx is None:
            return None, None
        if self.config.cell == "lstm":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise invalid("hx for LSTM must be a pair (h0, c0); either may be None")
            return hx[0], hx[1]
        if isinstance(hx, (tuple, list)):
            raise invalid(f"hx for {self.config.cell} must be one array h0, not a "
                          f"{type(hx).__name__}")
        return hx, None

    def backward(self, dy=None, dhy=None, dcy=None, accumulate=False):
        """Back-propagate through the last training forward.

        dy (shaped like y), dhy, dcy: gradients of the outputs; None means zero.
        Weight gradients go to `grad` (flat, overwritten, or added to with accumulate=True).
        Returns (dx, dh0, grads) or, for LSTM, (dx, dh0, dc0, grads); grads is an OrderedDict
        PyTorch name -> view of `grad`.
        """
        s = self._saved
        if s is None:
            raise invalid("backward: no training forward to back-propagate through; call "
                          "forward(..., training=True) first")
        c = self.config
        lstm = c.cell == "lstm"
        if not lstm and dcy is not None:
            raise invalid(f"backward: dcy given but the cell is {c.cell}")
        batch = s["batch"]
        if dy is not None:
            dy = _runtime.as_real_array(dy, "dy", self.dtype)
            if dy.shape != s["y_shape"]:
                raise invalid(f"dy has shape {dy.shape}, expected the shape of y {s['y_shape']}")
        dhy = self._check_state(dhy, "dhy", batch, c.output_size)
        dcy = self._check_state(dcy, "dcy", batch, c.hidden_size) if lstm else None
        dx = np.empty_like(s["x"])
        dh0 = np.empty(self._state_shape(batch, c.output_size), dtype=self.dtype)
        dc0 = np.empty(self._state_shape(batch, c.hidden_size), dtype=self.dtype) if lstm else None
        if accumulate and self.grad is not None and self.grad.shape == self.weights.shape:
            grad = self.grad
        else:
            grad = np.empty_like(self.weights)
            accumulate = False
        self._engine.backward(s["plan"], s["x"], s["weights"], s["reserve"].buffer, h0=s["h0"],
                              c0=s["c0"], dy=dy, dhy=dhy, dcy=dcy, dx=dx, dh0=dh0, dc0=dc0,
                              dweights=grad, accumulate=accumulate)
        self.grad = grad
        grads = self._views(grad)
        return (dx, dh0, dc0, grads) if lstm else (dx, dh0, grads)

    def zero_grad(self):
        self.grad = None

    @property
    def last_plan(self):
        """The plan of the last training forward (impl_name, problem_name, sizes)."""
        return None if self._saved is None else self._saved["plan"]

    def plan_for(self, x_shape, lengths=None, batch_first=None, purpose="training"):
        """The batch for a padded x of this shape on this module's network, used as a plan:
        forward(..., training=True) runs on the network made for 'training', forward(...) on
        the one for 'inference'."""
        batch_first = self.batch_first if batch_first is None else bool(batch_first)
        if len(x_shape) != 3:
            raise invalid(f"x_shape must be 3-D [T, B, input_size] (or [B, T, input_size] with "
                          f"batch_first), got {tuple(x_shape)}")
        T, B = (x_shape[1], x_shape[0]) if batch_first else (x_shape[0], x_shape[1])
        lens = None if lengths is None else _runtime.as_index_list(lengths, "lengths")
        return self._engine.plan(self.config, self._config_key,
                                 _runtime.shape_key_padded(T, B, lens, batch_first), purpose)

    @property
    def networks_built(self):
        """How many networks this module has made (one per purpose; every shape is a batch
        on one of them)."""
        return self._engine.networks_built

    def __repr__(self):
        return f"rnnx.{type(self).__name__}({self.config!r})"


_FROM_ONNX_DOC = """
        ONNX's attributes as keyword arguments (the names and values of the operator's
        attributes, so `**attrs` read from a node works; bytes are accepted for strings):
          direction      'forward' | 'reverse' | 'bidirectional' (None: from W dim 0)
          hidden_size    checked against R
          activations    ONNX names, per direction (once for all directions, or once each)
          activation_alpha, activation_beta
                         consumed in order by the activations that take them
          clip           gate clip threshold (> 0)
          layout         0: X [T, B, I]; 1: [B, T, I] (the module's batch_first)
        Other keyword arguments go to the constructor (dtype: W's by default, backend, ...).
        With backend None (the default) the module runs on the cpu backend, which runs every
        ONNX option (or on the reference backend should the cpu one refuse the config).
        onnx_forward() runs it on ONNX-shaped tensors."""


def _with_onnx_doc(f):
    if f.__doc__ is not None:  # None under python -OO
        f.__doc__ += _FROM_ONNX_DOC
    return f


class RNN(_Recurrent):
    """Elman RNN with tanh or ReLU, like torch.nn.RNN (nonlinearity='tanh' or 'relu').
    ONNX's options: reverse (or direction='reverse'), gate_clip, activations=[f] (per
    direction; names, (name, alpha, beta) tuples or dicts)."""

    _family = "rnn"

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise invalid(f"nonlinearity '{nonlinearity}' is not one of: tanh, relu")
        self.nonlinearity = nonlinearity
        super().__init__("rnn_" + nonlinearity, input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, **kwargs)

    @classmethod
    @_with_onnx_doc
    def from_onnx(cls, W, R, B=None, activation=None, *, activations=None, activation_alpha=None,
                  activation_beta=None, direction=None, hidden_size=None, clip=None, layout=0,
                  **kwargs):
        """From ONNX RNN weights W [D, H, I], R [D, H, H], B [D, 2H].
        activation='Tanh'|'Relu' is the one-name shorthand for activations=[...]."""
        if activation is not None:
            if activations is not None:
                raise invalid("give activation or activations, not both")
            activations = [activation]
        acts = _onnx.onnx_activations(activations, activation_alpha, activation_beta)
        if acts is not None and "nonlinearity" not in kwargs:
            # All Tanh or all Relu is torch.nn.RNN's own cell, which the cpu backend runs.
            kinds = {name for name, _, _ in acts}
            directions = np.shape(W)[0] if np.ndim(W) == 3 else 1
            if kinds in ({"Tanh"}, {"Relu"}) and len(acts) in (1, directions):
                kwargs["nonlinearity"] = kinds.pop().lower()
                activations = activation_alpha = activation_beta = None
        onnx_kwargs = dict(activations=activations, activation_alpha=activation_alpha,
                           activation_beta=activation_beta, direction=direction,
                           hidden_size=hidden_size, clip=clip, layout=layout)
        return cls._from_onnx("rnn", W, R, B, None, onnx_kwargs, kwargs)


class LSTM(_Recurrent):
    """LSTM like torch.nn.LSTM, with projection (proj_size), cell/projection clipping and
    a NaN policy (clip_nan). ONNX's options: reverse (or direction='reverse'), peephole
    (weights weight_peephole_l{k} [3H], order i, f, o), gate_clip, input_forget and
    activations=[f, g, h] (per direction)."""

    _family = "lstm"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, **kwargs):
        super().__init__("lstm", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size=proj_size, **kwargs)

    @property
    def proj_size(self):
        return self.config.proj_size

    peephole = property(lambda self: self.config.peephole)
    input_forget = property(lambda self: self.config.input_forget)

    @classmethod
    @_with_onnx_doc
    def from_onnx(cls, W, R, B=None, P=None, *, activations=None, activation_alpha=None,
                  activation_beta=None, direction=None, hidden_size=None, clip=None,
                  input_forget=0, layout=0, peephole=None, **kwargs):
        """From ONNX LSTM weights W [D, 4H, I], R [D, 4H, H], B [D, 8H] (gate order i, o, f, c;
        B = [Wb, Rb]) and peepholes P [D, 3H] (order i, o, f). input_forget as ONNX's
        attribute. peephole: None keeps P when it has a non-zero value (an all-zero P adds
        nothing, and without it the cpu backend can run the module); True keeps it anyway
        (P None: zero peepholes)."""
        onnx_kwargs = dict(activations=activations, activation_alpha=activation_alpha,
                           activation_beta=activation_beta, direction=direction,
                           hidden_size=hidden_size, clip=clip, input_forget=input_forget,
                           layout=layout, peephole=peephole)
        return cls._from_onnx("lstm", W, R, B, P, onnx_kwargs, kwargs)


class GRU(_Recurrent):
    """GRU like torch.nn.GRU (gru_linear_before_reset=True, the default) or the original
    GRU (False: ONNX's default linear_before_reset = 0). ONNX's options: reverse (or
    direction='reverse'), gate_clip, activations=[f, g] (per direction)."""

    _family = "gru"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, **kwargs):
        super().__init__("gru", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, **kwargs)

    @classmethod
    @_with_onnx_doc
    def from_onnx(cls, W, R, B=None, linear_before_reset=0, *, activations=None,
                  activation_alpha=None, activation_beta=None, direction=None, hidden_size=None,
                  clip=None, layout=0, **kwargs):
        """From ONNX GRU weights W [D, 3H, I], R [D, 3H, H], B [D, 6H] (gate order z, r, h);
        linear_before_reset as ONNX's attribute (default 0: the original GRU)."""
        kwargs["gru_linear_before_reset"] = bool(linear_before_reset)
        onnx_kwargs = dict(activations=activations, activation_alpha=activation_alpha,
                           activation_beta=activation_beta, direction=direction,
                           hidden_size=hidden_size, clip=clip, layout=layout)
        return cls._from_onnx("gru", W, R, B, None, onnx_kwargs, kwargs)
