"""rnnx.torch's autograd on PyTorch before 2.4 and under torch.func's transforms: a
torch.autograd.Function around rnnx's forward and backward (on PyTorch 2.4+ the modules
otherwise call the dispatcher operators of _torch_ops.py). The plan is built by the module
and travels in a _Call; the reserve comes from the engine's pool (CPU) or PyTorch's caching
allocator (CUDA)."""

import copy

import torch

from . import _runtime
from ._torch_ops import _at, _functorch, _functorch_active, dense as _dense, np_view as _np
from ._torch_ops import ptr as _ptr, refuse_double_backward, stream as _stream


class _Call:
    """What one forward needs besides tensors; the backward gets the same object."""

    __slots__ = ("engine", "plan", "params", "training", "counter", "lstm", "flat",
                 "y_shape", "h_shape", "c_shape", "dtype", "device", "flat_used", "reserve",
                 "dropout", "examples")


def _gather_flat(call, weights):
    flat = torch.empty(call.plan.weights_numel, dtype=call.dtype, device=weights[0].device)
    for w, p in zip(weights, call.params):
        flat[p.offset:p.offset + p.numel].copy_(w.detach().reshape(-1))
    return flat


class _DeviceReserve:
    """A CUDA call's reserve: bytes from PyTorch's caching allocator, freed with the node."""

    __slots__ = ("buffer",)

    def __init__(self, nbytes, device):
        self.buffer = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=device)


def _run_forward_cuda(call, x, h0, c0, flat):
    dev = call.device
    y = torch.empty(call.y_shape, dtype=call.dtype, device=dev)
    hy = torch.empty(call.h_shape, dtype=call.dtype, device=dev)
    cy = torch.empty(call.c_shape, dtype=call.dtype, device=dev) if call.lstm else None
    plan = call.plan
    reserve = _DeviceReserve(plan.reserve_size, dev) if call.training else None
    ws_size = plan.forward_workspace_size(call.training)
    ws = torch.empty(ws_size, dtype=torch.uint8, device=dev) if ws_size else None
    with torch.cuda.device(dev):
        plan.forward_ptr(_ptr(x), _ptr(flat), _ptr(y), h0=_ptr(h0), c0=_ptr(c0), hy=_ptr(hy),
                         cy=_ptr(cy), training=call.training, dropout_counter=call.counter,
                         workspace=_ptr(ws), workspace_size=ws_size,
                         reserve=0 if reserve is None else _ptr(reserve.buffer),
                         reserve_size=0 if reserve is None else plan.reserve_size,
                         stream=_stream(dev))
    return y, hy, cy, reserve


def _run_forward(call, x, h0, c0, flat):
    if call.device is not None:
        return _run_forward_cuda(call, x, h0, c0, flat)
    y = torch.empty(call.y_shape, dtype=call.dtype)
    hy = torch.empty(call.h_shape, dtype=call.dtype)
    cy = torch.empty(call.c_shape, dtype=call.dtype) if call.lstm else None
    reserve = None
    if call.training:
        pool = call.engine.reserves
        reserve = _runtime.ReserveHandle(pool, pool.acquire(call.plan.reserve_size))
    call.engine.forward(call.plan, _np(x), _np(flat), _np(y), h0=_np(h0), c0=_np(c0), hy=_np(hy),
                        cy=_np(cy), training=call.training, dropout_counter=call.counter,
                        reserve=None if reserve is None else reserve.buffer)
    return y, hy, cy, reserve


def _function_forward(call, x, h0, c0, weights):
    """The forward of _RnnxFunction: runs rnnx, keeps what backward needs on `call` (one
    object per forward), returns (y, hy[, cy])."""
    flat = call.flat if call.flat is not None else _gather_flat(call, weights)
    y, hy, cy, reserve = _run_forward(call, x, h0, c0, flat)
    call.flat_used = flat
    # Released to the engine's pool when the node (holding `call`) is freed, not after
    # backward: backward may run again with retain_graph=True.
    call.reserve = reserve
    return (y, hy, cy) if call.lstm else (y, hy)


def _function_setup_context(ctx, inputs):
    call, x, h0, c0, *weights = inputs
    ctx.set_materialize_grads(False)  # absent output gradients reach rnnx as null
    ctx.call = call
    ctx.save_for_backward(x, h0, c0, *weights)  # version checks catch in-place edits


def _function_backward(ctx, dy, dhy, dcy=None):
    refuse_double_backward()
    return _backward(ctx, dy, dhy, dcy)


def _unwrap_functorch(t):
    """The tensor under torch.func.grad's wrappers (which have no storage to hand rnnx):
    backward's results carry no graph anyway, so reading below the transform loses none."""
    if t is None or _functorch is None:
        return t
    while _functorch.is_functorch_wrapped_tensor(t):
        t = _functorch.get_unwrapped(t)
    return t


def _vmap_level(t):
    """The level of the innermost-created vmap dimension a gradient carries (torch.func's vjp
    under vmap: jacrev, vmap(grad)), or None."""
    level = None
    while t is not None and _functorch is not None and _functorch.is_functorch_wrapped_tensor(t):
        if _functorch.is_batchedtensor(t):
            found = _functorch.maybe_get_level(t)
            level = found if level is None else max(level, found)
        t = _functorch.get_unwrapped(t)
    return level


def _unwrap_level(t, level):
    """(t below its vmap dimension at `level`, that dimension), or (t, None) where it has none
    there; the wrappers of other levels around it (torch.func.grad's) are dropped, as
    _unwrap_functorch drops them."""
    u = t
    while u is not None and _functorch is not None and _functorch.is_functorch_wrapped_tensor(u):
        if _functorch.is_batchedtensor(u) and _functorch.maybe_get_level(u) == level:
            return _functorch._unwrap_batched(u, level)
        u = _functorch.get_unwrapped(u)
    return t, None


def _backward(ctx, dy, dhy, dcy=None):
    saved = ctx.saved_tensors
    levels = [lv for lv in (_vmap_level(t) for t in (*saved, dy, dhy, dcy)) if lv is not None]
    if levels:
        # Not through once_differentiable, whose detach of the results cannot take a tensor
        # batched below the grad level that is running; torch.func lifts them itself.
        return _backward_vmapped(ctx, max(levels), saved, dy, dhy, dcy)
    return _backward_once(ctx, saved, dy, dhy, dcy)


@torch.autograd.function.once_differentiable
def _backward_once(ctx, saved, dy, dhy, dcy):
    return _backward_below(ctx, ctx.call, saved, dy, dhy, dcy)


def _backward_below(ctx, call, saved, dy, dhy, dcy):
    tensors = [_unwrap_functorch(t) for t in (*saved, dy, dhy, dcy)]
    # Below torch.func's transforms, whose active levels would wrap every tensor this makes
    # (detach, empty_like) again; the results are lifted back to the level by PyTorch.
    if not _functorch_active():  # also PyTorch 1.x, whose _DisableFuncTorch is no context
        return _backward_plain(ctx, call, *tensors)
    with torch._C._DisableFuncTorch():
        return _backward_plain(ctx, call, *tensors)


def _backward_vmapped(ctx, level, saved, dy, dhy, dcy):
    """A backward with a vmap dimension, one rnnx backward per example, the results stacked
    and given that dimension: vmap over the vjp of one forward (jacrev: only the output
    gradients carry it; each backward reads the one reserve, as several backwards from one
    reserve may run, rnnx/plan.hpp), or the backward of a forward that ran under vmap
    (vmap(grad(...)): _function_vmap ran each example on its own call, with its reserve)."""
    examples = getattr(ctx.call, "examples", None)
    n = len(examples) if examples else None
    parts = []
    for t in (*saved, dy, dhy, dcy):
        inner, bdim = _unwrap_level(t, level)
        if bdim is not None:
            n = inner.shape[bdim]
            inner = inner.movedim(bdim, 0)
        parts.append((inner, bdim is not None))
    outs = []
    for v in range(n):
        at = [t[v] if batched else t for t, batched in parts]
        call = examples[v] if examples else ctx.call
        outs.append(_backward_below(ctx, call, at[:-3], *at[-3:]))
    return tuple(None if first is None
                 else _functorch._add_batch_dim(torch.stack([o[k] for o in outs]), 0, level)
                 for k, first in enumerate(outs[0]))


def _backward_plain(ctx, call, x, h0, c0, *rest):
    *weights, dy, dhy, dcy = rest
    needs = ctx.needs_input_grad  # (call, x, h0, c0, *weights)
    dx = torch.empty_like(x) if needs[1] else None
    dh0 = torch.empty_like(h0) if h0 is not None and needs[2] else None
    dc0 = torch.empty_like(c0) if c0 is not None and needs[3] else None
    want_w = any(needs[4:])
    dw = (torch.empty(call.plan.weights_numel, dtype=call.dtype, device=x.device)
          if want_w else None)
    # Dense copies held in locals until rnnx has run: on CUDA a temporary freed right after
    # taking its pointer goes back to the caching allocator, which may hand its block to the
    # next copy on the same stream before rnnx's backward reads it (issue #27).
    dy, dhy = _dense(dy), _dense(dhy)
    dcy = _dense(dcy) if call.lstm else None
    if call.device is not None:
        plan, dev = call.plan, call.device
        ws_size = plan.backward_workspace_size
        ws = torch.empty(ws_size, dtype=torch.uint8, device=dev) if ws_size else None
        with torch.cuda.device(dev):
            plan.backward_ptr(_ptr(x), _ptr(call.flat_used), _ptr(call.reserve.buffer),
                              plan.reserve_size, h0=_ptr(h0), c0=_ptr(c0), dy=_ptr(dy),
                              dhy=_ptr(dhy), dcy=_ptr(dcy), dx=_ptr(dx), dh0=_ptr(dh0),
                              dc0=_ptr(dc0), dweights=_ptr(dw), workspace=_ptr(ws),
                              workspace_size=ws_size, stream=_stream(dev))
    else:
        call.engine.backward(call.plan, _np(x), _np(call.flat_used), call.reserve.buffer,
                             h0=_np(h0), c0=_np(c0), dy=_np(dy), dhy=_np(dhy), dcy=_np(dcy),
                             dx=_np(dx), dh0=_np(dh0), dc0=_np(dc0), dweights=_np(dw))
    wgrads = []
    for i, p in enumerate(call.params):
        if dw is not None and needs[4 + i]:
            wgrads.append(dw[p.offset:p.offset + p.numel].view(weights[i].shape))
        else:
            wgrads.append(None)
    return (None, dx, dh0, dc0, *wgrads)


def _refuse_jvp(ctx, *tangents):
    raise _runtime._rnnx.UnsupportedError(
        "rnnx.torch: forward-mode AD (torch.func.jvp, jacfwd, hessian) through an rnnx "
        "LSTM/GRU/RNN is not supported: rnnx computes reverse-mode gradients only; use "
        "jacrev, or vmap(grad(...)) for per-example gradients")


def _function_vmap(info, in_dims, call, x, h0, c0, *weights):
    """_RnnxFunction under vmap (vmap around torch.func's grad transforms: vmap(grad(...)),
    per-example gradients): one rnnx forward per example, each a node of its own with its own
    reserve, so that its backward gives that example's gradients; the plan is the module's,
    made for one example's shape. Dropout masks are the same for every example
    (randomness='same'); 'error' (vmap's default) refuses them."""
    if call.training and call.dropout > 0 and info.randomness != "same":
        raise _runtime._rnnx.UnsupportedError(
            f"rnnx.torch: dropout under torch.vmap needs randomness='same' (got "
            f"{info.randomness!r}): rnnx's masks come from (seed, counter, layer, position)")
    w_dims = in_dims[4:]
    outs = []
    # The backward (one node for the batch, _backward_vmapped) finds each example's call here.
    call.examples = []
    for v in range(info.batch_size):
        example = copy.copy(call)  # a forward's reserve and weights live on its call
        example.examples = None
        if any(d is not None for d in w_dims):
            example.flat = None  # this example's weights, gathered by its forward
        call.examples.append(example)
        outs.append(_RnnxFunction.apply(
            example, _at(x, in_dims[1], v), _at(h0, in_dims[2], v), _at(c0, in_dims[3], v),
            *[_at(w, d, v) for w, d in zip(weights, w_dims)]))
    stacked = tuple(torch.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return stacked, (0,) * len(stacked)


if hasattr(torch.autograd.Function, "setup_context"):
    class _RnnxFunction(torch.autograd.Function):
        """forward(call, x, h0, c0, *weights) -> (y, hy[, cy]); weights in rnnx's layout
        order. PyTorch 2's form (forward without ctx, setup_context), which torch.func's
        transforms need."""

        @staticmethod
        def forward(call, x, h0, c0, *weights):
            return _function_forward(call, x, h0, c0, weights)

        @staticmethod
        def setup_context(ctx, inputs, output):
            _function_setup_context(ctx, inputs)

        backward = staticmethod(_function_backward)
        vmap = staticmethod(_function_vmap)
        jvp = staticmethod(_refuse_jvp)
else:
    class _RnnxFunction(torch.autograd.Function):
        """The same on PyTorch 1.x, whose Function takes ctx in forward."""

        @staticmethod
        def forward(ctx, call, x, h0, c0, *weights):
            out = _function_forward(call, x, h0, c0, weights)
            _function_setup_context(ctx, (call, x, h0, c0, *weights))
            return out

        backward = staticmethod(_function_backward)
