// Threading and dispatch of the plain GEMM (plain_gemm.hpp): C cut into tiles of
// kPlainTileRows x kPlainTileCols, a static share of them per thread of the pool, each tile
// computed whole by the kernels of the plan's ISA level (plain_gemm_kernels.hpp). The tiles
// never depend on the thread count, so neither do the results.
#include "cpu/plain_gemm.hpp"

#include <algorithm>
#include <type_traits>

#include "cpu/plain_gemm_kernels.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Below this many flops a product is cheaper on one thread than waking the team (as the
// packed engine's threshold: a fork and a barrier cost a few microseconds).
constexpr double kMinParallelFlops = 1 << 18;

const PlainGemmKernels& kernels(Isa isa) {
  isa = std::min(isa, isa_detected());
#if RNNX_CPU_X86_KERNELS
  if (isa >= Isa::avx512) return plain_avx512::kPlainGemmKernels;
  if (isa >= Isa::avx2) return plain_avx2::kPlainGemmKernels;
#endif
  // Other architectures: the scalar table (an aarch64 level's would be picked here).
  return plain_scalar::kPlainGemmKernels;
}

}  // namespace

template <typename T>
void plain_gemm(Isa isa, Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const PlainProblem<T> p{
      trans_a == Op::T, trans_b == Op::T, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  const PlainGemmKernels& kern = kernels(isa);
  const auto tile = [&] {
    if constexpr (std::is_same_v<T, float>) {
      return kern.tile_f32;
    } else {
      return kern.tile_f64;
    }
  }();
  const int64_t row_tiles = (M + kPlainTileRows - 1) / kPlainTileRows;
  const int64_t col_tiles = (N + kPlainTileCols - 1) / kPlainTileCols;
  const int64_t tiles = row_tiles * col_tiles;
  const double flops =
      2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool threaded = tiles > 1 && flops >= kMinParallelFlops;
  parallel_for(tiles, threaded, [&](int64_t t) {
    const int64_t i0 = t / col_tiles * kPlainTileRows, j0 = t % col_tiles * kPlainTileCols;
    tile(p, i0, std::min(M, i0 + kPlainTileRows), j0, std::min(N, j0 + kPlainTileCols));
  });
}

template void plain_gemm<float>(Isa, Op, Op, int64_t, int64_t, int64_t, float, const float*,
                                int64_t, const float*, int64_t, float, float*, int64_t);
template void plain_gemm<double>(Isa, Op, Op, int64_t, int64_t, int64_t, double, const double*,
                                 int64_t, const double*, int64_t, double, double*, int64_t);

}  // namespace rnnx::cpu
