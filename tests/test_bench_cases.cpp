// The benchmark's case lists (bench/problems-quick.txt, bench/problems.txt) in the test suites,
// read by the bench library as `rnnx bench --cases` and bench/run_all.py read them: the cpu
// backend against the reference on every case of the quick list, crossed with the lengths
// full, uniform and longtail (the full list: slow_cpu_vs_reference.cpp); the library's name
// of each case is Plan::problem_name(); the list format's refusals; and the lengths and FLOP
// counts pinned to the values the benchmark has always printed.
#include <gtest/gtest.h>

#include <numeric>

#include "bench_case.hpp"
#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

namespace bench = rnnx::bench;

const char* const kLists[] = {"problems-quick.txt", "problems.txt"};

TEST(BenchCases, ListsAreRead) {
  for (const char* file : kLists) {
    SCOPED_TRACE(file);
    std::vector<bench::BenchCase> cases;
    ASSERT_NO_THROW(cases = bench::read_case_list(bench_list_path(file)));
    EXPECT_FALSE(cases.empty());
    EXPECT_FALSE(bench_list_cases(file, true).empty());
  }
}

// The peer names its rows with the library's case_name; rnnx bench with the plan's.
TEST(BenchCases, NamesAreThePlansProblemNames) {
  for (const char* file : kLists) {
    for (const bench::BenchCase& bc : bench::read_case_list(bench_list_path(file))) {
      for (const std::string& dist : bench_distributions()) {
        SCOPED_TRACE(bc.line + " " + dist);
        const auto lengths = bench::make_lengths(dist, bc.seq, bc.batch, kBenchSeed);
        const Plan plan(bench_config(bc), SequenceShape::padded(bc.seq, bc.batch, lengths),
                        backend_options(Backend::reference));
        EXPECT_EQ(bench::case_name(bc, lengths), plan.problem_name());
        EXPECT_EQ(std::accumulate(lengths.begin(), lengths.end(), int64_t{0}), plan.tokens());
      }
    }
  }
}

// What `rnnx bench` and bench/lengths.py printed before the lengths, names and FLOPs moved
// into bench/case: a change of the generator or the formula shows here.
TEST(BenchCases, LengthsAndFlopsAsBefore) {
  auto sum = [](const std::vector<int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), int64_t{0});
  };
  const auto uniform = bench::make_lengths("uniform", 100, 64, 0);
  EXPECT_EQ(sum(uniform), 3320);
  EXPECT_EQ(std::vector<int64_t>(uniform.begin(), uniform.begin() + 12),
            (std::vector<int64_t>{89, 44, 3, 98, 11, 33, 18, 78, 25, 96, 40, 77}));
  const auto longtail = bench::make_lengths("longtail", 100, 64, 0);
  EXPECT_EQ(sum(longtail), 1547);
  EXPECT_EQ(std::vector<int64_t>(longtail.begin(), longtail.begin() + 12),
            (std::vector<int64_t>{100, 27, 3, 5, 4, 10, 3, 13, 34, 100, 100, 100}));
  EXPECT_EQ(bench::make_lengths("longtail", 12, 6, 7), (std::vector<int64_t>{1, 12, 1, 1, 1, 1}));
  EXPECT_EQ(bench::make_lengths("full", 5, 3, 9), (std::vector<int64_t>{5, 5, 5}));

  const bench::BenchCase lstmp =
      bench::parse_case_line("lstm l=1 i=256 h=1024 p=256 t=50 b=32", "");
  EXPECT_EQ(bench::flops(lstmp, bench::Mode::infer, 354), 1670381568.0);
  EXPECT_EQ(bench::flops(lstmp, bench::Mode::fwdbwd, 354), 5011144704.0);
  const bench::BenchCase bidir =
      bench::parse_case_line("lstm bidir l=2 i=256 h=256 t=100 b=32", "");
  EXPECT_EQ(bench::flops(bidir, bench::Mode::train, 1843), 9662627840.0);
  const bench::BenchCase gru = bench::parse_case_line("gru l=1 i=512 h=512 t=100 b=64", "");
  EXPECT_EQ(bench::flops(gru, bench::Mode::fwdbwd, 6400), 60397977600.0);
}

TEST(BenchCases, ListLines) {
  const bench::BenchCase c = bench::parse_case_line("  gru-orig bidir i=3 h=4 t=5 b=2  # x", "f:1");
  EXPECT_EQ(c.cell, "gru-orig");
  EXPECT_TRUE(c.bidirectional);
  EXPECT_EQ(c.layers, 1);
  EXPECT_EQ(c.proj, 0);
  EXPECT_EQ(c.line, "gru-orig bidir i=3 h=4 t=5 b=2");
  EXPECT_EQ(bench::format_case_line(c), c.line);
  bench::BenchCase flags = c;
  flags.line.clear();
  EXPECT_EQ(bench::format_case_line(flags), "gru-orig bidir l=1 i=3 h=4 p=0 t=5 b=2");
  EXPECT_EQ(bench::format_case_line(bench::parse_case_line(bench::format_case_line(flags), "")),
            bench::format_case_line(flags));

  // Refused, with the place and the word.
  const std::pair<const char*, const char*> bad[] = {
      {"lstmp i=3 h=4 t=5 b=2", "f:1: cell 'lstmp' is not one of"},
      {"lstm i=3 h=4 t=5", "f:1: missing b="},
      {"lstm i=3 h=4", "f:1: missing t=, b="},
      {"lstm i=3 h=4 t=5 b=2 x=1", "f:1: 'x=1' is not bidir, uni or one of"},
      {"lstm i=3 h=4 t=-5 b=2", "f:1: 't=-5' is not"},
      {"lstm i=3 h=4 t=5 b=", "f:1: 'b=' is not"},
      {"gru i=3 h=4 p=2 t=5 b=2", "f:1: --proj (= 2) needs --cell lstm"},
      {"rnn_relu i=3 h=0 t=5 b=2", "f:1: --hidden (= 0) must be >= 1"},
  };
  for (const auto& [line, message] : bad) {
    SCOPED_TRACE(line);
    try {
      bench::parse_case_line(line, "f:1");
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

using Param = std::tuple<TestCase, DataType>;
class BenchCaseCpuVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(BenchCaseCpuVsReference, ForwardAndBackward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  check_cpu_against_reference(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(QuickList, BenchCaseCpuVsReference,
                         ::testing::Combine(::testing::ValuesIn(bench_list_cases(
                                                "problems-quick.txt", /*backward=*/true)),
                                            ::testing::Values(DataType::f32, DataType::f64)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace rnnx_test
