// The GEMM engine of the cpu backend: row-major C = alpha * op(A) * op(B) + beta * C,
// float32 on oneDNN's dnnl_sgemm and float64 on OpenBLAS's cblas_dgemm (OpenMP build,
// so that the whole backend runs on one threading runtime).
#pragma once

#include <cstdint>

namespace rnnx::cpu {

enum class Op : char { N = 'N', T = 'T' };

// op(A) is [M, K], op(B) is [K, N], C is [M, N]; leading dimensions are row strides.
// Empty problems (M or N = 0) do nothing; K = 0 gives C = beta * C, so beta = 0 zeroes C
// (weight gradients of a layer without tokens). Call it outside OpenMP parallel regions:
// the engines thread internally. Throws rnnx::Error(internal) if the engine refuses.
template <typename T>
void gemm(Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// The two engines (gemm.cpp); declared here so that every caller sees the specialisations.
template <>
void gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                 int64_t, float, float*, int64_t);
template <>
void gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                  int64_t, double, double*, int64_t);

}  // namespace rnnx::cpu
