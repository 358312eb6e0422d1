// fma_avx512_f32 (peak_kernels.hpp), built with the avx512 flags.
// GCC 12 warns inside its own intrinsics header (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "peak_kernels.hpp"

namespace rnnx::peak {

double fma_avx512_f32(int64_t iterations) {
  // 24 chains: 4-cycle latency x 2 ports needs 8; more hides scheduling noise.
  constexpr int kChains = 24;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  volatile float sink = _mm512_reduce_add_ps(sum);
  (void)sink;
  return 2.0 * 16 * kChains * static_cast<double>(iterations);
}

}  // namespace rnnx::peak
