// Fused elementwise step kernels, forward and backward, for RNN-tanh/ReLU, LSTM (with
// projection and clipping) and both GRU variants. Each is parallel over the rows of the
// step; a row's result never depends on the thread count.
#include "cpu/cell_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace rnnx::cpu {
namespace {

// Below this many elements a step is cheaper on one thread than waking the team.
constexpr int64_t kParallelMinElements = 4096;

template <typename T>
inline T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

template <typename T>
inline T clamp_value(T v, const Clamp<T>& c) {
  if (!c.enabled) return v;
  if (std::isnan(v)) return c.replace_nan ? c.hi : v;
  return std::min(std::max(v, c.lo), c.hi);
}

// Whether the gradient passes the clamp: inside [lo, hi], or a NaN that propagated.
template <typename T>
inline bool clamp_passes(T raw, const Clamp<T>& c) {
  if (!c.enabled) return true;
  if (std::isnan(raw)) return !c.replace_nan;
  return raw >= c.lo && raw <= c.hi;
}

template <typename T>
inline T dy_at(const T* dy, int64_t ld_dy, int64_t i, int64_t j) {
  return dy ? dy[i * ld_dy + j] : T(0);
}

}  // namespace

// ---- forward ----

template <typename T>
void rnn_forward(const RnnForward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* y = k.y + i * k.ld_y;
    const T* hg = k.hg + i * H;
    T* hs = k.h_state + i * H;
    for (int64_t j = 0; j < H; ++j) {
      const T a = y[j] + hg[j] + k.bias[j];
      const T h = k.relu ? std::max(a, T(0)) : std::tanh(a);
      y[j] = h;
      hs[j] = h;
    }
  }
}

template <typename T>
void lstm_forward(const LstmForward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 4 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* g = k.gates + i * 4 * H;
    const T* hg = k.hg + i * 4 * H;
    T* c = k.c_state + i * H;
    T* h = k.h + i * k.ld_h;
    for (int64_t j = 0; j < H; ++j) {
      const T gi = sigmoid(g[j] + hg[j] + k.bias[j]);
      const T gf = sigmoid(g[H + j] + hg[H + j] + k.bias[H + j]);
      const T gg = std::tanh(g[2 * H + j] + hg[2 * H + j] + k.bias[2 * H + j]);
      const T go = sigmoid(g[3 * H + j] + hg[3 * H + j] + k.bias[3 * H + j]);
      g[j] = gi;
      g[H + j] = gf;
      g[2 * H + j] = gg;
      g[3 * H + j] = go;
      const T c_raw = gf * c[j] + gi * gg;
      const T cn = clamp_value(c_raw, k.cell_clip);
      if (k.c_pass) k.c_pass[i * H + j] = clamp_passes(c_raw, k.cell_clip);
      c[j] = cn;
      if (k.c_keep) k.c_keep[i * H + j] = cn;
      h[j] = go * std::tanh(cn);
      if (k.h_state) k.h_state[i * H + j] = h[j];
    }
  }
}

template <typename T>
void proj_forward(const ProjForward<T>& k) {
  const int64_t P = k.P;
#pragma omp parallel for schedule(static) if (k.rows * P >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* y = k.y + i * k.ld_y;
    for (int64_t j = 0; j < P; ++j) {
      const T raw = y[j];
      if (k.pass) k.pass[i * P + j] = clamp_passes(raw, k.proj_clip);
      const T r = clamp_value(raw, k.proj_clip);
      y[j] = r;
      k.h_state[i * P + j] = r;
    }
  }
}

template <typename T>
void gru_forward(const GruForward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 3 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* g = k.gates + i * 3 * H;
    const T* hg = k.hg + i * 3 * H;
    T* hs = k.h_state + i * H;
    T* y = k.y + i * k.ld_y;
    for (int64_t j = 0; j < H; ++j) {
      const T r = sigmoid(g[j] + hg[j] + k.bias[j]);
      const T z = sigmoid(g[H + j] + hg[H + j] + k.bias[H + j]);
      const T hn = hg[2 * H + j] + k.b_hn[j];
      const T n = std::tanh(g[2 * H + j] + k.bias[2 * H + j] + r * hn);
      g[j] = r;
      g[H + j] = z;
      g[2 * H + j] = n;
      if (k.hn_keep) k.hn_keep[i * H + j] = hn;
      const T h = (T(1) - z) * n + z * hs[j];
      hs[j] = h;
      y[j] = h;
    }
  }
}

template <typename T>
void gru_orig_gates_forward(const GruOrigGatesForward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 2 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* g = k.gates + i * 3 * H;
    const T* hg = k.hg + i * k.ld_hg;
    const T* hs = k.h_state + i * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = sigmoid(g[j] + hg[j] + k.bias[j]);
      g[j] = r;
      g[H + j] = sigmoid(g[H + j] + hg[H + j] + k.bias[H + j]);
      k.rh[i * H + j] = r * hs[j];
    }
  }
}

template <typename T>
void gru_orig_forward(const GruOrigForward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    T* g = k.gates + i * 3 * H;
    const T* u = k.u + i * k.ld_u;
    T* hs = k.h_state + i * H;
    T* y = k.y + i * k.ld_y;
    for (int64_t j = 0; j < H; ++j) {
      const T n = std::tanh(g[2 * H + j] + k.bias[2 * H + j] + u[j] + k.b_hn[j]);
      g[2 * H + j] = n;
      const T z = g[H + j];
      const T h = (T(1) - z) * n + z * hs[j];
      hs[j] = h;
      y[j] = h;
    }
  }
}

// ---- backward ----

template <typename T>
void rnn_backward(const RnnBackward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    const T* h = k.h + i * k.ld_h;
    for (int64_t j = 0; j < H; ++j) {
      const T dh = k.dh[i * H + j] + dy_at(k.dy, k.ld_dy, i, j);
      // ReLU: h > 0 exactly when the pre-activation is > 0 (NaN gives 0 either way).
      const T deriv = k.relu ? (h[j] > T(0) ? T(1) : T(0)) : T(1) - h[j] * h[j];
      k.dg[i * H + j] = dh * deriv;
    }
  }
}

template <typename T>
void proj_backward(const ProjBackward<T>& k) {
  const int64_t P = k.P;
#pragma omp parallel for schedule(static) if (k.rows * P >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int64_t j = 0; j < P; ++j) {
      const T dh = k.dh[i * P + j] + dy_at(k.dy, k.ld_dy, i, j);
      k.dr[i * P + j] = (!k.pass || k.pass[i * P + j]) ? dh : T(0);
    }
  }
}

template <typename T>
void lstm_backward(const LstmBackward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 4 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    const T* g = k.gates + i * 4 * H;
    const T* c = k.c + i * H;
    const T* cp = k.c_prev.row(i);
    T* dc = k.dc_state + i * H;
    T* dg = k.dg + i * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T gi = g[j], gf = g[H + j], gg = g[2 * H + j], go = g[3 * H + j];
      const T dh = k.dh[i * H + j] + dy_at(k.dy, k.ld_dy, i, j);
      const T tc = std::tanh(c[j]);
      T dcj = dc[j] + dh * go * (T(1) - tc * tc);
      if (k.c_pass && !k.c_pass[i * H + j]) dcj = T(0);
      dg[j] = dcj * gg * gi * (T(1) - gi);
      dg[H + j] = dcj * cp[j] * gf * (T(1) - gf);
      dg[2 * H + j] = dcj * gi * (T(1) - gg * gg);
      dg[3 * H + j] = dh * tc * go * (T(1) - go);
      dc[j] = dcj * gf;
    }
  }
}

template <typename T>
void gru_backward(const GruBackward<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 3 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    const T* g = k.gates + i * 3 * H;
    const T* hp = k.h_prev + i * H;
    const T* hn = k.hn + i * H;
    T* dh = k.dh + i * H;
    T* dg = k.dg + i * 3 * H;
    T* dgh = k.dgh + i * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = g[j], z = g[H + j], n = g[2 * H + j];
      const T d = dh[j] + dy_at(k.dy, k.ld_dy, i, j);
      const T dn = d * (T(1) - z) * (T(1) - n * n);
      const T dz = d * (hp[j] - n) * z * (T(1) - z);
      const T dr = dn * hn[j] * r * (T(1) - r);
      dg[j] = dr;
      dg[H + j] = dz;
      dg[2 * H + j] = dn;
      dgh[j] = dr;
      dgh[H + j] = dz;
      dgh[2 * H + j] = dn * r;
      dh[j] = d * z;
    }
  }
}

template <typename T>
void gru_orig_backward_n(const GruOrigBackwardN<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * 2 * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    const T* g = k.gates + i * 3 * H;
    const T* hp = k.h_prev + i * H;
    T* dh = k.dh + i * H;
    T* dg = k.dg + i * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T z = g[H + j], n = g[2 * H + j];
      const T d = dh[j] + dy_at(k.dy, k.ld_dy, i, j);
      dg[H + j] = d * (hp[j] - n) * z * (T(1) - z);
      dg[2 * H + j] = d * (T(1) - z) * (T(1) - n * n);
      dh[j] = d * z;
    }
  }
}

template <typename T>
void gru_orig_backward_r(const GruOrigBackwardR<T>& k) {
  const int64_t H = k.H;
#pragma omp parallel for schedule(static) if (k.rows * H >= kParallelMinElements)
  for (int64_t i = 0; i < k.rows; ++i) {
    const T* g = k.gates + i * 3 * H;
    const T* hp = k.h_prev + i * H;
    const T* drh = k.drh + i * H;
    T* dh = k.dh + i * H;
    T* dg = k.dg + i * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = g[j];
      dg[j] = drh[j] * hp[j] * r * (T(1) - r);
      dh[j] += drh[j] * r;
    }
  }
}

#define RNNX_INSTANTIATE(T)                                               \
  template void rnn_forward<T>(const RnnForward<T>&);                     \
  template void lstm_forward<T>(const LstmForward<T>&);                   \
  template void proj_forward<T>(const ProjForward<T>&);                   \
  template void gru_forward<T>(const GruForward<T>&);                     \
  template void gru_orig_gates_forward<T>(const GruOrigGatesForward<T>&); \
  template void gru_orig_forward<T>(const GruOrigForward<T>&);            \
  template void rnn_backward<T>(const RnnBackward<T>&);                   \
  template void proj_backward<T>(const ProjBackward<T>&);                 \
  template void lstm_backward<T>(const LstmBackward<T>&);                 \
  template void gru_backward<T>(const GruBackward<T>&);                   \
  template void gru_orig_backward_n<T>(const GruOrigBackwardN<T>&);       \
  template void gru_orig_backward_r<T>(const GruOrigBackwardR<T>&);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
