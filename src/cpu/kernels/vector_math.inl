// float32 exp, sigmoid, tanh and log1p on [0, 1] over a vector type V, from the operations
// every ISA's V provides (src/cpu/kernels/{scalar,avx2,avx512}.cpp include this file inside
// their own namespace, so each ISA gets its own copy). Largest error over all 2^32 inputs,
// in ulp of the exact value (tests/test_cpu_kernels.cpp with RNNX_TEST_EXHAUSTIVE=1;
// docs/math.md): exp 1.01, sigmoid 2.41, tanh 1.33, subnormal results included; NaN in gives NaN
// out, exp(-inf) = 0, exp(+inf) = inf, sigmoid(-inf) = 0, sigmoid(+inf) = 1, tanh(+-inf) = +-1,
// tanh(-0) = -0. No file-level includes: this is pasted into a namespace.

#ifndef RNNX_MATH_INLINE
#define RNNX_MATH_INLINE __attribute__((always_inline)) inline
#endif

// e^x: x = n ln2 + r with |r| <= ln2/2 (Cody and Waite's two-part ln2: n * 0.693359375 is
// exact for the n that occur), e^r from Cephes expf's minimax polynomial, then e^r scaled
// by 2^n (V::scale2 produces infinities and subnormals like IEEE multiplication would).
template <class V>
RNNX_MATH_INLINE typename V::F poly_exp_core(typename V::F x) {  // x in [-104, 89], or NaN
  using F = typename V::F;
  const F n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  F r = V::fnma(n, V::set1(0.693359375f), x);
  r = V::fnma(n, V::set1(-2.12194440e-4f), r);
  F p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  // 1 + (r + r^2 p): the small part first, then one rounding at the 1.
  p = V::add(V::fma(p, V::mul(r, r), r), V::set1(1.0f));
  return V::scale2(p, n);
}

template <class V>
RNNX_MATH_INLINE typename V::F poly_exp(typename V::F x) {
  // e^x rounds to 0 below -104 and to inf above 89; the clamp keeps n finite (NaN stays).
  return poly_exp_core<V>(V::clamp(x, V::set1(-104.0f), V::set1(89.0f)));
}

// 1 / (1 + e^-x), from e = e^-|x| so that nothing overflows and negative x keep their
// relative accuracy down to the subnormals: x >= 0 gives 1/(1+e), x < 0 gives e/(1+e).
template <class V>
RNNX_MATH_INLINE typename V::F poly_sigmoid(typename V::F x) {
  using F = typename V::F;
  const F one = V::set1(1.0f);
  const F e = poly_exp_core<V>(V::at_least(V::nabs(x), V::set1(-104.0f)));  // NaN stays
  return V::div_pos(V::select(V::ge(x, V::set1(0.0f)), one, e), V::add(one, e));
}

// tanh: for |x| < 0.625 the odd polynomial x + x^3 P(x^2) of Cephes tanhf (no cancellation
// near 0); above, 1 - 2/(e^{2|x|} + 1) with the sign of x. tanh(x) rounds to +-1 for
// |x| > 9.02, so |x| is clamped at 10 first and e^{2|x|} never overflows.
template <class V>
RNNX_MATH_INLINE typename V::F poly_tanh(typename V::F x) {
  using F = typename V::F;
  const F one = V::set1(1.0f);
  const F ax = V::abs(x);
  const F z = V::mul(x, x);
  F p = V::set1(-5.70498872745e-3f);
  p = V::fma(p, z, V::set1(2.06390887954e-2f));
  p = V::fma(p, z, V::set1(-5.37397155531e-2f));
  p = V::fma(p, z, V::set1(1.33314422036e-1f));
  p = V::fma(p, z, V::set1(-3.33332819422e-1f));
  const F small = V::fma(V::mul(p, z), ax, ax);
  const F a = V::clamp(ax, V::set1(0.0f), V::set1(10.0f));  // NaN stays
  const F e = poly_exp_core<V>(V::add(a, a));
  const F large = V::sub(one, V::div_pos(V::set1(2.0f), V::add(e, one)));
  // Both parts are >= 0 (or NaN); the sign comes last so that tanh(-0) = -0.
  return V::copysign(V::select(V::lt(ax, V::set1(0.625f)), small, large), x);
}

// log(1 + u) for u in [0, 1] (or NaN): with s = u / (2 + u) in [0, 1/3],
// log(1 + u) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...); every term is positive, so the
// sum has no cancellation near 0, and 8 terms leave less than 2^-26 relative (s^2 <= 1/9).
// float32 only: float64 vectors use libm's log1p (V::log1p_unit).
template <class V>
RNNX_MATH_INLINE typename V::F poly_log1p_unit(typename V::F u) {
  using F = typename V::F;
  const F s = V::div_pos(u, V::add(u, V::set1(2.0f)));
  const F z = V::mul(s, s);
  F p = V::set1(1.0f / 15.0f);
  p = V::fma(p, z, V::set1(1.0f / 13.0f));
  p = V::fma(p, z, V::set1(1.0f / 11.0f));
  p = V::fma(p, z, V::set1(1.0f / 9.0f));
  p = V::fma(p, z, V::set1(1.0f / 7.0f));
  p = V::fma(p, z, V::set1(1.0f / 5.0f));
  p = V::fma(p, z, V::set1(1.0f / 3.0f));
  const F s2 = V::add(s, s);
  return V::fma(V::mul(s2, z), p, s2);  // 2s + 2s * z * p
}
