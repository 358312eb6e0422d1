// The network: made once for a Config on one backend (as cuDNN's RNN descriptor), called
// with each batch's shape (as cuDNN's RNN data descriptors). What depends on the config, the
// backend and the options alone (validation, the weight layout, the cpu's algorithm spaces,
// the search's choice per size class) is made once; a batch's shape costs its schedule,
// assigned into vectors the network keeps, so that a new set of lengths allocates nothing
// once the network has run a batch of at least its steps and sequences (on the cpu backend;
// the reference rebinds as well, though its oracle allocates at every call; cuda builds its
// per-batch state for each new shape, keeping it for the last 32 shapes as a cache of plans would:
// issue 47 makes it rebind). Sizes are asked per shape. A call's buffers are those of a Plan of the
// same config and shape (rnnx/plan.hpp), and give the same bits as that plan.
//
// Threads: several threads may call one network at the same time, each call with its own
// tensors, reserve and workspace; the network keeps one batch slot per call in flight.
// The environment's and the options' cpu choices are read when the network first runs a
// batch (a plan reads them when it is built). A backward needs the reserve of a training
// forward of the same network and the same shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rnnx/config.hpp"
#include "rnnx/export.h"
#include "rnnx/plan.hpp"
#include "rnnx/sequence.hpp"
#include "rnnx/weights.hpp"

RNNX_EXPORT_BEGIN
namespace rnnx {

// What a network has done, for a framework's report (the main job's line).
struct NetworkStats {
  int64_t batches = 0;         // calls and size queries bound to a shape
  int64_t backends_built = 0;  // batches whose backend state was built, not rebound
  // Batch slots made: the most calls that were in flight at once, and for a backend that
  // cannot rebind a slot to another shape (cuda), one per recent shape (32 at most idle).
  int64_t slots = 0;
  double bind_seconds = 0;        // time spent binding shapes (schedule, choice, sizes)
  size_t kept_weights_bytes = 0;  // prepared weights kept by version (ForwardArgs)
};

// One batch's dimensions and buffer sizes on a network, from one binding of its shape.
struct BatchInfo {
  int64_t max_seq_len = 0;  // T of the padded tensors (packed: the steps)
  int64_t batch = 0;        // B
  int64_t tokens = 0;       // real tokens: the sum of the lengths
  // Element counts of the call's tensors, as Plan's x_numel() and the others.
  int64_t x_numel = 0, y_numel = 0, h_numel = 0, c_numel = 0;
  size_t forward_workspace[2] = {0, 0};  // bytes: [inference, training]
  size_t backward_workspace = 0;
  size_t reserve = 0;
  size_t buffer_alignment = 8;  // bytes a workspace and reserve must be aligned to
};

class Network {
 public:
  // Validates the config and the options (throws Error naming the argument and value).
  explicit Network(const Config& config, const PlanOptions& options = {});
  ~Network();
  Network(Network&&) noexcept;
  Network& operator=(Network&&) noexcept;

  const Config& config() const;
  const WeightLayout& weight_layout() const;
  const PlanOptions& options() const;
  int64_t weights_numel() const;

  // Bytes a call on a batch of `shape` needs (throws Error for a shape it refuses).
  size_t forward_workspace_size(const SequenceShape& shape, bool training) const;
  size_t backward_workspace_size(const SequenceShape& shape) const;
  size_t reserve_size(const SequenceShape& shape) const;
  // Every size of a batch of `shape` at once (one binding).
  BatchInfo describe(const SequenceShape& shape) const;
  // What runs for a batch of `shape`: "cpu:avx512/packed-avx512/team/tuned", ...
  std::string impl_name(const SequenceShape& shape) const;
  // Plan::problem_name() of a batch of `shape`.
  std::string problem_name(const SequenceShape& shape) const;

  void forward(const SequenceShape& shape, const ForwardArgs& args);
  void backward(const SequenceShape& shape, const BackwardArgs& args);

  NetworkStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rnnx
RNNX_EXPORT_END
