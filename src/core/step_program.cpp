// Builds the own path's programs (step_program.hpp). The algorithm is the cpu backend's:
// sorted sequences, so that a step's active rows are the first batch_sizes[t] rows of the
// state and a contiguous block of packed rows; one state buffer per layer and direction that
// starts as h0 (c0) and that each step updates on its active rows only, so that it ends as
// every sequence's final state, also for the reverse direction and for length 0.
#include "core/step_program.hpp"

#include "core/direction.hpp"
#include "core/dropout.hpp"
#include "core/step_stages.hpp"
#include "core/weight_gradients.hpp"
#include "rnnx/error.hpp"

namespace rnnx::core {
namespace {

// Hands out regions of one buffer; rounded to 16 elements so that every region stays 64-byte
// aligned in every data type.
class Arena {
 public:
  explicit Arena(Buf buf) : buf_(buf) {}
  Ref take(int64_t elems) {
    const Ref r{buf_, used_};
    used_ += (elems + 15) / 16 * 16;
    return r;
  }
  int64_t used() const { return used_; }

 private:
  Buf buf_;
  int64_t used_ = 0;
};

CellOp cell_op(CellKind kind, int64_t direction, int64_t rows) {
  CellOp op;
  op.kind = kind;
  op.direction = direction;
  op.rows = rows;
  return op;
}

// What a training forward keeps per layer (y) and per layer and direction (the rest).
struct Records {
  struct PerDirection {
    Ref a, c_prev, h_prev, hraw, praw;
  };
  std::vector<Ref> y;
  std::vector<PerDirection> dir;
};

class Builder {
 public:
  Builder(const Config& c, const Schedule& s, const WeightLayout& w)
      : c_(c), s_(s), w_(w), d_(step_dims(c)), N_(s.tokens), step_(step_stages(c)) {
    lstm_ = c.cell == CellType::lstm;
    gru_ = c.cell == CellType::gru;
    gru_original_ = gru_ && !c.gru_linear_before_reset;
    proj_ = c.proj_size > 0;
    Arena reserve(Buf::reserve);
    for (int64_t l = 0; l < d_.L; ++l) {
      rec_.y.push_back(reserve.take(N_ * d_.DP()));
      for (int64_t d = 0; d < d_.D; ++d) {
        Records::PerDirection r;
        r.a = reserve.take(N_ * d_.record_width(c.cell));
        if (lstm_) r.c_prev = reserve.take(N_ * d_.H);
        r.h_prev = reserve.take(N_ * d_.P);
        if (proj_) r.hraw = reserve.take(N_ * d_.H);
        if (proj_ && c.proj_clip.enabled) r.praw = reserve.take(N_ * d_.P);
        rec_.dir.push_back(r);
      }
    }
    reserve_ = reserve.used();
  }

  int64_t reserve() const { return reserve_; }
  StepProgram forward(bool training);
  StepProgram backward();

 private:
  Ref weight(int64_t l, int64_t d, WeightKind kind) const {
    const WeightParam* p = w_.get(l, d, kind);
    return p ? Ref{Buf::weights, p->offset} : Ref{};
  }
  Ref dweight(int64_t l, int64_t d, WeightKind kind) const {
    const WeightParam* p = w_.get(l, d, kind);
    return p ? Ref{Buf::dweights, p->offset} : Ref{};
  }
  int64_t layer_input(int64_t l) const { return l == 0 ? c_.input_size : d_.DP(); }
  // Whether direction d runs from each sequence's end.
  bool reversed(int64_t d) const { return direction_reversed(c_, d); }
  // The steps of direction d in the order it runs them (backward: reverse this).
  std::vector<int64_t> steps(int64_t d) const {
    std::vector<int64_t> order;
    for (int64_t k = 0; k < s_.T_eff; ++k) order.push_back(reversed(d) ? s_.T_eff - 1 - k : k);
    return order;
  }
  void gemm(std::vector<StepOp>& ops, GemmOp g) const {
    if (g.m > 0 && g.n > 0 && g.k > 0) ops.emplace_back(g);
  }
  // C[m, n] = A[m, k] B'[k, n] + beta C, B' = B or, b_transposed, B stored [n, k] transposed.
  void multiply(std::vector<StepOp>& ops, int64_t m, int64_t n, int64_t k, Ref a, int64_t lda,
                Ref b, int64_t ldb, bool b_transposed, double beta, Ref c, int64_t ldc) const {
    gemm(ops, {.trans_b = b_transposed,
               .m = m,
               .n = n,
               .k = k,
               .a = a,
               .lda = lda,
               .b = b,
               .ldb = ldb,
               .beta = beta,
               .c = c,
               .ldc = ldc});
  }
  // A weight gradient over all tokens: C[m, n] += A^T B, A [tokens, m], B [tokens, n].
  void over_tokens(std::vector<StepOp>& ops, Ref a, int64_t lda, int64_t m, Ref b, int64_t ldb,
                   int64_t n, Ref c, int64_t ldc) const {
    gemm(ops, {.trans_a = true,
               .m = m,
               .n = n,
               .k = N_,
               .a = a,
               .lda = lda,
               .b = b,
               .ldb = ldb,
               .beta = 1,
               .c = c,
               .ldc = ldc});
  }
  // A bias (or peephole) gradient: v[n] += the column sums of A [tokens, n] (and also[n]).
  void column_sums(std::vector<StepOp>& ops, Ref a, int64_t n, Ref v, Ref also = {}) const {
    ops.emplace_back(ColumnSumsOp{.src = a, .rows = N_, .width = n, .dst = v, .also = also});
  }

  const Config& c_;
  const Schedule& s_;
  const WeightLayout& w_;
  StepDims d_;
  int64_t N_;
  StepStages step_;
  bool lstm_ = false, gru_ = false, gru_original_ = false, proj_ = false;
  Records rec_;
  int64_t reserve_ = 0;
};

StepProgram Builder::forward(bool training) {
  StepProgram p;
  Arena ws(Buf::workspace);
  const int64_t H = d_.H, P = d_.P, GH = d_.GH(), DP = d_.DP(), B = s_.B, LD = d_.L * d_.D;
  const int64_t RW = d_.record_width(c_.cell);
  p.h_state = ws.take(LD * B * P);
  if (lstm_) p.c_state = ws.take(LD * B * H);
  if (N_ == 0) {  // every sequence has length 0: the states stay as they are
    p.workspace = ws.used();
    return p;
  }
  const Ref G = ws.take(N_ * GH), R = ws.take(B * GH);
  const Ref step_hraw = proj_ && !training ? ws.take(B * H) : Ref{};
  const Ref rh = gru_original_ ? ws.take(B * H) : Ref{};
  Ref rows[2];
  if (!training) rows[0] = ws.take(N_ * DP), rows[1] = d_.L > 1 ? ws.take(N_ * DP) : Ref{};
  const bool dropout = training && dropout_between_layers(c_);
  const Ref dropped = dropout ? ws.take(N_ * DP) : Ref{};

  Ref in{Buf::input, 0};
  for (int64_t l = 0; l < d_.L; ++l) {
    const int64_t I = layer_input(l);
    const Ref out = training ? rec_.y[l] : rows[l % 2];
    for (int64_t d = 0; d < d_.D; ++d) {
      const int64_t ld = l * d_.D + d;
      const Records::PerDirection& rec = rec_.dir[ld];
      const Ref w_hh = weight(l, d, WeightKind::w_hh), w_hr = weight(l, d, WeightKind::w_hr);
      multiply(p.ops, N_, GH, I, in, I, weight(l, d, WeightKind::w_ih), I, true, 0.0, G, GH);
      const Ref hs = p.h_state.plus(ld * B * P);
      const Ref cs = lstm_ ? p.c_state.plus(ld * B * H) : Ref{};
      for (int64_t t : steps(d)) {
        const int64_t n = s_.batch_sizes[t], off = s_.offsets[t];
        auto tok = [&](Ref r, int64_t width) { return r ? r.plus(off * width) : r; };
        // What every cell op of the step reads: the gates' products, the biases, the state.
        CellRefs base;
        base.g = tok(G, GH);
        base.r = R;
        base.b_ih = weight(l, d, WeightKind::b_ih);
        base.b_hh = weight(l, d, WeightKind::b_hh);
        base.hs = hs;
        CellOp cell = cell_op(lstm_  ? CellKind::lstm_forward
                              : gru_ ? CellKind::gru_forward
                                     : CellKind::rnn_forward,
                              d, n);
        cell.at = base;
        CellRefs& a = cell.at;
        a.cs = cs;
        a.y = out.plus(off * DP + d * P);
        a.peep = weight(l, d, WeightKind::w_peephole);
        if (training) {
          a.rec_a = tok(rec.a, RW);
          a.rec_c = tok(rec.c_prev, H);
          a.rec_h = tok(rec.h_prev, P);
        }
        if (proj_) a.hraw = training ? tok(rec.hraw, H) : step_hraw;
        // The stages of a step (core/step_stages.hpp).
        for (const ForwardStage stage : step_.forward) {
          switch (stage) {
            case ForwardStage::recurrent_product:
              multiply(p.ops, n, step_.recurrent_columns, P, hs, P, w_hh, P, true, 0.0, R, GH);
              break;
            case ForwardStage::reset_gates: {
              CellOp reset = cell_op(CellKind::gru_reset_forward, d, n);
              reset.at = base;
              reset.at.rh = rh;
              p.ops.emplace_back(reset);
              break;
            }
            case ForwardStage::reset_product:
              multiply(p.ops, n, H, H, rh, H, w_hh.plus(2 * H * P), P, true, 0.0, R.plus(2 * H),
                       GH);
              break;
            case ForwardStage::cell:
              p.ops.emplace_back(cell);
              break;
            case ForwardStage::projection_product:
              multiply(p.ops, n, P, H, a.hraw, H, w_hr, H, true, 0.0, a.y, DP);
              break;
            case ForwardStage::projection: {
              CellOp project = cell_op(CellKind::project_forward, d, n);
              project.at.y = a.y;
              project.at.hs = hs;
              if (training) project.at.praw = tok(rec.praw, P);
              p.ops.emplace_back(project);
              break;
            }
          }
        }
      }
    }
    in = out;
    if (training && dropout_after_layer(c_, l)) {
      p.ops.emplace_back(CopyOp{.src = out, .dst = dropped, .count = N_ * DP});
      p.ops.emplace_back(DropoutOp{.data = dropped, .width = DP, .layer = l});
      in = dropped;
    }
  }
  p.rows_out = in;
  p.workspace = ws.used();
  return p;
}

StepProgram Builder::backward() {
  StepProgram p;
  Arena ws(Buf::workspace);
  const int64_t H = d_.H, P = d_.P, GH = d_.GH(), DP = d_.DP(), B = s_.B, LD = d_.L * d_.D;
  const int64_t RW = d_.record_width(c_.cell);
  p.h_state = ws.take(LD * B * P);
  if (lstm_) p.c_state = ws.take(LD * B * H);
  if (N_ == 0) {  // dh0 = dhy, dc0 = dcy; no weight gradient
    p.workspace = ws.used();
    return p;
  }
  const Ref dy_rows[2] = {ws.take(N_ * DP), d_.L > 1 ? ws.take(N_ * DP) : Ref{}};
  p.dy = dy_rows[(d_.L - 1) % 2];
  p.dx = ws.take(N_ * c_.input_size);
  const Ref dgx = ws.take(N_ * GH);
  const Ref dgh = gru_ ? ws.take(N_ * GH) : dgx;
  const Ref dpeep = c_.peephole ? ws.take(N_ * 3 * H) : Ref{};
  const Ref dhr = proj_ ? ws.take(N_ * P) : Ref{};
  const Ref dh = proj_ ? ws.take(B * H) : Ref{};
  const Ref rh = gru_original_ ? ws.take(N_ * H) : Ref{};
  const Ref drh = gru_original_ ? ws.take(B * H) : Ref{};
  const Ref dropped = dropout_between_layers(c_) ? ws.take(N_ * DP) : Ref{};

  for (int64_t l = d_.L; l-- > 0;) {
    const int64_t I = layer_input(l);
    Ref in{Buf::input, 0};
    if (l > 0) {
      in = rec_.y[l - 1];
      if (dropout_after_layer(c_, l - 1)) {  // the masked input this layer saw, made again
        p.ops.emplace_back(CopyOp{.src = in, .dst = dropped, .count = N_ * DP});
        p.ops.emplace_back(DropoutOp{.data = dropped, .width = DP, .layer = l - 1});
        in = dropped;
      }
    }
    const Ref dy = dy_rows[l % 2];
    const Ref din = l == 0 ? p.dx : dy_rows[(l - 1) % 2];
    for (int64_t d = 0; d < d_.D; ++d) {
      const int64_t ld = l * d_.D + d;
      const Records::PerDirection& rec = rec_.dir[ld];
      const Ref w_hh = weight(l, d, WeightKind::w_hh), w_hr = weight(l, d, WeightKind::w_hr);
      const Ref dhs = p.h_state.plus(ld * B * P);
      const Ref dcs = lstm_ ? p.c_state.plus(ld * B * H) : Ref{};
      std::vector<int64_t> order = steps(d);
      for (size_t k = order.size(); k-- > 0;) {
        const int64_t t = order[k];
        const int64_t n = s_.batch_sizes[t], off = s_.offsets[t];
        auto tok = [&](Ref r, int64_t width) { return r ? r.plus(off * width) : r; };
        CellOp cell = cell_op(lstm_  ? CellKind::lstm_backward
                              : gru_ ? CellKind::gru_backward
                                     : CellKind::rnn_backward,
                              d, n);
        CellRefs& a = cell.at;
        a.dy = dy.plus(off * DP + d * P);
        a.dhs = dhs;
        if (proj_) a.dh = dh;  // the projection's product leaves the cell's gradient there
        a.rec_a = tok(rec.a, RW);
        a.rec_c = tok(rec.c_prev, H);
        a.rec_h = tok(rec.h_prev, P);
        a.peep = weight(l, d, WeightKind::w_peephole);
        a.dcs = dcs;
        a.dgx = tok(dgx, GH);
        a.dgh = tok(dgh, GH);
        a.dpeep = tok(dpeep, 3 * H);
        a.rh = tok(rh, H);
        // The stages of a step (core/step_stages.hpp).
        for (const BackwardStage stage : step_.backward) {
          switch (stage) {
            case BackwardStage::projection: {
              CellOp project = cell_op(CellKind::project_backward, d, n);
              project.at.dy = a.dy;
              project.at.dhs = dhs;
              project.at.praw = tok(rec.praw, P);
              project.at.dhr = tok(dhr, P);
              p.ops.emplace_back(project);
              break;
            }
            case BackwardStage::projection_product:
              multiply(p.ops, n, H, P, tok(dhr, P), P, w_hr, H, false, 0.0, dh, H);
              break;
            case BackwardStage::cell:
              p.ops.emplace_back(cell);
              break;
            case BackwardStage::reset_product:
              multiply(p.ops, n, H, H, a.dgh.plus(2 * H), GH, w_hh.plus(2 * H * P), P, false, 0.0,
                       drh, H);
              break;
            case BackwardStage::reset_gates: {
              CellOp reset = cell;
              reset.kind = CellKind::gru_reset_backward;
              reset.at.drh = drh;
              p.ops.emplace_back(reset);
              break;
            }
            case BackwardStage::recurrent_product:
              // dh_prev = dG_h W_hh: overwrites the rows' state gradient (LSTM, RNN) or adds to
              // the direct part dh * z the GRU kernel left there.
              multiply(p.ops, n, P, step_.recurrent_columns, a.dgh, GH, w_hh, P, false,
                       gru_ ? 1.0 : 0.0, dhs, P);
              break;
          }
        }
      }
      // Weight gradients over all tokens (core/weight_gradients.hpp), then the layer input's
      // gradient.
      const auto rows_of = [&](TokenRows rows) {
        switch (rows) {
          case TokenRows::gates_grad:
            return dgx;
          case TokenRows::hidden_gates_grad:
            return dgh;
          case TokenRows::proj_grad:
            return dhr;
          case TokenRows::layer_input:
            return in;
          case TokenRows::prev_state:
            return rec.h_prev;
          case TokenRows::reset_state:
            return rh;
          case TokenRows::proj_input:
            return rec.hraw;
        }
        return Ref{};
      };
      const auto width = [&](TokenRows rows) { return token_rows_width(c_, I, rows); };
      const WeightGradients grads = weight_gradients(c_, I);
      for (const TokenProduct& g : grads.products) {
        over_tokens(p.ops, rows_of(g.lhs).plus(g.lhs_col0), width(g.lhs), g.m, rows_of(g.rhs),
                    width(g.rhs), g.n, dweight(l, d, g.weight).plus(g.row0 * g.n), g.n);
      }
      // Entries over the same rows (b_ih and b_hh but for linear-before-reset GRU) share
      // one pass over them.
      for (size_t k = 0; k < grads.sums.size(); ++k) {
        const TokenColumnSums& g = grads.sums[k];
        const bool pair = k + 1 < grads.sums.size() && grads.sums[k + 1].rows == g.rows &&
                          grads.sums[k + 1].width == g.width;
        column_sums(p.ops, rows_of(g.rows), g.width, dweight(l, d, g.weight),
                    pair ? dweight(l, d, grads.sums[k + 1].weight) : Ref{});
        k += pair ? 1 : 0;
      }
      if (c_.peephole) {
        column_sums(p.ops, dpeep, 3 * H, dweight(l, d, WeightKind::w_peephole));
      }
      multiply(p.ops, N_, I, GH, dgx, GH, weight(l, d, WeightKind::w_ih), I, false,
               d == 0 ? 0.0 : 1.0, din, I);
    }
    if (l > 0 && dropout_after_layer(c_, l - 1)) {
      p.ops.emplace_back(DropoutOp{.data = din, .width = DP, .layer = l - 1});
    }
  }
  p.workspace = ws.used();
  return p;
}

}  // namespace

StepDims step_dims(const Config& c) {
  return {.H = c.hidden_size,
          .P = c.output_size(),
          .G = gates_per_cell(c.cell),
          .D = c.num_directions(),
          .L = c.num_layers};
}

StepPrograms build_step_programs(const Config& config, const Schedule& schedule,
                                 const WeightLayout& weights) {
  Builder b(config, schedule, weights);
  StepPrograms p;
  p.forward_training = b.forward(true);
  p.forward_inference = b.forward(false);
  p.backward = b.backward();
  p.reserve = b.reserve();
  return p;
}

}  // namespace rnnx::core
