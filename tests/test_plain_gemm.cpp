// The cpu backend's plain GEMM (src/cpu/plain_gemm.hpp), the engine of builds without oneDNN
// or BLAS, against a double-precision loop: float32 and float64, every ISA level's kernels
// the machine runs, all four operand forms, sizes around its micro-tiles (up to 12 x 32),
// tiles (64 x 64) and depth blocks (128), row strides wider than the rows, alpha and beta
// (beta = 0 over NaN), one to three threads; the same bits on any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/plain_gemm.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::cpu::Isa;
using rnnx::cpu::Op;

struct Shape {
  int64_t M, N, K;
};

// The levels whose kernels this machine runs (each once: a level above the machine's runs
// the machine's kernels).
std::vector<Isa> levels() {
  std::vector<Isa> out = {Isa::scalar};
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    if (isa <= rnnx::cpu::isa_detected()) out.push_back(isa);
  }
  return out;
}

// Operands of one product, with row strides wider than the rows; C beyond N holds values
// that must survive.
template <typename T>
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<T> A, B, C;
};

template <typename T>
Operands<T> make_operands(const Shape& s, Op ta, Op tb, uint64_t seed) {
  Rng rng(seed);
  Operands<T> o;
  o.lda = (ta == Op::N ? s.K : s.M) + 3;
  o.ldb = (tb == Op::N ? s.N : s.K) + 2;
  o.ldc = s.N + 5;
  o.A.resize((ta == Op::N ? s.M : s.K) * o.lda);
  o.B.resize((tb == Op::N ? s.K : s.N) * o.ldb);
  o.C.resize(s.M * o.ldc);
  for (T& v : o.A) v = static_cast<T>(rng.uniform(-1, 1));
  for (T& v : o.B) v = static_cast<T>(rng.uniform(-1, 1));
  for (T& v : o.C) v = static_cast<T>(rng.uniform(-1, 1));
  return o;
}

template <typename T>
void run_plain(Isa isa, const Shape& s, Op ta, Op tb, T alpha, T beta, Operands<T>& o,
               int threads) {
  const int saved = rnnx::max_threads();
  rnnx::set_num_threads(threads);
  rnnx::cpu::plain_gemm<T>(isa, ta, tb, s.M, s.N, s.K, alpha, o.A.data(), o.lda, o.B.data(), o.ldb,
                           beta, o.C.data(), o.ldc);
  rnnx::set_num_threads(saved);
}

template <typename T>
void check(Isa isa, const Shape& s, Op ta, Op tb, double alpha, double beta, int threads) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "float32" : "float64") + " " +
               rnnx::cpu::isa_name(isa) + " M=" + std::to_string(s.M) + " N=" +
               std::to_string(s.N) + " K=" + std::to_string(s.K) + (ta == Op::T ? " A^T" : " A") +
               (tb == Op::T ? " B^T" : " B") + " alpha=" + std::to_string(alpha) +
               " beta=" + std::to_string(beta) + " threads=" + std::to_string(threads));
  Operands<T> o = make_operands<T>(s, ta, tb, s.M * 1000003 + s.N * 1009 + s.K);
  // beta = 0 overwrites: NaN there must not survive.
  if (beta == 0.0) {
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t j = 0; j < s.N; ++j) o.C[i * o.ldc + j] = std::numeric_limits<T>::quiet_NaN();
    }
  }
  const std::vector<T> C0 = o.C;
  run_plain<T>(isa, s, ta, tb, static_cast<T>(alpha), static_cast<T>(beta), o, threads);

  // Any order of summing K + 1 terms, each product rounded once and alpha * a once, errs
  // by at most (K + 3) u (sum of the terms' magnitudes) to first order, u = eps / 2 of T;
  // eps for the bound leaves the second order room.
  const double eps = std::numeric_limits<T>::epsilon();
  int64_t bad = 0;
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < o.ldc; ++j) {
      const double got = o.C[i * o.ldc + j];
      if (j >= s.N) {
        if (got != C0[i * o.ldc + j] && bad++ < 5) {
          ADD_FAILURE() << "wrote C[" << i << "][" << j << "]";
        }
        continue;
      }
      double want = beta == 0.0 ? 0.0 : beta * C0[i * o.ldc + j];
      double magnitude = std::fabs(want);
      for (int64_t k = 0; k < s.K; ++k) {
        const double a = ta == Op::N ? o.A[i * o.lda + k] : o.A[k * o.lda + i];
        const double b = tb == Op::N ? o.B[k * o.ldb + j] : o.B[j * o.ldb + k];
        want += alpha * a * b;
        magnitude += std::fabs(alpha * a * b);
      }
      const double tol = (s.K + 3) * eps * magnitude;
      if (!(std::fabs(got - want) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

template <typename T>
void check_all() {
  const std::vector<Shape> shapes = {
      {1, 1, 1},   {1, 5, 7},    {3, 17, 1},    {5, 33, 129},  {12, 32, 128},
      {13, 65, 2}, {37, 64, 20}, {65, 70, 130}, {130, 129, 9}, {7, 300, 40},
  };
  const double scales[][2] = {{1.0, 0.0}, {1.0, 1.0}, {-0.5, 0.5}};
  for (Isa isa : levels()) {
    for (const Shape& s : shapes) {
      for (Op ta : {Op::N, Op::T}) {
        for (Op tb : {Op::N, Op::T}) {
          for (const auto& ab : scales) {
            for (int threads : {1, 2}) check<T>(isa, s, ta, tb, ab[0], ab[1], threads);
          }
        }
      }
    }
  }
}

TEST(PlainGemm, Float32MatchesDoubleLoop) {
  check_all<float>();
}

TEST(PlainGemm, Float64MatchesDoubleLoop) {
  check_all<double>();
}

// Threads take whole tiles and every element sums in one order: 1, 2 or 3 threads give the
// same bits (as the cpu backend promises for rnnx's own sums, tests/test_determinism.cpp).
template <typename T>
void check_thread_counts() {
  const Shape s{150, 200, 300};
  for (Isa isa : levels()) {
    for (Op ta : {Op::N, Op::T}) {
      for (Op tb : {Op::N, Op::T}) {
        SCOPED_TRACE(std::string(rnnx::cpu::isa_name(isa)) + (ta == Op::T ? " A^T" : " A") +
                     (tb == Op::T ? " B^T" : " B"));
        const Operands<T> in = make_operands<T>(s, ta, tb, 17);
        Operands<T> one = in;
        run_plain<T>(isa, s, ta, tb, T(1), T(1), one, 1);
        for (int threads : {2, 3}) {
          Operands<T> many = in;
          run_plain<T>(isa, s, ta, tb, T(1), T(1), many, threads);
          EXPECT_TRUE(many.C == one.C) << threads << " threads";
        }
      }
    }
  }
}

TEST(PlainGemm, SameBitsOnAnyThreadCount) {
  check_thread_counts<float>();
  check_thread_counts<double>();
}

// M or N = 0 writes nothing; K = 0 leaves beta C (beta = 0: zeros, over NaN).
TEST(PlainGemm, EmptyProducts) {
  for (Isa isa : levels()) {
    std::vector<float> C(12, std::nanf(""));
    rnnx::cpu::plain_gemm<float>(isa, Op::N, Op::N, 0, 3, 4, 1.0f, nullptr, 4, nullptr, 3, 0.0f,
                                 C.data(), 3);
    rnnx::cpu::plain_gemm<float>(isa, Op::N, Op::N, 4, 0, 4, 1.0f, nullptr, 4, nullptr, 3, 0.0f,
                                 C.data(), 3);
    for (float v : C) EXPECT_TRUE(std::isnan(v));
    rnnx::cpu::plain_gemm<float>(isa, Op::N, Op::N, 4, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 0.0f,
                                 C.data(), 3);
    for (float v : C) EXPECT_EQ(v, 0.0f);
    std::vector<double> D(6, 1.5);
    rnnx::cpu::plain_gemm<double>(isa, Op::T, Op::T, 2, 3, 0, 1.0, nullptr, 2, nullptr, 1, 2.0,
                                  D.data(), 3);
    for (double v : D) EXPECT_EQ(v, 3.0);
  }
}

}  // namespace
}  // namespace rnnx_test
