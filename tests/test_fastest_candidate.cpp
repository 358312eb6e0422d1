// The search rules both searching backends share (src/core/fastest_candidate.hpp), on
// candidates whose measurements the test scripts: hill climbing through neighbours, the
// margin and its confirmation, candidates that cannot serve, a disturbed search.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/fastest_candidate.hpp"

namespace rnnx_test {
namespace {

using rnnx::core::fastest_candidate;

// Each candidate's measurements in turn (the last one repeats); a candidate without any
// cannot serve. Counts the measurements.
struct Script {
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, int> calls;
  std::optional<double> operator()(const std::string& c) {
    const auto it = times.find(c);
    if (it == times.end() || it->second.empty()) return std::nullopt;
    const int n = calls[c]++;
    return it->second[std::min<size_t>(n, it->second.size() - 1)];
  }
};

// a - b - c in a row: each neighbours the next.
std::vector<std::string> in_a_row(const std::string& from) {
  if (from == "a") return {"b"};
  if (from == "b") return {"a", "c"};
  return {"b"};
}

std::vector<std::string> everyone(const std::string&) {
  return {"a", "b", "c", "d"};
}

TEST(FastestCandidate, ClimbsThroughNeighboursToTheFastest) {
  Script s{{{"a", {1.0}}, {"b", {0.9}}, {"c", {0.8}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), s, in_a_row, 1.5), "c");
  // c is reached only through b, and each challenger that wins is measured twice.
  EXPECT_EQ(s.calls["b"], 3);  // measured, confirmed, and again as the incumbent c beat
  EXPECT_EQ(s.calls["c"], 3);  // measured, confirmed, and the winner once more
}

TEST(FastestCandidate, KeepsTheIncumbentUnlessClearlyFaster) {
  Script s{{{"a", {1.0}}, {"b", {0.98}}, {"c", {0.975}}, {"d", {0.971}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), s, everyone, 1.5), "a");
  Script t{{{"a", {1.0}}, {"b", {0.98}}, {"c", {0.96}}, {"d", {0.971}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), t, everyone, 1.5), "c");
}

// Noise only ever adds time, so each candidate keeps its best measurement; the confirming
// pair gives a slowed incumbent its second chance.
TEST(FastestCandidate, ASlowedIncumbentIsMeasuredAgainBeforeItLoses) {
  Script s{{{"a", {1.2, 0.95}}, {"b", {0.94}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), s, in_a_row, 1.5), "a");
  EXPECT_EQ(s.calls["a"], 3);  // first, confirming, and the winner once more
  Script t{{{"a", {1.2, 1.0}}, {"b", {0.94}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), t, in_a_row, 1.5), "b");
}

TEST(FastestCandidate, SkipsCandidatesThatCannotServe) {
  Script s{{{"a", {1.0}}, {"b", {}}, {"c", {0.5}}, {"d", {0.9}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), s, everyone, 1.5), "c");
  EXPECT_EQ(s.calls.count("b"), 0u);
  Script t{{{"b", {0.5}}}, {}};  // the start itself cannot be measured
  EXPECT_EQ(fastest_candidate(std::string("a"), t, everyone, 1.5), std::nullopt);
}

TEST(FastestCandidate, ADisturbedSearchChoosesNothing) {
  // a's two measurements (the first and the winner's last) differ by 2x: the machine was
  // busy; the limit decides.
  const auto run = [](double limit) {
    Script s{{{"a", {1.0, 2.0}}, {"b", {1.5}}}, {}};
    return fastest_candidate(std::string("a"), s, in_a_row, limit);
  };
  EXPECT_EQ(run(1.5), std::nullopt);
  EXPECT_EQ(run(1e9), "a");
  // A challenger's confirming measurement counts as well.
  Script s{{{"a", {1.0}}, {"b", {0.5, 1.2}}}, {}};
  EXPECT_EQ(fastest_candidate(std::string("a"), s, in_a_row, 1.5), std::nullopt);
}

}  // namespace
}  // namespace rnnx_test
