// 16-bit data on the cpu backend's float32 path: each call widens the caller's bfloat16 or
// float16 tensors into float32 copies in its workspace, runs a float32 plan of the same
// problem on them, and rounds the results back to 16 bits. Cell state and every element-wise
// step are float32. bfloat16 runs the float32 plan with math mode allow_conversion (its GEMMs
// in bf16 with float32 accumulation where the CPU has AVX512-BF16 or AMX, float32 elsewhere:
// the operands are bf16 values already, so nothing is lost); float16 with fp32 (float16's
// 11-bit significands would lose 3 bits in bf16 products, and float32 products of them are
// exact). The reserve is the float32 plan's. With a caller workspace nothing is allocated.
#include "cpu/half_data_backend.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/bfloat16.hpp"
#include "core/float16.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Below this many values a conversion stays on one thread.
constexpr int64_t kParallelMin = int64_t{1} << 16;

// n values of the caller's 16-bit tensor (of type S) into float32, and back: float16 on
// the step kernels' vector conversions where the plan's ISA has them (the scalar loops of
// core/float16.hpp cost 5-7% of a training step), bfloat16 (a shift, which the compiler
// vectorises) and float16 elsewhere on core's loops.
template <typename S>
void widen_parallel(const void* src, float* dst, int64_t n, const StepKernels<float>& k) {
  const auto* s = static_cast<const S*>(src);
  constexpr int64_t kChunk = 4096;
  const bool vector = std::is_same_v<S, core::float16> && k.widen_f16 != nullptr;
  parallel_for((n + kChunk - 1) / kChunk, n >= kParallelMin, [&](int64_t c) {
    const int64_t i = c * kChunk, m = std::min(kChunk, n - i);
    if (vector) {
      k.widen_f16(reinterpret_cast<const uint16_t*>(s + i), dst + i, m);
    } else {
      core::widen(s + i, dst + i, m);
    }
  });
}

template <typename S>
void narrow_parallel(const float* src, void* dst, int64_t n, const StepKernels<float>& k) {
  auto* d = static_cast<S*>(dst);
  constexpr int64_t kChunk = 4096;
  const bool vector = std::is_same_v<S, core::float16> && k.narrow_f16 != nullptr;
  parallel_for((n + kChunk - 1) / kChunk, n >= kParallelMin, [&](int64_t c) {
    const int64_t i = c * kChunk, m = std::min(kChunk, n - i);
    if (vector) {
      k.narrow_f16(src + i, reinterpret_cast<uint16_t*>(d + i), m);
    } else {
      core::narrow(src + i, d + i, m);
    }
  });
}

// The float32 problem the 16-bit one runs as, in the math mode of the comment above.
PlanContext float32_context(const PlanContext& ctx) {
  PlanContext f = ctx;
  f.config.dtype = DataType::f32;
  const MathMode m =
      ctx.config.dtype == DataType::bf16 ? MathMode::allow_conversion : MathMode::fp32;
  f.config.math = m;
  f.math = m;
  return f;
}

// The float32 copies of one call's tensors, carved from the workspace after the float32
// plan's own; absent (null) where the caller passes none. The same carving sizes them.
struct Copies {
  float *x = nullptr, *h0 = nullptr, *c0 = nullptr, *w = nullptr;
  float *y = nullptr, *hy = nullptr, *cy = nullptr;                    // forward
  float *dy = nullptr, *dhy = nullptr, *dcy = nullptr;                 // backward inputs
  float *dx = nullptr, *dh0 = nullptr, *dc0 = nullptr, *dw = nullptr;  // backward outputs
};

template <typename S>
class HalfDataBackend final : public BackendImpl {
 public:
  // The float32 plan is built in the body and destroyed first by the destructor: it keeps a
  // reference to its context, which must outlive it whatever the members' order.
  explicit HalfDataBackend(const PlanContext& ctx)
      : BackendImpl(ctx), kernels_(step_kernels<float>(isa_for_plan(ctx.options.cpu.isa))) {
    f32_ = std::make_unique<PlanContext>(float32_context(ctx));
    inner_ = make_cpu_backend(*f32_);
  }
  // The float32 context takes the new batch (assigned into its vectors) and the float32
  // backend rebinds to it.
  bool rebind() override {
    f32_->shape = ctx_.shape;
    f32_->schedule = ctx_.schedule;
    return inner_->rebind();
  }
  uint64_t choice_id() const override { return inner_->choice_id(); }
  size_t kept_bytes() const override { return inner_->kept_bytes(); }
  ~HalfDataBackend() override { inner_.reset(); }
  HalfDataBackend(const HalfDataBackend&) = delete;
  HalfDataBackend& operator=(const HalfDataBackend&) = delete;

  std::string name() const override {
    return inner_->name() + (std::is_same_v<S, core::bfloat16> ? "/bf16-data" : "/f16-data");
  }
  size_t forward_workspace_size(bool training) const override {
    return align_up(inner_->forward_workspace_size(training)) + carve_forward(nullptr).used();
  }
  size_t backward_workspace_size() const override {
    return align_up(inner_->backward_workspace_size()) + carve_backward(nullptr).used();
  }
  size_t reserve_size() const override { return inner_->reserve_size(); }

  void forward(const ForwardArgs& a, void* workspace) override {
    cpu::CallScope call(ctx_.options.num_threads);
    char* base = static_cast<char*>(workspace);
    Copies k;
    carve_forward(base + align_up(inner_->forward_workspace_size(a.training)), &k);
    ForwardArgs f = a;
    widen_parallel<S>(a.x, k.x, ctx_.x_numel(), kernels_);
    widen_parallel<S>(a.weights, k.w, ctx_.weights.numel(), kernels_);
    f.x = k.x;
    f.weights = k.w;
    f.h0 = widen_optional(a.h0, k.h0, ctx_.h_numel());
    f.c0 = widen_optional(a.c0, k.c0, ctx_.c_numel());
    f.y = k.y;
    f.hy = a.hy ? k.hy : nullptr;
    f.cy = a.cy ? k.cy : nullptr;
    f.workspace = workspace;
    f.workspace_size = inner_->forward_workspace_size(a.training);
    // The widened weights sit in the workspace, at an address that says nothing about
    // whose they are: no kept copy (a version is per caller's buffer).
    f.weights_version = 0;
    inner_->forward(f, workspace);
    narrow_parallel<S>(k.y, a.y, ctx_.y_numel(), kernels_);
    if (a.hy) narrow_parallel<S>(k.hy, a.hy, ctx_.h_numel(), kernels_);
    if (a.cy) narrow_parallel<S>(k.cy, a.cy, ctx_.c_numel(), kernels_);
  }

  void backward(const BackwardArgs& a, void* workspace, uint64_t dropout_counter) override {
    cpu::CallScope call(ctx_.options.num_threads);
    char* base = static_cast<char*>(workspace);
    Copies k;
    carve_backward(base + align_up(inner_->backward_workspace_size()), &k);
    BackwardArgs b = a;
    widen_parallel<S>(a.x, k.x, ctx_.x_numel(), kernels_);
    widen_parallel<S>(a.weights, k.w, ctx_.weights.numel(), kernels_);
    b.x = k.x;
    b.weights = k.w;
    b.h0 = widen_optional(a.h0, k.h0, ctx_.h_numel());
    b.c0 = widen_optional(a.c0, k.c0, ctx_.c_numel());
    b.dy = widen_optional(a.dy, k.dy, ctx_.y_numel());
    b.dhy = widen_optional(a.dhy, k.dhy, ctx_.h_numel());
    b.dcy = widen_optional(a.dcy, k.dcy, ctx_.c_numel());
    b.dx = a.dx ? k.dx : nullptr;
    b.dh0 = a.dh0 ? k.dh0 : nullptr;
    b.dc0 = a.dc0 ? k.dc0 : nullptr;
    b.dweights = a.dweights ? k.dw : nullptr;
    // Accumulating gradients add to what the caller holds: its 16-bit values, widened.
    if (a.dweights && a.weight_grad_mode == GradMode::accumulate) {
      widen_parallel<S>(a.dweights, k.dw, ctx_.weights.numel(), kernels_);
    }
    b.workspace = workspace;
    b.workspace_size = inner_->backward_workspace_size();
    inner_->backward(b, workspace, dropout_counter);
    if (a.dx) narrow_parallel<S>(k.dx, a.dx, ctx_.x_numel(), kernels_);
    if (a.dh0) narrow_parallel<S>(k.dh0, a.dh0, ctx_.h_numel(), kernels_);
    if (a.dc0) narrow_parallel<S>(k.dc0, a.dc0, ctx_.c_numel(), kernels_);
    if (a.dweights) narrow_parallel<S>(k.dw, a.dweights, ctx_.weights.numel(), kernels_);
  }

 private:
  const float* widen_optional(const void* src, float* copy, int64_t n) const {
    if (src == nullptr) return nullptr;
    widen_parallel<S>(src, copy, n, kernels_);
    return copy;
  }

  // Carves (or, with a null base, sizes) the float32 copies of a forward / a backward: the
  // inputs both read, then each one's own.
  void carve_inputs(Carver& c, Copies* k) const {
    k->x = c.take<float>(ctx_.x_numel());
    k->w = c.take<float>(ctx_.weights.numel());
    k->h0 = c.take<float>(ctx_.h_numel());
    k->c0 = c.take<float>(ctx_.c_numel());
  }
  Carver carve_forward(char* base, Copies* k = nullptr) const {
    Copies unused;
    if (k == nullptr) k = &unused;
    Carver c(base);
    carve_inputs(c, k);
    k->y = c.take<float>(ctx_.y_numel());
    k->hy = c.take<float>(ctx_.h_numel());
    k->cy = c.take<float>(ctx_.c_numel());
    return c;
  }
  Carver carve_backward(char* base, Copies* k = nullptr) const {
    Copies unused;
    if (k == nullptr) k = &unused;
    Carver c(base);
    carve_inputs(c, k);
    k->dy = c.take<float>(ctx_.y_numel());
    k->dhy = c.take<float>(ctx_.h_numel());
    k->dcy = c.take<float>(ctx_.c_numel());
    k->dx = c.take<float>(ctx_.x_numel());
    k->dh0 = c.take<float>(ctx_.h_numel());
    k->dc0 = c.take<float>(ctx_.c_numel());
    k->dw = c.take<float>(ctx_.weights.numel());
    return c;
  }

  std::unique_ptr<PlanContext> f32_;
  std::unique_ptr<BackendImpl> inner_;  // refers to *f32_
  const StepKernels<float>& kernels_;   // the conversions of the plan's ISA
};

}  // namespace

std::unique_ptr<BackendImpl> make_half_data_backend(const PlanContext& ctx) {
  if (ctx.config.dtype == DataType::f16)
    return std::make_unique<HalfDataBackend<core::float16>>(ctx);
  return std::make_unique<HalfDataBackend<core::bfloat16>>(ctx);
}

}  // namespace rnnx::cpu
