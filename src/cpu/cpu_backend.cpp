// The fast CPU backend behind a Plan: sizes every buffer at plan time and runs the
// forward and backward passes of passes.hpp, float32 on rnnx's packed AVX-512 GEMM (or
// oneDNN's sgemm), float64 on OpenBLAS's dgemm.
#include <string>

#include "core/backend.hpp"
#include "cpu/buffers.hpp"
#include "cpu/passes.hpp"
#include "cpu/problem.hpp"
#include "rnnx/version.hpp"

namespace rnnx {
namespace {

template <typename T>
class CpuBackend final : public BackendImpl {
 public:
  explicit CpuBackend(const PlanContext& ctx) : BackendImpl(ctx), problem_(ctx) {
    // Record where each layer's reserve block starts; the same carving serves execution.
    Carver carver;
    problem_.reserve_layer.resize(problem_.L);
    for (int64_t l = 0; l < problem_.L; ++l) {
      problem_.reserve_layer[l] = carver.used();
      cpu::carve_reserve_layer<T>(problem_, carver, l);
    }
    reserve_size_ = carver.used();
    forward_size_[0] = cpu::carve_forward<T>(problem_, false, nullptr, nullptr).used();
    forward_size_[1] = cpu::carve_forward<T>(problem_, true, nullptr, nullptr).used();
    backward_size_ = cpu::carve_backward<T>(problem_, nullptr, nullptr).used();
  }

  // cpu:{isa}/{gemm}[/team][/dirs-concurrent] (docs/cpu.md): float32 runs its products on
  // the packed engine or on dnnl_sgemm, float64 on OpenBLAS; then how the time loops run.
  std::string name() const override {
    std::string s = std::string("cpu:") + cpu_isa_used();
    if constexpr (sizeof(T) == sizeof(double)) {
      s += "/openblas-dgemm";
    } else {
      s += problem_.engine == cpu::GemmEngine::sgemm
               ? std::string("/onednn-sgemm")
               : std::string("/") + cpu::gemm_engine_name(problem_.engine);
    }
    if (problem_.team_loops) s += "/team";
    if (problem_.concurrent_dirs) s += "/dirs-concurrent";
    return s;
  }
  size_t forward_workspace_size(bool training) const override { return forward_size_[training]; }
  size_t backward_workspace_size() const override { return backward_size_; }
  size_t reserve_size() const override { return reserve_size_; }

  void forward(const ForwardArgs& args, void* workspace) override {
    cpu::run_forward<T>(problem_, args, workspace);
  }
  void backward(const BackwardArgs& args, void* workspace, uint64_t dropout_counter) override {
    cpu::run_backward<T>(problem_, args, workspace, dropout_counter);
  }

 private:
  cpu::Problem problem_;
  size_t reserve_size_ = 0;
  size_t forward_size_[2] = {0, 0};  // [inference, training]
  size_t backward_size_ = 0;
};

}  // namespace

std::unique_ptr<BackendImpl> make_cpu_backend(const PlanContext& ctx) {
  if (ctx.config.dtype == DataType::f64) return std::make_unique<CpuBackend<double>>(ctx);
  return std::make_unique<CpuBackend<float>>(ctx);
}

}  // namespace rnnx
