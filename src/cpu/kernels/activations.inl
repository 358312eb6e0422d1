// ONNX's activation functions and their derivatives over a vector type V: the one
// definition the fast path takes its activations from. The fixed-cell kernels of
// step_kernels.inl call V::sigmoid and V::tanh (vector_math.inl) directly; the generic
// kernels of onnx_step_kernels.inl call activate<V> and activation_grad<V>, whose sigmoid
// and tanh are those same functions. The reference backend keeps its own plain copy
// (src/reference/activations.hpp): that independence is what the comparisons test.
// Values at kinks and NaN as in docs/math.md: NaN in gives NaN out except
// thresholded_relu (0, as x >= alpha is false), and derivatives at NaN follow the same
// comparisons. Pasted into each ISA's namespace after its V; no file-level includes.

template <class V>
RNNX_MATH_INLINE typename V::F activate(const Activation& a, typename V::F x) {
  using S = typename V::S;
  using F = typename V::F;
  const F zero = V::set1(S(0)), one = V::set1(S(1));
  const F alpha = V::set1(static_cast<S>(a.alpha)), beta = V::set1(static_cast<S>(a.beta));
  switch (a.kind) {
    case ActivationKind::sigmoid:
      return V::sigmoid(x);
    case ActivationKind::tanh:
      return V::tanh(x);
    case ActivationKind::relu:
      return V::relu(x);
    case ActivationKind::affine:
      return V::fma(alpha, x, beta);
    case ActivationKind::leaky_relu:
      return V::select(V::ge(x, zero), x, V::mul(alpha, x));
    case ActivationKind::thresholded_relu:
      return V::select(V::ge(x, alpha), x, zero);
    case ActivationKind::scaled_tanh:
      return V::mul(alpha, V::tanh(V::mul(beta, x)));
    case ActivationKind::hard_sigmoid:
      return V::clamp(V::fma(alpha, x, beta), zero, one);
    case ActivationKind::elu:
      return V::select(V::ge(x, zero), x, V::mul(alpha, V::sub(V::exp(x), one)));
    case ActivationKind::softsign:
      return V::div(x, V::add(one, V::abs(x)));
    case ActivationKind::softplus:
      // max(x, 0) + log(1 + e^-|x|): e^-|x| is in [0, 1], nothing overflows.
      return V::add(V::relu(x), V::log1p_unit(V::exp(V::nabs(x))));
  }
  return x;
}

// The derivative at x (at a kink see docs/math.md).
template <class V>
RNNX_MATH_INLINE typename V::F activation_grad(const Activation& a, typename V::F x) {
  using S = typename V::S;
  using F = typename V::F;
  const F zero = V::set1(S(0)), one = V::set1(S(1));
  const F alpha = V::set1(static_cast<S>(a.alpha)), beta = V::set1(static_cast<S>(a.beta));
  switch (a.kind) {
    case ActivationKind::sigmoid: {
      const F s = V::sigmoid(x);
      return V::mul(s, V::sub(one, s));
    }
    case ActivationKind::tanh: {
      const F t = V::tanh(x);
      return V::fnma(t, t, one);
    }
    case ActivationKind::relu:
      return V::select(V::gt(x, zero), one, zero);
    case ActivationKind::affine:
      return alpha;
    case ActivationKind::leaky_relu:
      return V::select(V::ge(x, zero), one, alpha);
    case ActivationKind::thresholded_relu:
      return V::select(V::ge(x, alpha), one, zero);
    case ActivationKind::scaled_tanh: {
      const F t = V::tanh(V::mul(beta, x));
      return V::mul(V::mul(alpha, beta), V::fnma(t, t, one));
    }
    case ActivationKind::hard_sigmoid: {
      const F v = V::fma(alpha, x, beta);
      return V::select(V::mand(V::gt(v, zero), V::lt(v, one)), alpha, zero);
    }
    case ActivationKind::elu:
      return V::select(V::ge(x, zero), one, V::mul(alpha, V::exp(x)));
    case ActivationKind::softsign: {
      const F d = V::add(one, V::abs(x));
      return V::div(one, V::mul(d, d));
    }
    case ActivationKind::softplus:
      return V::sigmoid(x);
  }
  return one;
}

// activate and activation_grad over n contiguous values (y may equal x): for tests and for
// other element-wise code.
template <class V>
void activate_array(const Activation& a, const typename V::S* x, typename V::S* y, int64_t n) {
  for_vectors<V>(0, n, y, [&](int64_t j, int m) RNNX_KERNEL_INLINE {
    V::store(y + j, activate<V>(a, V::load(x + j, m)), m);
  });
}

template <class V>
void activation_grad_array(const Activation& a, const typename V::S* x, typename V::S* y,
                           int64_t n) {
  for_vectors<V>(0, n, y, [&](int64_t j, int m) RNNX_KERNEL_INLINE {
    V::store(y + j, activation_grad<V>(a, V::load(x + j, m)), m);
  });
}
