// The step kernels for AVX-512 (F, BW, VL, DQ; float32 in 16-lane vectors), compiled with
// those flags in this file only. Everything here has internal linkage except the table,
// so no code built for AVX-512 can be picked by the linker for another ISA's caller.
// GCC 12 warns about the deliberately undefined operand of _mm512_undefined_ps() inside its
// own intrinsics (GCC bug 105593, fixed in 13); the warning points into the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "core/column_sums.hpp"
#include "core/peephole_grad.hpp"
#include "cpu/kernel_dispatch.hpp"

namespace rnnx::cpu::avx512 {
namespace {

#include "cpu/kernels/vector_math.inl"

struct VecF32 {
  using S = float;
  using F = __m512;
  using M = __mmask16;
  static constexpr int W = 16;

  static M lanes(int n) { return static_cast<M>((1u << n) - 1u); }
  static F load(const float* p, int n) {
    return n == W ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lanes(n), p);
  }
  static void store(float* p, F v, int n) {
    if (n == W) {
      _mm512_storeu_ps(p, v);
    } else {
      _mm512_mask_storeu_ps(p, lanes(n), v);
    }
  }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  // num / d for d in [1, 2^30] (or NaN): the 14-bit reciprocal and one Newton correction
  // of the quotient, r = num - q0 d exact in the FMA (4 cheap operations instead of vdivps).
  static F div_pos(F num, F d) {
    const F x0 = _mm512_rcp14_ps(d);
    const F q0 = _mm512_mul_ps(num, x0);
    return _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, d, num), x0, q0);
  }
  static F div(F num, F d) { return _mm512_div_ps(num, d); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F sign_bit() { return _mm512_castsi512_ps(_mm512_set1_epi32(INT32_MIN)); }
  static F abs(F a) { return _mm512_andnot_ps(sign_bit(), a); }
  static F nabs(F a) { return _mm512_or_ps(a, sign_bit()); }
  static F copysign(F mag, F sgn) {  // mag >= 0
    return _mm512_or_ps(mag, _mm512_and_ps(sgn, sign_bit()));
  }
  // (v)minps/maxps return their second operand when either is NaN: x goes second.
  static F clamp(F x, F lo, F hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); }
  static F at_least(F x, F lo) { return _mm512_max_ps(lo, x); }  // NaN stays
  static F relu(F x) { return _mm512_max_ps(_mm512_setzero_ps(), x); }
  static F round(F a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static F scale2(F p, F n) { return _mm512_scalef_ps(p, n); }
  static M isnan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static M lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M le(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static M ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M mand(M a, M b) { return static_cast<M>(a & b); }
  static M mor(M a, M b) { return static_cast<M>(a | b); }
  static M mtrue() { return static_cast<M>(0xFFFF); }
  static F select(M m, F if_true, F if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  static M load_flags(const uint8_t* p, int n) {
    const __m128i b = _mm_maskz_loadu_epi8(lanes(n), p);
    return _mm_test_epi8_mask(b, b);
  }
  static void store_flags(uint8_t* p, M m, int n) {
    _mm_mask_storeu_epi8(p, lanes(n), _mm_maskz_mov_epi8(m, _mm_set1_epi8(1)));
  }
  // float16 bits (F16C's AVX-512 forms): widening exact; narrowing to nearest even, a NaN
  // quiet with its payload's top bits, overflow to infinity, subnormals exact.
  static F widen_f16(const uint16_t* p, int n) {
    const __m256i h = n == W ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                             : _mm256_maskz_loadu_epi16(lanes(n), p);
    return _mm512_cvtph_ps(h);
  }
  static void narrow_f16(uint16_t* p, F v, int n) {
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (n == W) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
    } else {
      _mm256_mask_storeu_epi16(p, lanes(n), h);
    }
  }
  static F exp(F x) { return poly_exp<VecF32>(x); }
  static F sigmoid(F x) { return poly_sigmoid<VecF32>(x); }
  static F tanh(F x) { return poly_tanh<VecF32>(x); }
  static F log1p_unit(F u) { return poly_log1p_unit<VecF32>(u); }
};

#include "cpu/kernels/step_kernels.inl"
// The generic kernels use the fixed cells' helpers (for_vectors, clamp_value, plus_dy).
#include "cpu/kernels/activations.inl"
#include "cpu/kernels/extended_step_kernels.inl"
// Last, the table of every kernel above.
#include "cpu/kernels/step_table.inl"

}  // namespace

extern constinit const StepKernels<float> kStepKernelsF32 = step_table<VecF32>("avx512", 1);

}  // namespace rnnx::cpu::avx512
