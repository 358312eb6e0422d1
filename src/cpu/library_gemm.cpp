// The library engine (library_gemm.hpp): dnnl_sgemm and cblas_dgemm where the build has them
// (RNNX_HAVE_ONEDNN, RNNX_HAVE_BLAS from CMake), row-major. dnnl_sgemm runs on tiles of C of
// a fixed size, one thread each, so that its sums do not follow the thread count.
#include "cpu/library_gemm.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "cpu/thread_pool.hpp"
#include "rnnx/error.hpp"

#if RNNX_HAVE_ONEDNN || RNNX_HAVE_BLAS
#include <omp.h>
#endif
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
// Debian's oneDNN and OpenBLAS thread with OpenMP and ask the calling thread's OpenMP setting
// how many threads to use; rnnx's own threads (thread_pool.hpp) are not OpenMP's, so each
// call says it here: one per dnnl_sgemm tile, the caller's count for cblas_dgemm. Only these
// builds link OpenMP, for these libraries' sake.
class OpenMpThreads {
 public:
  explicit OpenMpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OpenMpThreads() { omp_set_num_threads(saved_); }
  OpenMpThreads(const OpenMpThreads&) = delete;
  OpenMpThreads& operator=(const OpenMpThreads&) = delete;

 private:
  int saved_;
};

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

#if RNNX_HAVE_ONEDNN
// dnnl_sgemm's threads split the sums over K between them where M and N are small, so its
// bits follow the thread count (seen on AVX2: Determinism.ThreadCountDoesNotChangeTheBits
// with RNNX_CPU_GEMM=sgemm). rnnx threads it instead, over tiles of C of this size: each
// tile is one single-threaded call whose shape does not depend on the threads, so neither do
// its sums. Big enough that the per-call repacking of A and B stays around 1% of the work.
constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 128;
// Below this many flops one thread does it all (a fork costs a few microseconds).
constexpr double kMinParallelFlops = 1 << 18;

void sgemm_tile(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                int64_t tile) {
  const int64_t col_tiles = (N + kTileCols - 1) / kTileCols;
  const int64_t i0 = tile / col_tiles * kTileRows, j0 = tile % col_tiles * kTileCols;
  const int64_t m = std::min(kTileRows, M - i0), n = std::min(kTileCols, N - j0);
  const float* a = ta == 'N' ? A + i0 * lda : A + i0;
  const float* b = tb == 'N' ? B + j0 : B + j0 * ldb;
  const dnnl_status_t st =
      dnnl_sgemm(ta, tb, m, n, K, alpha, a, lda, b, ldb, beta, C + i0 * ldc + j0, ldc);
  if (st != dnnl_success) {
    throw Error(Status::internal, "dnnl_sgemm failed with status " + std::to_string(st) + " (" +
                                      sizes(M, N, K) + ")");
  }
}

void tiled_sgemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int64_t tiles = (M + kTileRows - 1) / kTileRows * ((N + kTileCols - 1) / kTileCols);
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * K;
  const int threads =
      flops < kMinParallelFlops ? 1 : static_cast<int>(std::min<int64_t>(max_threads(), tiles));
  // Tiles in contiguous blocks, one block per thread (a region rethrows a member's error).
  parallel_region(threads, [&](int th, int n) {
    const OpenMpThreads one(1);  // this thread's calls run on it alone
    for (int64_t t = tiles * th / n; t < tiles * (th + 1) / n; ++t) {
      sgemm_tile(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, t);
    }
  });
}
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
    tiled_sgemm(static_cast<char>(trans_a), static_cast<char>(trans_b), M, N, K, alpha, A, lda, B,
                ldb, beta, C, ldc);
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
    const OpenMpThreads threads(max_threads());  // the plan's count, not OpenMP's default
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
