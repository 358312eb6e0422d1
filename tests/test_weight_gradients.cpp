// The list of weight gradients over the tokens that the cpu driver and the step program both
// walk (core/weight_gradients.hpp): every element of every weight matrix written by exactly
// one product, every bias by one column sum, operands read within their rows. Whether the
// products compute the right values is what the gradient suites check against the reference
// (both walkers run them); this checks the list's shape for every cell and option.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/weight_gradients.hpp"
#include "rnnx/weights.hpp"

namespace rnnx_test {
namespace {

using namespace rnnx;
using core::TokenRows;

struct Case {
  std::string name;
  Config config;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](const std::string& name, CellType cell, auto&& edit) {
    Config c;
    c.cell = cell;
    c.input_size = 7;
    c.hidden_size = 5;
    c.num_layers = 2;
    c.bidirectional = true;
    edit(c);
    out.push_back({name, c});
  };
  add("lstm", CellType::lstm, [](Config&) {});
  add("lstm_no_bias", CellType::lstm, [](Config& c) { c.bias = false; });
  add("lstm_projection", CellType::lstm, [](Config& c) { c.proj_size = 3; });
  add("lstm_peephole", CellType::lstm, [](Config& c) { c.peephole = true; });
  add("gru_linear_before_reset", CellType::gru,
      [](Config& c) { c.gru_linear_before_reset = true; });
  add("gru_original", CellType::gru, [](Config& c) { c.gru_linear_before_reset = false; });
  add("gru_original_no_bias", CellType::gru, [](Config& c) {
    c.gru_linear_before_reset = false;
    c.bias = false;
  });
  add("rnn_tanh", CellType::rnn_tanh, [](Config&) {});
  add("rnn_relu", CellType::rnn_relu, [](Config& c) { c.bidirectional = false; });
  return out;
}

TEST(WeightGradients, EveryWeightOnceEveryOperandWithinItsRows) {
  const std::vector<Case> all = cases();
  ASSERT_EQ(all.size(), 9u);
  for (const Case& k : all) {
    SCOPED_TRACE(k.name);
    const Config& c = k.config;
    const WeightLayout layout(c);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const int64_t I = l == 0 ? c.input_size : c.num_directions() * c.output_size();
      const core::WeightGradients g = core::weight_gradients(c, I);
      // How often each element of each matrix is written; biases by the sums.
      std::map<WeightKind, std::vector<int>> written;
      for (const WeightParam& p : layout.params()) {
        if (p.layer == l && p.direction == 0 && p.kind != WeightKind::w_peephole) {
          written[p.kind].assign(static_cast<size_t>(p.numel()), 0);
        }
      }
      for (const core::TokenProduct& t : g.products) {
        const WeightParam* p = layout.get(l, 0, t.weight);
        ASSERT_NE(p, nullptr) << "a product for a weight the config does not have";
        ASSERT_FALSE(p->is_vector());
        EXPECT_EQ(t.n, p->cols) << "the product's columns are the weight's";
        ASSERT_LE(t.row0 + t.m, p->rows);
        EXPECT_LE(t.lhs_col0 + t.m, core::token_rows_width(c, I, t.lhs));
        EXPECT_EQ(t.n, core::token_rows_width(c, I, t.rhs)) << "rhs rows are as wide as dW";
        for (int64_t i = t.row0; i < t.row0 + t.m; ++i) {
          for (int64_t j = 0; j < t.n; ++j) ++written[t.weight][static_cast<size_t>(i * t.n + j)];
        }
        const bool lbr = c.cell == CellType::gru && c.gru_linear_before_reset;
        EXPECT_EQ(t.lhs == TokenRows::hidden_gates_grad, lbr && t.weight == WeightKind::w_hh)
            << "only linear-before-reset GRU's hidden side has rows of its own";
      }
      for (const core::TokenColumnSums& s : g.sums) {
        const WeightParam* p = layout.get(l, 0, s.weight);
        ASSERT_NE(p, nullptr) << "a sum for a bias the config does not have";
        ASSERT_TRUE(p->is_vector());
        ASSERT_EQ(s.width, p->numel());
        EXPECT_EQ(s.width, core::token_rows_width(c, I, s.rows));
        for (int& n : written[s.weight]) ++n;
      }
      for (const auto& [kind, counts] : written) {
        for (size_t e = 0; e < counts.size(); ++e) {
          ASSERT_EQ(counts[e], 1) << "layer " << l << ", weight kind " << static_cast<int>(kind)
                                  << ", element " << e;
        }
      }
    }
  }
}

TEST(WeightGradients, TheOriginalGrusNRowsMultiplyTheResetState) {
  Config c;
  c.cell = CellType::gru;
  c.gru_linear_before_reset = false;
  c.input_size = 4;
  c.hidden_size = 6;
  const core::WeightGradients g = core::weight_gradients(c, 4);
  ASSERT_EQ(g.products.size(), 3u);
  const core::TokenProduct& n = g.products[2];
  EXPECT_EQ(n.weight, WeightKind::w_hh);
  EXPECT_EQ(n.row0, 12);
  EXPECT_EQ(n.lhs_col0, 12);
  EXPECT_EQ(n.rhs, TokenRows::reset_state);
  EXPECT_EQ(g.products[1].rhs, TokenRows::prev_state);
  EXPECT_EQ(g.products[1].m, 12);
}

}  // namespace
}  // namespace rnnx_test
