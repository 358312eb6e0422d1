// The bodies of the own path's fused cell steps (core/step_program.hpp's CellOp): what one
// thread does for one (row, unit) of a step. Written once for host and device: the CUDA
// kernels call them per thread, the CPU tests call them in plain loops over the same
// programs and compare with the reference (tests/test_step_program.cpp). Element math from
// core/cell_math.hpp, the cpu backend's extended cells' math, here one value at a time
// (core::cell::Scalar). T is the storage type; the math runs in Math.
#pragma once

#include <cstdint>

#include "core/cell_math.hpp"
#include "core/host_device.hpp"
#include "core/peephole_grad.hpp"
#include "core/step_program.hpp"

namespace rnnx::cuda::step {

namespace cell = core::cell;
template <typename Math>
using Unit = cell::Scalar<Math>;

// The gate clip's masks of one unit's step, held for the backward that recomputes it.
struct KeepMasks {
  bool* m;
  RNNX_CELL_INLINE void operator()(int q, bool pass) const { m[q] = pass; }
};
struct Masks {
  const bool* m;  // null: every gradient passed
  RNNX_CELL_INLINE bool on() const { return m != nullptr; }
  RNNX_CELL_INLINE bool operator()(int q) const { return m[q]; }
};

// A CellOp with its refs resolved to pointers, the sizes, and its direction's options.
template <typename T, typename Math = T>
struct CellArgs {
  core::CellKind kind = core::CellKind::lstm_forward;
  int64_t rows = 0;
  int64_t H = 0, P = 0, GH = 0, DP = 0, RW = 0;
  bool linear_before_reset = true;
  cell::Options<Math> o;
  cell::Clamp<Math> proj;
  const T *g = nullptr, *r = nullptr, *b_ih = nullptr, *b_hh = nullptr, *peep = nullptr;
  T *hs = nullptr, *cs = nullptr, *y = nullptr, *rec_a = nullptr, *rec_c = nullptr,
    *rec_h = nullptr, *hraw = nullptr, *praw = nullptr, *rh = nullptr;
  const T* dy = nullptr;
  T *dhs = nullptr, *dcs = nullptr, *dh = nullptr, *dhr = nullptr, *dgx = nullptr, *dgh = nullptr,
    *dpeep = nullptr, *drh = nullptr;

  // Units per row: the projection's steps run over P, the others over H.
  RNNX_HOST_DEVICE int64_t width() const {
    return kind == core::CellKind::project_forward || kind == core::CellKind::project_backward ? P
                                                                                               : H;
  }
};

template <typename T, typename Math>
RNNX_HOST_DEVICE Math load(const T* p, int64_t k) {
  return p ? static_cast<Math>(p[k]) : Math(0);
}

// The summed pre-activation of gate q: input side + recurrent side + both biases.
template <typename T, typename Math>
RNNX_HOST_DEVICE Math pre_activation(const CellArgs<T, Math>& a, int64_t i, int64_t j, int q) {
  const int64_t k = q * a.H + j;
  return load<T, Math>(a.g, i * a.GH + k) + load<T, Math>(a.r, i * a.GH + k) +
         load<T, Math>(a.b_ih, k) + load<T, Math>(a.b_hh, k);
}

// The state gradient that reaches unit j of row i: from the step after and from y (with a
// projection, project_backward and its GEMM have turned it into dh already).
template <typename T, typename Math>
RNNX_HOST_DEVICE Math state_grad(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  if (a.dh) return static_cast<Math>(a.dh[i * a.H + j]);
  return static_cast<Math>(a.dhs[i * a.P + j]) + load<T, Math>(a.dy, i * a.DP + j);
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void peepholes(const CellArgs<T, Math>& a, int64_t j, Math p[3]) {
  for (int k = 0; k < 3; ++k) p[k] = load<T, Math>(a.peep, k * a.H + j);
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void lstm_forward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  Math pre[4];
  for (int q = 0; q < 4; ++q) {
    pre[q] = pre_activation(a, i, j, q);
    if (a.rec_a) a.rec_a[i * a.RW + q * a.H + j] = static_cast<T>(pre[q]);
  }
  const Math c_prev = static_cast<Math>(a.cs[i * a.H + j]);
  if (a.rec_c) a.rec_c[i * a.H + j] = a.cs[i * a.H + j];
  if (a.rec_h && j < a.P) a.rec_h[i * a.P + j] = a.hs[i * a.P + j];
  Math p[3];
  peepholes(a, j, p);
  const cell::LstmState<Unit<Math>> f =
      cell::lstm_forward<Unit<Math>>(a.o, pre, c_prev, p, cell::Discard{});
  a.cs[i * a.H + j] = static_cast<T>(f.c);
  if (a.hraw) {
    a.hraw[i * a.H + j] = static_cast<T>(f.h);
  } else {
    a.hs[i * a.P + j] = static_cast<T>(f.h);
    a.y[i * a.DP + j] = static_cast<T>(f.h);
  }
}

// GRU: r and z from their sums; n from W_in x + b_in and the recurrent term the GEMMs left in
// r's n columns (W_hn h, or W_hn (r h) for the original GRU) plus b_hn.
template <typename T, typename Math>
RNNX_HOST_DEVICE void gru_pre(const CellArgs<T, Math>& a, int64_t i, int64_t j, Math pre[4]) {
  pre[0] = pre_activation(a, i, j, 0);
  pre[1] = pre_activation(a, i, j, 1);
  const int64_t k = 2 * a.H + j;
  pre[2] = load<T, Math>(a.g, i * a.GH + k) + load<T, Math>(a.b_ih, k);
  pre[3] = load<T, Math>(a.r, i * a.GH + k) + load<T, Math>(a.b_hh, k);
}

// The GRU's step from pre (gru_pre): clipped r, z, n pre-activations in an[3], clip masks in
// pass[3], the gates and the new state.
template <typename Math>
struct GruStep {
  cell::GruGates<Unit<Math>> rz;
  cell::GruOutput<Unit<Math>> out;
};
template <typename T, typename Math>
RNNX_HOST_DEVICE GruStep<Math> gru_step(const CellArgs<T, Math>& a, const Math pre[4], Math h_prev,
                                        Math an[3], bool pass[3]) {
  an[0] = pre[0], an[1] = pre[1];
  GruStep<Math> s;
  s.rz = cell::gru_gates<Unit<Math>>(a.o, an, KeepMasks{pass});
  an[2] = a.linear_before_reset ? cell::gru_lbr_n_input<Unit<Math>>(pre[2], s.rz.r, pre[3])
                                : pre[2] + pre[3];
  s.out = cell::gru_output<Unit<Math>>(a.o, an[2], s.rz.z, h_prev, KeepMasks{pass});
  return s;
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void gru_reset_forward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  Math pre[2] = {pre_activation(a, i, j, 0), pre_activation(a, i, j, 1)};
  const cell::GruGates<Unit<Math>> s = cell::gru_gates<Unit<Math>>(a.o, pre, cell::Discard{});
  a.rh[i * a.H + j] = static_cast<T>(s.r * static_cast<Math>(a.hs[i * a.P + j]));
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void gru_forward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  Math pre[4];
  gru_pre(a, i, j, pre);
  if (a.rec_a) {
    for (int q = 0; q < 4; ++q) a.rec_a[i * a.RW + q * a.H + j] = static_cast<T>(pre[q]);
  }
  const Math h_prev = static_cast<Math>(a.hs[i * a.P + j]);
  if (a.rec_h) a.rec_h[i * a.P + j] = a.hs[i * a.P + j];
  Math an[3];
  bool pass[3];
  const GruStep<Math> s = gru_step(a, pre, h_prev, an, pass);
  a.hs[i * a.P + j] = static_cast<T>(s.out.h);
  a.y[i * a.DP + j] = static_cast<T>(s.out.h);
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void rnn_forward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  Math pre = pre_activation(a, i, j, 0);
  if (a.rec_a) a.rec_a[i * a.RW + j] = static_cast<T>(pre);
  if (a.rec_h) a.rec_h[i * a.P + j] = a.hs[i * a.P + j];
  const Math h = cell::rnn_forward<Unit<Math>>(a.o, pre, cell::Discard{});
  a.hs[i * a.P + j] = static_cast<T>(h);
  a.y[i * a.DP + j] = static_cast<T>(h);
}

// The projection's output sits in y: clip it there, keep the raw value, make it the state.
template <typename T, typename Math>
RNNX_HOST_DEVICE void project_forward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  const T raw = a.y[i * a.DP + j];
  if (a.praw) a.praw[i * a.P + j] = raw;
  const T v = a.proj.enabled
                  ? static_cast<T>(cell::clamp_value<Unit<Math>>(static_cast<Math>(raw), a.proj))
                  : raw;
  a.y[i * a.DP + j] = v;
  a.hs[i * a.P + j] = v;
}

// Backward recomputes the step's forward from the record (the summed pre-activations and the
// previous states), then runs the cell's backward on it.
template <typename T, typename Math>
RNNX_HOST_DEVICE void lstm_backward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  using V = Unit<Math>;
  const Math dh = state_grad(a, i, j);
  Math pre[4];
  for (int q = 0; q < 4; ++q) pre[q] = static_cast<Math>(a.rec_a[i * a.RW + q * a.H + j]);
  const Math c_prev = static_cast<Math>(a.rec_c[i * a.H + j]);
  Math p[3];
  peepholes(a, j, p);
  bool pass[4];
  const cell::LstmState<V> f = cell::lstm_forward<V>(a.o, pre, c_prev, p, KeepMasks{pass});
  const bool cell_pass = !a.o.cell.enabled || cell::clamp_passes<V>(f.c_raw, a.o.cell);
  const cell::LstmGrad<V> b =
      cell::lstm_backward<V>(a.o, pre, f.c, c_prev, p, dh, static_cast<Math>(a.dcs[i * a.H + j]),
                             Masks{a.o.gate.enabled ? pass : nullptr}, Masks{&cell_pass});
  for (int q = 0; q < 4; ++q) a.dgx[i * a.GH + q * a.H + j] = static_cast<T>(b.da[q]);
  a.dcs[i * a.H + j] = static_cast<T>(b.dc_prev);
  if (a.dpeep) {  // per row; the column sums over the tokens come after the loop
    T terms[3];
    core::peephole_terms(static_cast<T>(b.da[0]), static_cast<T>(b.da[1]), static_cast<T>(b.da[3]),
                         static_cast<T>(c_prev), static_cast<T>(f.c), terms);
    T* dp = a.dpeep + i * 3 * a.H + j;
    for (int q = 0; q < 3; ++q) dp[q * a.H] = terms[q];
  }
}

// Leaves dh * z in the state gradient (the GEMM adds dG_h W_hh to it), r * h_prev for the
// original GRU's W_hn gradient, and r's gradient for gru_reset_backward to fill in there.
template <typename T, typename Math>
RNNX_HOST_DEVICE void gru_backward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  using V = Unit<Math>;
  const Math dh = state_grad(a, i, j);
  Math pre[4];
  for (int q = 0; q < 4; ++q) pre[q] = static_cast<Math>(a.rec_a[i * a.RW + q * a.H + j]);
  const Math h_prev = static_cast<Math>(a.rec_h[i * a.P + j]);
  Math an[3];
  bool pass[3];
  const GruStep<Math> s = gru_step(a, pre, h_prev, an, pass);
  const cell::GruGrad<V> b = cell::gru_backward<V>(a.o, a.linear_before_reset, an, pre[3], h_prev,
                                                   dh, Masks{a.o.gate.enabled ? pass : nullptr});
  T* dx = a.dgx + i * a.GH;
  T* dr = a.dgh + i * a.GH;
  for (int q = 0; q < 3; ++q) dx[q * a.H + j] = static_cast<T>(b.da[q]);
  dr[j] = static_cast<T>(b.da[0]);
  dr[a.H + j] = static_cast<T>(b.da[1]);
  dr[2 * a.H + j] = static_cast<T>(b.dhn);
  a.dhs[i * a.P + j] = static_cast<T>(b.dh_prev);
  if (a.rh) a.rh[i * a.H + j] = static_cast<T>(s.rz.r * h_prev);
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void gru_reset_backward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  using V = Unit<Math>;
  Math pre[2] = {static_cast<Math>(a.rec_a[i * a.RW + j]),
                 static_cast<Math>(a.rec_a[i * a.RW + a.H + j])};
  const Math h_prev = static_cast<Math>(a.rec_h[i * a.P + j]);
  bool pass[2];
  cell::gru_gates<V>(a.o, pre, KeepMasks{pass});
  const Math drh = static_cast<Math>(a.drh[i * a.H + j]);
  const cell::GruResetGrad<V> b = cell::gru_backward_reset<V>(
      a.o, pre[0], h_prev, drh, Masks{a.o.gate.enabled ? pass : nullptr});
  a.dgx[i * a.GH + j] = static_cast<T>(b.da_r);
  a.dgh[i * a.GH + j] = static_cast<T>(b.da_r);
  a.dhs[i * a.P + j] = static_cast<T>(V::fma(drh, b.r, static_cast<Math>(a.dhs[i * a.P + j])));
}

template <typename T, typename Math>
RNNX_HOST_DEVICE void rnn_backward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  using V = Unit<Math>;
  const Math dh = state_grad(a, i, j);
  Math pre = static_cast<Math>(a.rec_a[i * a.RW + j]);
  bool pass[1];
  cell::rnn_forward<V>(a.o, pre, KeepMasks{pass});
  a.dgx[i * a.GH + j] =
      static_cast<T>(cell::rnn_backward<V>(a.o, pre, dh, Masks{a.o.gate.enabled ? pass : nullptr}));
}

// The gradient of the projection's output: what comes from the step after and from y, zero
// where the clip held the value.
template <typename T, typename Math>
RNNX_HOST_DEVICE void project_backward(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  Math v = static_cast<Math>(a.dhs[i * a.P + j]) + load<T, Math>(a.dy, i * a.DP + j);
  if (a.praw && a.proj.enabled &&
      !cell::clamp_passes<Unit<Math>>(static_cast<Math>(a.praw[i * a.P + j]), a.proj))
    v = Math(0);
  a.dhr[i * a.P + j] = static_cast<T>(v);
}

// One (row, unit) of any cell step.
template <typename T, typename Math>
RNNX_HOST_DEVICE void run_unit(const CellArgs<T, Math>& a, int64_t i, int64_t j) {
  switch (a.kind) {
    case core::CellKind::lstm_forward:
      return lstm_forward(a, i, j);
    case core::CellKind::gru_reset_forward:
      return gru_reset_forward(a, i, j);
    case core::CellKind::gru_forward:
      return gru_forward(a, i, j);
    case core::CellKind::rnn_forward:
      return rnn_forward(a, i, j);
    case core::CellKind::project_forward:
      return project_forward(a, i, j);
    case core::CellKind::lstm_backward:
      return lstm_backward(a, i, j);
    case core::CellKind::gru_backward:
      return gru_backward(a, i, j);
    case core::CellKind::gru_reset_backward:
      return gru_reset_backward(a, i, j);
    case core::CellKind::rnn_backward:
      return rnn_backward(a, i, j);
    case core::CellKind::project_backward:
      return project_backward(a, i, j);
  }
}

// Host side: a CellOp resolved against the call's buffers. `base(buf)` gives each buffer's
// first element; `options[d]` direction d's options.
template <typename T, typename Math, typename Base>
CellArgs<T, Math> resolve(const core::CellOp& op, const Config& c, const core::StepDims& d,
                          const cell::Options<Math>* options, Base base) {
  auto ptr = [&](core::Ref r) -> T* { return r ? static_cast<T*>(base(r.buf)) + r.at : nullptr; };
  CellArgs<T, Math> a;
  a.kind = op.kind;
  a.rows = op.rows;
  a.H = d.H, a.P = d.P, a.GH = d.GH(), a.DP = d.DP(), a.RW = d.record_width(c.cell);
  a.linear_before_reset = c.gru_linear_before_reset;
  a.o = options[op.direction];
  a.proj = cell::Clamp<Math>(c.proj_clip, c.clip_nan);
  const core::CellRefs& r = op.at;
  a.g = ptr(r.g), a.r = ptr(r.r), a.b_ih = ptr(r.b_ih), a.b_hh = ptr(r.b_hh);
  a.peep = ptr(r.peep), a.hs = ptr(r.hs), a.cs = ptr(r.cs), a.y = ptr(r.y);
  a.rec_a = ptr(r.rec_a), a.rec_c = ptr(r.rec_c), a.rec_h = ptr(r.rec_h);
  a.hraw = ptr(r.hraw), a.praw = ptr(r.praw), a.rh = ptr(r.rh), a.dy = ptr(r.dy);
  a.dhs = ptr(r.dhs), a.dcs = ptr(r.dcs), a.dh = ptr(r.dh), a.dhr = ptr(r.dhr);
  a.dgx = ptr(r.dgx), a.dgh = ptr(r.dgh), a.dpeep = ptr(r.dpeep), a.drh = ptr(r.drh);
  return a;
}

}  // namespace rnnx::cuda::step
