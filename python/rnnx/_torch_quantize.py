"""rnnx.torch.quantize_dynamic: a trained float model's recurrent modules as int8 inference
modules (math='int8', docs/int8.md) in one call, their parameters kept as the float
state_dict (the weights are quantised inside rnnx, once per weights version)."""

import copy

import torch


def twin(module, kinds, math="int8"):
    """The rnnx.torch module of `module`'s kind and options with `math`, its float parameters
    loaded, frozen and in eval mode."""
    LSTM, GRU, RNN = kinds
    kw = dict(input_size=module.input_size, hidden_size=module.hidden_size,
              num_layers=module.num_layers, bias=module.bias, batch_first=module.batch_first,
              dropout=module.dropout, bidirectional=module.bidirectional)
    extra = {}
    if getattr(module, "_rnnx_ready", False):  # an rnnx.torch module: its options carry over
        extra = dict(padding_fill=module.padding_fill, backend=module._rnnx_backend,
                     num_threads=module._rnnx_num_threads, reverse=module.reverse,
                     gate_clip=module.gate_clip,
                     activations=[a for a in module.activations] if module.activations else None)
    ref = next(iter(module.parameters()), None)
    factory = {} if ref is None else dict(device=ref.device, dtype=ref.dtype)
    if isinstance(module, torch.nn.LSTM):
        if extra:
            extra.update(cell_clip=module.cell_clip, proj_clip=module.proj_clip,
                         clip_nan=module.clip_nan, peephole=module.peephole,
                         input_forget=module.input_forget)
        twin = LSTM(proj_size=module.proj_size, math=math, **kw, **extra, **factory)
    elif isinstance(module, torch.nn.GRU):
        if extra:
            extra.update(gru_linear_before_reset=module.gru_linear_before_reset)
        twin = GRU(math=math, **kw, **extra, **factory)
    else:
        twin = RNN(nonlinearity=module.nonlinearity, math=math, **kw, **extra, **factory)
    twin.load_state_dict(module.state_dict())
    for p in twin.parameters():
        p.requires_grad_(False)
    return twin.eval()


def cell_twin(cell, cells, math="int8"):
    """The rnnx.torch cell of `cell`'s kind and options with `math`, its float parameters
    loaded, frozen and in eval mode."""
    LSTMCell, GRUCell, RNNCell = cells
    kw = dict(bias=bool(cell.bias))
    ref = next(iter(cell.parameters()), None)
    if ref is not None:
        kw.update(device=ref.device, dtype=ref.dtype)
    seq = cell._modules.get("_rnnx_seq")  # an rnnx.torch cell: its options carry over
    if seq is not None:
        kw.update(backend=seq._rnnx_backend, num_threads=seq._rnnx_num_threads)
    if isinstance(cell, torch.nn.LSTMCell):
        if seq is not None:
            kw.update(cell_clip=seq.cell_clip, clip_nan=seq.clip_nan)
        twin = LSTMCell(cell.input_size, cell.hidden_size, math=math, **kw)
    elif isinstance(cell, torch.nn.GRUCell):
        if seq is not None:
            kw.update(gru_linear_before_reset=seq.gru_linear_before_reset)
        twin = GRUCell(cell.input_size, cell.hidden_size, math=math, **kw)
    else:
        twin = RNNCell(cell.input_size, cell.hidden_size, nonlinearity=cell.nonlinearity,
                       math=math, **kw)
    twin.load_state_dict(cell.state_dict())
    for p in twin.parameters():
        p.requires_grad_(False)
    return twin.eval()


def quantize_dynamic(model, kinds, cells, inplace=False):
    """`model` with every torch.nn LSTM/GRU/RNN and LSTMCell/GRUCell/RNNCell (rnnx.torch's or
    torch.nn's, at any depth, or `model` itself) replaced by its rnnx.torch twin with
    math='int8' (inference only, frozen, eval mode; refused on a machine without VNNI at its
    first call). The float parameters stay the state_dict. `inplace`: change `model` itself,
    else a deep copy."""
    recurrent = (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)
    steps = (torch.nn.LSTMCell, torch.nn.GRUCell, torch.nn.RNNCell)

    def replacement(m):
        if isinstance(m, recurrent):
            return twin(m, kinds)
        if isinstance(m, steps):
            return cell_twin(m, cells)
        return None

    whole = replacement(model)
    if whole is not None:
        return whole
    if not inplace:
        model = copy.deepcopy(model)
    for parent in list(model.modules()):
        if isinstance(parent, recurrent + steps):
            continue  # a cell's own sequence module stays its part
        for name, child in list(parent.named_children()):
            new = replacement(child)
            if new is not None:
                setattr(parent, name, new)
    return model


class _NoBackward(torch.autograd.Function):
    """Outputs of an int8 module that join an autograd graph: their backward is refused."""

    @staticmethod
    def forward(ctx, name, trigger, *outputs):
        ctx.name = name
        return tuple(o.view_as(o) for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"rnnx.torch.{ctx.name}(math='int8') runs inference only: no "
                           "gradient flows through it (quantise after training; train the "
                           "float module)")


def no_backward(name, x, y, hy, cy):
    """y, hy, cy (cy may be None) as outputs of a node whose backward is refused."""
    outs = [t for t in (y, hy, cy) if t is not None]
    res = list(_NoBackward.apply(name, x, *outs))
    return res[0], res[1], (res[2] if cy is not None else None)
