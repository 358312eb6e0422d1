// GEMM engine wrappers: dnnl_sgemm for float, cblas_dgemm for double, both row-major.
// The K = 0 case is handled here because BLAS leaves it to the caller to skip, and
// overwritten weight gradients of an empty layer must still come out as zeros.
#include "cpu/gemm.hpp"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cpu/packed_gemm.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cpu {
namespace {

template <typename T>
void scale_only(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  if (beta == T(1)) return;
  for (int64_t i = 0; i < M; ++i) {
    T* row = C + i * ldc;
    // beta = 0 overwrites, so NaN left in C (an uninitialised workspace) does not survive.
    for (int64_t j = 0; j < N; ++j) row[j] = beta == T(0) ? T(0) : beta * row[j];
  }
}

}  // namespace

template <>
void gemm<float>(Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                 int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_only(M, N, beta, C, ldc);
  const dnnl_status_t st = dnnl_sgemm(static_cast<char>(trans_a), static_cast<char>(trans_b), M, N,
                                      K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) {
    throw Error(Status::internal, "dnnl_sgemm failed with status " + std::to_string(st) +
                                      " (M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                                      ", K = " + std::to_string(K) + ")");
  }
}

template <>
void gemm<double>(Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
                  double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_only(M, N, beta, C, ldc);
  const auto op = [](Op o) { return o == Op::N ? CblasNoTrans : CblasTrans; };
  // OpenBLAS takes blasint (32-bit in Debian's build) sizes: refuse rather than truncate.
  constexpr int64_t kMax = std::numeric_limits<blasint>::max();
  if (M > kMax || N > kMax || K > kMax || lda > kMax || ldb > kMax || ldc > kMax) {
    throw Error(
        Status::unsupported,
        "cblas_dgemm: a dimension exceeds the BLAS integer range (M = " + std::to_string(M) +
            ", N = " + std::to_string(N) + ", K = " + std::to_string(K) + ")");
  }
  cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

namespace {

// RNNX_CPU_BF16_KERNEL: "amx", "avx512" or ""/"auto".
std::string bf16_kernel_env() {
  const char* env = std::getenv("RNNX_CPU_BF16_KERNEL");
  const std::string v = env ? env : "";
  if (v != "" && v != "auto" && v != "amx" && v != "avx512") {
    throw Error(Status::invalid_argument,
                "RNNX_CPU_BF16_KERNEL (= \"" + v + "\") must be amx, avx512, auto, or unset");
  }
  return v;
}

// The bf16 engine a converting plan of ISA level `isa` gets, or sgemm for none.
GemmEngine bf16_engine(Isa isa) {
  if (!packed_gemm_available(PackedType::bf16, isa)) return GemmEngine::sgemm;
  const bool amx =
      bf16_kernel_env() != "avx512" && packed_gemm_available(PackedType::bf16_amx, isa);
  return amx ? GemmEngine::packed_amx : GemmEngine::packed_bf16;
}

}  // namespace

GemmEngine gemm_engine_for(bool float32, bool allow_conversion, bool sgemm_forced, Isa isa) {
  if (!float32 || sgemm_forced) return GemmEngine::sgemm;
  bf16_kernel_env();  // refused even when unused, like RNNX_CPU_GEMM
  if (allow_conversion) {
    const GemmEngine bf16 = bf16_engine(isa);
    if (bf16 != GemmEngine::sgemm) return bf16;
  }
  return packed_gemm_available(PackedType::f32, isa) ? GemmEngine::packed : GemmEngine::sgemm;
}

const char* gemm_engine_name(GemmEngine engine) {
  switch (engine) {
    case GemmEngine::packed:
      return "packed-avx512";
    case GemmEngine::packed_bf16:
      return "packed-avx512-bf16";
    case GemmEngine::packed_amx:
      return "packed-amx-bf16";
    case GemmEngine::sgemm:
      break;
  }
  return "sgemm";
}

template <typename T>
void WeightGemm<T>::bind(Op op, const T* W, int64_t ldw, int64_t K, int64_t N, T* pack,
                         int64_t blocks, PackedType type) {
  op_ = op;
  w_ = W;
  ldw_ = ldw;
  K_ = K;
  N_ = N;
  blocks_ = blocks;
  type_ = type;
  packed_ = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    if (pack != nullptr) packed_ = pack_b(op, K, N, W, ldw, pack, blocks, type).data;
  }
}

template <typename T>
void WeightGemm<T>::run(int64_t M, const T* A, int64_t lda, bool accumulate, T* C, int64_t ldc,
                        T* a_scratch, const int64_t* a_rows) const {
  if constexpr (std::is_same_v<T, float>) {
    if (packed_ != nullptr) {
      return packed_gemm(M, A, lda, PackedB{packed_, K_, N_, blocks_, type_}, accumulate, C, ldc,
                         a_scratch, a_rows);
    }
  }
  if (a_rows != nullptr) throw std::logic_error("WeightGemm::run: a row map needs packed weights");
  gemm<T>(Op::N, op_, M, N_, K_, T(1), A, lda, w_, ldw_, accumulate ? T(1) : T(0), C, ldc);
}

template <typename T>
void gemm_all_tokens(Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                     const T* B, int64_t ldb, bool accumulate, T* C, int64_t ldc, T* scratch,
                     PackedType type, const int64_t* a_rows, const int64_t* b_rows) {
  if constexpr (std::is_same_v<T, float>) {
    if (scratch != nullptr) {
      return packed_gemm_full(op_a, op_b, M, N, K, A, lda, B, ldb, accumulate, C, ldc, scratch,
                              type, a_rows, b_rows);
    }
  }
  if (a_rows != nullptr || b_rows != nullptr) {
    throw std::logic_error("gemm_all_tokens: row maps need the packed engine");
  }
  gemm<T>(op_a, op_b, M, N, K, T(1), A, lda, B, ldb, accumulate ? T(1) : T(0), C, ldc);
}

template void gemm_all_tokens<float>(Op, Op, int64_t, int64_t, int64_t, const float*, int64_t,
                                     const float*, int64_t, bool, float*, int64_t, float*,
                                     PackedType, const int64_t*, const int64_t*);
template void gemm_all_tokens<double>(Op, Op, int64_t, int64_t, int64_t, const double*, int64_t,
                                      const double*, int64_t, bool, double*, int64_t, double*,
                                      PackedType, const int64_t*, const int64_t*);

template class WeightGemm<float>;
template class WeightGemm<double>;

}  // namespace rnnx::cpu

namespace rnnx {

const char* cpu_bf16_gemm() {
  switch (cpu::bf16_engine(cpu::isa_for_plan())) {  // refuses a bad RNNX_CPU_ISA
    case cpu::GemmEngine::packed_amx:
      return "amx-bf16";
    case cpu::GemmEngine::packed_bf16:
      return "avx512-bf16";
    default:
      break;
  }
  return "none";
}

}  // namespace rnnx
