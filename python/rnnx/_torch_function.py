"""rnnx.torch's autograd on PyTorch before 2.4 and under torch.func's transforms: a
torch.autograd.Function around rnnx's forward and backward (on PyTorch 2.4+ the modules
otherwise call the dispatcher operators of _torch_ops.py). The plan is built by the module
and travels in a _Call; the reserve comes from the engine's pool (CPU) or PyTorch's caching
allocator (CUDA)."""

import torch

from . import _runtime
from ._torch_ops import _functorch, _functorch_active, dense as _dense, np_view as _np
from ._torch_ops import ptr as _ptr, refuse_double_backward, stream as _stream


class _Call:
    """What one forward needs besides tensors; the backward gets the same object."""

    __slots__ = ("engine", "plan", "params", "training", "counter", "lstm", "flat",
                 "y_shape", "h_shape", "c_shape", "dtype", "device", "flat_used", "reserve")


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


def _vmapped(t):
    """Whether a gradient carries a vmap dimension (torch.func's vjp under vmap: jacrev,
    vmap(grad)), at any of the wrappers around it."""
    while t is not None and _functorch is not None and _functorch.is_functorch_wrapped_tensor(t):
        if _functorch.is_batchedtensor(t):
            return True
        t = _functorch.get_unwrapped(t)
    return False


@torch.autograd.function.once_differentiable
def _backward(ctx, dy, dhy, dcy=None):
    if any(_vmapped(t) for t in (dy, dhy, dcy)):
        raise _runtime._rnnx.UnsupportedError(
            "rnnx.torch: vmap over the backward under torch.func's grad transforms (jacrev, "
            "vmap(grad(...)), jacfwd) is not supported; torch.vmap over a module call is "
            "(PyTorch 2.5+), and so is one gradient of a batch")
    tensors = [_unwrap_functorch(t) for t in (*ctx.saved_tensors, dy, dhy, dcy)]
    # Below torch.func's transforms, whose active levels would wrap every tensor this makes
    # (detach, empty_like) again; the results are lifted back to the level by PyTorch.
    if not _functorch_active():  # also PyTorch 1.x, whose _DisableFuncTorch is no context
        return _backward_plain(ctx, *tensors)
    with torch._C._DisableFuncTorch():
        return _backward_plain(ctx, *tensors)


def _backward_plain(ctx, x, h0, c0, *rest):
    call = ctx.call
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


def _refuse_vmap(info, in_dims, *args):
    raise _runtime._rnnx.UnsupportedError(
        "rnnx.torch: torch.func.vmap around torch.func's grad transforms over an rnnx "
        "LSTM/GRU/RNN (vmap(grad(...)), jacrev) is not supported; torch.vmap over a module "
        "call is (PyTorch 2.5+), and so is one gradient of a batch")


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
        vmap = staticmethod(_refuse_vmap)
else:
    class _RnnxFunction(torch.autograd.Function):
        """The same on PyTorch 1.x, whose Function takes ctx in forward."""

        @staticmethod
        def forward(ctx, call, x, h0, c0, *weights):
            out = _function_forward(call, x, h0, c0, weights)
            _function_setup_context(ctx, (call, x, h0, c0, *weights))
            return out

        backward = staticmethod(_function_backward)
