"""What rnnx's NumPy and PyTorch front ends share: a plan cache keyed by (config, sequence
shape), one workspace grown to the largest call and reused, and a pool of reserve buffers.

Memory touched for the first time is slow (page faults; very slow on some VMs), so buffers
are kept and handed out again instead of being allocated per call.
"""

import collections
import threading
import time

import numpy as np

from . import _rnnx

_ALIGN = 64  # plan.hpp: sub-buffers are carved at 64-byte offsets from the base


def aligned_bytes(nbytes):
    """A 64-byte aligned uint8 array of nbytes (at least 1)."""
    nbytes = max(int(nbytes), 1)
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _ALIGN
    return raw[offset:offset + nbytes]


# One parameter of the flat weight buffer (picklable, unlike the bound WeightParam).
Param = collections.namedtuple("Param", "name offset numel shape")


def layout(config):
    """The flat buffer's parameters, in order, with PyTorch's names and shapes."""
    return [Param(p.name, p.offset, p.numel, tuple(p.shape)) for p in config.weight_params()]


def invalid(message):
    return _rnnx.InvalidArgumentError(message)


def resolve_backend(config, backend):
    """The backend a module runs `config` on. None or 'auto': 'cpu', or 'reference' when the
    cpu backend refuses the config (no config today: it runs ONNX's options too). An explicit
    'cpu' that cannot run the config raises rnnx.UnsupportedError now rather than at the
    first call. The cpu backend decides by the config alone, so a plan for one step of one
    sequence is enough to ask it."""
    if backend not in (None, "auto", "cpu"):
        return backend
    if not config.uses_onnx_options:
        return "cpu"
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
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.release(self.buffer)


class Engine:
    """Plans cached per (config, shape) in LRU order, plus the buffers they run with.
    Not meant to be shared between threads without its lock: every execution holds it."""

    def __init__(self, backend="cpu", num_threads=0, cache_size=32):
        self.backend = backend
        self.num_threads = int(num_threads)
        self.cache_size = int(cache_size)
        self.plans_built = 0  # for tests: how many plans this engine has built
        # Seconds each of the last 10,000 builds took (a build whose problem is new runs the
        # algorithm search): what a stream of batches with changing lengths pays for plans.
        self.plan_build_seconds = collections.deque(maxlen=10_000)
        self._plans = collections.OrderedDict()
        self._configs = {}
        self._workspace = None
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

    def plan(self, config, config_key, shape_key):
        """shape_key: ('padded', T, B, lengths tuple or None, batch_first) or
        ('packed', batch_sizes tuple, sorted_indices tuple or None)."""
        key = (config_key, shape_key)
        with self.lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
        start = time.perf_counter()
        if shape_key[0] == "padded":
            _, T, B, lengths, batch_first = shape_key
            plan = _rnnx.Plan.padded(config, T, B, None if lengths is None else list(lengths),
                                     batch_first, self.backend, self.num_threads)
        else:
            _, batch_sizes, sorted_indices = shape_key
            plan = _rnnx.Plan.packed(config, list(batch_sizes),
                                     None if sorted_indices is None else list(sorted_indices),
                                     self.backend, self.num_threads)
        seconds = time.perf_counter() - start
        with self.lock:
            self.plans_built += 1
            self.plan_build_seconds.append(seconds)
            self._plans[key] = plan
            while len(self._plans) > self.cache_size:
                self._plans.popitem(last=False)
        return plan

    def _workspace_for(self, nbytes):
        if nbytes == 0:
            return None
        if self._workspace is None or self._workspace.nbytes < nbytes:
            self._workspace = None  # let the old one go before touching a new one
            self._workspace = aligned_bytes(nbytes)
        return self._workspace

    def forward(self, plan, x, weights, y, h0=None, c0=None, hy=None, cy=None, training=False,
                dropout_counter=0, reserve=None):
        with self.lock:
            ws = self._workspace_for(plan.forward_workspace_size(training))
            plan.forward(x, weights, y, h0=h0, c0=c0, hy=hy, cy=cy, training=training,
                         dropout_counter=dropout_counter, workspace=ws, reserve=reserve)

    def backward(self, plan, x, weights, reserve, **kwargs):
        with self.lock:
            ws = self._workspace_for(plan.backward_workspace_size)
            plan.backward(x, weights, reserve, workspace=ws, **kwargs)


def shape_key_padded(T, B, lengths, batch_first):
    return ("padded", int(T), int(B), None if lengths is None else tuple(lengths), bool(batch_first))


def shape_key_packed(batch_sizes, sorted_indices):
    return ("packed", tuple(batch_sizes), None if sorted_indices is None else tuple(sorted_indices))


def as_index_list(values, name):
    """lengths / batch_sizes / sorted_indices from a list, NumPy array or torch tensor."""
    if hasattr(values, "detach"):  # torch tensor, without importing torch here
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise invalid(f"{name} must be 1-D, got shape {tuple(arr.shape)}")
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(arr == np.floor(arr)):
            arr = arr.astype(np.int64)
        else:
            raise invalid(f"{name} must hold integers, got dtype {arr.dtype}")
    return [int(v) for v in arr]
