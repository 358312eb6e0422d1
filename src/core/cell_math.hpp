// The element-wise math of one cell step for one unit, forward and backward, written once
// over a value type V: each ISA's vector type in the cpu backend's kernels (a lane per unit,
// src/cpu/kernels/*.cpp) and Scalar<T> below in the CUDA step kernels (a thread per unit,
// src/cuda/step_kernels.hpp, whose bodies the host tests run too). What reaches these
// functions is a gate's summed pre-activation (input side + recurrent side + biases, added
// where each backend's memory layout puts them); what leaves is the new state and what a
// backend stores. Equations and gate orders as docs/math.md and the reference
// (src/reference/cell_math.cpp keeps its own copy on purpose: it is the oracle): LSTM i, f,
// g, o with peepholes, gate clip, input_forget and cell clip; GRU r, z, n in both variants;
// RNN; ONNX's activation functions; the clamp's NaN policy. The cpu backend's fixed-cell
// kernels (sigmoid/tanh cells without ONNX's options, src/cpu/kernels/step_kernels.inl)
// keep the activated gates instead of the pre-activations and are written on their own.
//
// V provides: S (the scalar type), F (values), M (per-value truth), set1, add, sub, mul, div,
// fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b, abs, nabs (-|x|), clamp(x, lo, hi) (NaN
// stays NaN), relu (NaN stays), isnan, lt, le, ge, gt (false on NaN), mand, mor, mtrue, select(m,
// if_true, if_false), exp, sigmoid, tanh, log1p_unit(u) for u in [0, 1]. In the cpu
// backend's ISA files V has internal linkage, so every instance of these templates does too
// (no code built for one ISA can be picked by the linker for another's caller).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.hpp"
#include "rnnx/config.hpp"

#if defined(__CUDACC__)
#define RNNX_CELL_INLINE __host__ __device__ __forceinline__
#else
// Inlined at each call site: as calls they would pass vectors through memory.
#define RNNX_CELL_INLINE RNNX_ALWAYS_INLINE
#endif

namespace rnnx::core::cell {

// A clamp [lo, hi] with the NaN policy (replace: NaN becomes hi and passes no gradient).
template <typename S>
struct Clamp {
  bool enabled = false;
  bool replace_nan = false;
  S lo = S(0);
  S hi = S(0);

  Clamp() = default;
  Clamp(bool on, S low, S high, NanPolicy nan)
      : enabled(on), replace_nan(nan == NanPolicy::replace), lo(low), hi(high) {}
  Clamp(const Clip& c, NanPolicy nan)
      : Clamp(c.enabled, static_cast<S>(c.lo), static_cast<S>(c.hi), nan) {}
};

// One direction's options: its activations (LSTM f, g, h; GRU f, g; RNN f), ONNX's gate clip
// (symmetric, on every gate's pre-activation), the cell clip, input_forget, and whether the
// LSTM has peepholes.
template <typename S>
struct Options {
  static constexpr bool has_gate_clip = true;  // `gate` may be on (FixedOptions: never)
  Activation f, g, h;
  Clamp<S> gate;
  Clamp<S> cell;
  bool input_forget = false;
  bool peephole = false;
};

// A direction's options from the config (direction_activations() resolves the defaults).
template <typename S>
inline Options<S> options_for(const Config& c, const std::vector<Activation>& acts) {
  Options<S> o;
  o.f = acts.at(0);
  if (acts.size() > 1) o.g = acts[1];
  if (acts.size() > 2) o.h = acts[2];
  o.gate = Clamp<S>(c.gate_clip > 0, static_cast<S>(-c.gate_clip), static_cast<S>(c.gate_clip),
                    c.clip_nan);
  o.cell = Clamp<S>(c.cell_clip, c.clip_nan);
  o.input_forget = c.input_forget;
  o.peephole = c.peephole;
  return o;
}

// One value as V: the CUDA kernels' and the host tests' arithmetic (the C++ math library's
// exp, tanh and log1p, which CUDA provides on the device too; fma fused).
template <typename T>
struct Scalar {
  using S = T;
  using F = T;
  using M = bool;
  static RNNX_CELL_INLINE F set1(S v) { return v; }
  static RNNX_CELL_INLINE F add(F a, F b) { return a + b; }
  static RNNX_CELL_INLINE F sub(F a, F b) { return a - b; }
  static RNNX_CELL_INLINE F mul(F a, F b) { return a * b; }
  static RNNX_CELL_INLINE F div(F a, F b) { return a / b; }
  static RNNX_CELL_INLINE F fma(F a, F b, F c) {
    using std::fma;
    return fma(a, b, c);
  }
  static RNNX_CELL_INLINE F fnma(F a, F b, F c) {
    using std::fma;
    return fma(-a, b, c);
  }
  static RNNX_CELL_INLINE F abs(F a) {
    using std::fabs;
    return fabs(a);
  }
  static RNNX_CELL_INLINE F nabs(F a) { return -abs(a); }
  // std::max and std::min as the reference uses them (a NaN x stays NaN), which fmax and
  // fmin are not.
  static RNNX_CELL_INLINE F clamp(F x, F lo, F hi) {
    const F low = x < lo ? lo : x;
    return hi < low ? hi : low;
  }
  static RNNX_CELL_INLINE F relu(F x) { return x < F(0) ? F(0) : x; }
  static RNNX_CELL_INLINE M isnan(F a) { return a != a; }
  static RNNX_CELL_INLINE M lt(F a, F b) { return a < b; }
  static RNNX_CELL_INLINE M le(F a, F b) { return a <= b; }
  static RNNX_CELL_INLINE M ge(F a, F b) { return a >= b; }
  static RNNX_CELL_INLINE M gt(F a, F b) { return a > b; }
  static RNNX_CELL_INLINE M mand(M a, M b) { return a && b; }
  static RNNX_CELL_INLINE M mor(M a, M b) { return a || b; }
  static RNNX_CELL_INLINE M mtrue() { return true; }
  static RNNX_CELL_INLINE F select(M m, F if_true, F if_false) { return m ? if_true : if_false; }
  static RNNX_CELL_INLINE F exp(F x) {
    using std::exp;
    return exp(x);
  }
  static RNNX_CELL_INLINE F sigmoid(F x) { return F(1) / (F(1) + exp(-x)); }
  static RNNX_CELL_INLINE F tanh(F x) {
    using std::tanh;
    return tanh(x);
  }
  static RNNX_CELL_INLINE F log1p_unit(F u) {
    using std::log1p;
    return log1p(u);
  }
};

// ---- activations -------------------------------------------------------------------------

// 0, 1 and an activation's alpha and beta as values of V.
template <class V>
struct Constants {
  typename V::F zero, one, alpha, beta;
};
template <class V>
RNNX_CELL_INLINE Constants<V> constants_of(const Activation& a) {
  using S = typename V::S;
  return {V::set1(S(0)), V::set1(S(1)), V::set1(static_cast<S>(a.alpha)),
          V::set1(static_cast<S>(a.beta))};
}

// ONNX's activation functions. Values at kinks and NaN as in docs/math.md: NaN in gives NaN
// out except thresholded_relu (0, as x >= alpha is false).
template <class V>
RNNX_CELL_INLINE typename V::F activate(const Activation& a, typename V::F x) {
  const auto [zero, one, alpha, beta] = constants_of<V>(a);
  switch (a.kind) {
    case ActivationKind::sigmoid:
      return V::sigmoid(x);
    case ActivationKind::tanh:
      return V::tanh(x);
    case ActivationKind::relu:
      return V::relu(x);
    case ActivationKind::affine:
      return V::fma(alpha, x, beta);
    case ActivationKind::leaky_relu:
      return V::select(V::ge(x, zero), x, V::mul(alpha, x));
    case ActivationKind::thresholded_relu:
      return V::select(V::ge(x, alpha), x, zero);
    case ActivationKind::scaled_tanh:
      return V::mul(alpha, V::tanh(V::mul(beta, x)));
    case ActivationKind::hard_sigmoid:
      return V::clamp(V::fma(alpha, x, beta), zero, one);
    case ActivationKind::elu:
      return V::select(V::ge(x, zero), x, V::mul(alpha, V::sub(V::exp(x), one)));
    case ActivationKind::softsign:
      return V::div(x, V::add(one, V::abs(x)));
    case ActivationKind::softplus:
      // max(x, 0) + log(1 + e^-|x|): e^-|x| is in [0, 1], nothing overflows.
      return V::add(V::relu(x), V::log1p_unit(V::exp(V::nabs(x))));
  }
  return x;
}

// The derivative at x (at a kink: docs/math.md's choice, the reference's); derivatives at
// NaN follow the same comparisons.
template <class V>
RNNX_CELL_INLINE typename V::F activation_grad(const Activation& a, typename V::F x) {
  using F = typename V::F;
  const auto [zero, one, alpha, beta] = constants_of<V>(a);
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const F s = V::sigmoid(x);
      return V::mul(s, V::sub(one, s));
    }
    case ActivationKind::tanh: {
      const F t = V::tanh(x);
      return V::fnma(t, t, one);
    }
    case ActivationKind::relu:
      return V::select(V::gt(x, zero), one, zero);
    case ActivationKind::affine:
      return alpha;
    case ActivationKind::leaky_relu:
      return V::select(V::ge(x, zero), one, alpha);
    case ActivationKind::thresholded_relu:
      return V::select(V::ge(x, alpha), one, zero);
    case ActivationKind::scaled_tanh: {
      const F t = V::tanh(V::mul(beta, x));
      return V::mul(V::mul(alpha, beta), V::fnma(t, t, one));
    }
    case ActivationKind::hard_sigmoid: {
      const F v = V::fma(alpha, x, beta);
      return V::select(V::mand(V::gt(v, zero), V::lt(v, one)), alpha, zero);
    }
    case ActivationKind::elu:
      return V::select(V::ge(x, zero), one, V::mul(alpha, V::exp(x)));
    case ActivationKind::softsign: {
      const F d = V::add(one, V::abs(x));
      return V::div(one, V::mul(d, d));
    }
    case ActivationKind::softplus:
      return V::sigmoid(x);
  }
  return one;
}

// An activation's value and derivative at x, with what they share computed once (sigmoid's
// s, tanh's t, elu's e^x, hard_sigmoid's alpha x + beta): the same operations, so the same
// bits, as activate and activation_grad called apart, in about half the time for the
// transcendental ones that backward needs both of.
template <class V>
struct ValueGrad {
  typename V::F value, grad;
};
template <class V>
RNNX_CELL_INLINE ValueGrad<V> activate_with_grad(const Activation& a, typename V::F x) {
  using F = typename V::F;
  const auto [zero, one, alpha, beta] = constants_of<V>(a);
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const F s = V::sigmoid(x);
      return {s, V::mul(s, V::sub(one, s))};
    }
    case ActivationKind::tanh: {
      const F t = V::tanh(x);
      return {t, V::fnma(t, t, one)};
    }
    case ActivationKind::scaled_tanh: {
      const F t = V::tanh(V::mul(beta, x));
      return {V::mul(alpha, t), V::mul(V::mul(alpha, beta), V::fnma(t, t, one))};
    }
    case ActivationKind::hard_sigmoid: {
      const F v = V::fma(alpha, x, beta);
      return {V::clamp(v, zero, one),
              V::select(V::mand(V::gt(v, zero), V::lt(v, one)), alpha, zero)};
    }
    case ActivationKind::elu: {
      const F e = V::exp(x);
      const typename V::M pos = V::ge(x, zero);
      return {V::select(pos, x, V::mul(alpha, V::sub(e, one))),
              V::select(pos, one, V::mul(alpha, e))};
    }
    default:
      return {activate<V>(a, x), activation_grad<V>(a, x)};
  }
}

// The fixed cells (sigmoid gates, tanh or ReLU outputs, none of ONNX's options): their
// options, and an activation's value and derivative from the activated value they keep
// (sigmoid s: s (1 - s); tanh t: 1 - t^2; ReLU h: 1 where h > 0). Templates over V, like
// everything the ISA files instantiate: an instance for a plain S would be one function that
// every ISA's object file defines, compiled for each one's instruction set.
//
// Their options are types: every activation and every option but the LSTM's cell clip is
// known where the kernel is compiled. Held in an Options<S>, they were values the compiler
// read again at every vector (the kernels' stores go through memcpy, which may alias them):
// a switch over the activation kinds at each gate, with sigmoid and tanh called out of line.
// Alone this measured no faster (the one-pass LSTM kernel on AVX2, a Zen 4: 33.5 against
// 34.5 ns per 8 cells; the chain of two activations per vector was the cost, which the
// kernels' two passes remove, step_kernels.inl), but no kernel is left to the compiler's
// choice of inlining through a switch.
template <ActivationKind K>
struct FixedActivation {
  static_assert(K == ActivationKind::sigmoid || K == ActivationKind::tanh ||
                    K == ActivationKind::relu,
                "the fixed cells' activations are sigmoid, tanh and relu");
};
template <class V, ActivationKind K>
RNNX_CELL_INLINE typename V::F activate(FixedActivation<K>, typename V::F x) {
  if constexpr (K == ActivationKind::sigmoid) {
    return V::sigmoid(x);
  } else if constexpr (K == ActivationKind::tanh) {
    return V::tanh(x);
  } else {
    return V::relu(x);
  }
}
// `Gate`: the gate activation f (sigmoid for LSTM and GRU; tanh or relu for RNN); g and h are
// tanh. The cell clip is the one runtime option (LSTM).
template <typename S, ActivationKind Gate>
struct FixedOptions {
  static constexpr bool has_gate_clip = false;
  static constexpr FixedActivation<Gate> f{};
  static constexpr FixedActivation<ActivationKind::tanh> g{}, h{};
  static constexpr bool input_forget = false;
  static constexpr bool peephole = false;
  Clamp<S> cell;
};
template <class V>
RNNX_CELL_INLINE ValueGrad<V> sigmoid_from_value(typename V::F s) {
  return {s, V::mul(s, V::sub(V::set1(typename V::S(1)), s))};
}
template <class V>
RNNX_CELL_INLINE ValueGrad<V> tanh_from_value(typename V::F t) {
  return {t, V::fnma(t, t, V::set1(typename V::S(1)))};
}
template <class V>
RNNX_CELL_INLINE ValueGrad<V> relu_from_value(typename V::F h) {
  const typename V::F zero = V::set1(typename V::S(0)), one = V::set1(typename V::S(1));
  // h > 0 exactly when the input was (NaN gives 0 either way).
  return {h, V::select(V::gt(h, zero), one, zero)};
}

// ---- clamps ------------------------------------------------------------------------------

// v clamped to [lo, hi] with the NaN policy (an enabled clamp).
template <class V>
RNNX_CELL_INLINE typename V::F clamp_value(typename V::F v, const Clamp<typename V::S>& c) {
  const typename V::F clamped = V::clamp(v, V::set1(c.lo), V::set1(c.hi));
  return c.replace_nan ? V::select(V::isnan(v), V::set1(c.hi), clamped) : clamped;
}

// Whether the gradient passes an enabled clamp: raw inside [lo, hi], or a NaN that propagated.
template <class V>
RNNX_CELL_INLINE typename V::M clamp_passes(typename V::F raw, const Clamp<typename V::S>& c) {
  const typename V::M inside = V::mand(V::ge(raw, V::set1(c.lo)), V::le(raw, V::set1(c.hi)));
  return c.replace_nan ? inside : V::mor(inside, V::isnan(raw));
}

// The gate clip's masks. Forward hands each gate's mask to a sink as it is made, keep(q, m)
// (the cpu kernels store it as a row's flag at once; the CUDA kernels hold it for the
// backward that recomputes the step); backward reads them through masks.on() (false: every
// gradient passed) and masks(q), loaded where they are needed so that no more values are
// live than the equations take. Discard and AllPass are the sink and masks of a step
// without them.
struct Discard {
  template <class M>
  RNNX_CELL_INLINE void operator()(int, M) const {}
};
template <class V>
struct AllPass {
  RNNX_CELL_INLINE bool on() const { return false; }
  RNNX_CELL_INLINE typename V::M operator()(int) const { return V::mtrue(); }
};

// Gate q's pre-activation through the gate clip (its mask to keep when the clip is on).
template <class V, class O, class Keep>
RNNX_CELL_INLINE typename V::F gate_clip(const O& o, typename V::F a, const Keep& keep, int q) {
  if constexpr (!O::has_gate_clip) {
    return a;
  } else {
    if (!o.gate.enabled) return a;
    keep(q, clamp_passes<V>(a, o.gate));
    return clamp_value<V>(a, o.gate);
  }
}

// The gradient of gate q's (clipped) pre-activation: d_out times the activation's derivative
// there, or 0 where the gate clip held it.
template <class V, class Masks>
RNNX_CELL_INLINE typename V::F through(typename V::F grad, typename V::F d_out, const Masks& masks,
                                       int q) {
  const typename V::F g = V::mul(d_out, grad);
  return masks.on() ? V::select(masks(q), g, V::set1(typename V::S(0))) : g;
}

// ---- LSTM --------------------------------------------------------------------------------

template <class V>
struct LstmState {
  typename V::F gate[4];  // the activated gates i, f, g, o
  typename V::F c_raw;    // f*c_prev + i*g, before the cell clip
  typename V::F c;        // the new cell state
  typename V::F h;        // o * h(c): the output, or the projection's input
};

// The LSTM's forward in two parts: the gates and the new cell state (lstm_forward_state),
// then h from the output gate and the cell state (lstm_forward_output). lstm_forward runs
// both; the cpu's fixed LSTM kernel runs each as a pass of its own over a row, whose
// iterations are independent: in one pass, tanh(g) -> c -> tanh(c) -> h is a chain of two
// activations that each vector waits on (about 1.3x slower on AVX2).
//
// a: the summed pre-activations i, f, g, o on entry; on return the gate clip's outputs after
// the peepholes (p: i, f, o; read when o.peephole), which backward takes. s.h is not set.
template <class V, class O, class Keep>
RNNX_CELL_INLINE LstmState<V> lstm_forward_state(const O& o, typename V::F a[4],
                                                 typename V::F c_prev, const typename V::F p[3],
                                                 const Keep& keep) {
  using F = typename V::F;
  const F one = V::set1(typename V::S(1));
  if (o.peephole) {
    a[0] = V::fma(p[0], c_prev, a[0]);
    a[1] = V::fma(p[1], c_prev, a[1]);
  }
  for (int q = 0; q < 3; ++q) a[q] = gate_clip<V>(o, a[q], keep, q);
  const F i = activate<V>(o.f, a[0]);
  const F f = o.input_forget ? V::sub(one, i) : activate<V>(o.f, a[1]);
  LstmState<V> s;
  s.gate[0] = i, s.gate[1] = f, s.gate[2] = activate<V>(o.g, a[2]);
  s.c_raw = V::fma(f, c_prev, V::mul(i, s.gate[2]));
  s.c = o.cell.enabled ? clamp_value<V>(s.c_raw, o.cell) : s.c_raw;
  if (o.peephole) a[3] = V::fma(p[2], s.c, a[3]);
  a[3] = gate_clip<V>(o, a[3], keep, 3);
  s.gate[3] = activate<V>(o.f, a[3]);
  return s;
}
// h = o * h(c): the output (or the projection's input) from the output gate's value og and
// the new cell state c.
template <class V, class O>
RNNX_CELL_INLINE typename V::F lstm_forward_output(const O& o, typename V::F og, typename V::F c) {
  return V::mul(og, activate<V>(o.h, c));
}
// Both parts.
template <class V, class O, class Keep>
RNNX_CELL_INLINE LstmState<V> lstm_forward(const O& o, typename V::F a[4], typename V::F c_prev,
                                           const typename V::F p[3], const Keep& keep) {
  LstmState<V> s = lstm_forward_state<V>(o, a, c_prev, p, keep);
  s.h = lstm_forward_output<V>(o, s.gate[3], s.c);
  return s;
}

template <class V>
struct LstmGrad {
  typename V::F da[4];    // the gradients of the pre-activations i, f, g, o (the GEMMs' input)
  typename V::F dc_prev;  // of the previous step's cell state
};

// The LSTM's backward from each gate's value and derivative at its input (i, f, g, o; f's
// unused with input_forget) and h(c)'s: c_prev the previous cell state, p the peepholes (read
// when o.peephole), dh the gradient of h (of the projection's input when there is one), dc
// that of c from the step after; gate: the gate clip's masks, cell: the cell clip's (its mask
// 0). The extended cells come here from the pre-activations (lstm_backward), the cpu's fixed
// cells from the activated gates they keep.
template <class V, class O, class GateMasks, class CellMask>
RNNX_CELL_INLINE LstmGrad<V> lstm_backward_from_gates(const O& o, const ValueGrad<V> (&gate)[4],
                                                      const ValueGrad<V>& hc, typename V::F c_prev,
                                                      const typename V::F p[3], typename V::F dh,
                                                      typename V::F dc_next, const GateMasks& masks,
                                                      const CellMask& cell) {
  using F = typename V::F;
  const F zero = V::set1(typename V::S(0));
  const ValueGrad<V>&i = gate[0], &f = gate[1], &g = gate[2], &og = gate[3];
  LstmGrad<V> r;
  r.da[3] = through<V>(og.grad, V::mul(dh, hc.value), masks, 3);
  F dc = V::fma(V::mul(dh, og.value), hc.grad, dc_next);
  if (o.peephole) dc = V::fma(r.da[3], p[2], dc);
  if (cell.on()) dc = V::select(cell(0), dc, zero);
  F di = V::mul(dc, g.value), df = V::mul(dc, c_prev);
  if (o.input_forget) {
    di = V::sub(di, df);
    df = zero;
  }
  r.da[0] = through<V>(i.grad, di, masks, 0);
  r.da[1] = o.input_forget ? zero : through<V>(f.grad, df, masks, 1);
  r.da[2] = through<V>(g.grad, V::mul(dc, i.value), masks, 2);
  r.dc_prev = V::mul(dc, f.value);
  if (o.peephole) {
    r.dc_prev = V::fma(r.da[0], p[0], r.dc_prev);
    r.dc_prev = V::fma(r.da[1], p[1], r.dc_prev);
  }
  return r;
}

// The same from lstm_forward's clipped gate inputs a and the cell state c it made.
template <class V, class O, class GateMasks, class CellMask>
RNNX_CELL_INLINE LstmGrad<V> lstm_backward(const O& o, const typename V::F a[4], typename V::F c,
                                           typename V::F c_prev, const typename V::F p[3],
                                           typename V::F dh, typename V::F dc_next,
                                           const GateMasks& masks, const CellMask& cell) {
  const typename V::F zero = V::set1(typename V::S(0)), one = V::set1(typename V::S(1));
  ValueGrad<V> gate[4];
  gate[0] = activate_with_grad<V>(o.f, a[0]);
  gate[1] = o.input_forget ? ValueGrad<V>{V::sub(one, gate[0].value), zero}
                           : activate_with_grad<V>(o.f, a[1]);
  gate[2] = activate_with_grad<V>(o.g, a[2]);
  gate[3] = activate_with_grad<V>(o.f, a[3]);
  return lstm_backward_from_gates<V>(o, gate, activate_with_grad<V>(o.h, c), c_prev, p, dh, dc_next,
                                     masks, cell);
}

// ---- GRU ---------------------------------------------------------------------------------

template <class V>
struct GruGates {
  typename V::F r, z;
};
// r and z from their summed pre-activations a[0], a[1] (clipped on return; gates 0 and 1).
template <class V, class O, class Keep>
RNNX_CELL_INLINE GruGates<V> gru_gates(const O& o, typename V::F a[2], const Keep& keep) {
  a[0] = gate_clip<V>(o, a[0], keep, 0);
  a[1] = gate_clip<V>(o, a[1], keep, 1);
  return {activate<V>(o.f, a[0]), activate<V>(o.f, a[1])};
}

// n's pre-activation in the linear-before-reset GRU: W_in x + b_in + r * (W_hn h + b_hn).
template <class V>
RNNX_CELL_INLINE typename V::F gru_lbr_n_input(typename V::F an_x, typename V::F r,
                                               typename V::F hn) {
  return V::fma(r, hn, an_x);
}

template <class V>
struct GruOutput {
  typename V::F n, h;
};
// n from its summed pre-activation an (clipped on return; gate 2), and the new state from z
// and h_prev.
template <class V, class O, class Keep>
RNNX_CELL_INLINE GruOutput<V> gru_output(const O& o, typename V::F& an, typename V::F z,
                                         typename V::F h_prev, const Keep& keep) {
  const typename V::F one = V::set1(typename V::S(1));
  an = gate_clip<V>(o, an, keep, 2);
  const typename V::F n = activate<V>(o.g, an);
  return {n, V::fma(z, h_prev, V::mul(V::sub(one, z), n))};
}

template <class V>
struct GruGrad {
  typename V::F da[3];    // r's (linear before reset; 0 for the original GRU), z's, n's
  typename V::F dhn;      // of W_hn h + b_hn (dn r; linear before reset) or of W_hn (r h) + b_hn
  typename V::F dh_prev;  // the direct part dh z (the GEMM adds the rest)
};
// The GRU's backward from r's, z's and n's values and derivatives at their inputs (r's unused
// by the original GRU); hn: W_hn h + b_hn (linear before reset); dh: the gradient of the new
// state. The original GRU's r needs W_hn^T dn first: gru_backward_reset.
template <class V, class Masks>
RNNX_CELL_INLINE GruGrad<V> gru_backward_from_gates(bool linear_before_reset, const ValueGrad<V>& r,
                                                    const ValueGrad<V>& z, const ValueGrad<V>& n,
                                                    typename V::F hn, typename V::F h_prev,
                                                    typename V::F dh, const Masks& masks) {
  using F = typename V::F;
  const F zero = V::set1(typename V::S(0)), one = V::set1(typename V::S(1));
  GruGrad<V> g;
  g.da[2] = through<V>(n.grad, V::mul(dh, V::sub(one, z.value)), masks, 2);
  g.da[1] = through<V>(z.grad, V::mul(dh, V::sub(h_prev, n.value)), masks, 1);
  g.dh_prev = V::mul(dh, z.value);
  if (linear_before_reset) {
    g.da[0] = through<V>(r.grad, V::mul(g.da[2], hn), masks, 0);
    g.dhn = V::mul(g.da[2], r.value);
  } else {
    g.da[0] = zero;
    g.dhn = g.da[2];
  }
  return g;
}

// The same from the clipped pre-activations r, z, n (gru_gates, gru_output).
template <class V, class O, class Masks>
RNNX_CELL_INLINE GruGrad<V> gru_backward(const O& o, bool linear_before_reset,
                                         const typename V::F a[3], typename V::F hn,
                                         typename V::F h_prev, typename V::F dh,
                                         const Masks& masks) {
  const ValueGrad<V> r = linear_before_reset ? activate_with_grad<V>(o.f, a[0]) : ValueGrad<V>{};
  return gru_backward_from_gates<V>(linear_before_reset, r, activate_with_grad<V>(o.f, a[1]),
                                    activate_with_grad<V>(o.g, a[2]), hn, h_prev, dh, masks);
}

template <class V>
struct GruResetGrad {
  typename V::F da_r;  // r's pre-activation gradient
  typename V::F r;     // what drh reaches h_prev through: dh_prev += drh r
};
// The original GRU's reset gate from drh = (W_hn^T dn)_j, with r's value and derivative.
template <class V, class Masks>
RNNX_CELL_INLINE GruResetGrad<V> gru_backward_reset_from_gate(const ValueGrad<V>& r,
                                                              typename V::F h_prev,
                                                              typename V::F drh,
                                                              const Masks& masks) {
  return {through<V>(r.grad, V::mul(drh, h_prev), masks, 0), r.value};
}
// The same from ar, r's clipped pre-activation.
template <class V, class O, class Masks>
RNNX_CELL_INLINE GruResetGrad<V> gru_backward_reset(const O& o, typename V::F ar,
                                                    typename V::F h_prev, typename V::F drh,
                                                    const Masks& masks) {
  return gru_backward_reset_from_gate<V>(activate_with_grad<V>(o.f, ar), h_prev, drh, masks);
}

// ---- RNN ---------------------------------------------------------------------------------

// a: the summed pre-activation (clipped on return; gate 0); returns h.
template <class V, class O, class Keep>
RNNX_CELL_INLINE typename V::F rnn_forward(const O& o, typename V::F& a, const Keep& keep) {
  a = gate_clip<V>(o, a, keep, 0);
  return activate<V>(o.f, a);
}
template <class V, class O, class Masks>
RNNX_CELL_INLINE typename V::F rnn_backward(const O& o, typename V::F a, typename V::F dh,
                                            const Masks& masks) {
  return through<V>(activation_grad<V>(o.f, a), dh, masks, 0);
}

}  // namespace rnnx::core::cell
