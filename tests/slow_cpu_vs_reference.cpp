// Slow (ctest label "slow", executable rnnx_tests_slow): the cpu backend against the
// reference on larger problems -- hidden sizes of 96 and 128, 24-30 steps, batches of 12-16
// with ragged lengths -- where blocking, threading and vector tails of the GEMMs and cell
// kernels take other paths than at the default suite's sizes; and the benchmark's cases.
#include <gtest/gtest.h>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

std::vector<TestCase> large_cases() {
  std::vector<TestCase> out;
  const DataOptions all{};
  auto ragged = [](int64_t T, int64_t B, uint64_t seed) {
    Rng rng(seed);
    std::vector<int64_t> l(B);
    for (int64_t& v : l) v = static_cast<int64_t>(rng.uniform(0, static_cast<double>(T) + 1));
    l[0] = T;
    l[B - 1] = 0;
    return l;
  };
  for (const CellVariant& v : cell_variants()) {
    out.push_back(make_test_case(config_for(v, 64, 96, 2, true, true), LayoutKind::time_major, 24,
                                 12, ragged(24, 12, 1), all, GradMode::overwrite));
    Config c = config_for(v, 33, 128, 3, false, true);
    c.dropout = 0.25;
    c.seed = 77;
    if (v.cell == CellType::lstm) c.cell_clip = {true, -0.8, 0.9};
    std::vector<int64_t> l = ragged(30, 16, 2);
    l[15] = 1;  // packed: no empty sequences
    TestCase p =
        make_test_case(c, LayoutKind::packed_sorted_indices, 30, 16, l, all, GradMode::accumulate);
    p.dropout_counter = 5;
    out.push_back(p);
  }
  return out;
}

using Param = std::tuple<TestCase, DataType>;
class SlowCpuVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(SlowCpuVsReference, ForwardAndBackward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  check_cpu_against_reference(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Large, SlowCpuVsReference,
                         ::testing::Combine(::testing::ValuesIn(large_cases()),
                                            ::testing::Values(DataType::f32, DataType::f64)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

// Every case of the benchmark's list (bench/problems.txt, problems.hpp: bench_list_cases),
// crossed with its lengths, as the benchmark runs it. Forward only (inference and training)
// and float32: the reference's plain double loops do about 1.5 GFLOP/s, and the list's
// cases are 0.2-27 GFLOP per forward (190 with all lengths), so this takes minutes. The
// quick list runs complete in the default suite (test_bench_cases.cpp).
class SlowBenchCaseCpuVsReference : public ::testing::TestWithParam<TestCase> {};

TEST_P(SlowBenchCaseCpuVsReference, Forward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  check_cpu_against_reference(GetParam(), DataType::f32);
}

INSTANTIATE_TEST_SUITE_P(FullList, SlowBenchCaseCpuVsReference,
                         ::testing::ValuesIn(bench_list_cases("problems.txt", /*backward=*/false)),
                         [](const ::testing::TestParamInfo<TestCase>& info) {
                           return info.param.name + "_float32";
                         });

// One and two threads on a size where the work is really split.
TEST(SlowCpu, ThreadCountDoesNotChangeLargeResults) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  Config c = make_config(CellType::lstm, 64, 128, 3, true, DataType::f32, 48);
  c.dropout = 0.3;
  c.seed = 11;
  std::vector<int64_t> lengths(32);
  for (int64_t b = 0; b < 32; ++b) lengths[b] = (b * 7) % 41;
  Plan p1(c, SequenceShape::padded(40, 32, lengths), backend_options(Backend::cpu, 1));
  Plan p2(c, SequenceShape::padded(40, 32, lengths), backend_options(Backend::cpu, 2));
  const Tensors t = make_tensors(p1, make_data(c, lengths, 5), kNaN, kNaN);
  RunOptions o;
  o.backward = true;
  o.dropout_counter = 8;
  expect_results_near(run(p2, t, o), run(p1, t, o), 2 * tolerance(c, 40, 32, false),
                      2 * tolerance(c, 40, 32, true));
}

}  // namespace
}  // namespace rnnx_test
