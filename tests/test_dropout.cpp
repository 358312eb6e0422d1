// Dropout between layers: the counter-based generator itself (Philox known answers, keep
// fraction, independence of counter/layer/seed, the row kernel against the element
// function), the exact mask through the public API (a network built so that y is the
// masked, scaled input), and its behaviour: same seed and counter give the same result
// for any thread count and layout, a different counter or seed does not, nothing happens
// in inference, with p = 0 or with one layer.
#include <gtest/gtest.h>

#include "core/dropout.hpp"
#include "core/schedule.hpp"
#include "cpu/rows.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using core::dropout_element;
using core::dropout_keep;
using core::DropoutKey;

// ---------------------------------------------------------------------------------------
// The generator.

// Random123's kat_vectors for philox4x32 with 10 rounds: counter[4], key[2] -> output[4].
TEST(DropoutGenerator, PhiloxKnownAnswers) {
  struct Kat {
    std::array<uint32_t, 4> ctr;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) EXPECT_EQ(core::philox4x32_10(k.ctr, k.key), k.out);
}

// Five standard deviations of a binomial fraction: a correct generator fails this with
// probability ~6e-7 per check; the checks are deterministic anyway (fixed keys).
double five_sigma(double p, int64_t n) {
  return 5.0 * std::sqrt(p * (1.0 - p) / n) + 1e-12;
}

TEST(DropoutGenerator, DroppedFractionIsP) {
  constexpr int64_t n = 200000;
  for (double p : {0.1, 0.3, 0.5, 0.9}) {
    for (uint64_t counter : {0ull, 1ull, (1ull << 32) + 5}) {
      const DropoutKey key{0x5eedull, counter, 1, p};
      int64_t dropped = 0;
      for (int64_t e = 0; e < n; ++e) dropped += dropout_keep(key, e) ? 0 : 1;
      EXPECT_NEAR(static_cast<double>(dropped) / n, p, five_sigma(p, n))
          << "p=" << p << " counter=" << counter;
    }
  }
}

TEST(DropoutGenerator, ZeroKeepsAllAndOneDropsAll) {
  for (int64_t e = 0; e < 100000; ++e) {
    ASSERT_TRUE(dropout_keep({7, 3, 0, 0.0}, e)) << e;
    ASSERT_FALSE(dropout_keep({7, 3, 0, 1.0}, e)) << e;
  }
}

// Masks of different counters, layers, seeds (including their high 32 bits) and of
// neighbouring elements agree only as often as independent masks do: p^2 + (1-p)^2.
TEST(DropoutGenerator, MasksAreIndependent) {
  constexpr int64_t n = 100000;
  const double p = 0.3, agree = p * p + (1 - p) * (1 - p);
  const DropoutKey base{0x1234567890ull, 42, 0, p};
  auto with = [&](auto f) {
    DropoutKey k = base;
    f(k);
    return k;
  };
  const std::vector<std::pair<const char*, DropoutKey>> others = {
      {"counter+1", with([](DropoutKey& k) { k.counter += 1; })},
      {"counter+2^32", with([](DropoutKey& k) { k.counter += 1ull << 32; })},
      {"layer+1", with([](DropoutKey& k) { k.layer += 1; })},
      {"seed+1", with([](DropoutKey& k) { k.seed += 1; })},
      {"seed+2^32", with([](DropoutKey& k) { k.seed += 1ull << 32; })},
  };
  for (const auto& [what, other] : others) {
    int64_t same = 0;
    for (int64_t e = 0; e < n; ++e) same += dropout_keep(base, e) == dropout_keep(other, e);
    EXPECT_NEAR(static_cast<double>(same) / n, agree, five_sigma(agree, n)) << what;
  }
  int64_t same = 0;
  for (int64_t e = 0; e < n; ++e) same += dropout_keep(base, e) == dropout_keep(base, e + 1);
  EXPECT_NEAR(static_cast<double>(same) / n, agree, five_sigma(agree, n)) << "neighbours";
}

// The row kernel the backends use agrees with the element function, scales kept elements
// by 1/(1-p), and does not depend on the number of threads.
TEST(DropoutGenerator, ApplyRowsMatchesKeep) {
  const SequenceShape shape = SequenceShape::padded(7, 5, {3, 7, 0, 7, 5});
  const core::Schedule s = core::make_schedule(shape);
  const int64_t width = 19;
  const DropoutKey key{99, 4, 1, 0.3};
  const double scale = 1.0 / (1.0 - key.p);
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2}) {
    std::vector<double> rows(s.tokens * width, 1.0);
    const int saved = rnnx::max_threads();
    rnnx::set_num_threads(threads);
    rnnx::cpu::dropout_rows_parallel(key, s, width, rows.data());
    rnnx::set_num_threads(saved);
    for (int64_t t = 0; t < s.T_eff; ++t)
      for (int64_t i = 0; i < s.batch_sizes[t]; ++i)
        for (int64_t j = 0; j < width; ++j) {
          const bool keep =
              dropout_keep(key, dropout_element(t, s.sorted_to_orig[i], s.B, width, j));
          ASSERT_EQ(rows[s.row(t, i) * width + j], keep ? scale : 0.0) << t << " " << i << " " << j;
        }
    results.push_back(rows);
  }
  EXPECT_EQ(results[0], results[1]);
  std::vector<float> rows(s.tokens * width, 1.0f);
  rnnx::cpu::dropout_rows_parallel(key, s, width, rows.data());
  for (size_t i = 0; i < rows.size(); ++i)
    ASSERT_EQ(rows[i], results[0][i] == 0.0 ? 0.0f : static_cast<float>(scale));
}

// ---------------------------------------------------------------------------------------
// Through the public API.

using Param = BackendParam;

class Dropout : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { RNNX_SKIP_UNLESS_AVAILABLE(GetParam().backend); }
  PlanOptions opts(int threads = 0) const { return backend_options(GetParam().backend, threads); }
};

// An "identity network": ReLU cells without bias, W_hh = 0, W_ih of layer 0 the identity
// and of upper layers the identity onto the same direction's half of the input. With
// x > 0 each layer passes its input through, so
//   y[t,b,k] = prod over l < L-1 of keep_l(t,b,k) * x[t,b,k mod H] / (1-p)^(L-1),
// which shows the mask of every element, and dx shows the backward mask.
Config identity_config(int64_t H, int64_t L, bool bidir, DataType dt, double p, uint64_t seed) {
  Config c = make_config(CellType::rnn_relu, H, H, L, bidir, dt);
  c.bias = false;
  c.dropout = p;
  c.seed = seed;
  return c;
}

std::vector<double> identity_weights(const Config& c) {
  const WeightLayout layout(c);
  std::vector<double> w(layout.numel(), 0.0);
  const int64_t H = c.hidden_size;
  for (const WeightParam& wp : layout.params()) {
    if (wp.kind != WeightKind::w_ih) continue;
    const int64_t col0 = wp.layer > 0 ? wp.direction * H : 0;
    for (int64_t r = 0; r < H; ++r) w[wp.offset + r * wp.cols + col0 + r] = 1.0;
  }
  return w;
}

// Within a few roundings of the scale (float32 may scale in float, the reference in double).
bool close_ulps(double got, double want, DataType dt) {
  const double eps = dt == DataType::f32 ? std::numeric_limits<float>::epsilon()
                                         : std::numeric_limits<double>::epsilon();
  return std::abs(got - want) <= 4 * eps * std::abs(want);
}

TEST_P(Dropout, MaskIsExactlyTheGeneratorsForAnyLayoutAndThreadCount) {
  const DataType dt = GetParam().dtype;
  const int64_t H = 13, T = 6, B = 5;
  const std::vector<int64_t> lengths = {6, 2, 5, 6, 1};
  for (int64_t L : {2, 3}) {
    for (bool bidir : {false, true}) {
      for (uint64_t counter : {0ull, 7ull, (1ull << 32) + 1}) {
        const Config c = identity_config(H, L, bidir, dt, 0.35, 0xabcdef12345ull);
        const int64_t D = c.num_directions(), W = D * H;
        const double scale = 1.0 / (1.0 - c.dropout);
        const double eps = dt == DataType::f32 ? std::numeric_limits<float>::epsilon()
                                               : std::numeric_limits<double>::epsilon();
        DataOptions o;  // no dhy: then dx is the masked dy alone
        o.dhy = o.dcy = false;
        Data d = make_data(c, lengths, 31, o);
        d.w = identity_weights(c);
        for (auto& s : d.x)
          for (double& v : s) v = 0.5 + (v + 1.0) / 2.0;  // in [0.5, 1.5]: ReLU passes it
        // The expected y and dx from the generator.
        Seqs want_y(B), want_dx(B), dx_terms(B);  // dx_terms: sum of |terms| of dx
        for (int64_t b = 0; b < B; ++b) {
          want_y[b].assign(lengths[b] * W, 0.0);
          want_dx[b].assign(lengths[b] * H, 0.0);
          dx_terms[b].assign(lengths[b] * H, 0.0);
          for (int64_t t = 0; t < lengths[b]; ++t)
            for (int64_t k = 0; k < W; ++k) {
              double m = 1.0;
              for (int64_t l = 0; l + 1 < L; ++l)
                m *= dropout_keep({c.seed, counter, l, c.dropout}, dropout_element(t, b, B, W, k))
                         ? scale
                         : 0.0;
              want_y[b][t * W + k] = m * d.x[b][t * H + k % H];
              want_dx[b][t * H + k % H] += m * d.dy[b][t * W + k];
              dx_terms[b][t * H + k % H] += std::abs(m * d.dy[b][t * W + k]);
            }
        }
        for (LayoutKind lk :
             {LayoutKind::time_major, LayoutKind::batch_first, LayoutKind::packed_sorted_indices}) {
          for (int threads : {1, 2}) {
            SCOPED_TRACE("L=" + std::to_string(L) + (bidir ? " bidir" : " uni") +
                         " counter=" + std::to_string(counter) + " " + tag(lk) +
                         " threads=" + std::to_string(threads));
            Plan p(c, make_shape(lk, T, B, lengths), opts(threads));
            RunOptions o;
            o.backward = true;
            o.dropout_counter = counter;
            const Results r = run(p, make_tensors(p, d, kNaN, kNaN), o);
            const Geometry g = geometry_of(p.shape());
            const Seqs y = read_seqs(g, r.y, W), dx = read_seqs(g, r.dx, H);
            int64_t bad = 0, dropped = 0, total = 0;
            for (int64_t b = 0; b < B; ++b) {
              for (size_t i = 0; i < y[b].size(); ++i) {
                const double gv = y[b][i], wv = want_y[b][i];
                ++total;
                dropped += wv == 0.0;
                if ((wv == 0.0) != (gv == 0.0) || !close_ulps(gv, wv, dt)) {
                  if (bad++ < 5)
                    ADD_FAILURE() << "y b=" << b << " i=" << i << ": " << gv << " want " << wv;
                }
              }
              for (size_t i = 0; i < dx[b].size(); ++i) {
                // dx sums up to D terms, each a few roundings away from exact.
                if (!(std::abs(dx[b][i] - want_dx[b][i]) <= 8 * eps * dx_terms[b][i])) {
                  if (bad++ < 5)
                    ADD_FAILURE() << "dx b=" << b << " i=" << i << ": " << dx[b][i] << " want "
                                  << want_dx[b][i];
                }
              }
            }
            EXPECT_EQ(bad, 0);
            EXPECT_GT(dropped, 0);
            EXPECT_LT(dropped, total);
          }
        }
      }
    }
  }
}

// A 3-layer bidirectional LSTM with projection and a GRU with dropout, for the
// behavioural checks below.
std::vector<Config> dropout_configs(DataType dt) {
  std::vector<Config> v;
  Config lstm = make_config(CellType::lstm, 5, 8, 3, true, dt, 3);
  lstm.dropout = 0.3;
  lstm.seed = 2024;
  v.push_back(lstm);
  Config gru = make_config(CellType::gru, 6, 7, 2, false, dt, 0, false);
  gru.dropout = 0.5;
  gru.seed = 1;
  v.push_back(gru);
  return v;
}

const std::vector<int64_t> kLengths = {5, 3, 0, 5};

Results train(Plan& p, const Tensors& t, uint64_t counter) {
  RunOptions o;
  o.backward = true;
  o.dropout_counter = counter;
  return run(p, t, o);
}

bool differs(const Buf& a, const Buf& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a.get(i) - b.get(i)));
  return worst > 1e-3;
}

TEST_P(Dropout, SameSeedAndCounterGiveIdenticalResults) {
  for (const Config& c : dropout_configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(5, 4, kLengths), opts());
    Plan q(c, SequenceShape::padded(5, 4, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 41));
    const Results a = train(p, t, 9), b = train(p, t, 9), e = train(q, t, 9);
    for (const Results* r : {&b, &e}) {
      EXPECT_TRUE(identical("y", r->y, a.y));
      EXPECT_TRUE(identical("hy", r->hy, a.hy));
      EXPECT_TRUE(identical("dx", r->dx, a.dx));
      EXPECT_TRUE(identical("dh0", r->dh0, a.dh0));
      EXPECT_TRUE(identical("dweights", r->dw, a.dw));
    }
  }
}

TEST_P(Dropout, OtherCounterOrSeedGivesOtherResults) {
  for (const Config& c : dropout_configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(5, 4, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 42));
    const Results a = train(p, t, 9);
    for (uint64_t counter : {10ull, 9ull + (1ull << 32)}) {
      const Results b = train(p, t, counter);
      EXPECT_TRUE(differs(b.y, a.y)) << "counter " << counter;
      EXPECT_TRUE(differs(b.dw, a.dw)) << "counter " << counter;
    }
    for (uint64_t seed : {c.seed + 1, c.seed + (uint64_t{1} << 32)}) {
      Config c2 = c;
      c2.seed = seed;
      Plan q(c2, SequenceShape::padded(5, 4, kLengths), opts());
      const Results b = train(q, t, 9);
      EXPECT_TRUE(differs(b.y, a.y)) << "seed " << seed;
      EXPECT_TRUE(differs(b.dx, a.dx)) << "seed " << seed;
    }
  }
}

TEST_P(Dropout, ThreadCountDoesNotChangeTheResult) {
  for (const Config& c : dropout_configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p1(c, SequenceShape::padded(5, 4, kLengths), opts(1));
    Plan p2(c, SequenceShape::padded(5, 4, kLengths), opts(2));
    const Tensors t = make_tensors(p1, make_data(c, kLengths, 43));
    const Results r1 = train(p1, t, 3), r2 = train(p2, t, 3), other = train(p1, t, 4);
    expect_results_near(r2, r1, 2 * tolerance(c, 5, 4, false), 2 * tolerance(c, 5, 4, true));
    EXPECT_TRUE(differs(other.y, r1.y));
    EXPECT_TRUE(differs(other.y, r2.y));
  }
}

TEST_P(Dropout, LayoutDoesNotChangeTheMask) {
  const std::vector<int64_t> lengths = {5, 3, 4, 5};
  for (const Config& c : dropout_configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    const Data d = make_data(c, lengths, 44);
    Plan tm(c, SequenceShape::padded(5, 4, lengths), opts());
    const Results want = train(tm, make_tensors(tm, d), 6);
    for (LayoutKind k : {LayoutKind::batch_first, LayoutKind::packed_sorted_indices}) {
      Plan p(c, make_shape(k, 5, 4, lengths), opts());
      const Results got = train(p, make_tensors(p, d), 6);
      const Geometry gw = geometry_of(tm.shape()), gg = geometry_of(p.shape());
      const int64_t W = out_width(c);
      const double tf = 2 * tolerance(c, 5, 4, false), tb = 2 * tolerance(c, 5, 4, true);
      for (int64_t b = 0; b < 4; ++b) {
        EXPECT_TRUE(near_values(std::string("y ") + tag(k), read_seqs(gg, got.y, W)[b],
                                read_seqs(gw, want.y, W)[b], tf));
        EXPECT_TRUE(near_values(std::string("dx ") + tag(k), read_seqs(gg, got.dx, c.input_size)[b],
                                read_seqs(gw, want.dx, c.input_size)[b], tb));
      }
      EXPECT_TRUE(near("dweights", got.dw, want.dw, tb));
    }
  }
}

// Dropout acts in training only, only between layers, and p = 0 is no dropout.
TEST_P(Dropout, NoEffectInInferenceWithZeroPOrWithOneLayer) {
  for (Config c : dropout_configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Config none = c;
    none.dropout = 0.0;
    const Data d = make_data(c, kLengths, 45);
    Plan pd(c, SequenceShape::padded(5, 4, kLengths), opts());
    Plan pn(none, SequenceShape::padded(5, 4, kLengths), opts());
    const Tensors t = make_tensors(pd, d);
    const double tf = 2 * tolerance(c, 5, 4, false), tb = 2 * tolerance(c, 5, 4, true);
    const Results inference = run(pn, t);
    expect_results_near(run(pd, t), inference, tf, tb);               // inference ignores dropout
    expect_results_near(train(pn, t, 12), train(pn, t, 13), tf, tb);  // p = 0: no counter effect
    RunOptions fwd;
    fwd.training = true;
    expect_results_near(run(pn, t, fwd), inference, tf, tb);
    // One layer: nothing between layers to drop.
    Config one = c;
    one.num_layers = 1;
    Config one_none = none;
    one_none.num_layers = 1;
    Plan p1(one, SequenceShape::padded(5, 4, kLengths), opts());
    Plan p1n(one_none, SequenceShape::padded(5, 4, kLengths), opts());
    const Tensors t1 = make_tensors(p1, make_data(one, kLengths, 46));
    expect_results_near(train(p1, t1, 3), train(p1n, t1, 3), tf, tb);
  }
}

// p = 1: the upper layers see only zeros, as if their input weights were zero.
TEST_P(Dropout, ProbabilityOneDropsEverything) {
  for (Config c : dropout_configs(GetParam().dtype)) {
    c.dropout = 1.0;
    SCOPED_TRACE(short_name(c));
    Config none = c;
    none.dropout = 0.0;
    const Data d = make_data(c, kLengths, 47);
    Data dz = d;
    const WeightLayout layout(c);
    for (const WeightParam& wp : layout.params())
      if (wp.layer > 0 && wp.kind == WeightKind::w_ih)
        std::fill_n(dz.w.begin() + wp.offset, wp.numel(), 0.0);
    Plan p(c, SequenceShape::padded(5, 4, kLengths), opts());
    Plan pn(none, SequenceShape::padded(5, 4, kLengths), opts());
    const Results got = train(p, make_tensors(p, d), 1);
    const Results want = train(pn, make_tensors(pn, dz), 1);
    const double tf = 2 * tolerance(c, 5, 4, false), tb = 2 * tolerance(c, 5, 4, true);
    EXPECT_TRUE(near("y", got.y, want.y, tf));
    EXPECT_TRUE(near("hy", got.hy, want.hy, tf));
    EXPECT_TRUE(near("dx", got.dx, want.dx, tb));
    EXPECT_TRUE(near("dh0", got.dh0, want.dh0, tb));
    // Weight gradients differ only for the zeroed w_ih of upper layers (their input is 0,
    // so their gradient is 0 with dropout, and equal otherwise).
    for (const WeightParam& wp : layout.params()) {
      const bool upper_ih = wp.layer > 0 && wp.kind == WeightKind::w_ih;
      std::vector<double> g(wp.numel()), w(wp.numel());
      for (int64_t k = 0; k < wp.numel(); ++k) {
        g[k] = got.dw.get(wp.offset + k);
        w[k] = upper_ih ? 0.0 : want.dw.get(wp.offset + k);
      }
      EXPECT_TRUE(near_values(wp.name, g, w, tb));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Dropout, all_backends(), backend_param_name);

}  // namespace
}  // namespace rnnx_test
