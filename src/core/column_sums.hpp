// Column sums of a dense row-major block, every column added up in row order starting from
// zero, whatever splits the columns between threads (the cpu backend's OpenMP chunks, a CUDA
// thread per column, the tests' host loop): the bias and peephole gradients are these sums
// over the tokens, and computing them the same way everywhere keeps their bits independent of
// the thread count and the device's tiling. A product with a row of ones would leave the
// order to the GEMM, which splits long sums between threads.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace rnnx::core {

// For j < cols: out[j] = A[0][j] + A[1][j] + ... + A[rows-1][j], in that order, in T's
// arithmetic (lda: A's row stride in elements). Rows outermost, so that a range of columns
// reads A a row at a time; a caller splitting the columns passes A + j0 and out + j0, which
// changes no column's order of additions.
template <typename T>
RNNX_HOST_DEVICE void column_sums(const T* A, int64_t lda, int64_t rows, int64_t cols, T* out) {
  for (int64_t j = 0; j < cols; ++j) out[j] = T(0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* a = A + r * lda;
    for (int64_t j = 0; j < cols; ++j) out[j] += a[j];
  }
}

}  // namespace rnnx::core
