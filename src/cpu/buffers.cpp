// Reserve and workspace layouts of the cpu backend (see buffers.hpp).
#include "cpu/buffers.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "cpu/packed_gemm.hpp"

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
int64_t ping_pong_buffers(const PlanSpec& p) {
  return std::min<int64_t>(p.rows_in_place ? p.L - 1 : p.L, 2);
}

}  // namespace

template <typename T>
ReserveLayer<T> carve_reserve_layer(const PlanSpec& p, Carver& carver, int64_t l) {
  ReserveLayer<T> r;
  r.y = carver.take<T>(count(p.N, p.DP));
  if (p.dropout_after(l)) r.y_dropped = carver.take<T>(count(p.N, p.DP));
  for (int64_t d = 0; d < p.D; ++d) {
    ReserveDir<T>& rd = r.dir[d];
    // RNN gates are the output itself (kept in y), so they need no copy, but for the
    // generic kernels, whose backward needs the pre-activation.
    if (!p.is_rnn() || p.extended_cell) rd.gates = carver.take<T>(count(p.N, p.GH));
    if (p.gate_clip) rd.gate_pass = carver.take<uint8_t>(count(p.N, p.GH));
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
ReserveLayer<T> reserve_layer(const PlanSpec& p, const void* base, int64_t l) {
  // The reserve is read-only in backward; the carver hands out mutable pointers for both.
  Carver carver(const_cast<char*>(static_cast<const char*>(base)) + p.reserve_layer[l]);
  return carve_reserve_layer<T>(p, carver, l);
}

int64_t forward_recurrent_pack_floats(const PlanSpec& p) {
  const PackedType t = p.packed_type();
  if (p.gru_orig()) return packed_b_floats(p.P, 2 * p.H, 2, t) + packed_b_floats(p.H, p.H, 1, t);
  return packed_b_floats(p.P, p.GH, p.G, t);
}

int64_t forward_kept_block_floats(const PlanSpec& p, int64_t l) {
  const PackedType t = p.packed_type();
  return forward_recurrent_pack_floats(p) + (p.proj ? packed_b_floats(p.H, p.P, 1, t) : 0) +
         packed_b_floats(p.input_width(l), p.GH, p.G, t);
}

int64_t backward_recurrent_pack_floats(const PlanSpec& p) {
  const PackedType t = p.packed_type();
  if (p.gru_orig()) return packed_b_floats(2 * p.H, p.P, 1, t) + packed_b_floats(p.H, p.P, 1, t);
  return packed_b_floats(p.GH, p.P, 1, t);
}

template <typename T>
Carver carve_forward(const PlanSpec& p, bool training, void* base, ForwardBuffers<T>* out) {
  ForwardBuffers<T> tmp;
  ForwardBuffers<T>& b = out ? *out : tmp;
  Carver carver(base);
  if (!p.rows_in_place) b.x = carver.take<T>(count(p.N, p.I0));
  if (!training) {
    for (int64_t k = 0; k < ping_pong_buffers(p); ++k) b.y[k] = carver.take<T>(count(p.N, p.DP));
  }
  const bool packing = p.packed_engine();
  const PackedType type = p.packed_type();
  if (packing) {
    // The bulk input projection: rows past the split, G*H columns, K = the layer's input.
    const int64_t rows = p.N - p.schedule().offsets[p.step_input_steps];
    // int8: a packed_gemm's packed A (bulk_input_projection).
    int64_t floats = 0;
    for (int64_t l = 0; l < p.L; ++l) {
      floats = std::max(floats, packs_s8(type)
                                    ? packed_a_floats(rows, p.input_width(l), type)
                                    : packed_gemm_full_floats(rows, p.GH, p.input_width(l), type));
    }
    b.gemm_scratch = carver.take<T>(floats);
  }
  for (int64_t d = 0; d < (p.concurrent_dirs ? p.D : 1); ++d) {
    ForwardDirBuffers<T>& db = b.dir[d];
    if (!training && !p.is_rnn()) {
      db.gx = carver.take<T>(count(p.N - p.schedule().offsets[p.step_input_steps], p.GH));
      if (p.step_input_steps > 0) db.gx_step = carver.take<T>(count(p.B, p.GH));
    }
    db.h_state = carver.take<T>(count(p.B, p.P));
    if (p.cell == CellType::lstm) db.c_state = carver.take<T>(count(p.B, p.H));
    db.hg = carver.take<T>(count(p.B, p.GH));
    if (!training && (p.proj || p.gru_orig())) db.scratch = carver.take<T>(count(p.B, p.H));
    db.bias = carver.take<T>(p.GH + p.H);
    if (packing) {
      db.w_pack = carver.take<T>(forward_recurrent_pack_floats(p));
      if (p.proj) db.wr_pack = carver.take<T>(packed_b_floats(p.H, p.P, 1, type));
      const int64_t widest_input = std::max(p.I0, p.L > 1 ? p.DP : 0);
      // int8 projects in bulk by the packed W_ih^T too (bulk_input_projection).
      if (p.step_input_steps > 0 || packs_s8(type)) {
        db.wi_pack = carver.take<T>(packed_b_floats(widest_input, p.GH, p.G, type));
      }
      db.a_pack = carver.take<T>(packed_a_floats(p.B, std::max({p.P, p.H, widest_input}), type));
      if (p.team_loops) {
        for (int k = 0; k < 2; ++k) {
          db.ah_pack[k] = carver.take<T>(packed_a_floats(p.B, p.P, type));
          if (p.step_input_steps > 0) {
            db.ax_pack[k] = carver.take<T>(packed_a_floats(p.B, widest_input, type));
          }
        }
      }
    }
  }
  if (!p.concurrent_dirs) b.dir[1] = b.dir[0];
  return carver;
}

template <typename T>
Carver carve_backward(const PlanSpec& p, void* base, BackwardBuffers<T>* out) {
  BackwardBuffers<T> tmp;
  BackwardBuffers<T>& b = out ? *out : tmp;
  Carver carver(base);
  if (!p.rows_in_place) b.x = carver.take<T>(count(p.N, p.I0));
  for (int64_t k = 0; k < ping_pong_buffers(p); ++k) b.dy[k] = carver.take<T>(count(p.N, p.DP));
  if (!p.rows_in_place) b.dx = carver.take<T>(count(p.N, p.I0));
  b.colsum = carver.take<T>(p.GH);
  const bool packing = p.packed_engine();
  const PackedType type = p.packed_type();
  if (packing) {
    // The all-token products of backward_finish: dW_ih, dW_hh (by parts for the original
    // GRU), dW_hr and dX.
    const int64_t N = p.N, GH = p.GH, H = p.H, P = p.P;
    int64_t floats = packed_gemm_full_floats(GH, P, N, type);
    floats = std::max(floats, packed_gemm_full_floats(P, H, N, type));
    for (int64_t l = 0; l < p.L; ++l) {
      const int64_t I = p.input_width(l);
      floats = std::max({floats, packed_gemm_full_floats(GH, I, N, type),
                         packed_gemm_full_floats(N, I, GH, type)});
    }
    b.gemm_scratch = carver.take<T>(floats);
  }
  for (int64_t d = 0; d < (p.concurrent_dirs ? p.D : 1); ++d) {
    BackwardDirBuffers<T>& db = b.dir[d];
    db.dg = carver.take<T>(count(p.N, p.GH));
    if (p.cell == CellType::gru && p.gru_lbr) db.dgh = carver.take<T>(count(p.N, p.GH));
    db.h_prev = carver.take<T>(count(p.N, p.P));
    if (p.proj) db.dr = carver.take<T>(count(p.N, p.P));
    db.dh_state = carver.take<T>(count(p.B, p.P));
    db.h0 = carver.take<T>(count(p.B, p.P));
    if (p.cell == CellType::lstm) {
      db.dc_state = carver.take<T>(count(p.B, p.H));
      db.c0 = carver.take<T>(count(p.B, p.H));
    }
    if (p.proj || p.gru_orig()) db.scratch = carver.take<T>(count(p.B, p.H));
    if (packing) {
      db.w_pack = carver.take<T>(backward_recurrent_pack_floats(p));
      if (p.proj) db.wr_pack = carver.take<T>(packed_b_floats(p.P, p.H, 1, type));
      db.a_pack = carver.take<T>(packed_a_floats(p.B, std::max(p.GH, p.P), type));
      if (p.team_loops) {
        for (int k = 0; k < 2; ++k) {
          db.ag_pack[k] = carver.take<T>(packed_a_floats(p.B, p.GH, type));
        }
      }
    }
  }
  if (!p.concurrent_dirs) b.dir[1] = b.dir[0];
  return carver;
}

void BufferSizes::widen(const BufferSizes& o) {
  reserve = std::max(reserve, o.reserve);
  for (int i = 0; i < 2; ++i) forward[i] = std::max(forward[i], o.forward[i]);
  backward = std::max(backward, o.backward);
}

template <typename T>
BufferSizes lay_out_buffers(PlanSpec& p) {
  BufferSizes s;
  Carver carver;
  p.reserve_layer.resize(p.L);
  for (int64_t l = 0; l < p.L; ++l) {
    p.reserve_layer[l] = carver.used();
    carve_reserve_layer<T>(p, carver, l);
  }
  s.reserve = carver.used();
  s.forward[0] = carve_forward<T>(p, false, nullptr, nullptr).used();
  s.forward[1] = carve_forward<T>(p, true, nullptr, nullptr).used();
  s.backward = carve_backward<T>(p, nullptr, nullptr).used();
  return s;
}

#define RNNX_INSTANTIATE(T)                                                           \
  template ReserveLayer<T> carve_reserve_layer<T>(const PlanSpec&, Carver&, int64_t); \
  template ReserveLayer<T> reserve_layer<T>(const PlanSpec&, const void*, int64_t);   \
  template Carver carve_forward<T>(const PlanSpec&, bool, void*, ForwardBuffers<T>*); \
  template Carver carve_backward<T>(const PlanSpec&, void*, BackwardBuffers<T>*);     \
  template BufferSizes lay_out_buffers<T>(PlanSpec&);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
