// int8_avx2_maddubs (peak_kernels.hpp), built with the avx2 flags.
// GCC 12 warns inside its own intrinsics header (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "peak_kernels.hpp"

namespace rnnx::peak {

double int8_avx2_maddubs(int64_t iterations) {
  // The uint8 operands come from a small table in L1 (loads use their own ports, as a GEMM
  // kernel's operand loads do), at addresses that change every iteration, so nothing is
  // loop-invariant; each chain's only dependency is its int32 accumulator (one vpaddd).
  constexpr int kChains = 12;  // of 16 ymm registers; the two constants take two more
  constexpr int kTable = 64;   // start positions; the table has kChains more vectors
  alignas(32) static thread_local uint8_t table[kTable + kChains][32];
  for (int v = 0; v < kTable + kChains; ++v) {
    for (int b = 0; b < 32; ++b) table[v][b] = static_cast<uint8_t>(v * 7 + b * 13);
  }
  __m256i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_setzero_si256();
  const __m256i w = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iterations; ++i) {
    const uint8_t(*row)[32] = table + ((i * kChains) & (kTable - 1));  // one address a step
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) {
      const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(row[c]));
      const __m256i pairs = _mm256_maddubs_epi16(a, w);  // 16 x (2 u8 x s8, saturated)
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(pairs, ones));  // 8 x int32
    }
  }
  __m256i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_epi32(sum, acc[c]);
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  volatile int32_t sink = lanes[0] + lanes[7];
  (void)sink;
  // 32 multiply-adds (64 operations) per chain and iteration.
  return 2.0 * 32 * kChains * static_cast<double>(iterations);
}

}  // namespace rnnx::peak
