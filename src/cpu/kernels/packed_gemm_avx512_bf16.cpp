// The packed GEMM's AVX512-BF16 kernels (math mode allow_conversion): float32 operands
// rounded to bf16 (round to nearest even) when they are packed, products accumulated in
// float32 by vdpbf16ps. Packed B keeps pairs of consecutive k of a column in one 32-bit
// slot, [KP][kPackedPanel][2] per panel; packed A keeps pairs of a row's consecutive k,
// [KP / 16][rows][16][2] per tile, KP = ceil(K/2) rounded up to whole chunks of 16 pairs,
// the padding zero (AMX tiles, packed_gemm_amx.cpp, then need no partial chunk). They are
// the float32 layouts of packed_gemm_avx512.cpp with K halved and every element a pair.
// The micro-kernel is the same 14 x 32 tile (kernels/packed_tile_avx512.inl: 28 zmm
// accumulators), one vdpbf16ps doing two k per column.
// Built with the avx512-bf16 level's flags (as packed_gemm_avx512.cpp); runs only when
// packed_gemm_available(PackedType::bf16) says so.
#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace rnnx::cpu::packed_avx512_bf16 {
namespace {

// One step of k per pair: vdpbf16ps multiplies both of a slot's bf16 and adds them.
struct Dot {
  using Elem = int32_t;
  using Operand = __m512i;
  static Operand load(const int32_t* p) { return _mm512_loadu_si512(p); }
  static Operand broadcast(int32_t a) { return _mm512_set1_epi32(a); }
  static __m512 madd(__m512 acc, __m512i a, __m512i b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }
};
// Pairs of K rounded up to whole chunks: the k extent of packed A and B.
inline int64_t packed_depth(int64_t K) {
  return ((K + 1) / 2 + kPackedDepthChunk - 1) / kPackedDepthChunk * kPackedDepthChunk;
}
inline int64_t tile_depth(int64_t K) {
  return packed_depth(K);
}

#include "cpu/kernels/packed_tile_avx512.inl"

inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}
inline __mmask32 lanes32(int64_t n) {
  return n <= 0 ? 0u : n >= 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << n) - 1u);
}

// bf16 of lo and hi (16 floats each), interleaved lo[0], hi[0], lo[1], hi[1], ...: the
// pairs of 16 columns of two consecutive k.
inline __m512i interleave_bf16(__m512 lo, __m512 hi) {
  const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo, then hi
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, both);
}

void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map) {
  const int64_t KP = packed_depth(K);
  for (int64_t p = p0; p < p1; ++p) {
    int32_t* panel = reinterpret_cast<int32_t*>(out) + p * KP * kPanel;
    // The padding pairs past K.
    for (int64_t kp = (K + 1) / 2; kp < KP; ++kp) {
      for (int64_t h = 0; h < kPanel; h += 16) {
        _mm512_storeu_si512(panel + kp * kPanel + h, _mm512_setzero_si512());
      }
    }
    const int64_t n0 = p * kPanel;
    if (trans) {
      // Rows n0.. of W become the panel's columns: 16 x 16 transposes, then pairs of k.
      for (int64_t h = 0; h < kPanel; h += 16) {
        const int64_t rows = N - n0 - h;  // may be <= 0: zero columns
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
          const int64_t cols = min64(16, K - k0);
          __m512 r[16];
          for (int i = 0; i < 16; ++i) {
            r[i] = i < rows ? _mm512_maskz_loadu_ps(lanes(cols), W + (n0 + h + i) * ldw + k0)
                            : _mm512_setzero_ps();
          }
          transpose16(r);  // r[c]: k0 + c of the 16 columns; zero past K
          for (int c = 0; c < cols; c += 2) {
            _mm512_storeu_si512(panel + (k0 + c) / 2 * kPanel + h, interleave_bf16(r[c], r[c + 1]));
          }
        }
      }
    } else {
      for (int64_t kp = 0; kp < (K + 1) / 2; ++kp) {
        const bool has_hi = 2 * kp + 1 < K;
        const float* lo = W + (row_map ? row_map[2 * kp] : 2 * kp) * ldw + n0;
        const float* hi =
            has_hi ? W + (row_map ? row_map[2 * kp + 1] : 2 * kp + 1) * ldw + n0 : nullptr;
        for (int64_t h = 0; h < kPanel; h += 16) {
          const __mmask16 m = lanes(N - n0 - h);
          const __m512 vlo = _mm512_maskz_loadu_ps(m, lo + h);
          const __m512 vhi = has_hi ? _mm512_maskz_loadu_ps(m, hi + h) : _mm512_setzero_ps();
          _mm512_storeu_si512(panel + kp * kPanel + h, interleave_bf16(vlo, vhi));
        }
      }
    }
  }
}

void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                   int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map) {
  if (k0 >= k1) return;
  const int64_t depth = packed_depth(K);
  // Past K up to the chunk's end is padding: whoever packs k = K - 1 writes zeros there,
  // so that the dot products add 0 * 0 (never garbage * 0).
  const int64_t k1_store = k1 == K ? 2 * depth : k1;
  constexpr int64_t kSpan = 2 * kChunk;  // k of one chunk
  auto pack = [&](int64_t b, int64_t c) {
    const int64_t m0 = b * kRows;
    const int64_t rows = min64(kRows, M - m0);
    uint16_t* dst = reinterpret_cast<uint16_t*>(out) + 2 * m0 * depth;
    const int64_t base = c * kSpan;
    const int64_t lo = max64(k0 - base, 0);
    // Loads: k in [k0, k1); stores: k in [k0, k1_store) (the zero partner included).
    const __mmask32 load = lanes32(k1 - base) & ~lanes32(lo);
    const __mmask32 store = lanes32(k1_store - base) & ~lanes32(lo);
    const __mmask16 load_lo = static_cast<__mmask16>(load), load_hi = load >> 16;
    uint16_t* chunk = dst + c * rows * kSpan;
    if (trans) {
      // A is [K, M]: k rows base.., the block's rows as lanes; transpose 16 k at a time.
      __m512 r0[16], r1[16];
      const __mmask16 rm = lanes(rows);
      for (int kk = 0; kk < 16; ++kk) {
        r0[kk] = (load_lo >> kk) & 1 ? _mm512_maskz_loadu_ps(rm, A + (base + kk) * lda + m0)
                                     : _mm512_setzero_ps();
        r1[kk] = (load_hi >> kk) & 1 ? _mm512_maskz_loadu_ps(rm, A + (base + 16 + kk) * lda + m0)
                                     : _mm512_setzero_ps();
      }
      transpose16(r0);
      transpose16(r1);
      for (int64_t i = 0; i < rows; ++i) {
        const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r1[i], r0[i]));
        _mm512_mask_storeu_epi16(chunk + i * kSpan, store, v);
      }
    } else {
      for (int64_t i = 0; i < rows; ++i) {
        const float* src = A + (row_map ? row_map[m0 + i] : m0 + i) * lda + base;
        const __m512 vlo = _mm512_maskz_loadu_ps(load_lo, src);
        const __m512 vhi = _mm512_maskz_loadu_ps(load_hi, src + 16);
        const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(vhi, vlo));
        _mm512_mask_storeu_epi16(chunk + i * kSpan, store, v);
      }
    }
  };
  const int64_t c0 = k0 / kSpan, c1 = (k1 + kSpan - 1) / kSpan;
  if (!trans) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = c0; c < c1; ++c) pack(b, c);
    }
    return;
  }
  // A is [K, M]: chunks outer, blocks inner, so that a chunk's rows of A are read along
  // their length and each line is used at once, while the next chunk's lines are asked for
  // (as in the float32 kernels' pack_a_blocks).
  const int64_t m_lo = b0 * kRows, m_hi = min64(b1 * kRows, M);
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t k = (c + 1) * kSpan; k < min64((c + 2) * kSpan, k1); ++k) {
      const float* row = A + k * lda;
      for (int64_t m = m_lo; m < m_hi; m += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(row + m), _MM_HINT_T0);
      }
      _mm_prefetch(reinterpret_cast<const char*>(row + m_hi - 1), _MM_HINT_T0);
    }
    for (int64_t b = b0; b < b1; ++b) pack(b, c);
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_avx512_bf16
