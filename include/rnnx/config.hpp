// rnnx problem description: the cell, the topology and the options of one fused RNN
// operator, as plain values. Conventions follow torch.nn.LSTM/GRU/RNN.
#pragma once

#include <cstdint>
#include <string>

namespace rnnx {

enum class CellType { rnn_tanh, rnn_relu, lstm, gru };
enum class DataType { f32, f64 };

// What a clamp does with NaN. cuDNN calls this clipNanOpt, MXNet lstm_state_clip_nan.
//   propagate: NaN stays NaN (and its gradient passes through unchanged).
//   replace:   NaN becomes the upper bound `hi` (what fmax(lo, fmin(x, hi)) gives) and
//              passes zero gradient, like any other clipped element.
enum class NanPolicy { propagate, replace };

struct Clip {
  bool enabled = false;
  double lo = 0.0;
  double hi = 0.0;
};

struct Config {
  CellType cell = CellType::lstm;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t proj_size = 0;  // LSTM only; 0 = no projection
  int64_t num_layers = 1;
  bool bidirectional = false;
  bool bias = true;
  // GRU variant: true = cuDNN/PyTorch "linear before reset", false = original GRU
  // (ONNX's default, linear_before_reset = 0).
  bool gru_linear_before_reset = true;
  Clip cell_clip;   // LSTM: clamp c_t after c_t = f*c + i*g
  Clip proj_clip;   // LSTM with projection: clamp r_t = W_hr h_t
  NanPolicy clip_nan = NanPolicy::propagate;
  double dropout = 0.0;  // between layers, training only, inverted scaling
  uint64_t seed = 0;     // dropout generator key
  DataType dtype = DataType::f32;
  double padding_fill = 0.0;  // value written to y at positions t >= lengths[b]

  int64_t num_directions() const { return bidirectional ? 2 : 1; }
  // Size of the recurrent state and of each direction's output (P').
  int64_t output_size() const { return proj_size > 0 ? proj_size : hidden_size; }
};

int64_t gates_per_cell(CellType cell);  // 1, 1, 4, 3
const char* to_string(CellType cell);
const char* to_string(DataType dtype);
int64_t dtype_size(DataType dtype);

// Throws rnnx::Error(invalid_argument) naming the field and its value.
void validate(const Config& config);

}  // namespace rnnx
