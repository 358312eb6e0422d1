// fma_avx2_f32 (peak_kernels.hpp), built with the avx2 flags.
// GCC 12 warns inside its own intrinsics header (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "peak_kernels.hpp"

namespace rnnx::peak {

double fma_avx2_f32(int64_t iterations) {
  constexpr int kChains = 12;  // of 16 ymm registers; the two constants take two more
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  volatile float sink = lanes[0] + lanes[7];
  (void)sink;
  return 2.0 * 8 * kChains * static_cast<double>(iterations);
}

}  // namespace rnnx::peak
