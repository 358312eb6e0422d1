// The cpu backend's packed GEMM engine (src/cpu/packed_gemm.hpp) against a double-precision
// loop: awkward sizes around its panel width (32), tile height (14) and row chunk (224),
// K around the 16-wide transposes, both operand forms of the weights, row strides wider
// than the rows, overwrite and accumulate, one and two threads; for each float32 kernel
// family (AVX-512, AVX2 + FMA, baseline vectors), each skipped where the machine (or
// RNNX_CPU_ISA) rules it out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::cpu::Op;
using rnnx::cpu::PackedType;

// Whether the kernels of `type` run here, at the level a plan would be built with.
bool available(PackedType type) {
  return rnnx::cpu::packed_gemm_available(type, rnnx::cpu::isa_for_plan());
}

// The float32 kernel families, one test instance each.
class PackedGemm : public ::testing::TestWithParam<PackedType> {
 protected:
  void SetUp() override {
    if (!available(GetParam())) GTEST_SKIP() << "these kernels do not run here (or are capped)";
  }
};

struct Shape {
  int64_t M, N, K;
};

// C = A op(W) (+ C0) in double; W is [N, K] for Op::T and [K, N] for Op::N.
std::vector<double> expected(const Shape& s, Op op, const std::vector<float>& A, int64_t lda,
                             const std::vector<float>& W, int64_t ldw, const std::vector<float>& C0,
                             int64_t ldc, bool accumulate) {
  std::vector<double> C(s.M * s.N);
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < s.N; ++j) {
      double acc = accumulate ? C0[i * ldc + j] : 0.0;
      for (int64_t k = 0; k < s.K; ++k) {
        const float w = op == Op::T ? W[j * ldw + k] : W[k * ldw + j];
        acc += static_cast<double>(A[i * lda + k]) * w;
      }
      C[i * s.N + j] = acc;
    }
  }
  return C;
}

void check(const Shape& s, Op op, bool accumulate, int threads, PackedType type) {
  SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
               " K=" + std::to_string(s.K) + (op == Op::T ? " W^T" : " W") +
               (accumulate ? " accumulate" : "") + " threads=" + std::to_string(threads));
  Rng rng(s.M * 1000003 + s.N * 1009 + s.K);
  const int64_t lda = s.K + 3, ldc = s.N + 5;
  const int64_t ldw = (op == Op::T ? s.K : s.N) + 2;
  std::vector<float> A(s.M * lda), W((op == Op::T ? s.N : s.K) * ldw), C(s.M * ldc);
  for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : W) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : C) v = static_cast<float>(rng.uniform(-1, 1));
  const std::vector<float> C0 = C;
  // NaN everywhere the engine must not depend on: the pack buffers' initial contents.
  std::vector<float> b_pack(rnnx::cpu::packed_b_floats(s.K, s.N, 1, type), std::nanf(""));
  std::vector<float> a_pack(rnnx::cpu::packed_a_floats(s.M, s.K, type) + 1, std::nanf(""));

  const int saved = rnnx::max_threads();
  rnnx::set_num_threads(threads);
  const rnnx::cpu::PackedB B =
      rnnx::cpu::pack_b(op, s.K, s.N, W.data(), ldw, b_pack.data(), 1, type);
  rnnx::cpu::packed_gemm(s.M, A.data(), lda, B, accumulate, C.data(), ldc, a_pack.data());
  rnnx::set_num_threads(saved);

  const std::vector<double> want = expected(s, op, A, lda, W, ldw, C0, ldc, accumulate);
  // float32 products summed over K terms of magnitude <= 1: K * eps * (a few) bounds the
  // rounding of any summation order.
  const double tol = 4.0 * (s.K + 1) * 6e-8 + 1e-6;
  int64_t bad = 0;
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const double got = C[i * ldc + j];
      if (j >= s.N) {
        // Outside the N columns nothing is written.
        if (got != C0[i * ldc + j] && bad++ < 5)
          ADD_FAILURE() << "wrote C[" << i << "][" << j << "]";
        continue;
      }
      if (!(std::fabs(got - want[i * s.N + j]) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want[i * s.N + j];
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(PackedGemm, MatchesDoubleLoop) {
  const PackedType type = GetParam();
  const std::vector<Shape> shapes = {
      {1, 1, 1},    {1, 5, 7},     {2, 31, 16}, {3, 32, 17},   {4, 33, 15},  {13, 64, 33},
      {14, 65, 40}, {15, 100, 48}, {29, 96, 1}, {64, 200, 37}, {225, 40, 9}, {450, 70, 20},
  };
  for (const Shape& s : shapes) {
    for (Op op : {Op::T, Op::N}) {
      for (bool acc : {false, true}) {
        for (int threads : {1, 2}) check(s, op, acc, threads, type);
      }
    }
  }
}

// Weights packed in gate blocks (PackedB::blocks) and multiplied the way a team loop does:
// each of `parts` threads packs its columns of A and multiplies its panels of every block.
TEST_P(PackedGemm, BlocksAndPieces) {
  const PackedType type = GetParam();
  for (const Shape& s : std::vector<Shape>{{5, 3 * 40, 37}, {14, 4 * 64, 20}, {9, 2 * 7, 16}}) {
    for (int64_t blocks : {int64_t{1}, int64_t{2}}) {
      for (int parts : {1, 2, 3}) {
        SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                     " K=" + std::to_string(s.K) + " blocks=" + std::to_string(blocks) +
                     " parts=" + std::to_string(parts));
        Rng rng(s.M + 7 * s.N + 11 * s.K);
        const int64_t lda = s.K + 1, ldc = s.N + 3;
        std::vector<float> A(s.M * lda), W(s.N * s.K), C(s.M * ldc, 5.0f);
        for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
        for (float& v : W) v = static_cast<float>(rng.uniform(-1, 1));
        std::vector<float> b_pack(rnnx::cpu::packed_b_floats(s.K, s.N, blocks, type),
                                  std::nanf(""));
        std::vector<float> a_pack(rnnx::cpu::packed_a_floats(s.M, s.K, type), std::nanf(""));
        const rnnx::cpu::PackedB B =
            rnnx::cpu::pack_b(Op::T, s.K, s.N, W.data(), s.K, b_pack.data(), blocks, type);
        const int64_t q = B.panels_per_block();
        for (int t = 0; t < parts; ++t) {
          rnnx::cpu::pack_a_columns(s.M, s.K, A.data(), lda, s.K * t / parts, s.K * (t + 1) / parts,
                                    a_pack.data(), type);
        }
        for (int t = 0; t < parts; ++t) {
          rnnx::cpu::multiply_panel_range(s.M, a_pack.data(), B, q * t / parts, q * (t + 1) / parts,
                                          false, C.data(), ldc);
        }
        const std::vector<double> want =
            expected(s, Op::T, A, lda, W, s.K, C, ldc, /*accumulate=*/false);
        const double tol = 4.0 * (s.K + 1) * 6e-8 + 1e-6;
        int64_t bad = 0;
        for (int64_t i = 0; i < s.M; ++i) {
          for (int64_t j = 0; j < s.N; ++j) {
            const double got = C[i * ldc + j];
            if (!(std::fabs(got - want[i * s.N + j]) <= tol) && bad++ < 5) {
              ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want "
                            << want[i * s.N + j];
            }
          }
          for (int64_t j = s.N; j < ldc; ++j) EXPECT_EQ(C[i * ldc + j], 5.0f);
        }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

// The all-token products: both operands packed block by block of K (several blocks, a
// short last one), rows in several chunks, every operand form, one to three threads (the
// last shape has enough row tiles for the threads to split the rows rather than B's
// panels, packed_gemm.cpp).
TEST_P(PackedGemm, FullMatchesDoubleLoop) {
  const PackedType type = GetParam();
  using rnnx::cpu::kPackedFullDepth;
  using rnnx::cpu::kPackedFullRows;
  const std::vector<Shape> shapes = {
      {3, 5, 7},
      {kPackedFullRows + 3, 48, 2 * kPackedFullDepth + 17},
      {40, 100, kPackedFullDepth + 1},
      {2 * kPackedFullRows + 1, 33, 300},
      {24 * rnnx::cpu::kPackedTileRows + 5, 70, 2 * kPackedFullDepth + 9}};
  for (const Shape& s : shapes) {
    for (Op op_a : {Op::N, Op::T}) {
      for (Op op_b : {Op::N, Op::T}) {
        for (int threads : {1, 2, 3}) {
          for (bool acc : {false, true}) {
            SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                         " K=" + std::to_string(s.K) + (op_a == Op::T ? " A^T" : " A") +
                         (op_b == Op::T ? " B^T" : " B") + " threads=" + std::to_string(threads) +
                         (acc ? " accumulate" : ""));
            Rng rng(s.M * 31 + s.N * 17 + s.K);
            const int64_t lda = (op_a == Op::T ? s.M : s.K) + 1;
            const int64_t ldb = (op_b == Op::T ? s.K : s.N) + 2, ldc = s.N + 1;
            std::vector<float> A((op_a == Op::T ? s.K : s.M) * lda);
            std::vector<float> B((op_b == Op::T ? s.N : s.K) * ldb), C(s.M * ldc);
            for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
            for (float& v : B) v = static_cast<float>(rng.uniform(-1, 1));
            for (float& v : C) v = static_cast<float>(rng.uniform(-1, 1));
            const std::vector<float> C0 = C;
            std::vector<float> scratch(rnnx::cpu::packed_gemm_full_floats(s.M, s.N, s.K, type),
                                       std::nanf(""));
            const int saved = rnnx::max_threads();
            rnnx::set_num_threads(threads);
            rnnx::cpu::packed_gemm_full(op_a, op_b, s.M, s.N, s.K, A.data(), lda, B.data(), ldb,
                                        acc, C.data(), ldc, scratch.data(), type);
            rnnx::set_num_threads(saved);
            const double tol = 4.0 * (s.K + 1) * 6e-8 + 1e-6;
            int64_t bad = 0;
            for (int64_t i = 0; i < s.M; ++i) {
              for (int64_t j = 0; j < s.N; ++j) {
                double want = acc ? C0[i * ldc + j] : 0.0;
                for (int64_t k = 0; k < s.K; ++k) {
                  const double a = op_a == Op::T ? A[k * lda + i] : A[i * lda + k];
                  const double b = op_b == Op::T ? B[j * ldb + k] : B[k * ldb + j];
                  want += a * b;
                }
                if (!(std::fabs(C[i * ldc + j] - want) <= tol) && bad++ < 5) {
                  ADD_FAILURE() << "C[" << i << "][" << j << "] = " << C[i * ldc + j] << ", want "
                                << want;
                }
              }
              EXPECT_EQ(C[i * ldc + s.N], C0[i * ldc + s.N]) << "wrote past N in row " << i;
            }
            EXPECT_EQ(bad, 0);
          }
        }
      }
    }
  }
}

// The all-token product's rows do not depend on the thread count, whichever way the threads
// split the work (B's panels for few rows, the rows for many): bit for bit.
TEST_P(PackedGemm, FullIsTheSameOnAnyThreadCount) {
  const PackedType type = GetParam();
  const int64_t M = 40 * rnnx::cpu::kPackedTileRows + 3, N = 96,
                K = rnnx::cpu::kPackedFullDepth + 130;
  for (Op op_a : {Op::N, Op::T}) {
    Rng rng(77);
    std::vector<float> A(M * K), B(K * N);
    for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : B) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> scratch(rnnx::cpu::packed_gemm_full_floats(M, N, K, type));
    std::vector<std::vector<float>> results;
    const int saved = rnnx::max_threads();
    for (int threads : {1, 2, 3, 4}) {
      std::vector<float> C(M * N);
      rnnx::set_num_threads(threads);
      rnnx::cpu::packed_gemm_full(op_a, Op::N, M, N, K, A.data(), op_a == Op::T ? M : K, B.data(),
                                  N, false, C.data(), N, scratch.data(), type);
      results.push_back(std::move(C));
    }
    rnnx::set_num_threads(saved);
    for (size_t t = 1; t < results.size(); ++t) {
      EXPECT_TRUE(results[t] == results[0])
          << (t + 1) << " threads, op_a " << (op_a == Op::T ? "T" : "N");
    }
  }
}

// Row maps: the operands read through a map of scattered, permuted rows give exactly (bit for
// bit) what the same rows gathered into a contiguous copy give, in every product that takes
// one (packed_gemm, pack_a_columns, packed_gemm_full's A and B), float32 and bf16.
TEST_P(PackedGemm, RowMapsReadTheRowsWhereTheyAre) {
  for (PackedType type : {GetParam(), PackedType::bf16}) {
    if (!available(type)) continue;
    SCOPED_TRACE(type == PackedType::bf16 ? "bf16" : "f32");
    const int64_t M = 37, N = 70, K = 45, ld = K + 3, spread = 3 * M + 5;
    Rng rng(4242);
    // Rows scattered over a larger buffer in a permuted order, as a padded batch's tokens.
    std::vector<int64_t> map(M);
    for (int64_t i = 0; i < M; ++i) map[i] = (i * 7 + 3) % spread;
    std::vector<float> src(spread * ld), W(N * K);
    for (float& v : src) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : W) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> gathered(M * ld);
    for (int64_t i = 0; i < M; ++i) {
      std::copy_n(src.data() + map[i] * ld, ld, gathered.data() + i * ld);
    }
    std::vector<float> b_pack(rnnx::cpu::packed_b_floats(K, N, 1, type));
    const rnnx::cpu::PackedB B =
        rnnx::cpu::pack_b(Op::T, K, N, W.data(), K, b_pack.data(), 1, type);
    std::vector<float> a_pack(rnnx::cpu::packed_a_floats(M, K, type) + 1);
    std::vector<float> want(M * N), got(M * N);
    rnnx::cpu::packed_gemm(M, gathered.data(), ld, B, false, want.data(), N, a_pack.data());
    rnnx::cpu::packed_gemm(M, src.data(), ld, B, false, got.data(), N, a_pack.data(), map.data());
    EXPECT_EQ(got, want) << "packed_gemm";

    // pack_a_columns in two column ranges (as two threads would).
    std::vector<float> a_pack2(a_pack.size());
    rnnx::cpu::pack_a_columns(M, K, gathered.data(), ld, 0, K, a_pack.data(), type);
    rnnx::cpu::pack_a_columns(M, K, src.data(), ld, 0, 16, a_pack2.data(), type, map.data());
    rnnx::cpu::pack_a_columns(M, K, src.data(), ld, 16, K, a_pack2.data(), type, map.data());
    rnnx::cpu::multiply_panel_range(M, a_pack.data(), B, 0, B.panels_per_block(), false,
                                    want.data(), N);
    rnnx::cpu::multiply_panel_range(M, a_pack2.data(), B, 0, B.panels_per_block(), false,
                                    got.data(), N);
    EXPECT_EQ(got, want) << "pack_a_columns";

    // packed_gemm_full: the map on A ([M, K], Op::N), then on B ([K = M, N] rows, Op::N), with
    // K past one block so that the blocks' offsets into the map are used.
    const int64_t K2 = rnnx::cpu::kPackedFullDepth + 9, spread2 = 2 * K2 + 1;
    std::vector<int64_t> map2(K2);
    for (int64_t k = 0; k < K2; ++k) map2[k] = (k * 5 + 1) % spread2;
    std::vector<float> src2(spread2 * ld), gathered2(K2 * ld), A2(M * K2);
    for (float& v : src2) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : A2) v = static_cast<float>(rng.uniform(-1, 1));
    for (int64_t k = 0; k < K2; ++k) {
      std::copy_n(src2.data() + map2[k] * ld, ld, gathered2.data() + k * ld);
    }
    std::vector<float> scratch(rnnx::cpu::packed_gemm_full_floats(M, N, K2, type) +
                               rnnx::cpu::packed_gemm_full_floats(K2, N, M, type));
    // C[M, N'] = A2[M, K2] * B[K2, N'] with B's rows through map2 (N' = ld columns).
    std::vector<float> want2(M * ld), got2(M * ld);
    rnnx::cpu::packed_gemm_full(Op::N, Op::N, M, ld, K2, A2.data(), K2, gathered2.data(), ld, false,
                                want2.data(), ld, scratch.data(), type);
    rnnx::cpu::packed_gemm_full(Op::N, Op::N, M, ld, K2, A2.data(), K2, src2.data(), ld, false,
                                got2.data(), ld, scratch.data(), type, nullptr, map2.data());
    EXPECT_EQ(got2, want2) << "packed_gemm_full, B through a map";
    // C[K2, N] = op(A)[K2, K] (A's rows through map2) * W^T.
    std::vector<float> want3(K2 * N), got3(K2 * N);
    rnnx::cpu::packed_gemm_full(Op::N, Op::T, K2, N, K, gathered2.data(), ld, W.data(), K, false,
                                want3.data(), N, scratch.data(), type);
    rnnx::cpu::packed_gemm_full(Op::N, Op::T, K2, N, K, src2.data(), ld, W.data(), K, false,
                                got3.data(), N, scratch.data(), type, map2.data());
    EXPECT_EQ(got3, want3) << "packed_gemm_full, A through a map";
  }
}

// Below AVX-512 each element of C is one chain of multiply-adds in order of k
// (kernels/packed_gemm.inl): a row gives the same bits alone as in any block of rows,
// whatever sub-tile it falls in.
TEST_P(PackedGemm, RowsDoNotDependOnTheirTile) {
  const PackedType type = GetParam();
  if (type == PackedType::f32) GTEST_SKIP() << "the AVX-512 tiles of few rows split k";
  const int64_t M = 2 * rnnx::cpu::kPackedTileRows + 5, N = 70, K = 45;
  Rng rng(99);
  std::vector<float> A(M * K), W(N * K);
  for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : W) v = static_cast<float>(rng.uniform(-1, 1));
  std::vector<float> b_pack(rnnx::cpu::packed_b_floats(K, N, 1, type));
  const rnnx::cpu::PackedB B = rnnx::cpu::pack_b(Op::T, K, N, W.data(), K, b_pack.data(), 1, type);
  std::vector<float> a_pack(rnnx::cpu::packed_a_floats(M, K, type));
  std::vector<float> all(M * N), one(N);
  rnnx::cpu::packed_gemm(M, A.data(), K, B, false, all.data(), N, a_pack.data());
  for (int64_t i = 0; i < M; ++i) {
    rnnx::cpu::packed_gemm(1, A.data() + i * K, K, B, false, one.data(), N, a_pack.data());
    EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + i * N)) << "row " << i;
  }
}

// An operand given transposed (Op::T) is packed by a transposing packer (squares of the
// level's vector width transposed in registers, the edges by overlapping squares or a plain
// loop); the packed values, hence C, must be the very bits of the same operand given as
// it is. Sizes around the vector widths (4, 8, 16), the chunk of k (16), the tile height
// and the panel width, row strides wider than the rows.
TEST_P(PackedGemm, TransposedOperandsGiveTheSameBits) {
  const PackedType type = GetParam();
  const std::vector<Shape> shapes = {{1, 1, 1},    {3, 7, 5},    {8, 8, 8},    {9, 17, 15},
                                     {14, 32, 16}, {15, 33, 17}, {23, 40, 31}, {113, 70, 529}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                 " K=" + std::to_string(s.K));
    Rng rng(s.M * 5 + s.N * 3 + s.K);
    const int64_t lda = s.K + 3, ldb = s.N + 1, lda_t = s.M + 2, ldb_t = s.K + 5;
    std::vector<float> A(s.M * lda), B(s.K * ldb), At(s.K * lda_t), Bt(s.N * ldb_t);
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t k = 0; k < s.K; ++k) {
        A[i * lda + k] = At[k * lda_t + i] = static_cast<float>(rng.uniform(-1, 1));
      }
    }
    for (int64_t k = 0; k < s.K; ++k) {
      for (int64_t j = 0; j < s.N; ++j) {
        B[k * ldb + j] = Bt[j * ldb_t + k] = static_cast<float>(rng.uniform(-1, 1));
      }
    }
    std::vector<float> scratch(rnnx::cpu::packed_gemm_full_floats(s.M, s.N, s.K, type));
    const auto product = [&](Op op_a, Op op_b) {
      std::vector<float> C(s.M * s.N);
      rnnx::cpu::packed_gemm_full(op_a, op_b, s.M, s.N, s.K, op_a == Op::T ? At.data() : A.data(),
                                  op_a == Op::T ? lda_t : lda, op_b == Op::T ? Bt.data() : B.data(),
                                  op_b == Op::T ? ldb_t : ldb, false, C.data(), s.N, scratch.data(),
                                  type);
      return C;
    };
    const std::vector<float> plain = product(Op::N, Op::N);
    EXPECT_TRUE(product(Op::T, Op::N) == plain) << "A transposed";
    EXPECT_TRUE(product(Op::N, Op::T) == plain) << "B transposed";
    EXPECT_TRUE(product(Op::T, Op::T) == plain) << "both transposed";
    // The weights' packer (pack_b) of a step product, W given as [N, K] or [K, N].
    std::vector<float> b_pack(rnnx::cpu::packed_b_floats(s.K, s.N, 1, type)),
        bt_pack(b_pack.size());
    const rnnx::cpu::PackedB packed =
        rnnx::cpu::pack_b(Op::N, s.K, s.N, B.data(), ldb, b_pack.data(), 1, type);
    const rnnx::cpu::PackedB packed_t =
        rnnx::cpu::pack_b(Op::T, s.K, s.N, Bt.data(), ldb_t, bt_pack.data(), 1, type);
    EXPECT_TRUE(b_pack == bt_pack) << "pack_b of W^T";
    // The step product on either pack; the same bits as packed_gemm_full's C while K fits
    // one of its blocks (past kPackedFullDepth it sums block by block, rounding otherwise).
    std::vector<float> a_pack(rnnx::cpu::packed_a_floats(s.M, s.K, type)), C(s.M * s.N),
        Ct(s.M * s.N);
    rnnx::cpu::packed_gemm(s.M, A.data(), lda, packed, false, C.data(), s.N, a_pack.data());
    rnnx::cpu::packed_gemm(s.M, A.data(), lda, packed_t, false, Ct.data(), s.N, a_pack.data());
    EXPECT_TRUE(Ct == C) << "the step product on pack_b of W^T";
    if (s.K <= rnnx::cpu::kPackedFullDepth) {
      EXPECT_TRUE(C == plain) << "the step product";
    }
  }
}

// K = 0: overwrite gives zeros, accumulate leaves C alone; M = 0 or N = 0 touch nothing.
TEST_P(PackedGemm, EmptyProducts) {
  const PackedType type = GetParam();
  std::vector<float> C(6, 2.0f), scratch(8);
  rnnx::cpu::PackedB none{scratch.data(), 0, 3, 1, type};
  rnnx::cpu::packed_gemm(2, scratch.data(), 0, none, true, C.data(), 3, scratch.data());
  for (float v : C) EXPECT_EQ(v, 2.0f);
  rnnx::cpu::packed_gemm(2, scratch.data(), 0, none, false, C.data(), 3, scratch.data());
  for (float v : C) EXPECT_EQ(v, 0.0f);
  std::fill(C.begin(), C.end(), 2.0f);
  rnnx::cpu::PackedB empty_n{scratch.data(), 4, 0, 1, type};
  rnnx::cpu::packed_gemm(2, scratch.data(), 4, empty_n, false, C.data(), 3, scratch.data());
  rnnx::cpu::packed_gemm(0, scratch.data(), 4, none, false, C.data(), 3, scratch.data());
  for (float v : C) EXPECT_EQ(v, 2.0f);
  // The kernels themselves at K = 0 (a team loop's pieces call them directly).
  rnnx::cpu::multiply_panel_range(2, scratch.data(), none, 0, 1, true, C.data(), 3);
  for (float v : C) EXPECT_EQ(v, 2.0f);
  rnnx::cpu::multiply_panel_range(2, scratch.data(), none, 0, 1, false, C.data(), 3);
  for (float v : C) EXPECT_EQ(v, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(F32, PackedGemm,
                         ::testing::Values(PackedType::f32, PackedType::f32_avx2,
                                           PackedType::f32_scalar),
                         [](const ::testing::TestParamInfo<PackedType>& info) {
                           return info.param == PackedType::f32        ? "avx512"
                                  : info.param == PackedType::f32_avx2 ? "avx2"
                                                                       : "scalar";
                         });

}  // namespace
}  // namespace rnnx_test
