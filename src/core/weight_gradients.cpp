#include "core/weight_gradients.hpp"

namespace rnnx::core {

int64_t token_rows_width(const Config& c, int64_t input_width, TokenRows rows) {
  const int64_t H = c.hidden_size, P = c.output_size();
  switch (rows) {
    case TokenRows::gates_grad:
    case TokenRows::hidden_gates_grad:
      return gates_per_cell(c.cell) * H;
    case TokenRows::proj_grad:
    case TokenRows::prev_state:
      return P;
    case TokenRows::layer_input:
      return input_width;
    case TokenRows::reset_state:
    case TokenRows::proj_input:
      return H;
  }
  return 0;
}

WeightGradients weight_gradients(const Config& c, int64_t input_width) {
  const int64_t H = c.hidden_size, P = c.output_size(), GH = gates_per_cell(c.cell) * H;
  const bool gru = c.cell == CellType::gru;
  const bool gru_original = gru && !c.gru_linear_before_reset;
  // The hidden side's pre-activation gradient differs from the input side's only in
  // linear-before-reset GRU's n gate (dn * r); elsewhere both name the input side's rows.
  const TokenRows hidden =
      gru && c.gru_linear_before_reset ? TokenRows::hidden_gates_grad : TokenRows::gates_grad;
  WeightGradients g;
  g.products.push_back({.weight = WeightKind::w_ih,
                        .m = GH,
                        .n = input_width,
                        .lhs = TokenRows::gates_grad,
                        .rhs = TokenRows::layer_input});
  if (gru_original) {
    // r and z multiply h_{t-1}; n multiplies r * h_{t-1}.
    g.products.push_back({.weight = WeightKind::w_hh,
                          .m = 2 * H,
                          .n = P,
                          .lhs = hidden,
                          .rhs = TokenRows::prev_state});
    g.products.push_back({.weight = WeightKind::w_hh,
                          .row0 = 2 * H,
                          .m = H,
                          .n = P,
                          .lhs = hidden,
                          .lhs_col0 = 2 * H,
                          .rhs = TokenRows::reset_state});
  } else {
    g.products.push_back(
        {.weight = WeightKind::w_hh, .m = GH, .n = P, .lhs = hidden, .rhs = TokenRows::prev_state});
  }
  if (c.proj_size > 0) {
    g.products.push_back({.weight = WeightKind::w_hr,
                          .m = P,
                          .n = H,
                          .lhs = TokenRows::proj_grad,
                          .rhs = TokenRows::proj_input});
  }
  if (c.bias) {
    g.sums.push_back({.weight = WeightKind::b_ih, .rows = TokenRows::gates_grad, .width = GH});
    g.sums.push_back({.weight = WeightKind::b_hh, .rows = hidden, .width = GH});
  }
  return g;
}

}  // namespace rnnx::core
