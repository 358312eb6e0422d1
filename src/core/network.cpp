// Network: one NetworkCore and a pool of batch slots (core/network_core.hpp), one per call
// in flight, each rebound to its call's shape.
#include "rnnx/network.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "core/network_core.hpp"
#include "rnnx/error.hpp"

namespace rnnx {

struct Network::State {
  State(const Config& config, const PlanOptions& options) : network(config, options) {}
  core::NetworkCore network;
  core::WorkspacePool own_workspaces;  // of the calls that pass none

  std::mutex mutex;
  std::vector<std::unique_ptr<core::BatchSlot>> free;  // slots no call holds
  int64_t slots = 0;
  std::atomic<int64_t> batches{0}, backends_built{0}, bind_nanoseconds{0};

  // Whether the backend rebinds a slot to another shape (-1: not known yet). One that cannot
  // (cuda: its per-batch state is built anew, issue 47) keeps a slot per recent shape, as
  // the plans cached per shape did.
  std::atomic<int> rebinds{-1};
  static constexpr size_t kIdleShapes = 32;

  // A slot for one call (core::pick_free_slot's), bound to `shape` by bind(); back to the end
  // of the free list when the call ends.
  class Lease {
   public:
    Lease(State& s, const SequenceShape& shape) : state_(s) {
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        auto& free = s.free;
        const size_t i = core::pick_free_slot(
            free.size(), [&](size_t k) { return free[k]->bound_to(shape); }, s.rebinds,
            kIdleShapes);
        if (i != core::kNewSlot) {
          slot_ = std::move(free[i]);
          free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
        }
        if (!slot_) ++s.slots;
      }
      try {
        if (!slot_) slot_ = std::make_unique<core::BatchSlot>(s.network);
      } catch (...) {
        std::lock_guard<std::mutex> lock(s.mutex);
        --s.slots;
        throw Error(Status::out_of_memory, "network: out of memory for a batch slot");
      }
    }
    // Binds the slot to the call's shape (a refused shape leaves it for the next call).
    Lease& bind(const SequenceShape& shape) {
      const auto start = std::chrono::steady_clock::now();
      const bool had_backend = slot_->bound();
      slot_->bind(shape);
      if (had_backend && !slot_->kept_binding()) state_.rebinds = slot_->built_backend() ? 0 : 1;
      state_.bind_nanoseconds += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
      ++state_.batches;
      if (slot_->built_backend()) ++state_.backends_built;
      return *this;
    }
    ~Lease() {
      std::lock_guard<std::mutex> lock(state_.mutex);
      state_.free.push_back(std::move(slot_));  // room reserved: slots <= capacity
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    core::BatchSlot& operator*() const { return *slot_; }
    core::BatchSlot* operator->() const { return slot_.get(); }

   private:
    State& state_;
    std::unique_ptr<core::BatchSlot> slot_;
  };
};

Network::Network(const Config& config, const PlanOptions& options) try
    : state_(std::make_unique<State>(config, options)) {
  state_->free.reserve(64);
} catch (const std::bad_alloc&) {
  throw Error(Status::out_of_memory, "network: out of memory");
}
Network::~Network() = default;
Network::Network(Network&&) noexcept = default;
Network& Network::operator=(Network&&) noexcept = default;

const Config& Network::config() const {
  return state_->network.prototype().config;
}
const WeightLayout& Network::weight_layout() const {
  return state_->network.prototype().weights;
}
const PlanOptions& Network::options() const {
  return state_->network.prototype().options;
}
int64_t Network::weights_numel() const {
  return weight_layout().numel();
}

size_t Network::forward_workspace_size(const SequenceShape& shape, bool training) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  return slot->forward_workspace_size(training);
}
size_t Network::backward_workspace_size(const SequenceShape& shape) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  return slot->backward_workspace_size();
}
size_t Network::reserve_size(const SequenceShape& shape) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  return slot->reserve_size();
}
BatchInfo Network::describe(const SequenceShape& shape) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  const PlanContext& ctx = slot->context();
  BatchInfo info;
  info.max_seq_len = ctx.schedule.T;
  info.batch = ctx.schedule.B;
  info.tokens = ctx.schedule.tokens;
  info.x_numel = ctx.x_numel();
  info.y_numel = ctx.y_numel();
  info.h_numel = ctx.h_numel();
  info.c_numel = ctx.c_numel();
  info.forward_workspace[0] = slot->forward_workspace_size(false);
  info.forward_workspace[1] = slot->forward_workspace_size(true);
  info.backward_workspace = slot->backward_workspace_size();
  info.reserve = slot->reserve_size();
  info.buffer_alignment = slot->buffer_alignment();
  return info;
}
std::string Network::problem_name(const SequenceShape& shape) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  return slot->problem_name();
}
std::string Network::impl_name(const SequenceShape& shape) const {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  return slot->impl().name();
}

void Network::forward(const SequenceShape& shape, const ForwardArgs& args) {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  slot->forward(args, state_->own_workspaces);
}

void Network::backward(const SequenceShape& shape, const BackwardArgs& args) {
  State::Lease slot(*state_, shape);
  slot.bind(shape);
  slot->backward(args, state_->own_workspaces);
}

NetworkStats Network::stats() const {
  NetworkStats s;
  s.batches = state_->batches;
  s.backends_built = state_->backends_built;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    s.slots = state_->slots;
    // What the backend keeps is the network's: any bound slot's backend answers for all.
    for (const auto& slot : state_->free) {
      if (slot->bound()) {
        s.kept_weights_bytes = slot->impl().kept_bytes();
        break;
      }
    }
  }
  s.bind_seconds = static_cast<double>(state_->bind_nanoseconds) * 1e-9;
  return s;
}

}  // namespace rnnx
