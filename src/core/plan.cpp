// Plan: a network of one batch (core/network_core.hpp), bound once to its shape.
#include "rnnx/plan.hpp"

#include <new>
#include <string>

#include "core/backend.hpp"
#include "core/memory.hpp"
#include "core/network_core.hpp"
#include "core/schedule.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace {

// What a plan checks before it builds its network: the config, then the shape (its sizes,
// then its values, which the schedule checks): a config of very many layers would otherwise
// build a large weight layout before the shape is refused.
// The shape's values are checked (its schedule made) before the network is built: a config
// of millions of layers with refused lengths must not lay out its weights first.
core::Schedule checked_schedule(const Config& config, const SequenceShape& shape) {
  validate(config);
  core::check_shape_sizes(config, shape);
  return core::make_schedule(shape);
}

}  // namespace

struct Plan::State {
  State(const Config& config, const PlanOptions& options)
      : network(config, options), slot(network) {}
  core::NetworkCore network;
  core::BatchSlot slot;  // refers to network
  // Workspaces of the calls that pass none, one per call in flight (several threads may
  // execute the plan at once).
  core::WorkspacePool own_workspaces;
  const PlanContext& ctx() const { return slot.context(); }
};

Plan::Plan(const Config& config, const SequenceShape& shape, const PlanOptions& options) try {
  core::Schedule schedule = checked_schedule(config, shape);
  state_ = std::make_unique<State>(config, options);
  state_->slot.bind(shape, std::move(schedule));
} catch (const std::bad_alloc&) {
  throw Error(Status::out_of_memory,
              "plan: out of memory for max_seq_len = " + std::to_string(shape.max_seq_len) +
                  ", batch = " + std::to_string(shape.batch));
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const Config& Plan::config() const {
  return state_->ctx().config;
}
const SequenceShape& Plan::shape() const {
  return state_->ctx().shape;
}
const WeightLayout& Plan::weight_layout() const {
  return state_->ctx().weights;
}
const PlanOptions& Plan::options() const {
  return state_->ctx().options;
}
int64_t Plan::max_seq_len() const {
  return state_->ctx().schedule.T;
}
int64_t Plan::batch() const {
  return state_->ctx().schedule.B;
}
int64_t Plan::tokens() const {
  return state_->ctx().schedule.tokens;
}

int64_t Plan::x_numel() const {
  return state_->ctx().x_numel();
}
int64_t Plan::y_numel() const {
  return state_->ctx().y_numel();
}
int64_t Plan::h_numel() const {
  return state_->ctx().h_numel();
}
int64_t Plan::c_numel() const {
  return state_->ctx().c_numel();
}
int64_t Plan::weights_numel() const {
  return weight_layout().numel();
}

size_t Plan::forward_workspace_size(bool training) const {
  return state_->slot.forward_workspace_size(training);
}
size_t Plan::backward_workspace_size() const {
  return state_->slot.backward_workspace_size();
}
size_t Plan::reserve_size() const {
  return state_->slot.reserve_size();
}
size_t Plan::buffer_alignment() const {
  return state_->slot.buffer_alignment();
}
std::string Plan::impl_name() const {
  return state_->slot.impl().name();
}

std::string Plan::problem_name() const {
  return state_->slot.problem_name();
}

void Plan::forward(const ForwardArgs& args) {
  state_->slot.forward(args, state_->own_workspaces);
}

void Plan::backward(const BackwardArgs& args) {
  state_->slot.backward(args, state_->own_workspaces);
}

}  // namespace rnnx
