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
#include "cpu/step_crew.hpp"
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

// `with_input`: W_ih^T too (the steps that project their input in the loop need it);
// `input_packed`: packs.ih holds it already (int8's bulk input projection packed it there).
template <typename T>
ForwardWeights<T> bind_forward_weights(const PlanSpec& p, const T* w, const ParamOffsets& po,
                                       int64_t I, const WeightPacks<T>& packs, bool with_input,
                                       bool input_packed = false) {
  const int64_t H = p.H, P = p.P;
  const bool pack = p.packed_engine();
  const bool pre = packs.prepacked;
  const GemmRoute r = p.gemm();
  T* wp = pack ? packs.hh : nullptr;
  ForwardWeights<T> fw;
  // Gate by gate (blocks = G), so that a thread of a team loop owns the same cells of every
  // gate.
  if (with_input) {
    fw.ih.bind(r, Op::T, w + po.w_ih, I, I, p.GH, pack ? packs.ih : nullptr, p.G,
               pre || input_packed);
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

// The input projection of the rows that are projected in bulk, as one GEMM. int8 multiplies
// by W_ih^T quantised once (a network's kept copy, or packed here into the direction's
// buffer, where the steps that project in the loop find it), its rows of x quantised per
// row in chunks of rows (packed_gemm), not by an all-token product that would quantise the
// weights again.
template <typename T>
void bulk_input_projection(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                           const InputRows<T>& X, const InputGates<T>& g, T* scratch,
                           const ForwardDirBuffers<T>& db) {
  const int64_t I = p.input_width(l), r0 = g.split_row;
  const T* w = static_cast<const T*>(a.weights);
  if (packs_s8(p.packed_type())) {
    const WeightPacks<T> packs = weight_packs(p, l, d, db);
    WeightGemm<T> ih;
    ih.bind(p.gemm(), Op::T, w + p.param(l, d).w_ih, I, I, p.GH, packs.ih, p.G, packs.prepacked);
    ih.run(p.N - r0, X.at(r0), I, false, g.at(r0), g.ld, scratch, X.map_at(r0));
    return;
  }
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
  const core::BatchMover mover = batch_mover<T>(p);
  const int64_t sd = (l * p.D + d) * p.B;  // first state row of this layer and direction
  mover.states_in(a.h0 ? static_cast<const T*>(a.h0) + sd * p.P : nullptr, db.h_state, p.P,
                  nullptr);
  if (p.cell == CellType::lstm) {
    mover.states_in(a.c0 ? static_cast<const T*>(a.c0) + sd * p.H : nullptr, db.c_state, p.H,
                    nullptr);
  }
}

// And its last ones, into the caller's hy (and cy): the time loops leave the rows of finished
// sequences alone, so hs holds each sequence's state after its own last step (h0 for length 0).
template <typename T>
void scatter_final_states(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                          const T* hs, const ForwardDirBuffers<T>& db) {
  const core::BatchMover mover = batch_mover<T>(p);
  const int64_t sd = (l * p.D + d) * p.B;
  if (a.hy) mover.states_out(hs, static_cast<T*>(a.hy) + sd * p.P, p.P, nullptr);
  if (a.cy) mover.states_out(db.c_state, static_cast<T*>(a.cy) + sd * p.H, p.H, nullptr);
}

// Everything one direction's forward loop reads, bound before it.
template <typename T>
struct ForwardLoop {
  const PlanSpec& p;
  const InputRows<T>& X;
  const InputGates<T>& g;
  T* Y;
  const ReserveDir<T>& rd;
  bool training;
  const ForwardDirBuffers<T>& db;
  int64_t d, I;
  Clamp<T> cell_clip, proj_clip;
  ExtendedCell<T> ox;
  // x W_ih^T (the steps that project their input in the loop), h W_hh^T (the original GRU's
  // r and z), (r * h) W_hn^T (its n), h_full W_hr^T (LSTMP).
  StepProduct<T> ih, hh, hn, hr;
};

// Step k of the loop: its time step, rows, first packed row, and where its rows are.
template <typename T>
struct ForwardStep {
  int64_t t, bs, r0, buf;  // buf: which of the team's double-buffered operands
  T* y;                    // the step's output rows, this direction's columns
  T* gates;                // where its input projection is (InputGates)
  // LSTMP: the cells' full-width h, in the reserve (training) or scratch; r = h_full W_hr^T
  // lands in y and becomes the state.
  T* h_full;
  T* rh;              // the original GRU's r * h, likewise
  T* u;               // and its (r * h) W_hn^T, beside r and z's products
  ExtendedCell<T> o;  // the cell's options with this step's gate_pass and pre
};

template <typename T>
ForwardStep<T> forward_step(const ForwardLoop<T>& f, int64_t k) {
  const PlanSpec& p = f.p;
  const core::Schedule& s = p.schedule();
  const int64_t t = p.reversed(f.d) ? p.T_eff - 1 - k : k;
  const int64_t r0 = s.offsets[t], H = p.H;
  ForwardStep<T> st{.t = t,
                    .bs = s.batch_sizes[t],
                    .r0 = r0,
                    .buf = k & 1,
                    .y = f.Y + r0 * p.DP + f.d * p.P,
                    .gates = f.g.at(r0),
                    .h_full = !p.proj      ? nullptr
                              : f.training ? f.rd.h_full + r0 * H
                                           : f.db.scratch,
                    .rh = !p.gru_orig() ? nullptr
                          : f.training  ? f.rd.hn + r0 * H
                                        : f.db.scratch,
                    .u = p.gru_orig() ? f.db.hg + 2 * H : nullptr,
                    .o = f.ox};
  if (p.extended_cell) {
    st.o.gate_pass = f.training && f.rd.gate_pass ? f.rd.gate_pass + r0 * p.GH : nullptr;
    st.o.pre = p.is_rnn() && f.training ? st.gates : nullptr;
  }
  return st;
}

// The cell stage, one function per cell, chosen once per loop (forward_cell).
template <typename T, typename Crew>
using ForwardCell = void (*)(const ForwardLoop<T>&, const Crew&, const ForwardStep<T>&);

template <typename T, typename Crew>
void rnn_cell(const ForwardLoop<T>& f, const Crew& crew, const ForwardStep<T>& st) {
  crew.kernel(rnn_forward_args(f.p, f.db, st.bs, st.y, f.db.h_state), st.o, Share::cells);
}
template <typename T, typename Crew>
void lstm_cell(const ForwardLoop<T>& f, const Crew& crew, const ForwardStep<T>& st) {
  crew.kernel(lstm_forward_args(f.p, f.rd, f.db, f.training, st.bs, st.r0, st.gates, f.cell_clip,
                                st.y, f.db.h_state, st.h_full),
              st.o, Share::cells);
}
template <typename T, typename Crew>
void gru_cell(const ForwardLoop<T>& f, const Crew& crew, const ForwardStep<T>& st) {
  crew.kernel(
      gru_forward_args(f.p, f.rd, f.db, f.training, st.bs, st.r0, st.gates, st.y, f.db.h_state),
      st.o, Share::cells);
}
template <typename T, typename Crew>
void gru_orig_cell(const ForwardLoop<T>& f, const Crew& crew, const ForwardStep<T>& st) {
  crew.kernel(gru_orig_args(f.p, f.db, st.bs, st.u, st.gates, f.db.h_state, st.y), st.o,
              Share::cells);
}

template <typename T, typename Crew>
ForwardCell<T, Crew> forward_cell(const PlanSpec& p) {
  return by_cell<ForwardCell<T, Crew>>(p, rnn_cell<T, Crew>, lstm_cell<T, Crew>, gru_cell<T, Crew>,
                                       gru_orig_cell<T, Crew>);
}

// The steps of one direction on `crew` (step_crew.hpp): per step the in-loop input projection,
// then the plan's stages (core/step_stages.hpp). A team packs the left operands of a product
// that reads every cell (the state, the input, r * h, h_full) before the barrier in front of
// it, each member its own columns; the state and input of step k + 1 while step k ends.
template <typename T, typename Crew>
void forward_steps(const ForwardLoop<T>& f, const Crew& crew) {
  const PlanSpec& p = f.p;
  const ForwardDirBuffers<T>& db = f.db;
  const int64_t H = p.H, P = p.P, GH = p.GH, DP = p.DP, I = f.I;
  T* hs = db.h_state;
  const ForwardCell<T, Crew> cell = forward_cell<T, Crew>(p);
  const std::vector<core::ForwardStage>& stages = p.stages.forward;
  auto pack_operands = [&](int64_t k) {
    const ForwardStep<T> st = forward_step(f, k);
    crew.pack(st.bs, P, hs, P, Share::state, 0, db.ah_pack[st.buf]);
    if (st.t < p.step_input_steps) {
      crew.pack(st.bs, I, f.X.at(st.r0), I, Share::input, 0, db.ax_pack[st.buf], f.X.map_at(st.r0));
    }
  };
  if constexpr (Crew::team) {
    pack_operands(0);
    crew.sync();
  }
  for (int64_t k = 0; k < p.T_eff; ++k) {
    const ForwardStep<T> st = forward_step(f, k);
    const int64_t bs = st.bs;
    if (st.t < p.step_input_steps) {
      crew.multiply(f.ih, bs, f.X.at(st.r0), I, db.ax_pack[st.buf], false, st.gates, f.g.ld,
                    f.X.map_at(st.r0));
    }
    for (size_t i = 0; i < stages.size(); ++i) {
      const core::ForwardStage stage = stages[i];
      if (core::reads_every_cell(stage)) crew.sync();  // every member's operand packed
      switch (stage) {
        case core::ForwardStage::recurrent_product:
          crew.multiply(f.hh, bs, hs, P, db.ah_pack[st.buf], false, db.hg, GH);
          break;
        case core::ForwardStage::reset_gates:
          crew.kernel(gru_orig_gates_args(p, db, bs, st.gates, hs, st.rh), st.o, Share::cells);
          break;
        case core::ForwardStage::reset_product:
          crew.multiply(f.hn, bs, st.rh, H, db.a_pack, false, st.u, GH);
          break;
        case core::ForwardStage::cell:
          cell(f, crew, st);
          break;
        case core::ForwardStage::projection_product:
          crew.multiply(f.hr, bs, st.h_full, H, db.a_pack, false, st.y, DP);
          break;
        case core::ForwardStage::projection:
          crew.kernel(proj_forward_args(p, f.rd, f.training, bs, st.r0, f.proj_clip, st.y, hs),
                      st.o, Share::state);
          break;
      }
      // The next stage multiplies every cell's output of this one (r * h, or h_full).
      if (i + 1 < stages.size() && core::reads_every_cell(stages[i + 1])) {
        T* out = stage == core::ForwardStage::reset_gates ? st.rh : st.h_full;
        crew.pack(bs, H, out, H, Share::cells, 0, db.a_pack);
      }
    }
    if constexpr (Crew::team) {
      if (k + 1 < p.T_eff) pack_operands(k + 1);
      crew.sync();
    }
  }
}

// The time loop of one layer and direction, after the bulk input projection: its weights,
// biases and first states bound, its steps on the plan's crew, its last states out.
template <typename T>
void forward_time_loop(const PlanSpec& p, const ForwardArgs& a, int64_t l, int64_t d,
                       const InputRows<T>& X, const InputGates<T>& g, T* Y, const ReserveDir<T>& rd,
                       bool training, const ForwardDirBuffers<T>& db) {
  const int64_t I = p.input_width(l);
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  combine_biases(p, w, po, db.bias);
  const ForwardWeights<T> fw = bind_forward_weights(
      p, w, po, I, weight_packs(p, l, d, db), p.step_input_steps > 0, packs_s8(p.packed_type()));
  gather_initial_states(p, a, l, d, db);
  const Config& c = p.config();
  const ForwardLoop<T> f{.p = p,
                         .X = X,
                         .g = g,
                         .Y = Y,
                         .rd = rd,
                         .training = training,
                         .db = db,
                         .d = d,
                         .I = I,
                         .cell_clip = Clamp<T>(c.cell_clip, c.clip_nan),
                         .proj_clip = Clamp<T>(c.proj_clip, c.clip_nan),
                         .ox = extended_cell_of(p, w, po, d),
                         .ih = step_product(fw.ih, Share::cells),
                         .hh = step_product(fw.hh, Share::cells),
                         .hn = step_product(fw.hh_n, Share::cells),
                         .hr = step_product(fw.hr, Share::state)};
  // A team member's cells: whole panels of each gate's block of W_hh^T; its state columns:
  // with a projection whole panels of W_hr^T's, else its cells.
  const int64_t cell_panels = f.hh.packed.panels_per_block();
  const int64_t state_panels = p.proj ? f.hr.packed.panels_per_block() : cell_panels;
  run_steps<T>(p, cell_panels, state_panels, I, db.a_pack,
               [&](const auto& crew) { forward_steps(f, crew); });
  scatter_final_states(p, a, l, d, db.h_state, db);
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
      X.x = static_cast<const T*>(batch_mover<T>(p).rows_in(X.x, buf.x, p.I0, nullptr));
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
          bulk_input_projection(p, a, l, d, X, g[d], buf.gemm_scratch, buf.dir[d]);
        },
        [&](int64_t d) {
          forward_time_loop(p, a, l, d, X, g[d], Y, res.dir[d], training, buf.dir[d]);
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
  if (Y != a.y) batch_mover<T>(p).rows_out(Y, a.y, p.DP, p.config().padding_fill, nullptr);
}

template void run_forward<float>(const PlanSpec&, const ForwardArgs&, void*, float* const*);
template void run_forward<double>(const PlanSpec&, const ForwardArgs&, void*, double* const*);

}  // namespace rnnx::cpu
