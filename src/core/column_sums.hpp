// Column sums of a dense row-major block, in one order of additions everywhere, whatever T
// and whatever splits the work between threads (the cpu backend's OpenMP chunks, a CUDA block
// per 32 columns with a thread per column and run, the tests' host loop): the rows are taken
// in runs of kColumnSumRows; each run's terms are added in row order from zero in double, the
// runs' partial sums in run order from zero in double, and the total rounded to T once. The
// bias and peephole gradients are these sums over the tokens, and computing them the same way
// everywhere keeps their bits independent of the thread count and the device's tiling. The
// runs let a GPU add a long column in parallel (one thread per run) and still give these bits;
// for rows <= kColumnSumRows the order is plain row order. A product with a row of ones would
// leave the order to the GEMM, which splits long sums between threads. Double, because a sum
// over thousands of float32 tokens would otherwise lose several bits, and reading the rows
// costs the same.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace rnnx::core {

// The type a column's sum is carried in.
using ColumnAccumulator = double;

// Rows per run (see above).
inline constexpr int64_t kColumnSumRows = 256;

// Whether row r (counted from the block's first) starts a run after the first: there the
// finished run's partial sum joins the total.
RNNX_HOST_DEVICE constexpr bool starts_column_run(int64_t r) {
  return r > 0 && r % kColumnSumRows == 0;
}

// One column: runs of A[0][0], A[1][0], ..., A[rows-1][0] (lda: A's row stride in elements).
template <typename T>
RNNX_HOST_DEVICE T column_sum(const T* A, int64_t lda, int64_t rows) {
  ColumnAccumulator total = 0, run = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (starts_column_run(r)) total += run, run = 0;
    run += static_cast<ColumnAccumulator>(A[r * lda]);
  }
  return static_cast<T>(total + run);
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
    ColumnAccumulator total[kBlock] = {}, run[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      if (starts_column_run(r)) {
        for (int64_t j = 0; j < n; ++j) total[j] += run[j], run[j] = 0;
      }
      const T* a = A + r * lda + j0;
      for (int64_t j = 0; j < n; ++j) run[j] += static_cast<ColumnAccumulator>(a[j]);
    }
    for (int64_t j = 0; j < n; ++j) out[j0 + j] = static_cast<T>(total[j] + run[j]);
  }
}

}  // namespace rnnx::core
