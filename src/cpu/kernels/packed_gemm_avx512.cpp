// The packed GEMM's AVX-512 kernels (float32): packing of B into column panels and of A
// into row blocks (16 x 16 transposes), and the micro-kernel, a tile of up to 14 rows x 32
// columns (28 zmm accumulators) over the whole K with A broadcast from its packed block.
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

constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kVecs = kPanel / 16;                           // zmm per panel row
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);  // packed A's k chunk
static_assert(kPanel % 16 == 0 && kRows * kVecs + kVecs + 1 <= 32, "tile must fit 32 zmm");
// Rows of B prefetched ahead in the micro-kernel (B streams from L2 or beyond).
constexpr int64_t kPrefetchRows = 16;

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
// K rounded up to whole chunks: the k extent of a packed A block.
inline int64_t packed_depth(int64_t K) {
  return (K + kChunk - 1) / kChunk * kChunk;
}
inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// r[i] = row i of a 16 x 16 block in, column i out.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int h = 0; h < 16; h += 8) {
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0x88);
      t[h + 4 + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0xDD);
    }
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
  }
}

// One tile: C[0:MR, 0:ncols] (+)= Ap * Bp [K][kPanel], Ap the tile's rows packed as
// [K / 16][MR][16] (so that every broadcast of a 16-step chunk is at a constant offset from
// one pointer). Tiles of few rows keep KS independent partial sums over k so that the FMA
// latency is hidden.
template <int MR>
void tile(int64_t K, const float* __restrict Ap, const float* __restrict Bp, float* C, int64_t ldc,
          int64_t ncols, bool accumulate) {
  constexpr int KS = MR * kVecs >= 8 ? 1 : (MR * kVecs >= 4 ? 2 : 4);
  // The tile of C may be far away (the all-token products write tens of MB): ask for its
  // lines now, so that the stores at the end do not wait for them.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v <= kVecs; ++v) {
      __builtin_prefetch(C + i * ldc + min64(16 * v, ncols - 1), 1, 3);
    }
  }
  __m512 acc[KS][MR][kVecs];
#pragma GCC unroll 4
  for (int s = 0; s < KS; ++s)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[s][i][v] = _mm512_setzero_ps();

  const int64_t chunks = K / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* a = Ap + c * MR * kChunk;
    const float* b = Bp + c * kChunk * kPanel;
    // Unrolled twice only: a fully unrolled chunk no longer fits the decoded-uop cache.
#pragma GCC unroll 2
    for (int kk = 0; kk < kChunk; kk += KS) {
#pragma GCC unroll 4
      for (int s = 0; s < KS; ++s) {
        const float* bk = b + (kk + s) * kPanel;
        __m512 bv[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          _mm_prefetch(reinterpret_cast<const char*>(bk + kPrefetchRows * kPanel + 16 * v),
                       _MM_HINT_T0);
        }
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const __m512 av = _mm512_set1_ps(a[i * kChunk + kk + s]);
#pragma GCC unroll 4
          for (int v = 0; v < kVecs; ++v) {
            acc[s][i][v] = _mm512_fmadd_ps(av, bv[v], acc[s][i][v]);
          }
        }
      }
    }
  }
  // The last, partial chunk.
  const float* a = Ap + chunks * MR * kChunk;
  const float* b = Bp + chunks * kChunk * kPanel;
  for (int64_t kk = 0; kk < K - chunks * kChunk; ++kk) {
    __m512 bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(b + kk * kPanel + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(a[i * kChunk + kk]);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[0][i][v] = _mm512_fmadd_ps(av, bv[v], acc[0][i][v]);
    }
  }
#pragma GCC unroll 4
  for (int s = 1; s < KS; ++s)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[0][i][v] = _mm512_add_ps(acc[0][i][v], acc[s][i][v]);

#pragma GCC unroll 4
  for (int v = 0; v < kVecs; ++v) {
    const int64_t n = ncols - 16 * v;
    if (n <= 0) break;
    const __mmask16 m = lanes(n);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* c = C + i * ldc + 16 * v;
      __m512 r = acc[0][i][v];
      if (accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, c));
      _mm512_mask_storeu_ps(c, m, r);
    }
  }
}

using TileFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, bool);
constexpr TileFn kTiles[kRows] = {&tile<1>,  &tile<2>,  &tile<3>,  &tile<4>, &tile<5>,
                                  &tile<6>,  &tile<7>,  &tile<8>,  &tile<9>, &tile<10>,
                                  &tile<11>, &tile<12>, &tile<13>, &tile<14>};
static_assert(kRows == 14, "kTiles lists one tile per height");

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

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const int64_t ncols = min64(kPanel, N - n0);
    const float* bp = b_packed + p * K * kPanel;
    for (int64_t m0 = 0; m0 < M; m0 += kRows) {
      const int64_t rows = min64(kRows, M - m0);
      kTiles[rows - 1](K, a_packed + m0 * packed_depth(K), bp, C + m0 * ldc + n0, ldc, ncols,
                       accumulate);
    }
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_avx512
