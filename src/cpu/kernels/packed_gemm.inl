// The packed GEMM's float32 kernels (packed_gemm_kernels.hpp) in plain C++ for the levels
// without AVX-512: the packers, and a micro-kernel over the layouts of packed_gemm.hpp (B in
// panels of kPackedPanel columns, A in blocks of kPackedTileRows rows in chunks of
// kPackedDepthChunk k) that splits each tile into sub-tiles of at most kSubRows rows x
// kSubVecs vectors, which fit the level's 16 vector registers. Pasted into each ISA's
// anonymous namespace after <array>, <cstring>, <utility> and packed_gemm_kernels.hpp, with
// kVectorBytes, kSubRows, kMinSubRows (the fewest rows a split leaves), kSubVecs (vectors per
// row of a sub-tile), kWideVecs (the same for sub-tiles of one or two rows), kBRegisters
// (how many vectors of B's row stay in registers; the others are the FMAs' memory operands)
// and kDepthBlock (the k of a panel that stays in L1, below) defined, and transpose_lanes
// (a square of kLanes vectors transposed in registers: the transposing packers' tiles).
//
// Every element of C is one chain of multiply-adds in order of k, from zero (or from C's
// value when accumulating), whatever the blocks of k (the compiler fuses each multiply-add
// where the level has FMA: -ffp-contract=fast, and every element takes that same vector
// code, tails included), so its bits depend neither on how a tile is split nor on which
// thread runs it.

typedef float Vec __attribute__((vector_size(kVectorBytes)));
constexpr int kLanes = kVectorBytes / static_cast<int>(sizeof(float));
constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);
static_assert(kPanel % (kSubVecs * kLanes) == 0 && kPanel % (kWideVecs * kLanes) == 0,
              "a panel is whole sub-tiles");

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
// K rounded up to whole chunks: the k extent of a packed A block.
inline int64_t packed_depth(int64_t K) {
  return (K + kChunk - 1) / kChunk * kChunk;
}

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, Vec v) {
  std::memcpy(p, &v, sizeof v);
}

// The next block of B that the sub-tiles of this one ask into L2 while they run on the
// current block in L1 (multiply_panels): `lines` cache lines from `next`, `per_chunk` of
// them at every chunk of k.
struct Prefetch {
  const char* next = nullptr;
  int64_t lines = 0;
  int64_t per_chunk = 0;
};

// C[0:MR, 0:ncols] (+)= A * B over all K: `a` the sub-tile's first row in a packed A block
// whose chunks are `chunk_floats` apart ([K / 16][rows][16]), `b` the sub-tile's first
// column in a packed panel ([K][kPanel]); ncols <= NV * kLanes. `pf` (may be null) is the
// prefetch of the next block, continued where the last sub-tile left it.
template <int MR, int NV>
void sub_tile(int64_t K, const float* __restrict a, int64_t chunk_floats, const float* __restrict b,
              float* C, int64_t ldc, int64_t ncols, bool accumulate, Prefetch* pf) {
  // The chain of each element starts from C's value when accumulating (so that a product
  // split into blocks of k sums exactly as one chain would), else from zero.
  // Zeros go straight into the registers: through a zeroed array on the stack they cost a
  // string store and reloads on every tile that starts a product.
  Vec acc[MR][NV];
  if (!accumulate) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = Vec{};
  } else if (ncols == NV * kLanes) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = load(C + i * ldc + v * kLanes);
  } else {
    float part[MR][NV * kLanes] = {};
    for (int i = 0; i < MR; ++i) std::memcpy(part[i], C + i * ldc, ncols * sizeof(float));
    std::memcpy(acc, part, sizeof part);
  }
  // One k: B's row bk times the column `ac` of the rows' chunk. The first kBRegisters
  // vectors of B's row in registers; the others read again for every row of A, so that the
  // compiler makes each read the FMA's memory operand instead of keeping the row in
  // registers it would have to spill accumulators for (the pointer passes through an empty
  // asm, so that it cannot tell the reads are the same).
  const auto step = [&](const float* ac, const float* bk) __attribute__((always_inline)) {
    constexpr int kHeld = NV < kBRegisters ? NV : kBRegisters;
    Vec bv[kHeld];
#pragma GCC unroll 4
    for (int v = 0; v < kHeld; ++v) bv[v] = load(bk + v * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const float* bi = bk;
      if constexpr (kHeld < NV) asm volatile("" : "+r"(bi));
      const float ai = ac[i * kChunk];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        acc[i][v] += ai * (v < kHeld ? bv[v < kHeld ? v : 0] : load(bi + v * kLanes));
      }
    }
  };
  const int64_t chunks = K / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* ac = a + c * chunk_floats;
    const float* bc = b + c * kChunk * kPanel;
    if (pf != nullptr && pf->lines > 0) {
      const int64_t n = min64(pf->per_chunk, pf->lines);
      for (int64_t l = 0; l < n; ++l) __builtin_prefetch(pf->next + 64 * l, 0, 2);
      pf->next += 64 * n;
      pf->lines -= n;
    }
#pragma GCC unroll 4
    for (int kk = 0; kk < kChunk; ++kk) step(ac + kk, bc + kk * kPanel);
  }
  for (int64_t kk = 0; kk < K - chunks * kChunk; ++kk) {
    step(a + chunks * chunk_floats + kk, b + (chunks * kChunk + kk) * kPanel);
  }
  if (ncols == NV * kLanes) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) store(C + i * ldc + v * kLanes, acc[i][v]);
    }
    return;
  }
  float part[MR][NV * kLanes];
  std::memcpy(part, acc, sizeof part);
  for (int i = 0; i < MR; ++i) std::memcpy(C + i * ldc, part[i], ncols * sizeof(float));
}

using SubTileFn = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t,
                           bool, Prefetch*);
// sub_tile<rows, kSubVecs> for rows 1..kSubRows; one or two rows take wider sub-tiles (more
// accumulators to hide the FMA latency, fewer passes over the panel).
template <int... R>
constexpr auto sub_tiles(std::integer_sequence<int, R...>) {
  return std::array<SubTileFn, sizeof...(R)>{&sub_tile<R + 1, kSubVecs>...};
}
constexpr auto kSubTiles = sub_tiles(std::make_integer_sequence<int, kSubRows>{});
constexpr SubTileFn kWideTiles[2] = {&sub_tile<1, kWideVecs>, &sub_tile<2, kWideVecs>};

// The rows of the first sub-tile of `rows` rows: at most kSubRows, and never leaving fewer
// than kMinSubRows for the next (with 6 and 4: 14 = 6 + 4 + 4 rather than 6 + 6 + 2), so
// that every sub-tile keeps enough independent accumulators.
inline int first_sub_rows(int rows) {
  if (rows <= kSubRows) return rows;
  const int rest = rows - kSubRows;
  return rest >= kMinSubRows ? kSubRows : rows - kMinSubRows;
}

// How many sub-tiles a tile of `rows` rows x ncols runs (tile() below).
inline int64_t sub_tile_count(int rows, int64_t ncols) {
  if (rows <= 2) return (ncols + kWideVecs * kLanes - 1) / (kWideVecs * kLanes);
  int count = 0;
  for (int r = 0; r < rows; r += first_sub_rows(rows - r)) ++count;
  return count * ((ncols + kSubVecs * kLanes - 1) / (kSubVecs * kLanes));
}

// One tile of a block: C[0:rows, 0:ncols] (+)= block * panel. The first sub-tile prefetches
// nothing when `first_streams` (it reads the block from beyond L1 itself).
void tile(int64_t K, int rows, const float* a_block, const float* panel, float* C, int64_t ldc,
          int64_t ncols, bool accumulate, Prefetch* pf, bool first_streams) {
  const int64_t chunk_floats = static_cast<int64_t>(rows) * kChunk;
  Prefetch* first = first_streams ? nullptr : pf;
  if (rows <= 2) {
    constexpr int kWideCols = kWideVecs * kLanes;
    for (int64_t j = 0; j < ncols; j += kWideCols) {
      kWideTiles[rows - 1](K, a_block, chunk_floats, panel + j, C + j, ldc,
                           min64(kWideCols, ncols - j), accumulate, j == 0 ? first : pf);
    }
    return;
  }
  constexpr int kSubCols = kSubVecs * kLanes;
  for (int64_t j = 0; j < ncols; j += kSubCols) {
    const int64_t cols = min64(kSubCols, ncols - j);
    for (int r = 0; r < rows;) {
      const int mr = first_sub_rows(rows - r);
      kSubTiles[mr - 1](K, a_block + r * kChunk, chunk_floats, panel + j, C + r * ldc + j, ldc,
                        cols, accumulate, j == 0 && r == 0 ? first : pf);
      r += mr;
    }
  }
}

// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols: the packers' transposes, in
// squares of kLanes x kLanes transposed in registers (transpose_lanes) where both sides have
// that many, the last square of each side moved back to end at the edge (it writes some
// values twice, the same ones); a plain loop where a side is shorter. Only [0, rows) x
// [0, cols) is read and written, so threads packing disjoint ranges stay disjoint.
void transpose_copy(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                    int64_t ldd) {
  if (rows < kLanes || cols < kLanes) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
    }
    return;
  }
  for (int64_t i = 0; i < rows; i += kLanes) {
    const int64_t i0 = min64(i, rows - kLanes);
    for (int64_t j = 0; j < cols; j += kLanes) {
      const int64_t j0 = min64(j, cols - kLanes);
      Vec square[kLanes];
      for (int t = 0; t < kLanes; ++t) square[t] = load(src + (i0 + t) * lds + j0);
      transpose_lanes(square);
      for (int t = 0; t < kLanes; ++t) store(dst + (j0 + t) * ldd + i0, square[t]);
    }
  }
}

void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map) {
  for (int64_t p = p0; p < p1; ++p) {
    float* panel = out + p * K * kPanel;
    const int64_t n0 = p * kPanel;
    const int64_t cols = min64(kPanel, N - n0);
    if (trans) {
      // Rows n0.. of W become the panel's columns, 16 k at a time so that the panel's lines
      // stay in L1 while W's rows are read along their length.
      for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
        const int64_t kc = min64(kChunk, K - k0);
        transpose_copy(W + n0 * ldw + k0, ldw, cols, kc, panel + k0 * kPanel, kPanel);
        for (int64_t k = 0; k < kc; ++k) {
          for (int64_t j = cols; j < kPanel; ++j) panel[(k0 + k) * kPanel + j] = 0.0f;
        }
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        const float* src = W + (row_map ? row_map[k] : k) * ldw + n0;
        float* dst = panel + k * kPanel;
        std::memcpy(dst, src, cols * sizeof(float));
        for (int64_t j = cols; j < kPanel; ++j) dst[j] = 0.0f;
      }
    }
  }
}

void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                   int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map) {
  const int64_t depth = packed_depth(K);
  const int64_t c0 = k0 / kChunk, c1 = (k1 + kChunk - 1) / kChunk;
  // The chunk's k within [k0, k1): [lo, hi), lanes [lo, hi) - c * kChunk of each row's chunk.
  const auto k_range = [&](int64_t c) {
    return std::pair<int64_t, int64_t>{c * kChunk < k0 ? k0 : c * kChunk,
                                       min64((c + 1) * kChunk, k1)};
  };
  if (!trans) {
    // Each row of a block is read kChunk floats (a line) at a time, too short a stream for
    // the hardware to prefetch (a few dozen lines per row), so the line kAhead chunks on is
    // asked for: further along the same row, or the next block's row at its first chunks.
    constexpr int64_t kAhead = 4;
    const auto row_of = [&](int64_t m) { return A + (row_map ? row_map[m] : m) * lda; };
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t m0 = b * kRows;
      const int64_t rows = min64(kRows, M - m0);
      const int64_t next_m0 = m0 + kRows, next_rows = min64(kRows, M - next_m0);
      for (int64_t c = c0; c < c1; ++c) {
        const auto [lo, hi] = k_range(c);
        float* chunk = out + m0 * depth + c * rows * kChunk;
        const int64_t l0 = lo - c * kChunk;
        const int64_t ahead = c + kAhead;
        for (int64_t i = 0; i < rows; ++i) {
          const float* src = row_of(m0 + i) + lo;
          if (ahead < c1) {
            __builtin_prefetch(row_of(m0 + i) + ahead * kChunk, 0, 3);
          } else if (b + 1 < b1 && i < next_rows && c0 + ahead - c1 < c1) {
            __builtin_prefetch(row_of(next_m0 + i) + (c0 + ahead - c1) * kChunk, 0, 3);
          }
          if (hi - lo == kChunk) {  // a whole chunk: a copy of constant size, inlined
            std::memcpy(chunk + i * kChunk, src, kChunk * sizeof(float));
          } else {
            std::memcpy(chunk + i * kChunk + l0, src, (hi - lo) * sizeof(float));
          }
        }
      }
    }
    return;
  }
  // A is [K, M]: row k of A holds the blocks' rows as its columns. Chunks outer, blocks
  // inner, so that the chunk's rows of A are read along their length (every line used at
  // once) while the next chunk's lines are asked for: blocks outer walked down A's rows at a
  // stride of lda, a new page on every row at the backward's widths, each one waited on
  // (3% of an LSTM's training step on AVX2, H = 512).
  const int64_t m_lo = b0 * kRows, m_hi = min64(b1 * kRows, M);
  for (int64_t c = c0; c < c1; ++c) {
    const auto [lo, hi] = k_range(c);
    for (int64_t k = (c + 1) * kChunk; k < min64((c + 2) * kChunk, k1); ++k) {
      const float* row = A + k * lda;
      for (int64_t m = m_lo; m < m_hi; m += 64 / static_cast<int64_t>(sizeof(float))) {
        __builtin_prefetch(row + m, 0, 3);
      }
      __builtin_prefetch(row + m_hi - 1, 0, 3);
    }
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t m0 = b * kRows;
      const int64_t rows = min64(kRows, M - m0);
      float* chunk = out + m0 * depth + c * rows * kChunk;
      transpose_copy(A + lo * lda + m0, lda, hi - lo, rows, chunk + (lo - c * kChunk), kChunk);
    }
  }
}

// A panel is multiplied kDepthBlock k at a time (a multiple of kChunk), every row block
// with each: that much of the panel stays in L1 while every sub-tile of every row block
// reads it again (each sub-tile reads B's row once per few rows of A). Each block continues
// the chains where the last left them in C, so the blocks change no bit.
// The first sub-tile of a block reads it from L2, L3 or memory (weights of a few MB, as the
// step products' at H = 1024, stay in none of the nearer caches); the others ask for the next
// block (the rest of the panel, then the next panel: they follow in memory) into L2, a few
// lines at every chunk of k, so that the first sub-tile of the next block finds it there.
static_assert(kDepthBlock % kChunk == 0, "depth blocks are whole chunks of packed A");
void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  const int64_t depth = packed_depth(K);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const int64_t ncols = min64(kPanel, N - n0);
    const float* bp = b_packed + p * K * kPanel;
    int64_t calls = 0;  // sub-tiles per depth block
    for (int64_t m0 = 0; m0 < M; m0 += kRows) {
      calls += sub_tile_count(static_cast<int>(min64(kRows, M - m0)), ncols);
    }
    // K = 0 still runs once: C = 0, or C unchanged when accumulating, as the AVX-512 tiles do.
    for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += kDepthBlock) {
      const int64_t kc = min64(kDepthBlock, K - k0);
      // The next block: this panel's next k, else the next panel's first (none after p1).
      const int64_t next_kc = k0 + kc < K  ? min64(kDepthBlock, K - k0 - kc)
                              : p + 1 < p1 ? min64(kDepthBlock, K)
                                           : 0;
      Prefetch pf;
      pf.next = reinterpret_cast<const char*>(bp + (k0 + kc) * kPanel);
      pf.lines = next_kc * kPanel * static_cast<int64_t>(sizeof(float)) / 64;
      const int64_t slots = (calls > 1 ? calls - 1 : 1) * (kc / kChunk);
      pf.per_chunk = slots > 0 ? (pf.lines + slots - 1) / slots : 0;
      for (int64_t m0 = 0; m0 < M; m0 += kRows) {
        const int rows = static_cast<int>(min64(kRows, M - m0));
        const float* a_block = a_packed + m0 * depth + k0 / kChunk * rows * kChunk;
        tile(kc, rows, a_block, bp + k0 * kPanel, C + m0 * ldc + n0, ldc, ncols,
             accumulate || k0 > 0, &pf, m0 == 0 && calls > 1);
      }
    }
  }
}
