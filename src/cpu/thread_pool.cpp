// The cpu backend's thread pool (thread_pool.hpp): workers started on demand and kept, a
// process-wide budget of running threads, per-thread thread counts.
#include "cpu/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cpu/spin_pause.hpp"

namespace rnnx::cpu {
namespace {

// The calling thread's setting (0: the default), and whether it runs a share of a region.
thread_local int t_thread_count = 0;
thread_local bool t_in_region = false;
// Whether the calling thread is inside a CallScope (an inner one does not count again).
thread_local bool t_in_call = false;

int parse_positive(const char* v) {
  if (v == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);  // OMP_NUM_THREADS may be a list: "4,2"
  if (end == v || (*end != '\0' && *end != ',') || n <= 0 || n > 4096) return 0;
  return static_cast<int>(n);
}

int cpus_available() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

// OMP_WAIT_POLICY=PASSIVE (which the test command sets for its parallel ctest runs) makes
// the pool sleep at once instead of spinning first.
int spin_count() {
  static const int spins = [] {
    const char* v = std::getenv("OMP_WAIT_POLICY");
    return v != nullptr && std::string(v) == "PASSIVE" ? 0 : 4096;
  }();
  return spins;
}

// A worker and the caller that hands it a job meet here: the job counters, and for the
// sleeping side a mutex and a condition variable. The counters change under the mutex, so a
// sleeper cannot miss the change (std::atomic::wait in GCC 12's libstdc++ lost a wake-up
// here: a stress run hung with the caller asleep on `done` and the worker asleep on `go`).
struct Worker {
  std::atomic<uint32_t> go{0};    // jobs handed out
  std::atomic<uint32_t> done{0};  // jobs finished
  std::mutex mu;
  std::condition_variable cv;
  detail::TeamFn fn = nullptr;
  const void* body = nullptr;
  int th = 0, n = 0;
  std::exception_ptr error;

  // Waits until counter no longer holds `old`: spins about as long as a region's imbalance
  // (tens of microseconds), then sleeps.
  void wait_while_equal(const std::atomic<uint32_t>& counter, uint32_t old) {
    for (int i = spin_count(); i > 0; --i) {
      if (counter.load(std::memory_order_acquire) != old) return;
      spin_pause();
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return counter.load(std::memory_order_acquire) != old; });
  }

  void advance(std::atomic<uint32_t>& counter, uint32_t value) {
    {
      std::lock_guard<std::mutex> lock(mu);
      counter.store(value, std::memory_order_release);
    }
    cv.notify_all();  // the other party, if it sleeps (at most one sleeper per counter)
  }

  void loop() {
    t_in_region = true;  // whatever a worker runs, it runs inside a region
    uint32_t seen = 0;
    for (;;) {
      wait_while_equal(go, seen);
      seen = go.load(std::memory_order_acquire);
      try {
        fn(body, th, n);
      } catch (...) {
        error = std::current_exception();
      }
      advance(done, seen);
    }
  }
};

struct Pool {
  std::mutex mu;
  std::condition_variable slot_freed;
  std::vector<std::unique_ptr<Worker>>
      workers;  // never shrinks: threads live as long as the process
  std::vector<Worker*> idle;
  int budget = default_threads();
  int active = 0, peak = 0;
  int calls = 0;  // CallScopes in flight

  // Under mu. The threads that may run regions at once: the budget, or more for a call alone
  // that asks for more (`want`).
  int limit(int want) const { return calls <= 1 ? std::max(budget, want) : budget; }
  // Under mu. The most threads one region may take: the limit for a call alone; with k calls
  // in flight, ceil(budget / k), at least the caller.
  int share(int want) const {
    return calls <= 1 ? limit(want) : std::max(1, (budget + calls - 1) / calls);
  }

  // Under mu. Throws (std::bad_alloc, std::system_error) when no worker can be started,
  // leaving the pool as it was.
  Worker* take_idle() {
    if (idle.empty()) {
      workers.reserve(workers.size() + 1);  // so that nothing throws once the thread runs
      idle.reserve(workers.size() + 1);     // room for every worker: giving back never allocates
      auto w = std::make_unique<Worker>();
      std::thread(&Worker::loop, w.get()).detach();
      workers.push_back(std::move(w));
      return workers.back().get();
    }
    Worker* w = idle.back();
    idle.pop_back();
    return w;
  }
};

// The most threads one region runs on (more are asked for as this many).
constexpr int kMaxTeam = 256;

// Never destroyed (its workers may still be asleep at exit); a forked child, which has none
// of the parent's threads, starts a pool of its own.
Pool* g_pool = nullptr;
std::once_flag g_pool_once;

Pool& pool() {
  std::call_once(g_pool_once, [] {
    g_pool = new Pool;
    pthread_atfork(nullptr, nullptr, [] { g_pool = new Pool; });
  });
  return *g_pool;
}

}  // namespace

int default_threads() {
  static const int n = [] {
    const char* v = std::getenv("OMP_NUM_THREADS");
    const int env = parse_positive(v);
    if (env > 0) return env;
    const int cpus = cpus_available();
    // Set but unusable: said once on stderr, as OpenMP runtimes do (the variable is shared
    // with them, so refusing every call over it would stop programs that run fine).
    if (v != nullptr && *v != '\0') {
      std::fprintf(stderr,
                   "rnnx: OMP_NUM_THREADS (= \"%s\") is not a thread count from 1 to 4096 (or a "
                   "list starting with one); using the %d CPUs this process may run on\n",
                   v, cpus);
    }
    return cpus;
  }();
  return n;
}

int max_threads() {
  if (t_in_region) return 1;
  return t_thread_count > 0 ? t_thread_count : default_threads();
}

bool in_parallel() {
  return t_in_region;
}

void set_thread_count(int n) {
  t_thread_count = n > 0 ? n : 0;
}

CallScope::CallScope(int n) : saved_(t_thread_count), active_(n > 0), counted_(!t_in_call) {
  if (active_) t_thread_count = n;
  if (counted_) {
    t_in_call = true;
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    ++p.calls;
  }
}

CallScope::~CallScope() {
  if (active_) t_thread_count = saved_;
  if (counted_) {
    t_in_call = false;
    Pool& p = pool();
    {
      std::lock_guard<std::mutex> lock(p.mu);
      --p.calls;
    }
    p.slot_freed.notify_all();  // a waiting region's share may have grown
  }
}

PoolStats pool_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  return {static_cast<int>(p.workers.size()), p.active, p.peak, p.calls};
}

void reset_pool_peak() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.peak = p.active;
}

namespace detail {

void run_team(int want, TeamFn fn, const void* body) {
  Pool& p = pool();
  // On the stack: a call with the caller's workspace allocates nothing (the workers are
  // started once, by the first regions that need them).
  std::array<Worker*, kMaxTeam - 1> team;
  int helpers = 0;
  want = std::min(want, kMaxTeam);
  {
    std::unique_lock<std::mutex> lock(p.mu);
    // A call alone may exceed the budget by its own request; otherwise a region waits for a
    // slot (slot holders never wait: nothing nests inside a region), then takes its share of
    // what is free.
    p.slot_freed.wait(lock, [&] { return p.active < p.limit(want); });
    const int asked = std::min({want, p.limit(want) - p.active, p.share(want)}) - 1;
    try {
      for (; helpers < asked; ++helpers) team[static_cast<size_t>(helpers)] = p.take_idle();
    } catch (...) {
      // Out of memory or of threads: the region runs on the workers it has (the same
      // results on any team size), down to the caller alone.
    }
    p.active += 1 + helpers;
    p.peak = std::max(p.peak, p.active);
  }
  const int n = helpers + 1;
  for (int i = 0; i < helpers; ++i) {
    Worker* w = team[static_cast<size_t>(i)];
    w->fn = fn;
    w->body = body;
    w->th = i + 1;
    w->n = n;
    w->error = nullptr;
    w->advance(w->go, w->go.load(std::memory_order_relaxed) + 1);
  }
  std::exception_ptr error;
  t_in_region = true;  // a caller is never inside a region here (parallel_region checked)
  try {
    fn(body, 0, n);
  } catch (...) {
    error = std::current_exception();
  }
  t_in_region = false;
  for (int i = 0; i < helpers; ++i) {
    Worker* w = team[static_cast<size_t>(i)];
    const uint32_t job = w->go.load(std::memory_order_relaxed);
    for (uint32_t d = w->done.load(std::memory_order_acquire); d != job;
         d = w->done.load(std::memory_order_acquire)) {
      w->wait_while_equal(w->done, d);
    }
    if (!error && w->error) error = w->error;
    w->error = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    // idle's capacity is the workers' count: never allocates.
    for (int i = 0; i < helpers; ++i) p.idle.push_back(team[static_cast<size_t>(i)]);
    p.active -= n;
  }
  p.slot_freed.notify_all();
  if (error) std::rethrow_exception(error);
}

}  // namespace detail
}  // namespace rnnx::cpu
