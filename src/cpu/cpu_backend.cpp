// The fast CPU backend behind a Plan: sizes every buffer at plan time and runs the
// forward and backward passes of passes.hpp, float32 on rnnx's packed AVX-512 GEMM (or
// oneDNN's sgemm, or rnnx's plain loops), float64 on a BLAS's dgemm (or the plain loops).
#include "cpu/cpu_backend.hpp"

#include <string>
#include <type_traits>

#include "core/backend.hpp"
#include "core/backend_registry.hpp"
#include "cpu/autotune.hpp"
#include "cpu/buffers.hpp"
#include "cpu/gemm.hpp"
#include "cpu/half_data_backend.hpp"
#include "cpu/kept_weights.hpp"
#include "cpu/network_choices.hpp"
#include "cpu/passes.hpp"
#include "cpu/plan_spec.hpp"
#include "cpu/thread_pool.hpp"
#include "rnnx/error.hpp"
#include "rnnx/version.hpp"

namespace rnnx {
namespace {

// The cpu backend's state for every batch of one network (core/backend.hpp): its choices and
// its kept copies of packed weights.
struct CpuNetwork final : BackendShared {
  explicit CpuNetwork(const PlanContext& ctx) : choices(ctx) {}
  cpu::NetworkChoices choices;
  cpu::KeptWeights kept;
};

template <typename T>
class CpuBackend final : public BackendImpl {
 public:
  explicit CpuBackend(const PlanContext& ctx)
      : BackendImpl(ctx),
        network_(ctx.shared->get<CpuNetwork>([&] { return std::make_unique<CpuNetwork>(ctx); })),
        choices_(network_.choices),
        problem_(ctx, choices_.space(ctx).isa) {
    rebind();
  }

  // cpu:{isa}/{algorithm}[/onnx-cell][/tuned] (docs/cpu.md): the step kernels' ISA, the
  // GEMM engine and how the loops run (algo.hpp), the generic step kernels for ONNX's cell
  // options, and whether the search chose the algorithm.
  std::string name() const override {
    return std::string("cpu:") + cpu::isa_name(problem_.isa) + "/" +
           cpu::algo_name(choice_.algo, sizeof(T) == sizeof(float), problem_.isa) +
           (problem_.extended_cell ? "/onnx-cell" : "") + (choice_.searched ? "/tuned" : "");
  }
  // What name() spells, as numbers (the ISA and the cell kind are the network's).
  uint64_t choice_id() const override {
    const cpu::Algo& a = choice_.algo;
    return static_cast<uint64_t>(a.engine) | uint64_t{a.team_loops} << 8 |
           uint64_t{a.concurrent_dirs} << 9 | static_cast<uint64_t>(a.input) << 10 |
           uint64_t{choice_.searched} << 16 | static_cast<uint64_t>(problem_.isa) << 17;
  }
  size_t kept_bytes() const override { return network_.kept.bytes(); }
  size_t forward_workspace_size(bool training) const override { return sizes_.forward[training]; }
  size_t backward_workspace_size() const override { return sizes_.backward; }
  size_t reserve_size() const override { return sizes_.reserve; }

  // The choice for the batch the context now holds (the network's for its size class), and
  // the sizes: the largest any candidate of either thread count needs, so that they depend on
  // the problem only, never on what the search measured or on the calling thread's count (a
  // framework may size buffers from another plan of the same problem, or ask a network for a
  // shape's sizes on one thread count and call it on another; results must be
  // reproducible). Allocates nothing once the caller_rows vector has room for the batch.
  bool rebind() override {
    const cpu::AlgoSpace& space = choices_.space(ctx_);
    choice_ = choices_.choose<T>(ctx_, space);
    problem_.bind_batch();
    sizes_ = {};
    for (const bool threads : {false, true}) {
      for (const cpu::Algo& a : choices_.space(ctx_.schedule.B, threads).candidates) {
        if (a == choice_.algo) continue;
        problem_.set_algo(a);
        sizes_.widen(cpu::lay_out_buffers<T>(problem_));
      }
    }
    // The chosen one last: it records where the reserve's layers start.
    problem_.set_algo(choice_.algo);
    sizes_.widen(cpu::lay_out_buffers<T>(problem_));
    return true;
  }

  // Each call runs on the plan's thread count (PlanOptions::num_threads).
  // With a weights version, the network's packed copy of the weights where it has one.
  void forward(const ForwardArgs& args, void* workspace) override {
    cpu::CallScope call(ctx_.options.num_threads);
    if constexpr (std::is_same_v<T, float>) {
      const auto kept = network_.kept.find(problem_, static_cast<const float*>(args.weights),
                                           args.weights_version);
      cpu::run_forward<T>(problem_, args, workspace, kept ? kept->blocks.data() : nullptr);
    } else {
      cpu::run_forward<T>(problem_, args, workspace);
    }
  }
  void backward(const BackwardArgs& args, void* workspace, uint64_t dropout_counter) override {
    cpu::CallScope call(ctx_.options.num_threads);
    cpu::run_backward<T>(problem_, args, workspace, dropout_counter);
  }

 private:
  CpuNetwork& network_;           // shared by the network's batches
  cpu::NetworkChoices& choices_;  // network_'s
  cpu::AlgoChoice choice_;
  cpu::PlanSpec problem_;
  cpu::BufferSizes sizes_;
};

}  // namespace

std::unique_ptr<BackendImpl> make_cpu_backend(const PlanContext& ctx) {
  if (ctx.config.dtype == DataType::f64) return std::make_unique<CpuBackend<double>>(ctx);
  if (ctx.config.dtype == DataType::bf16 || ctx.config.dtype == DataType::f16) {
    return cpu::make_half_data_backend(ctx);
  }
  return std::make_unique<CpuBackend<float>>(ctx);
}

core::BackendRegistration cpu_backend_registration() {
  return {Backend::cpu, &make_cpu_backend, &cpu::describe_build};
}

// The threads a call of a plan without num_threads runs on: the calling thread's setting
// (set_num_threads), else OMP_NUM_THREADS, else the CPUs this process may run on.
int max_threads() {
  return cpu::max_threads();
}

ThreadStats thread_stats(bool reset_peak) {
  const cpu::PoolStats s = cpu::pool_stats();
  if (reset_peak) cpu::reset_pool_peak();
  return {s.workers, s.active, s.peak_active, s.calls};
}

void set_num_threads(int n) {
  if (n < 0) {
    throw Error(Status::invalid_argument,
                "set_num_threads: n (= " + std::to_string(n) + ") must be >= 0");
  }
  cpu::set_thread_count(n);
}

}  // namespace rnnx
