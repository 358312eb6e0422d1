// The packed GEMM's AVX-512 kernels (float32): packing of B into column panels and of A
// into row blocks (16 x 16 transposes), and the micro-kernel (kernels/packed_tile_avx512.inl,
// shared with the bf16 kernels), a tile of up to 14 rows x 32 columns (28 zmm accumulators)
// over the whole K with A broadcast from its packed block.
// Built with the avx512 level's flags (CMakeLists.txt, rnnx_isa_sources) like every file of
// src/cpu/kernels: everything here has internal linkage except the table
// (packed_gemm_kernels.hpp), which runs only when packed_gemm_available() says so.
#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace rnnx::cpu::packed_avx512 {
namespace {

// One step of k per float: a fused multiply-add.
struct Dot {
  using Elem = float;
  using Operand = __m512;
  static Operand load(const float* p) { return _mm512_loadu_ps(p); }
  static Operand broadcast(float a) { return _mm512_set1_ps(a); }
  static __m512 madd(__m512 acc, __m512 a, __m512 b) { return _mm512_fmadd_ps(a, b, acc); }
};
// K rounded up to whole chunks: the k extent of a packed A block; a panel of B has K rows.
inline int64_t packed_depth(int64_t K) {
  return (K + kPackedDepthChunk - 1) / kPackedDepthChunk * kPackedDepthChunk;
}
inline int64_t tile_depth(int64_t K) {
  return K;
}

#include "cpu/kernels/packed_tile_avx512.inl"

void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map) {
  for (int64_t p = p0; p < p1; ++p) {
    float* panel = out + p * K * kPanel;
    const int64_t n0 = p * kPanel;
    if (trans) {
      // Rows n0.. of W become the panel's columns: 16 x 16 transposes.
      for (int64_t h = 0; h < kPanel; h += 16) {
        const int64_t rows = min64(16, N - n0 - h);  // may be <= 0: zero columns
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
          const int64_t cols = min64(16, K - k0);
          __m512 r[16];
          for (int i = 0; i < 16; ++i) {
            r[i] = i < rows ? _mm512_maskz_loadu_ps(lanes(cols), W + (n0 + h + i) * ldw + k0)
                            : _mm512_setzero_ps();
          }
          transpose16(r);
          for (int c = 0; c < cols; ++c) _mm512_storeu_ps(panel + (k0 + c) * kPanel + h, r[c]);
        }
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        const float* src = W + (row_map ? row_map[k] : k) * ldw + n0;
        for (int64_t h = 0; h < kPanel; h += 16) {
          const int64_t cols = N - n0 - h;
          const __m512 v =
              cols > 0 ? _mm512_maskz_loadu_ps(lanes(cols), src + h) : _mm512_setzero_ps();
          _mm512_storeu_ps(panel + k * kPanel + h, v);
        }
      }
    }
  }
}

void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                   int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map) {
  const int64_t depth = packed_depth(K);
  const int64_t c0 = k0 / kChunk, c1 = (k1 + kChunk - 1) / kChunk;
  // The chunk's k in [k0, k1), as lanes.
  auto k_lanes = [&](int64_t c) {
    const int64_t lo = c * kChunk < k0 ? k0 - c * kChunk : 0;
    const int64_t hi = min64(kChunk, k1 - c * kChunk);
    return static_cast<__mmask16>(lanes(hi) & ~lanes(lo));
  };
  if (!trans) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t m0 = b * kRows;
      const int64_t rows = min64(kRows, M - m0);
      for (int64_t c = c0; c < c1; ++c) {
        const __mmask16 km = k_lanes(c);
        float* chunk = out + m0 * depth + c * rows * kChunk;
        for (int64_t i = 0; i < rows; ++i) {
          const float* src = A + (row_map ? row_map[m0 + i] : m0 + i) * lda + c * kChunk;
          _mm512_mask_storeu_ps(chunk + i * kChunk, km, _mm512_maskz_loadu_ps(km, src));
        }
      }
    }
    return;
  }
  // A is [K, M]: a chunk is 16 rows of A, the block's rows of C its lanes; transposed 16 x
  // 16. Chunks outer, blocks inner, so that the chunk's rows of A are read along their
  // length and every line is used at once, while the next chunk's lines are asked for
  // (blocks outer walked down A's rows, a stride of lda, once per block, waiting on each).
  const int64_t m_lo = b0 * kRows, m_hi = min64(b1 * kRows, M);
  for (int64_t c = c0; c < c1; ++c) {
    const __mmask16 km = k_lanes(c);
    for (int64_t k = (c + 1) * kChunk; k < min64((c + 2) * kChunk, k1); ++k) {
      const float* row = A + k * lda;
      for (int64_t m = m_lo; m < m_hi; m += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(row + m), _MM_HINT_T0);
      }
      _mm_prefetch(reinterpret_cast<const char*>(row + m_hi - 1), _MM_HINT_T0);
    }
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t m0 = b * kRows;
      const int64_t rows = min64(kRows, M - m0);
      const __mmask16 rm = lanes(rows);
      __m512 r[16];
      for (int kk = 0; kk < 16; ++kk) {
        r[kk] = (km >> kk) & 1 ? _mm512_maskz_loadu_ps(rm, A + (c * kChunk + kk) * lda + m0)
                               : _mm512_setzero_ps();
      }
      transpose16(r);
      float* chunk = out + m0 * depth + c * rows * kChunk;
      for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(chunk + i * kChunk, km, r[i]);
    }
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_avx512
