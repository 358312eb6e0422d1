// The cuDNN algorithm search (cudnn_search.hpp). Each candidate runs what the plan is built
// for (PlanOptions::purpose: a training step, i.e. training forward then backward with weight
// gradients, or an inference forward) through the backend itself, so that the search
// measures, and checks, exactly the calls the plan will make.
#include "cuda/cudnn_search.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/autotune_cache.hpp"
#include "core/fastest_candidate.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/kernels.hpp"
#include "cuda/rules/cudnn_layout.hpp"
#include "rnnx/convert.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cuda {
namespace {

constexpr int kRuns = 5;  // timed steps per candidate, after one untimed

struct Device {
  core::Buffer x, w, y, dy, dx, dw, reserve, workspace;
};

core::Buffer device_bytes(size_t n) {
  return device_memory().allocate(std::max<size_t>(n, 1), "algorithm search");
}

EventOwner make_event() {
  cudaEvent_t e = nullptr;
  check(calls().cudaEventCreate(&e), "cudaEventCreate");
  return EventOwner(e);
}

class Search {
 public:
  explicit Search(const PlanContext& ctx)
      : ctx_(ctx),
        elem_(dtype_size(ctx.config.dtype)),
        training_(ctx.options.purpose == PlanPurpose::training) {
    const DataType dt = ctx.config.dtype;
    d_.x = device_bytes(bytes(ctx.x_numel()));
    d_.w = device_bytes(bytes(ctx.weights.numel()));
    d_.y = device_bytes(bytes(ctx.y_numel()));
    if (training_) {
      d_.dy = device_bytes(bytes(ctx.y_numel()));
      d_.dx = device_bytes(bytes(ctx.x_numel()));
      d_.dw = device_bytes(bytes(ctx.weights.numel()));
      fill_pattern(dt, d_.dy.get(), ctx.y_numel(), 3, 1.0, nullptr);
    }
    fill_pattern(dt, d_.x.get(), ctx.x_numel(), 1, 1.0, nullptr);
    fill_pattern(dt, d_.w.get(), ctx.weights.numel(), 2,
                 1.0 / std::sqrt(static_cast<double>(ctx.config.hidden_size)), nullptr);
  }

  // The median time of one step of `b` (training step or inference forward), and its y in
  // `y` (host, as doubles).
  double measure(BackendImpl& b, std::vector<double>* y) {
    if (training_) d_.reserve = device_bytes(b.reserve_size());
    d_.workspace = device_bytes(
        training_ ? std::max(b.forward_workspace_size(true), b.backward_workspace_size())
                  : b.forward_workspace_size(false));
    EventOwner start = make_event(), stop = make_event();
    std::vector<float> times;
    for (int run = 0; run <= kRuns; ++run) {
      check(calls().cudaEventRecord(start.get(), nullptr), "cudaEventRecord");
      step(b);
      check(calls().cudaEventRecord(stop.get(), nullptr), "cudaEventRecord");
      check(calls().cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
      float ms = 0;
      check(calls().cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
      if (run > 0) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    read_y(y);
    return times[times.size() / 2];
  }

 private:
  size_t bytes(int64_t elems) const { return static_cast<size_t>(elems * elem_); }
  void step(BackendImpl& b) {
    ForwardArgs f;
    f.x = d_.x.get();
    f.weights = d_.w.get();
    f.y = d_.y.get();
    f.training = training_;
    if (training_) {
      f.reserve = d_.reserve.get();
      f.reserve_size = b.reserve_size();
    }
    b.forward(f, d_.workspace.get());
    if (!training_) return;
    BackwardArgs k;
    k.x = d_.x.get();
    k.weights = d_.w.get();
    k.dy = d_.dy.get();
    k.dx = d_.dx.get();
    k.dweights = d_.dw.get();
    k.reserve = d_.reserve.get();
    k.reserve_size = b.reserve_size();
    b.backward(k, d_.workspace.get(), 0);
  }
  // y as doubles whatever the plan's data type: the raw bytes (elem_ each) converted by
  // read_values, so 16-bit outputs are read as halves, not as pairs taken for floats.
  void read_y(std::vector<double>* y) const {
    const int64_t n = ctx_.y_numel();
    std::vector<unsigned char> raw(bytes(n));
    device_memory().copy_to_host(raw.data(), d_.y.get(), raw.size(), nullptr);
    y->assign(static_cast<size_t>(n), 0.0);
    read_values(ctx_.config.dtype, raw.data(), y->data(), n);
  }

  const PlanContext& ctx_;
  int64_t elem_;
  bool training_;  // what the plan is for (PlanOptions::purpose): what a step runs
  Device d_;
};

}  // namespace

std::unique_ptr<BackendImpl> with_fastest_cudnn_algorithm(const PlanContext& ctx,
                                                          const CudnnBackendMaker& make) {
  const CudnnBatch batch = cudnn_batch(ctx.shape, ctx.schedule, ctx.config);
  const std::vector<CudnnAlgo> candidates = cudnn_algorithm_candidates(ctx.config, batch);
  std::unique_ptr<BackendImpl> standard = make(CudnnAlgo::standard);
  if (candidates.size() < 2 || !core::autotune_enabled()) return standard;

  cudaDeviceProp prop{};
  check(calls().cudaGetDeviceProperties(&prop, current_device()), "cudaGetDeviceProperties");
  const std::string key =
      cudnn_autotune_key(ctx.config, ctx.math, batch, ctx.options.purpose, prop.name,
                         static_cast<int>(calls().cudnnGetVersion()));
  const double spread_limit = core::interference_spread();
  if (const auto text = core::autotune_lookup(key)) {
    if (*text == core::kDisturbedSearch) return standard;
    const auto algo = cudnn_algo_from_string(*text);
    if (algo == CudnnAlgo::standard) return standard;
    if (algo && std::find(candidates.begin(), candidates.end(), *algo) != candidates.end()) {
      try {
        return make(*algo);
      } catch (const Error&) {
        // Cached by another cuDNN build or driver that took it: search again below.
      }
    }
  }
  try {
    Search search(ctx);
    // The backends of the two candidates measured last (an incumbent and its challenger are
    // measured in pairs), each built once while it is in use: the others are let go, so that
    // the search holds at most two beside the plan's memory.
    std::vector<std::pair<CudnnAlgo, std::unique_ptr<BackendImpl>>> built;
    built.emplace_back(CudnnAlgo::standard, std::move(standard));
    const auto backend_of = [&](CudnnAlgo algo) -> BackendImpl& {
      auto it =
          std::find_if(built.begin(), built.end(), [&](const auto& e) { return e.first == algo; });
      if (it == built.end()) {
        if (built.size() == 2) built.erase(built.begin());
        built.emplace_back(algo, make(algo));
      } else {
        std::rotate(it, it + 1, built.end());  // most recently used last
      }
      return *built.back().second;
    };
    // STANDARD's y (its first measurement) is what every other candidate must reproduce,
    // within what the tests allow the plan against the reference (cudnn_algorithm.hpp).
    std::vector<double> want, got;
    const double tolerance = cudnn_candidate_tolerance(ctx.config, ctx.math, batch);
    const auto measure = [&](CudnnAlgo algo) -> std::optional<double> {
      const bool reference = algo == CudnnAlgo::standard && want.empty();
      try {
        const double t = search.measure(backend_of(algo), reference ? &want : &got);
        if (!reference && !cudnn_candidate_agrees(got, want, tolerance)) return std::nullopt;
        return t;
      } catch (const Error& e) {
        if (e.code() == Status::out_of_memory || reference) throw;
        calls().cudaGetLastError();  // cuDNN refused the candidate: it is not one
        return std::nullopt;
      }
    };
    const auto others = [&](CudnnAlgo from) {
      std::vector<CudnnAlgo> out;
      for (CudnnAlgo c : candidates) {
        if (c != from) out.push_back(c);
      }
      return out;
    };
    const std::optional<CudnnAlgo> chosen =
        core::fastest_candidate(CudnnAlgo::standard, measure, others, spread_limit);
    if (!chosen) {
      // Measured under interference: STANDARD for this key in this process, nothing in the
      // file (core/fastest_candidate.hpp).
      core::autotune_remember(key, core::kDisturbedSearch);
      return make(CudnnAlgo::standard);
    }
    core::autotune_store(key, to_string(*chosen));
    for (auto& [algo, backend] : built) {
      if (algo == *chosen) return std::move(backend);
    }
    return make(*chosen);
  } catch (const Error& e) {
    if (e.code() == Status::out_of_memory) throw;
    return make(CudnnAlgo::standard);
  }
}

}  // namespace rnnx::cuda
