// The algorithm search of the cpu backend: which Algo (algo.hpp) a plan runs, chosen by
// measurement the first time a problem is seen and remembered (core/autotune_cache.hpp).
#pragma once

#include <string>

#include "core/backend.hpp"
#include "cpu/algo.hpp"

namespace rnnx::cpu {

struct AlgoChoice {
  Algo algo;
  bool searched = false;  // chosen by measurement (now or from the cache), not the heuristic
};

// The choice for this plan among `space` (algo_space(ctx)). With RNNX_AUTOTUNE=0, or a
// single candidate, the heuristic. Otherwise the cached choice for the problem's key when
// it is still a candidate, else a search: starting from the heuristic, one choice at a time
// (engine, time loop, directions, input projection) is changed and kept when a training
// forward + backward on synthetic data of the plan's own shape runs at least 3% faster, in
// a first and in a second, paired measurement of both (each the best of two runs after one
// warm-up; one run when a run takes over 0.2 s). A problem of more than 32 steps is
// measured with its lengths scaled down to 32 steps (autotune.cpp, search_context). When
// two measurements of one candidate differ by more than 1.5x (RNNX_AUTOTUNE_SPREAD),
// something else took the cores: the plan, and every later plan of the key in this
// process, gets the heuristic (searched = false); the file is not written.
template <typename T>
AlgoChoice choose_algo(const PlanContext& ctx, const AlgoSpace& space);

// The key a problem's choice is stored under: every value that can change which algorithm
// is fastest (the config, math mode, batch, threads, ISA, forced choices, rnnx version; steps and
// real tokens, of the problem the search measures, to a quarter octave), but not the exact
// lengths, so that the batches of an epoch with different lengths share one search.
std::string autotune_key(const PlanContext& ctx);

// The sizes in that key: batch, steps and real tokens of the problem the search measures to
// a quarter octave, and threads. Batches of one network in one class share a choice
// (network_choices.hpp keeps it without making the key's text).
struct SizeClass {
  int64_t batch = 0;
  long steps = 0;
  long tokens = 0;
  int threads = 0;
  bool operator==(const SizeClass&) const = default;
};
SizeClass size_class(const PlanContext& ctx);

// Whether the plan searches: its cpu choice `search` ("on", "off", "auto" = on), else
// RNNX_AUTOTUNE. Throws Error(invalid_argument) naming the choice for another value.
bool search_enabled(const PlanContext& ctx);

}  // namespace rnnx::cpu
