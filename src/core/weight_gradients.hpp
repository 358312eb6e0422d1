// The weight gradients of one layer and direction that backward makes over all real tokens
// once its time loop is done, described once for every backend that runs rnnx's own
// algorithm: the cpu driver (cpu/backward.cpp) and the step program that the cuda backend
// runs (core/step_program.cpp) both walk this list, each with its own buffers and GEMMs, so
// that a new cell or option changes which products there are in one place. Each entry names
// the rows it reads by what they hold (TokenRows); a backend maps those to where it keeps
// them.
// Not in the list: the peephole gradients (a reduction each backend makes from what its time
// loop keeps) and the layer input's gradient (dX = dG W_ih, the same product for every cell).
#pragma once

#include <cstdint>
#include <vector>

#include "rnnx/config.hpp"
#include "rnnx/weights.hpp"

namespace rnnx::core {

// Per-token rows [tokens, width] in packed sorted order (core::Schedule).
enum class TokenRows : uint8_t {
  gates_grad,         // the pre-activation gradients dG [tokens, G*H] (input side)
  hidden_gates_grad,  // the hidden side's: dG but for linear-before-reset GRU's n, dn * r
  proj_grad,          // the gradient of the projection's output [tokens, P]
  layer_input,        // the layer's input [tokens, I] (after the dropout that fed it)
  prev_state,         // each token's h_{t-1} [tokens, P] (h0 for a sequence's first step)
  reset_state,        // the original GRU: r * h_{t-1} [tokens, H]
  proj_input,         // the projection's input, the full state [tokens, H]
};

// Row stride (width) of each kind of rows, for a layer whose input has `input_width` columns.
int64_t token_rows_width(const Config& config, int64_t input_width, TokenRows rows);

// dW[row0 : row0 + m, 0 : n] (+)= lhs[:, lhs_col0 : lhs_col0 + m]^T rhs over every token, dW
// the weight's matrix (row stride n).
struct TokenProduct {
  WeightKind weight = WeightKind::w_ih;
  int64_t row0 = 0;
  int64_t m = 0, n = 0;
  TokenRows lhs = TokenRows::gates_grad;
  int64_t lhs_col0 = 0;
  TokenRows rhs = TokenRows::layer_input;
};

// db[0 : width] (+)= the column sums of `rows` over every token (core/column_sums.hpp).
struct TokenColumnSums {
  WeightKind weight = WeightKind::b_ih;
  TokenRows rows = TokenRows::gates_grad;
  int64_t width = 0;
};

struct WeightGradients {
  std::vector<TokenProduct> products;  // in the order the backends run them
  std::vector<TokenColumnSums> sums;   // after the products
};

// The list for a layer whose input has `input_width` columns (the same for both directions).
WeightGradients weight_gradients(const Config& config, int64_t input_width);

}  // namespace rnnx::core
