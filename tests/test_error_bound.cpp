// rnnx::error_bound, the accuracy every test holds the backends to: it grows with what
// accumulates rounding (steps, batch for gradients, sizes), shrinks with the type's
// epsilon, and adds bf16's rounding only where products convert; rnnx::norm_error_bound,
// the same for bf16 in norm: bf16's roundoff over the products in sequence.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace rnnx_test {
namespace {

TEST(ErrorBound, GrowsWithAccumulationDepthAndFollowsTheType) {
  const Config c = make_config(CellType::lstm, 16, 32, 2, true, DataType::f32);
  const double f = rnnx::error_bound(c, 10, 4, false);
  EXPECT_GT(f, 0.0);
  EXPECT_LT(f, 1e-3);  // well below what a wrong term would cause
  EXPECT_GT(rnnx::error_bound(c, 20, 4, false), f);
  EXPECT_EQ(rnnx::error_bound(c, 10, 8, false), f);  // forward values do not sum over B
  EXPECT_GT(rnnx::error_bound(c, 10, 4, true), f);
  EXPECT_GT(rnnx::error_bound(c, 10, 8, true), rnnx::error_bound(c, 10, 4, true));
  Config d = c;
  d.dtype = DataType::f64;
  EXPECT_LT(rnnx::error_bound(d, 10, 4, false), f * 1e-8);
  EXPECT_EQ(rnnx::error_bound(d, 10, 4, false, true), rnnx::error_bound(d, 10, 4, false));
  EXPECT_GT(rnnx::error_bound(c, 10, 4, false, true), 100 * f);  // bf16 keeps 8 bits
  Config p = c;
  p.proj_size = 8;
  EXPECT_NE(rnnx::error_bound(p, 10, 4, false), f);
}

TEST(ErrorBound, IsTheTestsTolerance) {
  const Config c = make_config(CellType::gru, 5, 7, 1, false, DataType::f32);
  EXPECT_EQ(tolerance(c, 6, 3, true), rnnx::error_bound(c, 6, 3, true, converts_to_bf16(c)));
}

// 2 * 2^-8 * sqrt(n) plus the float32 part, n the bf16 products in sequence: T + L forward
// (twice with a projection), 2n + 1 backward.
TEST(ErrorBound, NormBoundIsBf16RoundoffOverTheProductsInSequence) {
  constexpr double u = 1.0 / 256;
  const Config c = make_config(CellType::gru, 16, 32, 2, true, DataType::f32);
  EXPECT_DOUBLE_EQ(rnnx::norm_error_bound(c, 10, 4, false),
                   2 * u * std::sqrt(12.0) + rnnx::error_bound(c, 10, 4, false));
  EXPECT_DOUBLE_EQ(rnnx::norm_error_bound(c, 10, 4, true),
                   2 * u * std::sqrt(25.0) + rnnx::error_bound(c, 10, 4, true));
  const Config p = make_config(CellType::lstm, 16, 32, 2, true, DataType::f32, 8);
  EXPECT_DOUBLE_EQ(rnnx::norm_error_bound(p, 10, 4, false),
                   2 * u * std::sqrt(24.0) + rnnx::error_bound(p, 10, 4, false));
  EXPECT_DOUBLE_EQ(rnnx::norm_error_bound(p, 10, 4, true),
                   2 * u * std::sqrt(49.0) + rnnx::error_bound(p, 10, 4, true));
  // In norm, bf16 is held much tighter than element by element.
  EXPECT_LT(4 * rnnx::norm_error_bound(c, 10, 4, true), rnnx::error_bound(c, 10, 4, true, true));
  Config d = c;
  d.dtype = DataType::f64;  // never converted
  EXPECT_EQ(rnnx::norm_error_bound(d, 10, 4, true), rnnx::error_bound(d, 10, 4, true));
  EXPECT_EQ(norm_tolerance(c, 6, 3, true), rnnx::norm_error_bound(c, 6, 3, true));
}

}  // namespace
}  // namespace rnnx_test
