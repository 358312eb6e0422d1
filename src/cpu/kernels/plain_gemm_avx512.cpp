// The plain GEMM's kernels (kernels/plain_gemm.inl) for AVX-512: 64-byte vectors, 12 x 32
// float32 (12 x 16 float64) micro-tiles in 24 zmm accumulators, fused multiply-adds.
// Everything here has internal linkage except the table (plain_gemm_kernels.hpp).
#include <cstdint>
#include <cstring>

#include "cpu/plain_gemm_kernels.hpp"

namespace rnnx::cpu::plain_avx512 {
namespace {

constexpr int kVectorBytes = 64;
constexpr int kRows = 12;
constexpr int kColsF32 = 32;
constexpr int kColsF64 = 16;

#include "cpu/kernels/plain_gemm.inl"

}  // namespace

extern constinit const PlainGemmKernels kPlainGemmKernels{&tile<float, kRows, kColsF32>,
                                                          &tile<double, kRows, kColsF64>};

}  // namespace rnnx::cpu::plain_avx512
