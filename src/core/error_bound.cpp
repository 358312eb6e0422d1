// The accuracy bound of include/rnnx/error_bound.hpp: accumulation depth x the unit
// roundoff of the type, plus bf16's rounding when the products convert.
#include "rnnx/error_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rnnx {

double error_bound(const Config& c, int64_t T, int64_t B, bool backward, bool bf16_products) {
  // Each output element is a chain of rounded sums. Per layer and step a gate
  // pre-activation sums the input (max(I, D*P') terms for any layer), the recurrent state
  // (P'), two biases and, with projection, the H terms of r = W_hr h; the activations add
  // a few ulps each (8 covers the float32 approximations' 2.5 ulp, twice per cell, and
  // the state update). Errors carry over from step to step and from layer to layer:
  // T + L steps deep. Backward also sums the gradient of every gate back into h (G*H per
  // step) and, for the weight gradients, over every real token (T*B). kSafety covers the
  // constants of the first-order analysis.
  constexpr double kActivationUlps = 8, kBiases = 2, kSafety = 2;
  const double eps = c.dtype == DataType::f32 ? std::numeric_limits<float>::epsilon()
                                              : std::numeric_limits<double>::epsilon();
  const double out_width = static_cast<double>(c.num_directions() * c.output_size());
  const double I_l = std::max(static_cast<double>(c.input_size), out_width);
  const double P = static_cast<double>(c.output_size());
  const double proj = c.proj_size > 0 ? static_cast<double>(c.hidden_size) : 0.0;
  const double steps = static_cast<double>(T + c.num_layers);
  double depth = (I_l + P + kBiases + proj + kActivationUlps) * steps;
  if (backward) {
    depth += static_cast<double>(gates_per_cell(c.cell) * c.hidden_size) * steps +
             static_cast<double>(T * B);
  }
  const double bound = kSafety * depth * eps;
  if (!bf16_products || c.dtype != DataType::f32) return bound;
  // bf16 keeps 8 significant bits: each product is off by up to 2^-8 relative, with
  // random signs, so a sum of n of them is off by about sqrt(n) * 2^-8 times the scale of
  // one term (~1/sqrt(H) for PyTorch's initialisation); kLambda standard deviations.
  constexpr double kBf16Product = 1.0 / 256, kLambda = 6;
  return bound + kLambda * std::sqrt(depth / static_cast<double>(c.hidden_size)) * kBf16Product;
}

}  // namespace rnnx
