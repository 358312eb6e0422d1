// rnnx problem description: the cell, the topology and the options of one fused RNN
// operator, as plain values. Conventions follow torch.nn.LSTM/GRU/RNN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

enum class CellType { rnn_tanh, rnn_relu, lstm, gru };
// bf16 (bfloat16): tensors stored in bf16; backends compute in float32 (cpu: its GEMMs in
// bf16 with float32 accumulation where the CPU can, as math mode allow_conversion) or double
// (reference), cell state included, and round the results to bf16.
// f16 (IEEE float16): tensors stored in float16; backend cuda on cuDNN (tensor cores, float32
// accumulation and cell state), backend cpu in float32 (float32 GEMMs), the reference in
// double; each rounds its results to float16.
enum class DataType { f32, f64, bf16, f16 };

// What a clamp does with NaN. cuDNN calls this clipNanOpt, MXNet lstm_state_clip_nan.
//   propagate: NaN stays NaN (and its gradient passes through unchanged).
//   replace:   NaN becomes the upper bound `hi` (what fmax(lo, fmin(x, hi)) gives) and
//              passes zero gradient, like any other clipped element.
enum class NanPolicy { propagate, replace };

// Math mode of the GEMMs (cuDNN's cudnnMathType_t, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION):
//   fp32:             float32 problems multiply in float32.
//   allow_conversion: float32 problems may run their matrix products in bf16 (operands
//                     rounded to bf16, products accumulated in float32) where the machine
//                     has bf16 dot products (AVX512-BF16); elsewhere they run in float32.
//                     Element-wise work (gates, states) stays float32. Errors grow from
//                     float32's ~1e-6 to ~1e-2 relative (README, "Math mode").
//   from_environment: the environment variable RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION, read
//                     when a plan is built: "1" = allow_conversion, "0" or unset = fp32,
//                     anything else is refused (Error invalid_argument).
//   int8:             inference in int8 dynamic quantisation (docs/int8.md): the weights
//                     quantised once per weights version (per output channel, symmetric),
//                     each product's rows of input or state quantised per row as it runs,
//                     int32 sums dequantised into float32; element-wise work stays float32.
//                     A demand, not a permission: refused (Error unsupported, naming what is
//                     missing) where it cannot run as asked: dtype other than f32, a
//                     training plan (PlanOptions::purpose), a backend other than cpu, a CPU
//                     without VNNI within the plan's ISA cap (AVX512-VNNI at avx512,
//                     AVX-VNNI at avx2).
// float64 problems always run in float64 and ignore the modes fp32 and allow_conversion (as
// cuDNN ignores conversion for double); the reference backend, the oracle, ignores them too.
enum class MathMode { from_environment, fp32, allow_conversion, int8 };

// ONNX's activation functions (the `activations` attribute of ONNX's LSTM/GRU/RNN), with
// their alpha and beta: Affine a*x+b, LeakyRelu (alpha), ThresholdedRelu (alpha),
// ScaledTanh a*tanh(b*x), HardSigmoid min(max(a*x+b, 0), 1), Elu (alpha).
enum class ActivationKind {
  sigmoid,
  tanh,
  relu,
  affine,
  leaky_relu,
  thresholded_relu,
  scaled_tanh,
  hard_sigmoid,
  elu,
  softsign,
  softplus,
};

struct Activation {
  ActivationKind kind = ActivationKind::tanh;
  double alpha = 0.0;
  double beta = 0.0;
};

// The activation with ONNX's default alpha and beta (LeakyRelu 0.01, ThresholdedRelu 1,
// ScaledTanh 1/1, HardSigmoid 0.2/0.5, Elu 1, Affine 1/0).
Activation default_activation(ActivationKind kind);
const char* to_string(ActivationKind kind);
// ONNX's names ("Sigmoid", "LeakyRelu", ...), case-insensitive; throws invalid_argument.
ActivationKind activation_from_string(const std::string& name);

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
  Clip cell_clip;  // LSTM: clamp c_t after c_t = f*c + i*g
  Clip proj_clip;  // LSTM with projection: clamp r_t = W_hr h_t
  NanPolicy clip_nan = NanPolicy::propagate;
  double dropout = 0.0;  // between layers, training only, inverted scaling
  uint64_t seed = 0;     // dropout generator key
  DataType dtype = DataType::f32;
  double padding_fill = 0.0;  // value written to y at positions t >= lengths[b]
  MathMode math = MathMode::from_environment;

  // The cell options of ONNX (and oneDNN), see docs/math.md.
  bool reverse = false;       // one direction that runs from each sequence's end (ONNX "reverse")
  bool peephole = false;      // LSTM peepholes, weights weight_peephole_l{k} [3H] in order i, f, o
  double gate_clip = 0.0;     // > 0: clamp every gate pre-activation to [-gate_clip, gate_clip]
  bool input_forget = false;  // LSTM: couple the gates, f = 1 - i
  // Per direction: LSTM (f, g, h), GRU (f, g), RNN (f); either one list for every direction
  // or one per direction (forward first). Empty: sigmoid/tanh/tanh, sigmoid/tanh, and
  // tanh or relu for rnn_tanh / rnn_relu.
  std::vector<Activation> activations;
  // Every field added here gets its line in rnnx/config_fields.hpp (a build check says so).

  int64_t num_directions() const { return bidirectional ? 2 : 1; }
  // Size of the recurrent state and of each direction's output (P').
  int64_t output_size() const { return proj_size > 0 ? proj_size : hidden_size; }
};

// Field by field, from the field table (a NaN padding_fill or clip bound makes two configs
// unequal). Written out, not defaulted: the CUDA kernels include this header as C++17.
bool operator==(const Activation& a, const Activation& b);
bool operator==(const Clip& a, const Clip& b);
bool operator==(const Config& a, const Config& b);
inline bool operator!=(const Config& a, const Config& b) {
  return !(a == b);
}

int64_t gates_per_cell(CellType cell);  // 1, 1, 4, 3
// Activations per direction: 3 (LSTM), 2 (GRU), 1 (RNN).
int64_t activations_per_direction(CellType cell);
// The activations direction `d` uses, defaults filled in.
std::vector<Activation> direction_activations(const Config& config, int64_t d);
// True when the config uses any ONNX-only option (peephole, gate_clip, input_forget,
// reverse, non-default activations).
bool uses_onnx_options(const Config& config);
// True when an ONNX option changes the cell's equations: all of the above but `reverse`
// (which only changes the direction in time).
bool uses_onnx_cell_math(const Config& config);
// Names and their inverses (the *_from_string throw invalid_argument naming the option, the
// value and the names allowed): "rnn_tanh", "rnn_relu", "lstm", "gru"; "float32",
// "float64", "bfloat16", "float16"; "propagate", "replace". Every front end parses with these.
const char* to_string(CellType cell);
CellType cell_from_string(const std::string& name);
const char* to_string(DataType dtype);
DataType dtype_from_string(const std::string& name);
const char* to_string(NanPolicy policy);
NanPolicy nan_policy_from_string(const std::string& name);
int64_t dtype_size(DataType dtype);
// "from_environment", "fp32", "allow_conversion", "int8"; math_mode_from_string also takes
// "environment" and "default" for from_environment and throws invalid_argument for others.
const char* to_string(MathMode math);
MathMode math_mode_from_string(const std::string& name);
// The mode a plan of this config runs in: fp32, allow_conversion or int8 (from_environment
// resolved from RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION; throws Error(invalid_argument)
// naming the variable and its value when it is neither "0" nor "1"). float64 configs give
// fp32 whatever the mode, bfloat16 ones allow_conversion (their operands are bf16 already),
// float16 ones fp32.
MathMode resolved_math_mode(const Config& config);

// Throws rnnx::Error(invalid_argument) naming the field and its value.
void validate(const Config& config);

}  // namespace rnnx
RNNX_EXPORT_END
