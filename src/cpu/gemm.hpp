// The GEMM engines of the cpu backend (docs/cpu.md, "The GEMM engine"): row-major
// C = alpha * op(A) * op(B) + beta * C on unpacked operands, on the libraries the build links
// (library_gemm.hpp: oneDNN's sgemm, a BLAS's dgemm) or on rnnx's own loops (plain_gemm.hpp);
// and WeightGemm, a product whose B operand is a weight matrix used at every time step,
// which float32 packs once per call for the packed engine (packed_gemm.hpp) where the
// plan's ISA level has it.
#pragma once

#include <cstdint>

#include "cpu/isa.hpp"
#include "rnnx/config.hpp"
#include "rnnx/version.hpp"

namespace rnnx::cpu {

enum class Op : char { N = 'N', T = 'T' };

// What the packed engine multiplies in, and on which kernels: float32 on AVX-512 (f32),
// AVX2 + FMA (f32_avx2) or baseline vectors (f32_scalar), all with one packed layout; or
// bf16 operands with float32 accumulation (math mode allow_conversion; packed_gemm.hpp) on
// vdpbf16ps (bf16) or on AMX tiles (bf16_amx), both with the bf16 layout; or int8 (math mode
// int8: weights per column and rows of A per product quantised symmetrically, int32 sums,
// dequantised in the store) on AMX tiles (s8_amx), on vpdpbusd zmm (s8_vnni) or ymm
// (s8_avx_vnni) or in the scalar definition (s8_scalar), all with the int8 layout
// (kernels/packed_gemm_s8.inl).
enum class PackedType : char {
  f32,
  f32_avx2,
  f32_scalar,
  bf16,
  bf16_amx,
  s8_scalar,
  s8_vnni,
  s8_amx,
  s8_avx_vnni
};
inline bool packs_bf16(PackedType type) {
  return type == PackedType::bf16 || type == PackedType::bf16_amx;
}
inline bool packs_s8(PackedType type) {
  return type == PackedType::s8_scalar || type == PackedType::s8_vnni ||
         type == PackedType::s8_amx || type == PackedType::s8_avx_vnni;
}

// The float32 packed kernels of ISA level `isa` (f32_scalar on every architecture but
// x86-64: an aarch64 level would add its own type to PackedType and be mapped here).
inline PackedType packed_f32_type(Isa isa) {
  return isa >= Isa::avx512 ? PackedType::f32
         : isa == Isa::avx2 ? PackedType::f32_avx2
                            : PackedType::f32_scalar;
}

// Where a plan's products run:
// * `library` (library_gemm.hpp): dnnl_sgemm for float32, which repacks the weights at
//   every call, so at every step; cblas_dgemm for float64. Only where the build has them.
// * `plain` (plain_gemm.hpp): rnnx's own loops on unpacked operands, every build, every ISA.
// * `packed` (rnnx's own kernels on weights packed once per call, float32: AVX-512, AVX2 +
//   FMA or baseline vectors, the plan's ISA level's), `packed_bf16` / `packed_amx` (the same in
//   bf16 with float32 accumulation, on vdpbf16ps or on AMX tiles: float32 with math mode
//   allow_conversion on AVX512-BF16 within the level).
// * `packed_int8_amx` / `packed_int8` / `packed_int8_avx_vnni` / `packed_int8_scalar`: int8
//   with int32 sums (math mode int8, inference only), on AMX-INT8 tiles where the CPU and OS
//   allow them, on vpdpbusd zmm where the CPU has AVX512-VNNI, both at level avx512 or
//   above, on vpdpbusd ymm where it has AVX-VNNI at level avx2 or above, or in the scalar
//   definition where RNNX_CPU_INT8_KERNEL=scalar asks for it.
enum class GemmEngine {
  library,
  plain,
  packed,
  packed_bf16,
  packed_amx,
  packed_int8,
  packed_int8_scalar,
  packed_int8_amx,
  packed_int8_avx_vnni
};

// What RNNX_CPU_GEMM forces (read by algo_space): nothing, the packed engine where the level
// has it, the library (`sgemm`: oneDNN's) or the plain loops; the last two turn bf16
// conversion off.
enum class GemmForce { none, packed, library, plain };

// The engine a new plan of this kind takes by default: float64 the library where the build
// has a BLAS, else plain; float32 per `force`, else the packed engines where `isa` has them
// (bf16 with allow_conversion, after RNNX_CPU_BF16_KERNEL: "amx", "avx512", or unset/"auto"
// = amx where the machine and OS allow it; throws Error(invalid_argument) for other values),
// else the float32 packed engine, which every level has. `isa` is the plan's ISA level
// (fixed when it is built). `math` is the resolved mode: int8 is a demand, so it gets an
// int8 engine or Error(unsupported) naming what is missing (int8_engine()).
GemmEngine gemm_engine_for(bool float32, MathMode math, GemmForce force, Isa isa);
// The int8 engine of a plan of level `isa` (avx512 or above for AMX and VNNI, avx2 for
// AVX-VNNI), after RNNX_CPU_INT8_KERNEL: unset/"auto" the first of AMX-INT8, AVX512-VNNI and
// AVX-VNNI that the CPU, the OS and the level allow; "amx", "vnni", "avx-vnni" that one;
// "scalar" the definition. Throws Error(unsupported) where the one
// asked for cannot run (naming the CPU's features and the level), Error(invalid_argument)
// for another value of the variable.
GemmEngine int8_engine(Isa isa);
// The engine's name in impl_name() for a plan of level `isa`: "packed-avx512",
// "packed-avx2", "packed-scalar", "onednn-sgemm", "openblas-dgemm", "plain", ...
const char* gemm_engine_name(GemmEngine engine, bool float32, Isa isa);
bool is_packed(GemmEngine engine);
// The cpu backend's fields of build_info(): its GEMM engines in words, and whether the build
// links oneDNN (float32) and a BLAS (float64).
void describe_build(BuildInfo& info);

// A plan's engine and ISA level, which its products run on.
struct GemmRoute {
  GemmEngine engine = GemmEngine::plain;
  Isa isa = Isa::scalar;

  bool packed() const { return is_packed(engine); }
  // What the packed engines multiply in: bf16 for packed_bf16 and packed_amx, else float32
  // on the level's kernels.
  PackedType packed_type() const {
    return engine == GemmEngine::packed_bf16            ? PackedType::bf16
           : engine == GemmEngine::packed_amx           ? PackedType::bf16_amx
           : engine == GemmEngine::packed_int8          ? PackedType::s8_vnni
           : engine == GemmEngine::packed_int8_amx      ? PackedType::s8_amx
           : engine == GemmEngine::packed_int8_avx_vnni ? PackedType::s8_avx_vnni
           : engine == GemmEngine::packed_int8_scalar   ? PackedType::s8_scalar
                                                        : packed_f32_type(isa);
  }
};

// op(A) is [M, K], op(B) is [K, N], C is [M, N]; leading dimensions are row strides, on the
// route's unpacked engine (library or plain; a packed route runs plain). Empty problems (M or
// N = 0) do nothing; K = 0 gives C = beta * C, so beta = 0 zeroes C (weight gradients of a
// layer without tokens). The engines thread internally outside parallel regions.
// Throws rnnx::Error(internal) if a library refuses.
template <typename T>
void gemm(GemmRoute route, Op trans_a, Op trans_b, int64_t M, int64_t N, int64_t K, T alpha,
          const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// C = op(A) op(B) (accumulate: C +=) for a product over all real tokens (input
// projection, weight and input gradients): on the packed engine's packed_gemm_full when
// `scratch` (float32, packed_gemm_full_floats(M, N, K, route.packed_type()) floats) is
// given, else on gemm(). Row maps (packed_gemm.hpp) need the packed engine (a scratch).
template <typename T>
void gemm_all_tokens(GemmRoute route, Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const T* A,
                     int64_t lda, const T* B, int64_t ldb, bool accumulate, T* C, int64_t ldc,
                     T* scratch, const int64_t* a_rows = nullptr, const int64_t* b_rows = nullptr);

// C (+)= A * op(W) with the same W for many A. bind() once per call, then run() per step.
// `pack` (packed engine, float32 only) holds packed_b_floats(K, N, blocks, type) floats;
// null means W is used in place by gemm().
template <typename T>
class WeightGemm {
 public:
  // op(W) is [K, N]: Op::T when W is [N, K] (row stride ldw), Op::N when W is [K, N].
  // `blocks`: the packed layout keeps N / blocks columns apart (packed_gemm.hpp's PackedB).
  // `prepacked`: `pack` already holds W packed so (a network's kept copy, packed_weights.hpp).
  void bind(GemmRoute route, Op op, const T* W, int64_t ldw, int64_t K, int64_t N, T* pack,
            int64_t blocks = 1, bool prepacked = false);
  // C[M, N] = A[M, K] op(W) (accumulate: C +=). a_scratch: packed_a_floats(M, K, type) floats
  // when bound with a pack, else unused. A row map (packed_gemm.hpp) needs a pack.
  void run(int64_t M, const T* A, int64_t lda, bool accumulate, T* C, int64_t ldc, T* a_scratch,
           const int64_t* a_rows = nullptr) const;
  // The packed operand (packed_gemm.hpp's PackedB) when bound with a pack, else null.
  const T* packed() const { return packed_; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t blocks() const { return blocks_; }
  PackedType type() const { return route_.packed_type(); }

 private:
  GemmRoute route_;
  Op op_ = Op::N;
  const T* w_ = nullptr;
  int64_t ldw_ = 0, K_ = 0, N_ = 0, blocks_ = 1;
  const T* packed_ = nullptr;
};

}  // namespace rnnx::cpu
