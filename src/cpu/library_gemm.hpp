// The `library` GEMM engine: the libraries this build links for products on unpacked
// operands, oneDNN's dnnl_sgemm for float32 (`onednn-sgemm`) and a BLAS's cblas_dgemm for
// float64 (`openblas-dgemm` with OpenBLAS, else `blas-dgemm`), each only where CMake found it
// (RNNX_WITH_ONEDNN, RNNX_WITH_BLAS). Without them rnnx's own engines run those products.
#pragma once

#include <cstdint>

#include "cpu/gemm.hpp"

namespace rnnx::cpu {

// Whether this build links oneDNN, and a BLAS.
bool have_onednn();
bool have_blas();
// Whether the library engine exists for T (float: oneDNN, double: BLAS).
template <typename T>
bool library_gemm_available();
// The engine's name for float32 or float64, as impl_name() shows it.
const char* library_gemm_name(bool float32);

// gemm()'s product (gemm.hpp) on the library. Throws std::logic_error where the build has
// none for T (callers check library_gemm_available), Error(internal) if the library refuses,
// Error(unsupported) for sizes beyond the BLAS's integer type.
template <typename T>
void library_gemm(Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

}  // namespace rnnx::cpu
