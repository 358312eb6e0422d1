// The AVX-512 packed GEMMs' micro-kernel and what both of their packers use, written once for
// the float32 kernels (packed_gemm_avx512.cpp) and the bf16 ones (packed_gemm_avx512_bf16.cpp),
// which differ only in the step of a dot product. Pasted into each one's anonymous namespace
// after <immintrin.h> and packed_gemm_kernels.hpp, with defined:
//   struct Dot { using Elem; using Operand; load(const Elem*), broadcast(Elem),
//                madd(__m512 acc, Operand a, Operand b) }: one step of k per 32-bit slot
//     (float32: a float and vfmadd; bf16: a pair of k and vdpbf16ps);
//   packed_depth(K): the slots of k of a packed A block (whole chunks);
//   tile_depth(K): the slots of k a tile runs over (the rows of a panel of packed B).
// Both layouts are packed_gemm.hpp's: B in panels [depth][kPackedPanel], A in blocks of
// kPackedTileRows rows as [depth / kChunk][rows][kChunk], one slot per element.

constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kVecs = kPanel / 16;                           // zmm per panel row
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);  // packed A's chunk, in slots
static_assert(kPanel % 16 == 0 && kRows * kVecs + kVecs + 1 <= 32, "tile must fit 32 zmm");
// Rows of B prefetched ahead in the micro-kernel (B streams from L2 or beyond).
constexpr int64_t kPrefetchRows = 16;

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
inline __mmask16 lanes(int64_t n) {
  return n <= 0    ? static_cast<__mmask16>(0)
         : n >= 16 ? static_cast<__mmask16>(0xFFFF)
                   : static_cast<__mmask16>((1u << n) - 1u);
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

// One tile: C[0:MR, 0:ncols] (+)= Ap * Bp over `depth` slots of k, Ap the tile's rows packed
// as [depth / kChunk][MR][kChunk] (so that every broadcast of a chunk is at a constant offset
// from one pointer), Bp [depth][kPanel]: up to 14 rows x 32 columns, 28 zmm accumulators.
// Tiles of few rows keep KS independent partial sums over k so that the latency of the
// multiply-adds is hidden.
template <int MR>
void tile(int64_t depth, const Dot::Elem* __restrict Ap, const Dot::Elem* __restrict Bp, float* C,
          int64_t ldc, int64_t ncols, bool accumulate) {
  using Elem = Dot::Elem;
  using Operand = Dot::Operand;
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

  const int64_t chunks = depth / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const Elem* a = Ap + c * MR * kChunk;
    const Elem* b = Bp + c * kChunk * kPanel;
    // Unrolled twice only: a fully unrolled chunk no longer fits the decoded-uop cache.
#pragma GCC unroll 2
    for (int kk = 0; kk < kChunk; kk += KS) {
#pragma GCC unroll 4
      for (int s = 0; s < KS; ++s) {
        const Elem* bk = b + (kk + s) * kPanel;
        Operand bv[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) bv[v] = Dot::load(bk + 16 * v);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          _mm_prefetch(reinterpret_cast<const char*>(bk + kPrefetchRows * kPanel + 16 * v),
                       _MM_HINT_T0);
        }
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const Operand av = Dot::broadcast(a[i * kChunk + kk + s]);
#pragma GCC unroll 4
          for (int v = 0; v < kVecs; ++v) acc[s][i][v] = Dot::madd(acc[s][i][v], av, bv[v]);
        }
      }
    }
  }
  // The last, partial chunk.
  const Elem* a = Ap + chunks * MR * kChunk;
  const Elem* b = Bp + chunks * kChunk * kPanel;
  for (int64_t kk = 0; kk < depth - chunks * kChunk; ++kk) {
    Operand bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bv[v] = Dot::load(b + kk * kPanel + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const Operand av = Dot::broadcast(a[i * kChunk + kk]);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[0][i][v] = Dot::madd(acc[0][i][v], av, bv[v]);
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

using TileFn = void (*)(int64_t, const Dot::Elem*, const Dot::Elem*, float*, int64_t, int64_t,
                        bool);
constexpr TileFn kTiles[kRows] = {&tile<1>,  &tile<2>,  &tile<3>,  &tile<4>, &tile<5>,
                                  &tile<6>,  &tile<7>,  &tile<8>,  &tile<9>, &tile<10>,
                                  &tile<11>, &tile<12>, &tile<13>, &tile<14>};
static_assert(kRows == 14, "kTiles lists one tile per height");

// C's columns of panels [p0, p1) for every row: the tiles of packed A's blocks times each
// packed panel of B.
void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  const int64_t depth = tile_depth(K), a_depth = packed_depth(K);
  const auto* ap = reinterpret_cast<const Dot::Elem*>(a_packed);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const int64_t ncols = min64(kPanel, N - n0);
    const auto* bp = reinterpret_cast<const Dot::Elem*>(b_packed) + p * depth * kPanel;
    for (int64_t m0 = 0; m0 < M; m0 += kRows) {
      const int64_t rows = min64(kRows, M - m0);
      kTiles[rows - 1](depth, ap + m0 * a_depth, bp, C + m0 * ldc + n0, ldc, ncols, accumulate);
    }
  }
}
