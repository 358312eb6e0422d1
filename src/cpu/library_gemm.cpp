// The library engine (library_gemm.hpp): dnnl_sgemm and cblas_dgemm where the build has them
// (RNNX_HAVE_ONEDNN, RNNX_HAVE_BLAS from CMake), row-major.
#include "cpu/library_gemm.hpp"

#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "rnnx/error.hpp"

#if RNNX_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if RNNX_HAVE_BLAS
#include <cblas.h>
#endif
#ifndef RNNX_BLAS_DGEMM_NAME
#define RNNX_BLAS_DGEMM_NAME "blas-dgemm"
#endif

namespace rnnx::cpu {
namespace {

[[noreturn]] void missing(const char* what) {
  throw std::logic_error(std::string("library_gemm: this build has no ") + what);
}

#if RNNX_HAVE_ONEDNN || RNNX_HAVE_BLAS
std::string sizes(int64_t M, int64_t N, int64_t K) {
  return "M = " + std::to_string(M) + ", N = " + std::to_string(N) + ", K = " + std::to_string(K);
}
#endif

#if RNNX_HAVE_BLAS
// The BLAS's integer (OpenBLAS's blasint, int in the reference CBLAS), from cblas_dgemm's
// own declaration: (order, trans_a, trans_b, M, ...).
template <typename F>
struct FourthParameter;
template <typename R, typename P0, typename P1, typename P2, typename P3, typename... Ps>
struct FourthParameter<R (*)(P0, P1, P2, P3, Ps...)> {
  using type = std::remove_cv_t<P3>;
};
using BlasInt = FourthParameter<decltype(&cblas_dgemm)>::type;
#endif

}  // namespace

bool have_onednn() {
#if RNNX_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

bool have_blas() {
#if RNNX_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

template <typename T>
bool library_gemm_available() {
  return std::is_same_v<T, float> ? have_onednn() : have_blas();
}

const char* library_gemm_name(bool float32) {
  return float32 ? "onednn-sgemm" : RNNX_BLAS_DGEMM_NAME;
}

// The parameters go unused where the build has no library for T.
template <typename T>
void library_gemm([[maybe_unused]] Op trans_a, [[maybe_unused]] Op trans_b,
                  [[maybe_unused]] int64_t M, [[maybe_unused]] int64_t N,
                  [[maybe_unused]] int64_t K, [[maybe_unused]] T alpha, [[maybe_unused]] const T* A,
                  [[maybe_unused]] int64_t lda, [[maybe_unused]] const T* B,
                  [[maybe_unused]] int64_t ldb, [[maybe_unused]] T beta, [[maybe_unused]] T* C,
                  [[maybe_unused]] int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
#if RNNX_HAVE_ONEDNN
    const dnnl_status_t st = dnnl_sgemm(static_cast<char>(trans_a), static_cast<char>(trans_b), M,
                                        N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (st != dnnl_success) {
      throw Error(Status::internal, "dnnl_sgemm failed with status " + std::to_string(st) + " (" +
                                        sizes(M, N, K) + ")");
    }
    return;
#endif
    missing("oneDNN");
  } else {
#if RNNX_HAVE_BLAS
    const auto op = [](Op o) { return o == Op::N ? CblasNoTrans : CblasTrans; };
    // Debian's OpenBLAS takes 32-bit sizes: refuse rather than truncate.
    constexpr int64_t kMax = std::numeric_limits<BlasInt>::max();
    if (M > kMax || N > kMax || K > kMax || lda > kMax || ldb > kMax || ldc > kMax) {
      throw Error(Status::unsupported, "cblas_dgemm: a dimension exceeds the BLAS integer range (" +
                                           sizes(M, N, K) + ")");
    }
    cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<BlasInt>(M),
                static_cast<BlasInt>(N), static_cast<BlasInt>(K), alpha, A,
                static_cast<BlasInt>(lda), B, static_cast<BlasInt>(ldb), beta, C,
                static_cast<BlasInt>(ldc));
    return;
#endif
    missing("BLAS");
  }
}

template bool library_gemm_available<float>();
template bool library_gemm_available<double>();
template void library_gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  const float*, int64_t, float, float*, int64_t);
template void library_gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, const double*, int64_t, double, double*, int64_t);

}  // namespace rnnx::cpu
