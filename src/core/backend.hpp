// What a backend implements behind a Plan. The plan has already validated the config,
// the shape and the buffers; a backend sees the shared schedule and weight layout and
// raw pointers, never re-validates, and never reimplements the schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/memory.hpp"
#include "core/schedule.hpp"
#include "rnnx/config.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/weights.hpp"

namespace rnnx {

// What a backend keeps for every batch of one network (the cpu: its algorithm spaces and the
// search's choice per size class, cpu/network_choices.hpp), made by the backend on the
// network's first batch and shared by all of them. A plan is a network of one batch.
struct BackendShared {
  virtual ~BackendShared() = default;
};
class SharedState {
 public:
  // The backend's state of type S, made by `make` on first use (S derives BackendShared;
  // one backend per network, so one type per holder).
  template <typename S, typename Make>
  S& get(Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!state_) state_ = make();
    return static_cast<S&>(*state_);
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<BackendShared> state_;
};

struct PlanContext {
  Config config;
  SequenceShape shape;
  core::Schedule schedule;
  WeightLayout weights;
  PlanOptions options;

  // Element counts of the call's tensors (Plan's x_numel() and the others).
  int64_t sequence_rows() const {
    return shape.layout == Layout::packed ? schedule.tokens : schedule.T * schedule.B;
  }
  int64_t x_numel() const { return sequence_rows() * config.input_size; }
  int64_t y_numel() const {
    return sequence_rows() * config.num_directions() * config.output_size();
  }
  int64_t h_numel() const {
    return config.num_layers * config.num_directions() * schedule.B * config.output_size();
  }
  int64_t c_numel() const {
    return config.cell == CellType::lstm
               ? config.num_layers * config.num_directions() * schedule.B * config.hidden_size
               : 0;
  }
  // config.math resolved when the plan was built (resolved_math_mode): fp32 or
  // allow_conversion; the cpu backend runs its float32 GEMMs in bf16 for the latter where
  // the machine can.
  MathMode math = MathMode::fp32;
  // The network's shared state (never null in a network's slot; a context made by hand gets
  // one of its own from the backend that needs it).
  std::shared_ptr<SharedState> shared = std::make_shared<SharedState>();
};

class BackendImpl {
 public:
  explicit BackendImpl(const PlanContext& ctx) : ctx_(ctx) {}
  virtual ~BackendImpl() = default;
  virtual std::string name() const = 0;
  // Rebinds the backend to the new shape and schedule its context now holds (a network's
  // next batch, core/network_core.hpp), reusing what it has; false when it cannot, and the
  // network then builds the backend anew for the batch.
  virtual bool rebind() { return false; }
  // A number that differs wherever name() differs, for the reserve's fingerprint; a backend
  // whose name() allocates overrides it so that a network's call allocates nothing.
  virtual uint64_t choice_id() const;
  // Bytes the backend keeps for the whole network (the cpu's packed weight copies).
  virtual size_t kept_bytes() const { return 0; }
  virtual size_t forward_workspace_size(bool training) const = 0;
  virtual size_t backward_workspace_size() const = 0;
  virtual size_t reserve_size() const = 0;
  // The alignment (bytes) a caller's workspace and reserve must have: the widest element a
  // backend carves from them by default; a device library's own (cuDNN: 256) where it
  // carves spaces that need more.
  virtual size_t buffer_alignment() const { return alignof(double); }
  // args.reserve points past the plan's header; `workspace` is never null when the
  // corresponding size is non-zero. dropout_counter is the one the forward used.
  virtual void forward(const ForwardArgs& args, void* workspace) = 0;
  virtual void backward(const BackwardArgs& args, void* workspace, uint64_t dropout_counter) = 0;

  // Where this backend's buffers live (memory.hpp): the plan allocates its own workspaces,
  // tags the reserve and zeroes weight gradients through it. Host memory by default.
  virtual const core::Memory& memory() const { return core::host_memory(); }
  // Whether calls run on the caller's stream (ForwardArgs::stream): device backends do;
  // host backends run on the calling thread, and the plan refuses a stream for them.
  virtual bool takes_stream() const { return false; }

 protected:
  const PlanContext& ctx_;
};

// Bytes rounded up so that every sub-buffer a backend carves out stays 64-byte aligned (or
// `alignment`-byte aligned, a power of two).
inline size_t align_up(size_t bytes, size_t alignment = 64) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Carves aligned sub-buffers out of a workspace or reserve; used the same way to compute
// the size (base == nullptr) and to hand out pointers, so the two cannot disagree.
class Carver {
 public:
  // Every sub-buffer starts `alignment` bytes (a power of two) past an aligned offset.
  explicit Carver(void* base = nullptr, size_t alignment = 64)
      : base_(static_cast<char*>(base)), alignment_(alignment) {}
  template <typename T>
  T* take(int64_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += align_up(sizeof(T) * static_cast<size_t>(count), alignment_);
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t alignment_;
  size_t used_ = 0;
};

}  // namespace rnnx
