// The element-wise cell math written once (src/core/cell_math.hpp: the cpu backend's
// extended-cell kernels run it over vectors, the CUDA step kernels one value at a time), here
// over core::cell::Scalar<double> as the CUDA kernels and the host tests run it, against the
// reference's cell on one hidden unit: weights chosen so that the
// reference's GEMMs produce exactly the pre-activations handed to the element functions
// (x = [1], W_ih = the pre-activations, W_hh = 0 but for GRU's n row), then every output and
// gradient compared, for every cell, both GRU variants, peepholes, gate clip, input_forget,
// cell clip with both NaN policies, and each of ONNX's activations. Runs in every build.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/cell_math.hpp"
#include "problems.hpp"
#include "reference/cell_math.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

namespace cell = rnnx::core::cell;
using V = cell::Scalar<double>;

// The gate clip's masks as the CUDA kernels hold them.
struct Keep {
  bool* m;
  void operator()(int q, bool pass) const { m[q] = pass; }
};
struct Masks {
  const bool* m;
  bool on() const { return m != nullptr; }
  bool operator()(int q) const { return m[q]; }
};
using reference::CellRecord;
using reference::CellWeights;
using reference::WeightView;

struct Variant {
  std::string name;
  Config cfg;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  auto cfg = [](CellType cell) {
    Config c = make_config(cell, 1, 1, 1, false, DataType::f64);
    c.bias = cell == CellType::gru;  // GRU's n row carries b_hn
    return c;
  };
  out.push_back({"lstm", cfg(CellType::lstm)});
  Config c = cfg(CellType::lstm);
  c.peephole = true;
  c.gate_clip = 1.5;
  c.cell_clip = {true, -0.4, 0.5};
  out.push_back({"lstm_peephole_gateclip_cellclip", c});
  c.clip_nan = NanPolicy::replace;
  c.input_forget = true;
  out.push_back({"lstm_inputforget_replace", c});
  c = cfg(CellType::lstm);
  c.activations = {default_activation(ActivationKind::hard_sigmoid),
                   default_activation(ActivationKind::softsign),
                   default_activation(ActivationKind::elu)};
  out.push_back({"lstm_hardsigmoid_softsign_elu", c});
  c.activations = {default_activation(ActivationKind::sigmoid),
                   {ActivationKind::scaled_tanh, 1.5, 0.7},
                   default_activation(ActivationKind::softplus)};
  out.push_back({"lstm_scaledtanh_softplus", c});
  out.push_back({"gru", cfg(CellType::gru)});
  c = cfg(CellType::gru);
  c.gru_linear_before_reset = false;
  out.push_back({"gru_original", c});
  c.gate_clip = 1.2;
  c.activations = {{ActivationKind::leaky_relu, 0.1, 0}, {ActivationKind::affine, 0.8, 0.1}};
  out.push_back({"gru_original_gateclip_leaky_affine", c});
  out.push_back({"rnn_tanh", cfg(CellType::rnn_tanh)});
  out.push_back({"rnn_relu", cfg(CellType::rnn_relu)});
  c = cfg(CellType::rnn_tanh);
  c.activations = {{ActivationKind::thresholded_relu, 0.3, 0}};
  c.gate_clip = 2.0;
  out.push_back({"rnn_thresholdedrelu_gateclip", c});
  return out;
}

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

class CellMath : public ::testing::TestWithParam<Variant> {};

TEST_P(CellMath, MatchesTheReferenceOnOneUnit) {
  const Config& c = GetParam().cfg;
  const auto acts = direction_activations(c, 0);
  const auto o = cell::options_for<double>(c, acts);
  const int64_t G = gates_per_cell(c.cell);
  Rng rng(fnv1a(GetParam().name));
  const double tol = 1e-12;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> w_ih(G), w_hh(G, 0.0), b_ih(G, 0.0), b_hh(G, 0.0), peep(3, 0.0);
    for (double& v : w_ih) v = rng.uniform(-3.0, 3.0);
    if (c.peephole)
      for (double& v : peep) v = rng.uniform(-1.0, 1.0);
    double wn = 0.0, bn = 0.0;
    if (c.cell == CellType::gru) {
      wn = rng.uniform(-1.5, 1.5);
      bn = rng.uniform(-1.0, 1.0);
      w_hh[2] = wn;
      b_hh[2] = bn;
    }
    const double h_prev = rng.uniform(-1.0, 1.0), c_prev = rng.uniform(-1.0, 1.0);
    const double dh = rng.uniform(-1.0, 1.0), dc = rng.uniform(-1.0, 1.0);
    CellWeights w;
    w.w_ih = WeightView(w_ih.data(), G, 1);
    w.w_hh = WeightView(w_hh.data(), G, 1);
    if (c.bias) w.b_ih = WeightView(b_ih.data(), G, 1), w.b_hh = WeightView(b_hh.data(), G, 1);
    if (c.peephole) w.w_peephole = WeightView(peep.data(), 3, 1);
    std::vector<double> g_ih(G, 0.0), g_hh(G, 0.0), g_bi(G, 0.0), g_bh(G, 0.0), g_p(3, 0.0);
    CellWeights g;
    g.w_ih = WeightView(g_ih.data(), G, 1);
    g.w_hh = WeightView(g_hh.data(), G, 1);
    if (c.bias) g.b_ih = WeightView(g_bi.data(), G, 1), g.b_hh = WeightView(g_bh.data(), G, 1);
    if (c.peephole) g.w_peephole = WeightView(g_p.data(), 3, 1);
    const double x = 1.0;
    std::vector<double> h{h_prev}, cs{c_prev};
    CellRecord rec;
    reference::cell_forward(c, acts, w, &x, h, cs, &rec);
    std::vector<double> rdh{dh}, rdc{dc};
    double rdx = 0.0;
    reference::cell_backward(c, acts, w, g, &x, rec, rdh, rdc, &rdx);
    SCOPED_TRACE("trial " + std::to_string(trial));

    const bool clip = o.gate.enabled;
    if (c.cell == CellType::lstm) {
      double a[4] = {w_ih[0], w_ih[1], w_ih[2], w_ih[3]};
      const double p[3] = {peep[0], peep[1], peep[2]};
      bool pass[4];
      const auto f = cell::lstm_forward<V>(o, a, c_prev, p, Keep{pass});
      EXPECT_NEAR(f.h, h[0], tol);
      EXPECT_NEAR(f.c, cs[0], tol);
      const bool cell_pass = !o.cell.enabled || cell::clamp_passes<V>(f.c_raw, o.cell);
      const auto b = cell::lstm_backward<V>(o, a, f.c, c_prev, p, dh, dc,
                                            Masks{clip ? pass : nullptr}, Masks{&cell_pass});
      for (int q = 0; q < 4; ++q) EXPECT_NEAR(b.da[q], g_ih[q], tol) << "gate " << q;
      EXPECT_NEAR(b.dc_prev, rdc[0], tol);
      const double dpeep[3] = {b.da[0] * c_prev, b.da[1] * c_prev, b.da[3] * f.c};
      for (int q = 0; q < 3 && c.peephole; ++q)
        EXPECT_NEAR(dpeep[q], g_p[q], tol) << "peephole " << q;
    } else if (c.cell == CellType::gru) {
      const bool lbr = c.gru_linear_before_reset;
      double a[3] = {w_ih[0], w_ih[1], 0.0};
      bool pass[3];
      const auto s = cell::gru_gates<V>(o, a, Keep{pass});
      const double hn = lbr ? wn * h_prev + bn : wn * (s.r * h_prev) + bn;
      a[2] = lbr ? cell::gru_lbr_n_input<V>(w_ih[2], s.r, hn) : w_ih[2] + hn;
      const auto out = cell::gru_output<V>(o, a[2], s.z, h_prev, Keep{pass});
      EXPECT_NEAR(out.h, h[0], tol);
      const auto b = cell::gru_backward<V>(o, lbr, a, hn, h_prev, dh, Masks{clip ? pass : nullptr});
      double da_r = b.da[0], dh_prev = b.dh_prev + wn * b.dhn;
      if (!lbr) {
        const double drh = wn * b.dhn;
        const auto reset =
            cell::gru_backward_reset<V>(o, a[0], h_prev, drh, Masks{clip ? pass : nullptr});
        da_r = reset.da_r;
        dh_prev = b.dh_prev + drh * reset.r;
      }
      EXPECT_NEAR(da_r, g_ih[0], tol);
      EXPECT_NEAR(b.da[1], g_ih[1], tol);
      EXPECT_NEAR(b.da[2], g_ih[2], tol);
      EXPECT_NEAR(b.dhn, g_bh[2], tol) << "gradient of W_hn h + b_hn (or of W_hn (r*h) + b_hn)";
      EXPECT_NEAR(dh_prev, rdh[0], tol);
    } else {
      double a = w_ih[0];
      bool pass[1];
      const double hv = cell::rnn_forward<V>(o, a, Keep{pass});
      EXPECT_NEAR(hv, h[0], tol);
      EXPECT_NEAR(cell::rnn_backward<V>(o, a, dh, Masks{clip ? pass : nullptr}), g_ih[0], tol);
    }
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, CellMath, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.name;
                         });

// The clamp's NaN policy, as docs/math.md states it.
TEST(CellMath, ClampNanPolicy) {
  const double nan = std::nan("");
  const cell::Clamp<double> keep(true, -1.0, 2.0, NanPolicy::propagate);
  const cell::Clamp<double> replace(true, -1.0, 2.0, NanPolicy::replace);
  EXPECT_TRUE(std::isnan(cell::clamp_value<V>(nan, keep)));
  EXPECT_TRUE(cell::clamp_passes<V>(nan, keep));
  EXPECT_EQ(cell::clamp_value<V>(nan, replace), 2.0);
  EXPECT_FALSE(cell::clamp_passes<V>(nan, replace));
  EXPECT_EQ(cell::clamp_value<V>(-3.0, keep), -1.0);
  EXPECT_FALSE(cell::clamp_passes<V>(2.5, keep));
  EXPECT_TRUE(cell::clamp_passes<V>(2.0, keep));
}

// Backward takes an activation's value and derivative together (activate_with_grad) and the
// fixed cells take the derivative from the value they kept (sigmoid_from_value, ...): both
// must give the very bits of activate and activation_grad called apart, which the extended
// cells' results before the shared math relied on. Every kind, float32, inputs across the
// kinks, saturation, infinities and NaN.
TEST(CellMath, ValueAndDerivativeTogetherAreTheSameBits) {
  using F32 = cell::Scalar<float>;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,  -0.0f,  1.0f,  -1.0f,  0.3f, 2.5f, -2.5f,
                           20.0f, -20.0f, 90.0f, -90.0f, inf,  -inf, std::nanf("")};
  Rng rng(7);
  for (int i = 0; i < 200; ++i) xs.push_back(static_cast<float>(rng.uniform(-8.0, 8.0)));
  auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
  };
  for (int k = 0; k <= static_cast<int>(ActivationKind::softplus); ++k) {
    const Activation act = k == static_cast<int>(ActivationKind::scaled_tanh)
                               ? Activation{ActivationKind::scaled_tanh, 1.5, 0.7}
                               : default_activation(static_cast<ActivationKind>(k));
    for (float x : xs) {
      const auto vg = cell::activate_with_grad<F32>(act, x);
      EXPECT_TRUE(same(vg.value, cell::activate<F32>(act, x))) << to_string(act.kind) << " " << x;
      EXPECT_TRUE(same(vg.grad, cell::activation_grad<F32>(act, x)))
          << to_string(act.kind) << " " << x;
    }
  }
  for (float x : xs) {
    const Activation sig = default_activation(ActivationKind::sigmoid);
    const Activation th = default_activation(ActivationKind::tanh);
    const Activation re = default_activation(ActivationKind::relu);
    EXPECT_TRUE(same(cell::sigmoid_from_value<F32>(cell::activate<F32>(sig, x)).grad,
                     cell::activation_grad<F32>(sig, x)))
        << x;
    EXPECT_TRUE(same(cell::tanh_from_value<F32>(cell::activate<F32>(th, x)).grad,
                     cell::activation_grad<F32>(th, x)))
        << x;
    EXPECT_TRUE(same(cell::relu_from_value<F32>(cell::activate<F32>(re, x)).grad,
                     cell::activation_grad<F32>(re, x)))
        << x;
  }
}

// Without peepholes the cell adds nothing to the gates' pre-activations: an infinite previous
// cell state does not turn them into NaN (0 * inf), as a zero peephole weight would.
TEST(CellMath, NoPeepholeTermWithoutPeepholes) {
  Config c = make_config(CellType::lstm, 1, 1, 1, false, DataType::f64);
  const auto o = cell::options_for<double>(c, direction_activations(c, 0));
  ASSERT_FALSE(o.peephole);
  double a[4] = {0.5, -0.5, 0.25, 1.0};
  const double p[3] = {0.0, 0.0, 0.0};
  const double inf = std::numeric_limits<double>::infinity();
  cell::lstm_forward<V>(o, a, inf, p, cell::Discard{});
  EXPECT_EQ(a[0], 0.5);
  EXPECT_EQ(a[1], -0.5);
  EXPECT_EQ(a[3], 1.0);
}

}  // namespace
}  // namespace rnnx_test
