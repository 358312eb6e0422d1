// The step kernels for AVX2 + FMA (float32 in 8-lane vectors), compiled with those flags in
// this file only. Everything here has internal linkage except the table, so no code built
// for AVX2 can be picked by the linker for another ISA's caller.
#include <immintrin.h>

#include "core/column_sums.hpp"
#include "core/peephole_grad.hpp"
#include "cpu/kernel_dispatch.hpp"

namespace rnnx::cpu::avx2 {
namespace {

#include "cpu/kernels/vector_math.inl"

// 8 lanes on, then 8 off: lanes(n) loads from kLaneMask + 8 - n.
alignas(64) constexpr int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                               0,  0,  0,  0,  0,  0,  0,  0};

struct VecF32 {
  using S = float;
  using F = __m256;
  using M = __m256;  // all ones or all zeros per lane
  static constexpr int W = 8;

  static __m256i lanes(int n) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + W - n));
  }
  static F load(const float* p, int n) {
    return n == W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(n));
  }
  static void store(float* p, F v, int n) {
    if (n == W) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm256_maskstore_ps(p, lanes(n), v);
    }
  }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div_pos(F num, F d) { return _mm256_div_ps(num, d); }
  static F div(F num, F d) { return _mm256_div_ps(num, d); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F sign_bit() { return _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)); }
  static F abs(F a) { return _mm256_andnot_ps(sign_bit(), a); }
  static F nabs(F a) { return _mm256_or_ps(a, sign_bit()); }
  static F copysign(F mag, F sgn) {  // mag >= 0
    return _mm256_or_ps(mag, _mm256_and_ps(sgn, sign_bit()));
  }
  // vminps/vmaxps return their second operand when either is NaN: x goes second.
  static F clamp(F x, F lo, F hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  static F at_least(F x, F lo) { return _mm256_max_ps(lo, x); }  // NaN stays
  static F relu(F x) { return _mm256_max_ps(_mm256_setzero_ps(), x); }
  static F round(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^n for integral n in [-150, 128], as two factors 2^(n/2) that are normal floats,
  // so that the one rounding happens at the end (subnormal and infinite results included).
  static F scale2(F p, F n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const F s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const F s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  static M isnan(F a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static M lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static M ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M gt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M mand(M a, M b) { return _mm256_and_ps(a, b); }
  static M mor(M a, M b) { return _mm256_or_ps(a, b); }
  static M mtrue() { return _mm256_castsi256_ps(_mm256_set1_epi32(-1)); }
  static F select(M m, F if_true, F if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
  static M load_flags(const uint8_t* p, int n) {
    int64_t bytes = 0;
    __builtin_memcpy(&bytes, p, static_cast<size_t>(n));
    const __m256i w = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()));
  }
  static void store_flags(uint8_t* p, M m, int n) {
    const int bits = _mm256_movemask_ps(m);
    for (int l = 0; l < n; ++l) p[l] = static_cast<uint8_t>((bits >> l) & 1);
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

extern constinit const StepKernels<float> kStepKernelsF32 = step_table<VecF32>("avx2", 2);

}  // namespace rnnx::cpu::avx2
