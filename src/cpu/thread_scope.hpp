// Sets the OpenMP thread count of the calling thread for a scope (a plan's num_threads for
// one call, or for the search that measures its algorithms) and restores it after.
#pragma once

#include <omp.h>

namespace rnnx::cpu {

class ThreadScope {
 public:
  explicit ThreadScope(int n) : saved_(omp_get_max_threads()), active_(n > 0) {
    if (active_) omp_set_num_threads(n);
  }
  ~ThreadScope() {
    if (active_) omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
  bool active_;
};

}  // namespace rnnx::cpu
