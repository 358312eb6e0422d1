#include "core/forward_step.hpp"

namespace rnnx::core {

ForwardStep forward_step(const Config& c) {
  const int64_t H = c.hidden_size;
  const bool gru_original = c.cell == CellType::gru && !c.gru_linear_before_reset;
  ForwardStep s;
  s.recurrent_columns = gru_original ? 2 * H : gates_per_cell(c.cell) * H;
  s.stages.push_back(ForwardStage::recurrent_product);
  if (gru_original) {
    // n takes W_hn (r * h_{t-1}): r first, then a second product.
    s.stages.push_back(ForwardStage::reset_gates);
    s.stages.push_back(ForwardStage::reset_product);
  }
  s.stages.push_back(ForwardStage::cell);
  if (c.cell == CellType::lstm && c.proj_size > 0) {
    s.stages.push_back(ForwardStage::projection_product);
    s.stages.push_back(ForwardStage::projection);
  }
  return s;
}

}  // namespace rnnx::core
