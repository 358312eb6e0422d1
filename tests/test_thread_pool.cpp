// The cpu backend's thread pool (src/cpu/thread_pool.hpp): regions run every share once on
// as many threads as asked for and the budget gives, nest as the calling thread alone,
// carry exceptions out, honour the per-thread counts, and never run more threads at once
// than the budget across concurrent callers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu/thread_pool.hpp"
#include "rnnx/rnnx.hpp"

namespace rnnx {
namespace {

using cpu::parallel_for;
using cpu::parallel_region;

TEST(ThreadPool, EveryShareRunsOnceOnItsOwnThread) {
  const int want = std::max(2, cpu::default_threads());
  std::mutex mu;
  std::set<int> shares;
  std::set<std::thread::id> threads;
  int team = 0;
  parallel_region(want, [&](int th, int n) {
    std::lock_guard<std::mutex> lock(mu);
    shares.insert(th);
    threads.insert(std::this_thread::get_id());
    team = n;
    EXPECT_TRUE(cpu::in_parallel());
    EXPECT_EQ(cpu::max_threads(), 1);
  });
  // Alone, a caller gets what it asks for, past the budget too.
  EXPECT_EQ(team, want);
  EXPECT_EQ(static_cast<int>(shares.size()), want);
  EXPECT_EQ(static_cast<int>(threads.size()), want);
  EXPECT_FALSE(cpu::in_parallel());
}

TEST(ThreadPool, NestedRegionsRunOnTheCallingThread) {
  std::atomic<int> inner_teams{0}, inner_calls{0};
  parallel_region(2, [&](int, int) {
    const std::thread::id me = std::this_thread::get_id();
    parallel_region(4, [&](int th, int n) {
      EXPECT_EQ(std::this_thread::get_id(), me);
      EXPECT_EQ(th, 0);
      inner_teams += n;
      ++inner_calls;
    });
  });
  EXPECT_EQ(inner_teams.load(), inner_calls.load());
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (const int64_t count : {0, 1, 2, 3, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    parallel_for(count, true, [&](int64_t i) { ++hits[static_cast<size_t>(i)]; });
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  }
}

TEST(ThreadPool, AMembersExceptionReachesTheCallerAfterEveryoneIsDone) {
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel_region(2,
                               [&](int th, int) {
                                 if (th == 1) throw std::runtime_error("member");
                                 ++finished;
                               }),
               std::runtime_error);
  EXPECT_THROW(parallel_region(2,
                               [&](int th, int) {
                                 if (th == 0) throw std::runtime_error("caller");
                                 ++finished;
                               }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2 * 1) << "the others' shares ran to the end";
  // The pool still works.
  std::atomic<int> shares{0};
  parallel_region(2, [&](int, int n) { shares += n > 0; });
  EXPECT_GE(shares.load(), 1);
}

TEST(ThreadPool, ThreadCountsArePerThread) {
  const int before = max_threads();
  set_num_threads(3);
  EXPECT_EQ(max_threads(), 3);
  int other = 0;
  std::thread([&] { other = max_threads(); }).join();
  EXPECT_EQ(other, cpu::default_threads()) << "another thread keeps the default";
  {
    cpu::CallScope scope(1);
    EXPECT_EQ(max_threads(), 1);
  }
  EXPECT_EQ(max_threads(), 3);
  set_num_threads(0);
  EXPECT_EQ(max_threads(), cpu::default_threads());
  EXPECT_THROW(set_num_threads(-1), Error);
  set_num_threads(before == cpu::default_threads() ? 0 : before);
}

// Callers of regions as large as the budget, several at once: at no moment do more threads
// run regions than the budget (each waits for a share), and each caller alone still gets the
// whole budget.
TEST(ThreadPool, ConcurrentCallersShareTheBudgetInsteadOfOversubscribing) {
  const int budget = cpu::default_threads();
  if (budget < 2) GTEST_SKIP() << "one CPU: nothing to share";
  cpu::reset_pool_peak();
  std::atomic<int> running{0}, most{0}, full_teams{0};
  const auto caller = [&] {
    for (int call = 0; call < 200; ++call) {
      parallel_region(budget, [&](int, int n) {
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        if (n == budget) ++full_teams;
        volatile double sink = 0;
        for (int i = 0; i < 2000; ++i) sink = sink + i;
        --running;
      });
    }
  };
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) callers.emplace_back(caller);
  for (std::thread& t : callers) t.join();
  EXPECT_LE(most.load(), budget);
  EXPECT_LE(cpu::pool_stats().peak_active, budget);
  EXPECT_GT(full_teams.load(), 0);
  EXPECT_EQ(cpu::pool_stats().active, 0);
}

// Two calls in flight at once (CallScope, as two callers of one plan): each region takes its
// fair share, ceil(budget / 2) threads, so both run side by side; once one call is over, the
// other's regions get the whole budget again.
TEST(ThreadPool, ConcurrentCallsTakeFairSharesOfTheBudget) {
  const int budget = cpu::default_threads();
  if (budget < 2) GTEST_SKIP() << "one CPU: nothing to share";
  const int share = (budget + 1) / 2;
  std::atomic<int> entered{0}, finished{0}, largest{0}, calls_seen{0};
  const auto caller = [&] {
    cpu::CallScope call(0);
    ++entered;
    while (entered.load() < 2) std::this_thread::yield();  // both calls in flight from here
    calls_seen = cpu::pool_stats().calls;
    for (int region = 0; region < 100; ++region) {
      parallel_region(budget, [&](int th, int n) {
        if (th == 0) {
          int seen = largest.load();
          while (n > seen && !largest.compare_exchange_weak(seen, n)) {
          }
        }
        volatile double sink = 0;
        for (int i = 0; i < 2000; ++i) sink = sink + i;
      });
    }
    ++finished;
    while (finished.load() < 2) std::this_thread::yield();  // ... to here
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(calls_seen.load(), 2);
  EXPECT_GE(largest.load(), 1);
  EXPECT_LE(largest.load(), share) << "a region took more than its share while two calls ran";
  EXPECT_EQ(cpu::pool_stats().calls, 0);
  // Alone again: the whole budget.
  cpu::CallScope alone(0);
  int team = 0;
  parallel_region(budget, [&](int th, int n) {
    if (th == 0) team = n;
  });
  EXPECT_EQ(team, budget);
}

// A call inside a call (a wrapper backend's CallScope around the inner backend's) counts once:
// a lone caller keeps the whole budget.
TEST(ThreadPool, NestedCallScopesCountOnce) {
  cpu::CallScope outer(0);
  cpu::CallScope inner(0);
  EXPECT_EQ(cpu::pool_stats().calls, 1);
}

// OMP_NUM_THREADS that is no thread count (run by the thread_env_invalid entry, which sets it
// to "two"): the default is the CPUs this process may run on, and stderr says so once, naming
// the value.
TEST(ThreadPoolEnv, UnusableOmpNumThreadsIsReportedAndIgnored) {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (v == nullptr || std::string(v) != "two")
    GTEST_SKIP() << "needs OMP_NUM_THREADS=two (ctest thread_env_invalid)";
  testing::internal::CaptureStderr();
  const int n = cpu::default_threads();
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_GE(n, 1);
  EXPECT_NE(said.find("OMP_NUM_THREADS (= \"two\")"), std::string::npos) << said;
  EXPECT_NE(said.find("using the " + std::to_string(n) + " CPUs"), std::string::npos) << said;
  testing::internal::CaptureStderr();
  EXPECT_EQ(cpu::default_threads(), n);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "said once";
}

}  // namespace
}  // namespace rnnx
