"""rnnx.torch: drop-in torch.nn.LSTM / GRU / RNN that run on rnnx.

They subclass torch.nn.LSTM/GRU/RNN: same constructor arguments, same parameters under
the same names (load_state_dict from a torch.nn module works), same outputs, plus rnnx's
extras (cell_clip, proj_clip, clip_nan, gru_linear_before_reset, padding_fill, seed, and
ONNX's cell options reverse, peephole, gate_clip, input_forget, activations) and
forward(input, hx=None, lengths=None) for padded batches of variable-length sequences.
On PyTorch 2.4+ they call the dispatcher operators torch.ops.rnnx.forward/backward
(_torch_ops.py: fake kernels and autograd, so torch.compile and torch.export see them);
before 2.4, and under torch.func's transforms, a torch.autograd.Function
(_torch_function.py).

Zero-copy: CPU tensors are handed to rnnx through NumPy views (the buffer protocol). The
parameters are views into one flat tensor in rnnx's layout (flatten_parameters(), redone
after .to()/.double()); if something breaks that (weight_norm, a reassigned parameter),
the weights are gathered into a temporary flat buffer per call instead.

CUDA tensors (a module moved with .cuda()/.to("cuda")) run rnnx's cuda backend on the
tensors' device and PyTorch's current stream, with outputs, workspace and reserve from
PyTorch's caching allocator (docs/cuda.md; a build without the backend refuses them).
"""

import itertools
import math
import weakref

import torch
from torch.nn.utils.rnn import PackedSequence

from . import _rnnx
from . import _runtime
from . import _torch_onnx
from . import _torch_ops
from ._runtime import invalid
from ._torch_function import training_forward as _function_training_forward
from ._torch_ops import _functorch_active, dense as _dense
from ._torch_ops import compiling as _compiling, dispatch_modes_active as _dispatch_modes_active

# Identities of the weights the cached eager inference call keeps (_rnnx_remember_fast).
_weights_tokens = itertools.count(1)


def _weights_version(token, weights):
    """ForwardArgs::weights_version from a remembering's token (24 bits, wrapping after 16
    million rememberings: a uint64 must hold it) and the sum of the tensors' version
    counters (40 bits), which every in-place change advances; never 0."""
    return (((token - 1) % ((1 << 24) - 1) + 1) << 40) | (
        sum(w._version for w in weights) & ((1 << 40) - 1))

__all__ = ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "onnx_translation_table"]

_torch_ops.register()  # torch.ops.rnnx.forward/backward, on PyTorch 2.4 and later


def onnx_translation_table():
    """For torch.onnx.export(..., dynamo=True, custom_translation_table=this): rnnx's
    operator as ONNX's LSTM/GRU/RNN nodes (_torch_onnx.py says what cannot be exported)."""
    return _torch_onnx.translation_table()


def _constant_when_compiling(fn):
    """fn's result taken as a constant by torch.compile (it calls into rnnx, which Dynamo
    cannot trace); plain fn on PyTorch without it."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "assume_constant_result"):
        return compiler.assume_constant_result(fn)
    return fn


def _batch_of_states(hx):
    """The batch of a packed input whose batch_sizes cannot be read (when compiling, without
    sorted_indices): the initial state's, or None when there is none."""
    h0 = hx[0] if isinstance(hx, (tuple, list)) else hx
    return None if h0 is None else h0.shape[-2]

# bfloat16 and float16 run on the CPU (rnnx's 16-bit data path) and on CUDA (cuDNN).
_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16",
           torch.float16: "float16"}


_get_autocast_dtype = getattr(torch, "get_autocast_dtype", None)


def _autocast_dtype(device_type):
    """The dtype torch.autocast(device_type) casts to when it is on here, else None. The
    functions were renamed in PyTorch 2.4 (the old ones warn there); both spellings are
    taken."""
    if _get_autocast_dtype is not None:
        return (_get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type)
                else None)
    if device_type == "cpu":
        return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
    return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
_CELLS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}
# The Config fields each call sets (_rnnx_make_config); the module's attributes give the rest.
_CALL_FIELDS = frozenset(("cell", "dtype", "dropout", "seed"))


def _cast_states(hx, dtype):
    """hx (None, a tensor, or LSTM's (h_0, c_0)) with its float32 tensors cast to dtype."""
    def cast(t):
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t
    if isinstance(hx, (tuple, list)):
        return type(hx)(cast(t) for t in hx)
    return cast(hx)


def _forward_route(compiling, needs_grad):
    """The one place that decides how a module's forward (a call its cached call did not
    take) reaches rnnx's kernels: (a callable with torch.ops.rnnx.forward's arguments and
    results, whether the call may be remembered as the module's cached call). Every route
    runs the same kernels (_torch_ops.forward_kernel and _backward); docs/python.md,
    "Routes", gives each one's reason and cost.
    * Inference with nothing watching (no compiler, vmap or dispatch mode), and any
      inference on PyTorch before 2.4 or under torch.func: the operator's kernel itself.
    * Training on PyTorch before 2.4 or under torch.func's grad transforms (which
      differentiate a Function with setup_context, not a torch.library operator's
      autograd): _torch_function's Function.
    * Eager training with nothing watching: the operator's autograd entered directly
      (_torch_ops._EagerForward), whose forward calls the kernel itself.
    * Everything else (torch.compile, torch.export, vmap, dispatch modes such as
      FlopCounterMode): the dispatcher operator, torch.ops.rnnx.forward."""
    vmapped = _torch_ops.vmap_only()  # torch.vmap alone: the operators' vmap rules (2.5+)
    function_path = not (_torch_ops.AVAILABLE and (vmapped or not _functorch_active()))
    eager = not (compiling or vmapped or _dispatch_modes_active())
    if (eager or function_path) and not needs_grad:
        return _torch_ops.forward_kernel, not function_path
    if function_path:
        return _function_training_forward, False
    if eager:
        return _torch_ops.eager_training_forward, True
    return torch.ops.rnnx.forward, False


def _check_tensor(t, name):
    if not isinstance(t, torch.Tensor):
        raise invalid(f"{name} must be a tensor, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise invalid(f"{name} must be a dense (strided) tensor, got layout {t.layout}")


class _RnnxModule:
    """The rnnx part of LSTM/GRU/RNN; mixed in before torch.nn.LSTM/GRU/RNN."""

    def _rnnx_init(self, cell_clip, proj_clip, clip_nan, gru_linear_before_reset, padding_fill,
                   seed, backend, num_threads, reverse=False, peephole=False, gate_clip=0.0,
                   input_forget=False, activations=None, math="from_environment"):
        # Checked now (rnnx.InvalidArgumentError naming it), used by every plan.
        _rnnx.Config(cell="lstm", input_size=1, hidden_size=1, math=str(math))
        self.math = str(math)
        self.reverse = bool(reverse)
        self.peephole = bool(peephole)
        self.gate_clip = _runtime.real_arg(gate_clip, "gate_clip")
        self.input_forget = bool(input_forget)
        self.activations = None
        if activations is not None:
            # Parsed (and checked) by the binding; kept as a hashable tuple of (name, alpha,
            # beta) because the engine caches configs by their arguments.
            parsed = _rnnx.Config(cell=_CELLS[self.mode], input_size=1, hidden_size=1,
                                  bidirectional=bool(self.bidirectional),
                                  activations=activations).activations
            self.activations = tuple(parsed) or None
        self.cell_clip = _runtime.clip_arg(cell_clip, "cell_clip")
        self.proj_clip = _runtime.clip_arg(proj_clip, "proj_clip")
        self.clip_nan = str(clip_nan)  # the binding names a bad one; None would be a TypeError
        self.gru_linear_before_reset = bool(gru_linear_before_reset)
        self.padding_fill = _runtime.real_arg(padding_fill, "padding_fill")
        # None: drawn from torch's generator at the first call that applies dropout, so
        # torch.manual_seed makes runs reproducible; an int fixes the masks outright.
        self.seed = None if seed is None else _runtime.seed_arg(seed)
        self.dropout_calls = 0  # dropout counter: each training call gets a new mask
        if self.peephole:
            self._rnnx_add_peepholes()
        self._rnnx_num_threads = _runtime.count_arg(num_threads, "num_threads")
        self._rnnx_layouts = {}
        self._rnnx_flat = None
        # The engine needs the backend, and the backend (None: cpu, which runs every option;
        # _runtime.resolve_backend) needs the config; the first config is built without one.
        self._rnnx_engine = _runtime.Engine("cpu", num_threads, threads_from=torch.get_num_threads)
        # Refuse a bad configuration now rather than at the first forward. A module built in
        # a dtype rnnx cannot run (dtype=torch.complex64) is checked as float32: like torch.nn,
        # it may be built so and converted with .float() before it runs.
        dtype = self._flat_weights[0].dtype if self._flat_weights else torch.float32
        cfg, _, _ = self._rnnx_config(dtype if dtype in _DTYPES else torch.float32, 0.0)
        self._rnnx_backend = _runtime.resolve_backend(cfg, backend)
        self._rnnx_new_engines()
        self._rnnx_ready = True
        self.flatten_parameters()

    def _rnnx_add_peepholes(self):
        """Registers weight_peephole_l{k}[_reverse] [3H] (gates i, f, o) after each layer's
        and direction's parameters, where rnnx's layout has them, initialised like the
        others: U(-1/sqrt(H), 1/sqrt(H))."""
        D = 2 if self.bidirectional else 1
        ref = self._flat_weights[0]
        k = 1.0 / math.sqrt(self.hidden_size)
        for index, names in enumerate(self._all_weights):
            layer, direction = divmod(index, D)
            name = f"weight_peephole_l{layer}" + ("_reverse" if direction else "")
            w = torch.nn.Parameter(torch.empty(3 * self.hidden_size, dtype=ref.dtype,
                                               device=ref.device))
            with torch.no_grad():
                w.uniform_(-k, k)
            setattr(self, name, w)
            names.append(name)
        self._flat_weights_names = [n for names in self._all_weights for n in names]
        self._flat_weights = [getattr(self, n) for n in self._flat_weights_names]
        # named_parameters() and state_dict() in the layout's order, as the NumPy module's.
        for n in self._flat_weights_names:
            self._parameters[n] = self._parameters.pop(n)

    def _rnnx_refuse_dtype(self, dtype, device=None):
        where = f" on {device}" if device is not None else ""
        raise _rnnx.UnsupportedError(
            f"rnnx.torch.{type(self).__name__} runs float32, float64, bfloat16 and float16; "
            f"its parameters are {dtype}{where} (convert the module with .float(), .double(), "
            f".bfloat16() or .half())")

    # The attributes a config is made of: setting one forgets the configs made so far. They
    # are the config's fields (from rnnx's field table) under the module's own names: `mode`
    # for the cell; the dtype follows the parameters and dropout is read at each call.
    _RNNX_CONFIG_ATTRS = frozenset(("mode", "seed")) | (
        frozenset(_rnnx.Config.fields) - _CALL_FIELDS)

    def __setattr__(self, name, value):
        if name in _RnnxModule._RNNX_CONFIG_ATTRS:
            self.__dict__.pop("_rnnx_config_memo", None)
        # Any attribute set (a parameter replaced, batch_first, the engines, training's
        # dropout) ends the cached calls (_rnnx_fast_call).
        self.__dict__.pop("_rnnx_fast", None)
        super().__setattr__(name, value)

    def _rnnx_config(self, dtype, dropout):
        """(config, its cache key, the layout's parameters) for this module's attributes,
        data type and dropout, remembered per (dtype, dropout) until an attribute that
        shapes the config is set (__setattr__): each call reuses it."""
        memo = self.__dict__.get("_rnnx_config_memo")
        if memo is None:
            memo = self.__dict__["_rnnx_config_memo"] = {}
        got = memo.get((dtype, dropout))
        if got is None:
            got = memo[(dtype, dropout)] = self._rnnx_make_config(dtype, dropout)
        return got

    @_constant_when_compiling
    def _rnnx_param_shapes(self, dtype, dropout):
        """((name, shape) of each parameter in rnnx's layout order."""
        return tuple((p.name, p.shape) for p in self._rnnx_config(dtype, dropout)[2])

    @_constant_when_compiling
    def _rnnx_op_config(self, dtype, dropout):
        """The config's text form (str(rnnx.Config)), the operator's `config` argument. Taken
        as a constant by torch.compile (computing it calls into rnnx): a graph is traced again
        when the parameters' dtype changes, and setting an attribute that shapes the config
        after compiling needs torch.compiler.reset()."""
        cfg, key, _ = self._rnnx_config(dtype, dropout)
        return _torch_ops.config_text(cfg, key)

    def _rnnx_make_config(self, dtype, dropout):
        if dtype not in _DTYPES:
            self._rnnx_refuse_dtype(dtype)
        # Every field of rnnx's Config from the module's attribute of the same name
        # (_RNNX_CONFIG_ATTRS), but those a call decides: the cell (the module's mode), the
        # dtype (the parameters'), dropout and its seed (applied in training only).
        fields = {name: getattr(self, name) for name in _rnnx.Config.fields
                  if name not in _CALL_FIELDS}
        for name in ("input_size", "hidden_size", "proj_size", "num_layers"):
            fields[name] = int(fields[name])  # torch.nn keeps what it was given
        for name in ("bidirectional", "bias"):
            fields[name] = bool(fields[name])
        cfg, key = self._rnnx_engine.config(
            cell=_CELLS[self.mode], dtype=_DTYPES[dtype], dropout=float(dropout),
            seed=int(self.seed or 0) if dropout else 0, **fields)
        params = self._rnnx_layouts.get(key)
        if params is None:
            params = _runtime.layout(cfg)
            names = [p.name for p in params]
            if names != list(self._flat_weights_names):
                raise _rnnx.InternalError(f"weight names {self._flat_weights_names} do not match "
                                          f"rnnx's layout {names}")
            self._rnnx_layouts[key] = params
        return cfg, key, params

    # ---- the flat weight buffer ------------------------------------------------------------

    def _rnnx_aliased(self, weights, params):
        """Whether `weights` are this module's own parameters, still views of the flat
        buffer at their places in rnnx's layout (then the buffer itself is handed to rnnx).
        Identity first: tensors given by functional_call, a parametrization or torch.func
        (whose wrappers have no data pointer) are not the flattened parameters."""
        flat = self._rnnx_flat
        members = self.__dict__.get("_rnnx_flat_members")
        if flat is None or members is None or len(members) != len(weights):
            return False
        if flat.dtype != weights[0].dtype:
            return False
        base, itemsize = flat.data_ptr(), flat.element_size()
        for w, m, p in zip(weights, members, params):
            # `.data =` or an in-place resize may have moved a parameter off the buffer.
            if (w is not m or w.data_ptr() != base + p.offset * itemsize
                    or w.numel() != p.numel or w.dtype != flat.dtype or not w.is_contiguous()):
                return False
        return True

    def flatten_parameters(self):
        """Make the parameters views into one flat tensor in rnnx's layout, so that a call
        hands rnnx the weights without copying them (torch.nn's method): on the CPU and on
        CUDA (where the cuda backend then reads the buffer itself, not a copy gathered from
        L*D*4 tensors at every call)."""
        if not getattr(self, "_rnnx_ready", False):
            return  # called by torch.nn.RNNBase.__init__ before rnnx's setup
        weights = self._flat_weights
        if (len(weights) != len(self._flat_weights_names)
                or not all(isinstance(w, torch.nn.Parameter) for w in weights)):
            self._rnnx_flat = None
            return
        dtype, device = weights[0].dtype, weights[0].device
        # The CPU and CUDA, where rnnx runs on the flat buffer, and the meta device, so that a
        # module built there (then to_empty, or load_state_dict(assign=True)) has the same
        # parameters, views of one buffer at the same offsets, as one built on the CPU.
        # (CUDA tensors always say is_shared(); CPU tensors in shared memory are left alone.)
        real = device.type in ("cpu", "cuda")
        if (dtype not in _DTYPES or device.type not in ("cpu", "cuda", "meta")
                or any(w.dtype != dtype or w.device != device
                       or (device.type == "cpu" and w.is_shared()) for w in weights)):
            self._rnnx_flat = None
            return
        _, _, params = self._rnnx_config(dtype, 0.0)
        if real and self._rnnx_aliased(weights, params):
            return
        total = sum(p.numel for p in params)
        # Parameters that already are views of one buffer in the layout (taken by
        # load_state_dict(assign=True) from a saved module) keep it: nothing is copied.
        flat = _torch_ops.flat_view(weights, params, total) if real else None
        if flat is None:
            flat = torch.empty(total, dtype=dtype, device=device)
            with torch.no_grad():
                for w, p in zip(weights, params):
                    view = flat[p.offset:p.offset + p.numel].view(w.shape)
                    view.copy_(w)
                    w.data = view
        self._rnnx_flat = flat
        self._rnnx_flat_members = tuple(weights)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        # load_state_dict(assign=True) puts the given tensors in place of the parameters:
        # back to one flat buffer, as after construction.
        self._flat_weights = [getattr(self, n) for n in self._flat_weights_names]
        self.flatten_parameters()

    def __prepare_scriptable__(self):
        # torch.jit.script would compile forward's Python (NumPy calls, the plan cache)
        # and fail deep inside with a message about an attribute's type.
        raise _rnnx.UnsupportedError(
            f"rnnx.torch.{type(self).__name__}: torch.jit.script is not supported (rnnx's "
            "call is not TorchScript); use torch.compile, torch.export.export or "
            "torch.onnx.export, or script the rest of the model around it")

    def __getstate__(self):
        # torch.nn's own first: PyTorch 2 drops its weak references to the parameters there.
        parent = getattr(super(), "__getstate__", None)
        state = dict(parent() if parent is not None else self.__dict__)
        state.pop("_rnnx_engine", None)  # plans and buffers are rebuilt, not pickled
        state.pop("_rnnx_engines", None)
        state.pop("_rnnx_config_memo", None)  # holds configs, which are rebuilt too
        state.pop("_rnnx_fast", None)  # holds a plan
        state.pop("_rnnx_version_memo", None)  # weak references, of this process's tensors
        return state

    def __setstate__(self, state):
        # Modules pickled before rnnx had ONNX's options run without them.
        for key, value in (("reverse", False), ("peephole", False), ("gate_clip", 0.0),
                           ("input_forget", False), ("activations", None)):
            state.setdefault(key, value)
        super().__setstate__(state)
        self._rnnx_new_engines()
        self.flatten_parameters()

    # ---- forward ---------------------------------------------------------------------------

    def forward(self, input, hx=None, lengths=None):
        """Like torch.nn.LSTM/GRU/RNN.forward, plus lengths= for a padded batch: lengths [B]
        (list, array or tensor) in any order, 0 allowed; outputs at t >= lengths[b] hold
        padding_fill and the final states are each sequence's own. A PackedSequence input
        gives a PackedSequence output."""
        fast = self.__dict__.get("_rnnx_fast")
        if fast is not None and lengths is None and not _compiling():
            out = self._rnnx_fast_call(fast, input, hx)
            if out is not None:
                return out
        if torch.jit.is_tracing():
            # The trace would record the tensor operations around rnnx's call, not the call
            # (which goes through NumPy), and replay them on new inputs: a wrong answer.
            raise _rnnx.UnsupportedError(
                f"rnnx.torch.{type(self).__name__}: torch.jit.trace cannot record rnnx's "
                "call; use torch.compile, torch.export.export or torch.onnx.export, or run "
                "the module eagerly")
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        unbatched = False
        # Under torch.compile/export the index tensors are not read here (that would need
        # their values); the operator's kernel reads and checks them when it runs.
        compiling = _compiling()
        if packed:
            if lengths is not None:
                raise invalid("lengths= is for padded input; a PackedSequence carries its own")
            x, batch_sizes, sorted_indices, unsorted_indices = input
            _check_tensor(x, "PackedSequence data")
            if x.dim() != 2:
                raise invalid(f"PackedSequence data must be 2-D, got {x.dim()}-D")
            if compiling:
                batch = (sorted_indices.shape[0] if sorted_indices is not None
                         else _batch_of_states(hx))
            else:
                # One copy for both index tensors where they live on a device (the operator's
                # forward and backward then find them cached: _runtime.as_index_list).
                _runtime.prefetch_index_tensors(sorted_indices, unsorted_indices)
                bs = _runtime.as_index_list(batch_sizes, "PackedSequence batch_sizes")
                si = (None if sorted_indices is None
                      else _runtime.as_index_list(sorted_indices, "PackedSequence sorted_indices"))
                if x.shape[0] != sum(bs):
                    raise invalid(f"PackedSequence data dim 0 (= {x.shape[0]}) must equal "
                                  f"sum(batch_sizes) (= {sum(bs)})")
                if (si is not None and unsorted_indices is not None
                        and sorted(si) == list(range(len(si)))):  # else the plan names si's fault
                    # The final states come back in sorted_indices' inverse order; an
                    # unsorted_indices that disagrees would put them in another order than torch.
                    ui = _runtime.as_index_list(unsorted_indices, "PackedSequence unsorted_indices")
                    if len(ui) != len(si) or any(not 0 <= u < len(si) or si[u] != i
                                                 for i, u in enumerate(ui)):
                        raise invalid(f"PackedSequence unsorted_indices {ui} is not the inverse "
                                      f"permutation of sorted_indices {si}")
                batch = bs[0] if bs else 0  # no steps: the plan refuses it, naming batch_sizes
            batch_first = False
        else:
            x = input
            if not isinstance(x, torch.Tensor):
                raise invalid(f"input must be a tensor or a PackedSequence, got {type(x).__name__}")
            _check_tensor(x, "input")
            if x.dim() not in (2, 3):
                raise invalid(f"input must be 3-D (batched) or 2-D (unbatched), got {x.dim()}-D")
            batch_first = bool(self.batch_first)
            if x.dim() == 2:
                if lengths is not None:
                    raise invalid("lengths= needs batched (3-D) input")
                unbatched = True
                x = x.unsqueeze(0 if batch_first else 1)
            batch = x.shape[0] if batch_first else x.shape[1]
            lens = (None if compiling or lengths is None
                    else _runtime.as_index_list(lengths, "lengths"))
        device = x.device
        if device.type not in ("cpu", "cuda"):
            raise _rnnx.UnsupportedError(f"rnnx.torch runs on CPU and CUDA tensors; input is on "
                                         f"{device}")
        if x.shape[-1] != self.input_size:
            raise invalid(f"input dim {x.dim() - 1} (= {x.shape[-1]}) must equal input_size "
                          f"(= {self.input_size})")
        # Fetched now, as torch.nn's modules do: functional_call, parametrizations and
        # load_state_dict(assign=True) put other tensors in place of the parameters.
        weights = [getattr(self, n) for n in self._flat_weights_names]
        dtype = weights[0].dtype
        if (dtype == torch.float32 and x.dtype == torch.float32 and device.type == "cpu"
                and _autocast_dtype("cpu") == torch.bfloat16):
            # torch.autocast("cpu", dtype=torch.bfloat16): the float32 module runs on
            # bfloat16 data. The casts are differentiable, so the float32 parameters (and
            # input and states) get float32 gradients; the outputs are bfloat16.
            x = x.to(torch.bfloat16)
            weights = [w.to(torch.bfloat16) for w in weights]
            hx = _cast_states(hx, torch.bfloat16)
            dtype = torch.bfloat16
        elif (dtype == torch.float32 and x.dtype == torch.float32 and device.type == "cuda"
                and _autocast_dtype("cuda") in (torch.float16, torch.bfloat16)):
            # torch.autocast("cuda"): the same on the GPU, to autocast's dtype (float16 unless
            # asked otherwise), which cuDNN runs on tensor cores.
            half = _autocast_dtype("cuda")
            x = x.to(half)
            weights = [w.to(half) for w in weights]
            hx = _cast_states(hx, half)
            dtype = half
        if dtype not in _DTYPES:
            self._rnnx_refuse_dtype(dtype, device)
        if x.dtype != dtype:
            # torch.nn's words: "RNN input dtype ... does not match weight dtype ...".
            raise invalid(f"RNN input dtype {x.dtype} does not match weight dtype {dtype} (the "
                          f"parameters' dtype). Convert input: input.to({dtype}), or convert "
                          f"model: model.to({x.dtype})")
        for name, w in zip(self._flat_weights_names, weights):
            if w.dtype != dtype or w.device != device:
                raise invalid(f"parameter {name} is {w.dtype} on {w.device}; all must be "
                              f"{dtype} on {device}, the input's device")

        D = 2 if self.bidirectional else 1
        P = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = (self.num_layers * D, batch, P)
        c_shape = (self.num_layers * D, batch, self.hidden_size)
        h0, c0 = self._rnnx_states(hx, lstm, unbatched, h_shape, c_shape, dtype, device)

        apply_dropout = self.training and self.dropout > 0 and self.num_layers > 1
        needs_grad = torch.is_grad_enabled() and (
            x.requires_grad or any(t is not None and t.requires_grad for t in (h0, c0))
            or any(w.requires_grad for w in weights))
        int8_graph = False
        if self.math == "int8":
            if self.training and (needs_grad or apply_dropout):
                # A demand (docs/int8.md): never a float32 training call in its place.
                raise invalid(f"rnnx.torch.{type(self).__name__}(math='int8') runs inference "
                              "only: call eval() first, or run it under torch.no_grad()")
            # In eval mode an int8 module is an inference operator inside a larger graph (as
            # torch.ao's quantized modules are): its outputs join the graph, and a backward
            # through them is refused by name (_torch_quantize.no_backward).
            int8_graph, needs_grad = needs_grad, False
        if apply_dropout and self.seed is None:
            self.seed = int(torch.empty((), dtype=torch.int64).random_().item())
        dropout = self.dropout if apply_dropout else 0.0
        # A parameter reassigned with another shape (of the same or another size) would
        # otherwise be read in rnnx's layout regardless, or broadcast into it: a wrong answer.
        for w, (name, shape) in zip(weights, self._rnnx_param_shapes(dtype, dropout)):
            if tuple(w.shape) != shape:
                raise invalid(f"parameter {name} has shape {tuple(w.shape)}, expected {shape}")

        if compiling and _torch_onnx.exporting():
            # torch.onnx.export traces this call: ONNX's own nodes, or Scans where no node
            # expresses the config, instead of rnnx's operator (_torch_onnx.py).
            kw = _torch_ops.config_info(self._rnnx_op_config(dtype, dropout)).kwargs
            y, hy, cy = _torch_onnx.module_forward(
                kw, self._flat_weights_names, x, h0, c0, weights,
                lengths if lengths is None or isinstance(lengths, torch.Tensor)
                else torch.tensor(lens), batch_sizes if packed else None, batch_first)
        else:
            op, cacheable = _forward_route(compiling, needs_grad)
            if packed:
                op_lengths, op_bs, op_si = None, batch_sizes, sorted_indices
            else:
                op_lengths = (None if lengths is None else lengths if compiling
                              or isinstance(lengths, torch.Tensor) else torch.tensor(lens))
                op_bs = op_si = None
            # The counter advances only for a call that runs: a refused one (bad lengths, a
            # bad parameter) leaves the masks of later calls as they were.
            counter = self.dropout_calls if apply_dropout else 0
            inference = op is _torch_ops.forward_kernel and not apply_dropout
            extra = {"eager_inference": True} if inference else {}
            if inference and device.type == "cuda" and dtype == weights[0].dtype:
                # The network keeps cuDNN's copy of the weights by this version (docs/cuda.md
                # "Weights versions"); the kernel passes it only for the module's own buffer.
                extra["weights_version"] = self._rnnx_weights_version(weights)
            op_config = self._rnnx_op_config(dtype, self.dropout if apply_dropout else 0.0)
            y, hy, cy, _ = op(
                _dense(x), h0, c0, weights, op_lengths, op_bs, op_si, op_config,
                self._rnnx_engines.id, self._rnnx_backend, self._rnnx_num_threads,
                batch_first, bool(needs_grad or apply_dropout), counter, compiling, **extra)
            if (cacheable and not apply_dropout and device.type == "cpu" and not packed
                    and lengths is None and not unbatched and dtype == weights[0].dtype
                    and _autocast_dtype("cpu") is None):
                self._rnnx_remember_fast("inference" if inference else "training", x, weights,
                                         op_config, batch_first, h_shape, c_shape,
                                         y.shape, lstm)
            if apply_dropout:
                self.dropout_calls += 1
            if not lstm:
                cy = None
        if int8_graph:
            y, hy, cy = _torch_quantize.no_backward(type(self).__name__, x, y, hy, cy)
        if packed:
            output = PackedSequence(y, batch_sizes, sorted_indices, unsorted_indices)
        elif unbatched:
            output = y.squeeze(0 if batch_first else 1)
            hy = hy.squeeze(1)
            cy = cy.squeeze(1) if lstm else None
        else:
            output = y
        return (output, (hy, cy)) if lstm else (output, hy)

    def _rnnx_new_engines(self):
        """The plan caches of this module: the operator's `engine` argument names them."""
        self._rnnx_engines = _torch_ops.EngineSet(self._rnnx_backend, self._rnnx_num_threads)
        self._rnnx_engine = self._rnnx_engines.cpu

    # ---- the cached eager inference call (per-call cost, issue 26) --------------------------

    def _rnnx_remember_fast(self, purpose, x, weights, op_config, batch_first, h_shape,
                            c_shape, y_shape, lstm):
        """After an eager CPU call on a padded batch without lengths has passed every check:
        what the next such call for the same purpose ("inference", or "training": a forward
        that builds the graph) needs to skip them. Kept while the module's attributes stay
        as they are (__setattr__ drops it) and the parameters are the same tensors at the
        same addresses, in one buffer in rnnx's layout."""
        found = _torch_ops.plan_and_flat_address(self._rnnx_engines, op_config, x, weights,
                                                 batch_first, purpose)
        if found is None:
            return
        engine, plan, flat_address = found
        # The weights' identity for their version (ForwardArgs::weights_version): a number of
        # this remembering alone, so that (address, version) pairs never repeat for other
        # values (the tensors kept here hold the buffer: its address is not reused meanwhile).
        token = next(_weights_tokens)
        # The operator's options of a training call (forward_kernel's arguments after the
        # tensors): training, dropout counter 0, no static reserve.
        options = (op_config, self._rnnx_engines.id, self._rnnx_backend,
                   self._rnnx_num_threads, batch_first, True, 0, False)
        prepared = _torch_ops.Prepared(engine, plan, flat_address, tuple(y_shape), h_shape,
                                       c_shape, lstm, purpose == "training", options)
        fast = dict(self.__dict__.get("_rnnx_fast") or {})
        fast[purpose] = (
            self.__dict__.get("_rnnx_config_memo"), self._rnnx_engines, tuple(x.shape),
            x.dtype, tuple(weights), tuple(w.data_ptr() for w in weights),
            tuple(w.shape for w in weights), prepared, token)
        self.__dict__["_rnnx_fast"] = fast

    def _rnnx_weights_version(self, weights):
        """ForwardArgs::weights_version of an eager inference call on these parameters: a
        token of these tensor objects at their addresses (a new one when any is another
        tensor or moved, so that an (address, version) pair never repeats for other values)
        and the sum of their version counters, which every in-place change advances. 0 when
        module.rnnx_keep_packed_weights is False (code that writes through .data, which
        bypasses the counters)."""
        if not self.__dict__.get("rnnx_keep_packed_weights", True):
            return 0
        addresses = tuple(w.data_ptr() for w in weights)
        memo = self.__dict__.get("_rnnx_version_memo")
        if (memo is None or memo[1] != addresses or len(memo[0]) != len(weights)
                or any(r() is not w for r, w in zip(memo[0], weights))):
            # Detached aliases keep the memory alive, so that no other buffer (a `.data`
            # swap keeps the tensor objects) can come to these addresses meanwhile.
            memo = (tuple(weakref.ref(w) for w in weights), addresses, next(_weights_tokens),
                    tuple(w.detach() for w in weights))
            self.__dict__["_rnnx_version_memo"] = memo
        return _weights_version(memo[2], weights)

    def _rnnx_fast_call(self, fast, x, hx, cell=False):
        """The cached call (_rnnx_remember_fast) for this call's purpose when it is like the
        remembered one: the same input shape, dtype and device, dense; initial states absent
        or dense of the right shapes; the same parameters at the same addresses; no dropout,
        autocast, compiler, tracer, dispatch mode or torch.func transform. None when it is
        not. cell: a cell's step (_torch_cells): x (B, I) and the states (B, H) without the
        sequence module's leading 1; an inference step returns only the final states, shaped
        so, (hy, cy) for LSTM."""
        if type(x) is not torch.Tensor or (self.training and self.dropout > 0
                                           and self.num_layers > 1):
            return None
        grad = torch.is_grad_enabled()
        entry = fast.get("training" if grad else "inference")
        if entry is None:
            if not grad:
                return None
            # Grad mode with nothing requiring a gradient is an inference call.
            entry = fast.get("inference")
            if entry is None or x.requires_grad or any(w.requires_grad for w in entry[4]):
                return None
        (memo, engines, shape, dtype, weights, addresses, shapes, prepared, token) = entry
        # A cell's tensors lack the sequence module's leading 1: its remembered call must have
        # had one step (its steps() remembers calls of several).
        skip = 1 if cell else 0
        if cell and shape[0] != 1:
            return None
        if (x.shape != shape[skip:] or x.dtype != dtype or not x.is_cpu
                or not x.is_contiguous() or x.is_neg() or x.is_conj()
                or self.__dict__.get("_rnnx_config_memo") is not memo
                or self.__dict__.get("_rnnx_engines") is not engines):
            return None
        # The parameters as the module holds them (functional_call and load_state_dict(
        # assign=True) put other tensors there; a parametrization takes the name out, so
        # its call takes the full path), each at its remembered address, shape and strides.
        params = self._parameters
        current = [params.get(n) for n in self._flat_weights_names]
        weight_grad = False
        for w, kept, address, kept_shape in zip(current, weights, addresses, shapes):
            if (w is not kept or w.data_ptr() != address or w.shape != kept_shape
                    or not w.is_contiguous()):
                return None
            weight_grad = weight_grad or w.requires_grad
        lstm = prepared.lstm
        h0 = c0 = None
        if hx is not None:
            if lstm:
                if type(hx) is not tuple or len(hx) != 2:
                    return None
                h0, c0 = hx
            else:
                h0 = hx
            for t, want in ((h0, prepared.h_shape), (c0, prepared.c_shape)):
                if t is not None and (type(t) is not torch.Tensor or t.shape != want[skip:]
                                      or t.dtype != dtype or not t.is_cpu
                                      or not t.is_contiguous() or t.is_conj() or t.is_neg()):
                    return None
        needs_grad = grad and (weight_grad or x.requires_grad
                               or (h0 is not None and h0.requires_grad)
                               or (c0 is not None and c0.requires_grad))
        if needs_grad != prepared.training:
            return None
        if (_dispatch_modes_active() or torch.jit.is_tracing() or _functorch_active()
                or torch.is_autocast_enabled("cpu")):
            return None
        if needs_grad:
            if cell:
                hy, cy = _torch_ops.prepared_cell_training_step(prepared, x, h0, c0, current)
                return (hy, cy) if lstm else hy
            y, hy, cy, _ = _torch_ops.prepared_training_forward(prepared, x, h0, c0, current)
            return (y, (hy, cy)) if lstm else (y, hy)
        # The weights' version: every in-place change of a parameter (an optimizer's step,
        # load_state_dict, torch.no_grad() edits) advances its version counter, so the sum
        # changes with the values; the network keeps their packed copy meanwhile. Writes
        # through .data bypass the counters (PyTorch's own caveat): set
        # module.rnnx_keep_packed_weights = False for code that edits weights that way.
        version = 0
        if self.__dict__.get("rnnx_keep_packed_weights", True):
            version = _weights_version(token, current)
        h_shape = prepared.h_shape[skip:]
        hy = torch.empty(h_shape, dtype=dtype)
        cy = torch.empty(prepared.c_shape[skip:], dtype=dtype) if lstm else None
        # A cell's step wants no outputs but the states: y goes to the call's scratch.
        y = None if cell else torch.empty(prepared.y_shape, dtype=dtype)
        prepared.call(x.data_ptr(), 0 if y is None else y.data_ptr(),
                      0 if h0 is None else h0.data_ptr(), 0 if c0 is None else c0.data_ptr(),
                      hy.data_ptr(), 0 if cy is None else cy.data_ptr(), version,
                      prepared.threads())
        if cell:
            return (hy, cy) if lstm else hy
        return (y, (hy, cy)) if lstm else (y, hy)

    def _rnnx_states(self, hx, lstm, unbatched, h_shape, c_shape, dtype, device):
        if hx is None:
            return None, None
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise invalid("hx for LSTM must be a tuple (h_0, c_0)")
            h0, c0 = hx
        else:
            if not isinstance(hx, torch.Tensor):
                raise invalid(f"hx must be a tensor, got {type(hx).__name__}")
            h0, c0 = hx, None
        out = []
        for name, t, shape in (("h_0", h0, h_shape), ("c_0", c0, c_shape)):
            if t is None:
                out.append(None)
                continue
            _check_tensor(t, name)
            want_dim = 2 if unbatched else 3
            if t.dim() != want_dim:
                raise invalid(f"{name} must be {want_dim}-D for {'un' if unbatched else ''}batched "
                              f"input, got {t.dim()}-D")
            if unbatched:
                t = t.unsqueeze(1)
            if tuple(t.shape) != shape:
                raise invalid(f"{name} has shape {tuple(t.shape)}, expected {shape} "
                              "[num_layers * num_directions, batch, size]")
            if t.dtype != dtype:
                raise invalid(f"{name} dtype {t.dtype} does not match the parameters' dtype {dtype}")
            if t.device.type not in ("cpu", "cuda"):
                raise _rnnx.UnsupportedError(f"rnnx.torch runs on CPU and CUDA tensors; {name} is "
                                             f"on {t.device}")
            if t.device != device:
                raise invalid(f"{name} is on {t.device}, the input on {device}")
            out.append(_dense(t))
        return out[0], out[1]

    def extra_repr(self):
        s = super().extra_repr()
        if self.mode == "GRU" and not self.gru_linear_before_reset:
            s += ", gru_linear_before_reset=False"
        if self.cell_clip is not None:
            s += f", cell_clip={self.cell_clip}"
        if self.proj_clip is not None:
            s += f", proj_clip={self.proj_clip}"
        if self.clip_nan != "propagate":
            s += f", clip_nan='{self.clip_nan}'"
        if self.padding_fill != 0.0:
            s += f", padding_fill={self.padding_fill}"
        if self.reverse:
            s += ", reverse=True"
        if self.peephole:
            s += ", peephole=True"
        if self.gate_clip:
            s += f", gate_clip={self.gate_clip}"
        if self.input_forget:
            s += ", input_forget=True"
        if self.activations:
            s += f", activations={list(self.activations)}"
        if self.math != "from_environment":
            s += f", math='{self.math}'"
        if self._rnnx_backend != "cpu":
            s += f", backend='{self._rnnx_backend}'"
        return s

    @property
    def rnnx_backend(self):
        """The backend this module's calls run on now: 'cuda' while its parameters are on a
        GPU, else the host backend chosen for its config ('cpu', or 'reference' when asked
        for)."""
        first = next(self.parameters(), None)
        if first is not None and first.device.type == "cuda":
            return "cuda"
        return self._rnnx_backend

    @property
    def rnnx_networks_built(self):
        """How many networks this module has made: one per config, device, dtype and purpose;
        every batch's shape runs on one of them."""
        return self._rnnx_engine.networks_built

    @property
    def rnnx_batch_setup_seconds(self):
        """Seconds each of the last 10,000 batch set-ups took (a new shape on a network: its
        schedule, and the algorithm search where its size class is new to the network)."""
        return list(self._rnnx_engine.batch_setup_seconds)

    def rnnx_network_stats(self):
        """This module's networks, summed: batches bound, backends built (not rebound),
        slots and seconds spent binding shapes."""
        return self._rnnx_engine.network_stats()


class LSTM(_RnnxModule, torch.nn.LSTM):
    """torch.nn.LSTM on rnnx. Extras: cell_clip=(lo, hi), proj_clip=(lo, hi) (with proj_size),
    clip_nan='propagate'|'replace', padding_fill, seed, backend=None|'cpu'|'reference',
    num_threads, and ONNX's options: reverse, peephole (adds the parameters
    weight_peephole_l{k}[_reverse] [3H], gates i, f, o), gate_clip, input_forget,
    activations=[f, g, h] (per direction). backend None runs on cpu, which runs every option
    (the reference backend only when asked for)."""

    def __init__(self, *args, cell_clip=None, proj_clip=None, clip_nan="propagate",
                 padding_fill=0.0, seed=None, backend=None, num_threads=0, reverse=False,
                 peephole=False, gate_clip=0.0, input_forget=False, activations=None,
                 math="from_environment", **kwargs):
        super().__init__(*args, **kwargs)
        self._rnnx_init(cell_clip, proj_clip, clip_nan, True, padding_fill, seed, backend,
                        num_threads, reverse=reverse, peephole=peephole, gate_clip=gate_clip,
                        input_forget=input_forget, activations=activations, math=math)


class GRU(_RnnxModule, torch.nn.GRU):
    """torch.nn.GRU on rnnx. Extras: gru_linear_before_reset (True: PyTorch's GRU; False: the
    original GRU, ONNX's default), padding_fill, seed, backend, num_threads, and ONNX's
    options reverse, gate_clip, activations=[f, g] (per direction)."""

    def __init__(self, *args, gru_linear_before_reset=True, padding_fill=0.0, seed=None,
                 backend=None, num_threads=0, reverse=False, gate_clip=0.0, activations=None,
                 math="from_environment", **kwargs):
        super().__init__(*args, **kwargs)
        self._rnnx_init(None, None, "propagate", gru_linear_before_reset, padding_fill, seed,
                        backend, num_threads, reverse=reverse, gate_clip=gate_clip,
                        activations=activations, math=math)


class RNN(_RnnxModule, torch.nn.RNN):
    """torch.nn.RNN (nonlinearity='tanh'|'relu') on rnnx. Extras: padding_fill, seed,
    backend, num_threads, and ONNX's options reverse, gate_clip, activations=[f] (per
    direction)."""

    def __init__(self, *args, padding_fill=0.0, seed=None, backend=None, num_threads=0,
                 reverse=False, gate_clip=0.0, activations=None, math="from_environment",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self._rnnx_init(None, None, "propagate", True, padding_fill, seed, backend, num_threads,
                        reverse=reverse, gate_clip=gate_clip, activations=activations, math=math)


# The cells, one step of the modules above (_torch_cells.py).
from ._torch_cells import _make_cells  # noqa: E402
from . import _torch_quantize  # noqa: E402

LSTMCell, GRUCell, RNNCell = _make_cells(LSTM, GRU, RNN)


def quantize_dynamic(model, inplace=False):
    """`model` with its LSTM/GRU/RNN modules and LSTMCell/GRUCell/RNNCell cells (torch.nn's or
    rnnx.torch's) as rnnx.torch ones of math='int8' (docs/int8.md): inference in int8 dynamic
    quantisation, the float parameters kept as the state_dict and frozen. The replacement
    itself when `model` is one."""
    return _torch_quantize.quantize_dynamic(model, (LSTM, GRU, RNN),
                                            (LSTMCell, GRUCell, RNNCell), inplace=inplace)
