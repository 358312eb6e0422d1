// Backward pass: per layer from the top and per direction, the time loop in the reverse
// of the forward order (fused step kernel, then dh_{t-1} = dGates W_hh on the active
// rows, the weights packed once), then the weight gradients and the input gradient as
// GEMMs over all real tokens. The two directions' loops run at once when the plan says so.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/dropout.hpp"
#include "core/step_stages.hpp"
#include "core/weight_gradients.hpp"
#include "cpu/buffers.hpp"
#include "cpu/cell_kernels.hpp"
#include "cpu/gemm.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/passes.hpp"
#include "cpu/rows.hpp"
#include "cpu/team_barrier.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Hprev [N, P']: each token's previous state in direction d (h0 for the first step of a
// sequence), from the layer's undropped output. Feeds dW_hh as one GEMM and the GRU kernels.
template <typename T>
void gather_prev_states(const PlanSpec& p, int64_t d, const T* Y, const T* h0, T* h_prev) {
  const core::Schedule& s = p.schedule();
  const int64_t P = p.P, DP = p.DP;
  parallel_for(p.T_eff, true, [&](int64_t t) {
    const PrevStep prev = prev_step(s, p.reversed(d), t);
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      const T* src = i < prev.count ? Y + (s.offsets[prev.step] + i) * DP + d * P : h0 + i * P;
      std::memcpy(h_prev + (s.offsets[t] + i) * P, src, sizeof(T) * P);
    }
  });
}

template <typename T>
struct DirectionIo {
  const T* X = nullptr;             // [N, I] the layer's input as the forward saw it
  const int64_t* x_rows = nullptr;  // or the caller's x through this row map (packed engine)
  const T* dY = nullptr;            // [N, D*P'] gradient of the layer's output, or null (zero)
  T* dX = nullptr;                  // [N, I] gradient of the layer's input, or null (not wanted)
};

// The recurrent products of one direction's backward, dG W_hh (the original GRU's r,z rows
// and n rows apart) and dr W_hr, with the weights packed once for the whole time loop.
template <typename T>
struct BackwardWeights {
  WeightGemm<T> hh, hh_n, hr;
};

template <typename T>
BackwardWeights<T> bind_backward_weights(const PlanSpec& p, const T* w, const ParamOffsets& po,
                                         const BackwardDirBuffers<T>& db) {
  const int64_t H = p.H, P = p.P;
  const bool pack = p.packed_engine();
  const GemmRoute r = p.gemm();
  T* wp = pack ? db.w_pack : nullptr;
  BackwardWeights<T> bw;
  if (p.gru_orig()) {
    bw.hh.bind(r, Op::N, w + po.w_hh, P, 2 * H, P, wp);
    bw.hh_n.bind(r, Op::N, w + po.w_hh + 2 * H * P, P, H, P,
                 pack ? wp + packed_b_floats(2 * H, P, 1, r.packed_type()) : nullptr);
  } else {
    bw.hh.bind(r, Op::N, w + po.w_hh, P, p.GH, P, wp);
  }
  if (p.proj) bw.hr.bind(r, Op::N, w + po.w_hr, H, P, H, pack ? db.wr_pack : nullptr);
  return bw;
}

// Before the time loop: the sorted initial states and state gradients, and (GRU, or when
// weight gradients are wanted) every token's previous state.
template <typename T>
void backward_prepare(const PlanSpec& p, const BackwardArgs& a, int64_t l, int64_t d,
                      const ReserveLayer<T>& res, const BackwardDirBuffers<T>& db) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P;
  const int64_t sd = (l * p.D + d) * p.B;
  auto slice = [&](const void* base, int64_t width) {
    return base ? static_cast<const T*>(base) + sd * width : nullptr;
  };
  core::gather_state(s, slice(a.dhy, P), db.dh_state, P);
  core::gather_state(s, slice(a.h0, P), db.h0, P);
  if (p.cell == CellType::lstm) {
    core::gather_state(s, slice(a.dcy, H), db.dc_state, H);
    core::gather_state(s, slice(a.c0, H), db.c0, H);
  }
  if (p.cell == CellType::gru || a.dweights != nullptr) {
    gather_prev_states(p, d, res.y, db.h0, db.h_prev);
  }
}

// Step k of one direction's backward loop (k counts in the loop's order, the reverse of
// the forward's): its time step, rows, first packed row, and where its gradients are.
template <typename T>
struct BackwardStep {
  int64_t t, bs, r0;
  const T* dy;  // gradient of the step's output, or null
  T* dg;        // the step's gate gradients
};

template <typename T>
BackwardStep<T> backward_step(const PlanSpec& p, const DirectionIo<T>& io,
                              const BackwardDirBuffers<T>& db, int64_t d, int64_t k) {
  const core::Schedule& s = p.schedule();
  const int64_t t = p.reversed(d) ? k : p.T_eff - 1 - k;
  const int64_t r0 = s.offsets[t];
  return {t, s.batch_sizes[t], r0, io.dY ? io.dY + r0 * p.DP + d * p.P : nullptr,
          db.dg + r0 * p.GH};
}

// The step kernels' arguments for a step (the same for the per-step and the team loops).
template <typename T>
RnnBackward<T> rnn_backward_args(const PlanSpec& p, const ReserveLayer<T>& res, int64_t d,
                                 const BackwardStep<T>& st, T* dh) {
  return {.rows = st.bs,
          .H = p.H,
          .relu = p.cell == CellType::rnn_relu,
          .dh = dh,
          .dy = st.dy,
          .ld_dy = p.DP,
          .h = res.y + st.r0 * p.DP + d * p.P,
          .ld_h = p.DP,
          .dg = st.dg};
}

template <typename T>
LstmBackward<T> lstm_backward_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                   const BackwardDirBuffers<T>& db, int64_t d,
                                   const BackwardStep<T>& st, T* dh) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H;
  const PrevStep prev = prev_step(s, p.reversed(d), st.t);
  // LSTMP's cells take the gradient of their full-width output from the projection's
  // product (in scratch), not dh + dy.
  return {.rows = st.bs,
          .H = H,
          .dh = p.proj ? db.scratch : dh,
          .dy = p.proj ? nullptr : st.dy,
          .ld_dy = p.DP,
          .gates = rd.gates + st.r0 * p.GH,
          .c = rd.c + st.r0 * H,
          .c_prev = {.a = rd.c + s.offsets[prev.step] * H,
                     .lda = H,
                     .count_a = prev.count,
                     .b = db.c0,
                     .ldb = H},
          .c_pass = rd.c_pass ? rd.c_pass + st.r0 * H : nullptr,
          .dc_state = db.dc_state,
          .dg = st.dg};
}

// Linear-before-reset GRU.
template <typename T>
GruBackward<T> gru_backward_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                 const BackwardDirBuffers<T>& db, const BackwardStep<T>& st,
                                 T* dh) {
  return {.rows = st.bs,
          .H = p.H,
          .dh = dh,
          .dy = st.dy,
          .ld_dy = p.DP,
          .gates = rd.gates + st.r0 * p.GH,
          .h_prev = db.h_prev + st.r0 * p.P,
          .hn = rd.hn + st.r0 * p.H,
          .dg = st.dg,
          .dgh = db.dgh + st.r0 * p.GH};
}

// LSTMP, first: dr = (dh + dy) through the projection's clip, kept per token for dW_hr.
template <typename T>
ProjBackward<T> proj_backward_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                   const BackwardDirBuffers<T>& db, const BackwardStep<T>& st,
                                   T* dh) {
  return {.rows = st.bs,
          .P = p.P,
          .dh = dh,
          .dy = st.dy,
          .ld_dy = p.DP,
          .pass = rd.r_pass ? rd.r_pass + st.r0 * p.P : nullptr,
          .dr = db.dr + st.r0 * p.P};
}

// Original GRU, in two kernels around d(r * h) = dn W_hn: dz and dn (dh becomes dh * z),
// then dr and the r * h path's share of dh.
template <typename T>
GruOrigBackwardN<T> gru_orig_backward_n_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                             const BackwardDirBuffers<T>& db,
                                             const BackwardStep<T>& st, T* dh) {
  return {.rows = st.bs,
          .H = p.H,
          .dh = dh,
          .dy = st.dy,
          .ld_dy = p.DP,
          .gates = rd.gates + st.r0 * p.GH,
          .h_prev = db.h_prev + st.r0 * p.P,
          .dg = st.dg};
}

template <typename T>
GruOrigBackwardR<T> gru_orig_backward_r_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                             const BackwardDirBuffers<T>& db,
                                             const BackwardStep<T>& st, T* dh) {
  return {.rows = st.bs,
          .H = p.H,
          .drh = db.scratch,
          .gates = rd.gates + st.r0 * p.GH,
          .h_prev = db.h_prev + st.r0 * p.P,
          .dg = st.dg,
          .dh = dh};
}

// The time loop, in the reverse of the forward order: fused step kernel, then
// dh_{t-1} = dGates W_hh on the active rows.
template <typename T>
void backward_time_loop(const PlanSpec& p, const BackwardArgs& a, int64_t l, int64_t d,
                        const ReserveLayer<T>& res, const DirectionIo<T>& io,
                        const BackwardDirBuffers<T>& db) {
  const int64_t H = p.H, P = p.P, GH = p.GH;
  const ReserveDir<T>& rd = res.dir[d];
  const T* w = static_cast<const T*>(a.weights);
  const BackwardWeights<T> bw = bind_backward_weights(p, w, p.param(l, d), db);
  T* const ap = db.a_pack;
  T* dh = db.dh_state;
  ExtendedCell<T> ox = extended_cell_of(p, w, p.param(l, d), d);

  for (int64_t k = 0; k < p.T_eff; ++k) {
    const BackwardStep<T> st = backward_step(p, io, db, d, k);
    const int64_t bs = st.bs, r0 = st.r0;
    T* dg = st.dg;
    if (p.extended_cell) {
      ox.gate_pass = rd.gate_pass ? rd.gate_pass + r0 * GH : nullptr;
      ox.pre = rd.gates + r0 * GH;
    }
    T* dr = p.proj ? db.dr + r0 * P : nullptr;  // LSTMP: kept per token for dW_hr
    // The left operand of dh_{t-1} = dG W_hh: linear-before-reset GRU's hidden side apart.
    T* dgh = p.cell == CellType::gru && p.gru_lbr ? db.dgh + r0 * GH : dg;
    for (const core::BackwardStage stage : p.stages.backward) {
      switch (stage) {
        case core::BackwardStage::projection:
          proj_backward(p.kernels<T>(), proj_backward_args(p, rd, db, st, dh));
          break;
        case core::BackwardStage::projection_product:  // dh_full = dr W_hr, into scratch
          bw.hr.run(bs, dr, P, false, db.scratch, H, ap);
          break;
        case core::BackwardStage::cell:
          switch (p.cell) {
            case CellType::rnn_tanh:
            case CellType::rnn_relu:
              step(p, rnn_backward<T>, extended_rnn_backward<T>, ox,
                   rnn_backward_args(p, res, d, st, dh));
              break;
            case CellType::lstm:
              step(p, lstm_backward<T>, extended_lstm_backward<T>, ox,
                   lstm_backward_args(p, rd, db, d, st, dh));
              break;
            case CellType::gru:
              if (p.gru_lbr) {
                step(p, gru_backward<T>, extended_gru_backward<T>, ox,
                     gru_backward_args(p, rd, db, st, dh));
              } else {
                step(p, gru_orig_backward_n<T>, extended_gru_orig_backward_n<T>, ox,
                     gru_orig_backward_n_args(p, rd, db, st, dh));
              }
              break;
          }
          break;
        case core::BackwardStage::reset_product:  // d(r * h) = dn W_hn, into scratch
          bw.hh_n.run(bs, dg + 2 * H, GH, false, db.scratch, H, ap);
          break;
        case core::BackwardStage::reset_gates:
          step(p, gru_orig_backward_r<T>, extended_gru_orig_backward_r<T>, ox,
               gru_orig_backward_r_args(p, rd, db, st, dh));
          break;
        case core::BackwardStage::recurrent_product:
          // GRU's kernels left a share of dh_{t-1} there (dh * z): the product adds to it.
          bw.hh.run(bs, dgh, GH, p.cell == CellType::gru, dh, P, ap);
          break;
      }
    }
  }
}

// The cell stage of a team time loop on one thread's tile: the fixed-cell kernel of the
// plan's table or the generic one (tile_step).
template <typename T>
void team_cell_backward(const PlanSpec& p, const StepKernels<float>& kernels,
                        const ExtendedCell<T>& o, const ReserveLayer<T>& res, int64_t d,
                        const BackwardDirBuffers<T>& db, const BackwardStep<T>& st, T* dh,
                        Tile tile) {
  const ReserveDir<T>& rd = res.dir[d];
  switch (p.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu:
      tile_step(p, kernels.rnn_backward, kernels.extended_rnn_backward, o,
                rnn_backward_args(p, res, d, st, dh), tile);
      break;
    case CellType::lstm:
      tile_step(p, kernels.lstm_backward, kernels.extended_lstm_backward, o,
                lstm_backward_args(p, rd, db, d, st, dh), tile);
      break;
    case CellType::gru:
      if (p.gru_orig()) {
        tile_step(p, kernels.gru_orig_backward_n, kernels.extended_gru_orig_backward_n, o,
                  gru_orig_backward_n_args(p, rd, db, st, dh), tile);
      } else {
        tile_step(p, kernels.gru_backward, kernels.extended_gru_backward, o,
                  gru_backward_args(p, rd, db, st, dh), tile);
      }
      break;
  }
}

// The time loop of one direction as one parallel region for all its steps (every cell), as
// forward.cpp's team loop: each thread owns the same cells of every gate, runs the step
// kernel on them, packs their gradient columns as the left operand of dh_{t-1} = dG W_hh,
// and after the step's barrier computes its columns of dh_{t-1}, which only it reads next.
// With a projection those are its panels of the state's P columns: it takes them through
// the projection's step kernel into dr, packs them, and after a first barrier computes its
// cells' columns of dh_full = dr W_hr.
// The original GRU packs its cells' dn for d(r * h) = dn W_hn, whose columns of its cells it
// computes after a first barrier, before the kernel of r.
template <typename T>
void backward_time_loop_team(const PlanSpec& p, const BackwardArgs& a, int64_t l, int64_t d,
                             const ReserveLayer<T>& res, const DirectionIo<T>& io,
                             const BackwardDirBuffers<T>& db, int threads) {
  const int64_t H = p.H, P = p.P, GH = p.GH;
  const ReserveDir<T>& rd = res.dir[d];
  const T* w = static_cast<const T*>(a.weights);
  const BackwardWeights<T> bw = bind_backward_weights(p, w, p.param(l, d), db);
  const PackedType type = p.packed_type();
  const bool orig = p.gru_orig();
  // dh_{t-1} = dG W_hh over the gates of W_hh: r and z only for the original GRU, whose n
  // goes through W_hn.
  const int64_t hh_gates = orig ? 2 : p.G;
  const PackedB w_hh{bw.hh.packed(), hh_gates * H, P, 1, type};
  const PackedB w_hn{orig ? bw.hh_n.packed() : nullptr, H, P, 1, type};
  const bool proj = p.proj;
  const PackedB w_hr{proj ? bw.hr.packed() : nullptr, P, H, 1, type};
  const StepKernels<float>& kernels = p.kernels<float>();
  const ExtendedCell<T> ox = extended_cell_of(p, w, p.param(l, d), d);
  const bool lbr = p.cell == CellType::gru && p.gru_lbr;
  const bool add_to_dh = p.cell == CellType::gru;  // GRU's kernels leave a share of dh there
  T* dh = db.dh_state;
  const int64_t cell_panels = (H + kPackedPanel - 1) / kPackedPanel;
  const int64_t state_panels = w_hh.panels_per_block();  // of dh's P columns

  TeamBarrier barrier;
  if (p.T_eff > 0)
    parallel_region(threads, [&](int th, int n) {
      const TeamShare share(cell_panels, H, th, n);
      const int64_t j0 = share.j0, j1 = share.j1;
      // The state's columns this thread computes: its cells' without projection.
      const TeamShare state(state_panels, P, th, n);
      for (int64_t k = 0; k < p.T_eff; ++k) {
        const BackwardStep<T> st = backward_step(p, io, db, d, k);
        const int64_t bs = st.bs, buf = k & 1;
        T* dgh = lbr ? db.dgh + st.r0 * GH : st.dg;  // the left operand of the product
        T* dr = proj ? db.dr + st.r0 * P : nullptr;  // LSTMP: kept per token for dW_hr
        const Tile tile{0, bs, j0, j1};
        ExtendedCell<T> o = ox;
        if (p.extended_cell) {
          o.gate_pass = rd.gate_pass ? rd.gate_pass + st.r0 * GH : nullptr;
          o.pre = rd.gates + st.r0 * GH;
        }
        for (const core::BackwardStage stage : p.stages.backward) {
          if (core::reads_every_cell(stage)) {
            // This thread packs its columns of the product's left operand, then waits until
            // every thread has packed its own.
            switch (stage) {
              case core::BackwardStage::projection_product:  // dr, its columns of the state
                if (state.j0 < state.j1) {
                  pack_a_columns(bs, P, dr, P, state.j0, state.j1, db.a_pack, type);
                }
                break;
              case core::BackwardStage::reset_product:  // dn, its cells
                if (j0 < j1) pack_a_columns(bs, H, st.dg + 2 * H, GH, j0, j1, db.a_pack, type);
                break;
              default:  // recurrent_product: dG of W_hh's gates, its cells of each
                if (j0 < j1) {
                  for (int64_t g = 0; g < hh_gates; ++g) {
                    pack_a_columns(bs, hh_gates * H, dgh, GH, g * H + j0, g * H + j1,
                                   db.ag_pack[buf], type);
                  }
                }
                break;
            }
            barrier.wait(n);
          }
          switch (stage) {
            case core::BackwardStage::projection:
              if (state.j0 < state.j1) {
                kernels.proj_backward(proj_backward_args(p, rd, db, st, dh),
                                      Tile{0, bs, state.j0, state.j1});
              }
              break;
            case core::BackwardStage::projection_product:  // dh_full = dr W_hr, into scratch
              multiply_panel_range(bs, db.a_pack, w_hr, share.q0, share.q1, false, db.scratch, H);
              break;
            case core::BackwardStage::cell:
              if (j0 < j1) team_cell_backward(p, kernels, o, res, d, db, st, dh, tile);
              break;
            case core::BackwardStage::reset_product:  // d(r * h) = dn W_hn, into scratch
              multiply_panel_range(bs, db.a_pack, w_hn, state.q0, state.q1, false, db.scratch, H);
              break;
            case core::BackwardStage::reset_gates:
              if (j0 < j1) {
                tile_step(p, kernels.gru_orig_backward_r, kernels.extended_gru_orig_backward_r, o,
                          gru_orig_backward_r_args(p, rd, db, st, dh), tile);
              }
              break;
            case core::BackwardStage::recurrent_product:
              multiply_panel_range(bs, db.ag_pack[buf], w_hh, state.q0, state.q1, add_to_dh, dh, P);
              break;
          }
        }
      }
    });
}

// The peephole gradients (core/peephole_grad.hpp, compiled for the plan's level), threads
// taking chunks of columns.
template <typename T>
void peephole_grad(const PlanSpec& p, int64_t d, const ReserveDir<T>& rd, const T* c0, const T* dg,
                   bool accumulate, T* dp) {
  const int64_t H = p.H;
  constexpr int64_t kCols = 16;
  const int64_t chunks = (H + kCols - 1) / kCols;
  parallel_for(chunks, p.N * H >= 16384, [&](int64_t chunk) {
    const int64_t j0 = chunk * kCols, j1 = std::min(H, j0 + kCols);
    p.kernels<T>().peephole_grad_columns(p.schedule(), p.reversed(d), rd.c, c0, dg, H, p.GH, j0, j1,
                                         accumulate, dp);
  });
}

// After the time loop: dh0 and dc0, the weight gradients and the input gradient as GEMMs
// over all real tokens. dX is overwritten by the first direction and added to by the second.
// The column sums of A [rows, width] (dense) as core::column_sums adds them up (row order,
// the same bits on any thread count), compiled for the plan's level, threads taking chunks of
// columns.
template <typename T>
void column_sums(const PlanSpec& p, int64_t rows, int64_t width, const T* A, T* out) {
  const auto sums = p.kernels<T>().column_sums;
  constexpr int64_t kColumns = 64;  // a few cache lines per thread and row
  const int64_t chunks = (width + kColumns - 1) / kColumns;
  parallel_for(chunks, rows * width >= 65536, [&](int64_t c) {
    const int64_t j0 = c * kColumns;
    sums(A + j0, width, rows, std::min(kColumns, width - j0), out + j0);
  });
}

template <typename T>
void backward_finish(const PlanSpec& p, const BackwardArgs& a, int64_t l, int64_t d,
                     const ReserveLayer<T>& res, const DirectionIo<T>& io,
                     const BackwardDirBuffers<T>& db, T* colsum, T* gemm_scratch) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P, GH = p.GH, I = p.input_width(l), N = p.N;
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  const int64_t sd = (l * p.D + d) * p.B;
  // Rows of sequences that had ended were left alone: each holds dL/dh0 now.
  if (a.dh0) core::scatter_state(s, db.dh_state, static_cast<T*>(a.dh0) + sd * P, P);
  if (a.dc0) core::scatter_state(s, db.dc_state, static_cast<T*>(a.dc0) + sd * H, H);

  T* scratch = p.packed_engine() ? gemm_scratch : nullptr;
  const GemmRoute r = p.gemm();
  if (a.dweights) {
    T* dw = static_cast<T*>(a.dweights);
    const bool acc = a.weight_grad_mode == GradMode::accumulate;
    const Config& c = p.config();
    // Where this pass keeps each kind of rows that the products read (core/weight_gradients.hpp).
    const auto rows_of = [&](core::TokenRows rows) -> const T* {
      switch (rows) {
        case core::TokenRows::gates_grad:
          return db.dg;
        case core::TokenRows::hidden_gates_grad:
          return db.dgh;
        case core::TokenRows::proj_grad:
          return db.dr;
        case core::TokenRows::layer_input:
          return io.X;
        case core::TokenRows::prev_state:
          return db.h_prev;
        case core::TokenRows::reset_state:
          return res.dir[d].hn;
        case core::TokenRows::proj_input:
          return res.dir[d].h_full;
      }
      return nullptr;
    };
    const auto width = [&](core::TokenRows rows) { return core::token_rows_width(c, I, rows); };
    const core::WeightGradients& grads = p.weight_grads[l];
    for (const core::TokenProduct& g : grads.products) {
      const bool input = g.rhs == core::TokenRows::layer_input;  // the caller's rows, maybe
      gemm_all_tokens<T>(r, Op::T, Op::N, g.m, g.n, N, rows_of(g.lhs) + g.lhs_col0, width(g.lhs),
                         rows_of(g.rhs), width(g.rhs), acc, dw + po.of(g.weight) + g.row0 * g.n,
                         g.n, scratch, nullptr, input ? io.x_rows : nullptr);
    }
    // Column sums (the biases); b_hh's are b_ih's, summed once, but for linear-before-reset GRU.
    const T* summed = nullptr;
    for (const core::TokenColumnSums& g : grads.sums) {
      if (rows_of(g.rows) != summed) {
        column_sums(p, N, g.width, rows_of(g.rows), colsum);
        summed = rows_of(g.rows);
      }
      T* b = dw + po.of(g.weight);
      for (int64_t j = 0; j < g.width; ++j) b[j] = acc ? b[j] + colsum[j] : colsum[j];
    }
    if (p.peephole) peephole_grad(p, d, res.dir[d], db.c0, db.dg, acc, dw + po.w_peephole);
  }
  if (io.dX) {
    gemm_all_tokens<T>(r, Op::N, Op::N, N, I, GH, db.dg, GH, w + po.w_ih, I, d > 0, io.dX, I,
                       scratch);
  }
}

}  // namespace

template <typename T>
void run_backward(const PlanSpec& p, const BackwardArgs& a, void* workspace,
                  uint64_t dropout_counter) {
  const core::Schedule& s = p.schedule();
  BackwardBuffers<T> buf;
  carve_backward<T>(p, workspace, &buf);
  const int64_t L = p.L;

  // Layer-0 input, needed only for dW_ih; padding is never read.
  const T* x0 = static_cast<const T*>(a.x);
  const int64_t* x0_rows = nullptr;
  if (!p.rows_in_place && a.dweights) {
    if (p.packed_engine()) {
      x0_rows = p.caller_rows.data();  // dW_ih's packer reads the caller's rows: no copy
    } else {
      gather_rows_parallel(p.shape(), s, x0, buf.x, p.I0);
      x0 = buf.x;
    }
  }
  const T* dY = static_cast<const T*>(a.dy);
  if (!p.rows_in_place && a.dy) {
    gather_rows_parallel(p.shape(), s, dY, buf.dy[(L - 1) % 2], p.DP);
    dY = buf.dy[(L - 1) % 2];
  }

  for (int64_t l = L - 1; l >= 0; --l) {
    const ReserveLayer<T> res = reserve_layer<T>(p, a.reserve, l);
    DirectionIo<T> io;
    io.dY = dY;
    if (l > 0) {
      const ReserveLayer<T> below = reserve_layer<T>(p, a.reserve, l - 1);
      io.X = p.dropout_after(l - 1) ? below.y_dropped : below.y;
      io.dX = buf.dy[(l - 1) % 2];
    } else {
      io.X = x0;
      io.x_rows = x0_rows;
      io.dX = a.dx ? (p.rows_in_place ? static_cast<T*>(a.dx) : buf.dx) : nullptr;
    }
    for_each_direction(
        p, [&](int64_t d) { backward_prepare(p, a, l, d, res, buf.dir[d]); },
        [&](int64_t d) {
          run_time_loop<T>(
              p,
              [&](auto threads) {  // generic: compiled for float32 only (run_time_loop)
                backward_time_loop_team(p, a, l, d, res, io, buf.dir[d], threads);
              },
              [&] { backward_time_loop(p, a, l, d, res, io, buf.dir[d]); });
        },
        [&](int64_t d) {
          backward_finish(p, a, l, d, res, io, buf.dir[d], buf.colsum, buf.gemm_scratch);
        });
    if (l > 0) {
      // The gradient flows back through the dropout that fed this layer.
      if (p.dropout_after(l - 1)) {
        const core::DropoutKey key{p.config().seed, dropout_counter, l - 1, p.dropout};
        dropout_rows_parallel(key, s, p.DP, io.dX);
      }
      dY = io.dX;
    } else if (a.dx && !p.rows_in_place) {
      scatter_rows_parallel(p.shape(), s, static_cast<const T*>(buf.dx), static_cast<T*>(a.dx),
                            p.I0, T(0));
    }
  }
}

template void run_backward<float>(const PlanSpec&, const BackwardArgs&, void*, uint64_t);
template void run_backward<double>(const PlanSpec&, const BackwardArgs&, void*, uint64_t);

}  // namespace rnnx::cpu
