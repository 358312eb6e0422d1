// What the cpu backend chooses for every batch of one network (part of its BackendShared,
// cpu_backend.cpp): the algorithm spaces a batch can have, made once, and the choice for each
// size class, so that a batch of new lengths costs no search, no key text and no environment
// read.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include "core/backend.hpp"
#include "cpu/algo.hpp"
#include "cpu/autotune.hpp"

namespace rnnx::cpu {

class NetworkChoices {
 public:
  // Reads the environment's and the options' forced choices and the ISA cap (throws Error
  // naming one it refuses), as a plan did when it was built.
  explicit NetworkChoices(const PlanContext& ctx);

  // The space of ctx's batch: by whether its rows allow team loops and whether its call
  // runs on two or more threads.
  const AlgoSpace& space(const PlanContext& ctx) const;
  // The space of a batch of `batch` rows on one thread or more (`threads`).
  const AlgoSpace& space(int64_t batch, bool threads) const;

  // The choice for ctx's batch among `space`: the one this network made for its size class
  // (batch, steps, tokens; whatever the thread count), else choose_algo's (the process's
  // cache or a search on the calling thread's count), remembered for the class.
  template <typename T>
  AlgoChoice choose(const PlanContext& ctx, const AlgoSpace& space);

 private:
  // The classes a network remembers; past them choose_algo's process cache answers.
  static constexpr size_t kMaxClasses = 4096;
  AlgoSpace spaces_[2][2];  // [team rows][threads]
  std::mutex mutex_;
  std::vector<std::pair<SizeClass, AlgoChoice>> choices_;
};

}  // namespace rnnx::cpu
