// Runs one small LSTM through the installed rnnx and checks the output is finite.
#include <cmath>
#include <cstdio>
#include <rnnx/rnnx.hpp>
#include <vector>

int main() {
  rnnx::Config c;
  c.input_size = 3;
  c.hidden_size = 5;
  rnnx::Plan plan(c, rnnx::SequenceShape::padded(4, 2, {4, 2}));
  std::vector<float> x(plan.x_numel(), 0.25f), w(plan.weights_numel(), 0.1f), y(plan.y_numel());
  rnnx::ForwardArgs a;
  a.x = x.data();
  a.weights = w.data();
  a.y = y.data();
  plan.forward(a);
  std::printf("%s %s y[0] = %f\n", rnnx::build_info().version, plan.impl_name().c_str(), y[0]);
  return std::isfinite(y[0]) && y[0] != 0.0f ? 0 : 1;
}
