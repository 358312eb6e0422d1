// Reruns give the same bits: for a fixed thread count (and the algorithm and math mode the
// plan chose), a second call of the same plan, and a call of a second plan of the same
// problem, reproduce forward and backward exactly, for every cell, full and ragged batches,
// with dropout. And what docs/testing.md promises about the thread count: the cpu backend's
// results do not depend on it.
#include <gtest/gtest.h>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

struct Case {
  CellVariant cell;
  bool ragged;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const CellVariant& c : cell_variants()) {
    v.push_back({c, false});
    v.push_back({c, true});
  }
  return v;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string tag = info.param.cell.tag;
  for (char& ch : tag) {
    if (ch == '-') ch = '_';
  }
  return tag + (info.param.ragged ? "_ragged" : "_full");
}

class Determinism : public ::testing::TestWithParam<Case> {
 protected:
  // Large enough for every parallel path (several GEMM panels per thread, team loops,
  // concurrent directions), small enough for the sanitizer builds.
  Config config() const {
    Config c = config_for(GetParam().cell, 37, 70, 2, true, true);
    c.dropout = 0.3;
    return c;
  }
  SequenceShape shape() const {
    const int64_t T = 9, B = 19;
    if (!GetParam().ragged) return SequenceShape::padded(T, B);
    std::vector<int64_t> lengths(B);
    for (int64_t b = 0; b < B; ++b) lengths[b] = (b * 7) % (T + 1);  // 0..T, shuffled
    return SequenceShape::padded(T, B, lengths);
  }
  Results run_with(Plan& plan, const Tensors& in, bool caller_workspace) const {
    RunOptions o;
    o.backward = true;
    o.dropout_counter = 5;
    o.caller_workspace = caller_workspace;
    return run(plan, in, o);
  }
};

// The heuristic's choice, so that two plans of one problem run the same algorithm (a
// search may choose differently when the machine is busy).
TEST_P(Determinism, RerunsAndSecondPlansGiveTheSameBits) {
  const ScopedEnv heuristic("RNNX_AUTOTUNE", "0");
  const Config c = config();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    Plan a(c, shape(), backend_options(Backend::cpu, threads));
    const Data d = make_data(c, geometry_of(a.shape()).lengths, 3);
    const Tensors in = make_tensors(a, d);
    const Results first = run_with(a, in, false);
    EXPECT_TRUE(results_identical(run_with(a, in, false), first))
        << "second call, " << a.impl_name();
    EXPECT_TRUE(results_identical(run_with(a, in, true), first)) << "caller's workspace";
    Plan b(c, shape(), backend_options(Backend::cpu, threads));
    ASSERT_EQ(b.impl_name(), a.impl_name());
    EXPECT_TRUE(results_identical(run_with(b, in, false), first)) << "second plan";
  }
}

// The work is split by output columns and by independent rows, and every sum rnnx computes
// itself runs in one order whatever the threads: one thread or several give the same bits,
// under every algorithm (each choice forced, so that no search picks another; float32:
// float64's products are the BLAS's, whose sums follow its threads, where the build has one).
TEST_P(Determinism, ThreadCountDoesNotChangeTheBits) {
  const Config c = config();
  struct Choice {
    const char *gemm, *loop, *dirs, *input;
  };
  std::vector<Choice> choices;
  std::vector<const char*> engines = {"packed", "plain"};
  if (rnnx::cpu::have_onednn()) engines.push_back("sgemm");
  for (const char* gemm : engines) {
    for (const char* loop : {"team", "per-step"}) {
      for (const char* dirs : {"concurrent", "sequential"})
        choices.push_back({gemm, loop, dirs, "bulk"});
    }
  }
  choices.push_back({"packed", "team", "concurrent", "split"});
  choices.push_back({"packed", "per-step", "sequential", "steps"});
  for (const Choice& ch : choices) {
    const ScopedEnv g("RNNX_CPU_GEMM", ch.gemm), l("RNNX_CPU_TIME_LOOP", ch.loop),
        di("RNNX_CPU_DIRECTIONS", ch.dirs), in("RNNX_CPU_INPUT_PROJECTION", ch.input);
    SCOPED_TRACE(std::string(ch.gemm) + " " + ch.loop + " " + ch.dirs + " input-" + ch.input);
    Plan one(c, shape(), backend_options(Backend::cpu, 1));
    const Data d = make_data(c, geometry_of(one.shape()).lengths, 4);
    const Tensors tensors = make_tensors(one, d);
    const Results want = run_with(one, tensors, false);
    for (int threads : {2, 3}) {
      Plan many(c, shape(), backend_options(Backend::cpu, threads));
      EXPECT_TRUE(results_identical(run_with(many, tensors, false), want))
          << threads << " threads (" << many.impl_name() << ") vs 1 (" << one.impl_name() << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, Determinism, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace rnnx_test
