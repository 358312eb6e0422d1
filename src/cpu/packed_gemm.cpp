// Threading and dispatch of the packed GEMM (packed_gemm.hpp): a static split of B's panels
// over the pool's threads (thread_pool.hpp), the same for packing and for every product, so that
// each thread's part of the weights stays in its own core's cache across time steps.
#include "cpu/packed_gemm.hpp"

#include <algorithm>
#include <stdexcept>

#include "cpu/cpu_features.hpp"
#include "cpu/isa.hpp"
#include "cpu/packed_gemm_kernels.hpp"
#include "cpu/team_barrier.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Below this many flops a product is cheaper on one thread than waking the team (a fork
// and a barrier cost a few microseconds; this is about 2 us of one core's FMA peak).
constexpr double kMinParallelFlops = 1 << 18;

int64_t panels_of(int64_t N) {
  return (N + kPackedPanel - 1) / kPackedPanel;
}

// Threads for work split over `panels` panels: 1 inside a parallel region (the caller owns
// the threads) or for small work, else a team of the pool, at most one per panel.
int team_size(int64_t panels, double flops) {
  const int n = max_threads();  // 1 inside a region
  if (n <= 1 || panels < 2 || flops < kMinParallelFlops) return 1;
  return static_cast<int>(std::min<int64_t>(n, panels));
}

// body(t, n) for t in [0, n): on the calling thread alone for nt == 1, else on a team of up
// to nt threads (n is the team's size, which the pool's budget may make smaller).
template <typename Body>
void run_on_team(int nt, const Body& body) {
  parallel_region(nt, body);
}

// The k extent of the packed layouts in 32-bit slots: K, or for bf16 its pairs and for int8
// its quads, rounded up to whole chunks (zero padding, so that AMX tiles need no partial
// chunk).
int64_t slots_of(int64_t K, PackedType type) {
  const int64_t per_slot = packs_bf16(type) ? 2 : packs_s8(type) ? 4 : 1;
  if (per_slot == 1) return K;
  return ((K + per_slot - 1) / per_slot + kPackedDepthChunk - 1) / kPackedDepthChunk *
         kPackedDepthChunk;
}

// K (in slots) rounded up to whole chunks of packed A.
int64_t depth_of(int64_t K, PackedType type) {
  const int64_t k = slots_of(K, type);
  return (k + kPackedDepthChunk - 1) / kPackedDepthChunk * kPackedDepthChunk;
}

// packed_gemm_full's K per pass: bf16 packs take half the bytes, so twice the K fits the
// same cache.
int64_t full_depth(PackedType type) {
  return packs_bf16(type) ? 2 * kPackedFullDepth : kPackedFullDepth;
}

// The kernels of one type (packed_gemm_kernels.hpp); callers have checked
// packed_gemm_available(), so on other machines these tables are never reached.
#if RNNX_CPU_X86_KERNELS
const PackedKernels& kernels(PackedType type) {
  if (type == PackedType::f32_scalar) return packed_scalar::kPackedKernels;
  if (type == PackedType::s8_scalar) return packed_s8_scalar::kPackedKernels;
  if (type == PackedType::s8_vnni) return packed_avx512_vnni::kPackedKernels;
  if (type == PackedType::s8_avx_vnni) return packed_avx_vnni::kPackedKernels;
  if (type == PackedType::f32_avx2) return packed_avx2::kPackedKernels;
#if RNNX_CPU_AMX_KERNELS
  // AMX multiplies the bf16 layouts; the bf16 table packs them.
  static const PackedKernels amx{packed_avx512_bf16::kPackedKernels.pack_b_panels,
                                 packed_avx512_bf16::kPackedKernels.pack_a_blocks,
                                 packed_amx::kPackedKernels.multiply_panels,
                                 packed_amx::kPackedKernels.usable};
#endif
#if RNNX_CPU_AMX_KERNELS
  // AMX multiplies the int8 layouts; the VNNI table packs them.
  static const PackedKernels amx_int8{packed_avx512_vnni::kPackedKernels.pack_b_panels,
                                      packed_avx512_vnni::kPackedKernels.pack_a_blocks,
                                      packed_amx_int8::kPackedKernels.multiply_panels,
                                      packed_amx_int8::kPackedKernels.usable};
#endif
  switch (type) {
    case PackedType::s8_amx:
#if RNNX_CPU_AMX_KERNELS
      return amx_int8;
#else
      break;
#endif
    case PackedType::bf16:
      return packed_avx512_bf16::kPackedKernels;
    case PackedType::bf16_amx:
#if RNNX_CPU_AMX_KERNELS
      return amx;
#else
      break;
#endif
    default:
      break;
  }
  return packed_avx512::kPackedKernels;
}
#else
// Other architectures have the baseline table only; an aarch64 level's float32 type
// (gemm.hpp) would be mapped here and in packed_gemm_available().
const PackedKernels& kernels(PackedType type) {
  if (type == PackedType::f32_scalar) return packed_scalar::kPackedKernels;
  if (type == PackedType::s8_scalar) return packed_s8_scalar::kPackedKernels;
  throw std::logic_error("packed GEMM kernels called on a machine without them");
}
#endif

// Piece t of n of [0, count).
int64_t split(int64_t count, int t, int n) {
  return count * t / n;
}

void zero_rows(int64_t M, int64_t N, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
}

// Panels [g0, g1) of B, numbered block by block: C's columns (=, +=) packed A * B.
void multiply_global(int64_t M, const float* a_packed, const PackedB& B, int64_t g0, int64_t g1,
                     bool accumulate, float* C, int64_t ldc) {
  const int64_t q_per = B.panels_per_block(), nb = B.block_cols();
  const int64_t block_floats = packed_b_floats(B.K, nb, 1, B.type);
  const PackedKernels& kern = kernels(B.type);
  for (int64_t g = g0; g < g1;) {
    const int64_t b = g / q_per, q0 = g % q_per, q1 = std::min(q_per, q0 + (g1 - g));
    kern.multiply_panels(M, B.K, a_packed, B.data + b * block_floats, nb, q0, q1, accumulate,
                         C + b * nb, ldc);
    g += q1 - q0;
  }
}

}  // namespace

bool packed_gemm_available(PackedType type, Isa isa) {
  if (type == PackedType::f32_scalar || type == PackedType::s8_scalar) return true;
#if RNNX_CPU_X86_KERNELS
  isa = std::min(isa, isa_detected());
  switch (type) {
    case PackedType::f32_scalar:
    case PackedType::s8_scalar:
      return true;
    case PackedType::s8_vnni:
      return isa >= Isa::avx512 && cpu_features().avx512_vnni;
    case PackedType::s8_avx_vnni:
      return isa >= Isa::avx2 && cpu_features().avx_vnni;
    case PackedType::s8_amx:
#if RNNX_CPU_AMX_KERNELS
      return isa >= Isa::avx512 && cpu_features().avx512_vnni &&
             packed_amx_int8::kPackedKernels.usable();
#else
      break;
#endif
    case PackedType::f32_avx2:
      return isa >= Isa::avx2;
    case PackedType::f32:
      return isa >= Isa::avx512;
    case PackedType::bf16:
      return isa >= Isa::avx512_bf16;
    case PackedType::bf16_amx:
#if RNNX_CPU_AMX_KERNELS
      return isa >= Isa::avx512_bf16 && packed_amx::kPackedKernels.usable();
#else
      break;
#endif
  }
#else
  (void)type;
  (void)isa;
#endif
  return false;
}

int64_t packed_b_floats(int64_t K, int64_t N, int64_t blocks, PackedType type) {
  // int8 panels end in their columns' scales and compensations (kernels/packed_gemm_s8.inl).
  const int64_t trailer = packs_s8(type) ? 2 * kPackedPanel : 0;
  return blocks * panels_of(N / blocks) * (kPackedPanel * slots_of(K, type) + trailer);
}

int64_t packed_a_floats(int64_t max_m, int64_t K, PackedType type) {
  const int64_t rows = std::min(max_m, kPackedChunkRows);
  return rows * depth_of(K, type) + (packs_s8(type) ? rows : 0);  // int8: the rows' scales
}

PackedB pack_b(Op op_w, int64_t K, int64_t N, const float* W, int64_t ldw, float* out,
               int64_t blocks, PackedType type) {
  const PackedB B{out, K, N, blocks, type};
  const int64_t q_per = B.panels_per_block(), nb = B.block_cols();
  const int64_t block_floats = packed_b_floats(K, nb, 1, type);
  const PackedKernels& kern = kernels(type);
  const bool trans = op_w == Op::T;
  // Panels [g0, g1), numbered block by block; block b is W's rows (trans) or columns b * nb...
  auto pack = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1;) {
      const int64_t b = g / q_per, q0 = g % q_per, q1 = std::min(q_per, q0 + (g1 - g));
      const float* wb = trans ? W + b * nb * ldw : W + b * nb;
      kern.pack_b_panels(trans, K, nb, wb, ldw, q0, q1, out + b * block_floats, nullptr);
      g += q1 - q0;
    }
  };
  const int64_t panels = blocks * q_per;
  run_on_team(team_size(panels, 1e30),
              [&](int t, int n) { pack(split(panels, t, n), split(panels, t + 1, n)); });
  return B;
}

void pack_a_columns(int64_t M, int64_t K, const float* A, int64_t lda, int64_t k0, int64_t k1,
                    float* a_packed, PackedType type, const int64_t* a_rows) {
  const int64_t blocks = (M + kPackedTileRows - 1) / kPackedTileRows;
  kernels(type).pack_a_blocks(false, M, K, k0, k1, A, lda, 0, blocks, a_packed, a_rows);
}

void pack_a_rows(int64_t M, int64_t K, const float* A, int64_t lda, int64_t b0, int64_t b1,
                 float* a_packed, PackedType type, const int64_t* a_rows) {
  if (b0 < b1) kernels(type).pack_a_blocks(false, M, K, 0, K, A, lda, b0, b1, a_packed, a_rows);
}

void multiply_panel_range(int64_t M, const float* a_packed, const PackedB& B, int64_t q0,
                          int64_t q1, bool accumulate, float* C, int64_t ldc) {
  if (M == 0 || q0 >= q1) return;
  const int64_t q_per = B.panels_per_block();
  for (int64_t b = 0; b < B.blocks; ++b) {
    multiply_global(M, a_packed, B, b * q_per + q0, b * q_per + q1, accumulate, C, ldc);
  }
}

void packed_gemm(int64_t M, const float* A, int64_t lda, const PackedB& B, bool accumulate,
                 float* C, int64_t ldc, float* a_scratch, const int64_t* a_rows) {
  const int64_t K = B.K, N = B.N;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) zero_rows(M, N, C, ldc);
    return;
  }
  const int64_t panels = B.blocks * B.panels_per_block();
  const PackedKernels& kern = kernels(B.type);
  // Per chunk of rows: pack A (threads split its row blocks), then each thread its panels.
  TeamBarrier barrier;
  auto body = [&](int t, int n) {
    for (int64_t m0 = 0; m0 < M; m0 += kPackedChunkRows) {
      const int64_t mc = std::min(kPackedChunkRows, M - m0);
      const int64_t blocks = (mc + kPackedTileRows - 1) / kPackedTileRows;
      kern.pack_a_blocks(false, mc, K, 0, K, a_rows ? A : A + m0 * lda, lda, split(blocks, t, n),
                         split(blocks, t + 1, n), a_scratch, a_rows ? a_rows + m0 : nullptr);
      barrier.wait(n);
      multiply_global(mc, a_scratch, B, split(panels, t, n), split(panels, t + 1, n), accumulate,
                      C + m0 * ldc, ldc);
      if (m0 + kPackedChunkRows < M) barrier.wait(n);
    }
  };
  run_on_team(team_size(panels, 2.0 * static_cast<double>(M) * N * K), body);
}

int64_t packed_gemm_full_floats(int64_t M, int64_t N, int64_t K, PackedType type) {
  const int64_t kc = std::min(K, full_depth(type));
  return slots_of(kc, type) * panels_of(N) * kPackedPanel +
         std::min(M, kPackedFullRows) * depth_of(kc, type);
}

void packed_gemm_full(Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const float* A,
                      int64_t lda, const float* B, int64_t ldb, bool accumulate, float* C,
                      int64_t ldc, float* scratch, PackedType type, const int64_t* a_rows,
                      const int64_t* b_rows) {
  if (M == 0 || N == 0) return;
  if (packs_s8(type)) {
    // int8 plans multiply by weights quantised once and project every step in the loop.
    throw std::logic_error("packed_gemm_full: no all-token products in int8");
  }
  if (K == 0) {
    if (!accumulate) zero_rows(M, N, C, ldc);
    return;
  }
  const int64_t panels = panels_of(N);
  const int64_t depth = full_depth(type);
  const int64_t kc_max = std::min(K, depth);
  float* b_block = scratch;
  float* a_block = scratch + slots_of(kc_max, type) * panels * kPackedPanel;
  const PackedKernels& kern = kernels(type);
  const bool trans_a = op_a == Op::T, trans_b = op_b == Op::T;
  const int nt = team_size(panels, 2.0 * static_cast<double>(M) * N * K);
  const int64_t tiles = (M + kPackedTileRows - 1) / kPackedTileRows;
  // Where A's row tiles are to spare, the threads split them (rows of C), each packing its
  // own rows of A into its share of the A area: per block of K the team waits twice (B's
  // block packed, and read by all before the next overwrites it) instead of twice per chunk
  // of rows, and no thread reads A that another packed. Measured on 2 cores (Zen 4) for the
  // backward pass's weight and input gradients: 3-8% faster than splitting B's panels.
  // Tiles start at multiples of kPackedTileRows either way, so C is the same bit for bit.
  const int64_t area_tiles = kPackedFullRows / kPackedTileRows;
  if (nt > 1 && nt <= area_tiles && tiles >= 8 * nt) {
    const int64_t share_tiles = area_tiles / nt;  // each thread's part of the A area
    const int64_t share_floats = share_tiles * kPackedTileRows * depth_of(kc_max, type);
    TeamBarrier barrier;
    auto body = [&](int t, int n) {
      const int64_t b0 = split(tiles, t, n), b1 = split(tiles, t + 1, n);
      const int64_t p0 = split(panels, t, n), p1 = split(panels, t + 1, n);
      float* a_own = a_block + t * share_floats;
      for (int64_t k0 = 0; k0 < K; k0 += depth) {
        const int64_t kc = std::min(depth, K - k0);
        const float* b_src = trans_b ? B + k0 : b_rows ? B : B + k0 * ldb;
        if (k0 > 0) barrier.wait(n);  // everyone is done with the previous block of B
        kern.pack_b_panels(trans_b, kc, N, b_src, ldb, p0, p1, b_block,
                           b_rows && !trans_b ? b_rows + k0 : nullptr);
        barrier.wait(n);
        for (int64_t b = b0; b < b1; b += share_tiles) {
          const int64_t m0 = b * kPackedTileRows;
          const int64_t mc = std::min(std::min(b1, b + share_tiles) * kPackedTileRows, M) - m0;
          const float* a_src = trans_a ? A + k0 * lda + m0 : a_rows ? A + k0 : A + m0 * lda + k0;
          kern.pack_a_blocks(trans_a, mc, kc, 0, kc, a_src, lda, 0,
                             (mc + kPackedTileRows - 1) / kPackedTileRows, a_own,
                             a_rows && !trans_a ? a_rows + m0 : nullptr);
          kern.multiply_panels(mc, kc, a_own, b_block, N, 0, panels, accumulate || k0 > 0,
                               C + m0 * ldc, ldc);
        }
      }
    };
    run_on_team(nt, body);
    return;
  }
  // Otherwise per block of K each thread packs its own panels of B's block, then per chunk of
  // rows A's block is packed by all threads and each multiplies its panels.
  TeamBarrier barrier;
  auto body = [&](int t, int n) {
    const int64_t p0 = split(panels, t, n), p1 = split(panels, t + 1, n);
    for (int64_t k0 = 0; k0 < K; k0 += depth) {
      const int64_t kc = std::min(depth, K - k0);
      const float* b_src = trans_b ? B + k0 : b_rows ? B : B + k0 * ldb;
      // A shorter last block moves the panels (panel p starts at p * kc * kPackedPanel):
      // nobody may still be reading the previous block's.
      if (k0 > 0) barrier.wait(n);
      kern.pack_b_panels(trans_b, kc, N, b_src, ldb, p0, p1, b_block,
                         b_rows && !trans_b ? b_rows + k0 : nullptr);
      for (int64_t m0 = 0; m0 < M; m0 += kPackedFullRows) {
        const int64_t mc = std::min(kPackedFullRows, M - m0);
        const int64_t blocks = (mc + kPackedTileRows - 1) / kPackedTileRows;
        const float* a_src = trans_a ? A + k0 * lda + m0 : a_rows ? A + k0 : A + m0 * lda + k0;
        barrier.wait(n);
        kern.pack_a_blocks(trans_a, mc, kc, 0, kc, a_src, lda, split(blocks, t, n),
                           split(blocks, t + 1, n), a_block,
                           a_rows && !trans_a ? a_rows + m0 : nullptr);
        barrier.wait(n);
        kern.multiply_panels(mc, kc, a_block, b_block, N, p0, p1, accumulate || k0 > 0,
                             C + m0 * ldc, ldc);
      }
    }
  };
  run_on_team(nt, body);
}

}  // namespace rnnx::cpu
