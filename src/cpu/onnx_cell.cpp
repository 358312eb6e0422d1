// The generic step kernels of onnx_cell.hpp, transcribing src/reference/cell_math.cpp in the
// working type. Rows are split over OpenMP threads when the step is large; each element is
// computed by the same code whatever the split.
#include "cpu/onnx_cell.hpp"

#include <omp.h>

#include "core/cell_functions.hpp"

namespace rnnx::cpu {
namespace {

using core::activate;
using core::activation_grad;

// Steps with fewer row x cell elements than this run on the calling thread.
constexpr int64_t kMinParallelElements = 16384;

template <typename Fn>
void for_rows(int64_t rows, int64_t cells, const Fn& fn) {
  const bool parallel = !omp_in_parallel() && rows > 1 && rows * cells >= kMinParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < rows; ++i) fn(i);
}

template <typename T>
NanPolicy nan_policy(const Clamp<T>& c) {
  return c.replace_nan ? NanPolicy::replace : NanPolicy::propagate;
}
template <typename T>
T clamp(const Clamp<T>& c, T v) {
  return core::clamp_value(v, c.enabled, c.lo, c.hi, nan_policy(c));
}
template <typename T>
bool passes(const Clamp<T>& c, T v) {
  return core::clamp_passes(v, c.enabled, c.lo, c.hi, nan_policy(c));
}

// Gate clip of pre-activation `a` at element e of the row's gate pass (if kept).
template <typename T>
T gate(const OnnxCell<T>& o, uint8_t* pass_row, int64_t e, T a) {
  if (!o.gate_clip.enabled) return a;
  if (pass_row) pass_row[e] = passes(o.gate_clip, a) ? 1 : 0;
  return clamp(o.gate_clip, a);
}

// Gradient of a pre-activation through its activation and the gate clip.
template <typename T>
T through(const Activation& f, const uint8_t* pass_row, int64_t e, T a, T d_out) {
  if (pass_row && !pass_row[e]) return T(0);
  return d_out * activation_grad(f, a);
}

template <typename T>
uint8_t* pass_row(const OnnxCell<T>& o, int64_t i, int64_t gh) {
  return o.gate_pass ? o.gate_pass + i * gh : nullptr;
}

}  // namespace

// ---- forward ----

template <typename T>
void onnx_rnn_forward(const RnnForward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H;
  for_rows(k.rows, H, [&](int64_t i) {
    T* in = o.pre ? o.pre + i * H : k.y + i * k.ld_y;
    uint8_t* pr = pass_row(o, i, H);
    for (int64_t j = 0; j < H; ++j) {
      const T a = gate(o, pr, j, in[j] + k.bias[j] + k.hg[i * H + j]);
      const T h = activate(o.acts[0], a);
      if (o.pre) in[j] = a;
      k.y[i * k.ld_y + j] = h;
      k.h_state[i * H + j] = h;
    }
  });
}

template <typename T>
void onnx_lstm_forward(const LstmForward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 4 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1], &ha = o.acts[2];
  const NanPolicy cnan = nan_policy(k.cell_clip);
  const T* p = o.peephole;
  for_rows(k.rows, H, [&](int64_t i) {
    T* g = k.gates + i * GH;
    const T* hg = k.hg + i * GH;
    uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      T a[4];
      for (int q = 0; q < 4; ++q) a[q] = g[q * H + j] + k.bias[q * H + j] + hg[q * H + j];
      const T c_prev = k.c_state[i * H + j];
      if (p) {
        a[0] += p[j] * c_prev;
        a[1] += p[H + j] * c_prev;
      }
      for (int q = 0; q < 3; ++q) a[q] = gate(o, pr, q * H + j, a[q]);
      const T ig = activate(fa, a[0]);
      const T fg = o.input_forget ? T(1) - ig : activate(fa, a[1]);
      const T c_raw = fg * c_prev + ig * activate(ga, a[2]);
      const Clamp<T>& cc = k.cell_clip;
      const T c = core::clamp_value(c_raw, cc.enabled, cc.lo, cc.hi, cnan);
      if (k.c_pass) k.c_pass[i * H + j] = core::clamp_passes(c_raw, cc.enabled, cc.lo, cc.hi, cnan);
      if (p) a[3] += p[2 * H + j] * c;
      a[3] = gate(o, pr, 3 * H + j, a[3]);
      const T h = activate(fa, a[3]) * activate(ha, c);
      for (int q = 0; q < 4; ++q) g[q * H + j] = a[q];
      k.c_state[i * H + j] = c;
      if (k.c_keep) k.c_keep[i * H + j] = c;
      k.h[i * k.ld_h + j] = h;
      if (k.h_state) k.h_state[i * H + j] = h;
    }
  });
}

template <typename T>
void onnx_gru_forward(const GruForward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  for_rows(k.rows, H, [&](int64_t i) {
    T* g = k.gates + i * GH;
    const T* hg = k.hg + i * GH;
    uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T ar = gate(o, pr, j, g[j] + k.bias[j] + hg[j]);
      const T az = gate(o, pr, H + j, g[H + j] + k.bias[H + j] + hg[H + j]);
      const T r = activate(fa, ar), z = activate(fa, az);
      const T hn = hg[2 * H + j] + k.b_hn[j];
      const T an = gate(o, pr, 2 * H + j, g[2 * H + j] + k.bias[2 * H + j] + r * hn);
      const T n = activate(ga, an);
      const T h = (T(1) - z) * n + z * k.h_state[i * H + j];
      g[j] = ar;
      g[H + j] = az;
      g[2 * H + j] = an;
      if (k.hn_keep) k.hn_keep[i * H + j] = hn;
      k.h_state[i * H + j] = h;
      k.y[i * k.ld_y + j] = h;
    }
  });
}

template <typename T>
void onnx_gru_orig_gates_forward(const GruOrigGatesForward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  for_rows(k.rows, H, [&](int64_t i) {
    T* g = k.gates + i * GH;
    const T* hg = k.hg + i * k.ld_hg;
    uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T ar = gate(o, pr, j, g[j] + k.bias[j] + hg[j]);
      const T az = gate(o, pr, H + j, g[H + j] + k.bias[H + j] + hg[H + j]);
      g[j] = ar;
      g[H + j] = az;
      k.rh[i * H + j] = activate(o.acts[0], ar) * k.h_state[i * H + j];
    }
  });
}

template <typename T>
void onnx_gru_orig_forward(const GruOrigForward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  for_rows(k.rows, H, [&](int64_t i) {
    T* g = k.gates + i * GH;
    uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T an = gate(o, pr, 2 * H + j,
                        g[2 * H + j] + k.bias[2 * H + j] + k.u[i * k.ld_u + j] + k.b_hn[j]);
      const T n = activate(o.acts[1], an), z = activate(o.acts[0], g[H + j]);
      const T h = (T(1) - z) * n + z * k.h_state[i * H + j];
      g[2 * H + j] = an;
      k.h_state[i * H + j] = h;
      k.y[i * k.ld_y + j] = h;
    }
  });
}

// ---- backward ----

template <typename T>
void onnx_rnn_backward(const RnnBackward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H;
  for_rows(k.rows, H, [&](int64_t i) {
    const uint8_t* pr = pass_row(o, i, H);
    for (int64_t j = 0; j < H; ++j) {
      const T d = k.dh[i * H + j] + (k.dy ? k.dy[i * k.ld_dy + j] : T(0));
      k.dg[i * H + j] = through(o.acts[0], pr, j, o.pre[i * H + j], d);
    }
  });
}

template <typename T>
void onnx_lstm_backward(const LstmBackward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 4 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1], &ha = o.acts[2];
  const T* p = o.peephole;
  for_rows(k.rows, H, [&](int64_t i) {
    const T* a = k.gates + i * GH;
    const T* c_prev = k.c_prev.row(i);
    const uint8_t* pr = pass_row(o, i, GH);
    T* dg = k.dg + i * GH;
    for (int64_t j = 0; j < H; ++j) {
      const T dh = k.dh[i * H + j] + (k.dy ? k.dy[i * k.ld_dy + j] : T(0));
      const T ig = activate(fa, a[j]);
      const T fg = o.input_forget ? T(1) - ig : activate(fa, a[H + j]);
      const T gg = activate(ga, a[2 * H + j]);
      const T og = activate(fa, a[3 * H + j]);
      const T c = k.c[i * H + j], cp = c_prev[j];
      const T dao = through(fa, pr, 3 * H + j, a[3 * H + j], dh * activate(ha, c));
      T dc = k.dc_state[i * H + j] + dh * og * activation_grad(ha, c);
      if (p) dc += dao * p[2 * H + j];
      if (k.c_pass && !k.c_pass[i * H + j]) dc = T(0);
      T di = dc * gg, df = dc * cp;
      if (o.input_forget) {
        di -= df;
        df = T(0);
      }
      const T dai = through(fa, pr, j, a[j], di);
      const T daf = o.input_forget ? T(0) : through(fa, pr, H + j, a[H + j], df);
      T dc_prev = dc * fg;
      if (p) dc_prev += dai * p[j] + daf * p[H + j];
      dg[j] = dai;
      dg[H + j] = daf;
      dg[2 * H + j] = through(ga, pr, 2 * H + j, a[2 * H + j], dc * ig);
      dg[3 * H + j] = dao;
      k.dc_state[i * H + j] = dc_prev;
    }
  });
}

template <typename T>
void onnx_gru_backward(const GruBackward<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  for_rows(k.rows, H, [&](int64_t i) {
    const T* a = k.gates + i * GH;
    const uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T d = k.dh[i * H + j] + (k.dy ? k.dy[i * k.ld_dy + j] : T(0));
      const T r = activate(fa, a[j]), z = activate(fa, a[H + j]), n = activate(ga, a[2 * H + j]);
      const T dn = through(ga, pr, 2 * H + j, a[2 * H + j], d * (T(1) - z));
      const T dz = through(fa, pr, H + j, a[H + j], d * (k.h_prev[i * H + j] - n));
      const T dr = through(fa, pr, j, a[j], dn * k.hn[i * H + j]);
      T* dg = k.dg + i * GH;
      T* dgh = k.dgh + i * GH;
      dg[j] = dgh[j] = dr;
      dg[H + j] = dgh[H + j] = dz;
      dg[2 * H + j] = dn;
      dgh[2 * H + j] = dn * r;
      k.dh[i * H + j] = d * z;
    }
  });
}

template <typename T>
void onnx_gru_orig_backward_n(const GruOrigBackwardN<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  for_rows(k.rows, H, [&](int64_t i) {
    const T* a = k.gates + i * GH;
    const uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T d = k.dh[i * H + j] + (k.dy ? k.dy[i * k.ld_dy + j] : T(0));
      const T z = activate(fa, a[H + j]), n = activate(ga, a[2 * H + j]);
      k.dg[i * GH + H + j] = through(fa, pr, H + j, a[H + j], d * (k.h_prev[i * H + j] - n));
      k.dg[i * GH + 2 * H + j] = through(ga, pr, 2 * H + j, a[2 * H + j], d * (T(1) - z));
      k.dh[i * H + j] = d * z;
    }
  });
}

template <typename T>
void onnx_gru_orig_backward_r(const GruOrigBackwardR<T>& k, const OnnxCell<T>& o) {
  const int64_t H = k.H, GH = 3 * H;
  for_rows(k.rows, H, [&](int64_t i) {
    const T* a = k.gates + i * GH;
    const uint8_t* pr = pass_row(o, i, GH);
    for (int64_t j = 0; j < H; ++j) {
      const T drh = k.drh[i * H + j];
      k.dg[i * GH + j] = through(o.acts[0], pr, j, a[j], drh * k.h_prev[i * H + j]);
      k.dh[i * H + j] += drh * activate(o.acts[0], a[j]);
    }
  });
}

#define RNNX_INSTANTIATE(T)                                                                        \
  template void onnx_rnn_forward<T>(const RnnForward<T>&, const OnnxCell<T>&);                     \
  template void onnx_lstm_forward<T>(const LstmForward<T>&, const OnnxCell<T>&);                   \
  template void onnx_gru_forward<T>(const GruForward<T>&, const OnnxCell<T>&);                     \
  template void onnx_gru_orig_gates_forward<T>(const GruOrigGatesForward<T>&, const OnnxCell<T>&); \
  template void onnx_gru_orig_forward<T>(const GruOrigForward<T>&, const OnnxCell<T>&);            \
  template void onnx_rnn_backward<T>(const RnnBackward<T>&, const OnnxCell<T>&);                   \
  template void onnx_lstm_backward<T>(const LstmBackward<T>&, const OnnxCell<T>&);                 \
  template void onnx_gru_backward<T>(const GruBackward<T>&, const OnnxCell<T>&);                   \
  template void onnx_gru_orig_backward_n<T>(const GruOrigBackwardN<T>&, const OnnxCell<T>&);       \
  template void onnx_gru_orig_backward_r<T>(const GruOrigBackwardR<T>&, const OnnxCell<T>&);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
