"""Hostile input to the Python front ends (issue 12): wrong dtypes, non-contiguous and
zero-size tensors, lengths in every container and wrong ones, mismatched initial states, odd
PackedSequences, modules moved between dtypes, bad state dicts and parameters. Each case
either runs and gives what torch.nn gives for the same call (rnnx.torch) or what the same
data given plainly gives (NumPy classes), or raises an exception whose message names the
argument and its value. The tables hold the call, and for a refusal the exception type and
a pattern of its message; a crash would take the whole run down."""

import numpy as np
import pytest

import rnnx
from conftest import assert_near, tolerance

try:
    import torch
    from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

    import rnnx.torch as rt
except ImportError:  # the torch tables skip; the NumPy ones run on NumPy alone
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

T, B, I, H = 6, 3, 5, 4
Invalid = rnnx.InvalidArgumentError
Unsupported = rnnx.UnsupportedError


def _flat(v):
    """The tensors (or arrays) in a nested result, in order."""
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [t for e in v for t in _flat(e)]
    if torch is not None and isinstance(v, PackedSequence):
        return [v.data]
    if isinstance(v, dict):
        return [t for e in v.values() for t in _flat(e)]
    return [v]


# ---- rnnx.torch against torch.nn ---------------------------------------------------------------

if torch is not None:
    _CLASSES = {"LSTM": (torch.nn.LSTM, rt.LSTM), "GRU": (torch.nn.GRU, rt.GRU),
                "RNN": (torch.nn.RNN, rt.RNN)}


def make_pair(kind="LSTM", **kw):
    """A torch.nn module and an rnnx.torch one with the same float64 weights."""
    ref_cls, rnnx_cls = _CLASSES[kind]
    kw.setdefault("dtype", torch.float64)
    ref = ref_cls(I, H, **kw)
    ours = rnnx_cls(I, H, **kw)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def rand(*shape, dtype=None):
    return torch.randn(*shape, dtype=dtype or torch.float64)


def neg_view(t):
    """A real tensor carrying torch's lazy negation bit (the imaginary part of a conjugate
    view), the values -(-t) = t: .numpy() refuses such a tensor."""
    return torch.complex(torch.zeros_like(t), -t).conj().imag


def grads_of(module, x, hx=None, **kw):
    """Outputs and the gradients of a fixed function of them with respect to x, hx's
    tensors and the parameters, each of those that requires a gradient."""
    out, h = module(x, hx, **kw)
    hs = h if isinstance(h, tuple) else (h,)
    data = out.data if isinstance(out, PackedSequence) else out
    loss = (data * torch.linspace(-1, 1, data.numel(), dtype=data.dtype).view(data.shape)).sum()
    loss = loss + sum((s * 0.5).sum() for s in hs)
    leaves = [t for t in [x] + list(_flat(hx)) + list(module.parameters())
              if isinstance(t, torch.Tensor) and t.requires_grad]
    return [data, *hs] + list(torch.autograd.grad(loss, leaves, allow_unused=True))


# Calls that torch.nn runs and rnnx.torch must run with the same result: (id, kind, module
# keyword arguments, call(module) -> tensors). Inputs are drawn after torch.manual_seed, so
# both modules see the same values.
def _same_cases():
    def lstm_hx(h_shape=(1, B, H), c_shape=(1, B, H)):
        return (rand(*h_shape), rand(*c_shape))

    def transposed_hx():
        return (rand(B, 1, H).transpose(0, 1), rand(B, 1, H).transpose(0, 1))

    def unsorted_packed():
        return pack_padded_sequence(rand(T, B, I), [2, T, 4], enforce_sorted=False)

    def x_grad(x):
        return x.requires_grad_()

    def without_grad(m):
        x = x_grad(rand(T, B, I))
        with torch.no_grad():
            return m(x)

    def frozen(m):
        for p in m.parameters():
            p.requires_grad_(False)
        return m

    return [
        ("contiguous", "LSTM", {}, lambda m: m(rand(T, B, I))),
        ("transposed", "LSTM", {}, lambda m: m(rand(B, T, I).transpose(0, 1))),
        ("step_sliced", "LSTM", {}, lambda m: m(rand(2 * T, B, I)[::2])),
        ("last_dim_strided", "GRU", {}, lambda m: m(rand(T, B, 2 * I)[..., ::2])),
        ("storage_offset", "RNN", {}, lambda m: m(rand(T + 2, B, I)[2:])),
        ("expanded_time", "LSTM", {}, lambda m: m(rand(1, B, I).expand(T, B, I))),
        ("expanded_all", "GRU", {}, lambda m: m(rand(I).expand(T, B, I))),
        ("neg_bit_input", "LSTM", {}, lambda m: m(neg_view(rand(T, B, I)))),
        ("neg_bit_h0", "GRU", {}, lambda m: m(rand(T, B, I), neg_view(rand(1, B, H)))),
        ("transposed_hx", "LSTM", {}, lambda m: m(rand(T, B, I), transposed_hx())),
        ("expanded_hx", "LSTM", {},
         lambda m: m(rand(T, B, I), tuple(rand(1, 1, H).expand(1, B, H) for _ in range(2)))),
        ("hx_as_list", "LSTM", {}, lambda m: m(rand(T, B, I), list(lstm_hx()))),
        ("batch_first_transposed", "GRU", dict(batch_first=True),
         lambda m: m(rand(T, B, I).transpose(0, 1))),
        ("unbatched", "LSTM", {}, lambda m: m(rand(T, I), (rand(1, H), rand(1, H)))),
        ("unbatched_noncontiguous", "RNN", {}, lambda m: m(rand(I, T).t(), rand(1, H))),
        ("empty_batch", "LSTM", {}, lambda m: m(rand(T, 0, I), lstm_hx((1, 0, H), (1, 0, H)))),
        ("empty_batch_batch_first", "GRU", dict(batch_first=True), lambda m: m(rand(0, T, I))),
        ("packed_unsorted_with_hx", "LSTM", {}, lambda m: m(unsorted_packed(), lstm_hx())),
        ("packed_noncontiguous_data", "GRU", {},
         lambda m: m(PackedSequence(rand(8, I)[::2], torch.tensor([2, 2])))),
        ("grad_x_only", "LSTM", {}, lambda m: grads_of(frozen(m), x_grad(rand(T, B, I)))),
        ("grad_x_transposed", "GRU", {},
         lambda m: grads_of(m, x_grad(rand(B, T, I)).transpose(0, 1))),
        ("grad_x_expanded", "LSTM", {},
         lambda m: grads_of(m, x_grad(rand(1, B, I)).expand(T, B, I))),
        ("grad_c0_only", "LSTM", dict(num_layers=2, bidirectional=True, proj_size=2),
         lambda m: grads_of(frozen(m), rand(T, B, I),
                            (rand(4, B, 2), rand(4, B, H).requires_grad_()))),
        ("grad_h0_transposed", "RNN", {},
         lambda m: grads_of(m, rand(T, B, I), rand(B, 1, H).requires_grad_().transpose(0, 1))),
        ("grad_params_only", "GRU", dict(num_layers=2), lambda m: grads_of(m, rand(T, B, I))),
        ("grad_empty_batch", "LSTM", {}, lambda m: grads_of(m, x_grad(rand(T, 0, I)))),
        ("grad_packed_unsorted", "GRU", {}, lambda m: grads_of(m, unsorted_packed())),
        ("no_grad", "LSTM", {}, without_grad),
    ]


SAME_CASES = _same_cases() if torch is not None else []


def _bound(ref):
    cfg = dict(cell=ref.mode.lower(), input_size=I, hidden_size=H, num_layers=ref.num_layers,
               bidirectional=ref.bidirectional, dtype="float64")
    if getattr(ref, "proj_size", 0):
        cfg["proj_size"] = ref.proj_size
    return tolerance(cfg, T, max(B, 1), backward=True)


def assert_same(got, want, tol, what):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} results, torch.nn gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None or not g.any(), f"{what}[{k}]: torch.nn gives no gradient"
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, \
            f"{what}[{k}]: {g.dtype} {tuple(g.shape)}, torch.nn {w.dtype} {tuple(w.shape)}"
        assert_near(g, w, tol, f"{what}[{k}]")


@needs_torch
@pytest.mark.parametrize("name,kind,kw,call", SAME_CASES, ids=[c[0] for c in SAME_CASES])
def test_torch_accepts_what_torch_nn_accepts(name, kind, kw, call):
    torch.manual_seed(1)
    ref, ours = make_pair(kind, **kw)
    torch.manual_seed(2)
    want = call(ref)
    torch.manual_seed(2)
    got = call(ours)
    assert_same(got, want, _bound(ref), name)


def _bad_packed(data_rows, batch_sizes, sorted_indices=None, unsorted_indices=None):
    return PackedSequence(rand(data_rows, I), torch.tensor(batch_sizes),
                          None if sorted_indices is None else torch.tensor(sorted_indices),
                          None if unsorted_indices is None else torch.tensor(unsorted_indices))


def _refused_cases():
    x = lambda: rand(T, B, I)  # noqa: E731
    h = lambda b=B, w=H: rand(1, b, w)  # noqa: E731

    def meta_h0(m):
        return m(x(), (torch.empty(1, B, H, dtype=torch.float64, device="meta"), h()))

    return [
        # input dtype and kind
        *[(f"input_{str(dt)[6:]}", "LSTM", {}, lambda m, dt=dt: m(x().to(dt)), Invalid,
           rf"input dtype {dt} does not match weight dtype torch.float64 \(the parameters' dtype\)")
          for dt in (torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool,
                     torch.complex128)],
        ("input_numpy", "LSTM", {}, lambda m: m(x().numpy()), Invalid,
         "input must be a tensor or a PackedSequence, got ndarray"),
        ("input_list", "GRU", {}, lambda m: m([[0.0] * I]), Invalid, "got list"),
        ("input_sparse", "LSTM", {}, lambda m: m(x().to_sparse()), Invalid,
         "input must be a dense \\(strided\\) tensor, got layout torch.sparse_coo"),
        ("input_meta", "LSTM", {},
         lambda m: m(torch.empty(T, B, I, dtype=torch.float64, device="meta")), Unsupported,
         "input is on meta"),
        # shapes
        ("input_1d", "RNN", {}, lambda m: m(rand(I)), Invalid, "got 1-D"),
        ("input_4d", "RNN", {}, lambda m: m(rand(2, T, B, I)), Invalid, "got 4-D"),
        ("input_T0", "LSTM", {}, lambda m: m(rand(0, B, I)), Invalid, r"max_seq_len \(= 0\)"),
        ("input_T0_batch_first", "GRU", dict(batch_first=True), lambda m: m(rand(B, 0, I)),
         Invalid, r"max_seq_len \(= 0\)"),
        ("input_size_0", "LSTM", {}, lambda m: m(rand(T, B, 0)), Invalid,
         r"input dim 2 \(= 0\) must equal input_size \(= 5\)"),
        ("input_size_wrong_empty_batch", "LSTM", {}, lambda m: m(rand(T, 0, I + 1)), Invalid,
         r"input dim 2 \(= 6\) must equal input_size \(= 5\)"),
        # initial states
        ("h0_batch", "LSTM", {}, lambda m: m(x(), (h(2), h())), Invalid,
         r"h_0 has shape \(1, 2, 4\), expected \(1, 3, 4\)"),
        ("c0_width", "LSTM", {}, lambda m: m(x(), (h(), h(B, H + 1))), Invalid,
         r"c_0 has shape \(1, 3, 5\), expected \(1, 3, 4\)"),
        ("h0_proj_width", "LSTM", dict(proj_size=2), lambda m: m(x(), (h(), h())), Invalid,
         r"h_0 has shape \(1, 3, 4\), expected \(1, 3, 2\)"),
        ("h0_dtype", "GRU", {}, lambda m: m(x(), h().float()), Invalid,
         "h_0 dtype torch.float32 does not match the parameters' dtype torch.float64"),
        ("h0_int", "LSTM", {}, lambda m: m(x(), (h().int(), h())), Invalid,
         "h_0 dtype torch.int32"),
        ("h0_2d_for_batched", "LSTM", {}, lambda m: m(x(), (h()[0], h()[0])), Invalid,
         "h_0 must be 3-D for batched input, got 2-D"),
        ("h0_3d_for_unbatched", "GRU", {}, lambda m: m(rand(T, I), h(1)), Invalid,
         "h_0 must be 2-D for unbatched input, got 3-D"),
        ("h0_numpy", "LSTM", {}, lambda m: m(x(), (h().numpy(), h())), Invalid,
         "h_0 must be a tensor, got ndarray"),
        ("h0_meta", "LSTM", {}, meta_h0, Unsupported, "h_0 is on meta"),
        ("hx_one_tensor_for_lstm", "LSTM", {}, lambda m: m(x(), h()), Invalid,
         r"hx for LSTM must be a tuple \(h_0, c_0\)"),
        ("hx_three_tensors", "LSTM", {}, lambda m: m(x(), (h(), h(), h())), Invalid,
         r"hx for LSTM must be a tuple \(h_0, c_0\)"),
        ("hx_tuple_for_gru", "GRU", {}, lambda m: m(x(), (h(),)), Invalid,
         "hx must be a tensor, got tuple"),
        # lengths
        ("lengths_count", "LSTM", {}, lambda m: m(x(), lengths=[T, 2]), Invalid,
         "lengths has 2 entries but batch is 3"),
        ("lengths_2d", "LSTM", {}, lambda m: m(x(), lengths=[[T, 2, 1]]), Invalid,
         r"lengths must be 1-D, got shape \(1, 3\)"),
        ("lengths_scalar", "LSTM", {}, lambda m: m(x(), lengths=torch.tensor(T)), Invalid,
         r"lengths must be 1-D, got shape \(\)"),
        ("lengths_negative", "GRU", {}, lambda m: m(x(), lengths=[T, 2, -1]), Invalid,
         r"lengths\[2\] \(= -1\)"),
        ("lengths_over_T", "GRU", {}, lambda m: m(x(), lengths=np.array([T + 1, 2, 1])),
         Invalid, r"lengths\[0\] \(= 7\) must be in \[0, max_seq_len \(= 6\)\]"),
        ("lengths_fraction", "RNN", {}, lambda m: m(x(), lengths=torch.tensor([6.5, 2, 1])),
         Invalid, r"lengths\[0\] \(= 6.5\) is not a whole number"),
        ("lengths_nan", "RNN", {}, lambda m: m(x(), lengths=[float("nan"), 2, 1]), Invalid,
         r"lengths\[0\] \(= nan\)"),
        ("lengths_huge", "RNN", {}, lambda m: m(x(), lengths=np.array([2 ** 64 - 1, 1, 1],
                                                                     np.uint64)),
         Invalid, r"lengths\[0\] = 18446744073709551615"),
        ("lengths_none_entry", "LSTM", {}, lambda m: m(x(), lengths=[None, 2, 1]), Invalid,
         r"lengths\[0\] = None"),
        ("lengths_bool", "LSTM", {}, lambda m: m(x(), lengths=[True, True, False]), Invalid,
         "lengths must hold integers, got dtype bool"),
        ("lengths_meta", "LSTM", {},
         lambda m: m(x(), lengths=torch.tensor([T, 2, 1], device="meta")), Invalid,
         "lengths must be a 1-D sequence of integers; converting Tensor failed"),
        ("lengths_unbatched", "LSTM", {}, lambda m: m(rand(T, I), lengths=[T]), Invalid,
         "lengths= needs batched"),
        ("lengths_with_packed", "LSTM", {},
         lambda m: m(pack_padded_sequence(x(), [T, 2, 1]), lengths=[T, 2, 1]), Invalid,
         "lengths= is for padded input"),
        ("lengths_empty_batch", "LSTM", {}, lambda m: m(rand(T, 0, I), lengths=[1]), Invalid,
         "lengths has 1 entries but batch is 0"),
        # PackedSequence built by hand
        ("packed_increasing", "LSTM", {}, lambda m: m(_bad_packed(5, [2, 3])), Invalid,
         r"batch_sizes must be non-increasing"),
        ("packed_zero_step", "LSTM", {}, lambda m: m(_bad_packed(3, [3, 0])), Invalid,
         r"batch_sizes\[1\] \(= 0\) must be at least 1"),
        ("packed_rows", "GRU", {}, lambda m: m(_bad_packed(5, [2, 2])), Invalid,
         r"PackedSequence data dim 0 \(= 5\) must equal sum\(batch_sizes\) \(= 4\)"),
        ("packed_no_steps", "GRU", {}, lambda m: m(_bad_packed(0, [])), Invalid,
         "batch_sizes is empty"),
        ("packed_2d_batch_sizes", "RNN", {}, lambda m: m(_bad_packed(4, [[2, 2]])), Invalid,
         r"PackedSequence batch_sizes must be 1-D, got shape \(1, 2\)"),
        ("packed_sorted_not_permutation", "LSTM", {},
         lambda m: m(_bad_packed(4, [2, 2], [1, 5], [1, 0])), Invalid,
         r"sorted_indices is not a permutation of 0..batch-1: sorted_indices\[1\] = 5"),
        ("packed_unsorted_not_inverse", "LSTM", {},
         lambda m: m(_bad_packed(4, [2, 2], [1, 0], [0, 1])), Invalid,
         r"unsorted_indices \[0, 1\] is not the inverse permutation of sorted_indices \[1, 0\]"),
        ("packed_sorted_repeats", "LSTM", {}, lambda m: m(_bad_packed(4, [2, 2], [0, 0])),
         Invalid, "sorted_indices is not a permutation"),
        # torch.nn drops the extra rows of h_0 here without a word (it index_selects h_0 by
        # sorted_indices); rnnx refuses the shape, as torch does for padded input.
        ("packed_unsorted_h0_batch", "GRU", {},
         lambda m: m(pack_padded_sequence(x()[:, :2], [2, 4], enforce_sorted=False), h()),
         Invalid, r"h_0 has shape \(1, 3, 4\), expected \(1, 2, 4\)"),
        ("packed_3d_data", "LSTM", {},
         lambda m: m(PackedSequence(rand(2, 2, I), torch.tensor([2]))), Invalid,
         "PackedSequence data must be 2-D, got 3-D"),
        ("packed_data_dtype", "LSTM", {},
         lambda m: m(PackedSequence(rand(4, I).float(), torch.tensor([2, 2]))), Invalid,
         "input dtype torch.float32 does not match"),
    ]


REFUSED_CASES = _refused_cases() if torch is not None else []


@needs_torch
@pytest.mark.parametrize("name,kind,kw,call,exc,pattern", REFUSED_CASES,
                         ids=[c[0] for c in REFUSED_CASES])
def test_torch_refuses_with_a_message(name, kind, kw, call, exc, pattern):
    torch.manual_seed(1)
    _, ours = make_pair(kind, **kw)
    with pytest.raises(exc, match=pattern):
        call(ours)


@needs_torch
@pytest.mark.filterwarnings("ignore:Complex modules")
def test_torch_module_in_a_dtype_rnnx_cannot_run():
    """Like torch.nn, the module may be built in or moved to a dtype rnnx cannot run
    (complex64) and back; a call in that state says which dtypes rnnx runs (bfloat16 and
    float16 run: test_bfloat16.py, test_torch_cuda.py)."""
    torch.manual_seed(1)
    dt = torch.complex64
    ref, ours = make_pair("LSTM")
    ours.to(dt)
    for x in (rand(T, B, I).to(dt), rand(T, B, I)):
        with pytest.raises(Unsupported, match=f"its parameters are {dt}.*\\.float\\(\\)"):
            ours(x)
    built = rt.GRU(I, H, dtype=dt)
    with pytest.raises(Unsupported,
                       match="rnnx.torch.GRU runs float32, float64, bfloat16 and float16"):
        built(rand(T, B, I).to(dt))
    # Back to float64, it runs again and matches torch.nn moved the same way.
    ref.to(dt).to(torch.float64)
    ours.to(torch.float64)
    x = rand(T, B, I)
    assert_same(ours(x), ref(x), _bound(ref), "after .to(complex64).to(float64)")


@needs_torch
def test_torch_module_dtype_round_trips_with_gradients():
    torch.manual_seed(1)
    ref, ours = make_pair("GRU", num_layers=2)
    for m in (ref, ours):
        m.float().double().to(torch.float32).to(torch.float64)
    x = rand(T, B, I).requires_grad_()
    assert_same(grads_of(ours, x), grads_of(ref, x), _bound(ref), "round trip")


@needs_torch
@pytest.mark.parametrize("shape", [(1,), (I, 4 * H), (4 * H, I + 1)], ids=str)
def test_torch_parameter_with_a_wrong_shape(shape):
    """A reassigned parameter of another shape is refused (before the fix a size-1 one was
    broadcast into the whole block and a transposed one read as if it were not)."""
    torch.manual_seed(1)
    _, ours = make_pair("LSTM")
    ours.weight_ih_l0 = torch.nn.Parameter(rand(*shape))
    with pytest.raises(Invalid, match=rf"parameter weight_ih_l0 has shape {re_shape(shape)}, "
                                      rf"expected \(16, 5\)"):
        ours(rand(T, B, I))
    # The same numbers as a reshaped view of the flat buffer (same size, same address).
    _, ours = make_pair("LSTM")
    ours.weight_ih_l0.data = ours.weight_ih_l0.data.view(I, 4 * H)
    with pytest.raises(Invalid, match=r"weight_ih_l0 has shape \(5, 16\)"):
        ours(rand(T, B, I))


def re_shape(shape):
    return "\\(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + "\\)"


@needs_torch
def test_torch_parameters_of_mixed_dtype_and_bad_state_dicts():
    torch.manual_seed(1)
    ref, ours = make_pair("LSTM")
    ours.bias_hh_l0 = torch.nn.Parameter(rand(4 * H).float())
    with pytest.raises(Invalid, match="parameter bias_hh_l0 is torch.float32 on cpu; all must "
                                      "be torch.float64"):
        ours(rand(T, B, I))
    # torch.nn's own load_state_dict checks shapes; what it accepts (another dtype, a
    # transposed view) is converted into the flat buffer, which stays in use.
    _, ours = make_pair("LSTM")
    sd = ref.state_dict()
    with pytest.raises(RuntimeError, match="size mismatch for weight_ih_l0"):
        ours.load_state_dict(dict(sd, weight_ih_l0=rand(4 * H, I + 1)))
    w = rand(I, 4 * H).t()
    ours.load_state_dict(dict(sd, weight_ih_l0=w.float()))
    ref.load_state_dict(dict(sd, weight_ih_l0=w.float()))
    x = rand(T, B, I)
    assert_same(ours(x), ref(x), _bound(ref), "after loading float32 and transposed weights")


@needs_torch
def test_torch_double_backward_has_a_graph_or_is_refused():
    """rnnx's kernels are not differentiable twice. Gradients taken with create_graph=True
    carry a graph (the operators' path, PyTorch 2.4+: tests/test_torch_double_backward.py) or
    are refused: never silently without one, which would make a gradient penalty add nothing."""
    torch.manual_seed(1)
    _, ours = make_pair("GRU")
    x = rand(T, B, I).requires_grad_()
    y, _ = ours(x)
    if rnnx.torch._torch_ops.AVAILABLE:
        (g2,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        assert g2.requires_grad
    else:
        with pytest.raises(Unsupported, match="double backward .*create_graph=True"):
            torch.autograd.grad(y.sum(), x, create_graph=True)
    # Without create_graph the same graph still gives its gradients.
    (g,) = torch.autograd.grad(y.sum(), x)
    assert g.shape == x.shape and not g.requires_grad


@needs_torch
def test_torch_refused_call_leaves_dropout_counter():
    """A refused call draws no dropout mask: the next good call gets the mask it would
    have had without it."""
    torch.manual_seed(1)
    _, ours = make_pair("LSTM", num_layers=2, dropout=0.5)
    ours.train()
    x = rand(T, B, I)
    ours(x)
    for bad in (dict(lengths=[T + 1, 1, 1]), dict(hx=(rand(2, B + 1, H), rand(2, B, H)))):
        with pytest.raises(Invalid):
            ours(x, **bad)
    assert ours.dropout_calls == 1
    ours.weight_hh_l1 = torch.nn.Parameter(rand(H, H))
    with pytest.raises(Invalid, match="weight_hh_l1 has shape"):
        ours(x)
    assert ours.dropout_calls == 1


@needs_torch
def test_torch_lengths_in_every_container_agree():
    """lengths as a list, tuple, NumPy array of any integer type, an int or float tensor, or
    whole-number floats: the same plan and bit-identical results."""
    torch.manual_seed(1)
    _, ours = make_pair("LSTM")
    x = rand(T, B, I)
    want = _flat(ours(x, lengths=[T, 0, 3]))
    for lengths in ((T, 0, 3), np.array([T, 0, 3], np.uint8), np.array([T, 0, 3], np.int32),
                    torch.tensor([T, 0, 3]), torch.tensor([T, 0, 3], dtype=torch.int32),
                    torch.tensor([T, 0.0, 3]), [float(T), 0.0, 3.0],
                    torch.tensor([T, 0, 3]).expand(2, 3)[1]):
        got = _flat(ours(x, lengths=lengths))
        for g, w in zip(got, want):
            assert torch.equal(g, w), f"lengths as {lengths!r}"
    assert ours.rnnx_networks_built == 1
    stats = ours.rnnx_network_stats()
    assert stats["backends_built"] == stats["slots"], "a slot rebinds to every later shape"


# ---- NumPy classes ------------------------------------------------------------------------------


def np_module(kind="LSTM", **kw):
    kw.setdefault("dtype", np.float64)
    return getattr(rnnx, kind)(I, H, rng=0, **kw)


def np_rand(*shape):
    return np.random.default_rng(3).standard_normal(shape)


# Forms of the same input a NumPy module converts and runs: (id, make(x) -> input). Each
# must give exactly the result of the plain C-contiguous float64 array.
NP_SAME_INPUTS = [
    ("transposed", lambda x: np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2)),
    ("fortran_order", np.asfortranarray),
    ("negative_strides", lambda x: np.ascontiguousarray(x[::-1])[::-1]),
    ("read_only", lambda x: np.lib.stride_tricks.as_strided(x, writeable=False)),
    ("nested_lists", lambda x: x.tolist()),
    ("torch_tensor", lambda x: torch.from_numpy(x)),
    ("torch_requires_grad", lambda x: torch.from_numpy(x.copy()).requires_grad_()),
    ("torch_transposed", lambda x: torch.from_numpy(np.ascontiguousarray(x.transpose(1, 0, 2)))
     .transpose(0, 1)),
    ("torch_neg_bit", lambda x: neg_view(torch.from_numpy(x))),
]


@pytest.mark.parametrize("name,make", NP_SAME_INPUTS, ids=[c[0] for c in NP_SAME_INPUTS])
def test_numpy_converts_array_forms(name, make):
    if name.startswith("torch") and torch is None:
        pytest.skip("PyTorch not installed")
    m = np_module()
    x = np_rand(T, B, I)
    h0, c0 = np_rand(1, B, H), np_rand(1, B, H)
    want = _flat(m.forward(x, hx=(h0, c0), lengths=[T, 2, 0]))
    got = _flat(m.forward(make(x), hx=(make(h0), make(c0)), lengths=[T, 2, 0]))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)


def test_numpy_converts_other_real_dtypes():
    """Integer, bool, float16/float32 input (and bfloat16 tensors) are converted with one
    copy, as the docs say: the result is that of the converted values."""
    m = np_module()
    x = np.round(np_rand(T, B, I) * 4)
    want = _flat(m.forward(x))
    for dt in (np.int8, np.int64, np.float16, np.float32):
        for g, w in zip(_flat(m.forward(x.astype(dt))), want):
            np.testing.assert_array_equal(g, w, err_msg=str(dt))
    ones = m.forward(np.ones((T, B, I)))[0]
    np.testing.assert_array_equal(m.forward(np.ones((T, B, I), bool))[0], ones)
    # Broadcast (zero-stride) input, and a broadcast state.
    y0 = m.forward(np.broadcast_to(x[:1], x.shape), hx=(np.broadcast_to(0.5, (1, B, H)), None))
    y1 = m.forward(np.repeat(x[:1], T, axis=0), hx=(np.full((1, B, H), 0.5), None))
    for g, w in zip(_flat(y0), _flat(y1)):
        np.testing.assert_array_equal(g, w)
    if torch is not None:
        xb = torch.from_numpy(x).to(torch.bfloat16)  # small integers: exact in bfloat16
        for g, w in zip(_flat(m.forward(xb)), want):
            np.testing.assert_array_equal(g, w)


def _np_refused():
    x = np_rand(T, B, I)
    h = np_rand(1, B, H)
    return [
        ("x_complex", "LSTM", lambda m: m.forward(x + 1j), Invalid,
         "x has dtype complex128; a real"),
        ("x_strings", "LSTM", lambda m: m.forward(x.astype(str)), Invalid, "x has dtype <U"),
        ("x_objects", "LSTM", lambda m: m.forward(x.astype(object)), Invalid,
         "x has dtype object"),
        ("x_none", "GRU", lambda m: m.forward(None), Invalid, r"x has dtype object \(NoneType\)"),
        ("x_datetime", "GRU", lambda m: m.forward(x.astype("datetime64[s]")), Invalid,
         "x has dtype datetime64"),
        ("x_ragged", "RNN", lambda m: m.forward([[[0.0] * I], [[0.0] * (I + 1)]]), Invalid,
         "x must be an array of numbers"),
        ("x_scalar", "RNN", lambda m: m.forward(1.0), Invalid, r"x must be 3-D .* got shape \(\)"),
        ("x_2d", "RNN", lambda m: m.forward(x[0]), Invalid, r"got shape \(3, 5\)"),
        ("x_T0", "LSTM", lambda m: m.forward(x[:0]), Invalid, r"max_seq_len \(= 0\)"),
        ("x_input_size", "LSTM", lambda m: m.forward(x[..., :2]), Invalid,
         r"x dim 2 \(= 2\) must equal input_size \(= 5\)"),
        ("x_input_size_empty_batch", "LSTM", lambda m: m.forward(np.zeros((T, 0, 2))), Invalid,
         r"x dim 2 \(= 2\) must equal input_size \(= 5\)"),
        ("h0_complex", "LSTM", lambda m: m.forward(x, hx=(h * 1j, None)), Invalid,
         "h0 has dtype complex128"),
        ("h0_batch", "LSTM", lambda m: m.forward(x, hx=(h[:, :2], None)), Invalid,
         r"h0 has shape \(1, 2, 4\), expected \(1, 3, 4\)"),
        ("h0_2d", "GRU", lambda m: m.forward(x, hx=h[0]), Invalid,
         r"h0 has shape \(3, 4\), expected \(1, 3, 4\)"),
        ("c0_width", "LSTM", lambda m: m.forward(x, hx=(None, np.zeros((1, B, H + 1)))), Invalid,
         r"c0 has shape \(1, 3, 5\)"),
        ("hx_one_array_for_lstm", "LSTM", lambda m: m.forward(x, hx=h), Invalid,
         r"hx for LSTM must be a pair \(h0, c0\)"),
        ("hx_tuple_for_gru", "GRU", lambda m: m.forward(x, hx=(h,)), Invalid,
         "hx for gru must be one array h0, not a tuple"),
        ("lengths_fraction", "LSTM", lambda m: m.forward(x, lengths=[2.5, 1, 1]), Invalid,
         r"lengths\[0\] \(= 2.5\) is not a whole number"),
        ("lengths_inf", "LSTM", lambda m: m.forward(x, lengths=[1, float("inf"), 1]), Invalid,
         r"lengths\[1\] \(= inf\)"),
        ("lengths_int64_overflow", "LSTM", lambda m: m.forward(x, lengths=[2 ** 63, 1, 1]),
         Invalid, "lengths must hold integers"),
        ("lengths_string", "GRU", lambda m: m.forward(x, lengths="abc"), Invalid,
         r"lengths must be 1-D, got shape \(\)"),
        ("lengths_over_T", "GRU", lambda m: m.forward(x, lengths=[T + 1, 1, 1]), Invalid,
         r"lengths\[0\] \(= 7\)"),
        ("packed_fraction", "LSTM", lambda m: m.forward(x[0], batch_sizes=[2, 0.5]), Invalid,
         r"batch_sizes\[1\] \(= 0.5\)"),
        ("packed_rows", "LSTM", lambda m: m.forward(x[0], batch_sizes=[2, 2]), Invalid,
         r"x dim 0 \(= 3\) must equal sum\(batch_sizes\) \(= 4\)"),
        ("packed_sorted_indices", "LSTM",
         lambda m: m.forward(x[0], batch_sizes=[2, 1], sorted_indices=[0, 0]), Invalid,
         "sorted_indices is not a permutation"),
        ("packed_and_lengths", "LSTM",
         lambda m: m.forward(x[0], batch_sizes=[2, 1], lengths=[2, 1]), Invalid, "not both"),
        ("plan_for_shape", "LSTM", lambda m: m.plan_for((T,)), Invalid,
         r"x_shape must be 3-D .* got \(6,\)"),
        ("load_complex", "LSTM",
         lambda m: m.load_state_dict({k: v + 1j for k, v in m.state_dict().items()}), Invalid,
         "load_state_dict: weight_ih_l0 has dtype complex128"),
        ("load_transposed_shape", "LSTM",
         lambda m: m.load_state_dict(dict(m.state_dict(), weight_ih_l0=np.zeros((I, 4 * H))))
         , Invalid, r"weight_ih_l0 has shape \(5, 16\), expected \(16, 5\)"),
        ("load_not_a_mapping", "LSTM", lambda m: m.load_state_dict([1, 2]), Invalid,
         "state_dict must be a mapping name -> array, got list"),
    ]


NP_REFUSED = _np_refused()


@pytest.mark.parametrize("name,kind,call,exc,pattern", NP_REFUSED,
                         ids=[c[0] for c in NP_REFUSED])
def test_numpy_refuses_with_a_message(name, kind, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(np_module(kind))


def test_numpy_onnx_entry_points_name_their_arguments():
    W, R = np_rand(1, 4 * H, I), np_rand(1, 4 * H, H)
    with pytest.raises(TypeError, match="clip must be a real number, got 'x'"):
        rnnx.LSTM.from_onnx(W, R, clip="x")
    with pytest.raises(Invalid, match="W must be floating point, got dtype complex128"):
        rnnx.LSTM.from_onnx(W + 1j, R)
    m = rnnx.LSTM.from_onnx(W, R)
    X = np_rand(T, B, I)
    with pytest.raises(Invalid, match=r"sequence_lens\[1\] \(= 2.5\)"):
        m.onnx_forward(X, sequence_lens=[T, 2.5, 1])
    with pytest.raises(Invalid, match=r"initial_h must be 3-D, got shape \(3, 4\)"):
        m.onnx_forward(X, initial_h=np.zeros((B, H)))
    with pytest.raises(Invalid, match="initial_c has dtype complex128"):
        m.onnx_forward(X, initial_c=np.zeros((1, B, H)) * 1j)
    if torch is not None:  # W as a bfloat16 tensor (NumPy has no bfloat16) converts exactly
        Wb = torch.from_numpy(W).to(torch.bfloat16)
        np.testing.assert_array_equal(rnnx.LSTM.from_onnx(Wb, R).to_onnx()[0],
                                      Wb.float().numpy())


def test_numpy_backward_refuses_bad_gradients():
    m = np_module()
    y, _ = m.forward(np_rand(T, B, I), training=True)
    with pytest.raises(Invalid, match="dy has dtype complex128"):
        m.backward(dy=y + 1j)
    with pytest.raises(Invalid, match=r"dy has shape \(6, 3, 5\), expected the shape of y"):
        m.backward(dy=np.ones((T, B, H + 1)))
    with pytest.raises(Invalid, match=r"dhy has shape \(1, 2, 4\)"):
        m.backward(dhy=np.ones((1, 2, H)))
    # A broadcast or float32 dy is converted, giving the dense float64 one's gradients.
    want = _flat(m.backward(dy=np.ones(y.shape)))
    for dy in (np.broadcast_to(1.0, y.shape), np.ones(y.shape, np.float32)):
        for g, w in zip(_flat(m.backward(dy=dy)), want):
            np.testing.assert_array_equal(g, w)


def test_numpy_reassigned_weights_are_checked_by_the_binding():
    m = np_module(dtype=np.float32)
    x = np_rand(T, B, I)
    n = m.weights.size
    for weights, pattern in ((m.weights.astype(np.float64), "element format 'd'"),
                             (np.zeros(3, np.float32), "weights has 3 elements"),
                             (np.zeros(2 * n, np.float32)[::2], "must be C-contiguous"),
                             ([0.0] * n, "must support the buffer protocol")):
        m.weights = weights
        with pytest.raises(Invalid, match=pattern):
            m.forward(x)


@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(dtype=np.complex64), Unsupported, "dtype complex64 is not supported"),
    (dict(dtype=np.int32), Unsupported, "dtype int32 is not supported"),
    (dict(dtype="torch.float64"), Unsupported, "dtype 'torch.float64' is not a NumPy dtype"),
    (dict(input_size=2.5), TypeError, r"input_size must be an integer, got 2.5 \(float\)"),
    (dict(hidden_size="4"), TypeError, "hidden_size must be an integer, got '4'"),
    (dict(hidden_size=2 ** 64), Invalid, r"hidden_size \(= 18446744073709551616\) is outside"),
    (dict(num_layers=0), Invalid, r"num_layers \(= 0\) must be >= 1"),
    (dict(seed=-1), Invalid, r"seed \(= -1\) must be in \[0, 2\*\*64\)"),
    (dict(num_threads=-1), Invalid, r"num_threads \(= -1\) must be >= 0"),
    (dict(num_threads="2"), TypeError, "num_threads must be an integer, got '2'"),
    (dict(backend="gpu"), Invalid, "backend 'gpu' is not one of"),
    (dict(backend=1), TypeError, "backend must be a string or None, got 1"),
    (dict(cell_clip=("a", 1)), TypeError, "cell_clip lo must be a real number, got 'a'"),
    (dict(proj_clip=5), Invalid, r"proj_clip must be None or a pair \(lo, hi\), got 5"),
    (dict(padding_fill="x"), TypeError, "padding_fill must be a real number, got 'x'"),
    (dict(clip_nan=None), Invalid, "clip_nan 'None' is not one of: propagate, replace"),
], ids=["complex64", "int32", "dtype_string", "float_size", "string_size", "huge_size", "no_layers",
        "negative_seed", "negative_threads", "string_threads", "unknown_backend",
        "backend_not_a_string", "clip_string", "clip_not_a_pair", "fill_string", "clip_nan_none"])
def test_numpy_constructor_arguments(kw, exc, pattern):
    args = dict(input_size=I, hidden_size=H)
    args.update(kw)
    with pytest.raises(exc, match=pattern):
        rnnx.LSTM(**args)


@needs_torch
def test_numpy_torch_dtype_is_named():
    with pytest.raises(Unsupported, match="dtype torch.float64 is not a NumPy dtype"):
        rnnx.GRU(I, H, dtype=torch.float64)


@needs_torch
def test_numpy_loads_a_bfloat16_state_dict():
    """A torch module's state dict in bfloat16 (which NumPy lacks) loads exactly."""
    m = np_module(dtype=np.float32)
    sd = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    for k, v in m.params.items():
        np.testing.assert_array_equal(v, sd[k].float().numpy(), err_msg=k)


@needs_torch
@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(num_threads=-1), Invalid, r"num_threads \(= -1\) must be >= 0"),
    (dict(num_threads=1.5), TypeError, r"num_threads must be an integer, got 1.5"),
    (dict(backend="gpu"), Invalid, "backend 'gpu' is not one of"),
    (dict(seed="x"), TypeError, "seed must be an integer, got 'x'"),
    (dict(seed=-1), Invalid, r"seed \(= -1\) must be in \[0, 2\*\*64\)"),
    (dict(cell_clip=(None, 1)), TypeError, "cell_clip lo must be a real number, got None"),
    (dict(padding_fill=[0]), TypeError, r"padding_fill must be a real number, got \[0\]"),
    (dict(clip_nan=None), Invalid, "clip_nan 'None' is not one of"),
], ids=["negative_threads", "float_threads", "unknown_backend", "string_seed",
        "negative_seed", "clip_none", "fill_list", "clip_nan_none"])
def test_torch_constructor_arguments(kw, exc, pattern):
    """Refused when the module is built, not at its first call."""
    with pytest.raises(exc, match=pattern):
        rt.LSTM(I, H, **kw)


def test_error_bounds_refuse_negative_sizes():
    """The bounds are formulas in the sizes; a negative one gave 0 or NaN."""
    cfg = rnnx.Config(cell="lstm", input_size=I, hidden_size=H)
    for f in (rnnx.error_bound, rnnx.norm_error_bound):
        with pytest.raises(Invalid, match=r"max_seq_len \(= -1\) must be >= 0"):
            f(cfg, -1, 1)
        with pytest.raises(Invalid, match=r"batch \(= -5\) must be >= 0"):
            f(cfg, T, -5)
        assert f(cfg, T, B) > 0
