#include "core/step_stages.hpp"

namespace rnnx::core {

StepStages step_stages(const Config& c) {
  const bool gru_original = c.cell == CellType::gru && !c.gru_linear_before_reset;
  const bool projection = c.cell == CellType::lstm && c.proj_size > 0;
  StepStages s;
  s.recurrent_columns = (gru_original ? 2 : gates_per_cell(c.cell)) * c.hidden_size;
  s.forward.push_back(ForwardStage::recurrent_product);
  if (gru_original) {
    // n takes W_hn (r * h_{t-1}): r first, then a second product.
    s.forward.push_back(ForwardStage::reset_gates);
    s.forward.push_back(ForwardStage::reset_product);
  }
  s.forward.push_back(ForwardStage::cell);
  if (projection) {
    s.forward.push_back(ForwardStage::projection_product);
    s.forward.push_back(ForwardStage::projection);
    s.backward.push_back(BackwardStage::projection);
    s.backward.push_back(BackwardStage::projection_product);
  }
  s.backward.push_back(BackwardStage::cell);
  if (gru_original) {
    s.backward.push_back(BackwardStage::reset_product);
    s.backward.push_back(BackwardStage::reset_gates);
  }
  s.backward.push_back(BackwardStage::recurrent_product);
  return s;
}

}  // namespace rnnx::core
