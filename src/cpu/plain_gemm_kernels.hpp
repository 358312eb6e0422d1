// The plain GEMM's per-ISA kernels (plain_gemm.hpp) as one table per translation unit
// (src/cpu/kernels/plain_gemm_{scalar,avx2,avx512}.cpp, each the same C++ of
// kernels/plain_gemm.inl built with its level's flags, each exporting only its table), used
// by plain_gemm.cpp only, which does the threading.
#pragma once

#include <cstdint>

namespace rnnx::cpu {

// C's tiles, the unit of the threads: at most kPlainTileRows x kPlainTileCols. Within a tile
// op(B) is packed kPlainDepth rows (k) at a time, [kPlainDepth][kPlainTileCols] on the stack
// (32 KB in float32), and each element of C adds up its products k by k within such a block.
constexpr int64_t kPlainTileRows = 64;
constexpr int64_t kPlainTileCols = 64;
constexpr int64_t kPlainDepth = 128;

// One product, as plain_gemm() takes it.
template <typename T>
struct PlainProblem {
  bool trans_a = false, trans_b = false;  // op(A) = A^T: A is [K, M]; op(B) = B^T: B is [N, K]
  int64_t M = 0, N = 0, K = 0;
  T alpha = T(1);
  const T* A = nullptr;
  int64_t lda = 0;
  const T* B = nullptr;
  int64_t ldb = 0;
  T beta = T(0);
  T* C = nullptr;
  int64_t ldc = 0;
};

struct PlainGemmKernels {
  // C's rows [i0, i1) and columns [j0, j1) (j1 - j0 <= kPlainTileCols) = beta C + alpha
  // op(A) op(B), serially.
  void (*tile_f32)(const PlainProblem<float>&, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  void (*tile_f64)(const PlainProblem<double>&, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
};

namespace plain_scalar {
extern const PlainGemmKernels kPlainGemmKernels;
}
#if RNNX_CPU_X86_KERNELS
namespace plain_avx2 {
extern const PlainGemmKernels kPlainGemmKernels;
}
namespace plain_avx512 {
extern const PlainGemmKernels kPlainGemmKernels;
}
#endif

}  // namespace rnnx::cpu
