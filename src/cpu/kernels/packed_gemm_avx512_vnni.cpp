// The int8 packed GEMM on AVX512-VNNI (math mode int8): the layouts and weight packer of
// kernels/packed_gemm_s8.inl, A quantised 16 values at a time, and a 14 x 32 micro-kernel
// of vpdpbusd (four k per instruction and lane: uint8 A broadcast, int8 B) whose int32 sums
// are dequantised in the store, as the definition (packed_gemm_s8_scalar.cpp) does, bit for
// bit. Built with the avx512 level's flags and -mavx512vnni; runs only when
// packed_gemm_available(PackedType::s8_vnni) says so.
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

namespace rnnx::cpu::packed_avx512_vnni {
namespace {

#include "cpu/kernels/packed_gemm_s8.inl"

constexpr int kVecs = kPanel / 16;  // zmm per panel row
static_assert(kRows * kVecs + kVecs + 1 <= 32, "tile must fit 32 zmm");
constexpr int64_t kPrefetchSlots = 16;  // slots of B asked for ahead

inline __mmask16 lanes(int64_t n) {
  return n <= 0    ? static_cast<__mmask16>(0)
         : n >= 16 ? static_cast<__mmask16>(0xFFFF)
                   : static_cast<__mmask16>((1u << n) - 1u);
}

// The definition's quantizer_of() on a row, 16 lanes at a time in four independent
// maxima (vmaxps's latency would otherwise bound the pass): the same maximum (max is exact
// in any order) and the same NaN/infinity test, so the same scale.
Quantizer row_quantizer(const float* src, int64_t K) {
  __m512 amax[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                    _mm512_setzero_ps()};
  __mmask16 bad[4] = {0, 0, 0, 0};
  const __m512 huge = _mm512_set1_ps(3.4028234663852886e38f);
  int64_t k = 0;
  for (; k + 64 <= K; k += 64) {
    for (int u = 0; u < 4; ++u) {
      const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(src + k + 16 * u));
      bad[u] |= _mm512_cmp_ps_mask(a, huge, _CMP_NLE_UQ);  // NaN or above the largest float
      amax[u] = _mm512_max_ps(amax[u], a);
    }
  }
  for (; k < K; k += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(lanes(K - k), src + k));
    bad[0] |= _mm512_cmp_ps_mask(a, huge, _CMP_NLE_UQ);
    amax[0] = _mm512_max_ps(amax[0], a);
  }
  const __m512 m = _mm512_max_ps(_mm512_max_ps(amax[0], amax[1]), _mm512_max_ps(amax[2], amax[3]));
  return quantizer(_mm512_reduce_max_ps(m), (bad[0] | bad[1] | bad[2] | bad[3]) != 0);
}

// The definition's pack_b_panels() for W [N, K] (trans, the weights of every int8 product),
// 16 k at a time: each column's scale as row_quantizer() finds it, its values quantised as
// pack_a_vnni() does, the four k of a slot stored together. W [K, N] (unused by int8 plans)
// goes to the definition's packer.
void pack_b_vnni(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                 int64_t p1, float* out, const int64_t* row_map) {
  if (!trans) return pack_b_panels(trans, K, N, W, ldw, p0, p1, out, row_map);
  const int64_t depth = s8_depth(K);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  for (int64_t p = p0; p < p1; ++p) {
    float* slots = out + p * panel_slots(K);
    auto* q = reinterpret_cast<int8_t*>(slots);
    float* scales = slots + depth * kPanel;
    auto* comp = reinterpret_cast<int32_t*>(scales + kPanel);
    std::memset(q, 0, static_cast<size_t>(depth * kPanel * kQuad));
    for (int j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      scales[j] = 0.0f;
      comp[j] = 0;
      if (n >= N) continue;
      const float* src = W + n * ldw;
      const Quantizer z = row_quantizer(src, K);
      scales[j] = z.scale;
      if (z.zero) continue;
      const __m512 inv = _mm512_set1_ps(z.inv);
      __m512i sum = _mm512_setzero_si512();
      for (int64_t k = 0; k < K; k += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(lanes(K - k), src + k);
        __m512i v8 = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
        v8 = _mm512_min_epi32(_mm512_max_epi32(v8, lo), hi);
        sum = _mm512_add_epi32(sum, v8);
        const __m128i bytes = _mm512_cvtepi32_epi8(v8);  // 16 k: four slots of this column
        int32_t words[4];
        std::memcpy(words, &bytes, sizeof words);
        for (int t = 0; t < 4 && k + 4 * t < K; ++t) {
          std::memcpy(q + ((k / kQuad + t) * kPanel + j) * kQuad, &words[t], 4);
        }
      }
      comp[j] = 128 * _mm512_reduce_add_epi32(sum);
    }
  }
}

void pack_a_vnni(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                 int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map) {
  if (trans || k0 != 0 || k1 != K) {
    throw std::logic_error("int8 packed A: only whole rows in order are packed");
  }
  const int64_t depth = s8_depth(K);
  float* scales = out + M * depth;
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  const __m512i offset = _mm512_set1_epi32(128);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t m0 = b * kRows;
    const int64_t rows = min64(kRows, M - m0);
    auto* block = reinterpret_cast<uint8_t*>(out + m0 * depth);
    for (int64_t i = 0; i < rows; ++i) {
      const float* src = A + (row_map ? row_map[m0 + i] : m0 + i) * lda;
      const Quantizer z = row_quantizer(src, K);
      scales[m0 + i] = z.scale;
      const __m512 inv = _mm512_set1_ps(z.inv);
      // A chunk's 16 slots of a row are 64 consecutive k, 64 consecutive bytes.
      for (int64_t c = 0; c < depth / kChunk; ++c) {
        uint8_t* dst = block + (c * rows + i) * kChunk * kQuad;
        for (int h = 0; h < 4; ++h) {
          const int64_t k = c * kChunk * kQuad + 16 * h;
          __m512i q = offset;
          if (!z.zero) {
            const __m512 v = _mm512_maskz_loadu_ps(lanes(K - k), src + k);
            // Half to even (the default MXCSR rounding), as nearbyint in the definition.
            q = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), offset);
          }
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * h), _mm512_cvtepi32_epi8(q));
        }
      }
    }
  }
}

// One tile: C[0:MR, 0:ncols] (+)= dequantised (Ap * Bp) over `depth` slots, Ap the tile's
// rows ([depth / kChunk][MR][kChunk] slots), Bp a panel ([depth][kPanel] slots, then its
// scales and compensations). Tiles of few rows keep KS independent int32 sums (added
// exactly at the end) to hide vpdpbusd's latency.
template <int MR>
void tile(int64_t depth, const int32_t* __restrict Ap, const int32_t* __restrict Bp,
          const float* a_scales, float* C, int64_t ldc, int64_t ncols, bool accumulate) {
  constexpr int KS = MR * kVecs >= 8 ? 1 : (MR * kVecs >= 4 ? 2 : 4);
  __m512i acc[KS][MR][kVecs];
#pragma GCC unroll 4
  for (int s = 0; s < KS; ++s)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[s][i][v] = _mm512_setzero_si512();
  const int64_t chunks = depth / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const int32_t* a = Ap + c * MR * kChunk;
    const int32_t* b = Bp + c * kChunk * kPanel;
#pragma GCC unroll 2
    for (int kk = 0; kk < kChunk; kk += KS) {
#pragma GCC unroll 4
      for (int s = 0; s < KS; ++s) {
        const int32_t* bk = b + (kk + s) * kPanel;
        __m512i bv[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_si512(bk + 16 * v);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          _mm_prefetch(reinterpret_cast<const char*>(bk + kPrefetchSlots * kPanel + 16 * v),
                       _MM_HINT_T0);
        }
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const __m512i av = _mm512_set1_epi32(a[i * kChunk + kk + s]);
#pragma GCC unroll 4
          for (int v = 0; v < kVecs; ++v)
            acc[s][i][v] = _mm512_dpbusd_epi32(acc[s][i][v], av, bv[v]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int s = 1; s < KS; ++s)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[0][i][v] = _mm512_add_epi32(acc[0][i][v], acc[s][i][v]);
  const auto* w_scales = reinterpret_cast<const float*>(Bp + depth * kPanel);
  const int32_t* comp = Bp + depth * kPanel + kPanel;
#pragma GCC unroll 4
  for (int v = 0; v < kVecs; ++v) {
    const int64_t n = ncols - 16 * v;
    if (n <= 0) break;
    const __mmask16 m = lanes(n);
    const __m512 sw = _mm512_loadu_ps(w_scales + 16 * v);
    const __m512i cv = _mm512_loadu_si512(comp + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* c = C + i * ldc + 16 * v;
      // dequantize(): float(sum - comp), times (sa * sw), then + C.
      const __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[0][i][v], cv));
      __m512 r = _mm512_mul_ps(x, _mm512_mul_ps(_mm512_set1_ps(a_scales[i]), sw));
      if (accumulate) r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c), r);
      _mm512_mask_storeu_ps(c, m, r);
    }
  }
}

using TileFn = void (*)(int64_t, const int32_t*, const int32_t*, const float*, float*, int64_t,
                        int64_t, bool);
constexpr TileFn kTiles[kRows] = {&tile<1>,  &tile<2>,  &tile<3>,  &tile<4>, &tile<5>,
                                  &tile<6>,  &tile<7>,  &tile<8>,  &tile<9>, &tile<10>,
                                  &tile<11>, &tile<12>, &tile<13>, &tile<14>};
static_assert(kRows == 14, "kTiles lists one tile per height");

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  const int64_t depth = s8_depth(K);
  const float* a_scales = a_packed + M * depth;
  const auto* ap = reinterpret_cast<const int32_t*>(a_packed);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const auto* bp = reinterpret_cast<const int32_t*>(b_packed + p * panel_slots(K));
    for (int64_t m0 = 0; m0 < M; m0 += kRows) {
      const int64_t rows = min64(kRows, M - m0);
      kTiles[rows - 1](depth, ap + m0 * depth, bp, a_scales + m0, C + m0 * ldc + n0, ldc,
                       min64(kPanel, N - n0), accumulate);
    }
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_vnni, &pack_a_vnni, &multiply_panels,
                                                    nullptr};

}  // namespace rnnx::cpu::packed_avx512_vnni
