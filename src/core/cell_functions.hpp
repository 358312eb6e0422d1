// The element-wise functions of the cells, templated on the working type, shared by every
// backend: ONNX's activation functions and their derivatives, the clamp with its NaN
// policy (docs/math.md), and which way a direction runs in time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "rnnx/config.hpp"

namespace rnnx::core {

// Direction d runs from each sequence's last element to its first: the second direction
// of a bidirectional network, or the one direction of a `reverse` network.
inline bool direction_reversed(const Config& c, int64_t d) {
  return (d == 1) != c.reverse;
}

template <typename T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

template <typename T>
T activate(const Activation& a, T x) {
  const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta);
  switch (a.kind) {
    case ActivationKind::sigmoid:
      return sigmoid(x);
    case ActivationKind::tanh:
      return std::tanh(x);
    case ActivationKind::relu:
      return std::max(x, T(0));
    case ActivationKind::affine:
      return alpha * x + beta;
    case ActivationKind::leaky_relu:
      return x >= T(0) ? x : alpha * x;
    case ActivationKind::thresholded_relu:
      return x >= alpha ? x : T(0);
    case ActivationKind::scaled_tanh:
      return alpha * std::tanh(beta * x);
    case ActivationKind::hard_sigmoid:
      return std::min(std::max(alpha * x + beta, T(0)), T(1));
    case ActivationKind::elu:
      return x >= T(0) ? x : alpha * (std::exp(x) - T(1));
    case ActivationKind::softsign:
      return x / (T(1) + std::fabs(x));
    case ActivationKind::softplus:
      return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return x;
}

// The derivative at x; at a kink see docs/math.md.
template <typename T>
T activation_grad(const Activation& a, T x) {
  const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta);
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const T s = sigmoid(x);
      return s * (T(1) - s);
    }
    case ActivationKind::tanh: {
      const T t = std::tanh(x);
      return T(1) - t * t;
    }
    case ActivationKind::relu:
      return x > T(0) ? T(1) : T(0);
    case ActivationKind::affine:
      return alpha;
    case ActivationKind::leaky_relu:
      return x >= T(0) ? T(1) : alpha;
    case ActivationKind::thresholded_relu:
      return x >= alpha ? T(1) : T(0);
    case ActivationKind::scaled_tanh: {
      const T t = std::tanh(beta * x);
      return alpha * beta * (T(1) - t * t);
    }
    case ActivationKind::hard_sigmoid: {
      const T v = alpha * x + beta;
      return v > T(0) && v < T(1) ? alpha : T(0);
    }
    case ActivationKind::elu:
      return x >= T(0) ? T(1) : alpha * std::exp(x);
    case ActivationKind::softsign: {
      const T d = T(1) + std::fabs(x);
      return T(1) / (d * d);
    }
    case ActivationKind::softplus:
      return sigmoid(x);
  }
  return T(1);
}

// Clamp to [lo, hi] when enabled, following the NaN policy (replace: NaN becomes hi).
template <typename T>
T clamp_value(T v, bool enabled, T lo, T hi, NanPolicy nan) {
  if (!enabled) return v;
  if (std::isnan(v)) return nan == NanPolicy::replace ? hi : v;
  return std::min(std::max(v, lo), hi);
}

// Whether the gradient passes the clamp: the value was inside [lo, hi], or NaN propagated.
template <typename T>
bool clamp_passes(T raw, bool enabled, T lo, T hi, NanPolicy nan) {
  if (!enabled) return true;
  if (std::isnan(raw)) return nan == NanPolicy::propagate;
  return raw >= lo && raw <= hi;
}

}  // namespace rnnx::core
