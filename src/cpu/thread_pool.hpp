// The cpu backend's threads: one process-wide pool of workers that every parallel region of
// the backend runs on (team time loops, GEMMs, row copies, the concurrent directions), in
// place of OpenMP, so that the library loads no threading runtime beside the one of the
// program that uses it (PyTorch from pip brings its own libgomp) and its thread count can
// follow the caller's at call time.
//
// The pool never oversubscribes the machine on its own: a region's threads come out of a
// process-wide budget (default_threads(), the CPUs this process may run on); a region that
// finds the budget spent waits for a slot, then takes what is free, so two callers of
// 2-thread regions on 2 cores never run 4 threads fighting at every per-step barrier. And
// concurrent calls share the budget fairly: while k calls (CallScope) are in flight, a region
// takes at most ceil(budget / k) threads, so two calls on 2 cores run side by side on one
// thread each (as two single-threaded calls would) instead of taking turns with the whole
// budget, each waiting out the other's regions. A call alone gets the whole budget, or more
// by its own request.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rnnx::cpu {

// The default thread count of a call: OMP_NUM_THREADS (its first value, a positive integer)
// if set, else the CPUs in this process's affinity mask. Read once.
int default_threads();

// The calling thread's thread count: 1 inside a parallel region, else its own setting
// (CallScope, rnnx::set_num_threads), else default_threads().
int max_threads();

// Whether the calling thread runs a share of a parallel region of two threads or more.
bool in_parallel();

// The calling thread's own setting: n > 0 sets it, 0 goes back to the default.
void set_thread_count(int n);

// One call of the backend (a forward, a backward, the search that measures a plan's
// algorithms): sets the calling thread's thread count for the call (a plan's num_threads;
// n <= 0 changes nothing) and restores it after, and counts the call among those in flight,
// whose regions share the budget. A call inside a call (a wrapper backend's) counts once.
class CallScope {
 public:
  explicit CallScope(int n);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  int saved_;
  bool active_;
  bool counted_;
};

// What the pool has done, for tests and `rnnx info`: workers ever started, the threads
// running regions now, and the most that ever ran at once (callers and workers), and the
// calls in flight now.
struct PoolStats {
  int workers = 0;
  int active = 0;
  int peak_active = 0;
  int calls = 0;
};
PoolStats pool_stats();
// Sets the peak back to the threads running now.
void reset_pool_peak();

namespace detail {
using TeamFn = void (*)(const void* body, int th, int n);
// Runs fn(body, th, n) for th in [0, n) on a team of at most `want` threads, the caller being
// th 0; rethrows the first exception a member threw once every member is done.
void run_team(int want, TeamFn fn, const void* body);
}  // namespace detail

// body(th, n) for th in [0, n) on a team of n <= want threads: the calling thread alone when
// want <= 1 or inside a region (no nesting), else the caller and n - 1 workers, as many as the
// budget gives. Members see in_parallel() and max_threads() == 1.
template <typename Body>
void parallel_region(int want, const Body& body) {
  if (want <= 1 || in_parallel()) {
    body(0, 1);
    return;
  }
  detail::run_team(
      want, [](const void* b, int th, int n) { (*static_cast<const Body*>(b))(th, n); }, &body);
}

// body(i) for i in [0, count), in n contiguous blocks of as equal sizes as possible (OpenMP's
// schedule(static)), on max_threads() threads when `parallel` holds, else in order on the
// calling thread.
template <typename Body>
void parallel_for(int64_t count, bool parallel, const Body& body) {
  const int want = parallel ? static_cast<int>(std::min<int64_t>(max_threads(), count)) : 1;
  parallel_region(want, [&](int th, int n) {
    const int64_t begin = count * th / n, end = count * (th + 1) / n;
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

}  // namespace rnnx::cpu
