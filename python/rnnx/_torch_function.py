"""rnnx.torch's autograd on PyTorch before 2.4 and under torch.func's grad transforms: a
torch.autograd.Function around the operator's own kernels (_torch_ops.forward_kernel and
_torch_ops._backward: the same code the dispatcher operators run on PyTorch 2.4+, the same
plans in the module's engine), with what those transforms need around them: forward without
ctx (setup_context), backward below their wrappers, vmap over examples."""

import copy

import torch

from . import _rnnx
from . import _torch_ops
from ._torch_ops import _at, _functorch, _functorch_active, refuse_double_backward


class _Call:
    """What one forward needs besides the differentiable tensors, and what its backward
    needs from it: the operator's options (config, engine, backend, num_threads,
    batch_first, training, dropout_counter, static_reserve), its index tensors (lengths,
    batch_sizes, sorted_indices), and the reserve the forward wrote."""

    __slots__ = ("options", "indices", "lstm", "dropout", "reserve", "examples")

    def __init__(self, options, indices, lstm, dropout):
        self.options, self.indices, self.lstm, self.dropout = options, indices, lstm, dropout
        self.reserve = None
        self.examples = None


def _function_forward(call, x, h0, c0, weights):
    """The forward of _RnnxFunction: the operator's kernel; the reserve is kept on `call`
    (one object per forward) and released with the node, not after backward, which may run
    again with retain_graph=True. Returns (y, hy[, cy])."""
    y, hy, cy, call.reserve = _torch_ops.forward_kernel(x, h0, c0, weights, *call.indices,
                                                        *call.options)
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
    """The operator's backward kernel for one forward's call."""
    *weights, dy, dhy, dcy = rest
    needs = ctx.needs_input_grad  # (call, x, h0, c0, *weights)
    mask = [bool(needs[1]), bool(needs[2]) and h0 is not None,
            bool(needs[3]) and c0 is not None, any(needs[4:])]
    config, engine, backend, num_threads, batch_first = call.options[:5]
    dx, dh0, dc0, dw = _torch_ops._backward(
        x, h0, c0, weights, *call.indices, config, engine, backend, num_threads, batch_first,
        call.reserve, dy, dhy, dcy if call.lstm else None, mask)
    wgrads, offset = [], 0
    for i, w in enumerate(weights):
        wgrads.append(dw[offset:offset + w.numel()].view(w.shape)
                      if mask[3] and needs[4 + i] else None)
        offset += w.numel()
    return (None, dx if mask[0] else None, dh0 if mask[1] else None, dc0 if mask[2] else None,
            *wgrads)


def _refuse_jvp(ctx, *tangents):
    raise _rnnx.UnsupportedError(
        "rnnx.torch: forward-mode AD (torch.func.jvp, jacfwd, hessian) through an rnnx "
        "LSTM/GRU/RNN is not supported: rnnx computes reverse-mode gradients only; use "
        "jacrev, or vmap(grad(...)) for per-example gradients")


def _function_vmap(info, in_dims, call, x, h0, c0, *weights):
    """_RnnxFunction under vmap (vmap around torch.func's grad transforms: vmap(grad(...)),
    per-example gradients): one rnnx forward per example, each a node of its own with its own
    reserve, so that its backward gives that example's gradients; the plan is the module's,
    made for one example's shape. Dropout masks are the same for every example
    (randomness='same'); 'error' (vmap's default) refuses them."""
    if call.dropout > 0 and info.randomness != "same":
        raise _rnnx.UnsupportedError(
            f"rnnx.torch: dropout under torch.vmap needs randomness='same' (got "
            f"{info.randomness!r}): rnnx's masks come from (seed, counter, layer, position)")
    w_dims = in_dims[4:]
    outs = []
    # The backward (one node for the batch, _backward_vmapped) finds each example's call here.
    call.examples = []
    for v in range(info.batch_size):
        example = copy.copy(call)  # a forward's reserve lives on its call
        example.examples = None
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


def training_forward(x, hx, cx, weights, lengths, batch_sizes, sorted_indices, *options):
    """The module's training forward on this path, with the operator's arguments and results
    (y, hy, cy, reserve: cy None but for LSTM, the reserve kept on the node's call)."""
    info = _torch_ops.config_info(options[0])
    call = _Call(options, (lengths, batch_sizes, sorted_indices), info.lstm,
                 float(info.kwargs.get("dropout") or 0))
    out = _RnnxFunction.apply(call, x, hx, cx, *weights)
    return out[0], out[1], (out[2] if info.lstm else None), None
