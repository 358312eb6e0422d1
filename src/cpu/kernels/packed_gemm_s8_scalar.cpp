// The int8 packed GEMM's definition (kernels/packed_gemm_s8.inl): its packers, and a multiply
// in plain integer loops, one element at a time. Built at the baseline level for every
// architecture; the VNNI kernels (packed_gemm_avx512_vnni.cpp) are tested against it bit for
// bit, and RNNX_CPU_INT8_KERNEL=scalar runs plans on it (slowly) where no VNNI is. Everything
// here has internal linkage except the table (packed_gemm_kernels.hpp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

namespace rnnx::cpu::packed_s8_scalar {
namespace {

#include "cpu/kernels/packed_gemm_s8.inl"

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  const int64_t depth = s8_depth(K);
  const float* a_scales = a_packed + M * depth;
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = b_packed + p * panel_slots(K);
    const auto* qb = reinterpret_cast<const int8_t*>(panel);
    const float* w_scales = panel + depth * kPanel;
    const auto* comp = reinterpret_cast<const int32_t*>(w_scales + kPanel);
    const int64_t cols = min64(kPanel, N - p * kPanel);
    for (int64_t i = 0; i < M; ++i) {
      const int64_t m0 = i / kRows * kRows;
      const int64_t rows = min64(kRows, M - m0);
      const auto* block = reinterpret_cast<const uint8_t*>(a_packed + m0 * depth);
      for (int64_t j = 0; j < cols; ++j) {
        int32_t sum = 0;
        for (int64_t s = 0; s < depth; ++s) {
          const uint8_t* qa =
              block + ((s / kChunk * rows + (i - m0)) * kChunk + s % kChunk) * kQuad;
          const int8_t* qw = qb + (s * kPanel + j) * kQuad;
          for (int t = 0; t < kQuad; ++t) sum += int32_t{qa[t]} * int32_t{qw[t]};
        }
        float* c = C + i * ldc + p * kPanel + j;
        const float v = dequantize(sum, comp[j], a_scales[i], w_scales[j]);
        *c = accumulate ? *c + v : v;
      }
    }
  }
}

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::packed_s8_scalar
