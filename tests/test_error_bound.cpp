// rnnx::error_bound, the accuracy every test holds the backends to: it grows with what
// accumulates rounding (steps, batch for gradients, sizes), shrinks with the type's
// epsilon, and adds bf16's rounding only where products convert.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace rnnx_test
