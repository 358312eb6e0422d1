// The packed GEMM's float32 kernels for AVX2 + FMA (kernels/packed_gemm.inl): 32-byte
// vectors, sub-tiles of up to 3 rows x 32 columns (12 ymm accumulators, 1 for the broadcast
// of A, B's row taken by the FMAs from L1 as memory operands; 14 rows = 3 + 3 + 3 + 3 + 2),
// fused multiply-adds. Chosen by measurement on a Zen 3 (AVX2 only), register-resident
// loops over one panel in L1, 1 thread: 3 x 32 reached 98% of the FMA peak, 4 x 24 88%,
// 6 x 16 (the usual AVX2 block: 6 broadcasts per 12 FMAs) 74%, 2 x 32 65%.
// Everything here has internal linkage except the table (packed_gemm_kernels.hpp).
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

namespace rnnx::cpu::packed_avx2 {
namespace {

constexpr int kVectorBytes = 32;
constexpr int kSubRows = 3;
constexpr int kMinSubRows = 2;
constexpr int kSubVecs = 4;
constexpr int kWideVecs = 4;
constexpr int64_t kDepthBlock = 128;
constexpr int kBRegisters = 3;

#include "cpu/kernels/packed_gemm.inl"

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_avx2
