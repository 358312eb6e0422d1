// Several threads executing one plan at once (plan.hpp's contract): 4 threads x 50 calls,
// inference and training + backward, with and without a caller workspace, give the bits
// of single-threaded calls; plans of one problem built at once share the algorithm
// search's memory safely; processes appending to one RNNX_AUTOTUNE_CACHE file never tear
// each other's lines. CI also runs this suite under ThreadSanitizer (scripts/test.sh).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "core/autotune_cache.hpp"
#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

// ThreadSanitizer cannot see the synchronisation inside the OpenMP runtime (it is not
// instrumented): under it each call runs on its caller's thread alone, which still runs
// every path of the plan concurrently with the other callers.
#if defined(__SANITIZE_THREAD__)
constexpr int kPlanThreads = 1;
#else
constexpr int kPlanThreads = 2;
#endif
constexpr int kCallers = 4;
constexpr int kCallsEach = 50;

struct Case {
  Config config;
  SequenceShape shape;
};

std::vector<Case> cases() {
  const std::vector<int64_t> lengths = {7, 0, 12, 3, 12, 9, 1, 5, 11, 2};
  std::vector<Case> v;
  Config lstm = make_config(CellType::lstm, 24, 40, 2, true, DataType::f32);
  lstm.dropout = 0.25;
  v.push_back({lstm, SequenceShape::padded(12, 10, lengths)});
  Config lstmp = make_config(CellType::lstm, 16, 30, 1, true, DataType::f32, 11);
  lstmp.cell_clip = {true, -0.5, 0.5};
  v.push_back({lstmp, packed_shape({12, 9, 9, 4, 1}, true)});
  v.push_back({make_config(CellType::gru, 13, 33, 2, false, DataType::f64),
               SequenceShape::padded(12, 10, lengths, true)});
  return v;
}

// One kind of call: inference or training + backward, with or without a caller workspace.
RunOptions call_kind(int k) {
  RunOptions o;
  o.backward = k & 1;
  o.dropout_counter = 3;
  o.caller_workspace = (k >> 1) & 1;
  return o;
}

TEST(Concurrency, OnePlanManyCallersGiveTheBitsOfOneCaller) {
  for (const Case& pr : cases()) {
    Plan plan(pr.config, pr.shape, backend_options(Backend::cpu, kPlanThreads));
    SCOPED_TRACE(plan.problem_name() + " " + plan.impl_name());
    const Data d = make_data(pr.config, geometry_of(plan.shape()).lengths, 9);
    const Tensors in = make_tensors(plan, d);
    std::vector<Results> want;
    for (int k = 0; k < 4; ++k) want.push_back(run(plan, in, call_kind(k)));
    std::atomic<int> wrong{0}, failed{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < kCallers; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; i < kCallsEach; ++i) {
          const int k = (t + i) % 4;
          try {
            if (!results_identical(run(plan, in, call_kind(k)), want[k])) ++wrong;
          } catch (const std::exception&) {
            ++failed;
          }
        }
      });
    }
    for (std::thread& c : callers) c.join();
    EXPECT_EQ(wrong.load(), 0) << "calls with other bits than a lone caller's";
    EXPECT_EQ(failed.load(), 0) << "calls that threw";
  }
}

// int8 (docs/int8.md) inference from many callers, with and without their own workspace,
// a weights version (the network's kept quantised copy, made once under its lock) and team
// loops (members quantising shares of the rows): every call the bits of a lone one. Without
// VNNI it runs on the scalar definition.
TEST(Concurrency, OneInt8PlanManyCallersGiveTheBitsOfOneCaller) {
  std::optional<ScopedEnv> definition;
  if (std::string(cpu_int8_gemm()) == "none") definition.emplace("RNNX_CPU_INT8_KERNEL", "scalar");
  Config c = make_config(CellType::lstm, 24, 40, 2, true, DataType::f32, 13);
  c.math = MathMode::int8;
  PlanOptions o = backend_options(Backend::cpu, kPlanThreads);
  o.purpose = PlanPurpose::inference;
  o.cpu.time_loop = o.cpu.input_projection = o.cpu.gemm = "auto";
  const std::vector<int64_t> lengths = {7, 0, 12, 3, 12, 9, 1, 5, 11, 2};
  Network net(c, o);
  Plan plan(c, SequenceShape::padded(12, 10, lengths), o);
  SCOPED_TRACE(plan.impl_name());
  const Data d = make_data(c, lengths, 9);
  const Tensors in = make_tensors(plan, d);
  const Results want = run(plan, in);
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach; ++i) {
        try {
          RunOptions r;
          r.caller_workspace = (t + i) % 2;
          if (!results_identical(run(plan, in, r), want)) ++wrong;
          Buf y(DataType::f32, plan.y_numel(), kNaN);
          ForwardArgs a;
          a.x = in.x.data();
          a.h0 = in.h0.data();
          a.c0 = in.c0.data();
          a.weights = in.w.data();
          a.y = y.data();
          a.weights_version = 1 + (i % 2);  // two versions of the same weights: two copies
          net.forward(plan.shape(), a);
          if (!identical("y", y, want.y)) ++wrong;
        } catch (const std::exception&) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0) << "calls with other bits than a lone caller's";
  EXPECT_EQ(failed.load(), 0) << "calls that threw";
}

// Plans of one problem built at once: each searches or finds the others' choice (the
// in-memory cache and the file behind it are shared), and every plan computes the same.
TEST(Concurrency, PlansBuiltAtOnceShareTheSearchSafely) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("rnnx_concurrency_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(file);
  const ScopedEnv cache("RNNX_AUTOTUNE_CACHE", file.c_str());
  core::autotune_clear_memory();
  const Case pr = cases()[0];
  std::vector<std::unique_ptr<Plan>> plans(kCallers);
  std::vector<std::thread> builders;
  std::atomic<int> failed{0};
  for (int t = 0; t < kCallers; ++t) {
    builders.emplace_back([&, t] {
      try {
        plans[t] = std::make_unique<Plan>(pr.config, pr.shape,
                                          backend_options(Backend::cpu, kPlanThreads));
      } catch (const std::exception&) {
        ++failed;
      }
    });
  }
  for (std::thread& b : builders) b.join();
  ASSERT_EQ(failed.load(), 0);
  const Data d = make_data(pr.config, geometry_of(plans[0]->shape()).lengths, 2);
  const Tensors in = make_tensors(*plans[0], d);
  const Results want = run(*plans[0], in, call_kind(1));
  for (const auto& p : plans) {
    // Plans that chose the same algorithm give the same bits (searches measured at once
    // may see each other as interference and choose differently).
    if (p->impl_name() == plans[0]->impl_name()) {
      EXPECT_TRUE(results_identical(run(*p, in, call_kind(1)), want));
    }
  }
  std::ifstream lines(file);
  std::string line;
  while (std::getline(lines, line)) EXPECT_NE(line.find('\t'), std::string::npos) << line;
  core::autotune_clear_memory();
  std::filesystem::remove(file);
}

// Two processes appending to one cache file: every line comes out whole.
TEST(Concurrency, ProcessesSharingTheCacheFileNeverTearLines) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("rnnx_cache_procs_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(file);
  const ScopedEnv cache("RNNX_AUTOTUNE_CACHE", file.c_str());
  constexpr int kProcesses = 2, kLines = 300;
  const std::string choice(400, 'c');  // long lines: a torn write would show
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kLines; ++i) {
        core::autotune_store("proc" + std::to_string(p) + "-key" + std::to_string(i), choice);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::ifstream in(file);
  std::string line;
  std::map<std::string, int> keys;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << "torn line: " << line.substr(0, 80);
    EXPECT_EQ(line.substr(tab + 1), choice) << "torn line: " << line.substr(0, 80);
    ++keys[line.substr(0, tab)];
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kProcesses * kLines));
  core::autotune_clear_memory();
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace rnnx_test
