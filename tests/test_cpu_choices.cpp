// The cpu backend's per-plan choices (PlanOptions::cpu): each forces what its environment
// variable forces, overrides that variable ("auto" included), shows in impl_name(), keeps
// its searches apart from unforced ones, and is refused by name with a bad value or on
// another backend.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/schedule.hpp"
#include "cpu/algo.hpp"
#include "cpu/autotune.hpp"
#include "cpu/isa.hpp"
#include "rnnx/cpu.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

const SequenceShape kShape = SequenceShape::padded(6, 4, {6, 2, 5, 1});

Config bidir_lstm() {
  return make_config(CellType::lstm, 5, 8, 1, true, DataType::f32);
}

PlanOptions with_choices(const std::string& text, int threads = 2) {
  PlanOptions o = backend_options(Backend::cpu, threads);
  o.cpu = cpu_choices_from_string(text);
  return o;
}

PlanContext context(const Config& c, const PlanOptions& o) {
  PlanContext ctx{c, kShape, core::make_schedule(kShape), WeightLayout(c), o};
  ctx.math = resolved_math_mode(c);
  return ctx;
}

TEST(CpuChoices, TextRoundTripsAndUnknownChoicesAreRefused) {
  const CpuChoices c = cpu_choices_from_string(" gemm=plain  isa=avx2 search=off");
  EXPECT_EQ(c.gemm, "plain");
  EXPECT_EQ(c.isa, "avx2");
  EXPECT_EQ(c.search, "off");
  EXPECT_TRUE(c.time_loop.empty());
  EXPECT_EQ(to_string(c), "isa=avx2 gemm=plain search=off");
  EXPECT_EQ(to_string(cpu_choices_from_string(to_string(c))), to_string(c));
  EXPECT_TRUE(cpu_choices_from_string("").empty());
  expect_error([] { cpu_choices_from_string("loop=team"); }, Status::invalid_argument,
               {"\"loop\" is not a choice of the cpu backend", "time_loop"});
  expect_error([] { cpu_choices_from_string("gemm"); }, Status::invalid_argument,
               {"\"gemm\" is not of the form choice=value"});
  expect_error([] { cpu_choices_from_string("gemm=plain gemm=packed"); }, Status::invalid_argument,
               {"gemm is given twice"});
}

// Each choice runs what it names (impl_name says so), whatever the environment says.
TEST(CpuChoices, EachChoiceIsHonouredAndOverridesTheEnvironment) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv gemm_env("RNNX_CPU_GEMM", "packed");
  ScopedEnv loop_env("RNNX_CPU_TIME_LOOP", "team");
  ScopedEnv search_env("RNNX_AUTOTUNE", "0");
  const Config c = bidir_lstm();
  {
    Plan p(c, kShape, with_choices("gemm=plain"));
    EXPECT_NE(p.impl_name().find("/plain"), std::string::npos) << p.impl_name();
  }
  {
    Plan p(c, kShape, with_choices("time_loop=per-step directions=sequential"));
    EXPECT_EQ(p.impl_name().find("/team"), std::string::npos) << p.impl_name();
    EXPECT_EQ(p.impl_name().find("dirs-concurrent"), std::string::npos) << p.impl_name();
  }
  {
    Plan p(c, kShape, with_choices("directions=concurrent input_projection=steps"));
    EXPECT_NE(p.impl_name().find("/dirs-concurrent"), std::string::npos) << p.impl_name();
    EXPECT_NE(p.impl_name().find("/input-steps"), std::string::npos) << p.impl_name();
  }
  {
    // "auto" frees the choice the environment forces: the heuristic's engine, not plain.
    ScopedEnv plain_env("RNNX_CPU_GEMM", "plain");
    Plan forced(c, kShape, backend_options(Backend::cpu, 2));
    EXPECT_NE(forced.impl_name().find("/plain"), std::string::npos) << forced.impl_name();
    Plan freed(c, kShape, with_choices("gemm=auto"));
    EXPECT_EQ(freed.impl_name().find("/plain"), std::string::npos) << freed.impl_name();
  }
}

// `split` projects a step's input in the time loop from 8 rows (algo.hpp: the bulk
// projection's gates come back from beyond L2), `steps` from one row, `bulk` never.
TEST(CpuChoices, SplitProjectsStepsOfEightRowsInTheLoop) {
  using cpu::InputProjection;
  EXPECT_EQ(cpu::step_input_min_rows(InputProjection::split), 8);
  EXPECT_EQ(cpu::step_input_min_rows(InputProjection::steps), 1);
  EXPECT_EQ(cpu::step_input_min_rows(InputProjection::bulk), std::numeric_limits<int64_t>::max());
}

// The ISA cap per plan: below the process's, and "auto" above set_cpu_isa_limit's.
TEST(CpuChoices, TheIsaCapIsThePlansOwn) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const Config c = bidir_lstm();
  Plan scalar(c, kShape, with_choices("isa=scalar"));
  EXPECT_EQ(scalar.impl_name().rfind("cpu:scalar/", 0), 0u) << scalar.impl_name();
  set_cpu_isa_limit("scalar");
  Plan free(c, kShape, with_choices("isa=auto"));
  set_cpu_isa_limit(nullptr);
  // The plan names the level it runs at: the machine's, avx512-bf16 included.
  const std::string detected = cpu_isa_detected();
  EXPECT_EQ(free.impl_name().rfind("cpu:" + detected + "/", 0), 0u) << free.impl_name();
  // Both compute the problem (within float32 rounding of each other).
  const Tensors t = make_tensors(scalar, make_data(c, {6, 2, 5, 1}, 3));
  const Results a = run(scalar, t);
  const Results b = run(free, t);
  EXPECT_TRUE(near("y, scalar vs " + free.impl_name(), a.y, b.y, 1e-5));
}

// A search under a forced choice has fewer candidates: its result is stored apart, so that
// an unforced plan of the problem never takes it (nor the other way round).
TEST(CpuChoices, ForcedSearchesAreKeyedApart) {
  const Config c = bidir_lstm();
  const std::string open = cpu::autotune_key(context(c, with_choices("")));
  EXPECT_EQ(open.find("forced="), std::string::npos) << open;
  const std::string forced = cpu::autotune_key(context(c, with_choices("time_loop=per-step")));
  EXPECT_NE(forced.find("forced=time_loop=per-step"), std::string::npos) << forced;
  EXPECT_NE(open, forced);
  ScopedEnv env("RNNX_CPU_TIME_LOOP", "per-step");  // the environment's force counts the same
  EXPECT_EQ(cpu::autotune_key(context(c, with_choices(""))), forced);
  EXPECT_EQ(cpu::autotune_key(context(c, with_choices("time_loop=auto"))), open);
}

TEST(CpuChoices, SearchChoiceOverridesTheEnvironment) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  ScopedEnv on("RNNX_AUTOTUNE", "1");
  const Config c = bidir_lstm();
  EXPECT_FALSE(cpu::search_enabled(context(c, with_choices("search=off"))));
  EXPECT_TRUE(cpu::search_enabled(context(c, with_choices("search=auto"))));
  ScopedEnv off("RNNX_AUTOTUNE", "0");
  EXPECT_TRUE(cpu::search_enabled(context(c, with_choices("search=on"))));
  EXPECT_FALSE(cpu::search_enabled(context(c, with_choices(""))));
}

TEST(CpuChoices, BadValuesAndOtherBackendsAreRefusedByName) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const Config c = bidir_lstm();
  auto build = [&](const std::string& text) { Plan p(c, kShape, with_choices(text)); };
  expect_error([&] { build("gemm=fast"); }, Status::invalid_argument,
               {"cpu choice gemm (= \"fast\") must be packed, sgemm, plain, auto"});
  expect_error([&] { build("time_loop=teams"); }, Status::invalid_argument,
               {"cpu choice time_loop (= \"teams\")"});
  expect_error([&] { build("directions=both"); }, Status::invalid_argument,
               {"cpu choice directions (= \"both\")"});
  expect_error([&] { build("input_projection=all"); }, Status::invalid_argument,
               {"cpu choice input_projection (= \"all\")"});
  expect_error([&] { build("isa=avx3"); }, Status::invalid_argument,
               {"cpu choice isa (= \"avx3\") must be one of scalar, avx2"});
  expect_error([&] { build("search=maybe"); }, Status::invalid_argument,
               {"cpu choice search (= \"maybe\") must be on, off, or auto"});
  PlanOptions reference = backend_options(Backend::reference, 1);
  reference.cpu.gemm = "plain";
  expect_error([&] { Plan p(c, kShape, reference); }, Status::invalid_argument,
               {"cpu choices (\"gemm=plain\") are for backend cpu, not reference"});
}

}  // namespace
}  // namespace rnnx_test
