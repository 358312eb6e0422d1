// rnnx's own GEMM on unpacked operands, the `plain` engine: row-major C = alpha op(A) op(B) +
// beta C for float32 where neither the packed engine (below AVX-512) nor oneDNN's sgemm
// (a build without oneDNN) runs, for float64 in a build without BLAS, and wherever
// RNNX_CPU_GEMM=plain asks for it. Plain C++ loops, blocked for the caches, threaded over
// tiles of C, compiled once per ISA level (kernels/plain_gemm_*.cpp) so that the compiler
// vectorises them for the plan's level.
#pragma once

#include <cstdint>

#include "cpu/gemm.hpp"
#include "cpu/isa.hpp"

namespace rnnx::cpu {

// Shapes and conventions of gemm() (gemm.hpp): op(A) [M, K], op(B) [K, N], C [M, N]; M or
// N = 0 does nothing, K = 0 gives C = beta C, beta = 0 overwrites C (NaN there included).
// `isa` is the plan's level (capped at what the machine has). Threaded over tiles of C when
// called outside a parallel region and the product is large enough; inside one it runs on
// the calling thread. Every element of C is summed in one order, k by k within blocks of
// kPlainDepth, whatever the thread count (the same bits on any number of threads).
template <typename T>
void plain_gemm(Isa isa, Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

}  // namespace rnnx::cpu
