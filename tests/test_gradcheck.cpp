// The backward of the reference backend (and of the cpu backend) against central finite
// differences of its own forward, in float64: dx, dh0, dc0 and every weight and bias
// gradient, for every cell, both GRU variants, projection, bidirectional multi-layer, mixed
// lengths, cell and projection clipping, dropout (a fixed counter makes the mask
// deterministic) and ONNX's cell options.
// Loss = sum(y * R1) + sum(hy * R2) + sum(cy * R3), so dy = R1, dhy = R2, dcy = R3.
#include <gtest/gtest.h>

#include <functional>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

struct GradCase {
  std::string name;
  Config cfg;
  SequenceShape shape;
  DataOptions data;  // only h0/c0 vary: R1..R3 are always given
  uint64_t dropout_counter = 0;
  bool expect_cell_clipped = false;  // some final c at a cell_clip bound
  bool expect_proj_clipped = false;  // some y at a proj_clip bound
};

std::ostream& operator<<(std::ostream& os, const GradCase& g) {
  return os << g.name;
}

GradCase grad_case(Config c, LayoutKind layout, int64_t T, int64_t B, std::vector<int64_t> lengths,
                   bool h0 = true, uint64_t counter = 0, const std::string& suffix = "") {
  c.dtype = DataType::f64;
  GradCase g;
  g.cfg = c;
  g.shape = make_shape(layout, T, B, lengths);
  g.data.h0 = g.data.c0 = h0;
  g.dropout_counter = counter;
  g.name = sanitize(Plan(c, g.shape, backend_options(Backend::reference)).problem_name() + "_" +
                    variant_tag(c, layout, g.data, GradMode::overwrite, true) + suffix);
  return g;
}

std::vector<GradCase> grad_cases() {
  using LK = LayoutKind;
  const auto& cv = cell_variants();
  const CellVariant &tanh_ = cv[0], &relu = cv[1], &lstm = cv[2], &lstmp = cv[3], &gru = cv[4],
                    &gru_orig = cv[5];
  std::vector<GradCase> v;
  v.push_back(grad_case(config_for(tanh_, 4, 5, 1, false, true), LK::time_major, 5, 3, {5, 0, 3}));
  v.push_back(grad_case(config_for(relu, 3, 4, 2, true, true), LK::batch_first, 4, 3, {4, 2, 3}));
  v.push_back(
      grad_case(config_for(lstm, 3, 4, 2, true, true), LK::time_major, 4, 3, {4, 1, 3}, false));
  v.push_back(grad_case(config_for(lstm, 3, 4, 1, false, true), LK::time_major, 3, 2, {0, 0}));
  {
    Config c = config_for(lstmp, 3, 5, 2, true, true);
    c.proj_size = 2;
    v.push_back(grad_case(c, LK::packed_sorted_indices, 4, 2, {4, 2}));
  }
  v.push_back(grad_case(config_for(gru, 3, 4, 2, true, true), LK::time_major, 4, 3, {4, 0, 2}));
  v.push_back(
      grad_case(config_for(gru_orig, 3, 4, 2, true, true), LK::time_major, 4, 3, {4, 0, 2}));
  v.push_back(grad_case(config_for(gru, 2, 3, 1, true, false), LK::batch_first, 3, 2, {3, 2}));
  v.push_back(grad_case(config_for(gru_orig, 2, 3, 1, false, false), LK::time_major, 3, 2, {1, 3}));
  v.push_back(grad_case(config_for(tanh_, 2, 3, 3, false, true), LK::time_major, 1, 1, {}));
  // Clipping. Bounds inside the range the states take (|c| ~ 0.5..1, |r| ~ 0.1 after the cell
  // clip), so that some elements are clipped; a random state lands within the FD step (1e-6) of a
  // bound with probability ~1e-6 per element.
  {
    Config c = config_for(lstm, 3, 4, 2, true, true);
    c.cell_clip = {true, -0.3, 0.35};
    GradCase g = grad_case(c, LK::time_major, 5, 3, {5, 3, 4});
    g.expect_cell_clipped = true;
    v.push_back(g);
  }
  {
    Config c = config_for(lstmp, 3, 5, 2, true, true);
    c.proj_size = 2;
    c.cell_clip = {true, -0.25, 0.3};
    c.proj_clip = {true, -0.04, 0.03};
    c.clip_nan = NanPolicy::replace;
    GradCase g = grad_case(c, LK::batch_first, 4, 3, {4, 2, 3});
    g.expect_cell_clipped = g.expect_proj_clipped = true;
    v.push_back(g);
  }
  // Dropout: the counter stored by the training forward is the one backward must use.
  {
    Config c = config_for(lstm, 3, 4, 3, true, true);
    c.dropout = 0.3;
    c.seed = 1234;
    v.push_back(grad_case(c, LK::time_major, 4, 3, {4, 2, 3}, true, 5));
  }
  {
    Config c = config_for(gru_orig, 3, 4, 2, false, true);
    c.dropout = 0.3;
    c.seed = 77;
    v.push_back(grad_case(c, LK::batch_first, 4, 3, {3, 4, 0}, true, (1ull << 32) + 1));
  }
  {
    Config c = config_for(tanh_, 3, 4, 2, true, true);
    c.dropout = 0.5;
    v.push_back(grad_case(c, LK::packed_sorted_indices, 4, 3, {2, 4, 4}, false, 3));
  }
  {
    Config c = config_for(lstmp, 2, 5, 3, true, true);
    c.proj_size = 3;
    c.cell_clip = {true, -0.3, 0.3};
    c.proj_clip = {true, -0.04, 0.03};
    c.dropout = 0.25;
    c.seed = 5;
    GradCase g = grad_case(c, LK::time_major, 3, 2, {3, 2}, true, 2);
    g.expect_proj_clipped = true;
    v.push_back(g);
  }
  // ONNX's cell options. Smooth activations (or kinks the random values are unlikely to sit
  // within the FD step of); gate_clip bounds inside the range the pre-activations take.
  using AK = ActivationKind;
  {
    Config c = config_for(lstm, 3, 4, 2, true, true);
    c.peephole = true;
    c.cell_clip = {true, -0.3, 0.35};
    v.push_back(grad_case(c, LK::time_major, 4, 3, {4, 1, 3}, true, 0, "_peephole"));
  }
  {
    Config c = config_for(lstm, 3, 4, 1, false, true);
    c.input_forget = true;
    c.peephole = true;
    v.push_back(grad_case(c, LK::batch_first, 4, 2, {4, 3}, true, 0, "_input_forget"));
  }
  {
    Config c = config_for(lstm, 3, 4, 1, false, true);
    c.reverse = true;
    c.gate_clip = 0.4;
    c.activations = {default_activation(AK::sigmoid),
                     default_activation(AK::softsign),
                     {AK::scaled_tanh, 1.5, 0.7}};
    v.push_back(grad_case(c, LK::time_major, 4, 3, {4, 0, 2}, true, 0, "_reverse_gateclip_acts"));
  }
  {
    Config c = config_for(gru_orig, 3, 4, 1, true, true);
    c.gate_clip = 0.3;
    c.activations = {default_activation(AK::softsign),
                     default_activation(AK::softplus),
                     default_activation(AK::sigmoid),
                     {AK::elu, 0.8, 0.0}};
    v.push_back(grad_case(c, LK::time_major, 4, 2, {4, 2}, true, 0, "_gateclip_acts"));
  }
  {
    Config c = config_for(gru, 3, 4, 1, false, true);
    c.reverse = true;
    c.activations = {{AK::hard_sigmoid, 0.3, 0.45}, {AK::leaky_relu, 0.2, 0.0}};
    v.push_back(grad_case(c, LK::batch_first, 3, 2, {3, 1}, true, 0, "_reverse_acts"));
  }
  {
    Config c = config_for(tanh_, 3, 4, 1, false, true);
    c.activations = {{AK::affine, 0.5, 0.1}};
    v.push_back(grad_case(c, LK::time_major, 4, 2, {4, 3}, true, 0, "_affine"));
  }
  return v;
}

class ReferenceGradCheck : public ::testing::TestWithParam<GradCase> {};

// Central differences: error = O(eps^2 f''') + O(u |L| / eps). With eps = 1e-6,
// u = 1.1e-16 and |L| ~ 10 both are below 1e-8, far under the tolerance below, while a
// wrong term in a gradient is >= 1e-3.
constexpr double kFdStep = 1e-6;
constexpr double kFdAtol = 2e-7, kFdRtol = 1e-6;

// Backward of `backend` against central differences of its own forward.
void grad_check(const GradCase& gc, Backend backend) {
  const Config& c = gc.cfg;
  Plan plan(c, gc.shape, backend_options(backend));
  const Geometry g = geometry_of(gc.shape);
  const int64_t I = c.input_size, W = out_width(c);
  DataOptions opts = gc.data;
  opts.dy = opts.dhy = opts.dcy = true;
  const Data d = make_data(c, g.lengths, 0xC0FFEE, opts);

  // Analytic: NaN in the padding of x and dy (never read), h0/c0 possibly absent.
  Tensors ta = make_tensors(plan, d, kNaN, kNaN);
  RunOptions bo;
  bo.backward = true;
  bo.dropout_counter = gc.dropout_counter;
  const Results an = run(plan, ta, bo);

  // Numeric: absent states are zeros that can be perturbed.
  Tensors tn = make_tensors(plan, d, 0.0, 0.0);
  if (!tn.h0.present()) tn.h0 = Buf(c.dtype, plan.h_numel(), 0.0);
  if (is_lstm(c) && !tn.c0.present()) tn.c0 = Buf(c.dtype, plan.c_numel(), 0.0);
  RunOptions fo;
  fo.training = true;
  fo.dropout_counter = gc.dropout_counter;
  auto loss = [&]() {
    const Results r = run(plan, tn, fo);
    double sum = 0.0;
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t t = 0; t < g.lengths[b]; ++t)
        for (int64_t j = 0; j < W; ++j) sum += r.y.get(g.row(t, b) * W + j) * d.dy[b][t * W + j];
    for (size_t i = 0; i < d.dhy.size(); ++i) sum += r.hy.get(i) * d.dhy[i];
    for (size_t i = 0; i < d.dcy.size(); ++i) sum += r.cy.get(i) * d.dcy[i];
    return sum;
  };

  if (gc.expect_cell_clipped || gc.expect_proj_clipped) {
    const Results r = run(plan, tn, fo);
    int64_t at_cell = 0, at_proj = 0;
    for (int64_t i = 0; r.cy.present() && i < r.cy.size(); ++i)
      at_cell += r.cy.get(i) == c.cell_clip.lo || r.cy.get(i) == c.cell_clip.hi;
    for (int64_t i = 0; i < r.y.size(); ++i)
      at_proj += r.y.get(i) == c.proj_clip.lo || r.y.get(i) == c.proj_clip.hi;
    if (gc.expect_cell_clipped) {
      EXPECT_GT(at_cell, 0) << "no final c at a cell_clip bound";
    }
    if (gc.expect_proj_clipped) {
      EXPECT_GT(at_proj, 0) << "no y at a proj_clip bound";
    }
  }

  int64_t checked = 0, failed = 0;
  std::ostringstream report;
  auto check = [&](const std::string& what, Buf& param, const Buf& analytic, int64_t i,
                   const std::string& label) {
    const double v = param.get(i);
    param.set(i, v + kFdStep);
    const double lp = loss();
    param.set(i, v - kFdStep);
    const double lm = loss();
    param.set(i, v);
    const double num = (lp - lm) / (2 * kFdStep), ana = analytic.get(i);
    ++checked;
    if (!(std::abs(num - ana) <= kFdAtol + kFdRtol * std::abs(ana))) {
      if (failed < 12) {
        report << "\n  " << what << label << ": analytic " << ana << " numeric " << num;
      }
      ++failed;
    }
  };

  ASSERT_TRUE(an.dx.present() && an.dh0.present() && an.dw.present());
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t t = 0; t < g.T; ++t)
      for (int64_t i = 0; i < I; ++i) {
        if (!g.real(t, b)) {
          if (g.layout != Layout::packed) {
            ASSERT_EQ(an.dx.get(g.row(t, b) * I + i), 0.0) << "dx at padding t=" << t << " b=" << b;
          }
          continue;
        }
        check("dx", tn.x, an.dx, g.row(t, b) * I + i,
              "[b=" + std::to_string(b) + ",t=" + std::to_string(t) + ",i=" + std::to_string(i) +
                  "]");
      }
  for (int64_t i = 0; i < tn.h0.size(); ++i)
    check("dh0", tn.h0, an.dh0, i, "[" + std::to_string(i) + "]");
  if (is_lstm(c)) {
    ASSERT_TRUE(an.dc0.present());
    for (int64_t i = 0; i < tn.c0.size(); ++i)
      check("dc0", tn.c0, an.dc0, i, "[" + std::to_string(i) + "]");
  }
  for (const WeightParam& wp : plan.weight_layout().params())
    for (int64_t k = 0; k < wp.numel(); ++k)
      check(wp.name, tn.w, an.dw, wp.offset + k,
            "[" + std::to_string(k / wp.cols) + "," + std::to_string(k % wp.cols) + "]");
  EXPECT_EQ(failed, 0) << failed << " of " << checked
                       << " gradients differ from central differences" << report.str();
}

TEST_P(ReferenceGradCheck, MatchesCentralDifferences) {
  grad_check(GetParam(), Backend::reference);
}

// The cpu backend in float64 on the same cases: its own gradients (the generic step
// kernels for ONNX's options included) against differences of its own forward.
class CpuGradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(CpuGradCheck, MatchesCentralDifferences) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  grad_check(GetParam(), Backend::cpu);
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuGradCheck, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

INSTANTIATE_TEST_SUITE_P(Reference, ReferenceGradCheck, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace rnnx_test
