// The plain GEMM's kernels (kernels/plain_gemm.inl) for AVX2 + FMA: 32-byte vectors, 6 x 16
// float32 (6 x 8 float64) micro-tiles in 12 ymm accumulators, fused multiply-adds.
// Everything here has internal linkage except the table (plain_gemm_kernels.hpp).
#include <cstdint>
#include <cstring>

#include "cpu/plain_gemm_kernels.hpp"

namespace rnnx::cpu::plain_avx2 {
namespace {

constexpr int kVectorBytes = 32;
constexpr int kRows = 6;
constexpr int kColsF32 = 16;
constexpr int kColsF64 = 8;

#include "cpu/kernels/plain_gemm.inl"

}  // namespace

extern constinit const PlainGemmKernels kPlainGemmKernels{&tile<float, kRows, kColsF32>,
                                                          &tile<double, kRows, kColsF64>};

}  // namespace rnnx::cpu::plain_avx2
