// The packed GEMM's float32 kernels for AVX2 + FMA (kernels/packed_gemm.inl): 32-byte
// vectors, sub-tiles of up to 3 rows x 32 columns (12 ymm accumulators, 1 for the broadcast
// of A, B's row taken by the FMAs from L1 as memory operands; 14 rows = 3 + 3 + 3 + 3 + 2),
// fused multiply-adds. Chosen by measurement on a Zen 3 (AVX2 only), register-resident
// loops over one panel in L1, 1 thread: 3 x 32 reached 98% of the FMA peak, 4 x 24 88%,
// 6 x 16 (the usual AVX2 block: 6 broadcasts per 12 FMAs) 74%, 2 x 32 65%.
// Everything here has internal linkage except the table (packed_gemm_kernels.hpp).
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

// bench/peak/packed_kernel_ab.cpp builds this file twice more, each copy in a namespace of
// its own and with a block depth of its own, to time two depths in one process; the library's
// build sets neither.
#ifndef RNNX_PACKED_AVX2_NAMESPACE
#define RNNX_PACKED_AVX2_NAMESPACE packed_avx2
#endif
#ifndef RNNX_PACKED_AVX2_DEPTH
#define RNNX_PACKED_AVX2_DEPTH 256
#endif

namespace rnnx::cpu::RNNX_PACKED_AVX2_NAMESPACE {
namespace {

constexpr int kVectorBytes = 32;
// The register block, also macros for rnnx_packed_kernel_ab (RNNX_KERNEL_AB_DEFINES_A/_B).
// Measured against the others in one process on a Zen 4 capped to AVX2, the step products
// of B 32-112 and H 256-1024: 6 x 16 (B's two vectors held) was 1-11% slower (median 4%),
// 5 x 16 4-8%, 3 x 32 with two of B's vectors held up to 4% (median 1%); holding all four in
// the 2-row sub-tiles (13 registers) read no different.
#ifndef RNNX_PACKED_AVX2_SUB_ROWS
#define RNNX_PACKED_AVX2_SUB_ROWS 3
#endif
#ifndef RNNX_PACKED_AVX2_MIN_SUB_ROWS
#define RNNX_PACKED_AVX2_MIN_SUB_ROWS 2
#endif
#ifndef RNNX_PACKED_AVX2_SUB_VECS
#define RNNX_PACKED_AVX2_SUB_VECS 4
#endif
#ifndef RNNX_PACKED_AVX2_WIDE_VECS
#define RNNX_PACKED_AVX2_WIDE_VECS 4
#endif
#ifndef RNNX_PACKED_AVX2_B_REGISTERS
#define RNNX_PACKED_AVX2_B_REGISTERS 3
#endif
constexpr int kSubRows = RNNX_PACKED_AVX2_SUB_ROWS;
constexpr int kMinSubRows = RNNX_PACKED_AVX2_MIN_SUB_ROWS;
constexpr int kSubVecs = RNNX_PACKED_AVX2_SUB_VECS;
constexpr int kWideVecs = RNNX_PACKED_AVX2_WIDE_VECS;
// 256 k of a panel (32 KB) stay in a 48 KB L1 beside A's rows and C's tile: on a Xeon with
// AVX-512 capped to this level, the step products (B 32 and 64, H 256 to 1024) ran 1.5-3.5%
// faster than with 128 k in one process, alternating (rnnx_packed_kernel_ab; fewer calls per
// product, C read and written half as often); 192 and 512 were slower than 256. On a Zen 3 (32 KB
// of L1) 256 measured no different from 128.
constexpr int64_t kDepthBlock = RNNX_PACKED_AVX2_DEPTH;
constexpr int kBRegisters = RNNX_PACKED_AVX2_B_REGISTERS;

// r[i] = row i of an 8 x 8 square in, column i out: pairs of rows interleaved, then pairs
// of pairs, then the 128-bit halves exchanged (24 shuffles for 64 values).
template <class V>
inline void transpose_lanes(V r[8]) {
  __m256 a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = r[i];
  for (int i = 0; i < 8; i += 2) {
    b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
    b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    a[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
    a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
    a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
    a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(a[i], a[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(a[i], a[i + 4], 0x31);
  }
}

#include "cpu/kernels/packed_gemm.inl"

}  // namespace

extern constinit const PackedKernels kPackedKernels{&pack_b_panels, &pack_a_blocks,
                                                    &multiply_panels, nullptr};

}  // namespace rnnx::cpu::RNNX_PACKED_AVX2_NAMESPACE
