// ONNX's activation functions and their derivatives and the clamp with its NaN policy
// (docs/math.md), in double: the oracle's own plain copy. The cpu backend's fast path has
// its own vectorised definition (src/cpu/kernels/activations.inl); keeping the two apart is
// what lets a cpu-vs-reference comparison catch a wrong activation in either.
#pragma once

#include <algorithm>
#include <cmath>

#include "rnnx/config.hpp"

namespace rnnx::reference {

inline double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

inline double activate(const Activation& a, double x) {
  const double alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
    case ActivationKind::sigmoid:
      return sigmoid(x);
    case ActivationKind::tanh:
      return std::tanh(x);
    case ActivationKind::relu:
      return std::max(x, 0.0);
    case ActivationKind::affine:
      return alpha * x + beta;
    case ActivationKind::leaky_relu:
      return x >= 0.0 ? x : alpha * x;
    case ActivationKind::thresholded_relu:
      return x >= alpha ? x : 0.0;
    case ActivationKind::scaled_tanh:
      return alpha * std::tanh(beta * x);
    case ActivationKind::hard_sigmoid:
      return std::min(std::max(alpha * x + beta, 0.0), 1.0);
    case ActivationKind::elu:
      return x >= 0.0 ? x : alpha * (std::exp(x) - 1.0);
    case ActivationKind::softsign:
      return x / (1.0 + std::fabs(x));
    case ActivationKind::softplus:
      return x > 0.0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return x;
}

// The derivative at x; at a kink see docs/math.md.
inline double activation_grad(const Activation& a, double x) {
  const double alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const double s = sigmoid(x);
      return s * (1.0 - s);
    }
    case ActivationKind::tanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
    case ActivationKind::relu:
      return x > 0.0 ? 1.0 : 0.0;
    case ActivationKind::affine:
      return alpha;
    case ActivationKind::leaky_relu:
      return x >= 0.0 ? 1.0 : alpha;
    case ActivationKind::thresholded_relu:
      return x >= alpha ? 1.0 : 0.0;
    case ActivationKind::scaled_tanh: {
      const double t = std::tanh(beta * x);
      return alpha * beta * (1.0 - t * t);
    }
    case ActivationKind::hard_sigmoid: {
      const double v = alpha * x + beta;
      return v > 0.0 && v < 1.0 ? alpha : 0.0;
    }
    case ActivationKind::elu:
      return x >= 0.0 ? 1.0 : alpha * std::exp(x);
    case ActivationKind::softsign: {
      const double d = 1.0 + std::fabs(x);
      return 1.0 / (d * d);
    }
    case ActivationKind::softplus:
      return sigmoid(x);
  }
  return 1.0;
}

// Clamp to [lo, hi] when enabled, following the NaN policy (replace: NaN becomes hi).
inline double clamp_value(double v, bool enabled, double lo, double hi, NanPolicy nan) {
  if (!enabled) return v;
  if (std::isnan(v)) return nan == NanPolicy::replace ? hi : v;
  return std::min(std::max(v, lo), hi);
}

// Whether the gradient passes the clamp: the value was inside [lo, hi], or NaN propagated.
inline bool clamp_passes(double raw, bool enabled, double lo, double hi, NanPolicy nan) {
  if (!enabled) return true;
  if (std::isnan(raw)) return nan == NanPolicy::propagate;
  return raw >= lo && raw <= hi;
}

}  // namespace rnnx::reference
