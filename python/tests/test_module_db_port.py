"""PyTorch's generic module tests, ported: the checks of test/test_modules.py's TestModule that
apply to nn.RNN, GRU, LSTM and the cells, written here, over the samples of PyTorch's own
module_db entries for those modules (the wheel's torch/testing/_internal/common_modules.py),
in float32 and float64, each run on torch.nn's class and on rnnx.torch's twin side by side:
forward against the sample's no-batch-dim reference, parity with torch.nn (outputs and every
gradient), factory kwargs, repr, save and load, non-contiguous inputs, gradcheck with batched
gradients (test_grad), gradgradcheck (test_gradgrad), train/eval, construction under the
meta device (the same parameter layout as on the CPU), to_empty, dtype moves, and the error
inputs (type and message). test_counts prints each check's passes for both classes; a
perturbed twin fails the port (test_a_perturbed_module_fails_the_port).
"""

import copy
import io
import itertools
import os
import re

import pytest

torch = pytest.importorskip("torch")
common = pytest.importorskip("torch.testing._internal.common_modules")
import rnnx.torch as rt  # noqa: E402
from rnnx import _torch_ops  # noqa: E402
from torch.nn.utils.rnn import PackedSequence  # noqa: E402

if not _torch_ops.AVAILABLE:
    pytest.skip(f"the port needs PyTorch 2.4 or later (batched gradients, double backward), "
                f"not {torch.__version__}", allow_module_level=True)

NAMES = ("RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell")
INFOS = {i.module_cls.__name__: i for i in common.module_db
         if i.module_cls in tuple(getattr(torch.nn, n) for n in NAMES)}
DTYPES = (torch.float32, torch.float64)


def classes(name):
    return {"torch.nn": getattr(torch.nn, name), "rnnx": getattr(rt, name)}


def samples(name, dtype, requires_grad=True):
    info = INFOS[name]
    return list(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                        requires_grad=requires_grad, training=True))


def build(cls, sample, dtype, seed=0):
    torch.manual_seed(seed)
    c = sample.constructor_input
    return cls(*c.args, **c.kwargs, dtype=dtype, device="cpu")


def twins(name, sample, dtype):
    """torch.nn's module and rnnx's with its state."""
    ref = build(getattr(torch.nn, name), sample, dtype)
    ours = build(getattr(rt, name), sample, dtype)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def leaves(out):
    """The tensors of an output (tuples, PackedSequence), in order."""
    if isinstance(out, PackedSequence):
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in leaves(o)]
    return [out] if isinstance(out, torch.Tensor) else []


def inputs_of(sample):
    return copy.deepcopy(sample.forward_input.args), copy.deepcopy(sample.forward_input.kwargs)


def tensor_inputs(args):
    """The input tensors that take gradients (a PackedSequence's data)."""
    return [t for t in leaves(args) if t.requires_grad]


def assert_close(got, want, dtype, what):
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, want {len(want)}"
    tol = 1e-5 if dtype == torch.float32 else 1e-11
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what} [{k}]: shape {tuple(g.shape)}, want {tuple(w.shape)}"
        scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
        err = (g.detach() - w.detach()).abs().max().item() if w.numel() else 0.0
        assert err <= tol * scale, f"{what} [{k}]: max error {err}"


def run(m, args, kwargs):
    return m(*args, **kwargs)


# ---- the checks: each raises AssertionError (or the module's error) on a failure -------------

def check_forward(name, cls, dtype):
    """test_forward: the output against the sample's reference (the batched call of one)."""
    for s in samples(name, dtype, requires_grad=False):
        m = build(cls, s, dtype)
        args, kwargs = inputs_of(s)
        out = run(m, args, kwargs)
        if s.reference_fn is not None:
            want = s.reference_fn(m, *args, **kwargs)
            assert_close(out, want, dtype, f"{name} forward vs reference")


def check_parity(name, cls, dtype):
    """rnnx against torch.nn on every sample: outputs and the gradients of the inputs and of
    every parameter."""
    for s in samples(name, dtype):
        ref = build(getattr(torch.nn, name), s, dtype)
        m = build(cls, s, dtype)
        m.load_state_dict(ref.state_dict())
        outs, grads = [], []
        for mod in (ref, m):
            args, kwargs = inputs_of(s)
            out = run(mod, args, kwargs)
            seeds = [torch.ones_like(t) * 0.5 + torch.arange(t.numel(), dtype=t.dtype).view(
                t.shape).sin() for t in leaves(out)]
            ins = tensor_inputs(args) + list(mod.parameters())
            grads.append(torch.autograd.grad(leaves(out), ins, seeds, allow_unused=True))
            outs.append(out)
        assert_close(outs[1], outs[0], dtype, f"{name} output vs torch.nn")
        for k, (g, w) in enumerate(zip(grads[1], grads[0])):
            if w is None:
                assert g is None or not g.abs().any(), f"{name} gradient {k}: want none"
                continue
            assert_close(g, w, dtype, f"{name} gradient {k} vs torch.nn")


def check_factory_kwargs(name, cls, dtype):
    for s in samples(name, dtype):
        m = build(cls, s, dtype)
        for p in itertools.chain(m.parameters(), m.buffers()):
            assert p.dtype == dtype and p.device.type == "cpu", f"{name}: {p.dtype} {p.device}"


def check_repr(name, cls, dtype):
    for s in samples(name, dtype):
        text = repr(build(cls, s, dtype))
        assert text.startswith(cls.__name__ + "("), text


def check_save_load(name, cls, dtype):
    for s in samples(name, dtype, requires_grad=False):
        m = build(cls, s, dtype)
        args, kwargs = inputs_of(s)
        want = run(m, args, kwargs)
        buf = io.BytesIO()
        torch.save(m, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        assert_close(run(loaded, *inputs_of(s)), want, dtype, f"{name} after torch.save/load")
        fresh = build(cls, s, dtype, seed=1)
        fresh.load_state_dict(m.state_dict())
        assert_close(run(fresh, *inputs_of(s)), want, dtype, f"{name} after load_state_dict")


def _non_contiguous(t):
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return t
    nc = torch.stack([t.detach(), t.detach()], -1)[..., 0]
    assert not nc.is_contiguous()
    return nc.requires_grad_(t.requires_grad)


def check_non_contiguous(name, cls, dtype):
    for s in samples(name, dtype):
        args, kwargs = inputs_of(s)
        if any(isinstance(a, PackedSequence) for a in args):
            continue  # a PackedSequence's data is made contiguous by packing
        m = build(cls, s, dtype)
        want = run(m, args, kwargs)
        nargs = [tuple(_non_contiguous(t) for t in a) if isinstance(a, tuple)
                 else _non_contiguous(a) for a in args]
        assert_close(run(m, nargs, kwargs), want, dtype, f"{name} non-contiguous")


def _gradient_function(m, s, args, kwargs):
    """(f, inputs): f(*inputs) -> the output tensors, over the inputs and parameters."""
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    ins = tensor_inputs(args)

    def replace(obj, values):
        if isinstance(obj, PackedSequence):
            return PackedSequence(values.pop(0), obj.batch_sizes, obj.sorted_indices,
                                  obj.unsorted_indices)
        if isinstance(obj, tuple):
            return tuple(replace(o, values) for o in obj)
        if isinstance(obj, torch.Tensor) and obj.requires_grad:
            return values.pop(0)
        return obj

    def f(*flat):
        values = list(flat[:len(ins)])
        call_args = [replace(a, values) for a in args]
        p = dict(zip(names, flat[len(ins):]))
        return tuple(leaves(torch.func.functional_call(m, p, tuple(call_args), kwargs)))

    return f, tuple(ins) + tuple(params)


def check_grad(name, cls, dtype):
    """test_grad: gradcheck with batched gradients, float64."""
    if dtype != torch.float64:
        return
    for s in samples(name, dtype):
        m = build(cls, s, dtype)
        f, ins = _gradient_function(m, s, *inputs_of(s))
        assert torch.autograd.gradcheck(f, ins, check_batched_grad=True), f"{name} gradcheck"


def check_gradgrad(name, cls, dtype):
    """test_gradgrad: gradgradcheck, float64. Every fourth sample in the test command (each
    gradgradcheck differentiates rnnx's backward numerically: minutes for all of LSTM's);
    RNNX_MODULE_PORT_FULL=1 runs them all."""
    if dtype != torch.float64:
        return
    every = 1 if os.environ.get("RNNX_MODULE_PORT_FULL") == "1" else 4
    for s in samples(name, dtype)[::every]:
        m = build(cls, s, dtype)
        f, ins = _gradient_function(m, s, *inputs_of(s))
        assert torch.autograd.gradgradcheck(f, ins), f"{name} gradgradcheck"


def check_train_eval(name, cls, dtype):
    for s in samples(name, dtype, requires_grad=False):
        m = build(cls, s, dtype)
        m.train()
        a = run(m, *inputs_of(s))
        assert m.training
        m.eval()
        assert not m.training and all(not c.training for c in m.modules())
        assert_close(run(m, *inputs_of(s)), a, dtype, f"{name} eval vs train (no dropout)")


def check_meta_init(name, cls, dtype):
    """test_device_ctx_init and to_empty: built under the meta device, the same parameters
    (shapes, strides, storage offsets) as built on the CPU; to_empty and a state give the
    CPU module's outputs."""
    for s in samples(name, dtype, requires_grad=False):
        cpu = build(cls, s, dtype)
        with torch.device("meta"):
            c = s.constructor_input
            meta = cls(*c.args, **c.kwargs, dtype=dtype)
        for (n, p), (_, q) in zip(cpu.named_parameters(), meta.named_parameters()):
            assert q.device.type == "meta", f"{name}.{n} on {q.device}"
            assert (p.shape, p.stride(), p.storage_offset()) == (
                q.shape, q.stride(), q.storage_offset()), f"{name}.{n}: meta layout differs"
        empty = meta.to_empty(device="cpu")
        empty.load_state_dict(cpu.state_dict())
        assert_close(run(empty, *inputs_of(s)), run(cpu, *inputs_of(s)), dtype,
                     f"{name} after to_empty")


def check_to(name, cls, dtype):
    other = torch.float64 if dtype == torch.float32 else torch.float32
    for s in samples(name, dtype, requires_grad=False):
        m = build(cls, s, dtype)
        moved = copy.deepcopy(m).to(other)
        assert all(p.dtype == other for p in moved.parameters())
        args, kwargs = inputs_of(s)
        conv = [a.to(other) if isinstance(a, torch.Tensor) else
                tuple(t.to(other) for t in a) if isinstance(a, tuple) else a for a in args]
        if any(isinstance(a, PackedSequence) for a in args):
            continue
        assert_close(run(moved, conv, kwargs), run(m, args, kwargs), torch.float32,
                     f"{name} .to({other})")


def check_errors(name, cls, dtype):
    """test_errors: the error inputs raise the error type with the message PyTorch's give."""
    info = INFOS[name]
    for e in info.module_error_inputs_func(info, device="cpu", dtype=dtype,
                                           requires_grad=False, training=True):
        s = e.module_error_input
        c = s.constructor_input
        with pytest.raises(e.error_type, match=e.error_regex):
            m = cls(*c.args, **c.kwargs)
            if e.error_on == common.ModuleErrorEnum.FORWARD_ERROR:
                m(*s.forward_input.args, **s.forward_input.kwargs)


CHECKS = {
    "forward": check_forward, "parity_with_torch_nn": check_parity,
    "factory_kwargs": check_factory_kwargs, "repr": check_repr, "save_load": check_save_load,
    "non_contiguous": check_non_contiguous, "grad": check_grad, "gradgrad": check_gradgrad,
    "train_eval": check_train_eval, "meta_init_to_empty": check_meta_init, "to": check_to,
    "errors": check_errors,
}


def test_the_port_selects_every_module():
    assert sorted(INFOS) == sorted(NAMES), f"module_db has {sorted(INFOS)}"
    for name in NAMES:
        assert samples(name, torch.float32), f"no samples for {name}"


RESULTS = {}  # (check, class family, module, dtype) -> passed


def run_check(check, which, name, dtype):
    key = (check, which, name, dtype)
    RESULTS[key] = False
    CHECKS[check](name, classes(name)[which], dtype)
    RESULTS[key] = True


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("which", ["torch.nn", "rnnx"])
def test_module(which, name, dtype, check):
    run_check(check, which, name, dtype)


def test_counts(capsys):
    """Each check's passes on torch.nn's classes and on rnnx's, side by side (printed): the
    results of test_module above, any it did not run (a filtered run) run here."""
    rows = []
    for check in sorted(CHECKS):
        counts = {}
        for which in ("torch.nn", "rnnx"):
            for name, dtype in itertools.product(NAMES, DTYPES):
                if (check, which, name, dtype) not in RESULTS:
                    try:
                        run_check(check, which, name, dtype)
                    except Exception:  # noqa: BLE001 - counted; test_module names it
                        pass
            counts[which] = sum(RESULTS[(check, which, n, d)]
                                for n, d in itertools.product(NAMES, DTYPES))
        rows.append((check, counts["torch.nn"], counts["rnnx"]))
    total = len(NAMES) * len(DTYPES)
    with capsys.disabled():
        print(f"\nmodule_db port: passes of {total} (module x dtype) per check")
        for check, a, b in rows:
            print(f"  {check:22s} torch.nn {a:2d}  rnnx {b:2d}")
    for check, a, b in rows:
        assert b == a, f"{check}: rnnx passes {b}, torch.nn {a}"


class _Perturbed(rt.GRU):
    """rnnx's GRU with its output nudged: the port must notice."""

    def forward(self, *args, **kwargs):
        y, h = super().forward(*args, **kwargs)
        if isinstance(y, PackedSequence):
            return y._replace(data=y.data * (1 + 1e-3)), h
        return y * (1 + 1e-3), h


def test_a_perturbed_module_fails_the_port():
    failed = []
    for check in ("forward", "parity_with_torch_nn"):
        try:
            CHECKS[check]("GRU", _Perturbed, torch.float64)
        except AssertionError as e:
            failed.append((check, re.sub(r"\s+", " ", str(e))[:80]))
    # Its own batched call is its forward's reference, so only parity with torch.nn sees it.
    assert [c for c, _ in failed] == ["parity_with_torch_nn"], failed
