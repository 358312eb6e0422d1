// Config validation and the names of enum values. Every check names the field and value.
#include "rnnx/config.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/checked.hpp"
#include "rnnx/error.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/sequence.hpp"

namespace rnnx {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

std::string num(double v) {
  std::string s = std::to_string(v);
  return s;
}

void validate_clip(const Clip& clip, const char* name) {
  if (!clip.enabled) return;
  if (std::isnan(clip.lo) || std::isnan(clip.hi)) {
    invalid(std::string(name) + " bounds must not be NaN");
  }
  if (clip.lo > clip.hi) {
    invalid(std::string(name) + " lo (= " + num(clip.lo) +
            ") must not exceed hi (= " + num(clip.hi) + ")");
  }
}

}  // namespace

Error::~Error() = default;

const char* to_string(Status s) {
  switch (s) {
    case Status::success:
      return "success";
    case Status::invalid_argument:
      return "invalid_argument";
    case Status::unsupported:
      return "unsupported";
    case Status::internal:
      return "internal";
    case Status::out_of_memory:
      return "out_of_memory";
  }
  return "unknown";
}

int64_t gates_per_cell(CellType cell) {
  switch (cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu:
      return 1;
    case CellType::lstm:
      return 4;
    case CellType::gru:
      return 3;
  }
  return 0;
}

const char* to_string(CellType cell) {
  switch (cell) {
    case CellType::rnn_tanh:
      return "rnn_tanh";
    case CellType::rnn_relu:
      return "rnn_relu";
    case CellType::lstm:
      return "lstm";
    case CellType::gru:
      return "gru";
  }
  return "unknown";
}

int64_t activations_per_direction(CellType cell) {
  switch (cell) {
    case CellType::lstm:
      return 3;
    case CellType::gru:
      return 2;
    default:
      return 1;
  }
}

Activation default_activation(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::leaky_relu:
      return {kind, 0.01, 0.0};
    case ActivationKind::thresholded_relu:
      return {kind, 1.0, 0.0};
    case ActivationKind::scaled_tanh:
      return {kind, 1.0, 1.0};
    case ActivationKind::hard_sigmoid:
      return {kind, 0.2, 0.5};
    case ActivationKind::elu:
      return {kind, 1.0, 0.0};
    case ActivationKind::affine:
      return {kind, 1.0, 0.0};
    default:
      return {kind, 0.0, 0.0};
  }
}

namespace {
constexpr std::pair<ActivationKind, const char*> kActivationNames[] = {
    {ActivationKind::sigmoid, "Sigmoid"},
    {ActivationKind::tanh, "Tanh"},
    {ActivationKind::relu, "Relu"},
    {ActivationKind::affine, "Affine"},
    {ActivationKind::leaky_relu, "LeakyRelu"},
    {ActivationKind::thresholded_relu, "ThresholdedRelu"},
    {ActivationKind::scaled_tanh, "ScaledTanh"},
    {ActivationKind::hard_sigmoid, "HardSigmoid"},
    {ActivationKind::elu, "Elu"},
    {ActivationKind::softsign, "Softsign"},
    {ActivationKind::softplus, "Softplus"},
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<Activation> default_activations(CellType cell) {
  using K = ActivationKind;
  switch (cell) {
    case CellType::lstm:
      return {{K::sigmoid}, {K::tanh}, {K::tanh}};
    case CellType::gru:
      return {{K::sigmoid}, {K::tanh}};
    case CellType::rnn_relu:
      return {{K::relu}};
    case CellType::rnn_tanh:
      return {{K::tanh}};
  }
  return {};
}
}  // namespace

const char* to_string(ActivationKind kind) {
  for (const auto& [k, name] : kActivationNames)
    if (k == kind) return name;
  return "unknown";
}

ActivationKind activation_from_string(const std::string& name) {
  for (const auto& [k, n] : kActivationNames)
    if (lower(n) == lower(name)) return k;
  invalid("activation '" + name +
          "' is not one of: Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
          "HardSigmoid, Elu, Softsign, Softplus");
}

std::vector<Activation> direction_activations(const Config& c, int64_t d) {
  const int64_t k = activations_per_direction(c.cell);
  if (c.activations.empty()) return default_activations(c.cell);
  const int64_t first = static_cast<int64_t>(c.activations.size()) == k ? 0 : d * k;
  return {c.activations.begin() + first, c.activations.begin() + first + k};
}

bool uses_onnx_options(const Config& c) {
  return c.reverse || uses_onnx_cell_math(c);
}

bool uses_onnx_cell_math(const Config& c) {
  if (c.peephole || c.gate_clip > 0.0 || c.input_forget) return true;
  for (int64_t d = 0; d < c.num_directions(); ++d) {
    const auto acts = direction_activations(c, d);
    const auto defaults = default_activations(c.cell);
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i].kind != defaults[i].kind) return true;
  }
  return false;
}

const char* to_string(MathMode math) {
  switch (math) {
    case MathMode::from_environment:
      return "from_environment";
    case MathMode::fp32:
      return "fp32";
    case MathMode::allow_conversion:
      return "allow_conversion";
    case MathMode::int8:
      return "int8";
  }
  return "unknown";
}

MathMode math_mode_from_string(const std::string& name) {
  const std::string n = lower(name);
  if (n == "from_environment" || n == "environment" || n == "default") {
    return MathMode::from_environment;
  }
  if (n == "fp32") return MathMode::fp32;
  if (n == "allow_conversion") return MathMode::allow_conversion;
  if (n == "int8") return MathMode::int8;
  invalid("math (= \"" + name +
          "\") must be one of: from_environment, fp32, allow_conversion, int8");
}

MathMode resolved_math_mode(const Config& c) {
  // bf16 data rounds every GEMM operand to bf16 anyway.
  if (c.dtype == DataType::bf16) return MathMode::allow_conversion;
  if (c.dtype != DataType::f32) return MathMode::fp32;
  if (c.math != MathMode::from_environment) return c.math;
  const char* env = std::getenv("RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION");
  const std::string v = env ? env : "";
  if (v.empty() || v == "0") return MathMode::fp32;
  if (v == "1") return MathMode::allow_conversion;
  invalid("RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION (= \"" + v +
          "\") must be 1 (allow bf16 GEMMs), 0, or unset");
}

const char* to_string(DataType dtype) {
  switch (dtype) {
    case DataType::f32:
      return "float32";
    case DataType::f64:
      return "float64";
    case DataType::bf16:
      return "bfloat16";
    case DataType::f16:
      return "float16";
  }
  return "unknown";
}

namespace {
// The value of `names` whose to_string is `name`; else invalid_argument naming `option`.
template <typename E, size_t N>
E from_name(const std::string& name, const E (&values)[N], const char* option) {
  std::string allowed;
  for (E v : values) {
    if (name == to_string(v)) return v;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(v));
  }
  invalid(std::string(option) + " '" + name + "' is not one of: " + allowed);
}
}  // namespace

CellType cell_from_string(const std::string& name) {
  static const CellType kAll[] = {CellType::rnn_tanh, CellType::rnn_relu, CellType::lstm,
                                  CellType::gru};
  return from_name(name, kAll, "cell");
}

DataType dtype_from_string(const std::string& name) {
  static const DataType kAll[] = {DataType::f32, DataType::f64, DataType::bf16, DataType::f16};
  return from_name(name, kAll, "dtype");
}

const char* to_string(NanPolicy policy) {
  switch (policy) {
    case NanPolicy::propagate:
      return "propagate";
    case NanPolicy::replace:
      return "replace";
  }
  return "unknown";
}

NanPolicy nan_policy_from_string(const std::string& name) {
  static const NanPolicy kAll[] = {NanPolicy::propagate, NanPolicy::replace};
  return from_name(name, kAll, "clip_nan");
}

int64_t dtype_size(DataType dtype) {
  switch (dtype) {
    case DataType::f32:
      return 4;
    case DataType::f64:
      return 8;
    case DataType::bf16:
    case DataType::f16:
      return 2;
  }
  return 0;
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::time_major:
      return "time_major";
    case Layout::batch_first:
      return "batch_first";
    case Layout::packed:
      return "packed";
  }
  return "unknown";
}

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::reference:
      return "reference";
    case Backend::cpu:
      return "cpu";
    case Backend::cuda:
      return "cuda";
  }
  return "unknown";
}

Backend backend_from_string(const std::string& name) {
  for (Backend b : {Backend::reference, Backend::cpu, Backend::cuda}) {
    if (name == to_string(b)) return b;
  }
  invalid("backend '" + name + "' is not one of: reference, cpu, cuda");
}

const char* to_string(PlanPurpose purpose) {
  switch (purpose) {
    case PlanPurpose::training:
      return "training";
    case PlanPurpose::inference:
      return "inference";
  }
  return "unknown";
}

PlanPurpose plan_purpose_from_string(const std::string& name) {
  for (PlanPurpose p : {PlanPurpose::training, PlanPurpose::inference}) {
    if (name == to_string(p)) return p;
  }
  invalid("purpose '" + name + "' is not one of: training, inference");
}

void validate(const Config& c) {
  if (c.cell != CellType::rnn_tanh && c.cell != CellType::rnn_relu && c.cell != CellType::lstm &&
      c.cell != CellType::gru) {
    invalid("cell (= " + std::to_string(static_cast<int>(c.cell)) + ") is not a known cell");
  }
  if (c.math != MathMode::from_environment && c.math != MathMode::fp32 &&
      c.math != MathMode::allow_conversion && c.math != MathMode::int8) {
    invalid("math (= " + std::to_string(static_cast<int>(c.math)) + ") is not a known math mode");
  }
  if (c.dtype != DataType::f32 && c.dtype != DataType::f64 && c.dtype != DataType::bf16 &&
      c.dtype != DataType::f16) {
    invalid("dtype (= " + std::to_string(static_cast<int>(c.dtype)) + ") is not a known type");
  }
  if (c.math == MathMode::int8 && c.dtype != DataType::f32) {
    invalid(std::string("math (= int8) quantises float32 models: dtype must be f32, not ") +
            to_string(c.dtype));
  }
  if (c.input_size < 1) invalid("input_size (= " + std::to_string(c.input_size) + ") must be >= 1");
  if (c.hidden_size < 1) {
    invalid("hidden_size (= " + std::to_string(c.hidden_size) + ") must be >= 1");
  }
  if (c.num_layers < 1) invalid("num_layers (= " + std::to_string(c.num_layers) + ") must be >= 1");
  if (c.proj_size < 0) invalid("proj_size (= " + std::to_string(c.proj_size) + ") must be >= 0");
  if (c.proj_size > 0 && c.cell != CellType::lstm) {
    invalid("proj_size (= " + std::to_string(c.proj_size) +
            ") is only allowed with cell lstm, not " + to_string(c.cell));
  }
  if (c.proj_size > 0 && c.proj_size >= c.hidden_size) {
    invalid("proj_size (= " + std::to_string(c.proj_size) +
            ") must be smaller than hidden_size (= " + std::to_string(c.hidden_size) + ")");
  }
  if (c.cell_clip.enabled && c.cell != CellType::lstm) {
    invalid(std::string("cell_clip is only allowed with cell lstm, not ") + to_string(c.cell));
  }
  if (c.proj_clip.enabled && c.proj_size == 0) {
    invalid("proj_clip needs an LSTM projection (proj_size > 0), but proj_size = 0");
  }
  validate_clip(c.cell_clip, "cell_clip");
  validate_clip(c.proj_clip, "proj_clip");
  if (c.clip_nan != NanPolicy::propagate && c.clip_nan != NanPolicy::replace) {
    invalid("clip_nan (= " + std::to_string(static_cast<int>(c.clip_nan)) + ") is not a policy");
  }
  if (c.reverse && c.bidirectional) {
    invalid(
        "reverse runs one direction from each sequence's end; it cannot be combined with "
        "bidirectional");
  }
  if (c.peephole && c.cell != CellType::lstm) {
    invalid(std::string("peephole is only allowed with cell lstm, not ") + to_string(c.cell));
  }
  if (c.input_forget && c.cell != CellType::lstm) {
    invalid(std::string("input_forget is only allowed with cell lstm, not ") + to_string(c.cell));
  }
  if (!(c.gate_clip >= 0.0)) {
    invalid("gate_clip (= " + num(c.gate_clip) + ") must be >= 0 (0 = no gate clipping)");
  }
  {
    const int64_t k = activations_per_direction(c.cell),
                  n = static_cast<int64_t>(c.activations.size());
    if (n != 0 && n != k && n != k * c.num_directions()) {
      invalid("activations has " + std::to_string(n) + " entries; " + to_string(c.cell) +
              " takes " + std::to_string(k) + " per direction (" +
              (c.num_directions() == 1 ? std::to_string(k)
                                       : std::to_string(k) + " or " + std::to_string(2 * k)) +
              ")");
    }
    for (const auto& a : c.activations) {
      if (static_cast<int>(a.kind) < 0 ||
          static_cast<int>(a.kind) > static_cast<int>(ActivationKind::softplus)) {
        invalid("activations holds an unknown kind (= " + std::to_string(static_cast<int>(a.kind)) +
                ")");
      }
      if (std::isnan(a.alpha) || std::isnan(a.beta)) {
        invalid(std::string("activation ") + to_string(a.kind) + " has a NaN alpha or beta");
      }
    }
  }
  if (!(c.dropout >= 0.0 && c.dropout <= 1.0)) {
    invalid("dropout (= " + num(c.dropout) + ") must be in [0, 1]");
  }
  // Sizes that every backend derives must fit: G*H*max(I, D*P') per weight matrix, and the
  // whole weight buffer (bounded per layer and direction by W_ih, W_hh, biases, W_hr and
  // peepholes), checked here in closed form before anything loops over the layers.
  const int64_t gh =
      core::checked_mul(gates_per_cell(c.cell), c.hidden_size, "gates * hidden_size");
  const int64_t dp =
      core::checked_mul(c.num_directions(), c.output_size(), "directions * output size");
  const int64_t w_ih = core::checked_mul(gh, std::max(c.input_size, dp), "weight_ih rows * cols");
  const int64_t ld = core::checked_mul(c.num_layers, c.num_directions(), "layers * directions");
  core::checked_mul(ld, gh, "layers * directions * gates * hidden");
  int64_t per_direction = core::checked_add(
      w_ih, core::checked_mul(gh, c.output_size(), "weight_hh"), "weights per direction");
  per_direction =
      core::checked_add(per_direction, core::checked_mul(2, gh, "biases"), "weights per direction");
  per_direction = core::checked_add(per_direction,
                                    core::checked_mul(c.output_size(), c.hidden_size, "weight_hr"),
                                    "weights per direction");
  per_direction = core::checked_add(per_direction, core::checked_mul(3, c.hidden_size, "peepholes"),
                                    "weights per direction");
  core::checked_mul(ld, per_direction,
                    "total weight size (num_layers * directions * per direction)");
}

SequenceShape SequenceShape::padded(int64_t T, int64_t B, std::vector<int64_t> lengths,
                                    bool batch_first) {
  SequenceShape s;
  s.layout = batch_first ? Layout::batch_first : Layout::time_major;
  s.max_seq_len = T;
  s.batch = B;
  s.lengths = std::move(lengths);
  return s;
}

SequenceShape SequenceShape::packed(std::vector<int64_t> batch_sizes,
                                    std::vector<int64_t> sorted_indices) {
  SequenceShape s;
  s.layout = Layout::packed;
  s.batch_sizes = std::move(batch_sizes);
  s.sorted_indices = std::move(sorted_indices);
  s.max_seq_len = static_cast<int64_t>(s.batch_sizes.size());
  s.batch = s.batch_sizes.empty() ? 0 : s.batch_sizes[0];
  return s;
}

}  // namespace rnnx
