// Entry points of the packed GEMM's AVX-512 translation unit (packed_gemm_avx512.cpp), used
// by packed_gemm.cpp only. Each works serially on the part it is given; packed_gemm.cpp
// does the threading. Layouts as in packed_gemm.hpp; a packed A of M rows and K columns is
// [blocks of kPackedTileRows rows][K / 16 (rounded up)][rows of the block][16].
#pragma once

#include <cstdint>

namespace rnnx::cpu::packed_avx512 {

// Panels [p0, p1) of B = op(W), [K, N]: trans when W is [N, K], else W is [K, N]; panel p at
// out + p * K * kPackedPanel, its columns past N zero. `row_map` (not trans; null = in order)
// says where W's rows are: row k at W + row_map[k] * ldw.
void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map);

// Row blocks [b0, b1) and columns [k0, k1) of op(A) [M, K] into the packed A at `out`:
// trans when A is [K, M] (row stride lda), else A is [M, K], its row i at A + row_map[i] * lda
// when `row_map` is given (not trans).
void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                   int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map);

// C[0:M, panels p0..p1) (=, or += when accumulate) packed A * packed B of N columns.
void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc);

}  // namespace rnnx::cpu::packed_avx512

// The same entry points for bf16 operands (packed_gemm_avx512_bf16.cpp): K, k0, k1 count
// float32 elements of A and B as above; the packed layouts hold pairs (packed_gemm.hpp).
namespace rnnx::cpu::packed_avx512_bf16 {

void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map);
void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1, const float* A,
                   int64_t lda, int64_t b0, int64_t b1, float* out, const int64_t* row_map);
void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc);

}  // namespace rnnx::cpu::packed_avx512_bf16

// The AMX multiply of the bf16 layouts (packed_gemm_amx.cpp); packing is the bf16 one's.
namespace rnnx::cpu::packed_amx {

// The machine has AMX-BF16, the OS saves its state, and the process may use it (asked
// for once, on the first call).
bool usable();
void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc);

}  // namespace rnnx::cpu::packed_amx
