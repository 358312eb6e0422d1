// Invariants of the contract, for every backend: a sequence's results do not depend on the
// rest of the batch, its position, the padding content or the layout; fixed values at
// padding and for empty sequences; the reverse direction is the forward direction of the
// reversed sequence; hy is the last output; backward reads only its own reserve.
#include <gtest/gtest.h>

#include <thread>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using Param = BackendParam;

// A handful of configs that between them have every cell variant, projection, clipping,
// bias on/off, 1-3 layers and both directions, and ONNX's options: a reverse network and
// peepholes with the gate clip and other activations.
std::vector<Config> configs(DataType dt) {
  std::vector<Config> v;
  v.push_back(make_config(CellType::rnn_relu, 5, 7, 2, true, dt));
  Config lstmp = make_config(CellType::lstm, 6, 9, 2, true, dt, 4);
  lstmp.cell_clip = {true, -0.4, 0.45};
  lstmp.proj_clip = {true, -0.06, 0.05};
  v.push_back(lstmp);
  v.push_back(make_config(CellType::gru, 4, 6, 1, false, dt));
  Config gru_orig = make_config(CellType::gru, 3, 5, 3, true, dt, 0, false);
  gru_orig.bias = false;
  v.push_back(gru_orig);
  v.push_back(make_config(CellType::rnn_tanh, 4, 3, 1, true, dt));
  v.push_back(make_config(CellType::lstm, 7, 5, 1, false, dt));
  Config rev = make_config(CellType::gru, 5, 6, 2, false, dt);
  rev.reverse = true;
  v.push_back(rev);
  Config peep = make_config(CellType::lstm, 4, 6, 1, true, dt);
  peep.peephole = true;
  peep.gate_clip = 0.6;
  peep.activations = {
      {ActivationKind::hard_sigmoid, 0.3, 0.5}, {ActivationKind::softsign}, {ActivationKind::tanh}};
  v.push_back(peep);
  return v;
}

// State tensor [L*D][B][width] -> the rows of batch entry b, [L*D][width].
std::vector<double> state_of(const Buf& s, const Config& c, int64_t B, int64_t width, int64_t b) {
  std::vector<double> r;
  if (!s.present()) return r;
  for (int64_t ld = 0; ld < state_rows(c); ++ld)
    for (int64_t j = 0; j < width; ++j) r.push_back(s.get((ld * B + b) * width + j));
  return r;
}

std::vector<double> flat(const Seqs& s, int64_t b) {
  return s[b];
}

std::vector<double> slice(const Buf& s, int64_t begin, int64_t n) {
  std::vector<double> r(n);
  for (int64_t i = 0; i < n; ++i) r[i] = s.get(begin + i);
  return r;
}

class Invariants : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { RNNX_SKIP_UNLESS_AVAILABLE(GetParam().backend); }
  PlanOptions opts() const { return backend_options(GetParam().backend); }
  Plan plan(const Config& c, const SequenceShape& s) const { return Plan(c, s, opts()); }
  static RunOptions backward() {
    RunOptions o;
    o.backward = true;
    return o;
  }
};

// Compares per-sequence results of batch entry `b` of (gb, rb) with entry `k` of (gk, rk).
void expect_sequence_equal(const Config& c, const Geometry& gb, const Results& rb, int64_t b,
                           const Geometry& gk, const Results& rk, int64_t k, double tol_f,
                           double tol_b) {
  const int64_t W = out_width(c), I = c.input_size, P = c.output_size(), H = c.hidden_size;
  EXPECT_TRUE(
      near_values("y", flat(read_seqs(gk, rk.y, W), k), flat(read_seqs(gb, rb.y, W), b), tol_f));
  EXPECT_TRUE(
      near_values("hy", state_of(rk.hy, c, gk.B, P, k), state_of(rb.hy, c, gb.B, P, b), tol_f));
  if (is_lstm(c)) {
    EXPECT_TRUE(
        near_values("cy", state_of(rk.cy, c, gk.B, H, k), state_of(rb.cy, c, gb.B, H, b), tol_f));
  }
  if (rb.dx.present()) {
    EXPECT_TRUE(near_values("dx", flat(read_seqs(gk, rk.dx, I), k),
                            flat(read_seqs(gb, rb.dx, I), b), tol_b));
    EXPECT_TRUE(near_values("dh0", state_of(rk.dh0, c, gk.B, P, k), state_of(rb.dh0, c, gb.B, P, b),
                            tol_b));
    if (is_lstm(c)) {
      EXPECT_TRUE(near_values("dc0", state_of(rk.dc0, c, gk.B, H, k),
                              state_of(rb.dc0, c, gb.B, H, b), tol_b));
    }
  }
}

// A sequence alone (B = 1) equals the same sequence inside a batch, at every position,
// whatever the padding holds (NaN in the batch, huge values alone); the weight gradient
// of the batch is the sum of the sequences' own.
TEST_P(Invariants, SequenceAloneEqualsSequenceInBatch) {
  const std::vector<int64_t> lengths = {6, 0, 3, 6, 1};
  const int64_t T = 6, B = 5;
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan batch = plan(c, SequenceShape::padded(T, B, lengths));
    const Data d = make_data(c, lengths, 11);
    const Results rb = run(batch, make_tensors(batch, d, kNaN, kNaN), backward());
    const Geometry gb = geometry_of(batch.shape());
    // Comparing two backend results, each within tol of the exact value.
    const double tf = 2 * tolerance(c, T, B, false), tb = 2 * tolerance(c, T, B, true);
    std::vector<double> dw_sum(batch.weights_numel(), 0.0);
    for (int64_t b = 0; b < B; ++b) {
      SCOPED_TRACE("batch position " + std::to_string(b));
      Plan alone = plan(c, SequenceShape::padded(T, 1, {lengths[b]}));
      const Data db = select(c, d, {b});
      const Results ra = run(alone, make_tensors(alone, db, 1e30, 1e30), backward());
      expect_sequence_equal(c, gb, rb, b, geometry_of(alone.shape()), ra, 0, tf, tb);
      for (int64_t i = 0; i < ra.dw.size(); ++i) dw_sum[i] += ra.dw.get(i);
      if (lengths[b] > 0) {  // and without any padding at all
        Plan tight = plan(c, SequenceShape::padded(lengths[b], 1));
        const Results rt = run(tight, make_tensors(tight, db), backward());
        expect_sequence_equal(c, gb, rb, b, geometry_of(tight.shape()), rt, 0, tf, tb);
      }
    }
    EXPECT_TRUE(near_values("dweights = sum over sequences", rb.dw.values(), dw_sum, tb));
    for (const Buf* buf : {&rb.y, &rb.hy, &rb.cy, &rb.dx, &rb.dh0, &rb.dc0, &rb.dw})
      for (int64_t i = 0; i < buf->size(); ++i) ASSERT_FALSE(std::isnan(buf->get(i))) << i;
  }
}

// Permuting the batch permutes the results.
TEST_P(Invariants, PermutedBatchGivesPermutedResults) {
  const std::vector<int64_t> lengths = {6, 0, 3, 6, 1};
  const std::vector<int64_t> order = {3, 0, 4, 2, 1};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    const Data d = make_data(c, lengths, 12);
    const Data dp = select(c, d, order);
    Plan p1 = plan(c, SequenceShape::padded(6, 5, lengths));
    Plan p2 = plan(c, SequenceShape::padded(6, 5, dp.lengths));
    const Results r1 = run(p1, make_tensors(p1, d), backward());
    const Results r2 = run(p2, make_tensors(p2, dp), backward());
    const double tf = 2 * tolerance(c, 6, 5, false), tb = 2 * tolerance(c, 6, 5, true);
    for (int64_t k = 0; k < 5; ++k) {
      SCOPED_TRACE("position " + std::to_string(k));
      expect_sequence_equal(c, geometry_of(p1.shape()), r1, order[k], geometry_of(p2.shape()), r2,
                            k, tf, tb);
    }
    EXPECT_TRUE(near("dweights", r2.dw, r1.dw, tb));
  }
}

// x and dy at padding positions are never read: 0, NaN, huge and infinite padding give
// bit-identical results, y padding is padding_fill and dx padding is 0.
TEST_P(Invariants, PaddingContentChangesNothing) {
  const std::vector<int64_t> lengths = {2, 5, 0, 4};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    for (bool batch_first : {false, true}) {
      Plan p = plan(c, SequenceShape::padded(5, 4, lengths, batch_first));
      const Data d = make_data(c, lengths, 13);
      const Results want = run(p, make_tensors(p, d, 0.0, 0.0), backward());
      const Geometry g = geometry_of(p.shape());
      for (double pad : {kNaN, 1e30, -1e30, std::numeric_limits<double>::infinity()}) {
        SCOPED_TRACE("padding " + std::to_string(pad));
        const Results got = run(p, make_tensors(p, d, pad, pad), backward());
        EXPECT_TRUE(identical("y", got.y, want.y));
        EXPECT_TRUE(identical("hy", got.hy, want.hy));
        EXPECT_TRUE(identical("cy", got.cy, want.cy));
        EXPECT_TRUE(identical("dx", got.dx, want.dx));
        EXPECT_TRUE(identical("dh0", got.dh0, want.dh0));
        EXPECT_TRUE(identical("dc0", got.dc0, want.dc0));
        EXPECT_TRUE(identical("dweights", got.dw, want.dw));
      }
      for (double v : padding_values(g, want.y, out_width(c))) ASSERT_EQ(v, 0.0) << "y padding";
      for (double v : padding_values(g, want.dx, c.input_size)) ASSERT_EQ(v, 0.0) << "dx padding";
    }
  }
}

// y at padding positions holds padding_fill, whatever it is.
TEST_P(Invariants, PaddingFillIsWrittenAtPadding) {
  const std::vector<int64_t> lengths = {3, 0, 5};
  for (Config c : configs(GetParam().dtype)) {
    for (double fill : {0.0, -7.5}) {
      c.padding_fill = fill;
      SCOPED_TRACE(short_name(c) + " fill " + std::to_string(fill));
      for (bool batch_first : {false, true}) {
        Plan p = plan(c, SequenceShape::padded(5, 3, lengths, batch_first));
        const Results r = run(p, make_tensors(p, make_data(c, lengths, 14)), backward());
        const auto pad = padding_values(geometry_of(p.shape()), r.y, out_width(c));
        ASSERT_EQ(pad.size(), static_cast<size_t>((2 + 5 + 0) * out_width(c)));
        for (double v : pad) ASSERT_EQ(v, fill);
        // y at real positions is never the sentinel.
        for (int64_t i = 0; i < r.y.size(); ++i) ASSERT_FALSE(std::isnan(r.y.get(i)));
      }
    }
  }
}

// Padded (time-major and batch-first) and packed input (built here, with and without
// sorted_indices) give the same results.
TEST_P(Invariants, LayoutsAgree) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    for (const std::vector<int64_t>& lengths :
         {std::vector<int64_t>{2, 6, 3, 6, 1}, std::vector<int64_t>{6, 6, 4, 2, 1}}) {
      const Data d = make_data(c, lengths, 15);
      Plan tm = plan(c, SequenceShape::padded(6, 5, lengths));
      const Results want = run(tm, make_tensors(tm, d, kNaN, kNaN), backward());
      const Geometry gw = geometry_of(tm.shape());
      const double tf = 2 * tolerance(c, 6, 5, false), tb = 2 * tolerance(c, 6, 5, true);
      std::vector<LayoutKind> kinds = {LayoutKind::batch_first, LayoutKind::packed_sorted_indices};
      if (std::is_sorted(lengths.rbegin(), lengths.rend())) kinds.push_back(LayoutKind::packed);
      for (LayoutKind k : kinds) {
        SCOPED_TRACE(tag(k));
        Plan p = plan(c, make_shape(k, 6, 5, lengths));
        const Results got = run(p, make_tensors(p, d, kNaN, kNaN), backward());
        const Geometry gg = geometry_of(p.shape());
        for (int64_t b = 0; b < 5; ++b) expect_sequence_equal(c, gw, want, b, gg, got, b, tf, tb);
        EXPECT_TRUE(near("dweights", got.dw, want.dw, tb));
        EXPECT_EQ(p.tokens(), tm.tokens());
      }
    }
  }
}

// Explicit lengths that are all T mean the same as no lengths.
TEST_P(Invariants, ExplicitFullLengthsEqualAbsentLengths) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan absent = plan(c, SequenceShape::padded(4, 3));
    Plan given = plan(c, SequenceShape::padded(4, 3, {4, 4, 4}));
    EXPECT_EQ(given.problem_name(), absent.problem_name());
    const Data d = make_data(c, {4, 4, 4}, 24);
    const Results a = run(absent, make_tensors(absent, d), backward());
    const Results g = run(given, make_tensors(given, d), backward());
    expect_results_near(g, a, 2 * tolerance(c, 4, 3, false), 2 * tolerance(c, 4, 3, true));
  }
}

// A zero-length sequence: y only padding, hy = h0, cy = c0, dh0 = dhy, dc0 = dcy, dx = 0,
// exactly; a batch of only empty sequences also has zero weight gradients.
TEST_P(Invariants, ZeroLengthSequence) {
  for (Config c : configs(GetParam().dtype)) {
    c.padding_fill = -7.5;
    SCOPED_TRACE(short_name(c));
    for (const std::vector<int64_t>& lengths :
         {std::vector<int64_t>{0, 4, 0}, std::vector<int64_t>{0, 0}}) {
      for (bool with_h0 : {true, false}) {
        const int64_t B = static_cast<int64_t>(lengths.size());
        Plan p = plan(c, SequenceShape::padded(4, B, lengths));
        DataOptions o;
        o.h0 = o.c0 = with_h0;
        const Data d = make_data(c, lengths, 16, o);
        const Results r = run(p, make_tensors(p, d, kNaN, kNaN), backward());
        const Geometry g = geometry_of(p.shape());
        const int64_t W = out_width(c), I = c.input_size, P = c.output_size(), H = c.hidden_size;
        for (int64_t b = 0; b < B; ++b) {
          if (lengths[b] != 0) continue;
          for (int64_t t = 0; t < 4; ++t) {
            for (int64_t j = 0; j < W; ++j) ASSERT_EQ(r.y.get(g.row(t, b) * W + j), -7.5);
            for (int64_t j = 0; j < I; ++j) ASSERT_EQ(r.dx.get(g.row(t, b) * I + j), 0.0);
          }
          for (int64_t ld = 0; ld < state_rows(c); ++ld) {
            for (int64_t j = 0; j < P; ++j) {
              const int64_t i = (ld * B + b) * P + j;
              ASSERT_EQ(r.hy.get(i), with_h0 ? Buf::from(c.dtype, d.h0).get(i) : 0.0);
              ASSERT_EQ(r.dh0.get(i), Buf::from(c.dtype, d.dhy).get(i));
            }
            for (int64_t j = 0; is_lstm(c) && j < H; ++j) {
              const int64_t i = (ld * B + b) * H + j;
              ASSERT_EQ(r.cy.get(i), with_h0 ? Buf::from(c.dtype, d.c0).get(i) : 0.0);
              ASSERT_EQ(r.dc0.get(i), Buf::from(c.dtype, d.dcy).get(i));
            }
          }
        }
        if (B == 2) {
          for (int64_t i = 0; i < r.dw.size(); ++i) ASSERT_EQ(r.dw.get(i), 0.0) << i;
        }
      }
    }
  }
}

// dh0 and dc0 are given also when h0 and c0 were absent, and equal those for explicit
// zero states.
TEST_P(Invariants, StateGradientsWithoutInitialStates) {
  const std::vector<int64_t> lengths = {4, 2, 0};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p = plan(c, SequenceShape::padded(4, 3, lengths));
    DataOptions o;
    o.h0 = o.c0 = false;
    const Data d = make_data(c, lengths, 17, o);
    Tensors absent = make_tensors(p, d);
    Tensors zeros = absent;
    zeros.h0 = Buf(c.dtype, p.h_numel(), 0.0);
    if (is_lstm(c)) zeros.c0 = Buf(c.dtype, p.c_numel(), 0.0);
    const Results ra = run(p, absent, backward()), rz = run(p, zeros, backward());
    const double tf = 2 * tolerance(c, 4, 3, false), tb = 2 * tolerance(c, 4, 3, true);
    expect_results_near(ra, rz, tf, tb);
    for (int64_t i = 0; i < ra.dh0.size(); ++i) ASSERT_FALSE(std::isnan(ra.dh0.get(i))) << i;
    for (int64_t i = 0; i < ra.dc0.size(); ++i) ASSERT_FALSE(std::isnan(ra.dc0.get(i))) << i;
  }
}

// The reverse direction of a sequence is the forward direction, with the reverse weights,
// of the time-reversed sequence (each sequence reversed within its own length); its final
// state is the one after t = 0. Backward likewise, with the forward direction's output
// gradients set to zero so that dx comes from the reverse direction alone.
TEST_P(Invariants, ReverseDirectionIsForwardOfReversedSequence) {
  const std::vector<int64_t> lengths = {5, 0, 3, 1};
  for (Config c : configs(GetParam().dtype)) {
    if (c.reverse) continue;  // reverse is one direction; bidirectional it cannot be
    c.num_layers = 1;
    c.bidirectional = true;
    SCOPED_TRACE(short_name(c));
    Config cu = c;
    cu.bidirectional = false;
    const int64_t P = c.output_size(), H = c.hidden_size, W = 2 * P, I = c.input_size;
    Plan bi = plan(c, SequenceShape::padded(5, 4, lengths));
    Data d = make_data(c, lengths, 18);
    for (auto& s : d.dy)  // forward half of dy = 0
      for (size_t t = 0; t < s.size() / W; ++t) std::fill_n(s.begin() + t * W, P, 0.0);
    std::fill_n(d.dhy.begin(), 4 * P, 0.0);  // direction 0's rows
    if (is_lstm(c)) std::fill_n(d.dcy.begin(), 4 * H, 0.0);
    const Results rb = run(bi, make_tensors(bi, d), backward());
    const Geometry gb = geometry_of(bi.shape());
    const WeightLayout& lb = bi.weight_layout();
    const double tf = 2 * tolerance(c, 5, 4, false), tb = 2 * tolerance(c, 5, 4, true);
    for (int64_t b = 0; b < 4; ++b) {
      const int64_t len = lengths[b];
      if (len == 0) continue;
      SCOPED_TRACE("b=" + std::to_string(b));
      Plan uni = plan(cu, SequenceShape::padded(len, 1));
      const WeightLayout& lu = uni.weight_layout();
      Data du;
      du.lengths = {len};
      du.w.assign(lu.numel(), 0.0);
      for (const WeightParam& wp : lu.params()) {  // weight_*_l0 <- weight_*_l0_reverse
        const WeightParam& src = lb.find(wp.name + "_reverse");
        std::copy_n(d.w.begin() + src.offset, wp.numel(), du.w.begin() + wp.offset);
      }
      du.x.assign(1, std::vector<double>(len * I));
      du.dy.assign(1, std::vector<double>(len * P));
      for (int64_t k = 0; k < len; ++k) {
        std::copy_n(d.x[b].begin() + (len - 1 - k) * I, I, du.x[0].begin() + k * I);
        std::copy_n(d.dy[b].begin() + (len - 1 - k) * W + P, P, du.dy[0].begin() + k * P);
      }
      auto slot = [&](const std::vector<double>& s, int64_t width) {  // (d = 1, b)
        return std::vector<double>(s.begin() + (4 + b) * width, s.begin() + (5 + b) * width);
      };
      du.h0 = slot(d.h0, P);
      du.dhy = slot(d.dhy, P);
      if (is_lstm(c)) {
        du.c0 = slot(d.c0, H);
        du.dcy = slot(d.dcy, H);
      }
      const Results ru = run(uni, make_tensors(uni, du), backward());
      const Geometry gu = geometry_of(uni.shape());
      std::vector<double> y_rev, y_uni, dx_rev, dx_uni;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = len - 1 - k;
        for (int64_t j = 0; j < P; ++j) {
          y_rev.push_back(rb.y.get(gb.row(t, b) * W + P + j));
          y_uni.push_back(ru.y.get(gu.row(k, 0) * P + j));
        }
        for (int64_t j = 0; j < I; ++j) {
          dx_rev.push_back(rb.dx.get(gb.row(t, b) * I + j));
          dx_uni.push_back(ru.dx.get(gu.row(k, 0) * I + j));
        }
      }
      // Direction 1 of batch entry b: row (L*D index 1) * B + b of each state tensor.
      auto rev = [&](const Buf& s, int64_t width) { return slice(s, (4 + b) * width, width); };
      EXPECT_TRUE(near_values("y (reverse half)", y_rev, y_uni, tf));
      EXPECT_TRUE(near_values("hy (reverse)", rev(rb.hy, P), ru.hy.values(), tf));
      EXPECT_TRUE(near_values("dx", dx_rev, dx_uni, tb));
      EXPECT_TRUE(near_values("dh0 (reverse)", rev(rb.dh0, P), ru.dh0.values(), tb));
      if (is_lstm(c)) {
        EXPECT_TRUE(near_values("cy (reverse)", rev(rb.cy, H), ru.cy.values(), tf));
        EXPECT_TRUE(near_values("dc0 (reverse)", rev(rb.dc0, H), ru.dc0.values(), tb));
      }
      // The reverse direction's final state is its output at t = 0.
      for (int64_t j = 0; j < P; ++j) {
        EXPECT_EQ(rb.hy.get((4 + b) * P + j), rb.y.get(gb.row(0, b) * W + P + j));
      }
    }
    // With no output gradient reaching it, the forward direction's parameters get none.
    for (const WeightParam& wp : lb.params()) {
      if (wp.direction != 0) continue;
      for (int64_t k = 0; k < wp.numel(); ++k) ASSERT_EQ(rb.dw.get(wp.offset + k), 0.0) << wp.name;
    }
  }
}

// hy of the top layer is y at each sequence's own last step (forward direction) and at
// t = 0 (reverse direction, and the one direction of a reverse network), bit for bit.
TEST_P(Invariants, FinalStateIsTheLastOutput) {
  const std::vector<int64_t> lengths = {3, 6, 1, 6, 2};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    for (LayoutKind k :
         {LayoutKind::time_major, LayoutKind::batch_first, LayoutKind::packed_sorted_indices}) {
      Plan p = plan(c, make_shape(k, 6, 5, lengths));
      const Results r = run(p, make_tensors(p, make_data(c, lengths, 19)));
      const Geometry g = geometry_of(p.shape());
      const int64_t P = c.output_size(), W = out_width(c), D = c.num_directions();
      const int64_t top = (c.num_layers - 1) * D;
      for (int64_t b = 0; b < 5; ++b) {
        for (int64_t j = 0; j < P; ++j) {
          const int64_t last = c.reverse ? 0 : lengths[b] - 1;
          ASSERT_EQ(r.hy.get((top * 5 + b) * P + j), r.y.get(g.row(last, b) * W + j))
              << tag(k) << " b=" << b;
          if (D == 2) {
            ASSERT_EQ(r.hy.get(((top + 1) * 5 + b) * P + j), r.y.get(g.row(0, b) * W + P + j))
                << tag(k) << " b=" << b;
          }
        }
      }
    }
  }
}

// Without dropout a training forward computes what inference computes.
TEST_P(Invariants, TrainingForwardEqualsInference) {
  const std::vector<int64_t> lengths = {4, 1, 0, 3};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p = plan(c, SequenceShape::padded(4, 4, lengths));
    const Tensors t = make_tensors(p, make_data(c, lengths, 20));
    RunOptions train;
    train.training = true;
    expect_results_near(run(p, t, train), run(p, t), 2 * tolerance(c, 4, 4, false), 0);
  }
}

// Backward reads what its own training forward left in its reserve: a second training
// forward in between (other data, other dropout counter, other reserve, the plan's own
// workspace reused) changes nothing.
TEST_P(Invariants, BackwardUsesItsOwnReserve) {
  const std::vector<int64_t> lengths = {4, 2, 3};
  for (Config c : configs(GetParam().dtype)) {
    if (c.num_layers > 1) {
      c.dropout = 0.4;
      c.seed = 3;
    }
    SCOPED_TRACE(short_name(c));
    Plan p = plan(c, SequenceShape::padded(4, 3, lengths));
    const Tensors ta = make_tensors(p, make_data(c, lengths, 21));
    Data db = make_data(c, lengths, 22);
    db.w = make_data(c, lengths, 21).w;  // same weights, other inputs
    const Tensors tb = make_tensors(p, db);
    RunOptions o = backward();
    o.dropout_counter = 5;
    const Results want = run(p, ta, o);

    Bytes ra(p.reserve_size()), rb(p.reserve_size());
    Buf y(c.dtype, p.y_numel()), y2(c.dtype, p.y_numel());
    ForwardArgs f;
    f.x = ta.x.data();
    f.h0 = ta.h0.data();
    f.c0 = ta.c0.data();
    f.weights = ta.w.data();
    f.y = y.data();
    f.training = true;
    f.dropout_counter = 5;
    f.reserve = ra.data();
    f.reserve_size = ra.size;
    p.forward(f);
    f.x = tb.x.data();
    f.h0 = tb.h0.data();
    f.c0 = tb.c0.data();
    f.y = y2.data();
    f.dropout_counter = 6;
    f.reserve = rb.data();
    p.forward(f);
    Results got;
    got.dx = Buf(c.dtype, p.x_numel(), kNaN);
    got.dh0 = Buf(c.dtype, p.h_numel(), kNaN);
    if (is_lstm(c)) got.dc0 = Buf(c.dtype, p.c_numel(), kNaN);
    got.dw = Buf(c.dtype, p.weights_numel(), kNaN);
    BackwardArgs bk;
    bk.x = ta.x.data();
    bk.h0 = ta.h0.data();
    bk.c0 = ta.c0.data();
    bk.weights = ta.w.data();
    bk.dy = ta.dy.data();
    bk.dhy = ta.dhy.data();
    bk.dcy = ta.dcy.data();
    bk.dx = got.dx.data();
    bk.dh0 = got.dh0.data();
    bk.dc0 = got.dc0.data();
    bk.dweights = got.dw.data();
    bk.reserve = ra.data();
    bk.reserve_size = ra.size;
    p.backward(bk);
    EXPECT_TRUE(identical("y", y, want.y));
    EXPECT_TRUE(identical("dx", got.dx, want.dx));
    EXPECT_TRUE(identical("dh0", got.dh0, want.dh0));
    EXPECT_TRUE(identical("dc0", got.dc0, want.dc0));
    EXPECT_TRUE(identical("dweights", got.dw, want.dw));
  }
}

// The same plan and inputs give bit-identical results every time, and so does a second
// plan of the same problem.
TEST_P(Invariants, Deterministic) {
  const std::vector<int64_t> lengths = {5, 2, 0, 4};
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p = plan(c, SequenceShape::padded(5, 4, lengths));
    Plan q = plan(c, SequenceShape::padded(5, 4, lengths));
    const Tensors t = make_tensors(p, make_data(c, lengths, 23));
    const Results a = run(p, t, backward()), b = run(p, t, backward()), e = run(q, t, backward());
    for (const Results* r : {&b, &e}) {
      EXPECT_TRUE(identical("y", r->y, a.y));
      EXPECT_TRUE(identical("hy", r->hy, a.hy));
      EXPECT_TRUE(identical("cy", r->cy, a.cy));
      EXPECT_TRUE(identical("dx", r->dx, a.dx));
      EXPECT_TRUE(identical("dh0", r->dh0, a.dh0));
      EXPECT_TRUE(identical("dc0", r->dc0, a.dc0));
      EXPECT_TRUE(identical("dweights", r->dw, a.dw));
    }
  }
}

// "A plan may be executed by one thread at a time": different plans may run at the same
// time on different threads (as in a framework), each giving what it gives alone.
TEST_P(Invariants, DifferentPlansRunConcurrently) {
  const std::vector<Config> cs = configs(GetParam().dtype);
  const std::vector<int64_t> lengths = {5, 2, 0, 4};
  std::vector<std::unique_ptr<Plan>> plans;
  std::vector<Tensors> inputs;
  std::vector<Results> alone;
  for (size_t i = 0; i < cs.size(); ++i) {
    plans.push_back(std::make_unique<Plan>(cs[i], SequenceShape::padded(5, 4, lengths), opts()));
    inputs.push_back(make_tensors(*plans[i], make_data(cs[i], lengths, 25 + i)));
    alone.push_back(run(*plans[i], inputs[i], backward()));
  }
  std::vector<std::vector<Results>> together(cs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cs.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 3; ++k) together[i].push_back(run(*plans[i], inputs[i], backward()));
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < cs.size(); ++i) {
    SCOPED_TRACE(short_name(cs[i]));
    for (const Results& r : together[i]) {
      EXPECT_TRUE(identical("y", r.y, alone[i].y));
      EXPECT_TRUE(identical("dx", r.dx, alone[i].dx));
      EXPECT_TRUE(identical("dweights", r.dw, alone[i].dw));
    }
  }
}

// At medium sizes (problems.hpp says which fast paths they reach) a sequence alone still
// equals itself inside a long-tail ragged batch of 48, at any position, the reversed batch
// gives the reversed results, and NaN padding changes nothing. The oracle's invariants
// are checked at the small sizes above; here only the fast backends.
TEST_P(Invariants, MediumRaggedBatchSequencesAreIndependent) {
  if (GetParam().backend == Backend::reference)
    GTEST_SKIP() << "medium sizes exercise the fast backends' paths; the reference's "
                    "invariants are checked at small sizes";
  const int64_t T = 20, B = 48;
  const std::vector<int64_t> lengths = medium_long_tail_lengths(B, T);
  std::vector<Config> cs;
  Config lstmp = make_config(CellType::lstm, 40, 64, 2, true, GetParam().dtype, 21);
  lstmp.cell_clip = {true, -0.5, 0.55};
  cs.push_back(lstmp);
  cs.push_back(make_config(CellType::gru, 40, 64, 2, true, GetParam().dtype));
  // The longest, empty, length-1 and middle sequences, first and last positions.
  std::vector<int64_t> picks = {0, B - 1};
  for (int64_t want : {T, int64_t{0}, int64_t{1}, T / 2}) {
    int64_t best = 0;
    for (int64_t b = 0; b < B; ++b)
      if (std::abs(lengths[b] - want) < std::abs(lengths[best] - want)) best = b;
    picks.push_back(best);
  }
  std::vector<int64_t> reversed(B);
  for (int64_t b = 0; b < B; ++b) reversed[b] = B - 1 - b;
  for (const Config& c : cs) {
    SCOPED_TRACE(short_name(c));
    Plan batch = plan(c, SequenceShape::padded(T, B, lengths));
    const Data d = make_data(c, lengths, 31);
    const Results rb = run(batch, make_tensors(batch, d, kNaN, kNaN), backward());
    const Results r0 = run(batch, make_tensors(batch, d), backward());
    EXPECT_TRUE(identical("y", r0.y, rb.y));
    EXPECT_TRUE(identical("dx", r0.dx, rb.dx));
    EXPECT_TRUE(identical("dweights", r0.dw, rb.dw));
    const Geometry gb = geometry_of(batch.shape());
    const double tf = 2 * tolerance(c, T, B, false), tb = 2 * tolerance(c, T, B, true);
    for (int64_t b : picks) {
      SCOPED_TRACE("batch position " + std::to_string(b) + ", length " +
                   std::to_string(lengths[b]));
      Plan alone = plan(c, SequenceShape::padded(T, 1, {lengths[b]}));
      const Results ra = run(alone, make_tensors(alone, select(c, d, {b}), 1e30, 1e30), backward());
      expect_sequence_equal(c, gb, rb, b, geometry_of(alone.shape()), ra, 0, tf, tb);
    }
    const Data dr = select(c, d, reversed);
    Plan rev = plan(c, SequenceShape::padded(T, B, dr.lengths));
    const Results rr = run(rev, make_tensors(rev, dr, kNaN, kNaN), backward());
    for (int64_t k = 0; k < B; ++k)
      expect_sequence_equal(c, gb, rb, reversed[k], geometry_of(rev.shape()), rr, k, tf, tb);
    EXPECT_TRUE(near("dweights", rr.dw, rb.dw, tb));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Invariants, all_backends(), backend_param_name);

}  // namespace
}  // namespace rnnx_test
