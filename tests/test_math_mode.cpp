// Math mode allow_conversion (Config::math, RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION): the
// variable's parsing and refusal, the per-config setting overriding it, float64 ignoring
// it, the plan fingerprint, the cpu backend against the reference with bf16 GEMMs on the
// whole problem list (bf16 bounds of test_util.hpp, elementwise and in norm), float32
// unchanged when it is off, smaller workspaces, and the fallback when the ISA cap drops
// below avx512-bf16.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

constexpr const char* kVar = "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION";

Config f32_lstm() {
  return make_config(CellType::lstm, 24, 40, 1, false, DataType::f32);
}

bool bf16_machine() {
  try {
    return std::strcmp(cpu_isa_used(), "avx512-bf16") == 0;
  } catch (const Error&) {
    return false;
  }
}

TEST(MathMode, EnvironmentValues) {
  Config c = f32_lstm();
  {
    ScopedEnv env(kVar, nullptr);
    EXPECT_EQ(resolved_math_mode(c), MathMode::fp32);
  }
  {
    ScopedEnv env(kVar, "");
    EXPECT_EQ(resolved_math_mode(c), MathMode::fp32);
  }
  {
    ScopedEnv env(kVar, "0");
    EXPECT_EQ(resolved_math_mode(c), MathMode::fp32);
  }
  {
    ScopedEnv env(kVar, "1");
    EXPECT_EQ(resolved_math_mode(c), MathMode::allow_conversion);
    // The per-config setting overrides the variable.
    c.math = MathMode::fp32;
    EXPECT_EQ(resolved_math_mode(c), MathMode::fp32);
    c.math = MathMode::from_environment;
    // float64 runs in float64 whatever the mode (as cuDNN ignores conversion for double).
    Config d = make_config(CellType::lstm, 24, 40, 1, false, DataType::f64);
    EXPECT_EQ(resolved_math_mode(d), MathMode::fp32);
    d.math = MathMode::allow_conversion;
    EXPECT_EQ(resolved_math_mode(d), MathMode::fp32);
    Plan p(d, SequenceShape::padded(3, 2), backend_options(Backend::cpu));
    EXPECT_EQ(gemm_of(p.impl_name()), float64_gemm()) << p.impl_name();
  }
  {
    ScopedEnv env(kVar, nullptr);
    c.math = MathMode::allow_conversion;
    EXPECT_EQ(resolved_math_mode(c), MathMode::allow_conversion);
  }
}

TEST(MathMode, BadEnvironmentValueIsRefused) {
  ScopedEnv env(kVar, "yes");
  const Config c = f32_lstm();
  for (Backend b : {Backend::cpu, Backend::reference}) {
    try {
      Plan p(c, SequenceShape::padded(3, 2), backend_options(b));
      ADD_FAILURE() << "a plan was built with " << kVar << "=yes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(kVar), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("\"yes\""), std::string::npos) << e.what();
    }
  }
  // An explicit mode does not read the variable.
  Config explicit_mode = c;
  explicit_mode.math = MathMode::fp32;
  EXPECT_NO_THROW(Plan(explicit_mode, SequenceShape::padded(3, 2), backend_options(Backend::cpu)));
}

TEST(MathMode, BadBf16KernelValueIsRefused) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv env("RNNX_CPU_BF16_KERNEL", "tiles");
  Config c = f32_lstm();
  c.math = MathMode::allow_conversion;
  try {
    Plan p(c, SequenceShape::padded(3, 2), backend_options(Backend::cpu));
    ADD_FAILURE() << "a plan was built with RNNX_CPU_BF16_KERNEL=tiles";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("RNNX_CPU_BF16_KERNEL (= \"tiles\")"), std::string::npos)
        << e.what();
  }
}

TEST(MathMode, NamesAndInvalidValues) {
  for (MathMode m : {MathMode::from_environment, MathMode::fp32, MathMode::allow_conversion}) {
    EXPECT_EQ(math_mode_from_string(to_string(m)), m);
  }
  EXPECT_EQ(math_mode_from_string("ALLOW_CONVERSION"), MathMode::allow_conversion);
  try {
    math_mode_from_string("bf16");
    ADD_FAILURE() << "math_mode_from_string accepted bf16";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("math (= \"bf16\")"), std::string::npos) << e.what();
  }
  Config c = f32_lstm();
  c.math = static_cast<MathMode>(7);
  try {
    validate(c);
    ADD_FAILURE() << "validate accepted math = 7";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("math (= 7)"), std::string::npos) << e.what();
  }
}

// What the plan says it runs, and the workspace: bf16 packs take half the bytes. The
// heuristic's choices: two searches (the math mode is part of the key) may choose different
// engines where their times are close, as packed-avx2 and onednn-sgemm are on AVX2.
TEST(MathMode, ImplNameAndWorkspace) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv env(kVar, nullptr);
  ScopedEnv heuristic("RNNX_AUTOTUNE", "0");
  Config c = f32_lstm();
  const SequenceShape shape = SequenceShape::padded(5, 40);
  c.math = MathMode::fp32;
  Plan off(c, shape, backend_options(Backend::cpu));
  c.math = MathMode::allow_conversion;
  Plan on(c, shape, backend_options(Backend::cpu));
  const std::string off_gemm = gemm_of(off.impl_name()), on_gemm = gemm_of(on.impl_name());
  EXPECT_TRUE(off_gemm == "packed-avx512" || off_gemm == "packed-avx2" ||
              off_gemm == "packed-scalar" || off_gemm == "onednn-sgemm" || off_gemm == "plain")
      << off.impl_name();
  // RNNX_CPU_GEMM=sgemm or plain turns conversion off.
  const char* engine = std::getenv("RNNX_CPU_GEMM");
  const bool unpacked_forced =
      engine != nullptr && (std::string(engine) == "sgemm" || std::string(engine) == "plain");
  if (bf16_machine() && !unpacked_forced) {
    EXPECT_TRUE(on_gemm == "packed-amx-bf16" || on_gemm == "packed-avx512-bf16") << on.impl_name();
    EXPECT_LT(on.forward_workspace_size(false), off.forward_workspace_size(false));
    EXPECT_LT(on.backward_workspace_size(), off.backward_workspace_size());
  } else {
    // No AVX512-BF16 (or capped below it): float32, said so by the name.
    EXPECT_EQ(on.impl_name(), off.impl_name());
  }
}

// The reserve of a converting plan is not the reserve of a float32 plan of the same config.
TEST(MathMode, ReserveOfTheOtherModeIsRefused) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv env(kVar, nullptr);
  Config c = f32_lstm();
  const SequenceShape shape = SequenceShape::padded(3, 2);
  c.math = MathMode::allow_conversion;
  Plan on(c, shape, backend_options(Backend::cpu));
  c.math = MathMode::fp32;
  Plan off(c, shape, backend_options(Backend::cpu));
  const Data d = make_data(c, {3, 3}, 11);
  const Tensors t = make_tensors(on, d);
  Bytes reserve(on.reserve_size());
  Buf y(DataType::f32, on.y_numel(), 0.0);
  ForwardArgs fa;
  fa.x = t.x.data();
  fa.weights = t.w.data();
  fa.y = y.data();
  fa.training = true;
  fa.reserve = reserve.data();
  fa.reserve_size = reserve.size;
  on.forward(fa);
  Buf dx(DataType::f32, on.x_numel(), 0.0);
  BackwardArgs ba;
  ba.x = t.x.data();
  ba.weights = t.w.data();
  ba.dx = dx.data();
  ba.reserve = reserve.data();
  ba.reserve_size = reserve.size;
  try {
    off.backward(ba);
    ADD_FAILURE() << "an fp32 plan took the reserve of an allow_conversion plan";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("reserve"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(on.backward(ba));
}

// With the mode off, float32 results are those of a plan that never heard of it, bit for
// bit (the variable unset and explicitly fp32 run the same kernels).
TEST(MathMode, Float32UnchangedWhenOff) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv env(kVar, nullptr);
  for (CellType cell : {CellType::lstm, CellType::gru, CellType::rnn_tanh}) {
    Config c = make_config(cell, 19, 33, 2, true, DataType::f32);
    const SequenceShape shape = SequenceShape::padded(6, 4, {6, 2, 5, 0});
    Plan env_plan(c, shape, backend_options(Backend::cpu));
    c.math = MathMode::fp32;
    Plan fp32(c, shape, backend_options(Backend::cpu));
    EXPECT_EQ(fp32.impl_name(), env_plan.impl_name());
    EXPECT_EQ(gemm_of(fp32.impl_name()).find("bf16"), std::string::npos) << fp32.impl_name();
    const Data d = make_data(c, {6, 2, 5, 0}, 3);
    RunOptions o;
    o.backward = true;
    const Results a = run(fp32, make_tensors(fp32, d), o);
    const Results b = run(env_plan, make_tensors(env_plan, d), o);
    EXPECT_TRUE(identical("y", a.y, b.y));
    EXPECT_TRUE(identical("dx", a.dx, b.dx));
    EXPECT_TRUE(identical("dweights", a.dw, b.dw));
  }
}

// Every problem of the cpu-vs-reference list with math = allow_conversion, float32.
class MathModeVsReference : public ::testing::TestWithParam<TestCase> {};

TEST_P(MathModeVsReference, ForwardAndBackward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  TestCase p = GetParam();
  p.cfg.math = MathMode::allow_conversion;
  check_cpu_against_reference(p, DataType::f32);
}

INSTANTIATE_TEST_SUITE_P(Problems, MathModeVsReference,
                         ::testing::ValuesIn(cpu_vs_reference_cases()),
                         [](const ::testing::TestParamInfo<TestCase>& info) {
                           return info.param.name;
                         });

// The ISA level is the plan's, fixed when it is built: a plan built for bf16 whose ISA cap
// drops below avx512-bf16 before it runs keeps its bf16 products (the same bits as under the
// cap it was built with), while a plan built under the lower cap multiplies in float32
// (dnnl_sgemm, the plain loops or the float32 packed engine), within the float32 tolerance.
TEST(MathMode, CapLoweredAfterThePlanKeepsItsEngine) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  if (!bf16_machine()) GTEST_SKIP() << "no AVX512-BF16 (or capped below it)";
  Config c = make_config(CellType::gru, 21, 35, 1, true, DataType::f32);
  c.math = MathMode::allow_conversion;
  const SequenceShape shape = SequenceShape::padded(5, 3, {5, 1, 3});
  Plan cpu(c, shape, backend_options(Backend::cpu));
  Plan ref(c, shape, backend_options(Backend::reference));
  const Data d = make_data(c, {5, 1, 3}, 9);
  RunOptions o;
  o.backward = true;
  o.caller_workspace = true;
  const Results bf16 = run(cpu, make_tensors(cpu, d), o);
  set_cpu_isa_limit("avx512");
  EXPECT_TRUE(results_identical(run(cpu, make_tensors(cpu, d), o), bf16));
  Plan lowered(c, shape, backend_options(Backend::cpu));
  const Results got = run(lowered, make_tensors(lowered, d), o);
  set_cpu_isa_limit(nullptr);
  EXPECT_EQ(lowered.impl_name().find("bf16/"), std::string::npos) << lowered.impl_name();
  const Results want = run(ref, make_tensors(ref, d), o);
  Config f = c;
  f.math = MathMode::fp32;
  expect_results_near(got, want, tolerance(f, 5, 3, false), tolerance(f, 5, 3, true));
}

}  // namespace
}  // namespace rnnx_test
