// Reserve and workspace layouts of the cpu backend (see buffers.hpp).
#include "cpu/buffers.hpp"

#include <algorithm>

#include "core/checked.hpp"

namespace rnnx::cpu {
namespace {

// Elements of a [rows, cols] buffer, refused (invalid_argument) when its bytes overflow.
int64_t count(int64_t rows, int64_t cols) {
  const int64_t n = core::checked_mul(rows, cols, "cpu buffer elements");
  core::checked_bytes(n, sizeof(double), "cpu buffer bytes");
  return n;
}

// Layer outputs that are not the caller's y: every layer but the top when the caller's
// tensors are packed (the top writes y directly), else every layer; two suffice.
int64_t ping_pong_buffers(const Problem& p) {
  return std::min<int64_t>(p.packed ? p.L - 1 : p.L, 2);
}

}  // namespace

template <typename T>
ReserveLayer<T> carve_reserve_layer(const Problem& p, Carver& carver, int64_t l) {
  ReserveLayer<T> r;
  r.y = carver.take<T>(count(p.N, p.DP));
  if (p.dropout_after(l)) r.y_dropped = carver.take<T>(count(p.N, p.DP));
  for (int64_t d = 0; d < p.D; ++d) {
    ReserveDir<T>& rd = r.dir[d];
    // RNN gates are the output itself (kept in y), so they need no copy.
    if (!p.is_rnn()) rd.gates = carver.take<T>(count(p.N, p.GH));
    if (p.cell == CellType::lstm) {
      rd.c = carver.take<T>(count(p.N, p.H));
      if (p.cell_clip) rd.c_pass = carver.take<uint8_t>(count(p.N, p.H));
      if (p.proj) rd.h_full = carver.take<T>(count(p.N, p.H));
      if (p.proj_clip) rd.r_pass = carver.take<uint8_t>(count(p.N, p.P));
    }
    if (p.cell == CellType::gru) rd.hn = carver.take<T>(count(p.N, p.H));
  }
  return r;
}

template <typename T>
ReserveLayer<T> reserve_layer(const Problem& p, const void* base, int64_t l) {
  // The reserve is read-only in backward; the carver hands out mutable pointers for both.
  Carver carver(const_cast<char*>(static_cast<const char*>(base)) + p.reserve_layer[l]);
  return carve_reserve_layer<T>(p, carver, l);
}

template <typename T>
Carver carve_forward(const Problem& p, bool training, void* base, ForwardBuffers<T>* out) {
  ForwardBuffers<T> tmp;
  ForwardBuffers<T>& b = out ? *out : tmp;
  Carver carver(base);
  if (!p.packed) b.x = carver.take<T>(count(p.N, p.I0));
  if (!training) {
    for (int64_t k = 0; k < ping_pong_buffers(p); ++k) b.y[k] = carver.take<T>(count(p.N, p.DP));
    if (!p.is_rnn()) b.gx = carver.take<T>(count(p.N, p.GH));
  }
  b.h_state = carver.take<T>(count(p.B, p.P));
  if (p.cell == CellType::lstm) b.c_state = carver.take<T>(count(p.B, p.H));
  b.hg = carver.take<T>(count(p.B, p.GH));
  if (!training && (p.proj || (p.cell == CellType::gru && !p.gru_lbr))) {
    b.scratch = carver.take<T>(count(p.B, p.H));
  }
  b.bias = carver.take<T>(p.GH + p.H);
  return carver;
}

template <typename T>
Carver carve_backward(const Problem& p, void* base, BackwardBuffers<T>* out) {
  BackwardBuffers<T> tmp;
  BackwardBuffers<T>& b = out ? *out : tmp;
  Carver carver(base);
  if (!p.packed) b.x = carver.take<T>(count(p.N, p.I0));
  for (int64_t k = 0; k < ping_pong_buffers(p); ++k) b.dy[k] = carver.take<T>(count(p.N, p.DP));
  if (!p.packed) b.dx = carver.take<T>(count(p.N, p.I0));
  b.dg = carver.take<T>(count(p.N, p.GH));
  if (p.cell == CellType::gru && p.gru_lbr) b.dgh = carver.take<T>(count(p.N, p.GH));
  b.h_prev = carver.take<T>(count(p.N, p.P));
  if (p.proj) b.dr = carver.take<T>(count(p.N, p.P));
  b.ones = carver.take<T>(p.N);
  b.dh_state = carver.take<T>(count(p.B, p.P));
  b.h0 = carver.take<T>(count(p.B, p.P));
  if (p.cell == CellType::lstm) {
    b.dc_state = carver.take<T>(count(p.B, p.H));
    b.c0 = carver.take<T>(count(p.B, p.H));
  }
  if (p.proj || (p.cell == CellType::gru && !p.gru_lbr))
    b.scratch = carver.take<T>(count(p.B, p.H));
  return carver;
}

#define RNNX_INSTANTIATE(T)                                                          \
  template ReserveLayer<T> carve_reserve_layer<T>(const Problem&, Carver&, int64_t); \
  template ReserveLayer<T> reserve_layer<T>(const Problem&, const void*, int64_t);   \
  template Carver carve_forward<T>(const Problem&, bool, void*, ForwardBuffers<T>*); \
  template Carver carve_backward<T>(const Problem&, void*, BackwardBuffers<T>*);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
