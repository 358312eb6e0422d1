// The stages of a forward and a backward step (core/step_stages.hpp), which the cpu time loops
// and the step program all walk: which stages each cell has, in which order, and which of them
// a team must wait for. Whether the stages compute the right values is what the forward and
// gradient suites check against the reference (every walker runs them); this pins the lists.
#include <gtest/gtest.h>

#include <vector>

#include "core/step_stages.hpp"

namespace rnnx_test {
namespace {

using namespace rnnx;
using core::BackwardStage;
using core::ForwardStage;
using Forward = std::vector<ForwardStage>;
using Backward = std::vector<BackwardStage>;

Config config(CellType cell, int64_t hidden = 6) {
  Config c;
  c.cell = cell;
  c.input_size = 4;
  c.hidden_size = hidden;
  return c;
}

TEST(StepStages, EachCellsStagesInOrder) {
  const Forward plain = {ForwardStage::recurrent_product, ForwardStage::cell};
  const Backward plain_back = {BackwardStage::cell, BackwardStage::recurrent_product};
  Config gru = config(CellType::gru);
  gru.gru_linear_before_reset = true;
  for (const Config& c :
       {config(CellType::lstm), config(CellType::rnn_tanh), config(CellType::rnn_relu), gru}) {
    EXPECT_EQ(core::step_stages(c).forward, plain) << to_string(c.cell);
    EXPECT_EQ(core::step_stages(c).backward, plain_back) << to_string(c.cell);
  }
  EXPECT_EQ(core::step_stages(gru).recurrent_columns, 18);

  gru.gru_linear_before_reset = false;  // n takes W_hn (r * h): r first, then a product
  const core::StepStages original = core::step_stages(gru);
  EXPECT_EQ(original.forward, (Forward{ForwardStage::recurrent_product, ForwardStage::reset_gates,
                                       ForwardStage::reset_product, ForwardStage::cell}));
  EXPECT_EQ(original.backward,
            (Backward{BackwardStage::cell, BackwardStage::reset_product, BackwardStage::reset_gates,
                      BackwardStage::recurrent_product}));
  EXPECT_EQ(original.recurrent_columns, 12) << "r and z only";

  Config lstmp = config(CellType::lstm);
  lstmp.proj_size = 3;
  const core::StepStages projected = core::step_stages(lstmp);
  EXPECT_EQ(projected.forward,
            (Forward{ForwardStage::recurrent_product, ForwardStage::cell,
                     ForwardStage::projection_product, ForwardStage::projection}));
  EXPECT_EQ(projected.backward,
            (Backward{BackwardStage::projection, BackwardStage::projection_product,
                      BackwardStage::cell, BackwardStage::recurrent_product}));
  EXPECT_EQ(projected.recurrent_columns, 24);
  EXPECT_EQ(core::step_stages(config(CellType::rnn_tanh, 5)).recurrent_columns, 5);
}

TEST(StepStages, OnlyProductsOfEveryCellsOutputWaitForTheTeam) {
  EXPECT_TRUE(core::reads_every_cell(ForwardStage::reset_product));
  EXPECT_TRUE(core::reads_every_cell(ForwardStage::projection_product));
  // The forward recurrent product reads the state of the step before, which the team's
  // barrier at the end of each step already waits for.
  for (ForwardStage s : {ForwardStage::recurrent_product, ForwardStage::reset_gates,
                         ForwardStage::cell, ForwardStage::projection}) {
    EXPECT_FALSE(core::reads_every_cell(s)) << static_cast<int>(s);
  }
  // Backward, each product reads what this step's cells (or projection) just computed.
  for (BackwardStage s : {BackwardStage::projection_product, BackwardStage::reset_product,
                          BackwardStage::recurrent_product}) {
    EXPECT_TRUE(core::reads_every_cell(s)) << static_cast<int>(s);
  }
  for (BackwardStage s :
       {BackwardStage::projection, BackwardStage::cell, BackwardStage::reset_gates}) {
    EXPECT_FALSE(core::reads_every_cell(s)) << static_cast<int>(s);
  }
}

}  // namespace
}  // namespace rnnx_test
