// The packed GEMM's bf16 kernels (PackedType::bf16, math mode allow_conversion) against a
// double loop on bf16-rounded operands: a product of two bf16 values (8-bit significands)
// is exact in float32, so only the float32 accumulation rounds and the float32 tolerance
// applies. Odd K (the last pair half outside the operand), N not a multiple of the panel,
// M from 1 to 300, both operand forms, pieces split at odd k, several blocks of K. Skipped
// where the machine (or RNNX_CPU_ISA) rules out AVX512-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::cpu::Op;
using rnnx::cpu::PackedType;
constexpr PackedType kBf16 = PackedType::bf16;

// The two bf16 kernels (vdpbf16ps and AMX tiles) share the packed layouts.
class PackedGemmBf16 : public ::testing::TestWithParam<PackedType> {
 protected:
  void SetUp() override {
    if (!rnnx::cpu::packed_gemm_available(GetParam(), rnnx::cpu::isa_for_plan())) {
      GTEST_SKIP() << (GetParam() == PackedType::bf16_amx ? "no AMX-BF16" : "no AVX512-BF16")
                   << " (or capped below avx512-bf16)";
    }
  }
};

// x rounded to bf16, round to nearest even (what vcvtne2ps2bf16 does; no NaN here).
double bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// float32 accumulation of K exact products of magnitude <= 1 (as test_packed_gemm.cpp).
double accumulation_tolerance(int64_t K) {
  return 4.0 * (static_cast<double>(K) + 1) * 6e-8 + 1e-6;
}

struct Shape {
  int64_t M, N, K;
};

// C = A op(W) (+ C0), operands rounded to bf16, in double.
std::vector<double> expected(const Shape& s, Op op_a, Op op_b, const std::vector<float>& A,
                             int64_t lda, const std::vector<float>& B, int64_t ldb,
                             const std::vector<float>& C0, int64_t ldc, bool accumulate,
                             bool round = true) {
  std::vector<double> C(s.M * s.N);
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < s.N; ++j) {
      double acc = accumulate ? C0[i * ldc + j] : 0.0;
      for (int64_t k = 0; k < s.K; ++k) {
        const float a = op_a == Op::T ? A[k * lda + i] : A[i * lda + k];
        const float b = op_b == Op::T ? B[j * ldb + k] : B[k * ldb + j];
        acc += round ? bf16(a) * bf16(b) : static_cast<double>(a) * b;
      }
      C[i * s.N + j] = acc;
    }
  }
  return C;
}

// Compares C's [M, N] with want and checks that nothing past N was written. Returns the
// largest difference.
double compare(const Shape& s, const std::vector<float>& C, const std::vector<float>& C0,
               int64_t ldc, const std::vector<double>& want, double tol) {
  int64_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const double got = C[i * ldc + j];
      if (j >= s.N) {
        if (got != C0[i * ldc + j] && bad++ < 5) {
          ADD_FAILURE() << "wrote C[" << i << "][" << j << "]";
        }
        continue;
      }
      const double diff = std::fabs(got - want[i * s.N + j]);
      worst = std::max(worst, diff);
      if (!(diff <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want[i * s.N + j];
      }
    }
  }
  EXPECT_EQ(bad, 0);
  return worst;
}

std::vector<float> random_floats(Rng& rng, int64_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return v;
}

TEST(PackedGemmBf16Layout, SizesAreHalfOfFloat32) {
  using rnnx::cpu::packed_a_floats;
  using rnnx::cpu::packed_b_floats;
  EXPECT_EQ(packed_b_floats(64, 96, 1, kBf16) * 2, packed_b_floats(64, 96));
  // ceil(K / 2) pairs rounded up to whole chunks of 16 (zero padding).
  EXPECT_EQ(packed_b_floats(17, 40, 1, kBf16), packed_b_floats(16, 40));
  EXPECT_EQ(packed_b_floats(33, 40, 1, kBf16), packed_b_floats(32, 40));
  EXPECT_EQ(packed_a_floats(20, 64, kBf16) * 2, packed_a_floats(20, 64));
  EXPECT_EQ(packed_a_floats(3, 33, kBf16), packed_a_floats(3, 17));
}

TEST_P(PackedGemmBf16, MatchesDoubleLoopOnRoundedOperands) {
  const PackedType type = GetParam();
  std::vector<Shape> shapes = {{1, 1, 1},   {1, 5, 7},     {2, 31, 16},  {3, 32, 17},
                               {4, 33, 15}, {13, 64, 33},  {14, 65, 40}, {15, 100, 31},
                               {29, 96, 1}, {64, 200, 37}, {225, 40, 9}, {300, 70, 65}};
  for (int64_t m = 1; m <= 300; m += 23) shapes.push_back({m, 47, 19});
  bool rounded = false;  // some result must show that the operands were rounded
  for (const Shape& s : shapes) {
    for (Op op : {Op::T, Op::N}) {
      for (bool acc : {false, true}) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                       " K=" + std::to_string(s.K) + (op == Op::T ? " W^T" : " W") +
                       (acc ? " accumulate" : "") + " threads=" + std::to_string(threads));
          Rng rng(s.M * 1000003 + s.N * 1009 + s.K);
          const int64_t lda = s.K + 3, ldc = s.N + 5;
          const int64_t ldw = (op == Op::T ? s.K : s.N) + 2;
          const std::vector<float> A = random_floats(rng, s.M * lda);
          const std::vector<float> W = random_floats(rng, (op == Op::T ? s.N : s.K) * ldw);
          std::vector<float> C = random_floats(rng, s.M * ldc);
          const std::vector<float> C0 = C;
          // NaN in the packs' initial contents: nothing may depend on them (odd K's padding).
          std::vector<float> b_pack(rnnx::cpu::packed_b_floats(s.K, s.N, 1, type), std::nanf(""));
          std::vector<float> a_pack(rnnx::cpu::packed_a_floats(s.M, s.K, type) + 1, std::nanf(""));
          const int saved = rnnx::max_threads();
          rnnx::set_num_threads(threads);
          const rnnx::cpu::PackedB B =
              rnnx::cpu::pack_b(op, s.K, s.N, W.data(), ldw, b_pack.data(), 1, type);
          rnnx::cpu::packed_gemm(s.M, A.data(), lda, B, acc, C.data(), ldc, a_pack.data());
          rnnx::set_num_threads(saved);
          compare(s, C, C0, ldc, expected(s, Op::N, op, A, lda, W, ldw, C0, ldc, acc),
                  accumulation_tolerance(s.K));
          const std::vector<double> exact =
              expected(s, Op::N, op, A, lda, W, ldw, C0, ldc, acc, /*round=*/false);
          for (int64_t i = 0; i < s.M && !rounded; ++i) {
            for (int64_t j = 0; j < s.N; ++j) {
              if (std::fabs(C[i * ldc + j] - exact[i * s.N + j]) >
                  10 * accumulation_tolerance(s.K)) {
                rounded = true;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_TRUE(rounded) << "the results equal float32 products: the operands were not rounded";
}

// Gate blocks and the pieces of a team loop, the pieces split at odd k (two threads then
// write the two halves of one pair).
TEST_P(PackedGemmBf16, BlocksAndPiecesSplitAtOddK) {
  const PackedType type = GetParam();
  for (const Shape& s : std::vector<Shape>{{5, 3 * 40, 37}, {14, 4 * 64, 21}, {9, 2 * 7, 16}}) {
    for (int64_t blocks : {int64_t{1}, int64_t{2}}) {
      for (int parts : {1, 2, 3}) {
        SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                     " K=" + std::to_string(s.K) + " blocks=" + std::to_string(blocks) +
                     " parts=" + std::to_string(parts));
        Rng rng(s.M + 7 * s.N + 11 * s.K);
        const int64_t lda = s.K + 1, ldc = s.N + 3;
        const std::vector<float> A = random_floats(rng, s.M * lda);
        const std::vector<float> W = random_floats(rng, s.N * s.K);
        std::vector<float> C(s.M * ldc, 5.0f);
        const std::vector<float> C0 = C;
        std::vector<float> b_pack(rnnx::cpu::packed_b_floats(s.K, s.N, blocks, type),
                                  std::nanf(""));
        std::vector<float> a_pack(rnnx::cpu::packed_a_floats(s.M, s.K, type), std::nanf(""));
        const rnnx::cpu::PackedB B =
            rnnx::cpu::pack_b(Op::T, s.K, s.N, W.data(), s.K, b_pack.data(), blocks, type);
        const int64_t q = B.panels_per_block();
        for (int t = 0; t < parts; ++t) {
          // Odd boundaries: K * t / parts is odd for K = 37, 21 and parts = 2, 3.
          rnnx::cpu::pack_a_columns(s.M, s.K, A.data(), lda, s.K * t / parts, s.K * (t + 1) / parts,
                                    a_pack.data(), type);
        }
        for (int t = 0; t < parts; ++t) {
          rnnx::cpu::multiply_panel_range(s.M, a_pack.data(), B, q * t / parts, q * (t + 1) / parts,
                                          false, C.data(), ldc);
        }
        compare(s, C, C0, ldc, expected(s, Op::N, Op::T, A, lda, W, s.K, C0, ldc, false),
                accumulation_tolerance(s.K));
      }
    }
  }
}

// The all-token products in bf16: several blocks of K (a short, odd last one), every
// operand form, one to three threads.
TEST_P(PackedGemmBf16, FullMatchesDoubleLoopOnRoundedOperands) {
  const PackedType type = GetParam();
  using rnnx::cpu::kPackedFullDepth;
  using rnnx::cpu::kPackedFullRows;
  const std::vector<Shape> shapes = {{3, 5, 7},
                                     {kPackedFullRows + 3, 48, 4 * kPackedFullDepth + 17},
                                     {40, 100, 2 * kPackedFullDepth + 1},
                                     {2 * kPackedFullRows + 1, 33, 301}};
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
            const std::vector<float> A = random_floats(rng, (op_a == Op::T ? s.K : s.M) * lda);
            const std::vector<float> B = random_floats(rng, (op_b == Op::T ? s.N : s.K) * ldb);
            std::vector<float> C = random_floats(rng, s.M * ldc);
            const std::vector<float> C0 = C;
            std::vector<float> scratch(rnnx::cpu::packed_gemm_full_floats(s.M, s.N, s.K, type),
                                       std::nanf(""));
            const int saved = rnnx::max_threads();
            rnnx::set_num_threads(threads);
            rnnx::cpu::packed_gemm_full(op_a, op_b, s.M, s.N, s.K, A.data(), lda, B.data(), ldb,
                                        acc, C.data(), ldc, scratch.data(), type);
            rnnx::set_num_threads(saved);
            compare(s, C, C0, ldc, expected(s, op_a, op_b, A, lda, B, ldb, C0, ldc, acc),
                    accumulation_tolerance(s.K));
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PackedGemmBf16,
                         ::testing::Values(PackedType::bf16, PackedType::bf16_amx),
                         [](const ::testing::TestParamInfo<PackedType>& info) {
                           return info.param == PackedType::bf16_amx ? "amx" : "vdpbf16ps";
                         });

}  // namespace
}  // namespace rnnx_test
