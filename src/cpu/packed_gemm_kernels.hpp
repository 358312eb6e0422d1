// The packed GEMM's per-ISA kernels as one table per translation unit
// (src/cpu/kernels/packed_gemm_{scalar,avx2,avx512,avx512_bf16,amx,s8_scalar,avx512_vnni,amx_int8,avx_vnni}.cpp,
// each built with its ISA's flags by CMake like the step kernels, each exporting only its table),
// used by packed_gemm.cpp only. Each entry works serially on the part it is given; packed_gemm.cpp
// does the threading. Layouts as in packed_gemm.hpp; a packed A of M rows and K columns is [blocks
// of kPackedTileRows rows][K / 16 (rounded up)][rows of the block][16].
#pragma once

#include <cstdint>

namespace rnnx::cpu {

struct PackedKernels {
  // Panels [p0, p1) of B = op(W), [K, N]: trans when W is [N, K], else W is [K, N]; panel p
  // at out + p * K * kPackedPanel, its columns past N zero. `row_map` (not trans; null = in
  // order) says where W's rows are: row k at W + row_map[k] * ldw.
  void (*pack_b_panels)(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                        int64_t p1, float* out, const int64_t* row_map);
  // Row blocks [b0, b1) and columns [k0, k1) of op(A) [M, K] into the packed A at `out`:
  // trans when A is [K, M] (row stride lda), else A is [M, K], its row i at
  // A + row_map[i] * lda when `row_map` is given (not trans).
  void (*pack_a_blocks)(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                        int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map);
  // C[0:M, panels p0..p1) (=, or += when accumulate) packed A * packed B of N columns.
  void (*multiply_panels)(int64_t M, int64_t K, const float* a_packed, const float* b_packed,
                          int64_t N, int64_t p0, int64_t p1, bool accumulate, float* C,
                          int64_t ldc);
  // Whether the machine lets this table run beyond what its ISA level says (AMX: the OS
  // hands out the tile state only on request); null: the ISA level decides alone.
  bool (*usable)();
};

// float32 on baseline vectors (every build; kernels/packed_gemm.inl).
namespace packed_scalar {
extern const PackedKernels kPackedKernels;
}
// float32 (ISA level avx2; kernels/packed_gemm.inl).
namespace packed_avx2 {
extern const PackedKernels kPackedKernels;
}
// float32 (ISA level avx512).
namespace packed_avx512 {
extern const PackedKernels kPackedKernels;
}
// bf16 operands (level avx512-bf16): K, k0, k1 count float32 elements of A and B as above;
// the packed layouts hold pairs (packed_gemm.hpp).
namespace packed_avx512_bf16 {
extern const PackedKernels kPackedKernels;
}
// The AMX multiply of the bf16 layouts (level avx512-bf16 and usable()); it has no packers
// of its own: the bf16 table's pack for it.
namespace packed_amx {
extern const PackedKernels kPackedKernels;
}

// int8 (math mode int8; kernels/packed_gemm_s8.inl): K, k0, k1 count float32 elements of A
// and B, the packed layouts hold quads of int8 and the scales. The scalar definition (every
// build, every level) and vpdpbusd (level avx512 with AVX512-VNNI).
namespace packed_s8_scalar {
extern const PackedKernels kPackedKernels;
}
namespace packed_avx512_vnni {
extern const PackedKernels kPackedKernels;
}
// vpdpbusd on ymm (level avx2 with AVX-VNNI), with the definition's packers.
namespace packed_avx_vnni {
extern const PackedKernels kPackedKernels;
}
// The AMX-INT8 multiply of the int8 layouts (level avx512 and usable()); the VNNI table packs.
namespace packed_amx_int8 {
extern const PackedKernels kPackedKernels;
}

}  // namespace rnnx::cpu
