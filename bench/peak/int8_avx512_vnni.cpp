// int8_avx512_vnni (peak_kernels.hpp), built with the avx512_vnni flags.
// GCC 12 warns inside its own intrinsics header (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "peak_kernels.hpp"

namespace rnnx::peak {

double int8_avx512_vnni(int64_t iterations) {
  // 12 chains: vpdpbusd's latency (4-5 cycles) times its zmm issue rate (1 per cycle on Zen 4
  // and the Xeons) needs 5. GCC 12 keeps at most 16 such chains in registers: at 20 or 24 it
  // measured half the rate on the Zen 4, so the count stays well below that.
  constexpr int kChains = 12;
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i a = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-5);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, w);
  }
  __m512i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
  volatile int32_t sink = _mm512_reduce_add_epi32(sum);
  (void)sink;
  // 64 multiply-adds (128 operations) per chain and iteration.
  return 2.0 * 64 * kChains * static_cast<double>(iterations);
}

}  // namespace rnnx::peak
