// What a Network (rnnx/network.hpp) and a Plan (rnnx/plan.hpp) share: the config-level part
// made once (NetworkCore: validation, weight layout, the backend's shared state, the config's
// share of the reserve fingerprint), and a batch slot that binds it to one batch's shape
// (BatchSlot: the shape, its schedule, the backend rebound to it) and runs its calls with
// the buffer checks and the reserve header. A plan is a core and one slot bound once; a
// network keeps a slot per call in flight and rebinds one to each call's shape, reusing
// its vectors, so that a new set of lengths costs its schedule only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/memory.hpp"
#include "rnnx/config.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/sequence.hpp"

namespace rnnx::core {

// Refuses (Error invalid_argument, naming the size) a shape whose buffers for `config` would
// overflow a size computation, before anything is allocated for it. A plan checks it before
// it builds its network (a config of very many layers would build a large weight layout
// first); bind() checks every shape.
void check_shape_sizes(const Config& config, const SequenceShape& shape);

class NetworkCore {
 public:
  // Validates the config and the options (throws Error naming the argument and the value).
  NetworkCore(const Config& config, const PlanOptions& options);

  // The config, weight layout, options, resolved math mode and shared state every slot
  // starts from; its shape and schedule are empty.
  const PlanContext& prototype() const { return proto_; }
  // The reserve fingerprint's running hash over the config and the math mode.
  uint64_t config_hash() const { return config_hash_; }

 private:
  PlanContext proto_;
  uint64_t config_hash_ = 0;
};

class BatchSlot {
 public:
  explicit BatchSlot(const NetworkCore& network);
  BatchSlot(const BatchSlot&) = delete;
  BatchSlot& operator=(const BatchSlot&) = delete;
  ~BatchSlot();

  // Binds the slot to `shape`: checks its sizes, computes its schedule into the slot's
  // vectors and rebinds the backend (or builds it, the first time or where the backend
  // cannot rebind). Throws Error naming the shape's argument and value.
  void bind(const SequenceShape& shape);
  // The same with the shape's schedule made already (make_schedule(shape), its sizes checked):
  // a plan checks a shape's values before it builds its network, and keeps that schedule.
  void bind(const SequenceShape& shape, Schedule&& schedule);

  const PlanContext& context() const { return ctx_; }
  // Whether the last bind() built the backend (first batch, or one it could not rebind), and
  // whether it found the slot bound to its shape already (and changed nothing).
  bool built_backend() const { return built_backend_; }
  bool kept_binding() const { return kept_binding_; }
  // Whether the slot is bound to `shape` now.
  bool bound_to(const SequenceShape& shape) const;
  const BackendImpl& impl() const { return *impl_; }
  bool bound() const { return impl_ != nullptr; }
  // Plan::problem_name() of the bound batch.
  std::string problem_name() const;

  // The bound batch's sizes (an empty batch: no workspace, the reserve's header only).
  size_t forward_workspace_size(bool training) const;
  size_t backward_workspace_size() const;
  size_t reserve_size() const;
  size_t buffer_alignment() const;  // BackendImpl::buffer_alignment

  // A call on the bound batch: checks the buffers, takes a workspace from `own` when the
  // caller passes none, writes (forward) or checks (backward) the reserve's header.
  void forward(const ForwardArgs& args, WorkspacePool& own);
  void backward(const BackwardArgs& args, WorkspacePool& own);

 private:
  void bind(const SequenceShape& shape, Schedule* made);  // made: the schedule, or null

  const NetworkCore* network_;
  PlanContext ctx_;
  std::unique_ptr<BackendImpl> impl_;  // refers to ctx_
  uint64_t plan_id_ = 0;               // the reserve fingerprint of the bound batch
  bool built_backend_ = false;
  bool kept_binding_ = false;
};

// Which of a network's `count` free slots (least recently used first) a call on a shape takes:
// one bound to the shape already (`bound(k)`), the most recent of them; else, where the
// backend rebinds (`rebinds` 1, or -1: not known yet), the most recent slot; where it does not
// (0: cuda), a new slot while fewer than `idle_limit` are idle, so that each recent shape
// keeps its own, else the least recently used. kNewSlot: make a new one.
inline constexpr size_t kNewSlot = static_cast<size_t>(-1);
template <typename Bound>
size_t pick_free_slot(size_t count, Bound bound, int rebinds, size_t idle_limit) {
  for (size_t k = count; k-- > 0;) {
    if (bound(k)) return k;
  }
  if (count == 0) return kNewSlot;
  if (rebinds != 0) return count - 1;
  return count >= idle_limit ? 0 : kNewSlot;
}

}  // namespace rnnx::core
