// The operations of one step of a forward pass, in the order they run, described once for
// every backend that runs rnnx's own algorithm: the cpu driver's time loops (cpu/forward.cpp,
// step by step and as a team) and the step program that the cuda backend runs
// (core/step_program.cpp) walk this list, each running a stage with its own GEMMs and step
// kernels. What varies by backend is how a stage is scheduled (a team's threads each take
// their columns; a product that reads every cell's output waits for the whole team first:
// `reads_every_cell`), not which stages there are.
#pragma once

#include <cstdint>
#include <vector>

#include "rnnx/config.hpp"

namespace rnnx::core {

enum class ForwardStage : uint8_t {
  // R[:, 0 : recurrent_columns) = h_{t-1} W_hh[0 : recurrent_columns)^T
  recurrent_product,
  // The original GRU: r, z and r * h_{t-1} (the reset product's operand).
  reset_gates,
  // The original GRU: R[:, 2H : 3H) = (r * h_{t-1}) W_hn^T.
  reset_product,
  // The cell: its gates and state update (the original GRU: n and h, from r and z).
  cell,
  // LSTM with projection: y = h W_hr^T, h the cell's full-width output.
  projection_product,
  // LSTM with projection: the clip of y, which becomes the state.
  projection,
};

// Whether a stage is a product whose left operand is every cell's output of an earlier stage
// of the same step (a team must have finished that stage on every cell first).
constexpr bool reads_every_cell(ForwardStage s) {
  return s == ForwardStage::reset_product || s == ForwardStage::projection_product;
}

struct ForwardStep {
  std::vector<ForwardStage> stages;
  int64_t recurrent_columns = 0;  // of the recurrent product (G*H; the original GRU's 2H)
};

ForwardStep forward_step(const Config& config);

}  // namespace rnnx::core
