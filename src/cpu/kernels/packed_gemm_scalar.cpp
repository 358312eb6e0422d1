// The packed GEMM's float32 kernels for baseline x86-64 and other architectures
// (kernels/packed_gemm.inl): 16-byte vectors (SSE2's xmm on x86-64), sub-tiles of up to 6
// rows x 8 columns (12 accumulators) and 1 or 2 rows x 16 columns, separate multiplies and
// adds where the level has no FMA. Everything here has internal linkage except the table
// (packed_gemm_kernels.hpp).
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

namespace rnnx::cpu::packed_scalar {
namespace {

constexpr int kVectorBytes = 16;
constexpr int kSubRows = 6;
constexpr int kMinSubRows = 4;
constexpr int kSubVecs = 2;
constexpr int kWideVecs = 4;
constexpr int64_t kDepthBlock = 128;
constexpr int kBRegisters = 4;

// r[i] = row i of an n x n square in, column i out, through memory (the baseline level
// spells no shuffle; the compiler's own choice for this level).
template <class V, int n = sizeof(V) / sizeof(float)>
inline void transpose_lanes(V r[n]) {
  float square[n][n];
  std::memcpy(square, r, sizeof square);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) r[i][j] = square[j][i];
  }
}

#include "cpu/kernels/packed_gemm.inl"

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_scalar
