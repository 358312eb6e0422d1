// The GEMM engines of the cpu backend: row-major C = alpha * op(A) * op(B) + beta * C,
// float32 on oneDNN's dnnl_sgemm and float64 on OpenBLAS's cblas_dgemm (OpenMP build,
// so that the whole backend runs on one threading runtime); and WeightGemm, a product whose
// B operand is a weight matrix used at every time step, which float32 packs once per call
// for the packed engine (packed_gemm.hpp) where the machine has it.
#pragma once

#include <cstdint>

#include "cpu/isa.hpp"

namespace rnnx::cpu {

enum class Op : char { N = 'N', T = 'T' };

// What the packed engine multiplies in: float32, or bf16 operands with float32
// accumulation (math mode allow_conversion; packed_gemm.hpp) on vdpbf16ps (bf16) or on AMX
// tiles (bf16_amx), both with the same packed layouts.
enum class PackedType : char { f32, bf16, bf16_amx };

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

// Where the float32 products with recurrent and projection weights run: `packed` (rnnx's
// AVX-512 kernels on weights packed once per call; needs AVX-512 within the ISA cap),
// `packed_bf16` / `packed_amx` (the same in bf16 with float32 accumulation, on vdpbf16ps or
// on AMX tiles: float32 with math mode allow_conversion on AVX512-BF16 within the cap) or
// `sgemm` (dnnl_sgemm, which repacks the weights at every step). Chosen at plan time: the
// packed engines where available unless `sgemm_forced` (RNNX_CPU_GEMM=sgemm, read by
// algo_space, which also turns conversion off), the bf16 one after RNNX_CPU_BF16_KERNEL
// ("amx", "avx512", or unset/"auto" = amx where the machine and OS allow it; throws
// Error(invalid_argument) for other values); float64 always runs cblas_dgemm. `isa` is the
// plan's ISA level (fixed when it is built).
enum class GemmEngine { sgemm, packed, packed_bf16, packed_amx };
GemmEngine gemm_engine_for(bool float32, bool allow_conversion, bool sgemm_forced, Isa isa);
const char* gemm_engine_name(GemmEngine engine);

// C = op(A) op(B) (accumulate: C +=) for a product over all real tokens (input
// projection, weight and input gradients): on the packed engine's packed_gemm_full when
// `scratch` (float32, packed_gemm_full_floats(M, N, K, type) floats) is given, else on gemm().
// Row maps (packed_gemm.hpp) need the packed engine (a scratch).
template <typename T>
void gemm_all_tokens(Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                     const T* B, int64_t ldb, bool accumulate, T* C, int64_t ldc, T* scratch,
                     PackedType type = PackedType::f32, const int64_t* a_rows = nullptr,
                     const int64_t* b_rows = nullptr);

// C (+)= A * op(W) with the same W for many A. bind() once per call, then run() per step.
// `pack` (packed engine, float32 only) holds packed_b_floats(K, N, blocks, type) floats;
// null means W is used in place by gemm().
template <typename T>
class WeightGemm {
 public:
  // op(W) is [K, N]: Op::T when W is [N, K] (row stride ldw), Op::N when W is [K, N].
  // `blocks`: the packed layout keeps N / blocks columns apart (packed_gemm.hpp's PackedB).
  void bind(Op op, const T* W, int64_t ldw, int64_t K, int64_t N, T* pack, int64_t blocks = 1,
            PackedType type = PackedType::f32);
  // C[M, N] = A[M, K] op(W) (accumulate: C +=). a_scratch: packed_a_floats(M, K, type) floats
  // when bound with a pack, else unused. A row map (packed_gemm.hpp) needs a pack.
  void run(int64_t M, const T* A, int64_t lda, bool accumulate, T* C, int64_t ldc, T* a_scratch,
           const int64_t* a_rows = nullptr) const;
  // The packed operand (packed_gemm.hpp's PackedB) when bound with a pack, else null.
  const T* packed() const { return packed_; }
  int64_t blocks() const { return blocks_; }
  PackedType type() const { return type_; }

 private:
  Op op_ = Op::N;
  const T* w_ = nullptr;
  int64_t ldw_ = 0, K_ = 0, N_ = 0, blocks_ = 1;
  PackedType type_ = PackedType::f32;
  const T* packed_ = nullptr;
};

}  // namespace rnnx::cpu
