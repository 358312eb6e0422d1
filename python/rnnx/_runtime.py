"""What rnnx's NumPy and PyTorch front ends share: a network cache keyed by (config,
purpose), each call's batch on it, one workspace grown to the largest call and reused, and a
pool of reserve buffers.

Memory touched for the first time is slow (page faults; very slow on some VMs), so buffers
are kept and handed out again instead of being allocated per call.
"""

import collections
import operator
import threading
import time
import weakref

import numpy as np

from . import _rnnx

# Batches kept by shape per engine: a stream of one shape then makes no batch per call (a
# batch of new lengths costs its schedule only: the network keeps everything else).
_KEPT_BATCHES = 8
_ALIGN = 64  # plan.hpp: sub-buffers are carved at 64-byte offsets from the base


def aligned_bytes(nbytes):
    """A 64-byte aligned uint8 array of nbytes (at least 1)."""
    nbytes = max(int(nbytes), 1)
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _ALIGN
    return raw[offset:offset + nbytes]


class Workspace:
    """One call's workspace: the aligned array and its address (which the pointer entry
    points take; reading it from NumPy costs microseconds per call)."""

    __slots__ = ("array", "address", "nbytes")

    def __init__(self, nbytes):
        self.array = aligned_bytes(nbytes)
        self.address = self.array.ctypes.data
        self.nbytes = self.array.nbytes


# One parameter of the flat weight buffer (picklable, unlike the bound WeightParam).
Param = collections.namedtuple("Param", "name offset numel shape")


def layout(config):
    """The flat buffer's parameters, in order, with PyTorch's names and shapes."""
    return [Param(p.name, p.offset, p.numel, tuple(p.shape)) for p in config.weight_params()]


def invalid(message):
    return _rnnx.InvalidArgumentError(message)


def real_arg(value, name):
    """A real-valued argument (padding_fill, gate_clip, dropout) as a float; float() alone
    would say "could not convert string to float" without naming the argument."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r} "
                        f"({type(value).__name__})") from None


def clip_arg(clip, name):
    """cell_clip / proj_clip: None or a pair (lo, hi) of real numbers."""
    if clip is None:
        return None
    try:
        lo, hi = clip
    except (TypeError, ValueError):
        raise invalid(f"{name} must be None or a pair (lo, hi), got {clip!r}") from None
    return (real_arg(lo, f"{name} lo"), real_arg(hi, f"{name} hi"))


def seed_arg(value):
    """A dropout seed as an int in [0, 2**64), the binding's uint64."""
    try:
        seed = operator.index(value)
    except TypeError:
        raise TypeError(f"seed must be an integer, got {value!r} "
                        f"({type(value).__name__})") from None
    if not 0 <= seed < 2 ** 64:
        raise invalid(f"seed (= {seed}) must be in [0, 2**64)")
    return seed


def count_arg(value, name):
    """A count argument (num_threads, ...) as an int >= 0, checked when the module is built
    rather than at its first call. Floats are refused, not truncated, as torch.nn does."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r} "
                        f"({type(value).__name__})") from None
    if n < 0:
        raise invalid(f"{name} (= {n}) must be >= 0")
    return n


def resolve_backend(config, backend):
    """The backend a module runs `config` on. None or 'auto': 'cpu', or 'reference' when the
    cpu backend refuses the config (no config today: it runs ONNX's options too). An explicit
    'cpu' that cannot run the config raises rnnx.UnsupportedError now rather than at the
    first call. The cpu backend decides by the config alone, so a plan for one step of one
    sequence is enough to ask it."""
    if backend not in (None, "auto", "cpu"):
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a string or None, got {backend!r}")
        # A misspelt name, or a backend that cannot run the config, is refused now rather
        # than at the first call; a plan for one step of one sequence costs next to nothing.
        _rnnx.Plan.padded(config, 1, 1, backend=backend,
                          purpose="inference" if config.resolved_math == "int8" else "training")
        return backend
    if not config.uses_onnx_options:
        return "cpu"
    if config.resolved_math == "int8":
        return "cpu"  # a demand: the cpu backend runs it or refuses it, no fallback
    try:
        _rnnx.Plan.padded(config, 1, 1, backend="cpu")
    except _rnnx.UnsupportedError:
        if backend == "cpu":
            raise
        return "reference"
    return "cpu"


class ReservePool:
    """Reserve buffers handed out to training forwards and given back when the backward
    that needs them can no longer run (the autograd node or the module let go of them)."""

    def __init__(self, keep=4):
        self._free = []
        self._keep = keep
        self._lock = threading.Lock()

    def acquire(self, nbytes):
        with self._lock:
            # Smallest free buffer that is large enough; drop surplus small ones.
            fitting = [b for b in list(self._free) if b.nbytes >= nbytes]
            if fitting:
                buf = min(fitting, key=lambda b: b.nbytes)
                # Found by identity: list.remove would compare arrays elementwise (an
                # error or a warning, and a new buffer instead of the free one).
                for i, b in enumerate(self._free):
                    if b is buf:
                        del self._free[i]
                        return buf
            while len(self._free) >= self._keep:
                self._free.pop(0)
        return aligned_bytes(nbytes)

    def release(self, buf):
        # No lock: may run from a finalizer at any point; list.append is atomic.
        if buf is not None:
            self._free.append(buf)


class ReserveHandle:
    """Owns a reserve buffer; gives it back to its pool when garbage-collected."""

    __slots__ = ("pool", "buffer")

    def __init__(self, pool, buffer):
        self.pool = pool
        self.buffer = buffer

    def __del__(self):
        # A handle made without __init__ (copy, tracing) has no pool: nothing to give back.
        pool = getattr(self, "pool", None)
        self.pool = None
        if pool is not None:
            pool.release(self.buffer)


class Engine:
    """Networks cached per (config, purpose) in LRU order, the batches made on them, and the
    buffers they run with.

    A network (rnnx/network.hpp) is made once per config; each call's shape is a batch on it,
    which costs its schedule only (the search's choice per size class is the network's). The
    last few batches are kept by shape, so that a stream of batches of one shape makes none.
    Calls from several threads run side by side: a network serves concurrent calls, each call
    takes a workspace of its own from a small pool, and a call whose batch is kept takes no
    lock at all. The lock guards only making and caching a network or a batch."""

    def __init__(self, backend="cpu", num_threads=0, cache_size=32, threads_from=None):
        self.backend = backend
        self.num_threads = count_arg(num_threads, "num_threads")
        # Without num_threads, a function giving the thread count of each call, asked at call
        # time (rnnx.torch: torch.get_num_threads); None leaves the calling thread's count.
        self.threads_from = threads_from if self.num_threads == 0 else None
        self.cache_size = int(cache_size)
        self.networks_built = 0  # how many networks this engine has made
        # Seconds each of the last 10,000 batch set-ups took (one whose size class is new to
        # its network may run the algorithm search): what a stream of batches with changing
        # lengths pays before any work runs.
        self.batch_setup_seconds = collections.deque(maxlen=10_000)
        self._networks = collections.OrderedDict()
        self._batches = collections.OrderedDict()
        self._configs = {}
        # Workspaces not in use; list.pop and list.append are atomic, so taking and giving
        # back needs no lock. One thread alternating forward and backward keeps reusing the
        # largest (memory touched for the first time is slow).
        self._workspaces = []
        self.reserves = ReservePool()
        self.lock = threading.RLock()

    def config(self, **kwargs):
        key = tuple(sorted(kwargs.items()))
        cfg = self._configs.get(key)
        if cfg is None:
            cfg = _rnnx.Config(**kwargs)
            if len(self._configs) > 64:
                self._configs.clear()
            self._configs[key] = cfg
        return cfg, key

    def network_stats(self):
        """The networks' counters summed: batches bound, backends built, slots, the seconds
        spent binding shapes and the bytes of packed weights kept (rnnx.Network.stats)."""
        total = {"networks": len(self._networks), "batches": 0, "backends_built": 0, "slots": 0,
                 "bind_seconds": 0.0, "kept_weights_bytes": 0}
        for net in list(self._networks.values()):
            for k, v in net.stats().items():
                total[k] += v
        return total

    def plan(self, config, config_key, shape_key, purpose="training"):
        """The batch of `shape_key` on the network of (config, purpose), used as a plan.
        shape_key: ('padded', T, B, lengths tuple or None, batch_first) or ('packed',
        batch_sizes tuple, sorted_indices tuple or None). purpose: 'training' (training steps
        and inference) or 'inference' (inference forwards only, whose algorithm search times
        a forward, not a training step)."""
        key = (config_key, shape_key, purpose)
        batch = self._batches.get(key)  # one C call under the GIL: no lock needed to read
        if batch is not None:
            try:
                self._batches.move_to_end(key)
            except KeyError:  # dropped by another thread meanwhile; the batch is still good
                pass
            return batch
        with self.lock:
            batch = self._batches.get(key)  # made by another thread while this one waited
            if batch is not None:
                return batch
            net = self._network(config, config_key, purpose)
            start = time.perf_counter()
            # The algorithm search measures on the thread count the calls will run with.
            threads = self._threads()
            try:
                if shape_key[0] == "padded":
                    _, T, B, lengths, batch_first = shape_key
                    batch = net.padded(T, B, None if lengths is None else list(lengths),
                                       batch_first)
                else:
                    _, batch_sizes, sorted_indices = shape_key
                    batch = net.packed(list(batch_sizes),
                                       None if sorted_indices is None else list(sorted_indices))
            finally:
                self._restore_threads(threads)
            self.batch_setup_seconds.append(time.perf_counter() - start)
            self._batches[key] = batch
            while len(self._batches) > _KEPT_BATCHES:
                self._batches.popitem(last=False)
        return batch

    def _network(self, config, config_key, purpose):
        key = (config_key, purpose)
        net = self._networks.get(key)
        if net is not None:
            self._networks.move_to_end(key)
            return net
        net = _rnnx.Network(config, self.backend, self.num_threads, purpose)
        self.networks_built += 1
        self._networks[key] = net
        while len(self._networks) > self.cache_size:
            self._networks.popitem(last=False)
        return net

    def _take_workspace(self, nbytes):
        if nbytes == 0:
            return None
        try:
            ws = self._workspaces.pop()
        except IndexError:
            ws = None
        if ws is None or ws.nbytes < nbytes:
            ws = None  # let a small one go before touching a new one
            ws = Workspace(nbytes)
        return ws

    def _give_back_workspace(self, ws):
        if ws is not None and len(self._workspaces) < 4:
            self._workspaces.append(ws)

    def _threads(self):
        """The calling thread's count to restore after a call, after setting this call's from
        threads_from; None when the engine leaves it alone."""
        if self.threads_from is None:
            return None
        saved = _rnnx.get_num_threads()
        _rnnx.set_num_threads(max(1, int(self.threads_from())))
        return saved

    def _restore_threads(self, saved):
        if saved is not None:
            _rnnx.set_num_threads(saved)

    def forward(self, plan, x, weights, y, h0=None, c0=None, hy=None, cy=None, training=False,
                dropout_counter=0, reserve=None):
        ws = self._take_workspace(plan.forward_workspace_size(training))
        threads = self._threads()
        try:
            plan.forward(x, weights, y, h0=h0, c0=c0, hy=hy, cy=cy, training=training,
                         dropout_counter=dropout_counter,
                         workspace=None if ws is None else ws.array, reserve=reserve)
        finally:
            self._restore_threads(threads)
            self._give_back_workspace(ws)

    def forward_ptr(self, plan, x, weights, y, h0, c0, hy, cy, training, dropout_counter,
                    reserve, reserve_size, weights_version=0):
        """forward on host buffers given by address (0: absent), whose sizes the caller has
        checked against the plan's: rnnx.torch's CPU kernel, where NumPy views of its
        tensors would cost more than rnnx's own call on small problems. weights_version:
        ForwardArgs::weights_version (0: unknown)."""
        ws = self._take_workspace(plan.forward_workspace_size(training))
        threads = self._threads()
        try:
            plan.forward_ptr(x, weights, y, h0=h0, c0=c0, hy=hy, cy=cy, training=training,
                             dropout_counter=dropout_counter,
                             workspace=0 if ws is None else ws.address,
                             workspace_size=0 if ws is None else ws.nbytes,
                             reserve=reserve, reserve_size=reserve_size,
                             weights_version=weights_version)
        finally:
            self._restore_threads(threads)
            self._give_back_workspace(ws)

    def backward_ptr(self, plan, x, weights, reserve, reserve_size, **kwargs):
        """backward on host buffers given by address (0: absent), whose sizes the caller has
        checked against the plan's (as forward_ptr)."""
        ws = self._take_workspace(plan.backward_workspace_size)
        threads = self._threads()
        try:
            plan.backward_ptr(x, weights, reserve, reserve_size,
                              workspace=0 if ws is None else ws.address,
                              workspace_size=0 if ws is None else ws.nbytes, **kwargs)
        finally:
            self._restore_threads(threads)
            self._give_back_workspace(ws)

    def backward(self, plan, x, weights, reserve, **kwargs):
        ws = self._take_workspace(plan.backward_workspace_size)
        threads = self._threads()
        try:
            plan.backward(x, weights, reserve, workspace=None if ws is None else ws.array,
                          **kwargs)
        finally:
            self._restore_threads(threads)
            self._give_back_workspace(ws)


def shape_key_padded(T, B, lengths, batch_first):
    return ("padded", int(T), int(B), None if lengths is None else tuple(lengths), bool(batch_first))


def shape_key_packed(batch_sizes, sorted_indices):
    return ("packed", tuple(batch_sizes), None if sorted_indices is None else tuple(sorted_indices))


_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


# A device tensor's index values read to the host, kept while the tensor lives and is not
# modified in place (its version counter): on CUDA each read is a device-to-host copy and a
# wait, and one training step reads a PackedSequence's sorted_indices in the module, in the
# operator's forward and in its backward, a padded batch's lengths likewise. With the cache a
# device index tensor costs one copy for its lifetime (the issue-47 contract: "with lengths
# as device tensors, one documented copy"). Keyed by the tensor object (a weak reference, so
# a new tensor at a freed address is never taken for the old one); a few entries per thread.
# CPU tensors are read every time: that costs no wait, and a CPU tensor can change without
# its version counter moving (through .numpy() or .data), which a device tensor cannot
# through .numpy().
_HOST_INDICES = threading.local()
_HOST_INDICES_KEPT = 8


def _caches_reads(t):
    """Whether `t`'s index values are kept after a read (_HOST_INDICES): device tensors."""
    device = getattr(t, "device", None)
    return device is not None and getattr(device, "type", "cpu") != "cpu"


def _tensor_to_numpy(t):
    """A torch tensor's values on the host as a NumPy array: the one place index tensors are
    copied from their device."""
    return t.detach().cpu().numpy()


def _cached_index_values(t):
    if not _caches_reads(t):
        return None
    cache = getattr(_HOST_INDICES, "entries", None)
    if not cache:
        return None
    hit = cache.get(id(t))
    if hit is None:
        return None
    ref, version, values = hit
    try:
        if ref() is t and t._version == version:
            return values
    except Exception:  # a tensor subclass or wrapper without a version counter
        pass
    return None


def _remember_index_values(t, values):
    if not _caches_reads(t):
        return
    try:
        entry = (weakref.ref(t), t._version, values)
    except Exception:  # no weak references or version counter: not cached
        return
    cache = getattr(_HOST_INDICES, "entries", None)
    if cache is None:
        cache = _HOST_INDICES.entries = collections.OrderedDict()
    cache[id(t)] = entry
    cache.move_to_end(id(t))
    while len(cache) > _HOST_INDICES_KEPT:
        cache.popitem(last=False)


def prefetch_index_tensors(*tensors):
    """Reads the not yet cached ones of `tensors` (torch tensors on one device, or None) to the
    host in one copy (one wait on CUDA instead of one per tensor), for as_index_list to find.
    Values are validated there, not here."""
    todo = [t for t in tensors if t is not None and hasattr(t, "detach") and _caches_reads(t)
            and _cached_index_values(t) is None]
    if len(todo) < 2 or any(t.dim() != 1 or t.device != todo[0].device
                            or t.dtype != todo[0].dtype for t in todo):
        return
    import torch
    flat = _tensor_to_numpy(torch.cat([t.detach() for t in todo]))
    at = 0
    for t in todo:
        n = t.shape[0]
        _remember_index_values(t, flat[at:at + n])
        at += n


def as_index_list(values, name):
    """lengths / batch_sizes / sorted_indices from a list, NumPy array or torch tensor, as
    Python ints. Floats are accepted when they hold whole numbers (torch's own lengths are
    often float tensors); anything else, and values outside int64 (which the binding would
    refuse with an opaque overload error), raises rnnx.InvalidArgumentError naming `name`.
    A tensor is read to the host once while it lives unmodified (_cached_index_values)."""
    kind = type(values).__name__
    try:
        if hasattr(values, "detach"):  # torch tensor, without importing torch here
            tensor = values
            values = _cached_index_values(tensor)
            if values is None:
                values = _tensor_to_numpy(tensor)
                _remember_index_values(tensor, values)
        arr = np.asarray(values)
    except Exception as e:  # a meta tensor, a ragged list, ...
        raise invalid(f"{name} must be a 1-D sequence of integers; converting "
                      f"{kind} failed: {e}") from None
    if arr.ndim != 1:
        raise invalid(f"{name} must be 1-D, got shape {tuple(arr.shape)}")
    if arr.size == 0:
        return []
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr)) | (arr < _INT64_MIN) | (arr >= 2.0 ** 63)
        if bad.any():
            i = int(np.argmax(bad))
            raise invalid(f"{name} must hold integers, but {name}[{i}] (= {float(arr[i])}) is "
                          "not a whole number in int64's range")
        return [int(v) for v in arr]
    if arr.dtype.kind == "O":
        # Python ints too large for int64 land here; so do None and strings.
        for i, v in enumerate(arr):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise invalid(f"{name} must hold integers, got {name}[{i}] = {v!r}")
    elif arr.dtype.kind not in "iu":
        raise invalid(f"{name} must hold integers, got dtype {arr.dtype}")
    out = [int(v) for v in arr]
    for i, v in enumerate(out):
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise invalid(f"{name} must hold integers in int64's range, but {name}[{i}] = {v}")
    return out


# Array kinds a float computation may take by conversion: bool, signed, unsigned, float.
# Complex would lose its imaginary part (NumPy only warns), and strings, objects and dates
# would be parsed or reinterpreted as numbers.
_REAL_KINDS = "biuf"


def as_real_array(value, name, dtype):
    """value (a NumPy array, a torch tensor, nested lists) as a C-contiguous array of
    `dtype`, converted with one copy when needed; rnnx.InvalidArgumentError naming `name`
    for anything that is not real-valued numbers."""
    if hasattr(value, "detach"):  # torch tensor, without importing torch here
        t = value.detach()
        if getattr(t, "layout", None) is not None and str(t.layout) != "torch.strided":
            raise invalid(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
        if t.is_complex():
            raise invalid(f"{name} has dtype {t.dtype}; a real (floating-point) array is needed")
        try:
            t = t.cpu().resolve_neg().resolve_conj()
            # NumPy has no bfloat16; float32 holds every bfloat16 exactly.
            if str(t.dtype) == "torch.bfloat16":
                t = t.float()
            value = t.numpy()
        except Exception as e:  # a meta tensor, ...
            raise invalid(f"{name}: cannot read a {t.dtype} tensor ({e})") from None
    try:
        arr = np.asarray(value)
    except Exception as e:  # ragged nested lists
        raise invalid(f"{name} must be an array of numbers; converting {type(value).__name__} "
                      f"failed: {e}") from None
    if arr.dtype.kind not in _REAL_KINDS:
        what = "" if arr.dtype.kind != "O" else f" ({type(value).__name__})"
        raise invalid(f"{name} has dtype {arr.dtype}{what}; a real (bool, integer or "
                      f"floating-point) array is needed")
    # asarray, not ascontiguousarray: that one turns a 0-d array into 1-d, which would make
    # the caller's shape message wrong.
    return np.asarray(arr, dtype=dtype, order="C")
