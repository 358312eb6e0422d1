// The stages of a forward step (core/forward_step.hpp), which the cpu time loops and the step
// program both walk: which stages each cell has, in which order, and which of them a team must
// wait for. Whether the stages compute the right values is what the forward suites check
// against the reference (every walker runs them); this pins the list itself.
#include <gtest/gtest.h>

#include <vector>

#include "core/forward_step.hpp"

namespace rnnx_test {
namespace {

using namespace rnnx;
using core::ForwardStage;
using Stages = std::vector<ForwardStage>;

Config config(CellType cell, int64_t hidden = 6) {
  Config c;
  c.cell = cell;
  c.input_size = 4;
  c.hidden_size = hidden;
  return c;
}

TEST(ForwardStep, EachCellsStagesInOrder) {
  const Stages plain = {ForwardStage::recurrent_product, ForwardStage::cell};
  for (CellType cell : {CellType::lstm, CellType::rnn_tanh, CellType::rnn_relu}) {
    EXPECT_EQ(core::forward_step(config(cell)).stages, plain) << to_string(cell);
  }
  Config gru = config(CellType::gru);
  gru.gru_linear_before_reset = true;
  EXPECT_EQ(core::forward_step(gru).stages, plain);
  EXPECT_EQ(core::forward_step(gru).recurrent_columns, 18);

  gru.gru_linear_before_reset = false;  // n takes W_hn (r * h): r first, then a product
  const core::ForwardStep original = core::forward_step(gru);
  EXPECT_EQ(original.stages, (Stages{ForwardStage::recurrent_product, ForwardStage::reset_gates,
                                     ForwardStage::reset_product, ForwardStage::cell}));
  EXPECT_EQ(original.recurrent_columns, 12) << "r and z only";

  Config lstmp = config(CellType::lstm);
  lstmp.proj_size = 3;
  const core::ForwardStep projected = core::forward_step(lstmp);
  EXPECT_EQ(projected.stages, (Stages{ForwardStage::recurrent_product, ForwardStage::cell,
                                      ForwardStage::projection_product, ForwardStage::projection}));
  EXPECT_EQ(projected.recurrent_columns, 24);
  EXPECT_EQ(core::forward_step(config(CellType::rnn_tanh, 5)).recurrent_columns, 5);
}

TEST(ForwardStep, OnlyProductsOfEveryCellsOutputWaitForTheTeam) {
  EXPECT_TRUE(core::reads_every_cell(ForwardStage::reset_product));
  EXPECT_TRUE(core::reads_every_cell(ForwardStage::projection_product));
  // The recurrent product reads the state of the step before, which the team's barrier at the
  // end of each step already waits for.
  for (ForwardStage s : {ForwardStage::recurrent_product, ForwardStage::reset_gates,
                         ForwardStage::cell, ForwardStage::projection}) {
    EXPECT_FALSE(core::reads_every_cell(s)) << static_cast<int>(s);
  }
}

}  // namespace
}  // namespace rnnx_test
