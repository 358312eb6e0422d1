#include <gtest/gtest.h>
#include <vector>
#include "rnnx/rnnx.hpp"
TEST(Smoke, ReferenceRuns) {
  rnnx::Config c; c.input_size = 3; c.hidden_size = 4; c.dtype = rnnx::DataType::f64;
  rnnx::Plan plan(c, rnnx::SequenceShape::padded(5, 2, {5, 3}), {rnnx::Backend::reference});
  std::vector<double> x(plan.x_numel(), 0.5), w(plan.weights_numel(), 0.1), y(plan.y_numel());
  rnnx::ForwardArgs a; a.x = x.data(); a.weights = w.data(); a.y = y.data();
  plan.forward(a);
  EXPECT_NE(y[0], 0.0);
}
