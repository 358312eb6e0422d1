// Forward pass: per layer and direction the input projection (one GEMM over the rows of
// the steps with few rows; the packed engine projects the rows of steps with many in the
// loop, where they stay in cache), then the time loop (recurrent GEMM on the active rows
// with the weights packed once, one fused step kernel); the two directions' loops run at
// once when the plan says so.
// Training keeps what backward needs in the reserve; inference keeps nothing.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dropout.hpp"
#include "cpu/buffers.hpp"
#include "cpu/cell_kernels.hpp"
#include "cpu/extended_cell.hpp"
#include "cpu/gemm.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/passes.hpp"
#include "cpu/rows.hpp"
#include "cpu/team_barrier.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Biases folded for the step kernels: LSTM and RNN b_ih + b_hh; GRU b_ih + b_hh for r, z
// and b_in for n, with b_hn after them (it sits inside r * (...)). Zeros without bias.
template <typename T>
void combine_biases(const PlanSpec& p, const T* w, const ParamOffsets& po, T* out) {
  const int64_t gh = p.GH, H = p.H;
  if (!p.bias) {
    std::fill(out, out + gh + H, T(0));
    return;
  }
  const T* b_ih = w + po.b_ih;
  const T* b_hh = w + po.b_hh;
  const bool gru = p.cell == CellType::gru;
  for (int64_t j = 0; j < gh; ++j) out[j] = b_ih[j] + (gru && j >= 2 * H ? T(0) : b_hh[j]);
  for (int64_t j = 0; j < H; ++j) out[gh + j] = gru ? b_hh[2 * H + j] : T(0);
}

// The products with weights of one direction: W_ih^T for the steps that project their
// input in the loop, W_hh^T (the original GRU's r,z rows and its n rows apart) and W_hr^T,
// packed once for the whole time loop by the packed engine.
template <typename T>
struct ForwardWeights {
  WeightGemm<T> ih, hh, hh_n, hr;
};

// A layer's input rows in packed sorted order: in place (`map` null: row r at x + r * ld),
// or the caller's padded tensor read through the row map (packed_gemm.hpp), which the
// packed engine's packers follow instead of a gathered copy.
template <typename T>
struct InputRows {
  const T* x;
  int64_t ld;
  const int64_t* map = nullptr;
  // Rows from r0 on, as the GEMMs take them: a pointer and a row map.
  const T* at(int64_t r0) const { return map ? x : x + r0 * ld; }
  const int64_t* map_at(int64_t r0) const { return map ? map + r0 : nullptr; }
};

// Where one direction's packed weights are (packed engine): the call's workspace, packed by
// the binding, or a network's kept copy of the layer (packed_weights.hpp), bound as it is.
template <typename T>
struct WeightPacks {
  T* hh = nullptr;  // W_hh^T (the original GRU's r,z rows, then its n rows)
  T* hr = nullptr;  // W_hr^T (LSTMP)
  T* ih = nullptr;  // W_ih^T (the steps that project their input in the loop)
  bool prepacked = false;
};

// A kept block of layer l (forward_kept_block_floats): W_hh^T, W_hr^T, W_ih^T in a row.
template <typename T>
WeightPacks<T> kept_packs(const PlanSpec& p, T* block, bool prepacked) {
  const PackedType t = p.packed_type();
  WeightPacks<T> k{block, block + forward_recurrent_pack_floats(p), nullptr, prepacked};
  k.ih = k.hr + (p.proj ? packed_b_floats(p.H, p.P, 1, t) : 0);
  return k;
}

template <typename T>
WeightPacks<T> weight_packs(const PlanSpec& p, int64_t l, int64_t d,
                            const ForwardDirBuffers<T>& db) {
  if (db.kept != nullptr) return kept_packs(p, db.kept[l * p.D + d], true);
  return {db.w_pack, db.wr_pack, db.wi_pack, false};
}

// `with_input`: W_ih^T too (the steps that project their input in the loop need it).
template <typename T>
ForwardWeights<T> bind_forward_weights(const PlanSpec& p, const T* w, const ParamOffsets& po,
                                       int64_t I, const WeightPacks<T>& packs, bool with_input) {
  const int64_t H = p.H, P = p.P;
  const bool pack = p.packed_engine();
  const bool pre = packs.prepacked;
  const GemmRoute r = p.gemm();
  T* wp = pack ? packs.hh : nullptr;
  ForwardWeights<T> fw;
  // Gate by gate (blocks = G), so that a thread of a team loop owns the same cells of every
  // gate.
  if (with_input) {
    fw.ih.bind(r, Op::T, w + po.w_ih, I, I, p.GH, pack ? packs.ih : nullptr, p.G, pre);
  }
  if (p.gru_orig()) {
    // r and z as two blocks, like the gates of the other cells.
    fw.hh.bind(r, Op::T, w + po.w_hh, P, P, 2 * H, wp, 2, pre);
    fw.hh_n.bind(r, Op::T, w + po.w_hh + 2 * H * P, P, H, H,
                 pack ? wp + packed_b_floats(P, 2 * H, 2, r.packed_type()) : nullptr, 1, pre);
  } else {
    fw.hh.bind(r, Op::T, w + po.w_hh, P, P, p.GH, wp, p.G, pre);
  }
  if (p.proj) fw.hr.bind(r, Op::T, w + po.w_hr, H, H, P, pack ? packs.hr : nullptr, 1, pre);
  return fw;
}

}  // namespace

template <typename T>
void pack_kept_forward_weights(const PlanSpec& p, const T* w, int64_t l, int64_t d, T* block) {
  bind_forward_weights(p, w, p.param(l, d), p.input_width(l), kept_packs(p, block, false), true);
}
template void pack_kept_forward_weights<float>(const PlanSpec&, const float*, int64_t, int64_t,
                                               float*);

namespace {

// Where the input projection x W_ih^T of each step's rows goes, and where the step kernel
// finds it: RNN straight into its output columns of y (one gate, the step kernel then
// works in place); LSTM and GRU in training, and RNN in training with the generic kernels
// (PlanSpec::extended_cell), into the reserve's gates; in inference the
// rows past split_row (projected in bulk) into gx, the others (projected in the loop) into
// gx_step, one step at a time.
template <typename T>
struct InputGates {
  T* base = nullptr;
  int64_t base_row = 0;  // row r at base + (r - base_row) * ld
  int64_t ld = 0;
  T* step = nullptr;  // rows before split_row, when not at base
  int64_t split_row = 0;

  T* at(int64_t r0) const { return step && r0 < split_row ? step : base + (r0 - base_row) * ld; }
};

template <typename T>
InputGates<T> input_gates(const PlanSpec& p, int64_t d, T* Y, const ReserveDir<T>& rd,
                          bool training, const ForwardDirBuffers<T>& db) {
  InputGates<T> g;
  g.split_row = p.schedule().offsets[p.step_input_steps];
  if (p.is_rnn() && !(training && p.extended_cell)) {
    g.base = Y + d * p.P;
    g.ld = p.DP;
  } else if (training) {
    g.base = rd.gates;
    g.ld = p.GH;
  } else {
    g.base = db.gx;
    g.base_row = g.split_row;
    g.ld = p.GH;
    g.step = db.gx_step;
  }
  return g;
}

// The input projection of the rows that are projected in bulk, as one GEMM.
template <typename T>
void bulk_input_projection(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                           const InputRows<T>& X, const InputGates<T>& g, T* scratch) {
  const int64_t I = p.input_width(l), r0 = g.split_row;
  const T* w = static_cast<const T*>(a.weights);
  gemm_all_tokens<T>(p.gemm(), Op::N, Op::T, p.N - r0, p.GH, I, X.at(r0), I, w + p.param(l, d).w_ih,
                     I, false, g.at(r0), g.ld, p.packed_engine() ? scratch : nullptr, X.map_at(r0));
}

// The step kernels' arguments for the rows [r0, r0 + bs) of a step whose output rows start
// at y (the same for the per-step and the team loops; LSTMP redirects h afterwards).
template <typename T>
RnnForward<T> rnn_forward_args(const PlanSpec& p, const ForwardDirBuffers<T>& db, int64_t bs, T* y,
                               T* hs) {
  return {.rows = bs,
          .H = p.H,
          .relu = p.cell == CellType::rnn_relu,
          .bias = db.bias,
          .hg = db.hg,
          .y = y,
          .ld_y = p.DP,
          .h_state = hs};
}

template <typename T>
LstmForward<T> lstm_forward_args(const PlanSpec& p, const ReserveDir<T>& rd,
                                 const ForwardDirBuffers<T>& db, bool training, int64_t bs,
                                 int64_t r0, T* gates, const Clamp<T>& cell_clip, T* y, T* hs,
                                 T* h_full) {
  // LSTMP (h_full not null): h goes there, full width, and the projection makes the state.
  return {.rows = bs,
          .H = p.H,
          .bias = db.bias,
          .hg = db.hg,
          .gates = gates,
          .keep_gates = training,
          .c_state = db.c_state,
          .c_keep = training ? rd.c + r0 * p.H : nullptr,
          .c_pass = training && rd.c_pass ? rd.c_pass + r0 * p.H : nullptr,
          .cell_clip = cell_clip,
          .h = h_full ? h_full : y,
          .ld_h = h_full ? p.H : p.DP,
          .h_state = h_full ? nullptr : hs};
}

// Linear-before-reset GRU.
template <typename T>
GruForward<T> gru_forward_args(const PlanSpec& p, const ReserveDir<T>& rd,
                               const ForwardDirBuffers<T>& db, bool training, int64_t bs,
                               int64_t r0, T* gates, T* y, T* hs) {
  return {.rows = bs,
          .H = p.H,
          .bias = db.bias,
          .b_hn = db.bias + p.GH,
          .hg = db.hg,
          .gates = gates,
          .keep_gates = training,
          .hn_keep = training ? rd.hn + r0 * p.H : nullptr,
          .h_state = hs,
          .y = y,
          .ld_y = p.DP};
}

// LSTMP after r_raw = h_full W_hr^T landed in the step's rows of y: the clip, into the state.
template <typename T>
ProjForward<T> proj_forward_args(const PlanSpec& p, const ReserveDir<T>& rd, bool training,
                                 int64_t bs, int64_t r0, const Clamp<T>& proj_clip, T* y, T* hs) {
  return {.rows = bs,
          .P = p.P,
          .y = y,
          .ld_y = p.DP,
          .pass = training && rd.r_pass ? rd.r_pass + r0 * p.P : nullptr,
          .proj_clip = proj_clip,
          .h_state = hs};
}

// Original GRU, in two kernels around (r * h) W_hn^T: r and z (and r * h into rh), then n
// and h from u = (r * h) W_hn^T.
template <typename T>
GruOrigGatesForward<T> gru_orig_gates_args(const PlanSpec& p, const ForwardDirBuffers<T>& db,
                                           int64_t bs, T* gates, const T* hs, T* rh) {
  return {.rows = bs,
          .H = p.H,
          .bias = db.bias,
          .hg = db.hg,
          .ld_hg = p.GH,
          .gates = gates,
          .h_state = hs,
          .rh = rh};
}

template <typename T>
GruOrigForward<T> gru_orig_args(const PlanSpec& p, const ForwardDirBuffers<T>& db, int64_t bs,
                                const T* u, T* gates, T* hs, T* y) {
  return {.rows = bs,
          .H = p.H,
          .bias = db.bias,
          .b_hn = db.bias + p.GH,
          .u = u,
          .ld_u = p.GH,
          .gates = gates,
          .h_state = hs,
          .y = y,
          .ld_y = p.DP};
}

// A direction's first states, in sorted order: its layer's rows of the caller's h0 (and c0),
// or zeros where the caller gave none.
template <typename T>
void gather_initial_states(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                           const ForwardDirBuffers<T>& db) {
  const core::Schedule& s = p.schedule();
  const int64_t sd = (l * p.D + d) * p.B;  // first state row of this layer and direction
  core::gather_state(s, a.h0 ? static_cast<const T*>(a.h0) + sd * p.P : nullptr, db.h_state, p.P);
  if (p.cell == CellType::lstm) {
    core::gather_state(s, a.c0 ? static_cast<const T*>(a.c0) + sd * p.H : nullptr, db.c_state, p.H);
  }
}

// And its last ones, into the caller's hy (and cy): the time loops leave the rows of finished
// sequences alone, so hs holds each sequence's state after its own last step (h0 for length 0).
template <typename T>
void scatter_final_states(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                          const T* hs, const ForwardDirBuffers<T>& db) {
  const core::Schedule& s = p.schedule();
  const int64_t sd = (l * p.D + d) * p.B;
  if (a.hy) core::scatter_state(s, hs, static_cast<T*>(a.hy) + sd * p.P, p.P);
  if (a.cy) core::scatter_state(s, db.c_state, static_cast<T*>(a.cy) + sd * p.H, p.H);
}

// The time loop of one layer and direction, after the bulk input projection.
template <typename T>
void forward_time_loop(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                       const InputRows<T>& X, const InputGates<T>& g, T* Y, const ReserveDir<T>& rd,
                       bool training, const ForwardDirBuffers<T>& db) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P, GH = p.GH, DP = p.DP, I = p.input_width(l);
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  combine_biases(p, w, po, db.bias);
  const ForwardWeights<T> fw =
      bind_forward_weights(p, w, po, I, weight_packs(p, l, d, db), p.step_input_steps > 0);
  T* const ap = db.a_pack;

  gather_initial_states(p, a, l, d, db);
  T* hs = db.h_state;
  const Clamp<T> cell_clip(p.config().cell_clip, p.config().clip_nan);
  const Clamp<T> proj_clip(p.config().proj_clip, p.config().clip_nan);
  ExtendedCell<T> ox = extended_cell_of(p, w, po, d);

  for (int64_t k = 0; k < p.T_eff; ++k) {
    const int64_t t = p.reversed(d) ? p.T_eff - 1 - k : k;
    const int64_t bs = s.batch_sizes[t], r0 = s.offsets[t];
    T* y = Y + r0 * DP + d * P;
    T* gates = g.at(r0);
    if (t < p.step_input_steps) fw.ih.run(bs, X.at(r0), I, false, gates, g.ld, ap, X.map_at(r0));
    if (p.extended_cell) {
      ox.gate_pass = training && rd.gate_pass ? rd.gate_pass + r0 * GH : nullptr;
      ox.pre = p.is_rnn() && training ? gates : nullptr;
    }
    // LSTMP: h_full goes to the reserve (training) or scratch, then r = h_full W_hr^T lands
    // in y and becomes the state. The original GRU: r * h likewise.
    T* h_full = !p.proj ? nullptr : training ? rd.h_full + r0 * H : db.scratch;
    T* rh = !p.gru_orig() ? nullptr : training ? rd.hn + r0 * H : db.scratch;
    // The original GRU's (r * h) W_hn^T, beside r and z's products.
    T* u = p.gru_orig() ? db.hg + 2 * H : nullptr;
    for (const core::ForwardStage stage : p.stages.forward) {
      switch (stage) {
        case core::ForwardStage::recurrent_product:
          fw.hh.run(bs, hs, P, false, db.hg, GH, ap);
          break;
        case core::ForwardStage::reset_gates:
          step(p, gru_orig_gates_forward<T>, extended_gru_orig_gates_forward<T>, ox,
               gru_orig_gates_args(p, db, bs, gates, hs, rh));
          break;
        case core::ForwardStage::reset_product:
          fw.hh_n.run(bs, rh, H, false, u, GH, ap);
          break;
        case core::ForwardStage::cell:
          switch (p.cell) {
            case CellType::rnn_tanh:
            case CellType::rnn_relu:
              step(p, rnn_forward<T>, extended_rnn_forward<T>, ox,
                   rnn_forward_args(p, db, bs, y, hs));
              break;
            case CellType::lstm:
              step(p, lstm_forward<T>, extended_lstm_forward<T>, ox,
                   lstm_forward_args(p, rd, db, training, bs, r0, gates, cell_clip, y, hs, h_full));
              break;
            case CellType::gru:
              if (p.gru_lbr) {
                step(p, gru_forward<T>, extended_gru_forward<T>, ox,
                     gru_forward_args(p, rd, db, training, bs, r0, gates, y, hs));
              } else {
                step(p, gru_orig_forward<T>, extended_gru_orig_forward<T>, ox,
                     gru_orig_args(p, db, bs, u, gates, hs, y));
              }
              break;
          }
          break;
        case core::ForwardStage::projection_product:
          fw.hr.run(bs, h_full, H, false, y, DP, ap);
          break;
        case core::ForwardStage::projection:
          proj_forward(p.kernels<T>(),
                       proj_forward_args(p, rd, training, bs, r0, proj_clip, y, hs));
          break;
      }
    }
  }
  scatter_final_states(p, a, l, d, hs, db);
}

// The cell stage of a team time loop on one thread's tile: the fixed-cell kernel of the
// plan's table or the generic one (tile_step). The original GRU's cells take n's product u.
template <typename T>
void team_cell(const PlanSpec& p, const StepKernels<float>& kernels, const ExtendedCell<T>& o,
               const ReserveDir<T>& rd, const ForwardDirBuffers<T>& db, bool training, int64_t bs,
               int64_t r0, T* gates, const Clamp<T>& cell_clip, T* y, T* hs, T* h_full, T* u,
               Tile tile) {
  switch (p.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu:
      tile_step(p, kernels.rnn_forward, kernels.extended_rnn_forward, o,
                rnn_forward_args(p, db, bs, y, hs), tile);
      break;
    case CellType::lstm:
      tile_step(p, kernels.lstm_forward, kernels.extended_lstm_forward, o,
                lstm_forward_args(p, rd, db, training, bs, r0, gates, cell_clip, y, hs, h_full),
                tile);
      break;
    case CellType::gru:
      if (p.gru_orig()) {
        tile_step(p, kernels.gru_orig_forward, kernels.extended_gru_orig_forward, o,
                  gru_orig_args(p, db, bs, u, gates, hs, y), tile);
      } else {
        tile_step(p, kernels.gru_forward, kernels.extended_gru_forward, o,
                  gru_forward_args(p, rd, db, training, bs, r0, gates, y, hs), tile);
      }
      break;
  }
}

// The time loop of one direction as one parallel region for all its steps (every cell; fixed
// cells or ONNX's options): each thread owns
// the same cells of every gate, computes their columns of the step's products on its share of
// the packed weights (which stays in its core's cache), runs the step kernel on them, and packs
// its columns of the new state as the next step's left operand; one barrier per step. With a
// projection the state is r = h_full W_hr^T, whose product needs every cell's h_full: each
// thread packs its cells' columns of h_full, and after a second barrier computes its own
// columns of r (whole panels of W_hr, its share of those weights staying in its cache too),
// clips them, and packs them as the next step's left operand. The original GRU likewise:
// n needs (r * h) W_hn^T over every cell's r * h, packed by each thread for its cells, and
// after a second barrier each computes its cells' columns of that product.
template <typename T>
void forward_time_loop_team(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                            const InputRows<T>& X, const InputGates<T>& g, T* Y,
                            const ReserveDir<T>& rd, bool training, const ForwardDirBuffers<T>& db,
                            int threads) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P, GH = p.GH, DP = p.DP, I = p.input_width(l);
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  combine_biases(p, w, po, db.bias);
  const ForwardWeights<T> fw =
      bind_forward_weights(p, w, po, I, weight_packs(p, l, d, db), p.step_input_steps > 0);
  const PackedType type = p.packed_type();
  const bool orig = p.gru_orig();
  const PackedB w_hh =
      orig ? PackedB{fw.hh.packed(), P, 2 * H, 2, type} : PackedB{fw.hh.packed(), P, GH, p.G, type};
  const PackedB w_hn{orig ? fw.hh_n.packed() : nullptr, H, H, 1, type};
  const PackedB w_ih{fw.ih.packed(), I, GH, p.G, type};
  const bool proj = p.proj;
  const PackedB w_hr{proj ? fw.hr.packed() : nullptr, H, P, 1, type};
  gather_initial_states(p, a, l, d, db);
  T* hs = db.h_state;
  const Clamp<T> cell_clip(p.config().cell_clip, p.config().clip_nan);
  const Clamp<T> proj_clip(p.config().proj_clip, p.config().clip_nan);
  const StepKernels<float>& kernels = p.kernels<float>();
  const ExtendedCell<T> ox = extended_cell_of(p, w, po, d);
  const int64_t cell_panels = w_hh.panels_per_block();
  const int64_t state_panels = proj ? w_hr.panels_per_block() : cell_panels;
  const int64_t x_units = (I + 15) / 16;  // the input's columns, packed 16 at a time
  const bool rev = p.reversed(d);
  auto time_of = [&](int64_t k) { return rev ? p.T_eff - 1 - k : k; };

  TeamBarrier barrier;
  if (p.T_eff > 0)
    parallel_region(threads, [&](int th, int n) {
      const TeamShare share(cell_panels, H, th, n);
      const int64_t q0 = share.q0, q1 = share.q1, j0 = share.j0, j1 = share.j1;
      // The columns of the state this thread computes: its cells', or with a projection its
      // panels of W_hr's.
      const TeamShare state(state_panels, P, th, n);
      const int64_t x0 = std::min(I, x_units * th / n * 16);
      const int64_t x1 = std::min(I, x_units * (th + 1) / n * 16);
      // This thread's columns of step k's left operands: the state (its columns) and the input.
      auto pack_operands = [&](int64_t k) {
        const int64_t t = time_of(k), bs = s.batch_sizes[t], buf = k & 1;
        pack_a_columns(bs, P, hs, P, state.j0, state.j1, db.ah_pack[buf], type);
        if (t < p.step_input_steps) {
          pack_a_columns(bs, I, X.at(s.offsets[t]), I, x0, x1, db.ax_pack[buf], type,
                         X.map_at(s.offsets[t]));
        }
      };
      pack_operands(0);
      barrier.wait(n);
      for (int64_t k = 0; k < p.T_eff; ++k) {
        const int64_t t = time_of(k), bs = s.batch_sizes[t], r0 = s.offsets[t], buf = k & 1;
        T* y = Y + r0 * DP + d * P;
        T* gates = g.at(r0);
        if (t < p.step_input_steps) {
          multiply_panel_range(bs, db.ax_pack[buf], w_ih, q0, q1, false, gates, g.ld);
        }
        const Tile tile{0, bs, j0, j1};
        // LSTMP: the cells' h_full goes to the reserve (training) or scratch; r lands in y.
        T* h_full = !proj ? nullptr : training ? rd.h_full + r0 * H : db.scratch;
        T* rh = !orig ? nullptr : training ? rd.hn + r0 * H : db.scratch;  // original GRU's r * h
        T* u = orig ? db.hg + 2 * H : nullptr;                             // and its (r * h) W_hn^T
        ExtendedCell<T> o = ox;
        if (p.extended_cell) {
          o.gate_pass = training && rd.gate_pass ? rd.gate_pass + r0 * GH : nullptr;
          o.pre = p.is_rnn() && training ? gates : nullptr;
        }
        const std::vector<core::ForwardStage>& stages = p.stages.forward;
        for (size_t i = 0; i < stages.size(); ++i) {
          const core::ForwardStage stage = stages[i];
          if (core::reads_every_cell(stage)) barrier.wait(n);  // every cell's operand packed
          switch (stage) {
            case core::ForwardStage::recurrent_product:
              multiply_panel_range(bs, db.ah_pack[buf], w_hh, q0, q1, false, db.hg, GH);
              break;
            case core::ForwardStage::reset_gates:
              if (j0 < j1) {
                tile_step(p, kernels.gru_orig_gates_forward,
                          kernels.extended_gru_orig_gates_forward, o,
                          gru_orig_gates_args(p, db, bs, gates, hs, rh), tile);
              }
              break;
            case core::ForwardStage::reset_product:
              multiply_panel_range(bs, db.a_pack, w_hn, q0, q1, false, u, GH);
              break;
            case core::ForwardStage::cell:
              if (j0 < j1)
                team_cell(p, kernels, o, rd, db, training, bs, r0, gates, cell_clip, y, hs, h_full,
                          u, tile);
              break;
            case core::ForwardStage::projection_product:
              multiply_panel_range(bs, db.a_pack, w_hr, state.q0, state.q1, false, y, DP);
              break;
            case core::ForwardStage::projection:
              if (state.j0 < state.j1) {
                kernels.proj_forward(proj_forward_args(p, rd, training, bs, r0, proj_clip, y, hs),
                                     Tile{0, bs, state.j0, state.j1});
              }
              break;
          }
          // The next stage multiplies every cell's output of this one (r * h, or h_full): this
          // thread packs its cells' columns of it.
          if (i + 1 < stages.size() && core::reads_every_cell(stages[i + 1]) && j0 < j1) {
            T* out = stage == core::ForwardStage::reset_gates ? rh : h_full;
            pack_a_columns(bs, H, out, H, j0, j1, db.a_pack, type);
          }
        }
        if (k + 1 < p.T_eff) pack_operands(k + 1);
        barrier.wait(n);
      }
    });
  scatter_final_states(p, a, l, d, hs, db);
}

}  // namespace

template <typename T>
void run_forward(const PlanSpec& p, const ForwardArgs& a, void* workspace, T* const* kept) {
  const core::Schedule& s = p.schedule();
  const bool training = a.training;
  ForwardBuffers<T> buf;
  carve_forward<T>(p, training, workspace, &buf);
  for (ForwardDirBuffers<T>& db : buf.dir) db.kept = kept;

  InputRows<T> X{static_cast<const T*>(a.x), p.I0};
  if (!p.rows_in_place) {
    if (p.packed_engine()) {
      X.map = p.caller_rows.data();  // the packers read the caller's rows: no copy
    } else {
      gather_rows_parallel(p.shape(), s, X.x, buf.x, p.I0);
      X.x = buf.x;
    }
  }
  T* Y = nullptr;
  for (int64_t l = 0; l < p.L; ++l) {
    const bool top = l == p.L - 1;
    ReserveLayer<T> res;
    if (training) {
      res = reserve_layer<T>(p, a.reserve, l);
      Y = res.y;
    } else {
      Y = top && p.rows_in_place ? static_cast<T*>(a.y) : buf.y[l % 2];
    }
    InputGates<T> g[2];
    for_each_direction(
        p,
        [&](int64_t d) {
          g[d] = input_gates(p, d, Y, res.dir[d], training, buf.dir[d]);
          bulk_input_projection(p, a, l, d, X, g[d], buf.gemm_scratch);
        },
        [&](int64_t d) {
          run_time_loop<T>(
              p,
              [&](auto threads) {  // generic: compiled for float32 only (run_time_loop)
                forward_time_loop_team(p, a, l, d, X, g[d], Y, res.dir[d], training, buf.dir[d],
                                       threads);
              },
              [&] { forward_time_loop(p, a, l, d, X, g[d], Y, res.dir[d], training, buf.dir[d]); });
        },
        [](int64_t) {});
    X = {Y, p.DP};
    if (training && p.dropout_after(l)) {
      // The undropped output stays in y: it holds the recurrent states backward needs.
      std::memcpy(res.y_dropped, Y, sizeof(T) * p.N * p.DP);
      const core::DropoutKey key{p.config().seed, a.dropout_counter, l, p.dropout};
      dropout_rows_parallel(key, s, p.DP, res.y_dropped);
      X = {res.y_dropped, p.DP};
    }
  }
  if (Y != a.y) {
    scatter_rows_parallel(p.shape(), s, static_cast<const T*>(Y), static_cast<T*>(a.y), p.DP,
                          static_cast<T>(p.config().padding_fill));
  }
}

template void run_forward<float>(const PlanSpec&, const ForwardArgs&, void*, float* const*);
template void run_forward<double>(const PlanSpec&, const ForwardArgs&, void*, double* const*);

}  // namespace rnnx::cpu
