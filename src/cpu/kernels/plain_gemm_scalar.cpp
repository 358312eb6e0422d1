// The plain GEMM's kernels (kernels/plain_gemm.inl) for baseline x86-64 (SSE2) or any other
// architecture: 16-byte vectors, 4 x 8 float32 (4 x 4 float64) micro-tiles in 8 accumulators.
// Everything here has internal linkage except the table (plain_gemm_kernels.hpp).
#include <cstdint>
#include <cstring>

#include "cpu/plain_gemm_kernels.hpp"

namespace rnnx::cpu::plain_scalar {
namespace {

constexpr int kVectorBytes = 16;
constexpr int kRows = 4;
constexpr int kColsF32 = 8;
constexpr int kColsF64 = 4;

#include "cpu/kernels/plain_gemm.inl"

}  // namespace

extern constinit const PlainGemmKernels kPlainGemmKernels{&tile<float, kRows, kColsF32>,
                                                          &tile<double, kRows, kColsF64>};

}  // namespace rnnx::cpu::plain_scalar
