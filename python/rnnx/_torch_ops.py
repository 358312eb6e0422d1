"""rnnx's forward and backward as operators of PyTorch's dispatcher: torch.ops.rnnx.forward
and torch.ops.rnnx.backward (PyTorch 2.4 and later; rnnx.torch uses them there, and a
torch.autograd.Function on older PyTorch).

Each has a schema, CPU and CUDA kernels that take and return tensors (outputs and reserve
allocated by PyTorch), a fake kernel that gives every output's shape from the inputs' shapes
(so torch.compile and torch.export trace the call without running rnnx), and autograd:
forward's derivative is backward. The plans live below the operator, in the engine the
`engine` argument names (a module's; unknown ids, as in a program exported by another
process, get an engine of their own), cached per (config, shape) there.

Why torch.library from Python and not a C++ TORCH_LIBRARY extension: an extension is
compiled against one PyTorch's headers and C++ ABI, so it would be built once per PyTorch
version and break on the next (Debian's 1.13 and pip's current release already differ), while
the Python registration is the same source for every PyTorch 2.4+. Measured on a 2-core Zen 3
with PyTorch 2.15 (bench/torch_call_overhead.py; an empty kernel through the dispatcher):
about 6 us per call for a Python kernel registered with torch.library.Library, 16 us with
torch.library.custom_op, against rnnx's own C++ call of 5-8 us at T=1, B=1, H=16; so the
low-level registration is used.

A config travels as core's own text form (str(rnnx.Config), rnnx::to_string: every field
as name=value), which the kernels parse once per distinct text (rnnx.Config.from_string).
"""

import functools
import inspect
import itertools
import json
import weakref

import torch

from . import _rnnx
from . import _runtime
from . import _torch_onnx
from . import _torch_recurrence

VMAP_RULES = hasattr(torch.library, "register_vmap")
AVAILABLE = (all(hasattr(torch.library, n) for n in ("register_fake", "get_ctx", "Library"))
             and hasattr(torch.autograd.Function, "setup_context"))

try:  # PyTorch 2: torch.func's tensor wrappers
    import torch._C._functorch as _functorch
except ImportError:
    _functorch = None


_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def compiling():
    """Whether torch.compile / torch.export is tracing this call."""
    return _is_compiling is not None and _is_compiling()


def dispatch_modes_active():
    """Whether a TorchDispatchMode or TorchFunctionMode (FlopCounterMode, a tracer) is
    watching: then every call goes through the dispatcher, so they see the operator."""
    return torch._C._len_torch_dispatch_stack() > 0 or torch._C._is_torch_function_mode_enabled()


def np_view(t):
    """Zero-copy NumPy view of a dense CPU tensor (or None); bfloat16, which NumPy lacks, as
    its bits (int16), which the bindings take for a bfloat16 plan."""
    if t is None:
        return None
    t = t.detach()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()


def ptr(t):
    return 0 if t is None else t.data_ptr()


def _address(flat):
    """The flat weights' address: a tensor's, or one already known (an int)."""
    return flat if isinstance(flat, int) else flat.data_ptr()


def stream(device):
    return torch.cuda.current_stream(device).cuda_stream


def dense(t):
    """t as a plain dense tensor NumPy can view: contiguous (expanded, transposed and
    step-sliced tensors are copied) with torch's lazy negation/conjugation bits applied
    (.numpy() refuses a tensor that carries them). Differentiable, so gradients still
    reach the caller's tensor."""
    return None if t is None else t.resolve_conj().resolve_neg().contiguous()


# ---- engines: the plan caches below the operator -------------------------------------------

class EngineSet:
    """One module's engines: the cpu (or reference) backend's, and one per GPU for the cuda
    backend (its plans are bound to a device). Registered under `id`, the operator's
    `engine` argument, for as long as the module holds it."""

    _ids = itertools.count(1)
    _live = weakref.WeakValueDictionary()

    def __init__(self, backend, num_threads):
        self.backend = backend
        self.num_threads = num_threads
        self.cpu = _runtime.Engine(backend, num_threads, threads_from=torch.get_num_threads)
        self.gpus = {}
        self.id = next(EngineSet._ids)
        EngineSet._live[self.id] = self

    def for_device(self, device):
        if device.type == "cpu":
            return self.cpu
        index = device.index if device.index is not None else torch.cuda.current_device()
        engine = self.gpus.get(index)
        if engine is None:
            engine = self.gpus[index] = _runtime.Engine("cuda", 0)
        return engine

    @staticmethod
    def get(engine_id, backend, num_threads):
        found = EngineSet._live.get(engine_id)
        if found is not None and found.backend == backend and found.num_threads == num_threads:
            return found
        # Not this process's module (a program exported elsewhere), or another backend
        # under the same number: an engine of its own, kept with the programs' others.
        key = (engine_id, backend, num_threads)
        found = _foreign.get(key)
        if found is None:
            found = _foreign[key] = EngineSet(backend, num_threads)
        return found


_foreign = {}


class ConfigInfo:
    """What the kernels need to know of a config, parsed once per text."""

    __slots__ = ("kwargs", "lstm", "D", "H", "P", "L", "params", "cfg", "dtype")

    def __init__(self, text):
        self.params = None  # the layout's parameters, once a config has been built
        self.cfg = None  # the rnnx.Config (device-neutral: every engine's plans take it)
        if text.startswith("{"):
            # The JSON of keyword arguments that rnnx 0.1's operators took: a program
            # exported by it (torch.export) still loads.
            fields = json.loads(text)
        else:
            fields = _rnnx.Config.from_string(text).to_dict()
        # The engine caches configs by their (hashable) arguments: lists become tuples.
        self.kwargs = {k: _tuples(v) for k, v in fields.items()}
        k = self.kwargs
        self.lstm = k["cell"] == "lstm"
        self.D = 2 if k.get("bidirectional") else 1
        self.H = int(k["hidden_size"])
        self.P = int(k.get("proj_size") or 0) or self.H
        self.L = int(k.get("num_layers", 1))
        self.dtype = _TORCH_DTYPES[k.get("dtype", "float32")]


_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64,
                 "bfloat16": torch.bfloat16, "float16": torch.float16}


_infos = {}


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def config_info(text):
    info = _infos.get(text)
    if info is None:
        if len(_infos) > 256:
            _infos.clear()
        info = _infos[text] = ConfigInfo(text)
    return info


_texts = {}


def config_text(cfg, key):
    """The operator's `config` argument: the config's text form (str(rnnx.Config)),
    remembered by the config's cache key (Engine.config's sorted arguments)."""
    text = _texts.get(key)
    if text is None:
        if len(_texts) > 256:
            _texts.clear()
        text = _texts[key] = str(cfg)
    return text


def _plan_and_config(engines, device, text, x, lengths, batch_sizes, sorted_indices,
                     batch_first, purpose="training"):
    engine = engines.for_device(device)
    info = config_info(text)
    cfg = info.cfg
    if cfg is None:
        cfg, _ = engine.config(**info.kwargs)
        info.params = _runtime.layout(cfg)
        info.cfg = cfg
    if batch_sizes is not None:
        bs = _runtime.as_index_list(batch_sizes, "PackedSequence batch_sizes")
        si = (None if sorted_indices is None
              else _runtime.as_index_list(sorted_indices, "PackedSequence sorted_indices"))
        if x.shape[0] != sum(bs):
            raise _runtime.invalid(f"PackedSequence data dim 0 (= {x.shape[0]}) must equal "
                                   f"sum(batch_sizes) (= {sum(bs)})")
        shape_key = _runtime.shape_key_packed(bs, si)
        batch = bs[0] if bs else 0
    else:
        T, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
        lens = None if lengths is None else _runtime.as_index_list(lengths, "lengths")
        shape_key = _runtime.shape_key_padded(T, batch, lens, batch_first)
    if device.type == "cpu":
        plan = engine.plan(cfg, text, shape_key, purpose)
    else:
        with torch.cuda.device(device):  # a cuda plan is bound to the current device
            plan = engine.plan(cfg, text, shape_key, purpose)
    return engine, cfg, plan, batch


# Reserves up to this size come from PyTorch's allocator (64-byte aligned on the CPU), which
# keeps small blocks: the pool's lock and handle would cost more than a tiny step's work.
_POOLED_RESERVE_BYTES = 1 << 16


def _reserve_tensor(engine, nbytes, device):
    """A reserve of nbytes. On the CPU from the engine's pool, given back when the tensor
    is freed: a training reserve is often tens of MB, beyond what malloc keeps, so a fresh
    one would be mapped and page-faulted at every step (measured: 7% of a 2-layer H=512
    training step on 1 thread). On CUDA from PyTorch's caching allocator, as small ones."""
    if device.type != "cpu" or nbytes <= _POOLED_RESERVE_BYTES:
        return torch.empty(nbytes, dtype=torch.uint8, device=device)
    pool = engine.reserves
    buffer = pool.acquire(nbytes)
    tensor = torch.from_numpy(buffer[:nbytes])
    # Kept in the tensor's own attributes (PyTorch keeps them as long as the tensor lives,
    # autograd's saved copy included): the handle gives the buffer back when it goes.
    # weakref.finalize would do too, but Dynamo guards on its registry when it runs.
    tensor._rnnx_reserve = _runtime.ReserveHandle(pool, buffer)
    return tensor


def _storage_bytes(t):
    # untyped_storage() from PyTorch 2.0 on; 1.13 has storage() (TypedStorage) only.
    return (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()).nbytes()


def flat_view(weights, params, numel):
    """The buffer the weights are views of when they lie there in rnnx's layout, in order (a
    module's flattened parameters, or tensors that load_state_dict(assign=True) took from a
    saved module), as a tensor of `numel` elements over it: nothing copied. Else None."""
    w0 = weights[0]
    # Every weight at its place after the first, and the whole range inside the first's
    # storage (so the view below is of memory that storage owns).
    itemsize = w0.element_size()
    base = w0.data_ptr() - params[0].offset * itemsize
    start = w0.storage_offset() - params[0].offset
    if (start >= 0 and all(w.data_ptr() == base + p.offset * itemsize and w.is_contiguous()
                           for w, p in zip(weights, params))
            and _storage_bytes(w0) >= (start + numel) * itemsize):
        return torch.as_strided(w0.detach(), (numel,), (1,), start)
    return None


def _flat_weights(plan, info, weights, dtype, device):
    """The weights as one tensor in rnnx's layout: the buffer they are views of when they
    lie there in order (a module's flattened parameters), else a gathered copy."""
    params = info.params
    if len(weights) != len(params):
        raise _runtime.invalid(f"weights: {len(weights)} tensors given, the config's layout "
                               f"has {len(params)}")
    w0 = weights[0]
    if w0.device == device and w0.dtype == dtype:
        view = flat_view(weights, params, plan.weights_numel)
        if view is not None:
            return view
    flat = torch.empty(plan.weights_numel, dtype=dtype, device=device)
    for w, p in zip(weights, params):
        flat[p.offset:p.offset + p.numel].copy_(w.detach().reshape(-1))
    return flat


# ---- kernels ------------------------------------------------------------------------------

def _resolve(engine, backend, num_threads, config, x, weights, lengths, batch_sizes,
             sorted_indices, batch_first, purpose, prepared):
    """(engine, plan, batch, the flat weights as a tensor or, prepared, their address) of a
    call: looked up, or as a module's cached call remembered them (Prepared), whose
    operands that call has checked."""
    if prepared is not None:
        return prepared.engine, prepared.plan, prepared.h_shape[1], prepared.flat_address
    engines = EngineSet.get(engine, backend, num_threads)
    eng, _, plan, batch = _plan_and_config(engines, x.device, config, x, lengths, batch_sizes,
                                           sorted_indices, batch_first, purpose)
    return eng, plan, batch, _flat_weights(plan, config_info(config), weights, x.dtype,
                                           x.device)


def forward_kernel(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
                   backend, num_threads, batch_first, training, dropout_counter,
                   static_reserve, eager_inference=False, prepared=None, weights_version=0):
    """The operator's CPU and CUDA kernel. eager_inference (never from the dispatcher): the
    module's own eager inference call, which discards the reserve and a non-LSTM's cy, so
    they are not allocated (None in their place). prepared (a module's cached eager CPU call,
    Prepared): the plan and the weights' address without looking them up. weights_version
    (the module's eager CUDA inference call): ForwardArgs::weights_version of the
    parameters, passed only when they are the flat buffer itself (a gathered copy is new at
    every call)."""
    info = config_info(config)
    device = x.device
    eng, plan, batch, flat = _resolve(engine, backend, num_threads, config, x, weights, lengths,
                                      batch_sizes, sorted_indices, batch_first,
                                      "training" if training else "inference", prepared)
    y_shape = ((x.shape[0], info.D * info.P) if batch_sizes is not None
               else (x.shape[0], x.shape[1], info.D * info.P))
    y = torch.empty(y_shape, dtype=x.dtype, device=device)
    hy = torch.empty((info.L * info.D, batch, info.P), dtype=x.dtype, device=device)
    cy = (None if eager_inference and not info.lstm
          else torch.empty((info.L * info.D, batch, info.H) if info.lstm else (0,),
                           dtype=x.dtype, device=device))
    if eager_inference:
        training = static_reserve = False
    reserve_size = plan.reserve_size if training else 0
    if training and static_reserve:
        reserve_size = _static_reserve_size(EngineSet.get(engine, backend, num_threads), device,
                                            config, x, batch_sizes, sorted_indices, batch_first)
        if reserve_size < plan.reserve_size:
            raise _rnnx.InternalError(
                f"rnnx.torch: the reserve bound from the shapes ({reserve_size} bytes) is "
                f"smaller than the plan's reserve ({plan.reserve_size}); please report it")
    reserve = None if eager_inference else _reserve_tensor(eng, reserve_size, device)
    if static_reserve:
        # Zero-filled when compiling: bytes rnnx leaves unwritten (alignment gaps, the
        # bound's tail) would make the output differ run to run, which PyTorch's compilers
        # assume never happens. Eager calls skip the pass over memory.
        reserve.zero_()
    x = dense(x)
    if device.type == "cpu":
        # By address (NumPy views of seven tensors cost more than rnnx's own call on small
        # problems), each operand checked against the plan first, as the NumPy entry would.
        hx, cx = dense(hx), dense(cx)
        if prepared is None:
            _require_operand(x, plan.x_numel, info.dtype, device, "x")
            _require_operand(hx, plan.h_numel, info.dtype, device, "hx")
            _require_operand(cx, plan.c_numel, info.dtype, device, "cx")
        eng.forward_ptr(plan, x.data_ptr(), _address(flat), y.data_ptr(), ptr(hx), ptr(cx),
                        hy.data_ptr(), cy.data_ptr() if info.lstm else 0, training,
                        dropout_counter, reserve.data_ptr() if training else 0,
                        reserve.numel() if training else 0)
    else:
        ws_size = plan.forward_workspace_size(training)
        ws = torch.empty(ws_size, dtype=torch.uint8, device=device) if ws_size else None
        if weights_version and flat.data_ptr() != _own_flat_address(info, weights):
            weights_version = 0
        with torch.cuda.device(device):
            plan.forward_ptr(ptr(x), ptr(flat), ptr(y), h0=ptr(hx), c0=ptr(cx), hy=ptr(hy),
                             cy=ptr(cy) if info.lstm else 0, training=training,
                             dropout_counter=dropout_counter, workspace=ptr(ws),
                             workspace_size=ws_size,
                             reserve=ptr(reserve) if training else 0,
                             reserve_size=plan.reserve_size if training else 0,
                             stream=stream(device), weights_version=weights_version)
    return y, hy, cy, reserve


def _own_flat_address(info, weights):
    """Where the flat buffer starts if the parameters are views of one in rnnx's layout."""
    return weights[0].data_ptr() - info.params[0].offset * weights[0].element_size()


def plan_and_flat_address(engines, config, x, weights, batch_first, purpose="inference"):
    """(engine, plan, address of the flat weights) of an eager CPU call on a padded x without
    lengths whose weights lie in one buffer in rnnx's layout; None when they do not (a
    gathered copy would be needed at every call)."""
    info = config_info(config)
    engine, _, plan, _ = _plan_and_config(engines, x.device, config, x, None, None, None,
                                          batch_first, purpose)
    flat = _flat_weights(plan, info, weights, x.dtype, x.device)
    if flat.data_ptr() != _own_flat_address(info, weights):
        return None
    return engine, plan, flat.data_ptr()


class Prepared:
    """What a module's cached eager CPU call (rnnx.torch's _rnnx_fast_call) needs to run
    without looking anything up: the plan, the flat weights' address, the outputs' shapes,
    and for a training call the operator's options that its backward reads."""

    __slots__ = ("engine", "plan", "flat_address", "y_shape", "h_shape", "c_shape", "lstm",
                 "training", "options", "call", "backward_call", "threads_from",
                 "reserve_size", "weights_numel")

    def __init__(self, engine, plan, flat_address, y_shape, h_shape, c_shape, lstm, training,
                 options):
        self.engine, self.plan, self.flat_address = engine, plan, flat_address
        self.y_shape, self.h_shape, self.c_shape = y_shape, h_shape, c_shape
        self.lstm, self.training, self.options = lstm, training, options
        # The forward goes straight to the binding: the plan at the weights' address with
        # its own workspaces, positional addresses only (_rnnx.PreparedForward).
        self.call = _rnnx.PreparedForward(plan, flat_address, training)
        self.backward_call = _rnnx.PreparedBackward(plan, flat_address) if training else None
        self.threads_from = engine.threads_from
        self.reserve_size = plan.reserve_size if training else 0
        self.weights_numel = plan.weights_numel

    def threads(self):
        """The thread count of this call (PreparedForward's `threads`): the engine's source,
        torch.get_num_threads() for rnnx.torch's, or 0 to leave the thread's count alone."""
        source = self.threads_from
        return 0 if source is None else max(1, int(source()))

    def outputs(self, dtype):
        """(y, hy, cy) to write; cy None but for LSTM."""
        return (torch.empty(self.y_shape, dtype=dtype), torch.empty(self.h_shape, dtype=dtype),
                torch.empty(self.c_shape, dtype=dtype) if self.lstm else None)


def _require_operand(t, numel, dtype, device, name):
    if t is None:
        return
    if t.numel() != numel or t.dtype != dtype or t.device != device:
        raise _runtime.invalid(f"rnnx forward: {name} is {tuple(t.shape)} {t.dtype} on "
                               f"{t.device}; the plan needs {numel} elements of {dtype} on "
                               f"{device}")


def _backward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
              backend, num_threads, batch_first, reserve, dy, dhy, dcy, output_mask,
              prepared=None):
    info = config_info(config)
    device = x.device
    eng, plan, _, flat = _resolve(engine, backend, num_threads, config, x, weights, lengths,
                                  batch_sizes, sorted_indices, batch_first, "training", prepared)
    if reserve.numel() < plan.reserve_size:
        raise _runtime.invalid(f"rnnx backward: reserve has {reserve.numel()} bytes, the plan "
                               f"needs {plan.reserve_size} (not the forward's reserve)")
    need_x, need_h, need_c, need_w = output_mask

    def out(shape, wanted):
        return torch.empty(shape if wanted else (0,), dtype=x.dtype, device=device)

    dx = out(x.shape, need_x)
    dhx = out(hx.shape if hx is not None else (0,), need_h and hx is not None)
    dcx = out(cx.shape if cx is not None else (0,), need_c and cx is not None)
    dw = out((plan.weights_numel,), need_w)
    x, dy, dhy = dense(x), dense(dy), dense(dhy)
    dcy = dense(dcy) if info.lstm else None

    def some(t, wanted):
        return t if wanted else None

    if device.type == "cpu":
        # By address, each operand checked against the plan first (as forward_kernel does):
        # NumPy views of eleven tensors cost more than rnnx's own call on small problems.
        hx, cx = dense(hx), dense(cx)
        for t, numel, name in (() if prepared is not None else (
                (x, plan.x_numel, "x"), (hx, plan.h_numel, "hx"), (cx, plan.c_numel, "cx"),
                (dy, plan.y_numel, "dy"), (dhy, plan.h_numel, "dhy"),
                (dcy, plan.c_numel, "dcy"))):
            _require_operand(t, numel, info.dtype, device, name)
        eng.backward_ptr(plan, x.data_ptr(), _address(flat), reserve.data_ptr(),
                         reserve.numel(), h0=ptr(hx), c0=ptr(cx), dy=ptr(dy), dhy=ptr(dhy),
                         dcy=ptr(dcy), dx=ptr(some(dx, need_x)),
                         dh0=ptr(some(dhx, dhx.numel() > 0)),
                         dc0=ptr(some(dcx, dcx.numel() > 0)), dweights=ptr(some(dw, need_w)))
    else:
        ws_size = plan.backward_workspace_size
        ws = torch.empty(ws_size, dtype=torch.uint8, device=device) if ws_size else None
        with torch.cuda.device(device):
            plan.backward_ptr(ptr(x), ptr(flat), ptr(reserve), plan.reserve_size, h0=ptr(hx),
                              c0=ptr(cx), dy=ptr(dy), dhy=ptr(dhy), dcy=ptr(dcy),
                              dx=ptr(some(dx, need_x)), dh0=ptr(some(dhx, dhx.numel() > 0)),
                              dc0=ptr(some(dcx, dcx.numel() > 0)),
                              dweights=ptr(some(dw, need_w)), workspace=ptr(ws),
                              workspace_size=ws_size, stream=stream(device))
    return dx, dhx, dcx, dw


# ---- fake kernels: shapes only ------------------------------------------------------------

def _forward_fake(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
                  backend, num_threads, batch_first, training, dropout_counter, static_reserve):
    info = config_info(config)
    if _torch_onnx.exporting():
        # torch.onnx.export's capture through Dynamo (which reads is_in_onnx_export() as
        # False, so the module took this route): what no export can carry is refused here,
        # by name, rather than as a missing translation later.
        _torch_onnx.check_exportable(info.kwargs, batch_sizes)
    ctx = torch.library.get_ctx()
    if batch_sizes is not None:
        y_shape = (x.shape[0], info.D * info.P)
        # batch_sizes[0] is data; sorted_indices' length says it without reading data.
        batch = sorted_indices.shape[0] if sorted_indices is not None else ctx.new_dynamic_size()
    else:
        y_shape = (x.shape[0], x.shape[1], info.D * info.P)
        batch = x.shape[0] if batch_first else x.shape[1]
    y = x.new_empty(y_shape)
    hy = x.new_empty((info.L * info.D, batch, info.P))
    cy = x.new_empty((info.L * info.D, batch, info.H) if info.lstm else (0,))
    # The reserve's size follows the lengths' values (the real tokens); under torch.compile
    # and torch.export (static_reserve) it is the full batch's, a bound the shapes give.
    size = 0
    if training:
        size = None
        if static_reserve:
            engines = EngineSet.get(engine, backend, num_threads)
            size = _static_reserve_size(engines, x.device, config, x, batch_sizes,
                                        sorted_indices, batch_first)
        if size is None:
            size = ctx.new_dynamic_size()
    reserve = x.new_empty((size,), dtype=torch.uint8)
    return y, hy, cy, reserve


def _static_reserve_size(engines, device, text, x, batch_sizes, sorted_indices, batch_first):
    """The reserve of the full batch (every sequence of the longest length), which bounds
    the reserve of any lengths: from the shapes alone, or None where they are symbolic
    (dynamic shapes) or the batch of a packed input is data (no sorted_indices)."""
    if batch_sizes is not None:
        T = batch_sizes.shape[0]
        B = sorted_indices.shape[0] if sorted_indices is not None else None
        batch_first = False
    else:
        T, B = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    if not isinstance(T, int) or not isinstance(B, int):
        return None
    # The device's own engine: a cuda plan's reserve differs from a cpu plan's.
    engine = engines.for_device(device)
    info = config_info(text)
    cfg, _ = engine.config(**info.kwargs)
    if device.type == "cpu":
        plan = engine.plan(cfg, text, _runtime.shape_key_padded(T, B, None, batch_first))
    else:
        with torch.cuda.device(device):
            plan = engine.plan(cfg, text, _runtime.shape_key_padded(T, B, None, batch_first))
    return plan.reserve_size


def _backward_fake(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
                   backend, num_threads, batch_first, reserve, dy, dhy, dcy, output_mask):
    need_x, need_h, need_c, need_w = output_mask
    numel = sum(w.numel() for w in weights)
    return (x.new_empty(x.shape if need_x else (0,)),
            x.new_empty(hx.shape if need_h and hx is not None else (0,)),
            x.new_empty(cx.shape if need_c and cx is not None else (0,)),
            x.new_empty((numel,) if need_w else (0,)))


# ---- autograd -----------------------------------------------------------------------------

def _functorch_active():
    return _functorch is not None and torch._C._are_functorch_transforms_active()


def _functorch_levels():
    """(transforms active, those that differentiate: all but vmaps)."""
    try:
        from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    except ImportError:  # PyTorch 1.x: no torch.func
        return 0, 0
    levels = retrieve_all_functorch_interpreters()
    vmap = torch._C._functorch.TransformType.Vmap
    return len(levels), sum(1 for i in levels if i.key() != vmap)


def vmap_only():
    """Whether every active torch.func transform is a vmap (PyTorch 2.5+, where rnnx's
    operators have vmap rules): the operator path then serves the call."""
    if not VMAP_RULES or not _functorch_active():
        return False
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    return all(i.key() == torch._C._functorch.TransformType.Vmap
               for i in retrieve_all_functorch_interpreters())


def refuse_double_backward():
    """Autograd runs backward with grad mode on only for create_graph=True. rnnx's backward
    is not differentiable, so the gradients would come back without a graph and a gradient
    penalty built on them would silently add nothing: refuse instead (but for one
    torch.func.grad, which asks for a graph it never uses). torch.func's transforms always
    differentiate with create_graph=True (so that they nest): inside them a backward is a first
    derivative unless two of them differentiate (grad(grad(...))); vmaps do not count
    (vmap(grad(...)), jacrev's vmap over the vjp). Outside them it is the caller's
    create_graph=True."""
    if double_backward_wanted():
        raise _rnnx.UnsupportedError(
            "rnnx.torch: double backward (create_graph=True through an rnnx "
            "LSTM/GRU/RNN) is not supported on this path (PyTorch before 2.4, or inside "
            "torch.func's transforms); its gradients would carry no graph")


def double_backward_wanted():
    """Whether this backward must give gradients with a graph (refuse_double_backward)."""
    transforms, differentiating = _functorch_levels()
    return torch.is_grad_enabled() and (transforms == 0 or differentiating > 1)


def _setup_context(ctx, inputs, output):
    (x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine, backend,
     num_threads, batch_first, training, dropout_counter, static_reserve) = inputs
    ctx.set_materialize_grads(False)  # absent output gradients reach rnnx as null
    ctx.save_for_backward(x, hx, cx, lengths, batch_sizes, sorted_indices, output[3], *weights)
    ctx.rnnx_args = (config, engine, backend, num_threads, batch_first)
    ctx.rnnx_training = training


def _autograd_backward(ctx, dy, dhy, dcy, dreserve, direct=False):
    """The gradients of forward's inputs. direct (the module's eager Functions, nothing
    watching the dispatcher): the backward kernel itself rather than through the
    dispatcher, with the forward's Prepared where it had one (ctx.rnnx_prepared)."""
    if not ctx.rnnx_training:
        raise _rnnx.UnsupportedError(
            "rnnx::forward ran with training=False, which keeps no reserve: its outputs "
            "have no backward (call it with training=True when gradients are wanted)")
    x, hx, cx, lengths, batch_sizes, sorted_indices, reserve, *weights = ctx.saved_tensors
    config, engine, backend, num_threads, batch_first = ctx.rnnx_args
    # (options, x, hx, cx, lengths, batch_sizes, sorted_indices, *weights)
    needs = ctx.needs_input_grad
    mask = [bool(needs[1]), bool(needs[2]) and hx is not None,
            bool(needs[3]) and cx is not None, any(needs[7:])]
    if double_backward_wanted():
        info = config_info(config)
        reason = _torch_recurrence.refusal(info.kwargs,
                                           float(info.kwargs.get("dropout") or 0) > 0)
        if reason is not None:
            raise _rnnx.UnsupportedError(
                f"rnnx.torch: double backward (create_graph=True) with {reason} is not "
                "supported: it differentiates the recurrence in tensor operations, which "
                "cannot draw rnnx's dropout masks (use eval() or dropout=0 for it)")
        dx, dhx, dcx, wgrads = _torch_recurrence.gradients(
            info, (x, hx, cx, lengths, batch_sizes, sorted_indices, batch_first, weights),
            (dy, dhy, dcy), mask)
        return (dx, dhx, dcx, wgrads, None, None, None, None, None, None, None, None, None,
                None, None)
    if any(_legacy_batched(t) for t in (dy, dhy, dcy)):
        # is_grads_batched: PyTorch's legacy vmap loops over backward_flat, one backward per
        # row of the batched gradients, from the one reserve.
        flat = torch.cat([w.detach().reshape(-1) for w in weights])
        dx, dhx, dcx, dw = torch.ops.rnnx.backward_flat(
            x, hx, cx, flat, lengths, batch_sizes, sorted_indices, config, engine, backend,
            num_threads, batch_first, reserve, dy, dhy, dcy, mask)
    else:
        args = (x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, engine,
                backend, num_threads, batch_first, reserve, dy, dhy, dcy, mask)
        if direct and not dispatch_modes_active() and not compiling():
            dx, dhx, dcx, dw = _backward(*args, prepared=getattr(ctx, "rnnx_prepared", None))
        else:
            dx, dhx, dcx, dw = torch.ops.rnnx.backward(*args)
    wgrads = [None] * len(weights)
    if mask[3]:
        wgrads, offset = [], 0
        for w in weights:
            wgrads.append(dw[offset:offset + w.numel()].view(w.shape))
            offset += w.numel()
    return (dx if mask[0] else None, dhx if mask[1] else None, dcx if mask[2] else None,
            wgrads, None, None, None, None, None, None, None, None, None, None, None)


class _ForwardFunction(torch.autograd.Function):
    # Under torch.vmap functorch runs forward and backward through the operators' own vmap
    # rules (_forward_vmap, _backward_vmap).
    generate_vmap_rule = True

    """forward's autograd, registered for the Autograd dispatch key: the operator below
    autograd, then backward through torch.ops.rnnx.backward. torch.library's
    register_autograd would do the same through pytree and default-filling layers that cost
    about 150 us per call (PyTorch 2.15, measured with cProfile). The tensors travel
    unpacked because autograd.Function sees only tensors passed directly, the rest as one
    tuple because Function.apply binds its arguments to forward's signature at every call
    (inspect.signature: a cost per named parameter)."""

    @staticmethod
    def forward(options, *tensors):
        x, hx, cx, lengths, batch_sizes, sorted_indices, *weights = tensors
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.rnnx.forward.default(x, hx, cx, weights, lengths, batch_sizes,
                                                  sorted_indices, *options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        options, x, hx, cx, lengths, batch_sizes, sorted_indices, *weights = inputs
        _setup_context(ctx, (x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                             *options), output)
        ctx.mark_non_differentiable(output[3])

    @staticmethod
    def backward(ctx, dy, dhy, dcy, dreserve):
        dx, dhx, dcx, wgrads, *_ = _autograd_backward(ctx, dy, dhy, dcy, dreserve)
        return (None, dx, dhx, dcx, None, None, None, *wgrads)


class _EagerForward(torch.autograd.Function):
    """The operator's autograd for the module's eager calls (plain tensors, no compiler,
    mode or torch.func transform: rnnx.torch decides), in the form with `ctx` in forward:
    Function.apply then does not bind the arguments to a signature (inspect, about 5 us a
    call), which only torch.func's transforms need. The forward calls the kernel itself:
    the dispatcher's two passes (to the Autograd kernel, then below it) would add nothing
    but per-call time. The arguments sit where _ForwardFunction's do; the backward is its."""

    @staticmethod
    def forward(ctx, options, *tensors):
        x, hx, cx, lengths, batch_sizes, sorted_indices, *weights = tensors
        output = forward_kernel(x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                                *options)
        _setup_context(ctx, (x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                             *options), output)
        ctx.mark_non_differentiable(output[3])
        return output

    @staticmethod
    def backward(ctx, dy, dhy, dcy, dreserve):
        dx, dhx, dcx, wgrads, *_ = _autograd_backward(ctx, dy, dhy, dcy, dreserve, direct=True)
        return (None, dx, dhx, dcx, None, None, None, *wgrads)


class _PreparedForward(torch.autograd.Function):
    """The same for a module's cached eager CPU training call: the kernels run the plan at
    the weights' address it remembered (Prepared), looking nothing up, forward and
    backward."""

    @staticmethod
    def forward(ctx, prepared, *tensors):
        # forward_kernel's work for what the cached call has checked (dense CPU tensors of
        # the plan's shapes, no lengths, no dropout): outputs, a reserve, one binding call.
        x, hx, cx, lengths, batch_sizes, sorted_indices, *weights = tensors
        y, hy, cy = prepared.outputs(x.dtype)
        if cy is None:
            cy = torch.empty((0,), dtype=x.dtype)  # forward_kernel's for a cell without c
        reserve = _reserve_tensor(prepared.engine, prepared.reserve_size, x.device)
        prepared.call(x.data_ptr(), y.data_ptr(), ptr(hx), ptr(cx), hy.data_ptr(),
                      cy.data_ptr() if prepared.lstm else 0, 0, prepared.threads(),
                      reserve.data_ptr(), prepared.reserve_size)
        output = (y, hy, cy, reserve)
        _setup_context(ctx, (x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                             *prepared.options), output)
        ctx.mark_non_differentiable(output[3])
        ctx.rnnx_prepared = prepared
        return output

    @staticmethod
    def backward(ctx, dy, dhy, dcy, dreserve):
        if torch.is_grad_enabled() or any(_legacy_batched(t) for t in (dy, dhy, dcy)):
            # A graph of the gradients (create_graph=True) or is_grads_batched: the operator's
            # own backward decides (_autograd_backward).
            return _EagerForward.backward(ctx, dy, dhy, dcy, dreserve)
        # _backward's work for the cached call: the plan and shapes are the forward's, and
        # autograd gives each output's gradient its output's shape and dtype.
        x, hx, cx, _, _, _, reserve, *weights = ctx.saved_tensors
        prepared = ctx.rnnx_prepared
        needs = ctx.needs_input_grad  # (prepared, x, hx, cx, lengths, bs, si, *weights)
        dx, dhx, dcx, dw = _prepared_gradients(prepared, x, hx, cx, needs[1:4], any(needs[7:]))
        dy, dhy = dense(dy), dense(dhy)
        dcy = dense(dcy) if prepared.lstm else None
        prepared.backward_call(x.data_ptr(), reserve.data_ptr(), prepared.reserve_size, ptr(hx),
                               ptr(cx), ptr(dy), ptr(dhy), ptr(dcy), ptr(dx), ptr(dhx),
                               ptr(dcx), ptr(dw), prepared.threads())
        return (None, dx, dhx, dcx, None, None, None, *_weight_grads(dw, weights))


def _prepared_gradients(prepared, x, hx, cx, need_xhc, need_w):
    """The gradients a cached call's backward writes (None: not wanted, or no such input):
    dx, dhx, dcx like x, hx, cx, and dw flat."""
    need_x, need_h, need_c = need_xhc

    def like(t, wanted):
        return torch.empty(t.shape, dtype=x.dtype) if wanted and t is not None else None

    dw = torch.empty((prepared.weights_numel,), dtype=x.dtype) if need_w else None
    return like(x, need_x), like(hx, need_h), like(cx, need_c), dw


def _weight_grads(dw, weights):
    """Each parameter's gradient as a view of the flat dw (None: no parameter wanted one), in
    the parameters' order, each contiguous in its parameter's shape. One as_strided per
    parameter: split_with_sizes and a view each cost three times as much in PyTorch 2.15 (a
    cell's four gradients: 14 us against 4.3), a tenth of a cached cell step. Eager calls only
    (the compiled routes take _autograd_backward's slices)."""
    if dw is None:
        return [None] * len(weights)
    grads, offset = [], dw.storage_offset()
    for w in weights:
        shape = w.shape
        grads.append(dw.as_strided(shape, _contiguous_strides(shape), offset))
        offset += w.numel()
    if offset != dw.storage_offset() + dw.numel():  # as split_with_sizes would refuse
        raise _rnnx.InternalError(
            f"rnnx.torch: the parameters hold {offset - dw.storage_offset()} elements, the "
            f"flat gradient {dw.numel()}; please report it")
    return grads


@functools.lru_cache(maxsize=256)
def _contiguous_strides(shape):
    """torch's strides of a contiguous tensor of this shape (a dimension of 0 or 1 counted
    as 1, as torch does)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _GeneralBackwardContext:
    """A cell's step's context in the operator's form (_setup_context's): what
    _autograd_backward reads, for the gradients _PreparedCellForward's own backward does not
    give (a graph of them, is_grads_batched)."""

    def __init__(self, ctx, x, hx, cx, reserve, weights):
        prepared = ctx.rnnx_prepared
        needs = ctx.needs_input_grad  # (prepared, x, hx, cx, *weights)
        # The sequence module's (1, B, ...) tensors; unsqueeze is differentiable, so a
        # graph of the gradients reaches the cell's own tensors.
        ones = [None if t is None else t.unsqueeze(0) for t in (x, hx, cx)]
        self.saved_tensors = (*ones, None, None, None, reserve, *weights)
        self.needs_input_grad = (False, *needs[1:4], False, False, False, *needs[4:])
        self.rnnx_args = prepared.options[:5]
        self.rnnx_training = True
        self.rnnx_prepared = prepared


class _PreparedCellForward(torch.autograd.Function):
    """A cell's cached eager CPU training step: _PreparedForward with a cell's shapes (x
    (B, I), states (B, H)) and only the states as outputs (the one-step sequence output, the
    same values, goes to the call's scratch), so nothing is reshaped on the way."""

    @staticmethod
    def forward(ctx, prepared, x, hx, cx, *weights):
        dtype = x.dtype
        hy = torch.empty(prepared.h_shape[1:], dtype=dtype)
        cy = torch.empty(prepared.c_shape[1:], dtype=dtype) if prepared.lstm else None
        reserve = _reserve_tensor(prepared.engine, prepared.reserve_size, x.device)
        prepared.call(x.data_ptr(), 0, ptr(hx), ptr(cx), hy.data_ptr(), ptr(cy), 0,
                      prepared.threads(), reserve.data_ptr(), prepared.reserve_size)
        ctx.set_materialize_grads(False)  # absent output gradients reach rnnx as null
        ctx.save_for_backward(x, hx, cx, *weights)
        # The reserve, neither an input nor an output, on the context: as a third output it
        # cost the step's autograd bookkeeping (about 3% of a tiny RNNCell's forward and
        # backward, A/B measured).
        ctx.rnnx_reserve = reserve
        ctx.rnnx_prepared = prepared
        return (hy, cy) if prepared.lstm else hy

    @staticmethod
    def backward(ctx, dhy, dcy=None):
        prepared = ctx.rnnx_prepared
        x, hx, cx, *weights = ctx.saved_tensors
        reserve = ctx.rnnx_reserve
        needs = ctx.needs_input_grad  # (prepared, x, hx, cx, *weights)
        if torch.is_grad_enabled() or any(_legacy_batched(t) for t in (dhy, dcy)):
            general = _GeneralBackwardContext(ctx, x, hx, cx, reserve, weights)
            dx, dhx, dcx, wgrads, *_ = _autograd_backward(
                general, None, None if dhy is None else dhy.unsqueeze(0),
                None if dcy is None else dcy.unsqueeze(0), None, direct=True)
            return (None, *[None if g is None else g.squeeze(0) for g in (dx, dhx, dcx)],
                    *wgrads)
        dx, dhx, dcx, dw = _prepared_gradients(prepared, x, hx, cx, needs[1:4], any(needs[4:]))
        dhy, dcy = dense(dhy), dense(dcy)
        prepared.backward_call(x.data_ptr(), reserve.data_ptr(), prepared.reserve_size, ptr(hx),
                               ptr(cx), 0, ptr(dhy), ptr(dcy), ptr(dx), ptr(dhx), ptr(dcx),
                               ptr(dw), prepared.threads())
        return (None, dx, dhx, dcx, *_weight_grads(dw, weights))


def prepared_cell_training_step(prepared, x, hx, cx, weights):
    """A cell's cached eager CPU training step: (hy, cy) with autograd, cy None but for
    LSTM."""
    out = _PreparedCellForward.apply(prepared, x, hx, cx, *weights)
    return out if prepared.lstm else (out, None)


# Function.apply binds its arguments to forward's signature at every call where there is a
# setup_context (inspect.signature, about 6 us); a signature set on the function is returned
# at once.
_ForwardFunction.forward.__signature__ = inspect.signature(_ForwardFunction.forward)


def prepared_training_forward(prepared, x, hx, cx, weights):
    """A module's cached eager CPU training call (Prepared): (y, hy, cy, reserve) with the
    operator's autograd."""
    return _PreparedForward.apply(prepared, x, hx, cx, None, None, None, *weights)


def _autograd_kernel(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, *options):
    return _ForwardFunction.apply(options, x, hx, cx, lengths, batch_sizes, sorted_indices,
                                  *weights)


def eager_training_forward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, *options):
    """rnnx::forward with its autograd, called by the module in eager mode (_EagerForward):
    (y, hy, cy, reserve)."""
    return _EagerForward.apply(options, x, hx, cx, lengths, batch_sizes, sorted_indices,
                               *weights)


# ---- vmap (torch.vmap, jacrev, is_grads_batched) -----------------------------------------------

def _at(t, dim, v):
    """Example v of a vmapped tensor (dim: its vmapped dimension), or the tensor itself."""
    return t if t is None or dim is None else t.select(dim, v)


def _move_first(t, dim, n):
    """t with its vmapped dimension first ([n, ...]): expanded where t is not vmapped."""
    return t.movedim(dim, 0) if dim is not None else t.unsqueeze(0).expand(n, *t.shape)


def _fold(t, dim, n, axis):
    """[n, ..., B at `axis`, ...] -> the n examples side by side along rnnx's batch axis."""
    t = _move_first(t, dim, n).movedim(0, axis)  # [..., n, B, ...]
    shape = list(t.shape)
    return t.reshape(shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:])


def _unfold(t, n, axis):
    """rnnx's batch axis [.., n*B, ..] -> [.., n, B, ..]: the vmapped dimension at `axis`."""
    shape = list(t.shape)
    return t.reshape(shape[:axis] + [n, shape[axis] // n] + shape[axis + 1:])


def _stack_bytes(reserves):
    """The examples' reserves as one [n, bytes] tensor (the longest; a reserve may be longer
    than its batch needs, and lengths may differ by example)."""
    size = max(r.numel() for r in reserves)
    return torch.stack([torch.nn.functional.pad(r, (0, size - r.numel())) for r in reserves])


def _forward_vmap(info, in_dims, x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                  config, engine, backend, num_threads, batch_first, training, dropout_counter,
                  static_reserve):
    """rnnx::forward under vmap. An inference call on padded input with shared weights folds
    the vmapped examples into rnnx's batch: one call of n*B sequences (a new shape on the
    network: its schedule only). A training call runs each example on its own, so that each
    keeps a reserve of its own and its backward gives per-example weight gradients (rnnx's
    backward sums over the batch); so do packed input and vmapped weights. Dropout masks are
    the same for every example (randomness='same'); 'error' (vmap's default) refuses them."""
    n = info.batch_size
    x_d, h_d, c_d, w_d, len_d, bs_d, si_d = in_dims[:7]
    w_d = list(w_d) if isinstance(w_d, (list, tuple)) else [None] * len(weights)
    if training and float(config_info(config).kwargs.get("dropout") or 0) > 0:
        if info.randomness != "same":
            raise _rnnx.UnsupportedError(
                f"rnnx.torch: dropout under torch.vmap needs randomness='same' (got "
                f"{info.randomness!r}): rnnx's masks come from (seed, counter, layer, position)")
    options = (config, engine, backend, num_threads, batch_first, training, dropout_counter,
               static_reserve)
    lstm = config_info(config).lstm
    if (not training and batch_sizes is None and all(d is None for d in w_d)
            and bs_d is None and si_d is None):
        batch_axis = 0 if batch_first else 1
        xf = _fold(x, x_d, n, batch_axis)
        hf = None if hx is None else _fold(hx, h_d, n, 1)
        cf = None if cx is None else _fold(cx, c_d, n, 1)
        if lengths is None:
            lf = None
        else:
            lf = _move_first(lengths, len_d, n).reshape(-1)
        y, hy, cy, reserve = torch.ops.rnnx.forward(xf, hf, cf, weights, lf, None, None,
                                                    *options)
        return ((_unfold(y, n, batch_axis), _unfold(hy, n, 1),
                 _unfold(cy, n, 1) if lstm else cy, reserve),
                (batch_axis, 1, 1 if lstm else None, None))
    outs = []
    for v in range(n):
        outs.append(torch.ops.rnnx.forward(
            _at(x, x_d, v), _at(hx, h_d, v), _at(cx, c_d, v),
            [_at(w, d, v) for w, d in zip(weights, w_d)], _at(lengths, len_d, v),
            _at(batch_sizes, bs_d, v), _at(sorted_indices, si_d, v), *options))
    y, hy, cy = (torch.stack([o[k] for o in outs]) for k in range(3))
    return (y, hy, cy, _stack_bytes([o[3] for o in outs])), (0, 0, 0, 0)


def _backward_vmap(info, in_dims, x, hx, cx, weights, lengths, batch_sizes, sorted_indices,
                   config, engine, backend, num_threads, batch_first, reserve, dy, dhy, dcy,
                   output_mask):
    """rnnx::backward under vmap: one backward per example. With the reserve vmapped (the
    forward ran under vmap, _forward_vmap's training calls), each example's own; without
    (is_grads_batched, jacrev: vmap over the output gradients of one forward), the one
    reserve for each, as several backwards from one reserve may run (rnnx/plan.hpp)."""
    n = info.batch_size
    d = list(in_dims)
    w_d = list(d[3]) if isinstance(d[3], (list, tuple)) else [None] * len(weights)
    options = (config, engine, backend, num_threads, batch_first)
    outs = []
    for v in range(n):
        outs.append(torch.ops.rnnx.backward(
            _at(x, d[0], v), _at(hx, d[1], v), _at(cx, d[2], v),
            [_at(w, wd, v) for w, wd in zip(weights, w_d)], _at(lengths, d[4], v),
            _at(batch_sizes, d[5], v), _at(sorted_indices, d[6], v), *options,
            _at(reserve, d[12], v), _at(dy, d[13], v), _at(dhy, d[14], v), _at(dcy, d[15], v),
            output_mask))
    return tuple(torch.stack([o[k] for o in outs]) for k in range(4)), (0, 0, 0, 0)


_FORWARD_SCHEMA = (
    "forward(Tensor x, Tensor? hx, Tensor? cx, Tensor[] weights, Tensor? lengths, "
    "Tensor? batch_sizes, Tensor? sorted_indices, str config, int engine, str backend, "
    "int num_threads, bool batch_first, bool training, int dropout_counter, "
    "bool static_reserve) -> (Tensor y, Tensor hy, Tensor cy, Tensor reserve)")
_BACKWARD_SCHEMA = (
    "backward(Tensor x, Tensor? hx, Tensor? cx, Tensor[] weights, Tensor? lengths, "
    "Tensor? batch_sizes, Tensor? sorted_indices, str config, int engine, str backend, "
    "int num_threads, bool batch_first, Tensor reserve, Tensor? dy, Tensor? dhy, Tensor? dcy, "
    "bool[] output_mask) -> (Tensor dx, Tensor dhx, Tensor dcx, Tensor dweights)")

# The same with the weights as one tensor in rnnx's layout. PyTorch's legacy vmap
# (torch.autograd.grad(..., is_grads_batched=True)) has no rules from Python and can loop only
# over an operator without a Tensor[] argument: _autograd_backward calls this one there.
_BACKWARD_FLAT_SCHEMA = (
    "backward_flat(Tensor x, Tensor? hx, Tensor? cx, Tensor weights, Tensor? lengths, "
    "Tensor? batch_sizes, Tensor? sorted_indices, str config, int engine, str backend, "
    "int num_threads, bool batch_first, Tensor reserve, Tensor? dy, Tensor? dhy, Tensor? dcy, "
    "bool[] output_mask) -> (Tensor dx, Tensor dhx, Tensor dcx, Tensor dweights)")


def _backward_flat(x, hx, cx, flat, lengths, batch_sizes, sorted_indices, config, *rest):
    weights = [flat[p.offset:p.offset + p.numel].view(p.shape)
               for p in config_info(config).params]
    return _backward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, config, *rest)


def _legacy_batched(t):
    """Whether t carries a dimension of PyTorch's legacy vmap (is_grads_batched)."""
    check = getattr(_functorch, "is_legacy_batchedtensor", None)
    return t is not None and check is not None and check(t)


_library = None


def register():
    """Defines torch.ops.rnnx.forward/backward once per process (PyTorch 2.4+)."""
    global _library
    if _library is not None or not AVAILABLE:
        return
    lib = torch.library.Library("rnnx", "DEF")
    lib.define(_FORWARD_SCHEMA)
    lib.define(_BACKWARD_SCHEMA)
    lib.define(_BACKWARD_FLAT_SCHEMA)
    for key in ("CPU", "CUDA"):
        lib.impl("forward", forward_kernel, key)
        lib.impl("backward", _backward, key)
        lib.impl("backward_flat", _backward_flat, key)
    torch.library.register_fake("rnnx::forward", _forward_fake, lib=lib)
    torch.library.register_fake("rnnx::backward", _backward_fake, lib=lib)
    lib.impl("forward", _autograd_kernel, "Autograd")
    if VMAP_RULES:  # PyTorch 2.5 and later
        torch.library.register_vmap("rnnx::forward", _forward_vmap, lib=lib)
        torch.library.register_vmap("rnnx::backward", _backward_vmap, lib=lib)
    _library = lib
