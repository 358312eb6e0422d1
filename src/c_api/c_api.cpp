// The C API (include/rnnx/rnnx.h) over the C++ API: opaque handles around rnnx::Config and
// rnnx::Plan, conversion of the C structs and enums, and the error boundary that turns
// every exception into a status plus this thread's last-error message.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "rnnx/config_fields.hpp"
#include "rnnx/rnnx.h"
#include "rnnx/rnnx.hpp"

struct rnnx_config {
  rnnx::Config value;
};

struct rnnx_plan {
  explicit rnnx_plan(rnnx::Plan p)
      : plan(std::move(p)), impl_name(plan.impl_name()), problem_name(plan.problem_name()) {}
  rnnx::Plan plan;
  // Kept so that the const char* handed out stays valid for the plan's lifetime.
  std::string impl_name;
  std::string problem_name;
};

namespace {

using rnnx::Error;
using rnnx::Status;

// ---- The error boundary ------------------------------------------------------------

// The thread's last-error message. `fallback` is used when recording the message itself
// runs out of memory, so that a failure never reads as an empty message.
struct LastError {
  std::string text;
  const char* fallback = nullptr;
};
LastError& last_error() noexcept {
  thread_local LastError e;
  return e;
}

void clear_error() noexcept {
  LastError& e = last_error();
  e.text.clear();
  e.fallback = nullptr;
}

rnnx_status_t fail(rnnx_status_t status, const char* prefix, const char* text) noexcept {
  LastError& e = last_error();
  e.fallback = nullptr;
  try {
    e.text.clear();
    if (prefix != nullptr) e.text.append(prefix).append(": ");
    e.text.append(text);
  } catch (...) {
    e.text.clear();
    e.fallback = "out of memory while recording the error message";
  }
  return status;
}

rnnx_status_t to_c(Status s) noexcept {
  switch (s) {
    case Status::invalid_argument:
      return RNNX_STATUS_INVALID_ARGUMENT;
    case Status::unsupported:
      return RNNX_STATUS_UNSUPPORTED;
    case Status::internal:
      return RNNX_STATUS_INTERNAL;
    case Status::out_of_memory:
      return RNNX_STATUS_OUT_OF_MEMORY;
    case Status::success:
      break;  // an Error never carries success; treat it as a bug
  }
  return RNNX_STATUS_INTERNAL;
}

// Runs the body of one entry point. Messages of rnnx::Error pass through unchanged (the
// C++ API's text); everything else is prefixed with the entry point's name.
template <typename Body>
rnnx_status_t guarded(const char* fn, Body&& body) noexcept {
  try {
    body(fn);
    clear_error();
    return RNNX_STATUS_SUCCESS;
  } catch (const Error& e) {
    return fail(to_c(e.code()), nullptr, e.what());
  } catch (const std::bad_alloc&) {
    return fail(RNNX_STATUS_OUT_OF_MEMORY, fn, "out of memory");
  } catch (const std::exception& e) {
    return fail(RNNX_STATUS_INTERNAL, fn, e.what());
  } catch (...) {
    return fail(RNNX_STATUS_INTERNAL, fn, "unknown exception");
  }
}

[[noreturn]] void invalid(const char* fn, const std::string& msg) {
  throw Error(Status::invalid_argument, std::string(fn) + ": " + msg);
}

template <typename T>
T* need(T* p, const char* fn, const char* name) {
  if (p == nullptr) invalid(fn, std::string(name) + " is null");
  return p;
}

// ---- Versioned structs -------------------------------------------------------------

// The size of the first version of each struct: the smallest struct_size accepted. Later
// versions only append fields, so these numbers never change. Version 2 of the argument
// structs appended `stream`, version 3 of the forward's `weights_version`.
constexpr size_t kSequenceDescV1 = sizeof(rnnx_sequence_desc_t);
constexpr size_t kForwardArgsV1 = offsetof(rnnx_forward_args_t, stream);
constexpr size_t kPlanOptionsV1 = offsetof(rnnx_plan_options_t, cpu_choices);
constexpr size_t kBackwardArgsV1 = offsetof(rnnx_backward_args_t, stream);

// Reads a caller struct that starts with struct_size: a smaller (older) one has its
// missing fields zero, a larger (newer) one is accepted only if what this library does not
// know is zero, since a nonzero field would ask for something it cannot do.
template <typename S>
S read_struct(const S* in, size_t min_size, const char* fn, const char* name) {
  size_t given = 0;
  std::memcpy(&given, in, sizeof(given));
  if (given < min_size) {
    invalid(fn, std::string(name) + "->struct_size (= " + std::to_string(given) +
                    ") is smaller than the struct (= " + std::to_string(min_size) +
                    "); set it to sizeof the struct, or use the *_init helpers");
  }
  // An uninitialised struct_size is usually huge; refuse it before reading past the struct.
  constexpr size_t kMaxGrowth = 4096;
  if (given > sizeof(S) + kMaxGrowth) {
    invalid(fn, std::string(name) + "->struct_size (= " + std::to_string(given) +
                    ") is not the size of any version of the struct (= " +
                    std::to_string(sizeof(S)) + " in this one); is it set?");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (size_t i = sizeof(S); i < given; ++i) {
    if (bytes[i] != 0) {
      throw Error(Status::unsupported,
                  std::string(fn) + ": " + name + "->struct_size (= " + std::to_string(given) +
                      ") is larger than this version of rnnx knows (= " +
                      std::to_string(sizeof(S)) + ") and byte " + std::to_string(i) +
                      " beyond it is set; this library is older than the header");
    }
  }
  S out;
  std::memset(&out, 0, sizeof(out));
  std::memcpy(&out, in, std::min(given, sizeof(S)));
  return out;
}

void require_reserved_zero(int32_t value, const char* fn, const char* name) {
  if (value != 0) {
    throw Error(Status::unsupported, std::string(fn) + ": " + name +
                                         " (= " + std::to_string(value) +
                                         ") must be 0 in this version of rnnx");
  }
}

// ---- Enum conversions: explicit, so that a C value outside its enum is refused --------

// A C caller may pass any int as an enum. In C++ an unscoped enum without a fixed type
// only holds its enumerators' bit range, so its value is read through its bytes, never
// loaded as the enum (which UBSan's enum check would flag).
template <typename E>
int raw(const E& v) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int r = 0;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

std::string bad_enum(const char* name, int value, const char* type) {
  return std::string(name) + " (= " + std::to_string(value) + ") is not an " + type + " value";
}

rnnx::CellType to_cpp_cell(int v, const char* fn) {
  switch (v) {
    case RNNX_CELL_RNN_TANH:
      return rnnx::CellType::rnn_tanh;
    case RNNX_CELL_RNN_RELU:
      return rnnx::CellType::rnn_relu;
    case RNNX_CELL_LSTM:
      return rnnx::CellType::lstm;
    case RNNX_CELL_GRU:
      return rnnx::CellType::gru;
    default:
      break;
  }
  invalid(fn, bad_enum("cell", v, "rnnx_cell_t"));
}
rnnx_cell_t to_c(rnnx::CellType v) {
  switch (v) {
    case rnnx::CellType::rnn_tanh:
      return RNNX_CELL_RNN_TANH;
    case rnnx::CellType::rnn_relu:
      return RNNX_CELL_RNN_RELU;
    case rnnx::CellType::lstm:
      return RNNX_CELL_LSTM;
    case rnnx::CellType::gru:
      return RNNX_CELL_GRU;
  }
  throw Error(Status::internal, "config holds an unknown cell type");
}

rnnx::DataType to_cpp_dtype(int v, const char* fn) {
  switch (v) {
    case RNNX_DTYPE_FLOAT32:
      return rnnx::DataType::f32;
    case RNNX_DTYPE_FLOAT64:
      return rnnx::DataType::f64;
    case RNNX_DTYPE_BFLOAT16:
      return rnnx::DataType::bf16;
    case RNNX_DTYPE_FLOAT16:
      return rnnx::DataType::f16;
    default:
      break;
  }
  invalid(fn, bad_enum("dtype", v, "rnnx_dtype_t"));
}
rnnx_dtype_t to_c(rnnx::DataType v) {
  switch (v) {
    case rnnx::DataType::f64:
      return RNNX_DTYPE_FLOAT64;
    case rnnx::DataType::bf16:
      return RNNX_DTYPE_BFLOAT16;
    case rnnx::DataType::f16:
      return RNNX_DTYPE_FLOAT16;
    case rnnx::DataType::f32:
      break;
  }
  return RNNX_DTYPE_FLOAT32;
}

rnnx::MathMode to_cpp_math_mode(int v, const char* fn) {
  switch (v) {
    case RNNX_MATH_MODE_FROM_ENVIRONMENT:
      return rnnx::MathMode::from_environment;
    case RNNX_MATH_MODE_FP32:
      return rnnx::MathMode::fp32;
    case RNNX_MATH_MODE_ALLOW_CONVERSION:
      return rnnx::MathMode::allow_conversion;
    case RNNX_MATH_MODE_INT8:
      return rnnx::MathMode::int8;
    default:
      break;
  }
  invalid(fn, bad_enum("math", v, "rnnx_math_mode_t"));
}
rnnx_math_mode_t to_c(rnnx::MathMode v) {
  switch (v) {
    case rnnx::MathMode::fp32:
      return RNNX_MATH_MODE_FP32;
    case rnnx::MathMode::allow_conversion:
      return RNNX_MATH_MODE_ALLOW_CONVERSION;
    case rnnx::MathMode::int8:
      return RNNX_MATH_MODE_INT8;
    case rnnx::MathMode::from_environment:
      break;
  }
  return RNNX_MATH_MODE_FROM_ENVIRONMENT;
}

rnnx::NanPolicy to_cpp_nan_policy(int v, const char* fn) {
  switch (v) {
    case RNNX_NAN_POLICY_PROPAGATE:
      return rnnx::NanPolicy::propagate;
    case RNNX_NAN_POLICY_REPLACE:
      return rnnx::NanPolicy::replace;
    default:
      break;
  }
  invalid(fn, bad_enum("policy", v, "rnnx_nan_policy_t"));
}
rnnx_nan_policy_t to_c(rnnx::NanPolicy v) {
  return v == rnnx::NanPolicy::replace ? RNNX_NAN_POLICY_REPLACE : RNNX_NAN_POLICY_PROPAGATE;
}

rnnx::Backend to_cpp_backend(int v, const char* fn) {
  switch (v) {
    case RNNX_BACKEND_REFERENCE:
      return rnnx::Backend::reference;
    case RNNX_BACKEND_CPU:
      return rnnx::Backend::cpu;
    case RNNX_BACKEND_CUDA:
      return rnnx::Backend::cuda;
    default:
      break;
  }
  invalid(fn, bad_enum("backend", v, "rnnx_backend_t"));
}

rnnx::GradMode to_cpp_grad_mode(int32_t v, const char* fn) {
  switch (v) {
    case RNNX_GRAD_MODE_OVERWRITE:
      return rnnx::GradMode::overwrite;
    case RNNX_GRAD_MODE_ACCUMULATE:
      return rnnx::GradMode::accumulate;
    default:
      break;
  }
  invalid(fn, bad_enum("args->weight_grad_mode", v, "rnnx_grad_mode_t"));
}

// The caller's arrays are copied here. Their lengths come from other fields, so copy only
// once those are sane; otherwise leave the array out and let the plan report the field.
// The descriptor into `out`, assigning into the vectors it has (a network's calls reuse one
// per thread, so that a new set of lengths allocates nothing).
void fill_cpp_shape(const rnnx_sequence_desc_t& d, const char* fn, rnnx::SequenceShape& out) {
  require_reserved_zero(d.reserved0, fn, "shape->reserved0");
  out.lengths.clear();
  out.batch_sizes.clear();
  out.sorted_indices.clear();
  switch (d.layout) {
    case RNNX_LAYOUT_TIME_MAJOR:
    case RNNX_LAYOUT_BATCH_FIRST: {
      int64_t grid = 0;
      if (d.lengths != nullptr && d.max_seq_len >= 1 && d.batch >= 1 &&
          !__builtin_mul_overflow(d.max_seq_len, d.batch, &grid)) {
        out.lengths.assign(d.lengths, d.lengths + d.batch);
      }
      out.layout = d.layout == RNNX_LAYOUT_BATCH_FIRST ? rnnx::Layout::batch_first
                                                       : rnnx::Layout::time_major;
      out.max_seq_len = d.max_seq_len;
      out.batch = d.batch;
      return;
    }
    case RNNX_LAYOUT_PACKED: {
      if (d.num_steps < 0) {
        invalid(fn, "shape->num_steps (= " + std::to_string(d.num_steps) + ") must be >= 1");
      }
      if (d.num_steps > 0 && d.batch_sizes == nullptr) {
        invalid(fn,
                "shape->batch_sizes is null but shape->num_steps = " + std::to_string(d.num_steps));
      }
      if (d.num_steps > 0) out.batch_sizes.assign(d.batch_sizes, d.batch_sizes + d.num_steps);
      if (d.sorted_indices != nullptr && !out.batch_sizes.empty() && out.batch_sizes[0] >= 1) {
        out.sorted_indices.assign(d.sorted_indices, d.sorted_indices + out.batch_sizes[0]);
      }
      out.layout = rnnx::Layout::packed;  // as SequenceShape::packed() fills it
      out.max_seq_len = static_cast<int64_t>(out.batch_sizes.size());
      out.batch = out.batch_sizes.empty() ? 0 : out.batch_sizes[0];
      return;
    }
    default:
      break;
  }
  invalid(fn, bad_enum("shape->layout", d.layout, "rnnx_layout_t"));
}

rnnx::SequenceShape to_cpp_shape(const rnnx_sequence_desc_t& d, const char* fn) {
  rnnx::SequenceShape shape;
  fill_cpp_shape(d, fn, shape);
  return shape;
}

rnnx::PlanOptions to_cpp_options(const rnnx_plan_options_t* options, const char* fn) {
  const rnnx_plan_options_t o =
      read_struct(need(options, fn, "options"), kPlanOptionsV1, fn, "options");
  require_reserved_zero(o.reserved0, fn, "options->reserved0");
  rnnx::PlanOptions options_cpp;
  options_cpp.backend = to_cpp_backend(raw(o.backend), fn);
  options_cpp.num_threads = o.num_threads;
  switch (raw(o.purpose)) {
    case RNNX_PLAN_PURPOSE_TRAINING:
      options_cpp.purpose = rnnx::PlanPurpose::training;
      break;
    case RNNX_PLAN_PURPOSE_INFERENCE:
      options_cpp.purpose = rnnx::PlanPurpose::inference;
      break;
    default:
      invalid(fn, bad_enum("options->purpose", raw(o.purpose), "rnnx_plan_purpose_t"));
  }
  if (o.cpu_choices != nullptr) options_cpp.cpu = rnnx::cpu_choices_from_string(o.cpu_choices);
  return options_cpp;
}

// The C call arguments in C++ (struct_size and reserved fields checked).
rnnx::ForwardArgs to_cpp_forward(const rnnx_forward_args_t* args, const char* fn) {
  const rnnx_forward_args_t a = read_struct(need(args, fn, "args"), kForwardArgsV1, fn, "args");
  require_reserved_zero(a.reserved0, fn, "args->reserved0");
  rnnx::ForwardArgs f;
  f.x = a.x;
  f.h0 = a.h0;
  f.c0 = a.c0;
  f.weights = a.weights;
  f.y = a.y;
  f.hy = a.hy;
  f.cy = a.cy;
  f.training = a.training != 0;
  f.dropout_counter = a.dropout_counter;
  f.workspace = a.workspace;
  f.workspace_size = a.workspace_size;
  f.reserve = a.reserve;
  f.reserve_size = a.reserve_size;
  f.stream = a.stream;
  f.weights_version = a.weights_version;
  return f;
}

rnnx::BackwardArgs to_cpp_backward(const rnnx_backward_args_t* args, const char* fn) {
  const rnnx_backward_args_t a = read_struct(need(args, fn, "args"), kBackwardArgsV1, fn, "args");
  require_reserved_zero(a.reserved0, fn, "args->reserved0");
  rnnx::BackwardArgs b;
  b.x = a.x;
  b.h0 = a.h0;
  b.c0 = a.c0;
  b.weights = a.weights;
  b.dy = a.dy;
  b.dhy = a.dhy;
  b.dcy = a.dcy;
  b.dx = a.dx;
  b.dh0 = a.dh0;
  b.dc0 = a.dc0;
  b.dweights = a.dweights;
  b.weight_grad_mode = to_cpp_grad_mode(a.weight_grad_mode, fn);
  b.workspace = a.workspace;
  b.workspace_size = a.workspace_size;
  b.reserve = a.reserve;
  b.reserve_size = a.reserve_size;
  b.stream = a.stream;
  return b;
}

// The workspace bytes of `phase` (its raw value: a caller's value outside the enum must not be
// loaded as one) from a plan's or a network's size functions.
template <typename Forward, typename Backward>
size_t phase_workspace(int phase, const char* fn, Forward forward, Backward backward) {
  switch (phase) {
    case RNNX_PHASE_FORWARD_INFERENCE:
      return forward(false);
    case RNNX_PHASE_FORWARD_TRAINING:
      return forward(true);
    case RNNX_PHASE_BACKWARD:
      return backward();
    default:
      break;
  }
  invalid(fn, bad_enum("phase", phase, "rnnx_phase_t"));
}

// ---- Config field accessors --------------------------------------------------------

template <typename Set>
rnnx_status_t config_set(const char* fn, rnnx_config_t config, Set set) noexcept {
  return guarded(fn, [&](const char* f) { set(need(config, f, "config")->value, f); });
}

template <typename Out, typename Get>
rnnx_status_t config_get(const char* fn, rnnx_config_t config, Out* out, const char* out_name,
                         Get get) noexcept {
  return guarded(fn, [&](const char* f) {
    const rnnx::Config& c = need(config, f, "config")->value;
    *need(out, f, out_name) = get(c);
  });
}

rnnx_status_t set_clip(const char* fn, rnnx_config_t config, rnnx::Clip rnnx::Config::*field,
                       int enabled, double lo, double hi) noexcept {
  return config_set(fn, config, [&](rnnx::Config& c, const char*) {
    c.*field = rnnx::Clip{enabled != 0, lo, hi};
  });
}

rnnx_status_t get_clip(const char* fn, rnnx_config_t config, rnnx::Clip rnnx::Config::*field,
                       int* enabled, double* lo, double* hi) noexcept {
  return guarded(fn, [&](const char* f) {
    const rnnx::Clip& clip = need(config, f, "config")->value.*field;
    need(enabled, f, "enabled");
    need(lo, f, "lo");
    need(hi, f, "hi");
    *enabled = clip.enabled ? 1 : 0;
    *lo = clip.lo;
    *hi = clip.hi;
  });
}

// ---- Plan accessors ----------------------------------------------------------------

template <typename Out, typename Get>
rnnx_status_t plan_get(const char* fn, rnnx_plan_t plan, Out* out, const char* out_name,
                       Get get) noexcept {
  return guarded(fn, [&](const char* f) {
    const rnnx_plan& p = *need(plan, f, "plan");
    need(out, f, out_name);
    *out = get(p);
  });
}

}  // namespace

extern "C" {

// ---- Status, errors, version -------------------------------------------------------

const char* rnnx_status_string(rnnx_status_t status) {
  switch (status) {
    case RNNX_STATUS_SUCCESS:
      return rnnx::to_string(Status::success);
    case RNNX_STATUS_INVALID_ARGUMENT:
      return rnnx::to_string(Status::invalid_argument);
    case RNNX_STATUS_UNSUPPORTED:
      return rnnx::to_string(Status::unsupported);
    case RNNX_STATUS_INTERNAL:
      return rnnx::to_string(Status::internal);
    case RNNX_STATUS_OUT_OF_MEMORY:
      return rnnx::to_string(Status::out_of_memory);
  }
  return "unknown";
}

const char* rnnx_get_last_error_message(void) {
  const LastError& e = last_error();
  return e.fallback != nullptr ? e.fallback : e.text.c_str();
}

rnnx_status_t rnnx_get_version(int* major, int* minor, int* patch) {
  return guarded(__func__, [&](const char* fn) {
    need(major, fn, "major");
    need(minor, fn, "minor");
    need(patch, fn, "patch");
    *major = RNNX_VERSION_MAJOR;
    *minor = RNNX_VERSION_MINOR;
    *patch = RNNX_VERSION_PATCH;
  });
}

// ---- Backend plugins ---------------------------------------------------------------

rnnx_status_t rnnx_load_backend_plugin(const char* path, rnnx_backend_t* backend) {
  return guarded(__func__, [&](const char* fn) {
    need(path, fn, "path");
    const rnnx::Backend b = rnnx::load_backend_plugin(path);
    if (backend != nullptr) *backend = static_cast<rnnx_backend_t>(static_cast<int>(b));
  });
}

rnnx_status_t rnnx_register_backend_plugin(rnnx_backend_t backend, const char* path) {
  return guarded(__func__, [&](const char* fn) {
    need(path, fn, "path");
    rnnx::register_backend_plugin(to_cpp_backend(raw(backend), fn), path);
  });
}

// ---- Config ------------------------------------------------------------------------

rnnx_status_t rnnx_config_create(rnnx_config_t* config) {
  return guarded(__func__, [&](const char* fn) {
    need(config, fn, "config");
    *config = nullptr;
    *config = new rnnx_config{};
  });
}

rnnx_status_t rnnx_config_destroy(rnnx_config_t config) {
  return guarded(__func__, [&](const char*) { delete config; });
}

rnnx_status_t rnnx_config_validate(rnnx_config_t config) {
  return guarded(__func__,
                 [&](const char* fn) { rnnx::validate(need(config, fn, "config")->value); });
}

rnnx_status_t rnnx_config_set_cell(rnnx_config_t config, rnnx_cell_t cell) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char* fn) { c.cell = to_cpp_cell(raw(cell), fn); });
}
rnnx_status_t rnnx_config_get_cell(rnnx_config_t config, rnnx_cell_t* cell) {
  return config_get(__func__, config, cell, "cell",
                    [](const rnnx::Config& c) { return to_c(c.cell); });
}

rnnx_status_t rnnx_config_set_input_size(rnnx_config_t config, int64_t input_size) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.input_size = input_size; });
}
rnnx_status_t rnnx_config_get_input_size(rnnx_config_t config, int64_t* input_size) {
  return config_get(__func__, config, input_size, "input_size",
                    [](const rnnx::Config& c) { return c.input_size; });
}

rnnx_status_t rnnx_config_set_hidden_size(rnnx_config_t config, int64_t hidden_size) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.hidden_size = hidden_size; });
}
rnnx_status_t rnnx_config_get_hidden_size(rnnx_config_t config, int64_t* hidden_size) {
  return config_get(__func__, config, hidden_size, "hidden_size",
                    [](const rnnx::Config& c) { return c.hidden_size; });
}

rnnx_status_t rnnx_config_set_proj_size(rnnx_config_t config, int64_t proj_size) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.proj_size = proj_size; });
}
rnnx_status_t rnnx_config_get_proj_size(rnnx_config_t config, int64_t* proj_size) {
  return config_get(__func__, config, proj_size, "proj_size",
                    [](const rnnx::Config& c) { return c.proj_size; });
}

rnnx_status_t rnnx_config_set_num_layers(rnnx_config_t config, int64_t num_layers) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.num_layers = num_layers; });
}
rnnx_status_t rnnx_config_get_num_layers(rnnx_config_t config, int64_t* num_layers) {
  return config_get(__func__, config, num_layers, "num_layers",
                    [](const rnnx::Config& c) { return c.num_layers; });
}

rnnx_status_t rnnx_config_set_bidirectional(rnnx_config_t config, int bidirectional) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.bidirectional = bidirectional != 0; });
}
rnnx_status_t rnnx_config_get_bidirectional(rnnx_config_t config, int* bidirectional) {
  return config_get(__func__, config, bidirectional, "bidirectional",
                    [](const rnnx::Config& c) { return c.bidirectional ? 1 : 0; });
}

rnnx_status_t rnnx_config_set_bias(rnnx_config_t config, int bias) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char*) { c.bias = bias != 0; });
}
rnnx_status_t rnnx_config_get_bias(rnnx_config_t config, int* bias) {
  return config_get(__func__, config, bias, "bias",
                    [](const rnnx::Config& c) { return c.bias ? 1 : 0; });
}

rnnx_status_t rnnx_config_set_gru_linear_before_reset(rnnx_config_t config,
                                                      int linear_before_reset) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char*) {
    c.gru_linear_before_reset = linear_before_reset != 0;
  });
}
rnnx_status_t rnnx_config_get_gru_linear_before_reset(rnnx_config_t config,
                                                      int* linear_before_reset) {
  return config_get(__func__, config, linear_before_reset, "linear_before_reset",
                    [](const rnnx::Config& c) { return c.gru_linear_before_reset ? 1 : 0; });
}

rnnx_status_t rnnx_config_set_cell_clip(rnnx_config_t config, int enabled, double lo, double hi) {
  return set_clip(__func__, config, &rnnx::Config::cell_clip, enabled, lo, hi);
}
rnnx_status_t rnnx_config_get_cell_clip(rnnx_config_t config, int* enabled, double* lo,
                                        double* hi) {
  return get_clip(__func__, config, &rnnx::Config::cell_clip, enabled, lo, hi);
}

rnnx_status_t rnnx_config_set_proj_clip(rnnx_config_t config, int enabled, double lo, double hi) {
  return set_clip(__func__, config, &rnnx::Config::proj_clip, enabled, lo, hi);
}
rnnx_status_t rnnx_config_get_proj_clip(rnnx_config_t config, int* enabled, double* lo,
                                        double* hi) {
  return get_clip(__func__, config, &rnnx::Config::proj_clip, enabled, lo, hi);
}

rnnx_status_t rnnx_config_set_clip_nan_policy(rnnx_config_t config, rnnx_nan_policy_t policy) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char* fn) {
    c.clip_nan = to_cpp_nan_policy(raw(policy), fn);
  });
}
rnnx_status_t rnnx_config_get_clip_nan_policy(rnnx_config_t config, rnnx_nan_policy_t* policy) {
  return config_get(__func__, config, policy, "policy",
                    [](const rnnx::Config& c) { return to_c(c.clip_nan); });
}

rnnx_status_t rnnx_config_set_dropout(rnnx_config_t config, double dropout) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char*) { c.dropout = dropout; });
}
rnnx_status_t rnnx_config_get_dropout(rnnx_config_t config, double* dropout) {
  return config_get(__func__, config, dropout, "dropout",
                    [](const rnnx::Config& c) { return c.dropout; });
}

rnnx_status_t rnnx_config_set_seed(rnnx_config_t config, uint64_t seed) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char*) { c.seed = seed; });
}
rnnx_status_t rnnx_config_get_seed(rnnx_config_t config, uint64_t* seed) {
  return config_get(__func__, config, seed, "seed", [](const rnnx::Config& c) { return c.seed; });
}

rnnx_status_t rnnx_config_set_dtype(rnnx_config_t config, rnnx_dtype_t dtype) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char* fn) {
    c.dtype = to_cpp_dtype(raw(dtype), fn);
  });
}
rnnx_status_t rnnx_config_get_dtype(rnnx_config_t config, rnnx_dtype_t* dtype) {
  return config_get(__func__, config, dtype, "dtype",
                    [](const rnnx::Config& c) { return to_c(c.dtype); });
}

rnnx_status_t rnnx_config_set_math_mode(rnnx_config_t config, rnnx_math_mode_t math) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char* fn) {
    c.math = to_cpp_math_mode(raw(math), fn);
  });
}
rnnx_status_t rnnx_config_get_math_mode(rnnx_config_t config, rnnx_math_mode_t* math) {
  return config_get(__func__, config, math, "math",
                    [](const rnnx::Config& c) { return to_c(c.math); });
}

rnnx_status_t rnnx_config_set_field(rnnx_config_t config, const char* field, const char* value) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char* fn) {
    need(field, fn, "field");
    need(value, fn, "value");
    rnnx::Config changed = c;  // all or nothing
    rnnx::set_config_field(changed, field, value);
    c = changed;
  });
}

rnnx_status_t rnnx_config_get_field(rnnx_config_t config, const char* field, char* value,
                                    size_t size, size_t* length) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Config& c = need(config, fn, "config")->value;
    const std::string text = field ? rnnx::config_field_text(c, field) : rnnx::to_string(c);
    if (length) *length = text.size();
    if (value == nullptr && size == 0) return;
    need(value, fn, "value");
    if (size <= text.size()) {
      invalid(fn, "size (= " + std::to_string(size) + ") must be at least " +
                      std::to_string(text.size() + 1) + " for the text of " +
                      (field ? std::string(field) : std::string("the config")));
    }
    std::memcpy(value, text.c_str(), text.size() + 1);
  });
}

rnnx_status_t rnnx_config_set_padding_fill(rnnx_config_t config, double padding_fill) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.padding_fill = padding_fill; });
}
rnnx_status_t rnnx_config_get_padding_fill(rnnx_config_t config, double* padding_fill) {
  return config_get(__func__, config, padding_fill, "padding_fill",
                    [](const rnnx::Config& c) { return c.padding_fill; });
}

rnnx_status_t rnnx_config_set_reverse(rnnx_config_t config, int reverse) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.reverse = reverse != 0; });
}
rnnx_status_t rnnx_config_get_reverse(rnnx_config_t config, int* reverse) {
  return config_get(__func__, config, reverse, "reverse",
                    [](const rnnx::Config& c) { return c.reverse ? 1 : 0; });
}
rnnx_status_t rnnx_config_set_peephole(rnnx_config_t config, int peephole) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.peephole = peephole != 0; });
}
rnnx_status_t rnnx_config_get_peephole(rnnx_config_t config, int* peephole) {
  return config_get(__func__, config, peephole, "peephole",
                    [](const rnnx::Config& c) { return c.peephole ? 1 : 0; });
}
rnnx_status_t rnnx_config_set_gate_clip(rnnx_config_t config, double gate_clip) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.gate_clip = gate_clip; });
}
rnnx_status_t rnnx_config_get_gate_clip(rnnx_config_t config, double* gate_clip) {
  return config_get(__func__, config, gate_clip, "gate_clip",
                    [](const rnnx::Config& c) { return c.gate_clip; });
}
rnnx_status_t rnnx_config_set_input_forget(rnnx_config_t config, int input_forget) {
  return config_set(__func__, config,
                    [&](rnnx::Config& c, const char*) { c.input_forget = input_forget != 0; });
}
rnnx_status_t rnnx_config_get_input_forget(rnnx_config_t config, int* input_forget) {
  return config_get(__func__, config, input_forget, "input_forget",
                    [](const rnnx::Config& c) { return c.input_forget ? 1 : 0; });
}

rnnx_status_t rnnx_config_set_activations(rnnx_config_t config, const rnnx_activation_t* kinds,
                                          const double* alpha, const double* beta, int64_t count) {
  return config_set(__func__, config, [&](rnnx::Config& c, const char* fn) {
    if (count < 0) invalid(fn, "count (= " + std::to_string(count) + ") must be >= 0");
    if (count > 0) need(kinds, fn, "kinds");
    std::vector<rnnx::Activation> acts;
    for (int64_t k = 0; k < count; ++k) {
      const int v = raw(kinds[k]);
      if (v < RNNX_ACTIVATION_SIGMOID || v > RNNX_ACTIVATION_SOFTPLUS) {
        invalid(fn, bad_enum(("kinds[" + std::to_string(k) + "]").c_str(), v, "rnnx_activation_t"));
      }
      // The C enum's values follow rnnx::ActivationKind's order.
      rnnx::Activation a = rnnx::default_activation(static_cast<rnnx::ActivationKind>(v));
      if (alpha) a.alpha = alpha[k];
      if (beta) a.beta = beta[k];
      acts.push_back(a);
    }
    c.activations = std::move(acts);
  });
}
rnnx_status_t rnnx_config_get_activations(rnnx_config_t config, rnnx_activation_t* kinds,
                                          double* alpha, double* beta, int64_t capacity,
                                          int64_t* count) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Config& c = need(config, fn, "config")->value;
    need(count, fn, "count");
    if (capacity < 0) invalid(fn, "capacity (= " + std::to_string(capacity) + ") must be >= 0");
    const auto n = static_cast<int64_t>(c.activations.size());
    for (int64_t k = 0; k < std::min(n, capacity); ++k) {
      const rnnx::Activation& a = c.activations[static_cast<size_t>(k)];
      if (kinds) kinds[k] = static_cast<rnnx_activation_t>(static_cast<int>(a.kind));
      if (alpha) alpha[k] = a.alpha;
      if (beta) beta[k] = a.beta;
    }
    *count = n;
  });
}

// ---- Plan --------------------------------------------------------------------------

rnnx_status_t rnnx_plan_create(rnnx_plan_t* plan, rnnx_config_t config,
                               const rnnx_sequence_desc_t* shape, rnnx_backend_t backend,
                               int num_threads) {
  return guarded(__func__, [&](const char* fn) {
    need(plan, fn, "plan");
    *plan = nullptr;
    const rnnx::Config& c = need(config, fn, "config")->value;
    const rnnx_sequence_desc_t desc =
        read_struct(need(shape, fn, "shape"), kSequenceDescV1, fn, "shape");
    rnnx::PlanOptions options;
    options.backend = to_cpp_backend(raw(backend), fn);
    options.num_threads = num_threads;
    auto p = std::make_unique<rnnx_plan>(rnnx::Plan(c, to_cpp_shape(desc, fn), options));
    *plan = p.release();
  });
}

rnnx_status_t rnnx_plan_create_with_options(rnnx_plan_t* plan, rnnx_config_t config,
                                            const rnnx_sequence_desc_t* shape,
                                            const rnnx_plan_options_t* options) {
  return guarded(__func__, [&](const char* fn) {
    need(plan, fn, "plan");
    *plan = nullptr;
    const rnnx::Config& c = need(config, fn, "config")->value;
    const rnnx_sequence_desc_t desc =
        read_struct(need(shape, fn, "shape"), kSequenceDescV1, fn, "shape");
    const rnnx::PlanOptions options_cpp = to_cpp_options(options, fn);
    auto p = std::make_unique<rnnx_plan>(rnnx::Plan(c, to_cpp_shape(desc, fn), options_cpp));
    *plan = p.release();
  });
}

rnnx_status_t rnnx_plan_destroy(rnnx_plan_t plan) {
  return guarded(__func__, [&](const char*) { delete plan; });
}

rnnx_status_t rnnx_plan_get_workspace_size(rnnx_plan_t plan, rnnx_phase_t phase, size_t* bytes) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Plan& p = need(plan, fn, "plan")->plan;
    need(bytes, fn, "bytes");
    *bytes = phase_workspace(
        raw(phase), fn, [&](bool training) { return p.forward_workspace_size(training); },
        [&] { return p.backward_workspace_size(); });
  });
}

rnnx_status_t rnnx_plan_get_reserve_size(rnnx_plan_t plan, size_t* bytes) {
  return plan_get(__func__, plan, bytes, "bytes",
                  [](const rnnx_plan& p) { return p.plan.reserve_size(); });
}
rnnx_status_t rnnx_plan_get_buffer_alignment(rnnx_plan_t plan, size_t* bytes) {
  return plan_get(__func__, plan, bytes, "bytes",
                  [](const rnnx_plan& p) { return p.plan.buffer_alignment(); });
}

rnnx_status_t rnnx_plan_get_max_seq_len(rnnx_plan_t plan, int64_t* max_seq_len) {
  return plan_get(__func__, plan, max_seq_len, "max_seq_len",
                  [](const rnnx_plan& p) { return p.plan.max_seq_len(); });
}
rnnx_status_t rnnx_plan_get_batch(rnnx_plan_t plan, int64_t* batch) {
  return plan_get(__func__, plan, batch, "batch",
                  [](const rnnx_plan& p) { return p.plan.batch(); });
}
rnnx_status_t rnnx_plan_get_tokens(rnnx_plan_t plan, int64_t* tokens) {
  return plan_get(__func__, plan, tokens, "tokens",
                  [](const rnnx_plan& p) { return p.plan.tokens(); });
}

rnnx_status_t rnnx_plan_get_x_numel(rnnx_plan_t plan, int64_t* numel) {
  return plan_get(__func__, plan, numel, "numel",
                  [](const rnnx_plan& p) { return p.plan.x_numel(); });
}
rnnx_status_t rnnx_plan_get_y_numel(rnnx_plan_t plan, int64_t* numel) {
  return plan_get(__func__, plan, numel, "numel",
                  [](const rnnx_plan& p) { return p.plan.y_numel(); });
}
rnnx_status_t rnnx_plan_get_h_numel(rnnx_plan_t plan, int64_t* numel) {
  return plan_get(__func__, plan, numel, "numel",
                  [](const rnnx_plan& p) { return p.plan.h_numel(); });
}
rnnx_status_t rnnx_plan_get_c_numel(rnnx_plan_t plan, int64_t* numel) {
  return plan_get(__func__, plan, numel, "numel",
                  [](const rnnx_plan& p) { return p.plan.c_numel(); });
}
rnnx_status_t rnnx_plan_get_weights_numel(rnnx_plan_t plan, int64_t* numel) {
  return plan_get(__func__, plan, numel, "numel",
                  [](const rnnx_plan& p) { return p.plan.weights_numel(); });
}

rnnx_status_t rnnx_plan_get_impl_name(rnnx_plan_t plan, const char** name) {
  return plan_get(__func__, plan, name, "name",
                  [](const rnnx_plan& p) { return p.impl_name.c_str(); });
}
rnnx_status_t rnnx_plan_get_problem_name(rnnx_plan_t plan, const char** name) {
  return plan_get(__func__, plan, name, "name",
                  [](const rnnx_plan& p) { return p.problem_name.c_str(); });
}

rnnx_status_t rnnx_plan_get_weight_param(rnnx_plan_t plan, const char* name, int64_t* offset,
                                         int64_t* rows, int64_t* cols) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Plan& p = need(plan, fn, "plan")->plan;
    need(name, fn, "name");
    need(offset, fn, "offset");
    need(rows, fn, "rows");
    need(cols, fn, "cols");
    const rnnx::WeightParam& w = p.weight_layout().find(name);
    *offset = w.offset;
    *rows = w.rows;
    *cols = w.cols;
  });
}

rnnx_status_t rnnx_plan_import_onnx_layer(rnnx_plan_t plan, int64_t layer, const double* W,
                                          const double* R, const double* B, const double* P,
                                          void* weights) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Plan& p = need(plan, fn, "plan")->plan;
    need(W, fn, "W");
    need(R, fn, "R");
    need(weights, fn, "weights");
    rnnx::import_onnx_layer(p.config(), p.weight_layout(), layer, W, R, B, P, weights);
  });
}

rnnx_status_t rnnx_plan_get_weight_param_count(rnnx_plan_t plan, int64_t* count) {
  return plan_get(__func__, plan, count, "count", [](const rnnx_plan& p) {
    return static_cast<int64_t>(p.plan.weight_layout().params().size());
  });
}

rnnx_status_t rnnx_plan_get_weight_param_by_index(rnnx_plan_t plan, int64_t index,
                                                  const char** name, int64_t* offset, int64_t* rows,
                                                  int64_t* cols) {
  return guarded(__func__, [&](const char* fn) {
    const auto& params = need(plan, fn, "plan")->plan.weight_layout().params();
    need(name, fn, "name");
    need(offset, fn, "offset");
    need(rows, fn, "rows");
    need(cols, fn, "cols");
    const auto count = static_cast<int64_t>(params.size());
    if (index < 0 || index >= count) {
      invalid(fn, "index (= " + std::to_string(index) +
                      ") must be in [0, count (= " + std::to_string(count) + "))");
    }
    const rnnx::WeightParam& w = params[static_cast<size_t>(index)];
    *name = w.name.c_str();
    *offset = w.offset;
    *rows = w.rows;
    *cols = w.cols;
  });
}

rnnx_status_t rnnx_plan_forward(rnnx_plan_t plan, const rnnx_forward_args_t* args) {
  return guarded(__func__, [&](const char* fn) {
    rnnx::Plan& p = need(plan, fn, "plan")->plan;
    p.forward(to_cpp_forward(args, fn));
  });
}

rnnx_status_t rnnx_plan_backward(rnnx_plan_t plan, const rnnx_backward_args_t* args) {
  return guarded(__func__, [&](const char* fn) {
    rnnx::Plan& p = need(plan, fn, "plan")->plan;
    p.backward(to_cpp_backward(args, fn));
  });
}

}  // extern "C"

// ---- Network -----------------------------------------------------------------------

struct rnnx_network {
  explicit rnnx_network(rnnx::Network n) : network(std::move(n)) {}
  rnnx::Network network;
};

namespace {

// The call's shape in C++: one object per thread, assigned into, so that a new set of
// lengths allocates nothing (the network keeps its own copy in the slot it binds).
const rnnx::SequenceShape& call_shape(const rnnx_sequence_desc_t* shape, const char* fn) {
  thread_local rnnx::SequenceShape scratch;
  const rnnx_sequence_desc_t desc =
      read_struct(need(shape, fn, "shape"), kSequenceDescV1, fn, "shape");
  fill_cpp_shape(desc, fn, scratch);
  return scratch;
}

}  // namespace

rnnx_status_t rnnx_network_create(rnnx_network_t* network, rnnx_config_t config,
                                  const rnnx_plan_options_t* options) {
  return guarded(__func__, [&](const char* fn) {
    need(network, fn, "network");
    *network = nullptr;
    const rnnx::Config& c = need(config, fn, "config")->value;
    const rnnx::PlanOptions o = options ? to_cpp_options(options, fn) : rnnx::PlanOptions{};
    *network = std::make_unique<rnnx_network>(rnnx::Network(c, o)).release();
  });
}

rnnx_status_t rnnx_network_destroy(rnnx_network_t network) {
  return guarded(__func__, [&](const char*) { delete network; });
}

rnnx_status_t rnnx_network_get_workspace_size(rnnx_network_t network,
                                              const rnnx_sequence_desc_t* shape, rnnx_phase_t phase,
                                              size_t* bytes) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Network& n = need(network, fn, "network")->network;
    need(bytes, fn, "bytes");
    const rnnx::SequenceShape& s = call_shape(shape, fn);
    *bytes = phase_workspace(
        raw(phase), fn, [&](bool training) { return n.forward_workspace_size(s, training); },
        [&] { return n.backward_workspace_size(s); });
  });
}

rnnx_status_t rnnx_network_get_reserve_size(rnnx_network_t network,
                                            const rnnx_sequence_desc_t* shape, size_t* bytes) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Network& n = need(network, fn, "network")->network;
    need(bytes, fn, "bytes");
    *bytes = n.reserve_size(call_shape(shape, fn));
  });
}

rnnx_status_t rnnx_network_get_weights_numel(rnnx_network_t network, int64_t* numel) {
  return guarded(__func__, [&](const char* fn) {
    const rnnx::Network& n = need(network, fn, "network")->network;
    need(numel, fn, "numel");
    *numel = n.weights_numel();
  });
}

rnnx_status_t rnnx_network_forward(rnnx_network_t network, const rnnx_sequence_desc_t* shape,
                                   const rnnx_forward_args_t* args) {
  return guarded(__func__, [&](const char* fn) {
    rnnx::Network& n = need(network, fn, "network")->network;
    const rnnx::ForwardArgs f = to_cpp_forward(args, fn);
    n.forward(call_shape(shape, fn), f);
  });
}

rnnx_status_t rnnx_network_backward(rnnx_network_t network, const rnnx_sequence_desc_t* shape,
                                    const rnnx_backward_args_t* args) {
  return guarded(__func__, [&](const char* fn) {
    rnnx::Network& n = need(network, fn, "network")->network;
    const rnnx::BackwardArgs b = to_cpp_backward(args, fn);
    n.backward(call_shape(shape, fn), b);
  });
}
