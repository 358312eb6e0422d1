// The accuracy bounds of include/rnnx/error_bound.hpp: accumulation depth x the unit
// roundoff of the type, plus bf16's rounding when the products convert; elementwise
// (error_bound) and, for bf16, in norm (norm_error_bound).
#include "rnnx/error_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rnnx {

// The bound on a backend's distance from the exact result (the reference computes in
// double and rounds each result once), from the accumulation depth:
//   A dot product of depth K computed in precision eps has error <= K*eps*sum|terms|
//   (Higham, Accuracy and Stability, 3.1); here every term is O(1): |w| <= 1/sqrt(H),
//   |x|, |h| <= 1, and sum|terms| <= K/sqrt(H) <= K, so K*eps bounds each step.
//   Forward, per step: one pre-activation of depth I_l + P' (I_l = max(I, D*P') over the
//   layers), plus the two biases, the projection (depth H), and the activation functions
//   (a vectorised exp/tanh may be off by a few ulp: counted as kActivationUlps terms).
//   Errors made at one step are carried along the sequence and up the layers; with the
//   weights above the recurrence is non-expanding on average (spectral radius of
//   W_hh ~ 1/sqrt(3)), so the step errors add up over at most T + L steps.
//   Backward adds, per step, dh = W_hh^T da and dx = W_ih^T da (depth G*H), carried
//   back the same T + L steps, and the weight gradients sum over all B*T tokens.
// kSafety = 2 covers the O(1) amplification the sum above ignores. For float32 this is
// ~1e-4..1e-3 relative, far below what a wrong equation gives (>= 1e-2), and far above
// what a correct kernel shows (~1e-6); for float64 it is ~1e-12.
//
// Math mode allow_conversion (float32 with bf16 GEMMs; resolved_math_mode, so also through
// RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION=1): each operand of a product is rounded to bf16
// (8-bit significand: relative error <= u = 2^-8 each), so each product carries a relative
// error <= 2u = 2^-7 (kBf16Product); the sums stay float32 (the bound above still applies
// on top). Unlike the accumulation's, these errors do not compound along a sum: a dot
// product's error is <= 2^-7 * sum|terms|, and since rounding to nearest makes them
// unbiased and independent they add like a random walk,
// |error| <= lambda * sqrt(n) * 2^-7 * max|term| over the n
// terms that reach a result (Higham and Mary, "A new approach to probabilistic rounding
// error analysis", 2019: probability >= 1 - 2 exp(-lambda^2 / 2); lambda = 6 gives 3e-8
// per element). n is the depth above (every term of every step that reaches a result,
// and the B*T tokens of a weight gradient) and |term| <= 1/sqrt(H) (|w| <= 1/sqrt(H),
// |x|, |h| <= 1). This is ~1e-1 for the tests' problems, where a float32 run is held to
// ~1e-4: loose enough for bf16's ~1e-2 worst element, still far below a wrong equation's
// O(1).
namespace {
// The unit roundoff of the 16-bit operands: float16's 2^-11, bfloat16's 2^-8 (also the
// converted products of allow_conversion).
double sixteen_bit_roundoff(const Config& c) {
  return c.dtype == DataType::f16 ? 1.0 / 2048 : 1.0 / 256;
}
}  // namespace

double error_bound(const Config& c, int64_t T, int64_t B, bool backward, bool bf16_products) {
  constexpr double kActivationUlps = 8, kBiases = 2, kSafety = 2;
  // bf16 data is computed in float32 (cpu) or double (reference).
  const double eps = c.dtype == DataType::f64 ? std::numeric_limits<double>::epsilon()
                                              : std::numeric_limits<float>::epsilon();
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
  const bool half_data = c.dtype == DataType::bf16 || c.dtype == DataType::f16;
  if (!half_data && (!bf16_products || c.dtype != DataType::f32)) return bound;
  constexpr double kLambda = 6;
  const double product = 2.0 * sixteen_bit_roundoff(c);  // 2u
  // 16-bit data: the products are of 16-bit operands, and each side rounds its result (|y| <=
  // 1 for the outputs, more for a gradient: relative) to 16 bits, u apiece.
  const double outputs = half_data ? product : 0.0;
  return bound + kLambda * std::sqrt(depth / static_cast<double>(c.hidden_size)) * product +
         outputs;
}

// The bound in norm of a converting run (benchdnn compares bf16 results by the relative
// 2-norm of the difference, not element by element):
//   A product a*b of two operands rounded to bf16 (8-bit significand: unit roundoff
//   u = 2^-8, round to nearest even) has a relative error |d| <= 2u (+u^2). In a sum of
//   such terms the d are unbiased and independent, so over a tensor the error's 2-norm is
//   at most 2u times the 2-norm of the terms, and where the terms have random signs (no
//   systematic cancellation) that is the 2-norm of the result: one product costs a
//   relative 2-norm error <= 2u, whatever the length K of its sums (the random walk's
//   sqrt(K) is the result's own). Products passed through one after another add
//   independent errors of that size, carried by a recurrence that is non-expanding (as
//   above), so a result that passes through n of them is off by <= 2u * sqrt(n) in norm.
//   n counts the products in sequence, the same T + L steps as the depth above:
//     forward, per step and layer one product into the gates (W_ih x and W_hh h feed one
//     sum) and, with a projection, W_hr h: n = (T + L) * (1 + [P > 0]);
//     backward, the forward's n (the saved activations carry its error), as many again
//     back through W_hh^T (and W_hr^T), and the weight gradients' product over the
//     tokens: n = 2 * (T + L) * (1 + [P > 0]) + 1.
//   No safety factor on top: 2u is each term's worst case, about three times its rms.
//   error_bound's float32 part (~1e-4) is added so that the bound never falls below the
//   float32 accumulation's rounding.
// Where a derivative jumps (ReLU at 0, a clamp at its bound) the smoothness this assumes
// breaks only for the arguments that bf16's error moves across the jump: each such flip
// switches one gradient element by its whole size, which is little of a large tensor's
// norm and may be much of a small one's (tests/problems.hpp tells those cases apart).
double norm_error_bound(const Config& c, int64_t T, int64_t B, bool backward) {
  const double accumulation = error_bound(c, T, B, backward, false);
  if (c.dtype == DataType::f64) return accumulation;
  const double u = sixteen_bit_roundoff(c);
  const double per_step = c.proj_size > 0 ? 2.0 : 1.0;
  const double forward = static_cast<double>(T + c.num_layers) * per_step;
  const double n = backward ? 2.0 * forward + 1.0 : forward;
  // 16-bit data: the results of both sides are rounded to 16 bits too (u each).
  const double outputs = c.dtype == DataType::bf16 || c.dtype == DataType::f16 ? 2.0 * u : 0.0;
  return 2.0 * u * std::sqrt(n) + outputs + accumulation;
}

}  // namespace rnnx
