// The element-wise part of one cell step, forward and backward, for one hidden unit: what the
// cuda backend's own fused step kernels compute after the GEMMs have summed each gate's
// pre-activation (input side + recurrent side + biases). Written once for host and device
// (RNNX_HOST_DEVICE) and templated on the arithmetic type, so that the CPU tests check it
// against the reference's cell (tests/test_cuda_cell_math.cpp) in every build. Equations and
// gate orders as docs/math.md: LSTM i, f, g, o with peepholes, gate clip, input_forget, cell
// clip; GRU r, z, n in both variants; RNN; ONNX's activations; the clamp's NaN policy.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cuda::cell {

template <typename T>
struct Act {
  ActivationKind kind = ActivationKind::tanh;
  T alpha = 0, beta = 0;
};

template <typename T>
RNNX_HOST_DEVICE T sigmoid(T x) {
  using std::exp;
  return T(1) / (T(1) + exp(-x));
}

// std::max and std::min as the reference uses them (a NaN first argument stays NaN), which
// fmax and fmin are not.
template <typename T>
RNNX_HOST_DEVICE T max_of(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
RNNX_HOST_DEVICE T min_of(T a, T b) {
  return b < a ? b : a;
}

template <typename T>
RNNX_HOST_DEVICE T activate(const Act<T>& a, T x) {
  using std::exp, std::tanh, std::fabs, std::log1p;
  switch (a.kind) {
    case ActivationKind::sigmoid:
      return sigmoid(x);
    case ActivationKind::tanh:
      return tanh(x);
    case ActivationKind::relu:
      return max_of(x, T(0));
    case ActivationKind::affine:
      return a.alpha * x + a.beta;
    case ActivationKind::leaky_relu:
      return x >= T(0) ? x : a.alpha * x;
    case ActivationKind::thresholded_relu:
      return x >= a.alpha ? x : T(0);
    case ActivationKind::scaled_tanh:
      return a.alpha * tanh(a.beta * x);
    case ActivationKind::hard_sigmoid:
      return min_of(max_of(a.alpha * x + a.beta, T(0)), T(1));
    case ActivationKind::elu:
      return x >= T(0) ? x : a.alpha * (exp(x) - T(1));
    case ActivationKind::softsign:
      return x / (T(1) + fabs(x));
    case ActivationKind::softplus:
      return x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
  }
  return x;
}

// The derivative at x (at a kink: docs/math.md's choice, the reference's).
template <typename T>
RNNX_HOST_DEVICE T activation_grad(const Act<T>& a, T x) {
  using std::exp, std::tanh, std::fabs;
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const T s = sigmoid(x);
      return s * (T(1) - s);
    }
    case ActivationKind::tanh: {
      const T t = tanh(x);
      return T(1) - t * t;
    }
    case ActivationKind::relu:
      return x > T(0) ? T(1) : T(0);
    case ActivationKind::affine:
      return a.alpha;
    case ActivationKind::leaky_relu:
      return x >= T(0) ? T(1) : a.alpha;
    case ActivationKind::thresholded_relu:
      return x >= a.alpha ? T(1) : T(0);
    case ActivationKind::scaled_tanh: {
      const T t = tanh(a.beta * x);
      return a.alpha * a.beta * (T(1) - t * t);
    }
    case ActivationKind::hard_sigmoid: {
      const T v = a.alpha * x + a.beta;
      return v > T(0) && v < T(1) ? a.alpha : T(0);
    }
    case ActivationKind::elu:
      return x >= T(0) ? T(1) : a.alpha * exp(x);
    case ActivationKind::softsign: {
      const T d = T(1) + fabs(x);
      return T(1) / (d * d);
    }
    case ActivationKind::softplus:
      return sigmoid(x);
  }
  return T(1);
}

// A clamp [lo, hi] with the NaN policy (replace: NaN becomes hi and passes no gradient).
template <typename T>
struct Clamp {
  bool enabled = false;
  T lo = 0, hi = 0;
  bool replace_nan = false;
  RNNX_HOST_DEVICE T apply(T v) const {
    if (!enabled) return v;
    if (v != v) return replace_nan ? hi : v;
    return min_of(max_of(v, lo), hi);
  }
  // Whether the gradient passes: inside [lo, hi], or a NaN that propagates.
  RNNX_HOST_DEVICE bool passes(T raw) const {
    if (!enabled) return true;
    if (raw != raw) return !replace_nan;
    return raw >= lo && raw <= hi;
  }
};

// One direction's options: its activations (LSTM f, g, h; GRU f, g; RNN f), ONNX's gate clip
// (symmetric, on every gate's pre-activation), input_forget and the cell clip.
template <typename T>
struct Options {
  Act<T> f, g, h;
  Clamp<T> gate;
  Clamp<T> cell;
  bool input_forget = false;
};

// ---- LSTM ----------------------------------------------------------------------------------

// Pre-activations on entry (a[4], i f g o, without the peephole terms); on return the gate
// inputs after peepholes and gate clip, which backward reads.
template <typename T>
struct LstmForward {
  T gate[4];           // activated i, f, g, o
  T c_raw;             // f*c_prev + i*g before the cell clip
  T c;                 // the new cell state
  T h;                 // o * h(c): the output, or the projection's input
  unsigned gate_pass;  // bit q: the gate clip let q's gradient through
};

// p[3]: the peepholes i, f, o (zeros without).
template <typename T>
RNNX_HOST_DEVICE LstmForward<T> lstm_forward(const Options<T>& o, T a[4], T c_prev, const T p[3]) {
  LstmForward<T> r{};
  a[0] += p[0] * c_prev;
  a[1] += p[1] * c_prev;
  for (int q = 0; q < 3; ++q) {
    r.gate_pass |= o.gate.passes(a[q]) ? 1u << q : 0u;
    a[q] = o.gate.apply(a[q]);
  }
  const T i = activate(o.f, a[0]);
  const T f = o.input_forget ? T(1) - i : activate(o.f, a[1]);
  const T g = activate(o.g, a[2]);
  r.c_raw = f * c_prev + i * g;
  r.c = o.cell.apply(r.c_raw);
  a[3] += p[2] * r.c;
  r.gate_pass |= o.gate.passes(a[3]) ? 1u << 3 : 0u;
  a[3] = o.gate.apply(a[3]);
  const T og = activate(o.f, a[3]);
  r.h = og * activate(o.h, r.c);
  r.gate[0] = i, r.gate[1] = f, r.gate[2] = g, r.gate[3] = og;
  return r;
}

template <typename T>
struct LstmBackward {
  T da[4];     // gradients of the pre-activations (what the GEMMs take)
  T dc_prev;   // to the previous step's cell state
  T dpeep[3];  // to the peepholes i, f, o
};

// a[4]: lstm_forward's gate inputs; gate/c_raw/c/pass: its record; dh: gradient of h (the
// projection's input when there is one), dc: of c from the step after.
template <typename T>
RNNX_HOST_DEVICE LstmBackward<T> lstm_backward(const Options<T>& o, const T a[4], const T gate[4],
                                               unsigned gate_pass, T c_prev, T c_raw, T c,
                                               const T p[3], T dh, T dc) {
  LstmBackward<T> r{};
  auto through = [&](const Act<T>& f, int q, T d) {
    return (gate_pass >> q) & 1u ? d * activation_grad(f, a[q]) : T(0);
  };
  const T i = gate[0], f = gate[1], g = gate[2], og = gate[3];
  r.da[3] = through(o.f, 3, dh * activate(o.h, c));
  T dct = dc + dh * og * activation_grad(o.h, c);
  r.dpeep[2] = r.da[3] * c;
  dct += r.da[3] * p[2];
  if (!o.cell.passes(c_raw)) dct = T(0);
  T di = dct * g, df = dct * c_prev;
  if (o.input_forget) {
    di -= df;
    df = T(0);
  }
  r.da[0] = through(o.f, 0, di);
  r.da[1] = o.input_forget ? T(0) : through(o.f, 1, df);
  r.da[2] = through(o.g, 2, dct * i);
  r.dc_prev = dct * f + r.da[0] * p[0] + r.da[1] * p[1];
  r.dpeep[0] = r.da[0] * c_prev;
  r.dpeep[1] = r.da[1] * c_prev;
  return r;
}

// ---- GRU -----------------------------------------------------------------------------------

// r and z from their summed pre-activations (a[0], a[1] on entry; clipped on return).
template <typename T>
struct GruGates {
  T r, z;
  unsigned gate_pass;  // bits 0 (r) and 1 (z)
};
template <typename T>
RNNX_HOST_DEVICE GruGates<T> gru_gates(const Options<T>& o, T a[2]) {
  GruGates<T> s{};
  for (int q = 0; q < 2; ++q) {
    s.gate_pass |= o.gate.passes(a[q]) ? 1u << q : 0u;
    a[q] = o.gate.apply(a[q]);
  }
  s.r = activate(o.f, a[0]);
  s.z = activate(o.f, a[1]);
  return s;
}

// n and the new h. an_x: W_in x + b_in; hn: W_hn h + b_hn (linear before reset: n's argument
// gets r * hn) or W_hn (r*h) + b_hn (the original GRU: added as it is). an (on return): n's
// clipped pre-activation.
template <typename T>
struct GruOutput {
  T n, h;
  T an;
  bool n_pass;
};
template <typename T>
RNNX_HOST_DEVICE GruOutput<T> gru_output(const Options<T>& o, bool linear_before_reset, T an_x,
                                         T hn, T r, T z, T h_prev) {
  GruOutput<T> s{};
  T an = an_x + (linear_before_reset ? r * hn : hn);
  s.n_pass = o.gate.passes(an);
  s.an = o.gate.apply(an);
  s.n = activate(o.g, s.an);
  s.h = (T(1) - z) * s.n + z * h_prev;
  return s;
}

// Backward of one unit. Linear before reset: da[0..2] are the gradients of r's, z's and n's
// pre-activations, dhn that of W_hn h + b_hn (dn * r); dh_prev the direct part dh * z (the
// GEMM adds the rest). The original GRU: da[0] needs W_hn^T dn first, so it comes from
// gru_backward_reset once the kernel has that product (drh).
template <typename T>
struct GruBackward {
  T da[3];
  T dhn;
  T dh_prev;
};
template <typename T>
RNNX_HOST_DEVICE GruBackward<T> gru_backward(const Options<T>& o, bool linear_before_reset,
                                             const T a[2], unsigned gate_pass, T an, bool n_pass,
                                             T r, T z, T n, T hn, T h_prev, T dh) {
  GruBackward<T> s{};
  const T dn = n_pass ? dh * (T(1) - z) * activation_grad(o.g, an) : T(0);
  s.da[1] = (gate_pass >> 1) & 1u ? dh * (h_prev - n) * activation_grad(o.f, a[1]) : T(0);
  s.da[2] = dn;
  s.dh_prev = dh * z;
  if (linear_before_reset) {
    s.da[0] = gate_pass & 1u ? dn * hn * activation_grad(o.f, a[0]) : T(0);
    s.dhn = dn * r;
  } else {
    s.da[0] = T(0);
    s.dhn = dn;
  }
  return s;
}
// The original GRU's reset gradient from drh = (W_hn^T dn)_j: r's pre-activation gradient,
// and what reaches h_prev through r*h.
template <typename T>
struct GruReset {
  T da_r;
  T dh_prev;
};
template <typename T>
RNNX_HOST_DEVICE GruReset<T> gru_backward_reset(const Options<T>& o, const T a[2],
                                                unsigned gate_pass, T r, T h_prev, T drh) {
  return {gate_pass & 1u ? drh * h_prev * activation_grad(o.f, a[0]) : T(0), drh * r};
}

// ---- RNN -----------------------------------------------------------------------------------

template <typename T>
struct RnnForward {
  T h;
  bool pass;
};
// a: the summed pre-activation (clipped on return).
template <typename T>
RNNX_HOST_DEVICE RnnForward<T> rnn_forward(const Options<T>& o, T& a) {
  const bool pass = o.gate.passes(a);
  a = o.gate.apply(a);
  return {activate(o.f, a), pass};
}
template <typename T>
RNNX_HOST_DEVICE T rnn_backward(const Options<T>& o, T a, bool pass, T dh) {
  return pass ? dh * activation_grad(o.f, a) : T(0);
}

// A direction's options from the config (direction_activations() resolves the defaults).
template <typename T>
inline Options<T> options_for(const Config& c, const std::vector<Activation>& acts) {
  Options<T> o;
  auto act = [](const Activation& a) {
    return Act<T>{a.kind, static_cast<T>(a.alpha), static_cast<T>(a.beta)};
  };
  o.f = act(acts.at(0));
  if (acts.size() > 1) o.g = act(acts[1]);
  if (acts.size() > 2) o.h = act(acts[2]);
  o.gate = {c.gate_clip > 0, static_cast<T>(-c.gate_clip), static_cast<T>(c.gate_clip),
            c.clip_nan == NanPolicy::replace};
  o.cell = {c.cell_clip.enabled, static_cast<T>(c.cell_clip.lo), static_cast<T>(c.cell_clip.hi),
            c.clip_nan == NanPolicy::replace};
  o.input_forget = c.input_forget;
  return o;
}

}  // namespace rnnx::cuda::cell
