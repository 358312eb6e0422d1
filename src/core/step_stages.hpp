// The operations of one step of the forward and of the backward pass, in the order they run,
// described once for every backend that runs rnnx's own algorithm: the cpu driver's time
// loops (cpu/forward.cpp and cpu/backward.cpp, step by step and as a team) and the step
// program that the cuda backend runs (core/step_program.cpp) walk these lists, each running a
// stage with its own GEMMs and step kernels. What varies by backend is how a stage is
// scheduled (a team's threads each take their columns; a product whose left operand is every
// cell's output of an earlier stage waits for the whole team first: `reads_every_cell`), not
// which stages there are.
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

// Backward runs a step's stages in about the reverse order.
enum class BackwardStage : uint8_t {
  // LSTM with projection: dr, the gradient of the projection's output (dh + dy through its
  // clip), kept per token for dW_hr.
  projection,
  // LSTM with projection: the gradient of the cell's full-width output, dr W_hr.
  projection_product,
  // The cell: the pre-activation gradients dG (the original GRU: of z and n, and dh * z).
  cell,
  // The original GRU: d(r * h_{t-1}) = dn W_hn.
  reset_product,
  // The original GRU: r's gradient and the r * h path's share of dh_{t-1}.
  reset_gates,
  // dh_{t-1} (+)= dG[:, 0 : recurrent_columns) W_hh[0 : recurrent_columns) (GRU adds to the
  // share its kernels left there).
  recurrent_product,
};

// Whether a stage is a product whose left operand is every cell's (or every state column's)
// output of an earlier stage of the same step: a team must have finished that stage first.
constexpr bool reads_every_cell(ForwardStage s) {
  return s == ForwardStage::reset_product || s == ForwardStage::projection_product;
}
constexpr bool reads_every_cell(BackwardStage s) {
  return s == BackwardStage::projection_product || s == BackwardStage::reset_product ||
         s == BackwardStage::recurrent_product;
}

struct StepStages {
  std::vector<ForwardStage> forward;
  std::vector<BackwardStage> backward;
  int64_t recurrent_columns = 0;  // of the recurrent products (G*H; the original GRU's 2H)
};

StepStages step_stages(const Config& config);

}  // namespace rnnx::core
