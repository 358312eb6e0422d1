// The flat weight buffer: PyTorch's parameter names, shapes and order (those of
// torch.nn.LSTM/GRU/RNN's state_dict and _flat_weights), dense and contiguous, and lookups.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace rnnx_test {
namespace {

struct Expected {
  std::string name;
  int64_t rows, cols;  // cols = 1 for a bias (PyTorch shape [rows])
};

void expect_layout(const Config& c, const std::vector<Expected>& want) {
  const WeightLayout layout(c);
  const auto& params = layout.params();
  ASSERT_EQ(params.size(), want.size());
  int64_t offset = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(params[i].name, want[i].name);
    EXPECT_EQ(params[i].rows, want[i].rows);
    EXPECT_EQ(params[i].cols, want[i].cols);
    EXPECT_EQ(params[i].offset, offset) << "dense, in order";
    offset += want[i].rows * want[i].cols;
    EXPECT_EQ(&layout.find(want[i].name), &params[i]);
  }
  EXPECT_EQ(layout.numel(), offset);
}

// torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5).state_dict():
//   weight_ih_l0 [80, 10]  weight_hh_l0 [80, 5]  bias_ih_l0 [80]  bias_hh_l0 [80]
//   weight_hr_l0 [5, 20], the same for _reverse, then layer 1 whose input is 2 * 5.
TEST(WeightLayout, PyTorchLstmWithProjection) {
  Config c = make_config(CellType::lstm, 10, 20, 2, true, DataType::f32, 5);
  std::vector<Expected> want;
  for (int l = 0; l < 2; ++l)
    for (const char* sfx : {"", "_reverse"}) {
      const std::string s = "_l" + std::to_string(l) + sfx;
      want.push_back({"weight_ih" + s, 80, 10});
      want.push_back({"weight_hh" + s, 80, 5});
      want.push_back({"bias_ih" + s, 80, 1});
      want.push_back({"bias_hh" + s, 80, 1});
      want.push_back({"weight_hr" + s, 5, 20});
    }
  expect_layout(c, want);
  EXPECT_EQ(WeightLayout(c).numel(), 4 * (800 + 400 + 80 + 80 + 100));
  Plan p(c, SequenceShape::padded(2, 1), backend_options(Backend::reference));
  EXPECT_EQ(p.weights_numel(), 5840);
  EXPECT_EQ(p.weight_layout().numel(), 5840);
}

// torch.nn.GRU(7, 9, num_layers=3, bias=False)
TEST(WeightLayout, PyTorchGruWithoutBias) {
  Config c = make_config(CellType::gru, 7, 9, 3, false, DataType::f64);
  c.bias = false;
  expect_layout(c, {{"weight_ih_l0", 27, 7},
                    {"weight_hh_l0", 27, 9},
                    {"weight_ih_l1", 27, 9},
                    {"weight_hh_l1", 27, 9},
                    {"weight_ih_l2", 27, 9},
                    {"weight_hh_l2", 27, 9}});
}

// torch.nn.RNN(3, 4, nonlinearity='relu', bidirectional=True); GRU-orig has the same
// shapes as GRU.
TEST(WeightLayout, PyTorchRnnBidirectional) {
  Config c = make_config(CellType::rnn_relu, 3, 4, 1, true, DataType::f32);
  expect_layout(c, {{"weight_ih_l0", 4, 3},
                    {"weight_hh_l0", 4, 4},
                    {"bias_ih_l0", 4, 1},
                    {"bias_hh_l0", 4, 1},
                    {"weight_ih_l0_reverse", 4, 3},
                    {"weight_hh_l0_reverse", 4, 4},
                    {"bias_ih_l0_reverse", 4, 1},
                    {"bias_hh_l0_reverse", 4, 1}});
  Config g = make_config(CellType::gru, 3, 4, 1, false, DataType::f32, 0, false);
  expect_layout(g, {{"weight_ih_l0", 12, 3},
                    {"weight_hh_l0", 12, 4},
                    {"bias_ih_l0", 12, 1},
                    {"bias_hh_l0", 12, 1}});
}

TEST(WeightLayout, FieldsAndLookups) {
  Config c = make_config(CellType::lstm, 3, 6, 2, true, DataType::f32, 2);
  const WeightLayout layout(c);
  const WeightParam& p = layout.find("weight_hr_l1_reverse");
  EXPECT_EQ(p.kind, WeightKind::w_hr);
  EXPECT_EQ(p.layer, 1);
  EXPECT_EQ(p.direction, 1);
  EXPECT_EQ(p.rows, 2);
  EXPECT_EQ(p.cols, 6);
  EXPECT_FALSE(p.is_bias());
  EXPECT_TRUE(layout.find("bias_hh_l0").is_bias());
  EXPECT_EQ(layout.get(1, 1, WeightKind::w_hr), &p);
  EXPECT_EQ(layout.get(0, 0, WeightKind::b_ih), &layout.find("bias_ih_l0"));
  EXPECT_EQ(layout.try_find("weight_ih_l2"), nullptr);
  for (const std::string name : {"weight_ih_l2", "weight_xx_l0", "", "weight_ih_l0_forward"}) {
    try {
      layout.find(name);
      ADD_FAILURE() << "find('" << name << "') did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
    }
  }
  // Absent parameters: no biases without bias, no w_hr without projection.
  c.bias = false;
  c.proj_size = 0;
  const WeightLayout bare(c);
  EXPECT_EQ(bare.get(0, 0, WeightKind::b_ih), nullptr);
  EXPECT_EQ(bare.get(0, 0, WeightKind::w_hr), nullptr);
  EXPECT_EQ(bare.try_find("bias_ih_l0"), nullptr);
  EXPECT_THROW(bare.find("weight_hr_l0"), Error);
  EXPECT_EQ(bare.get(1, 1, WeightKind::w_ih), &bare.find("weight_ih_l1_reverse"));
  EXPECT_EQ(bare.find("weight_ih_l1_reverse").cols, 2 * 6);
}

}  // namespace
}  // namespace rnnx_test
