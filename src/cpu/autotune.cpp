// The cpu backend's algorithm search (autotune.hpp): candidates from algo.cpp, measured on
// synthetic data with the plan's own sizes and threads, remembered by core/autotune_cache.
#include "cpu/autotune.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <vector>

#include "core/autotune_cache.hpp"
#include "core/fastest_candidate.hpp"
#include "core/memory.hpp"
#include "cpu/buffers.hpp"
#include "cpu/passes.hpp"
#include "cpu/plan_spec.hpp"
#include "cpu/thread_pool.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"
#include "rnnx/version.hpp"

namespace rnnx::cpu {
namespace {

// 64-byte aligned bytes, as a plan's own workspace is.
struct AlignedBytes {
  core::HostBuffer data;
  explicit AlignedBytes(size_t n) : data(core::allocate_host(n, "algorithm search")) {}
  char* get() const { return static_cast<char*>(data.get()); }
};

// Deterministic values in [-scale, scale): the search's inputs (their values do not change
// the work, only keep it free of denormals and NaN).
template <typename T>
std::vector<T> synthetic(int64_t n, double scale, uint64_t seed) {
  std::vector<T> v(static_cast<size_t>(n));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (T& e : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    e = static_cast<T>(scale * (static_cast<double>(s >> 11) * 0x1.0p-53 * 2.0 - 1.0));
  }
  return v;
}

// Reserve layout and sizes of one candidate.
template <typename T>
struct Sized {
  PlanSpec problem;
  size_t reserve = 0, workspace = 0;
  Sized(const PlanContext& ctx, const Algo& algo, Isa isa) : problem(ctx, algo, isa) {
    const BufferSizes s = lay_out_buffers<T>(problem);
    reserve = s.reserve;
    // An inference forward keeps in its workspace what a training one keeps in the reserve,
    // so its workspace can be the largest of the three.
    workspace = std::max({s.forward[0], s.forward[1], s.backward});
  }
};

// The tensors and buffers of one problem, shared by every candidate (allocated and first
// touched once, so that no candidate pays for page faults).
template <typename T>
struct SearchData {
  std::vector<T> x, w, y, dy, dx, dw;
  AlignedBytes reserve, workspace;
  bool training;  // what the plan is built for (PlanOptions::purpose): what is measured
  SearchData(const PlanContext& ctx, size_t reserve_bytes, size_t workspace_bytes)
      : x(synthetic<T>(ctx.x_numel(), 1.0, 1)),
        w(synthetic<T>(ctx.weights.numel(), 1.0 / std::sqrt(double(ctx.config.hidden_size)), 2)),
        y(static_cast<size_t>(ctx.y_numel())),
        dy(synthetic<T>(ctx.y_numel(), 1.0, 3)),
        dx(static_cast<size_t>(ctx.x_numel())),
        dw(static_cast<size_t>(ctx.weights.numel())),
        reserve(reserve_bytes),
        workspace(workspace_bytes),
        training(ctx.options.purpose == PlanPurpose::training) {}
};

// Seconds of one training forward + backward (an inference forward for a plan built for
// inference), best of `runs`.
template <typename T>
double measure(const Sized<T>& c, SearchData<T>& d, int runs) {
  ForwardArgs f;
  f.x = d.x.data();
  f.weights = d.w.data();
  f.y = d.y.data();
  f.training = d.training;
  f.workspace = d.workspace.get();
  f.workspace_size = c.workspace;
  f.reserve = d.training ? d.reserve.get() : nullptr;
  f.reserve_size = d.training ? c.reserve : 0;
  BackwardArgs b;
  b.x = d.x.data();
  b.weights = d.w.data();
  b.dy = d.dy.data();
  b.dx = d.dx.data();
  b.dweights = d.dw.data();
  b.workspace = d.workspace.get();
  b.workspace_size = c.workspace;
  b.reserve = d.reserve.get();
  b.reserve_size = c.reserve;
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run_forward<T>(c.problem, f, d.workspace.get());
    if (d.training) run_backward<T>(c.problem, b, d.workspace.get(), 0);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// A choice read back from the cache is used only if it is still one of the candidates
// (the environment or the machine may have changed since it was stored).
bool is_candidate(const AlgoSpace& space, const Algo& a) {
  return std::find(space.candidates.begin(), space.candidates.end(), a) != space.candidates.end();
}

// The candidates that differ from `from` in one choice only.
std::vector<Algo> neighbours(const AlgoSpace& space, const Algo& from) {
  std::vector<Algo> out;
  for (const Algo& c : space.candidates) {
    const int differ = (c.engine != from.engine) + (c.team_loops != from.team_loops) +
                       (c.concurrent_dirs != from.concurrent_dirs) + (c.input != from.input);
    // Changing the engine may force the engine-bound choices along (team, input split).
    if (differ == 1 || (c.engine != from.engine && differ >= 1)) out.push_back(c);
  }
  return out;
}

// The fastest candidate (core/fastest_candidate.hpp's rules), or nothing when the
// measurements show interference.
template <typename T>
std::optional<Algo> search(const PlanContext& ctx, const AlgoSpace& space) {
  const double spread_limit = core::interference_spread();
  cpu::CallScope call(ctx.options.num_threads);
  std::vector<std::unique_ptr<Sized<T>>> sized;
  size_t reserve = 0, workspace = 0;
  for (const Algo& a : space.candidates) {
    sized.push_back(std::make_unique<Sized<T>>(ctx, a, space.isa));
    reserve = std::max(reserve, sized.back()->reserve);
    workspace = std::max(workspace, sized.back()->workspace);
  }
  auto sized_of = [&](const Algo& a) -> const Sized<T>& {
    const size_t i =
        std::find(space.candidates.begin(), space.candidates.end(), a) - space.candidates.begin();
    return *sized[i];
  };
  SearchData<T> data(ctx, reserve, workspace);
  // A warm-up run (first touch of the buffers, the thread pool), then the best of two runs
  // per measurement, or one for problems whose single run is long: the search then costs a
  // few runs of the problem whatever its size.
  const double warm = measure<T>(sized_of(space.heuristic), data, 1);
  const int runs = warm > 0.2 ? 1 : 2;
  return core::fastest_candidate(
      space.heuristic,
      [&](const Algo& a) -> std::optional<double> { return measure<T>(sized_of(a), data, runs); },
      [&](const Algo& from) { return neighbours(space, from); }, spread_limit);
}

// Sizes that differ by less than a quarter octave share a key.
long quarter_octave(int64_t n) {
  return std::lround(4.0 * std::log2(std::max<int64_t>(n, 1)));
}

// The most steps a search runs. The candidates differ in what a step costs (the step
// GEMM's engine, the input projection's split, team loops, concurrent directions) and in
// work that follows the tokens; scaling every length by the same factor keeps how many rows
// each step has, in the same proportions, so the shortened problem ranks the candidates as
// the long one does, at a fraction of the cost. A stream of batches whose lengths change
// every step (a training job) then pays little for its searches.
constexpr int64_t kSearchSteps = 32;

// The problem a search measures: the plan's own, with lengths scaled to at most
// kSearchSteps steps (rounded up, so that no sequence vanishes; 0 stays 0).
PlanContext search_context(const PlanContext& ctx) {
  const core::Schedule& s = ctx.schedule;
  if (s.T_eff <= kSearchSteps) return ctx;
  std::vector<int64_t> lengths(static_cast<size_t>(s.B));
  for (int64_t i = 0; i < s.B; ++i) {
    const int64_t len = s.sorted_lengths[static_cast<size_t>(i)];
    lengths[static_cast<size_t>(s.sorted_to_orig[static_cast<size_t>(i)])] =
        (len * kSearchSteps + s.T_eff - 1) / s.T_eff;
  }
  SequenceShape shape;
  if (ctx.shape.layout == Layout::packed) {
    // Scaling keeps the order, so the caller's sorted_indices still hold.
    std::vector<int64_t> batch_sizes(static_cast<size_t>(kSearchSteps), 0);
    for (int64_t len : lengths) {
      for (int64_t t = 0; t < len; ++t) ++batch_sizes[static_cast<size_t>(t)];
    }
    shape = SequenceShape::packed(std::move(batch_sizes), ctx.shape.sorted_indices);
  } else {
    shape = SequenceShape::padded(kSearchSteps, s.B, std::move(lengths),
                                  ctx.shape.layout == Layout::batch_first);
  }
  core::Schedule schedule = core::make_schedule(shape);
  return PlanContext{ctx.config,  std::move(shape), std::move(schedule),
                     ctx.weights, ctx.options,      ctx.math};
}

// The key of a problem as search_context() shortened it.
std::string key_of(const PlanContext& probe, const AlgoSpace& space) {
  const Config& c = probe.config;
  const SizeClass size = size_class(probe);
  std::ostringstream k;
  k << "rnnx-" RNNX_VERSION_STRING " cpu " << core::config_search_key(c)
    << " bf16=" << (probe.math == MathMode::allow_conversion) << " B=" << size.batch << " T~"
    << size.steps << " tokens~" << size.tokens << " threads=" << size.threads
    << " isa=" << isa_name(space.isa) << " for=" << to_string(probe.options.purpose);
  if (!space.forced.empty()) k << " forced=" << space.forced;
  return k.str();
}

}  // namespace

SizeClass size_class(const PlanContext& ctx) {
  // search_context()'s scaling, counted without making its shape.
  const core::Schedule& s = ctx.schedule;
  int64_t steps = s.T_eff, tokens = s.tokens;
  if (s.T_eff > kSearchSteps) {
    steps = kSearchSteps;
    tokens = 0;
    for (int64_t len : s.sorted_lengths) tokens += (len * kSearchSteps + s.T_eff - 1) / s.T_eff;
  }
  return {s.B, quarter_octave(steps), quarter_octave(tokens), plan_threads(ctx)};
}

std::string autotune_key(const PlanContext& ctx) {
  return key_of(search_context(ctx), algo_space(ctx));
}

bool search_enabled(const PlanContext& ctx) {
  const std::string& v = ctx.options.cpu.search;
  if (v.empty()) return core::autotune_enabled();  // RNNX_AUTOTUNE
  if (v == "on" || v == "auto") return true;
  if (v == "off") return false;
  throw Error(Status::invalid_argument,
              "cpu choice search (= \"" + v + "\") must be on, off, or auto");
}

template <typename T>
AlgoChoice choose_algo(const PlanContext& ctx, const AlgoSpace& space) {
  // The plan's search choice is checked even where there is nothing to choose from.
  const bool searching = search_enabled(ctx);
  if (space.candidates.size() < 2 || !searching || ctx.schedule.tokens == 0) {
    return {space.heuristic, false};
  }
  const PlanContext probe = search_context(ctx);
  const std::string key = key_of(probe, space);
  Algo cached;
  if (auto text = core::autotune_lookup(key)) {
    if (*text == core::kDisturbedSearch) return {space.heuristic, false};
    if (parse_algo(*text, &cached) && is_candidate(space, cached)) return {cached, true};
  }
  const std::optional<Algo> chosen = search<T>(probe, space);
  if (!chosen) {
    // Measured under interference: the heuristic, for every plan of this key in this
    // process (plans of one problem keep computing the same bits), and nothing in the file,
    // so that the next process searches again.
    core::autotune_remember(key, core::kDisturbedSearch);
    return {space.heuristic, false};
  }
  core::autotune_store(key, algo_name(*chosen, sizeof(T) == sizeof(float), space.isa));
  return {*chosen, true};
}

template AlgoChoice choose_algo<float>(const PlanContext&, const AlgoSpace&);
template AlgoChoice choose_algo<double>(const PlanContext&, const AlgoSpace&);

}  // namespace rnnx::cpu
