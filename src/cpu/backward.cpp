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
#include "cpu/step_crew.hpp"
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
  const core::BatchMover mover = batch_mover<T>(p);
  const int64_t H = p.H, P = p.P;
  const int64_t sd = (l * p.D + d) * p.B;
  auto slice = [&](const void* base, int64_t width) {
    return base ? static_cast<const T*>(base) + sd * width : nullptr;
  };
  mover.states_in(slice(a.dhy, P), db.dh_state, P, nullptr);
  mover.states_in(slice(a.h0, P), db.h0, P, nullptr);
  if (p.cell == CellType::lstm) {
    mover.states_in(slice(a.dcy, H), db.dc_state, H, nullptr);
    mover.states_in(slice(a.c0, H), db.c0, H, nullptr);
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

// Everything one direction's backward loop reads, bound before it.
template <typename T>
struct BackwardLoop {
  const PlanSpec& p;
  const ReserveLayer<T>& res;
  const ReserveDir<T>& rd;
  const DirectionIo<T>& io;
  const BackwardDirBuffers<T>& db;
  int64_t d;
  ExtendedCell<T> ox;
  // dG W_hh (the original GRU's r and z), dn W_hn (its n), dr W_hr (LSTMP).
  StepProduct<T> hh, hn, hr;
};

// The cell stage, one function per cell, chosen once per loop (backward_cell).
template <typename T, typename Crew>
using BackwardCell = void (*)(const BackwardLoop<T>&, const Crew&, const BackwardStep<T>&,
                              const ExtendedCell<T>&);

template <typename T, typename Crew>
void rnn_cell(const BackwardLoop<T>& b, const Crew& crew, const BackwardStep<T>& st,
              const ExtendedCell<T>& o) {
  crew.kernel(rnn_backward_args(b.p, b.res, b.d, st, b.db.dh_state), o, Share::cells);
}
template <typename T, typename Crew>
void lstm_cell(const BackwardLoop<T>& b, const Crew& crew, const BackwardStep<T>& st,
               const ExtendedCell<T>& o) {
  crew.kernel(lstm_backward_args(b.p, b.rd, b.db, b.d, st, b.db.dh_state), o, Share::cells);
}
template <typename T, typename Crew>
void gru_cell(const BackwardLoop<T>& b, const Crew& crew, const BackwardStep<T>& st,
              const ExtendedCell<T>& o) {
  crew.kernel(gru_backward_args(b.p, b.rd, b.db, st, b.db.dh_state), o, Share::cells);
}
template <typename T, typename Crew>
void gru_orig_cell(const BackwardLoop<T>& b, const Crew& crew, const BackwardStep<T>& st,
                   const ExtendedCell<T>& o) {
  crew.kernel(gru_orig_backward_n_args(b.p, b.rd, b.db, st, b.db.dh_state), o, Share::cells);
}

template <typename T, typename Crew>
BackwardCell<T, Crew> backward_cell(const PlanSpec& p) {
  return by_cell<BackwardCell<T, Crew>>(p, rnn_cell<T, Crew>, lstm_cell<T, Crew>, gru_cell<T, Crew>,
                                        gru_orig_cell<T, Crew>);
}

// The steps of one direction on `crew` (step_crew.hpp), in the reverse of the forward order:
// the plan's stages (core/step_stages.hpp), the step kernel then dh_{t-1} = dG W_hh on the
// active rows. A team packs each product's left operand just before the barrier in front of
// it, each member its own columns: dr its state columns, dn and dG its cells of each gate.
template <typename T, typename Crew>
void backward_steps(const BackwardLoop<T>& b, const Crew& crew) {
  const PlanSpec& p = b.p;
  const BackwardDirBuffers<T>& db = b.db;
  const int64_t H = p.H, P = p.P, GH = p.GH;
  const bool lbr = p.cell == CellType::gru && p.gru_lbr;
  const bool add_to_dh = p.cell == CellType::gru;   // GRU's kernels leave a share of dh there
  const int64_t hh_gates = p.gru_orig() ? 2 : p.G;  // W_hh's gates: the original GRU's r and z
  T* dh = db.dh_state;
  const BackwardCell<T, Crew> cell = backward_cell<T, Crew>(p);
  for (int64_t k = 0; k < p.T_eff; ++k) {
    const BackwardStep<T> st = backward_step(p, b.io, db, b.d, k);
    const int64_t bs = st.bs, r0 = st.r0;
    T* dgh = lbr ? db.dgh + r0 * GH : st.dg;    // the left operand of dh_{t-1} = dG W_hh
    T* dr = p.proj ? db.dr + r0 * P : nullptr;  // LSTMP: kept per token for dW_hr
    T* ag = db.ag_pack[k & 1];                  // a team's packed dG, double buffered
    ExtendedCell<T> o = b.ox;
    if (p.extended_cell) {
      o.gate_pass = b.rd.gate_pass ? b.rd.gate_pass + r0 * GH : nullptr;
      o.pre = b.rd.gates + r0 * GH;
    }
    for (const core::BackwardStage stage : p.stages.backward) {
      if (core::reads_every_cell(stage)) {
        switch (stage) {
          case core::BackwardStage::projection_product:
            crew.pack(bs, P, dr, P, Share::state, 0, db.a_pack);
            break;
          case core::BackwardStage::reset_product:  // dn
            crew.pack(bs, H, st.dg + 2 * H, GH, Share::cells, 0, db.a_pack);
            break;
          default:  // recurrent_product: dG of W_hh's gates
            for (int64_t gate = 0; gate < hh_gates; ++gate) {
              crew.pack(bs, hh_gates * H, dgh, GH, Share::cells, gate * H, ag);
            }
            break;
        }
        crew.sync();
      }
      switch (stage) {
        case core::BackwardStage::projection:
          crew.kernel(proj_backward_args(p, b.rd, db, st, dh), o, Share::state);
          break;
        case core::BackwardStage::projection_product:  // dh_full = dr W_hr, into scratch
          crew.multiply(b.hr, bs, dr, P, db.a_pack, false, db.scratch, H);
          break;
        case core::BackwardStage::cell:
          cell(b, crew, st, o);
          break;
        case core::BackwardStage::reset_product:  // d(r * h) = dn W_hn, into scratch
          crew.multiply(b.hn, bs, st.dg + 2 * H, GH, db.a_pack, false, db.scratch, H);
          break;
        case core::BackwardStage::reset_gates:
          crew.kernel(gru_orig_backward_r_args(p, b.rd, db, st, dh), o, Share::cells);
          break;
        case core::BackwardStage::recurrent_product:
          crew.multiply(b.hh, bs, dgh, GH, ag, add_to_dh, dh, P);
          break;
      }
    }
  }
}

// The time loop of one layer and direction: its weights bound, its steps on the plan's crew.
template <typename T>
void backward_time_loop(const PlanSpec& p, const BackwardArgs& a, int64_t l, int64_t d,
                        const ReserveLayer<T>& res, const DirectionIo<T>& io,
                        const BackwardDirBuffers<T>& db) {
  const T* w = static_cast<const T*>(a.weights);
  const BackwardWeights<T> bw = bind_backward_weights(p, w, p.param(l, d), db);
  const BackwardLoop<T> b{.p = p,
                          .res = res,
                          .rd = res.dir[d],
                          .io = io,
                          .db = db,
                          .d = d,
                          .ox = extended_cell_of(p, w, p.param(l, d), d),
                          .hh = step_product(bw.hh, Share::state),
                          .hn = step_product(bw.hh_n, Share::state),
                          .hr = step_product(bw.hr, Share::cells)};
  // A team member's cells in whole panels of H; its state columns in whole panels of dh's P.
  const int64_t cell_panels = (p.H + kPackedPanel - 1) / kPackedPanel;
  run_steps<T>(p, cell_panels, b.hh.packed.panels_per_block(), 0, db.a_pack,
               [&](const auto& crew) { backward_steps(b, crew); });
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
  const int64_t H = p.H, P = p.P, GH = p.GH, I = p.input_width(l), N = p.N;
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  const int64_t sd = (l * p.D + d) * p.B;
  // Rows of sequences that had ended were left alone: each holds dL/dh0 now.
  const core::BatchMover mover = batch_mover<T>(p);
  if (a.dh0) mover.states_out(db.dh_state, static_cast<T*>(a.dh0) + sd * P, P, nullptr);
  if (a.dc0) mover.states_out(db.dc_state, static_cast<T*>(a.dc0) + sd * H, H, nullptr);

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
  const core::BatchMover mover = batch_mover<T>(p);
  const int64_t L = p.L;

  // Layer-0 input, needed only for dW_ih; padding is never read.
  const T* x0 = static_cast<const T*>(a.x);
  const int64_t* x0_rows = nullptr;
  if (!p.rows_in_place && a.dweights) {
    if (p.packed_engine()) {
      x0_rows = p.caller_rows.data();  // dW_ih's packer reads the caller's rows: no copy
    } else {
      x0 = static_cast<const T*>(mover.rows_in(x0, buf.x, p.I0, nullptr));
    }
  }
  const T* dY = static_cast<const T*>(a.dy);
  if (a.dy) dY = static_cast<const T*>(mover.rows_in(dY, buf.dy[(L - 1) % 2], p.DP, nullptr));

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
        [&](int64_t d) { backward_time_loop(p, a, l, d, res, io, buf.dir[d]); },
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
      mover.rows_out(buf.dx, a.dx, p.I0, 0.0, nullptr);
    }
  }
}

template void run_backward<float>(const PlanSpec&, const BackwardArgs&, void*, uint64_t);
template void run_backward<double>(const PlanSpec&, const BackwardArgs&, void*, uint64_t);

}  // namespace rnnx::cpu
