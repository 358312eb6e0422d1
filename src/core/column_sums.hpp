// Column sums of a dense row-major block, every column added up in row order starting from
// zero in double, whatever T, and rounded to T once at the end, whatever splits the columns
// between threads (the cpu backend's OpenMP chunks, a CUDA thread per column, the tests' host
// loop): the bias and peephole gradients are these sums over the tokens, and computing them
// the same way everywhere keeps their bits independent of the thread count and the device's
// tiling. A product with a row of ones would leave the order to the GEMM, which splits long
// sums between threads. Double, because a sum over thousands of float32 tokens would
// otherwise lose several bits, and reading the rows costs the same.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace rnnx::core {

// The type a column's sum is carried in.
using ColumnAccumulator = double;

// One column: A[0][0] + A[1][0] + ... + A[rows-1][0] (lda: A's row stride in elements).
template <typename T>
RNNX_HOST_DEVICE T column_sum(const T* A, int64_t lda, int64_t rows) {
  ColumnAccumulator sum = 0;
  for (int64_t r = 0; r < rows; ++r) sum += static_cast<ColumnAccumulator>(A[r * lda]);
  return static_cast<T>(sum);
}

// For j < cols: out[j] = column_sum(A + j, lda, rows), the same bits. Rows outermost within a
// block of 64 columns (the cpu backend's chunk: its rows are read whole, a few cache lines at a
// time); a caller splitting the columns passes A + j0 and out + j0, which changes no column's
// order of additions. Host code: the cpu compiles it into each instruction set's kernels
// (its conversions and adds run 2 doubles to an SSE2 instruction, 8 to an AVX-512 one).
template <typename T>
RNNX_ALWAYS_INLINE void column_sums(const T* A, int64_t lda, int64_t rows, int64_t cols, T* out) {
  constexpr int64_t kBlock = 64;
  for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
    const int64_t n = cols - j0 < kBlock ? cols - j0 : kBlock;
    ColumnAccumulator sum[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* a = A + r * lda + j0;
      for (int64_t j = 0; j < n; ++j) sum[j] += static_cast<ColumnAccumulator>(a[j]);
    }
    for (int64_t j = 0; j < n; ++j) out[j0 + j] = static_cast<T>(sum[j]);
  }
}

}  // namespace rnnx::core
