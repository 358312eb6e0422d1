// Which GEMM engine a cpu plan runs in this build (docs/cpu.md, "The GEMM engine"), with or
// without oneDNN and a BLAS (CMake's RNNX_WITH_ONEDNN, RNNX_WITH_BLAS): what build_info()
// and impl_name() say, RNNX_CPU_GEMM=plain in every build, and RNNX_CPU_GEMM=sgemm refused,
// naming the variable and the missing oneDNN, where the build has none.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/schedule.hpp"
#include "cpu/algo.hpp"
#include "cpu/library_gemm.hpp"
#include "rnnx/rnnx.h"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::cpu::GemmEngine;

// What a cpu plan of this problem starts from (as tests/test_autotune.cpp builds it).
PlanContext context(const Config& c, const SequenceShape& s, int threads) {
  PlanContext ctx{c, s, rnnx::core::make_schedule(s), WeightLayout(c),
                  backend_options(Backend::cpu, threads)};
  ctx.math = resolved_math_mode(c);
  return ctx;
}

const SequenceShape kShape = SequenceShape::padded(4, 3, {4, 2, 0});

TEST(GemmEngines, BuildInfoSaysWhatTheBuildHas) {
  const BuildInfo b = build_info();
  EXPECT_EQ(b.with_onednn, rnnx::cpu::have_onednn());
  EXPECT_EQ(b.with_blas, rnnx::cpu::have_blas());
  const std::string engines = b.gemm_engine;
  EXPECT_EQ(engines.find("onednn-sgemm") != std::string::npos, b.with_onednn) << engines;
  EXPECT_EQ(engines.find("no oneDNN in this build") != std::string::npos, !b.with_onednn)
      << engines;
  EXPECT_NE(engines.find("float64 " + float64_gemm()), std::string::npos) << engines;
  EXPECT_EQ(engines.find("no BLAS in this build") != std::string::npos, !b.with_blas) << engines;
}

// float64 runs the BLAS where the build has one, else the plain loops; RNNX_CPU_GEMM (a
// float32 choice) changes neither.
TEST(GemmEngines, Float64RunsTheBlasOrThePlainLoops) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const Config c = make_config(CellType::gru, 5, 7, 1, true, DataType::f64);
  for (const char* forced : {static_cast<const char*>(nullptr), "plain", "packed"}) {
    ScopedEnv e("RNNX_CPU_GEMM", forced);
    Plan p(c, kShape, backend_options(Backend::cpu, 2));
    EXPECT_EQ(gemm_of(p.impl_name()), float64_gemm()) << p.impl_name();
  }
}

// RNNX_CPU_GEMM=plain: every candidate runs the plain loops (no team loops, which need the
// packed engine; no bf16 conversion), in every build.
TEST(GemmEngines, PlainCanBeForced) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv e("RNNX_CPU_GEMM", "plain");
  Config c = make_config(CellType::lstm, 5, 7, 1, true, DataType::f32);
  for (MathMode math : {MathMode::fp32, MathMode::allow_conversion}) {
    c.math = math;
    const rnnx::cpu::AlgoSpace space = rnnx::cpu::algo_space(context(c, kShape, 2));
    for (const rnnx::cpu::Algo& a : space.candidates) {
      EXPECT_EQ(a.engine, GemmEngine::plain);
      EXPECT_FALSE(a.team_loops);
    }
    Plan p(c, kShape, backend_options(Backend::cpu, 2));
    EXPECT_EQ(gemm_of(p.impl_name()), "plain") << p.impl_name();
  }
}

// The library engine's float32 products (dnnl_sgemm on tiles of C, library_gemm.cpp): every
// operand form, a product of several tiles both ways with partial ones, alpha and beta,
// against a double loop, and the same bits on one to four threads (oneDNN's own threads
// split K on AVX2, which made the bits follow the thread count).
TEST(GemmEngines, LibrarySgemmTilesAreExactAndThreadIndependent) {
  if (!rnnx::cpu::have_onednn()) GTEST_SKIP() << "no oneDNN in this build";
  using rnnx::cpu::Op;
  const int64_t M = 600, N = 300, K = 70;
  Rng rng(5);
  for (Op ta : {Op::N, Op::T}) {
    for (Op tb : {Op::N, Op::T}) {
      SCOPED_TRACE(std::string(1, static_cast<char>(ta)) + static_cast<char>(tb));
      const int64_t lda = (ta == Op::N ? K : M) + 1, ldb = (tb == Op::N ? N : K) + 2;
      const int64_t ldc = N + 3;
      std::vector<float> A((ta == Op::N ? M : K) * lda), B((tb == Op::N ? K : N) * ldb);
      std::vector<float> C0(M * ldc);
      for (float& v : A) v = static_cast<float>(rng.uniform(-1, 1));
      for (float& v : B) v = static_cast<float>(rng.uniform(-1, 1));
      for (float& v : C0) v = static_cast<float>(rng.uniform(-1, 1));
      std::vector<std::vector<float>> results;
      const int saved = rnnx::max_threads();
      for (int threads : {1, 2, 3, 4}) {
        rnnx::set_num_threads(threads);
        std::vector<float> C = C0;
        rnnx::cpu::library_gemm<float>(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f,
                                       C.data(), ldc);
        results.push_back(std::move(C));
      }
      rnnx::set_num_threads(saved);
      for (size_t t = 1; t < results.size(); ++t) {
        EXPECT_TRUE(results[t] == results[0]) << (t + 1) << " threads vs 1";
      }
      // Float32 products of values in [-1, 1] over K terms: K * eps * (a few) bounds any order.
      const double tol = 4.0 * (K + 1) * 6e-8 + 1e-6;
      int64_t bad = 0;
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          const double got = results[0][i * ldc + j];
          if (j >= N) {
            if (got != C0[i * ldc + j] && bad++ < 5) ADD_FAILURE() << "wrote past N";
            continue;
          }
          double want = 2.0 * C0[i * ldc + j];
          for (int64_t k = 0; k < K; ++k) {
            const double a = ta == Op::N ? A[i * lda + k] : A[k * lda + i];
            const double b = tb == Op::N ? B[k * ldb + j] : B[j * ldb + k];
            want += 0.5 * a * b;
          }
          if (!(std::fabs(got - want) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want;
          }
        }
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

// Without oneDNN the search has no float32 alternative to the packed engine; with it, where
// the packed engine runs, dnnl_sgemm is one.
TEST(GemmEngines, SearchOffersSgemmOnlyWithOneDnn) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const Config c = make_config(CellType::lstm, 5, 7, 1, false, DataType::f32);
  const rnnx::cpu::AlgoSpace space = rnnx::cpu::algo_space(context(c, kShape, 2));
  bool library = false, packed = false;
  for (const rnnx::cpu::Algo& a : space.candidates) {
    library = library || a.engine == GemmEngine::library;
    packed = packed || a.engine == GemmEngine::packed;
    EXPECT_NE(a.engine, GemmEngine::plain) << "plain is never searched";
  }
  if (!rnnx::cpu::have_onednn()) {
    EXPECT_FALSE(library);
    EXPECT_EQ(space.heuristic.engine, packed ? GemmEngine::packed : GemmEngine::plain);
  } else {
    EXPECT_TRUE(library);
  }
}

// RNNX_CPU_GEMM=sgemm asks for oneDNN: it runs where the build has it and is refused,
// naming the variable and the missing library, where it has not (from the algorithm space,
// a plan and the C API alike), for float64 plans too.
TEST(GemmEngines, SgemmNeedsOneDnn) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv e("RNNX_CPU_GEMM", "sgemm");
  const Config c = make_config(CellType::lstm, 5, 7, 1, false, DataType::f32);
  if (rnnx::cpu::have_onednn()) {
    Plan p(c, kShape, backend_options(Backend::cpu, 2));
    EXPECT_EQ(gemm_of(p.impl_name()), "onednn-sgemm") << p.impl_name();
    return;
  }
  const auto expect_refusal = [](const std::string& what) {
    EXPECT_NE(what.find("RNNX_CPU_GEMM (= \"sgemm\")"), std::string::npos) << what;
    EXPECT_NE(what.find("this build has no oneDNN"), std::string::npos) << what;
    EXPECT_NE(what.find("RNNX_WITH_ONEDNN"), std::string::npos) << what;
  };
  try {
    rnnx::cpu::algo_space(context(c, kShape, 2));
    ADD_FAILURE() << "the algorithm space took sgemm";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Status::unsupported);
    expect_refusal(err.what());
  }
  for (DataType dtype : {DataType::f32, DataType::f64}) {
    Config d = c;
    d.dtype = dtype;
    try {
      Plan p(d, kShape, backend_options(Backend::cpu, 2));
      ADD_FAILURE() << "a plan was built: " << p.impl_name();
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Status::unsupported);
      expect_refusal(err.what());
    }
  }
  rnnx_config_t cfg = nullptr;
  ASSERT_EQ(rnnx_config_create(&cfg), RNNX_STATUS_SUCCESS);
  ASSERT_EQ(rnnx_config_set_input_size(cfg, 5), RNNX_STATUS_SUCCESS);
  ASSERT_EQ(rnnx_config_set_hidden_size(cfg, 7), RNNX_STATUS_SUCCESS);
  const rnnx_sequence_desc_t shape = rnnx_sequence_desc_padded(4, 3, nullptr, 0);
  rnnx_plan_t plan = nullptr;
  EXPECT_EQ(rnnx_plan_create(&plan, cfg, &shape, RNNX_BACKEND_CPU, 2), RNNX_STATUS_UNSUPPORTED);
  EXPECT_EQ(plan, nullptr);
  expect_refusal(rnnx_get_last_error_message());
  rnnx_config_destroy(cfg);
}

}  // namespace
}  // namespace rnnx_test
