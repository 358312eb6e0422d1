// The barrier of the cpu backend's parallel regions (team time loops, the packed GEMMs):
// spins briefly, then sleeps in the kernel. OpenMP's own barrier spins for as long as its
// runtime was told at start-up (libgomp: about 300,000 pause loops, milliseconds), which on
// a shared machine burns the core that a descheduled partner needs: measured with one of 2
// cores busy, a 2-thread LSTM ran 4x slower than idle with libgomp's barrier. Waiting here
// changes the timing only, never what a thread computes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "cpu/spin_pause.hpp"

namespace rnnx::cpu {

class TeamBarrier {
 public:
  // Every thread of a team of `n` calls this with the same n; none returns before all n
  // have arrived. Reusable at once for the next barrier of the same team.
  void wait(int n) {
    if (n <= 1) return;
    const uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
      // The last one: nobody can arrive at the next barrier before the phase moves on. The
      // phase moves under the mutex, so that a sleeper cannot miss it (std::atomic::wait in
      // GCC 12's libstdc++ lost a wake-up in rnnx's thread pool; thread_pool.cpp).
      arrived_.store(0, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(mu_);
        phase_.store(phase + 1, std::memory_order_release);
      }
      cv_.notify_all();
      return;
    }
    // The partner is usually microseconds away: spin for about that long, then sleep.
    for (int i = 0; i < kSpins; ++i) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      spin_pause();
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return phase_.load(std::memory_order_acquire) != phase; });
  }

 private:
  // About 10-60 microseconds of pause instructions (their latency differs by CPU): longer
  // than the imbalance of a step between threads, shorter than a scheduler time slice.
  static constexpr int kSpins = 2048;

  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> phase_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace rnnx::cpu
