// The packed-weights float32 GEMM of the cpu backend: C[M, N] (= or +=) A[M, K] * B with B a
// weight matrix packed once per call into column panels and then reused for every time step
// (dnnl_sgemm repacks B on every call). Kernels for AVX-512 (kernels/packed_gemm_avx512.cpp),
// AVX2 + FMA and baseline vectors (kernels/packed_gemm.inl), one layout; the caller checks
// packed_gemm_available() for the type of its ISA level (packed_f32_type). PackedType::bf16
// (math mode allow_conversion, AVX512-BF16 kernels in packed_gemm_avx512_bf16.cpp) rounds both
// operands to bf16 as they are packed and accumulates in float32; its packs hold pairs of bf16 (two
// consecutive k) in 32-bit slots, so they take half the floats (K rounded up to even).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/gemm.hpp"
#include "cpu/isa.hpp"

namespace rnnx::cpu {

// Panel width of the packed layout and the rows of one micro-tile (constants of the kernels).
constexpr int64_t kPackedPanel = 32;
constexpr int64_t kPackedTileRows = 14;
// Packed A keeps each row's values in chunks of this many k ([K / 16][rows][16] per tile).
constexpr int64_t kPackedDepthChunk = 16;
// Rows of A packed and multiplied per pass; M above it is done in passes.
constexpr int64_t kPackedChunkRows = 16 * kPackedTileRows;
// packed_gemm_full's blocking: K of one pass (its packed block of B stays in the core's L2)
// and rows of A packed at a time.
constexpr int64_t kPackedFullDepth = 512;
constexpr int64_t kPackedFullRows = 8 * kPackedTileRows;

// Whether the kernels of `type` can run at ISA level `isa` (a plan's, fixed when it is
// built) on this machine: any level for f32_scalar, avx2 for f32_avx2, avx512 for f32,
// avx512-bf16 for bf16, and for bf16_amx also AMX that the OS grants.
bool packed_gemm_available(PackedType type, Isa isa);

// B = op(W) [K, N] packed as `blocks` blocks of N / blocks columns (the gates of a cell: a
// thread can then own the same cells of every gate), each block ceil(N / blocks /
// kPackedPanel) panels of [K][kPackedPanel], the columns past the block's end zero.
struct PackedB {
  const float* data = nullptr;
  int64_t K = 0, N = 0;
  int64_t blocks = 1;
  PackedType type = PackedType::f32;

  int64_t block_cols() const { return N / blocks; }
  int64_t panels_per_block() const { return (block_cols() + kPackedPanel - 1) / kPackedPanel; }
};

// Floats of the packed B and of the packed A of at most max_m rows.
int64_t packed_b_floats(int64_t K, int64_t N, int64_t blocks = 1,
                        PackedType type = PackedType::f32);
int64_t packed_a_floats(int64_t max_m, int64_t K, PackedType type = PackedType::f32);

// Packs B = op(W): Op::T when W is [N, K] (row stride ldw), Op::N when W is [K, N]. N is a
// multiple of blocks. Threads (outside a parallel region) split the panels as packed_gemm
// does, so each thread's panels are first touched by the thread that will read them.
PackedB pack_b(Op op_w, int64_t K, int64_t N, const float* W, int64_t ldw, float* out,
               int64_t blocks = 1, PackedType type = PackedType::f32);

// Row maps: wherever a row-major left operand A (or a B of Op::N) is read, `a_rows` (`b_rows`)
// may say where its rows are: row i at A + a_rows[i] * lda (null: in order). The packers
// then read the rows where the caller keeps them (the tokens of a padded batch in sorted
// order), instead of a gathered copy.

// C = A * B (accumulate: C += A * B), in B.type. a_scratch holds packed_a_floats(M, K,
// B.type). Threaded over the panels of B when called outside a parallel region and the
// product is large enough; inside one it runs on the calling thread. Rows of C do not depend
// on the thread count.
void packed_gemm(int64_t M, const float* A, int64_t lda, const PackedB& B, bool accumulate,
                 float* C, int64_t ldc, float* a_scratch, const int64_t* a_rows = nullptr);

// The pieces of packed_gemm for callers that run their own threads, each working on its
// share (M <= kPackedChunkRows): columns [k0, k1) of A's rows [0, M) into the packed A of an
// [M, K] operand; and C's columns of panels [q0, q1) of every block of B from a packed A
// (of B.type). bf16: ranges of k may split a pair (threads write disjoint halves of it).
void pack_a_columns(int64_t M, int64_t K, const float* A, int64_t lda, int64_t k0, int64_t k1,
                    float* a_packed, PackedType type = PackedType::f32,
                    const int64_t* a_rows = nullptr);
// int8 (whose rows are quantised whole): row blocks [b0, b1) of A's rows [0, M), all of K,
// into the packed A of an [M, K] operand (a team member's share of the rows).
void pack_a_rows(int64_t M, int64_t K, const float* A, int64_t lda, int64_t b0, int64_t b1,
                 float* a_packed, PackedType type, const int64_t* a_rows = nullptr);
void multiply_panel_range(int64_t M, const float* a_packed, const PackedB& B, int64_t q0,
                          int64_t q1, bool accumulate, float* C, int64_t ldc);

// C[M, N] (= or +=) op(A) op(B) for operands used once (the all-token products: weight
// gradients, input gradients): both packed here, block by block of K. op(A) is [M, K]
// (Op::T: A is [K, M]), op(B) is [K, N] (Op::T: B is [N, K]). scratch holds
// packed_gemm_full_floats(M, N, K, type). Threaded like packed_gemm. Row maps only for
// operands of Op::N.
int64_t packed_gemm_full_floats(int64_t M, int64_t N, int64_t K, PackedType type = PackedType::f32);
void packed_gemm_full(Op op_a, Op op_b, int64_t M, int64_t N, int64_t K, const float* A,
                      int64_t lda, const float* B, int64_t ldb, bool accumulate, float* C,
                      int64_t ldc, float* scratch, PackedType type = PackedType::f32,
                      const int64_t* a_rows = nullptr, const int64_t* b_rows = nullptr);

}  // namespace rnnx::cpu
