// The GEMM engines' dispatch (gemm.hpp): which engine a plan takes, the unpacked products on
// the library or the plain loops, and the weight and all-token products that float32 runs on
// the packed engine. The K = 0 case is handled here because BLAS leaves it to the caller to
// skip, and overwritten weight gradients of an empty layer must still come out as zeros.
#include "cpu/gemm.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cpu/cpu_features.hpp"
#include "cpu/library_gemm.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/plain_gemm.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"
#include "rnnx/version.hpp"

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

// The bf16 engine a converting plan of ISA level `isa` gets, or plain for none.
GemmEngine bf16_engine(Isa isa) {
  if (!packed_gemm_available(PackedType::bf16, isa)) return GemmEngine::plain;
  const bool amx =
      bf16_kernel_env() != "avx512" && packed_gemm_available(PackedType::bf16_amx, isa);
  return amx ? GemmEngine::packed_amx : GemmEngine::packed_bf16;
}

}  // namespace

template <typename T>
void gemm(GemmRoute route, Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha,
          const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_only(M, N, beta, C, ldc);
  if (route.engine == GemmEngine::library) {
    return library_gemm<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  plain_gemm<T>(route.isa, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

GemmEngine int8_engine(Isa isa) {
  const char* env = std::getenv("RNNX_CPU_INT8_KERNEL");
  const std::string v = env ? env : "";
  if (v != "" && v != "auto" && v != "amx" && v != "vnni" && v != "avx-vnni" && v != "scalar") {
    throw Error(Status::invalid_argument, "RNNX_CPU_INT8_KERNEL (= \"" + v +
                                              "\") must be amx, vnni, avx-vnni, scalar, auto, "
                                              "or unset");
  }
  if (v == "scalar") return GemmEngine::packed_int8_scalar;
  const bool any = v == "" || v == "auto";
  if ((any || v == "amx") && packed_gemm_available(PackedType::s8_amx, isa)) {
    return GemmEngine::packed_int8_amx;
  }
  if ((any || v == "vnni") && packed_gemm_available(PackedType::s8_vnni, isa)) {
    return GemmEngine::packed_int8;
  }
  if ((any || v == "avx-vnni") && packed_gemm_available(PackedType::s8_avx_vnni, isa)) {
    return GemmEngine::packed_int8_avx_vnni;
  }
  const std::string features = cpu_feature_names(cpu_features());
  const std::string wanted = v == "amx"    ? "AMX-INT8 tiles (RNNX_CPU_INT8_KERNEL=amx) at ISA "
                                             "level avx512 or above"
                             : v == "vnni" ? "AVX512-VNNI (RNNX_CPU_INT8_KERNEL=vnni) at ISA "
                                             "level avx512 or above"
                             : v == "avx-vnni"
                                 ? "AVX-VNNI (RNNX_CPU_INT8_KERNEL=avx-vnni) at ISA level avx2 "
                                   "or above"
                                 : "AVX512-VNNI (vpdpbusd) at ISA level avx512 or above, or "
                                   "AVX-VNNI at avx2 or above";
  throw Error(Status::unsupported,
              "math (= int8) needs " + wanted + "; the plan's level is " + isa_name(isa) +
                  " and this CPU has: " + (features.empty() ? "none" : features) +
                  " (RNNX_CPU_INT8_KERNEL=scalar runs int8's scalar definition, slowly)");
}

GemmEngine gemm_engine_for(bool float32, MathMode math, GemmForce force, Isa isa) {
  if (!float32) return have_blas() ? GemmEngine::library : GemmEngine::plain;
  if (math == MathMode::int8) {
    if (force == GemmForce::library || force == GemmForce::plain) {
      throw Error(Status::unsupported,
                  std::string("math (= int8) runs on rnnx's int8 packed engine only; the GEMM "
                              "engine is forced to ") +
                      (force == GemmForce::library ? "sgemm" : "plain") +
                      " (PlanOptions cpu gemm or RNNX_CPU_GEMM)");
    }
    return int8_engine(isa);
  }
  if (force == GemmForce::library) return GemmEngine::library;
  if (force == GemmForce::plain) return GemmEngine::plain;
  bf16_kernel_env();  // refused even when unused, like RNNX_CPU_GEMM
  if (math == MathMode::allow_conversion) {
    const GemmEngine bf16 = bf16_engine(isa);
    if (bf16 != GemmEngine::plain) return bf16;
  }
  return GemmEngine::packed;
}

bool is_packed(GemmEngine engine) {
  return engine == GemmEngine::packed || engine == GemmEngine::packed_bf16 ||
         engine == GemmEngine::packed_amx || engine == GemmEngine::packed_int8 ||
         engine == GemmEngine::packed_int8_scalar || engine == GemmEngine::packed_int8_amx ||
         engine == GemmEngine::packed_int8_avx_vnni;
}

const char* gemm_engine_name(GemmEngine engine, bool float32, Isa isa) {
  switch (engine) {
    case GemmEngine::packed:
      return isa >= Isa::avx512 ? "packed-avx512"
             : isa == Isa::avx2 ? "packed-avx2"
                                : "packed-scalar";
    case GemmEngine::packed_bf16:
      return "packed-avx512-bf16";
    case GemmEngine::packed_amx:
      return "packed-amx-bf16";
    case GemmEngine::packed_int8:
      return "packed-avx512-vnni-int8";
    case GemmEngine::packed_int8_scalar:
      return "packed-scalar-int8";
    case GemmEngine::packed_int8_amx:
      return "packed-amx-int8";
    case GemmEngine::packed_int8_avx_vnni:
      return "packed-avx-vnni-int8";
    case GemmEngine::library:
      return library_gemm_name(float32);
    case GemmEngine::plain:
      break;
  }
  return "plain";
}

template <typename T>
void WeightGemm<T>::bind(GemmRoute route, Op op, const T* W, int64_t ldw, int64_t K, int64_t N,
                         T* pack, int64_t blocks, bool prepacked) {
  route_ = route;
  op_ = op;
  w_ = W;
  ldw_ = ldw;
  K_ = K;
  N_ = N;
  blocks_ = blocks;
  packed_ = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    if (pack != nullptr && prepacked) packed_ = pack;
    if (pack != nullptr && !prepacked) {
      packed_ = pack_b(op, K, N, W, ldw, pack, blocks, route.packed_type()).data;
    }
  }
}

template <typename T>
void WeightGemm<T>::run(int64_t M, const T* A, int64_t lda, bool accumulate, T* C, int64_t ldc,
                        T* a_scratch, const int64_t* a_rows) const {
  if constexpr (std::is_same_v<T, float>) {
    if (packed_ != nullptr) {
      return packed_gemm(M, A, lda, PackedB{packed_, K_, N_, blocks_, route_.packed_type()},
                         accumulate, C, ldc, a_scratch, a_rows);
    }
  }
  if (a_rows != nullptr) throw std::logic_error("WeightGemm::run: a row map needs packed weights");
  gemm<T>(route_, Op::N, op_, M, N_, K_, T(1), A, lda, w_, ldw_, accumulate ? T(1) : T(0), C, ldc);
}

template <typename T>
void gemm_all_tokens(GemmRoute route, Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const T* A,
                     int64_t lda, const T* B, int64_t ldb, bool accumulate, T* C, int64_t ldc,
                     T* scratch, const int64_t* a_rows, const int64_t* b_rows) {
  if constexpr (std::is_same_v<T, float>) {
    if (scratch != nullptr) {
      return packed_gemm_full(op_a, op_b, M, N, K, A, lda, B, ldb, accumulate, C, ldc, scratch,
                              route.packed_type(), a_rows, b_rows);
    }
  }
  if (a_rows != nullptr || b_rows != nullptr) {
    throw std::logic_error("gemm_all_tokens: row maps need the packed engine");
  }
  gemm<T>(route, op_a, op_b, M, N, K, T(1), A, lda, B, ldb, accumulate ? T(1) : T(0), C, ldc);
}

template void gemm<float>(GemmRoute, Op, Op, int64_t, int64_t, int64_t, float, const float*,
                          int64_t, const float*, int64_t, float, float*, int64_t);
template void gemm<double>(GemmRoute, Op, Op, int64_t, int64_t, int64_t, double, const double*,
                           int64_t, const double*, int64_t, double, double*, int64_t);
template void gemm_all_tokens<float>(GemmRoute, Op, Op, int64_t, int64_t, int64_t, const float*,
                                     int64_t, const float*, int64_t, bool, float*, int64_t, float*,
                                     const int64_t*, const int64_t*);
template void gemm_all_tokens<double>(GemmRoute, Op, Op, int64_t, int64_t, int64_t, const double*,
                                      int64_t, const double*, int64_t, bool, double*, int64_t,
                                      double*, const int64_t*, const int64_t*);

template class WeightGemm<float>;
template class WeightGemm<double>;

}  // namespace rnnx::cpu

namespace rnnx {

void cpu::describe_build(BuildInfo& info) {
#if RNNX_CPU_X86_KERNELS
  const std::string packed = "packed (avx512, avx2 or scalar kernels, the plan's level";
#else
  const std::string packed = "packed (scalar kernels, the only level built for this architecture";
#endif
  // Both float32 engines are candidates of the algorithm search where the build has oneDNN.
  static const std::string engines =
      "float32 " +
      (cpu::have_onednn() ? packed + ") or onednn-sgemm (the search measures both)"
                          : packed + "; no oneDNN in this build)") +
      ", float64 " +
      (cpu::have_blas() ? std::string(cpu::library_gemm_name(false))
                        : std::string("plain (no BLAS in this build)"));
  info.gemm_engine = engines.c_str();
  info.with_onednn = cpu::have_onednn();
  info.with_blas = cpu::have_blas();
}

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

const char* cpu_int8_gemm() {
  try {
    switch (cpu::int8_engine(cpu::isa_for_plan())) {
      case cpu::GemmEngine::packed_int8_amx:
        return "amx-int8";
      case cpu::GemmEngine::packed_int8:
        return "avx512-vnni";
      case cpu::GemmEngine::packed_int8_avx_vnni:
        return "avx-vnni";
      default:
        return "scalar";
    }
  } catch (const Error& e) {
    if (e.code() != Status::unsupported) throw;
  }
  return "none";
}

}  // namespace rnnx
