// The int8 packed GEMM (math mode int8, kernels/packed_gemm_s8.inl):
//  * the scalar definition against the arithmetic as docs/int8.md states it, recomputed here
//    from the float operands (per-column weight scales, per-row input scales, round half to
//    even, int32 sums, the three float roundings), bit for bit;
//  * the definition against the float product within the quantisation bound
//    sum_k (|a| sw / 2 + |w| sa / 2 + sa sw / 4) (the two roundings' worst case);
//  * the VNNI and AMX-INT8 kernels against the definition, bit for bit, over shapes that cross
//  every edge
//    (K not a multiple of 4 or of a chunk, N not of a panel, M across tiles and chunks of
//    rows), blocks, row maps, accumulation, and rows or columns with NaN, infinities or zeros.
// Their cases are skipped where the CPU (or RNNX_CPU_ISA) rules them out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::cpu::Op;
using rnnx::cpu::PackedType;

struct Shape {
  int64_t M, N, K;
};

struct Operands {
  std::vector<float> A, W, C0;  // A [M, lda], W [N, K] (Op::T) or [K, N] (Op::N), C0 [M, ldc]
  int64_t lda, ldw, ldc;
};

Operands make_operands(const Shape& s, Op op_w, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  Operands o;
  o.lda = s.K + 3;
  o.ldw = op_w == Op::T ? s.K + 1 : s.N + 2;
  o.ldc = s.N + 5;
  o.A.resize(static_cast<size_t>(s.M * o.lda));
  o.W.resize(static_cast<size_t>((op_w == Op::T ? s.N : s.K) * o.ldw));
  o.C0.resize(static_cast<size_t>(s.M * o.ldc));
  for (float& v : o.A) v = static_cast<float>(rng.uniform(-scale, scale));
  for (float& v : o.W) v = static_cast<float>(rng.uniform(-0.3, 0.3));
  for (float& v : o.C0) v = static_cast<float>(rng.uniform(-1, 1));
  return o;
}

float w_at(const Operands& o, Op op_w, int64_t k, int64_t n) {
  return op_w == Op::T ? o.W[n * o.ldw + k] : o.W[k * o.ldw + n];
}

// C = (accumulate ? C0 : 0) (+) the product on `type`'s kernels, through packed_gemm.
std::vector<float> run(PackedType type, const Shape& s, Op op_w, const Operands& o, bool accumulate,
                       int64_t blocks = 1, const int64_t* a_rows = nullptr) {
  std::vector<float> pack(rnnx::cpu::packed_b_floats(s.K, s.N, blocks, type) + 16);
  std::vector<float> a_scratch(rnnx::cpu::packed_a_floats(s.M, s.K, type) + 16);
  const rnnx::cpu::PackedB B =
      rnnx::cpu::pack_b(op_w, s.K, s.N, o.W.data(), o.ldw, pack.data(), blocks, type);
  std::vector<float> C = o.C0;
  rnnx::cpu::packed_gemm(s.M, o.A.data(), o.lda, B, accumulate, C.data(), o.ldc, a_scratch.data(),
                         a_rows);
  return C;
}

// The definition's scale and quantised values of n values (docs/int8.md), written apart
// from the kernels.
struct Quantized {
  float scale = 0;
  std::vector<int32_t> q;
};
Quantized quantize(const std::vector<float>& v) {
  Quantized r;
  r.q.assign(v.size(), 0);
  float amax = 0;
  bool finite = true;
  for (float x : v) {
    finite = finite && std::isfinite(x);
    amax = std::max(amax, std::fabs(x));
  }
  if (!finite) {
    r.scale = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  if (amax == 0) return r;
  r.scale = amax / 127.0f;
  const float inv = 127.0f / amax;
  for (size_t k = 0; k < v.size(); ++k) {
    const float t = v[k] * inv;
    float f = std::floor(t);
    const float frac = t - f;
    if (frac > 0.5f || (frac == 0.5f && std::fmod(f, 2.0f) != 0.0f)) f += 1.0f;  // half to even
    r.q[k] = static_cast<int32_t>(std::min(127.0f, std::max(-127.0f, f)));
  }
  return r;
}

std::vector<float> definition(const Shape& s, Op op_w, const Operands& o, bool accumulate,
                              const int64_t* a_rows = nullptr) {
  std::vector<Quantized> cols(static_cast<size_t>(s.N)), rows(static_cast<size_t>(s.M));
  for (int64_t n = 0; n < s.N; ++n) {
    std::vector<float> v(static_cast<size_t>(s.K));
    for (int64_t k = 0; k < s.K; ++k) v[k] = w_at(o, op_w, k, n);
    cols[n] = quantize(v);
  }
  for (int64_t i = 0; i < s.M; ++i) {
    const int64_t r = a_rows ? a_rows[i] : i;
    rows[i] = quantize(std::vector<float>(o.A.begin() + r * o.lda, o.A.begin() + r * o.lda + s.K));
  }
  std::vector<float> C = o.C0;
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t n = 0; n < s.N; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < s.K; ++k) sum += rows[i].q[k] * cols[n].q[k];
      const float v = static_cast<float>(sum) * (rows[i].scale * cols[n].scale);
      float& c = C[i * o.ldc + n];
      c = accumulate ? c + v : v;
    }
  }
  return C;
}

// Whether C equals want bit for bit on [M, N] (NaN as NaN) and nothing past N changed.
::testing::AssertionResult same_bits(const Shape& s, const Operands& o, const std::vector<float>& C,
                                     const std::vector<float>& want) {
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t n = 0; n < o.ldc; ++n) {
      const float a = C[i * o.ldc + n], b = n < s.N ? want[i * o.ldc + n] : o.C0[i * o.ldc + n];
      if (std::memcmp(&a, &b, sizeof a) != 0 && !(std::isnan(a) && std::isnan(b))) {
        return ::testing::AssertionFailure()
               << "C[" << i << "][" << n << "] = " << a << ", want " << b << " (M " << s.M << " N "
               << s.N << " K " << s.K << ")";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> v = {
      {1, 1, 1},    {1, 32, 4},   {3, 33, 5},   {13, 31, 63},  {14, 32, 64},   {15, 64, 65},
      {29, 100, 7}, {2, 96, 200}, {8, 64, 512}, {230, 40, 33}, {226, 17, 130}, {64, 256, 96},
  };
  return v;
}

TEST(PackedGemmInt8, DefinitionIsTheStatedArithmetic) {
  uint64_t seed = 1;
  for (const Shape& s : shapes()) {
    for (Op op : {Op::T, Op::N}) {
      for (bool acc : {false, true}) {
        const Operands o = make_operands(s, op, seed++);
        EXPECT_TRUE(
            same_bits(s, o, run(PackedType::s8_scalar, s, op, o, acc), definition(s, op, o, acc)))
            << (op == Op::T ? "W^T" : "W") << (acc ? " accumulate" : "");
      }
    }
  }
}

TEST(PackedGemmInt8, DefinitionWithinTheQuantisationBound) {
  uint64_t seed = 100;
  for (const Shape& s : shapes()) {
    const Operands o = make_operands(s, Op::T, seed++, 2.5);
    const std::vector<float> C = run(PackedType::s8_scalar, s, Op::T, o, false);
    int64_t checked = 0;
    for (int64_t i = 0; i < s.M; ++i) {
      float amax_a = 0;
      for (int64_t k = 0; k < s.K; ++k) amax_a = std::max(amax_a, std::fabs(o.A[i * o.lda + k]));
      for (int64_t n = 0; n < s.N; ++n) {
        float amax_w = 0;
        for (int64_t k = 0; k < s.K; ++k)
          amax_w = std::max(amax_w, std::fabs(w_at(o, Op::T, k, n)));
        const double sa = amax_a / 127.0, sw = amax_w / 127.0;
        double exact = 0, bound = 0;
        for (int64_t k = 0; k < s.K; ++k) {
          const double a = o.A[i * o.lda + k], w = w_at(o, Op::T, k, n);
          exact += a * w;
          bound += std::fabs(a) * sw / 2 + std::fabs(w) * sa / 2 + sa * sw / 4;
        }
        bound = bound * (1 + 1e-5) + 4e-7 * std::fabs(exact) + 1e-30;  // the float roundings
        EXPECT_LE(std::fabs(C[i * o.ldc + n] - exact), bound)
            << "[" << i << "][" << n << "] M " << s.M << " N " << s.N << " K " << s.K;
        ++checked;
      }
    }
    EXPECT_EQ(checked, s.M * s.N);
  }
}

// A perturbed definition must fail the bit-for-bit check: round half away from zero in
// place of half to even shows in a case built to hit a tie.
TEST(PackedGemmInt8, TheBitCheckSeesARoundingChange) {
  const Shape s{1, 1, 2};
  Operands o = make_operands(s, Op::T, 7);
  // Row maximum 127 and column maximum 127: scales 1, so 0.5 is an exact tie.
  o.A[0] = 127.0f;
  o.A[1] = 0.5f;  // half to even: 0; half away from zero: 1
  o.W[0] = 127.0f;
  o.W[1] = 127.0f;
  const std::vector<float> C = run(PackedType::s8_scalar, s, Op::T, o, false);
  std::vector<float> want = definition(s, Op::T, o, false);
  EXPECT_TRUE(same_bits(s, o, C, want));
  EXPECT_EQ(C[0], 127.0f * 127.0f);
  want[0] = 127.0f * 127.0f + 127.0f;
  EXPECT_FALSE(same_bits(s, o, C, want));
}

// vpdpbusd (zmm and ymm) and AMX-INT8 tiles (tdpbusd).
class PackedGemmVnni : public ::testing::TestWithParam<PackedType> {
 protected:
  void SetUp() override {
    if (!rnnx::cpu::packed_gemm_available(GetParam(), rnnx::cpu::isa_for_plan())) {
      GTEST_SKIP() << (GetParam() == PackedType::s8_amx        ? "no AMX-INT8"
                       : GetParam() == PackedType::s8_avx_vnni ? "no AVX-VNNI"
                                                               : "no AVX512-VNNI")
                   << " (or capped below its level)";
    }
  }
};

TEST_P(PackedGemmVnni, EqualsTheDefinitionBitForBit) {
  uint64_t seed = 200;
  int64_t cases = 0;
  for (const Shape& s : shapes()) {
    for (Op op : {Op::T, Op::N}) {
      for (bool acc : {false, true}) {
        for (int64_t blocks : {int64_t{1}, int64_t{4}}) {
          if (s.N % blocks != 0) continue;
          const Operands o = make_operands(s, op, seed++, 3.0);
          EXPECT_TRUE(same_bits(s, o, run(GetParam(), s, op, o, acc, blocks),
                                run(PackedType::s8_scalar, s, op, o, acc, blocks)))
              << (op == Op::T ? "W^T" : "W") << (acc ? " accumulate" : "") << " blocks " << blocks;
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 40);
}

TEST_P(PackedGemmVnni, RowMapsAndSpecialValues) {
  const Shape s{40, 70, 77};
  Operands o = make_operands(s, Op::T, 300);
  // Row 3: a NaN; row 5: an infinity; row 7: all zeros; weight column 9: an infinity;
  // column 11: all zeros.
  o.A[3 * o.lda + 10] = std::numeric_limits<float>::quiet_NaN();
  o.A[5 * o.lda + 76] = std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < s.K; ++k) o.A[7 * o.lda + k] = 0.0f;
  o.W[9 * o.ldw + 4] = -std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < s.K; ++k) o.W[11 * o.ldw + k] = 0.0f;
  std::vector<int64_t> map(static_cast<size_t>(s.M));
  for (int64_t i = 0; i < s.M; ++i) map[i] = (i * 7) % s.M;  // 7 and 40 are coprime
  const std::vector<float> want = run(PackedType::s8_scalar, s, Op::T, o, false, 1, map.data());
  EXPECT_TRUE(same_bits(s, o, want, definition(s, Op::T, o, false, map.data())));
  EXPECT_TRUE(same_bits(s, o, run(GetParam(), s, Op::T, o, false, 1, map.data()), want));
  // What the definition says those rows and columns give.
  for (int64_t i = 0; i < s.M; ++i) {
    const int64_t r = map[i];
    for (int64_t n = 0; n < s.N; ++n) {
      const float c = want[i * o.ldc + n];
      if (r == 3 || r == 5 || n == 9) {
        EXPECT_TRUE(std::isnan(c)) << i << "," << n;
      } else if (r == 7 || n == 11) {
        EXPECT_EQ(c, 0.0f) << i << "," << n;
      } else {
        EXPECT_TRUE(std::isfinite(c)) << i << "," << n;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PackedGemmVnni,
                         ::testing::Values(PackedType::s8_vnni, PackedType::s8_amx,
                                           PackedType::s8_avx_vnni),
                         [](const ::testing::TestParamInfo<PackedType>& info) {
                           return info.param == PackedType::s8_amx        ? "amx"
                                  : info.param == PackedType::s8_avx_vnni ? "avx_vnni"
                                                                          : "vpdpbusd";
                         });

TEST(PackedGemmInt8, NoAllTokenProducts) {
  std::vector<float> a(64, 1.0f), c(64), scratch(4096);
  EXPECT_THROW(rnnx::cpu::packed_gemm_full(Op::N, Op::T, 4, 4, 4, a.data(), 4, a.data(), 4, false,
                                           c.data(), 4, scratch.data(), PackedType::s8_scalar),
               std::logic_error);
}

}  // namespace
}  // namespace rnnx_test
