// The cpu backend against the reference on the problem list of problems.hpp, in float32
// (tolerance from the accumulation depth) and float64 (tight): forward for inference and
// training (y, hy, cy), backward (dx, dh0, dc0, weight gradients in overwrite and
// accumulate mode, with dy/dhy/dcy present or absent).
#include <gtest/gtest.h>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

TEST(CpuBackend, Available) {
  ASSERT_TRUE(cpu_backend_available())
      << "every cpu plan throws Status::unsupported: the cpu backend is not built, so every "
         "cpu test of this suite is skipped";
  Config c = make_config(CellType::lstm, 3, 5, 1, false, DataType::f32);
  Plan p(c, SequenceShape::padded(2, 2), backend_options(Backend::cpu));
  EXPECT_NE(p.impl_name(), "reference");
  EXPECT_EQ(p.impl_name().rfind("cpu", 0), 0u) << p.impl_name();
}

using Param = std::tuple<TestCase, DataType>;

class CpuVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(CpuVsReference, ForwardAndBackward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  check_cpu_against_reference(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Problems, CpuVsReference,
                         ::testing::Combine(::testing::ValuesIn(cpu_vs_reference_cases()),
                                            ::testing::Values(DataType::f32, DataType::f64)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

// The reference itself on the NaN problems of the list: NaN stays in its own sequence,
// goes where the policy sends it (the cpu backend is held to the same by the list above).
class ReferenceNanPolicy : public ::testing::TestWithParam<TestCase> {};

TEST_P(ReferenceNanPolicy, NanGoesWhereThePolicySays) {
  TestCase p = GetParam();
  const Config& c = p.cfg;
  Plan ref(c, p.shape, backend_options(Backend::reference));
  const Geometry g = geometry_of(p.shape);
  Data d = make_data(c, g.lengths, fnv1a(p.name), p.data);
  const int64_t bn = 1, tn = 2;  // where the NaN sits
  d.x.at(bn).at(tn * c.input_size) = kNaN;
  const Results r = run(ref, make_tensors(ref, d, 0.0, 0.0));
  const Seqs y = read_seqs(g, r.y, out_width(c));
  const int64_t W = out_width(c);
  const bool replace_r = c.proj_clip.enabled && c.clip_nan == NanPolicy::replace;
  for (int64_t b = 0; b < g.B; ++b) {
    for (int64_t t = 0; t < g.lengths[b]; ++t) {
      for (int64_t j = 0; j < W; ++j) {
        const double v = y[b][t * W + j];
        if (b != bn) {
          ASSERT_FALSE(std::isnan(v)) << "NaN leaked into another sequence: b=" << b;
          continue;
        }
        if (replace_r) {
          // Projection clip with NaN replaced: every output is finite, and the NaN step of
          // the first layer becomes proj_clip.hi -- visible in y only for L = 1; in upper
          // layers, finiteness is what the policy promises.
          ASSERT_FALSE(std::isnan(v)) << "t=" << t << " j=" << j;
        } else if (c.num_layers == 1 && !c.bidirectional) {
          // Propagate (or no clip on r): NaN from the NaN step on, finite before.
          ASSERT_EQ(std::isnan(v), t >= tn) << "t=" << t << " j=" << j;
        }
      }
    }
  }
}

std::vector<TestCase> nan_cases() {
  std::vector<TestCase> v;
  for (const TestCase& p : cpu_vs_reference_cases())
    if (p.nan_in_x) v.push_back(p);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Problems, ReferenceNanPolicy, ::testing::ValuesIn(nan_cases()),
                         [](const ::testing::TestParamInfo<TestCase>& info) {
                           return info.param.name;
                         });

// The NaN policy on every backend: with replace, NaN in a clipped state becomes the
// upper bound (config.hpp: what fmax(lo, fmin(x, hi)) gives) -- exactly proj_clip.hi in y
// at the NaN step (one layer, one direction: y is the clipped r), and the sequence
// recovers because the recurrent state is the clipped r; with propagate, NaN stays.
class NanPolicyOnBackends : public ::testing::TestWithParam<BackendParam> {};

TEST_P(NanPolicyOnBackends, ReplaceGivesTheUpperBound) {
  RNNX_SKIP_UNLESS_AVAILABLE(GetParam().backend);
  for (NanPolicy nan : {NanPolicy::replace, NanPolicy::propagate}) {
    SCOPED_TRACE(nan == NanPolicy::replace ? "replace" : "propagate");
    Config c = make_config(CellType::lstm, 3, 6, 1, false, GetParam().dtype, 2);
    c.cell_clip = {true, -0.5, 0.4};
    c.proj_clip = {true, -0.1, 0.05};
    c.clip_nan = nan;
    Plan plan(c, SequenceShape::padded(4, 2, {4, 3}), backend_options(GetParam().backend));
    Data d = make_data(c, {4, 3}, 5);
    d.x[0][1 * 3 + 2] = kNaN;  // b = 0, t = 1
    const Results r = run(plan, make_tensors(plan, d));
    const Seqs y = read_seqs(geometry_of(plan.shape()), r.y, 2);
    const double hi = Buf::from(c.dtype, {0.05}).get(0);  // the bound in the plan's type
    for (int64_t j = 0; j < 2; ++j) {
      if (nan == NanPolicy::replace) {
        EXPECT_EQ(y[0][1 * 2 + j], hi) << "NaN must become proj_clip.hi";
        EXPECT_TRUE(std::isfinite(y[0][3 * 2 + j]));
      } else {
        EXPECT_TRUE(std::isnan(y[0][1 * 2 + j]));
        EXPECT_TRUE(std::isnan(y[0][3 * 2 + j]));
      }
      EXPECT_TRUE(std::isfinite(y[0][0 * 2 + j]));
      EXPECT_TRUE(std::isfinite(y[1][2 * 2 + j]));
    }
    // cell_clip: with replace c becomes cell_clip.hi and stays finite to the end.
    for (int64_t j = 0; j < 6; ++j) {
      const double cy = r.cy.get(0 * 6 + j);
      if (nan == NanPolicy::replace) {
        EXPECT_TRUE(std::isfinite(cy)) << j;
      } else {
        EXPECT_TRUE(std::isnan(cy)) << j;
      }
      EXPECT_TRUE(std::isfinite(r.cy.get(1 * 6 + j))) << "the other sequence";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, NanPolicyOnBackends, all_backends(), backend_param_name);

}  // namespace
}  // namespace rnnx_test
