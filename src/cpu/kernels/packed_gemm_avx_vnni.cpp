// The int8 packed GEMM on AVX-VNNI (the VEX form of vpdpbusd, on ymm; math mode int8 at ISA
// level avx2 where the CPU has it: the Xeon does, a Zen 4 has only the EVEX form): the
// layouts and packers of kernels/packed_gemm_s8.inl (the definition's own code, built here
// with this level's flags), and sub-tiles of up to 6 rows x 16 columns (12 ymm
// accumulators, two of B, one broadcast: 15 of the 16 registers) whose int32 sums are
// dequantised in the store as the definition does (packed_gemm_s8_scalar.cpp), bit for bit.
// Runs only when packed_gemm_available(PackedType::s8_avx_vnni) says so.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace rnnx::cpu::packed_avx_vnni {
namespace {

#include "cpu/kernels/packed_gemm_s8.inl"

constexpr int kSubRows = 6;  // rows of a sub-tile
constexpr int kHalf = 16;    // columns of a sub-tile: half a panel, two ymm

// Lanes [0, n) of 8 as a maskload/maskstore mask.
inline __m256i lanes8(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 0 ? 0 : n > 8 ? 8 : n)), index);
}

// C[0:MR, 0:ncols] (+)= dequantised (A * B) over `depth` slots: `a` the sub-tile's first row
// in a packed A block whose chunks hold `rows` rows, `b` the half panel's first column in a
// panel ([depth][kPanel] slots), `w_scales` and `comp` the half panel's columns'.
template <int MR>
void sub_tile(int64_t depth, const int32_t* __restrict a, int64_t rows, const int32_t* __restrict b,
              const float* a_scales, const float* w_scales, const int32_t* comp, float* C,
              int64_t ldc, int64_t ncols, bool accumulate) {
  __m256i acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  const int64_t chunks = depth / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const int32_t* ac = a + c * rows * kChunk;
    const int32_t* bc = b + c * kChunk * kPanel;
#pragma GCC unroll 4
    for (int s = 0; s < kChunk; ++s) {
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bc + s * kPanel));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bc + s * kPanel + 8));
#pragma GCC unroll 6
      for (int i = 0; i < MR; ++i) {
        const __m256i av = _mm256_set1_epi32(ac[i * kChunk + s]);
        acc[i][0] = _mm256_dpbusd_avx_epi32(acc[i][0], av, b0);
        acc[i][1] = _mm256_dpbusd_avx_epi32(acc[i][1], av, b1);
      }
    }
  }
  for (int v = 0; v < 2; ++v) {
    const int64_t n = ncols - 8 * v;
    if (n <= 0) break;
    const __m256i m = lanes8(n);
    const __m256 sw = _mm256_loadu_ps(w_scales + 8 * v);
    const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(comp + 8 * v));
    for (int i = 0; i < MR; ++i) {
      float* cp = C + i * ldc + 8 * v;
      // dequantize(): float(sum - comp), times (sa * sw), then + C.
      const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[i][v], cv));
      __m256 r = _mm256_mul_ps(x, _mm256_mul_ps(_mm256_set1_ps(a_scales[i]), sw));
      if (accumulate) r = _mm256_add_ps(_mm256_maskload_ps(cp, m), r);
      _mm256_maskstore_ps(cp, m, r);
    }
  }
}

using SubTileFn = void (*)(int64_t, const int32_t*, int64_t, const int32_t*, const float*,
                           const float*, const int32_t*, float*, int64_t, int64_t, bool);
constexpr SubTileFn kSubTiles[kSubRows] = {&sub_tile<1>, &sub_tile<2>, &sub_tile<3>,
                                           &sub_tile<4>, &sub_tile<5>, &sub_tile<6>};

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  const int64_t depth = s8_depth(K);
  const float* a_scales = a_packed + M * depth;
  const auto* ap = reinterpret_cast<const int32_t*>(a_packed);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const auto* panel = reinterpret_cast<const int32_t*>(b_packed + p * panel_slots(K));
    const auto* w_scales = reinterpret_cast<const float*>(panel + depth * kPanel);
    const int32_t* comp = panel + depth * kPanel + kPanel;
    for (int64_t m0 = 0; m0 < M; m0 += kRows) {
      const int64_t rows = min64(kRows, M - m0);
      const int32_t* block = ap + m0 * depth;
      for (int64_t h = 0; h < kPanel; h += kHalf) {
        const int64_t ncols = min64(kHalf, N - n0 - h);
        if (ncols <= 0) break;
        for (int64_t i0 = 0; i0 < rows; i0 += kSubRows) {
          const int64_t mr = min64(kSubRows, rows - i0);
          kSubTiles[mr - 1](depth, block + i0 * kChunk, rows, panel + h, a_scales + m0 + i0,
                            w_scales + h, comp + h, C + (m0 + i0) * ldc + n0 + h, ldc, ncols,
                            accumulate);
        }
      }
    }
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_avx_vnni
