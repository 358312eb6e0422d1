// Config validation and the names of enum values. Every check names the field and value.
#include <cmath>
#include <string>

#include "core/checked.hpp"
#include "rnnx/config.hpp"
#include "rnnx/error.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/sequence.hpp"

namespace rnnx {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(Status::invalid_argument, msg); }

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
    invalid(std::string(name) + " lo (= " + num(clip.lo) + ") must not exceed hi (= " +
            num(clip.hi) + ")");
  }
}

}  // namespace

const char* to_string(Status s) {
  switch (s) {
    case Status::success: return "success";
    case Status::invalid_argument: return "invalid_argument";
    case Status::unsupported: return "unsupported";
    case Status::internal: return "internal";
    case Status::out_of_memory: return "out_of_memory";
  }
  return "unknown";
}

int64_t gates_per_cell(CellType cell) {
  switch (cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu: return 1;
    case CellType::lstm: return 4;
    case CellType::gru: return 3;
  }
  return 0;
}

const char* to_string(CellType cell) {
  switch (cell) {
    case CellType::rnn_tanh: return "rnn_tanh";
    case CellType::rnn_relu: return "rnn_relu";
    case CellType::lstm: return "lstm";
    case CellType::gru: return "gru";
  }
  return "unknown";
}

const char* to_string(DataType dtype) { return dtype == DataType::f32 ? "float32" : "float64"; }

int64_t dtype_size(DataType dtype) { return dtype == DataType::f32 ? 4 : 8; }

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::time_major: return "time_major";
    case Layout::batch_first: return "batch_first";
    case Layout::packed: return "packed";
  }
  return "unknown";
}

const char* to_string(Backend backend) {
  return backend == Backend::reference ? "reference" : "cpu";
}

Backend backend_from_string(const std::string& name) {
  if (name == "reference") return Backend::reference;
  if (name == "cpu") return Backend::cpu;
  invalid("backend '" + name + "' is not one of: reference, cpu");
}

void validate(const Config& c) {
  if (c.cell != CellType::rnn_tanh && c.cell != CellType::rnn_relu && c.cell != CellType::lstm &&
      c.cell != CellType::gru) {
    invalid("cell (= " + std::to_string(static_cast<int>(c.cell)) + ") is not a known cell");
  }
  if (c.dtype != DataType::f32 && c.dtype != DataType::f64) {
    invalid("dtype (= " + std::to_string(static_cast<int>(c.dtype)) + ") is not a known type");
  }
  if (c.input_size < 1) invalid("input_size (= " + std::to_string(c.input_size) + ") must be >= 1");
  if (c.hidden_size < 1) {
    invalid("hidden_size (= " + std::to_string(c.hidden_size) + ") must be >= 1");
  }
  if (c.num_layers < 1) invalid("num_layers (= " + std::to_string(c.num_layers) + ") must be >= 1");
  if (c.proj_size < 0) invalid("proj_size (= " + std::to_string(c.proj_size) + ") must be >= 0");
  if (c.proj_size > 0 && c.cell != CellType::lstm) {
    invalid("proj_size (= " + std::to_string(c.proj_size) + ") is only allowed with cell lstm, not " +
            to_string(c.cell));
  }
  if (c.proj_size > 0 && c.proj_size >= c.hidden_size) {
    invalid("proj_size (= " + std::to_string(c.proj_size) + ") must be smaller than hidden_size (= " +
            std::to_string(c.hidden_size) + ")");
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
  if (!(c.dropout >= 0.0 && c.dropout <= 1.0)) {
    invalid("dropout (= " + num(c.dropout) + ") must be in [0, 1]");
  }
  // Sizes that every backend derives must fit: G*H*max(I, D*P') per weight matrix.
  const int64_t gh = core::checked_mul(gates_per_cell(c.cell), c.hidden_size, "gates * hidden_size");
  core::checked_mul(gh, std::max(c.input_size, c.num_directions() * c.output_size()),
                    "weight_ih rows * cols");
  core::checked_mul(c.num_layers * c.num_directions(), gh, "layers * directions * gates * hidden");
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
