// rnnx's own recurrent algorithm as a program of device-neutral operations, built once per
// plan: GEMMs (the input projection over all real tokens, the recurrent product on the active
// rows of each step, the weight gradients over all tokens after the loop), column sums (the
// bias and peephole gradients, summed as the cpu backend sums them) and fused cell steps
// (gates, clipping and the state update of one step for its active rows). The cuda backend
// runs the program with cuBLAS and its step kernels (src/cuda/step_kernels.hpp holds the
// per-element bodies, written once for host and device); the tests run the same program with
// plain loops over the same bodies and compare with the reference backend, so that the
// orchestration of every config is proven on any machine, GPU or not.
//
// Buffers are addressed as (buffer, element offset). Everything the program needs besides the
// caller's layer-0 input and the flat weights lives in its workspace or in the reserve that a
// training forward leaves for backward; the caller's tensors go in and out through the
// regions named in the program (states in sorted order, rows in packed sorted order,
// core::Schedule).
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "core/schedule.hpp"
#include "rnnx/config.hpp"
#include "rnnx/weights.hpp"

namespace rnnx::core {

enum class Buf : uint8_t {
  none,       // no buffer: the operation skips what it would read or write there
  input,      // layer 0's input rows [tokens, input_size], packed sorted
  weights,    // the flat weight buffer (rnnx/weights.hpp)
  dweights,   // its gradient, accumulated into (the caller zeroes it to overwrite)
  workspace,  // the call's workspace
  reserve,    // what a training forward keeps for backward
};

struct Ref {
  Buf buf = Buf::none;
  int64_t at = 0;  // elements
  Ref plus(int64_t elems) const { return {buf, at + elems}; }
  explicit operator bool() const { return buf != Buf::none; }
};

// Row-major C[m, n] = A'[m, k] B'[k, n] + beta C, where A' is A (lda the row stride of A) or,
// trans_a, the transpose of A stored [k, m]; likewise B'.
struct GemmOp {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  Ref a;
  int64_t lda = 0;
  Ref b;
  int64_t ldb = 0;
  double beta = 0;
  Ref c;
  int64_t ldc = 0;
};

// dst[rows, width] = src[rows, width], both contiguous.
struct CopyOp {
  Ref src, dst;
  int64_t count = 0;
};

// dst[width] += the column sums of src [rows, width] (dense), each column added up in row order
// (core/column_sums.hpp): the bias and peephole gradients over the tokens. `also` (when set)
// gets the same sums added: b_hh's gradient is b_ih's for every cell but linear-before-reset
// GRU's, summed once.
struct ColumnSumsOp {
  Ref src;
  int64_t rows = 0, width = 0;
  Ref dst;
  Ref also;
};

// Multiplies packed sorted rows [tokens, width] by layer `layer`'s dropout mask / (1 - p)
// (core/dropout.hpp) in place: forward between layers, and on the gradient in backward.
struct DropoutOp {
  Ref data;
  int64_t width = 0;
  int64_t layer = 0;
};

// One fused cell step over `rows` active rows (the first rows of the step, sorted order) and
// every unit of the state (H, or P for the projection steps). Per-row refs point at the
// step's first row: a state buffer at its row 0, a per-token buffer at the step's packed row.
enum class CellKind : uint8_t {
  lstm_forward,
  gru_reset_forward,  // the original GRU: rh = r * h_prev, the second GEMM's operand
  gru_forward,
  rnn_forward,
  project_forward,  // the projection's output (in y): clip, keep the raw value, new state
  lstm_backward,
  gru_backward,
  gru_reset_backward,  // the original GRU: r's gradient from drh = dn W_hn
  rnn_backward,
  project_backward,  // the gradient of the projection's output: dh + dy through the clip
};

struct CellRefs {
  Ref g;     // input GEMM rows [rows, G*H] (forward)
  Ref r;     // recurrent GEMM rows [rows, G*H] (forward)
  Ref b_ih;  // [G*H]
  Ref b_hh;
  Ref peep;   // [3H]
  Ref hs;     // state rows [rows, P]
  Ref cs;     // cell state rows [rows, H]
  Ref y;      // output rows, stride D*P, at this direction's column
  Ref rec_a;  // record: the summed pre-activations [rows, record_width]
  Ref rec_c;  // record: the previous cell state [rows, H]
  Ref rec_h;  // record: the previous state [rows, P]
  Ref hraw;   // the projection's input [rows, H]
  Ref praw;   // the projection's output before its clip [rows, P]
  Ref rh;     // the original GRU: r * h_prev [rows, H]
  Ref dy;     // output gradient rows, stride D*P, at this direction's column
  Ref dhs;    // state gradient rows [rows, P]
  Ref dcs;    // cell state gradient rows [rows, H]
  Ref dh;     // projection: the gradient of the projection's input [rows, H]
  Ref dhr;    // projection: the gradient of its output [rows, P]
  Ref dgx;    // pre-activation gradients, input side [rows, G*H]
  Ref dgh;    // recurrent side [rows, G*H] (GRU; the same as dgx otherwise)
  Ref dpeep;  // peephole gradients per row [rows, 3H]
  Ref drh;    // the original GRU: dn W_hn [rows, H]
};

struct CellOp {
  CellKind kind = CellKind::lstm_forward;
  int64_t direction = 0;  // whose activations
  int64_t rows = 0;
  CellRefs at;
};

using StepOp = std::variant<GemmOp, CopyOp, ColumnSumsOp, DropoutOp, CellOp>;

struct StepProgram {
  std::vector<StepOp> ops;
  int64_t workspace = 0;  // elements
  // Forward: where the caller's h0 and c0 go before the program (sorted [L*D, B, width]) and
  // hy and cy come from after it, and the last layer's output rows [tokens, D*P].
  // Backward: where dhy, dcy and the last layer's dy go, and dh0, dc0, dx come from.
  Ref h_state, c_state, rows_out;
  Ref dy, dx;
};

// The sizes every program of a config agrees on.
struct StepDims {
  int64_t H = 0, P = 0, G = 0, D = 1, L = 1;
  int64_t GH() const { return G * H; }
  int64_t DP() const { return D * P; }
  // Width of a row of the pre-activation record: LSTM i f g o; GRU r, z, W_in x + b_in and
  // the recurrent n term; RNN its one pre-activation.
  int64_t record_width(CellType cell) const {
    return cell == CellType::rnn_tanh || cell == CellType::rnn_relu ? H : 4 * H;
  }
};
StepDims step_dims(const Config& config);

// The programs of one plan. Elements are of the config's data type.
struct StepPrograms {
  StepProgram forward_training, forward_inference, backward;
  int64_t reserve = 0;  // elements
};
StepPrograms build_step_programs(const Config& config, const Schedule& schedule,
                                 const WeightLayout& weights);

}  // namespace rnnx::core
