// NetworkCore and BatchSlot (network_core.hpp): validation of the config, the shape and the
// buffers, backend dispatch, and the reserve header that ties a backward to its training
// forward (core/reserve_ledger.hpp). Device-neutral: every byte of the caller's buffers it
// touches goes through the backend's Memory (memory.hpp).
#include "core/network_core.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/backend_registry.hpp"
#include "core/checked.hpp"
#include "core/reserve_ledger.hpp"
#include "core/schedule.hpp"
#include "rnnx/config_fields.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace core {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

using core::kReserveMagic;
using core::ReserveHeader;
using core::ReserveLedger;

// FNV-1a over the bytes of every value that shapes the reserve: a backward refuses a
// reserve written by a plan that differs in anything (every field of the config, sizes,
// lengths and their order, layout, backend, resolved math mode). The plan options are not
// in it: the thread count changes no bit of a reserve (docs/robustness.md), and a plan built
// for inference writes none.
class Fingerprint {
 public:
  explicit Fingerprint(uint64_t start = 1469598103934665603ull) : h_(start) {}
  template <typename V>
  Fingerprint& add(const V& v) {
    // Values whose bytes are the value; a struct (padding) needs an overload of its own.
    static_assert(std::is_arithmetic_v<V> || std::is_enum_v<V>);
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    for (size_t i = 0; i < sizeof(V); ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
    return *this;
  }
  Fingerprint& add(const std::vector<int64_t>& v) {
    add(v.size());
    for (int64_t e : v) add(e);
    return *this;
  }
  Fingerprint& add(const std::string& s) {
    add(s.size());
    for (char ch : s) add(ch);
    return *this;
  }
  // By member: a struct's padding bytes are not values.
  Fingerprint& add(const Clip& c) { return add(c.enabled).add(c.lo).add(c.hi); }
  Fingerprint& add(const std::vector<Activation>& v) {
    add(v.size());
    for (const Activation& a : v) add(a.kind).add(a.alpha).add(a.beta);
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_;
};

uint64_t config_fingerprint(const Config& c, MathMode math) {
  Fingerprint f;
  // Every field of the table (rnnx/config_fields.hpp), by value.
  for_each_config_field([&](const char*, auto member) { f.add(c.*member); });
  return f.add(math).value();  // the resolved mode: what ran
}

// The batch's part, continuing the config's: its shape and what the backend chose for it.
uint64_t batch_fingerprint(uint64_t config_hash, const SequenceShape& s, uint64_t choice) {
  Fingerprint f(config_hash);
  f.add(s.layout).add(s.max_seq_len).add(s.batch).add(s.lengths).add(s.batch_sizes);
  return f.add(s.sorted_indices).add(choice).value();
}

// Caller buffers must be aligned to their element type; workspace and reserve to what the
// backend carves from them (BackendImpl::buffer_alignment: double's, or cuDNN's 256 bytes).
// 64 is better on the host: every sub-buffer starts at a 64-byte offset from the base.
void require_aligned(const void* p, size_t alignment, const char* name) {
  if (p != nullptr && reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    invalid(std::string(name) + " (address " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
            ") must be aligned to " + std::to_string(alignment) + " bytes");
  }
}
void require_buffer_aligned(const void* p, const BackendImpl& impl, const char* name) {
  const size_t alignment = impl.buffer_alignment();
  if (p != nullptr && reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    invalid(std::string(name) + " (address " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
            ") must be aligned to " + std::to_string(alignment) + " bytes on backend " +
            impl.name());
  }
}

// A stream only for backends that run on one.
void require_stream_use(const BackendImpl& impl, const void* stream, const char* call) {
  if (stream != nullptr && !impl.takes_stream()) {
    invalid(std::string(call) +
            ": stream (= " + std::to_string(reinterpret_cast<uintptr_t>(stream)) +
            ") is set, but backend " + impl.name() + " runs on the calling thread; pass null");
  }
}

void require(const void* p, const char* name) {
  if (p == nullptr) invalid(std::string(name) + " is null");
}

// A tensor of no elements (every sequence tensor of an empty batch) may be null.
void require(const void* p, int64_t numel, const char* name) {
  if (numel > 0) require(p, name);
}

// The caller's workspace, checked, or one from `own` (`lease` keeps it for the call).
void* take_workspace(WorkspacePool& own, const BackendImpl& impl, void* given, size_t given_size,
                     size_t needed, const char* call, std::optional<WorkspacePool::Lease>* lease) {
  if (needed == 0) return given;
  if (given != nullptr) {
    if (given_size < needed) {
      invalid(std::string(call) + ": workspace_size (= " + std::to_string(given_size) +
              ") is smaller than required (= " + std::to_string(needed) + ")");
    }
    return given;
  }
  lease->emplace(own.acquire(needed, call, impl.memory()));
  return (*lease)->get();
}

PlanContext prototype_context(const Config& config, const PlanOptions& options) {
  validate(config);
  if (options.num_threads < 0) {
    invalid("num_threads (= " + std::to_string(options.num_threads) + ") must be >= 0");
  }
  if (options.purpose != PlanPurpose::training && options.purpose != PlanPurpose::inference) {
    invalid("purpose (= " + std::to_string(static_cast<int>(options.purpose)) +
            ") is not training or inference");
  }
  if (options.backend != Backend::cpu && !options.cpu.empty()) {
    invalid("cpu choices (\"" + to_string(options.cpu) + "\") are for backend cpu, not " +
            to_string(options.backend));
  }
  WeightLayout weights(config);
  checked_mul(weights.numel(), 8, "weight bytes");
  PlanContext ctx{config, SequenceShape{}, Schedule{}, std::move(weights), options};
  ctx.math = resolved_math_mode(config);
  if (ctx.math == MathMode::int8) {
    // A demand: refused where it cannot run as asked, never replaced by float32.
    if (options.purpose != PlanPurpose::inference) {
      invalid(
          "math (= int8) runs inference only: build the plan (network) with PlanOptions::purpose "
          "= inference, not training");
    }
    if (options.backend != Backend::cpu) {
      throw Error(Status::unsupported, std::string("math (= int8) runs on backend cpu only, not ") +
                                           to_string(options.backend));
    }
    const int64_t widest = std::max({config.input_size, config.hidden_size, config.proj_size,
                                     config.num_directions() * config.output_size()});
    if (widest > 65536) {
      invalid(
          "math (= int8) sums in int32, exact for products over at most 65536 values; the "
          "widest operand of this config has " +
          std::to_string(widest));
    }
  }
  return ctx;
}

bool same_shape(const SequenceShape& a, const SequenceShape& b) {
  return a.layout == b.layout && a.max_seq_len == b.max_seq_len && a.batch == b.batch &&
         a.lengths == b.lengths && a.batch_sizes == b.batch_sizes &&
         a.sorted_indices == b.sorted_indices;
}

}  // namespace

// Every buffer a backend carves is at most (T*B) rows of the widest row, per layer, in
// double: refuse up front what could overflow a size computation later. Checked before
// the schedule allocates its [B] and [T] vectors, so that a batch too large for any
// buffer is refused without first costing memory (found by tests/fuzz/fuzz_c_api).
void check_shape_sizes(const Config& config, const SequenceShape& shape) {
  if (shape.layout != Layout::packed) {
    // Before the schedule allocates [B] and [T] vectors: x alone must be addressable.
    checked_mul(checked_mul(checked_mul(std::max<int64_t>(shape.max_seq_len, 0),
                                        std::max<int64_t>(shape.batch, 0), "max_seq_len * batch"),
                            config.input_size, "x size"),
                dtype_size(config.dtype), "x bytes");
  }
  const bool packed = shape.layout == Layout::packed;
  const int64_t steps = packed ? static_cast<int64_t>(shape.batch_sizes.size())
                               : std::max<int64_t>(shape.max_seq_len, 0);
  const int64_t rows = !packed                     ? std::max<int64_t>(shape.batch, 0)
                       : shape.batch_sizes.empty() ? 0
                                                   : std::max<int64_t>(shape.batch_sizes[0], 0);
  const int64_t widest =
      std::max({config.input_size, config.num_directions() * config.output_size(),
                config.num_directions() * gates_per_cell(config.cell) * config.hidden_size});
  const int64_t grid = checked_mul(steps, rows, "max_seq_len * batch");
  checked_mul(checked_mul(checked_mul(grid, widest, "sequence tensor size"), config.num_layers,
                          "per-layer buffers"),
              8 * 4, "buffer bytes");
}

NetworkCore::NetworkCore(const Config& config, const PlanOptions& options)
    : proto_(prototype_context(config, options)),
      config_hash_(config_fingerprint(proto_.config, proto_.math)) {}

BatchSlot::BatchSlot(const NetworkCore& network) : network_(&network), ctx_(network.prototype()) {}

// The backend refers to the slot's context: destroyed first.
BatchSlot::~BatchSlot() {
  impl_.reset();
}

void BatchSlot::bind(const SequenceShape& shape) {
  bind(shape, nullptr);
}

void BatchSlot::bind(const SequenceShape& shape, Schedule&& schedule) {
  bind(shape, &schedule);
}

void BatchSlot::bind(const SequenceShape& shape, Schedule* made) try {
  // A slot already bound to this shape (a size query, then the forward, then its backward,
  // one after another on one thread take the same slot) keeps its binding.
  kept_binding_ = bound_to(shape);
  if (kept_binding_) {
    built_backend_ = false;
    return;
  }
  ctx_.shape = shape;  // assigns into the vectors the slot has
  if (made != nullptr) {
    ctx_.schedule = std::move(*made);
  } else {
    check_shape_sizes(ctx_.config, shape);
    make_schedule(ctx_.shape, ctx_.schedule);
  }
  built_backend_ = !impl_ || !impl_->rebind();
  if (built_backend_) {
    impl_.reset();
    impl_ = make_backend(ctx_);
  }
  plan_id_ = batch_fingerprint(network_->config_hash(), ctx_.shape, impl_->choice_id());
} catch (const std::bad_alloc&) {
  impl_.reset();
  throw Error(Status::out_of_memory,
              "plan: out of memory for max_seq_len = " + std::to_string(shape.max_seq_len) +
                  ", batch = " + std::to_string(shape.batch));
} catch (const std::length_error&) {
  impl_.reset();
  throw Error(Status::invalid_argument,
              "plan: sizes too large for max_seq_len = " + std::to_string(shape.max_seq_len) +
                  ", batch = " + std::to_string(shape.batch));
} catch (...) {
  impl_.reset();  // a backend half rebound to a refused shape is built anew next time
  throw;
}

std::string BatchSlot::problem_name() const {
  const Config& c = ctx_.config;
  const Schedule& s = ctx_.schedule;
  bool full = true;
  for (int64_t len : s.sorted_lengths) full = full && len == s.T;
  std::string cell = to_string(c.cell);
  if (c.cell == CellType::gru && !c.gru_linear_before_reset) cell += "-orig";
  return cell + "_l" + std::to_string(c.num_layers) + (c.bidirectional ? "_bidir" : "_uni") + "_t" +
         std::to_string(s.T) + "_b" + std::to_string(s.B) + "_i" + std::to_string(c.input_size) +
         "_h" + std::to_string(c.hidden_size) + "_p" + std::to_string(c.proj_size) + "_len-" +
         (full ? "full" : "mixed");
}

bool BatchSlot::bound_to(const SequenceShape& shape) const {
  return impl_ != nullptr && same_shape(ctx_.shape, shape);
}

// An empty batch (B = 0) runs nothing, so it needs no workspace and keeps only the
// reserve's header: the fingerprint that ties its backward to its training forward.
size_t BatchSlot::forward_workspace_size(bool training) const {
  return ctx_.schedule.B == 0 ? 0 : impl_->forward_workspace_size(training);
}
size_t BatchSlot::backward_workspace_size() const {
  return ctx_.schedule.B == 0 ? 0 : impl_->backward_workspace_size();
}
size_t BatchSlot::reserve_size() const {
  return sizeof(ReserveHeader) + (ctx_.schedule.B == 0 ? 0 : impl_->reserve_size());
}
size_t BatchSlot::buffer_alignment() const {
  return impl_ ? impl_->buffer_alignment() : alignof(double);
}

void BatchSlot::forward(const ForwardArgs& in, WorkspacePool& own) try {
  const bool lstm = ctx_.config.cell == CellType::lstm;
  require(in.x, ctx_.x_numel(), "forward: x");
  require(in.weights, "forward: weights");
  require(in.y, ctx_.y_numel(), "forward: y");
  if (!lstm && in.c0)
    invalid(std::string("forward: c0 given but cell is ") + to_string(ctx_.config.cell));
  if (!lstm && in.cy)
    invalid(std::string("forward: cy given but cell is ") + to_string(ctx_.config.cell));
  const size_t elem = static_cast<size_t>(dtype_size(ctx_.config.dtype));
  require_aligned(in.x, elem, "forward: x");
  require_aligned(in.h0, elem, "forward: h0");
  require_aligned(in.c0, elem, "forward: c0");
  require_aligned(in.weights, elem, "forward: weights");
  require_aligned(in.y, elem, "forward: y");
  require_aligned(in.hy, elem, "forward: hy");
  require_aligned(in.cy, elem, "forward: cy");
  require_buffer_aligned(in.workspace, *impl_, "forward: workspace");
  if (in.training && ctx_.options.purpose == PlanPurpose::inference) {
    invalid(
        "forward: training is true, but the plan (network) was built for inference "
        "(PlanOptions::purpose);"
        " build it for training to run training forwards and their backwards");
  }
  if (in.training) {
    require_buffer_aligned(in.reserve, *impl_, "forward: reserve");
    require(in.reserve, "forward (training): reserve");
    if (in.reserve_size < reserve_size()) {
      invalid("forward: reserve_size (= " + std::to_string(in.reserve_size) +
              ") is smaller than required (= " + std::to_string(reserve_size()) + ")");
    }
  }
  require_stream_use(*impl_, in.stream, "forward");
  const core::Memory& memory = impl_->memory();
  std::optional<core::WorkspacePool::Lease> lease;
  void* ws = take_workspace(own, *impl_, in.workspace, in.workspace_size,
                            forward_workspace_size(in.training), "forward", &lease);
  ForwardArgs args = in;
  if (in.training) {
    // Marked valid only once the forward has succeeded.
    memory.zero(in.reserve, sizeof(ReserveHeader), in.stream);
    if (memory.on_device()) ReserveLedger::instance().forget(in.reserve, reserve_size());
    args.reserve = static_cast<char*>(in.reserve) + sizeof(ReserveHeader);
    args.reserve_size = in.reserve_size - sizeof(ReserveHeader);
  } else {
    args.reserve = nullptr;
    args.reserve_size = 0;
  }
  if (ctx_.schedule.B != 0) impl_->forward(args, ws);
  if (in.training) {
    ReserveHeader header{};
    header.magic = kReserveMagic;
    header.plan_id = plan_id_;
    header.dropout_counter = in.dropout_counter;
    memory.copy_from_host(in.reserve, &header, sizeof(header), in.stream);
    if (memory.on_device()) {
      ReserveLedger::instance().record(in.reserve, reserve_size(), plan_id_, in.dropout_counter);
    }
  }
  if (lease) memory.wait(in.stream);  // the own workspace is free again only when done
} catch (const std::bad_alloc&) {
  // Execution allocates only the workspace of a call that passes none (its failure is
  // already an Error); anything else the standard library may need is reported the same way.
  throw Error(Status::out_of_memory, "forward: out of memory");
}

void BatchSlot::backward(const BackwardArgs& in, WorkspacePool& own) try {
  if (ctx_.options.purpose == PlanPurpose::inference) {
    invalid(
        "backward: the plan (network) was built for inference (PlanOptions::purpose), which runs "
        "no "
        "backward; build it for training");
  }
  const bool lstm = ctx_.config.cell == CellType::lstm;
  require(in.x, ctx_.x_numel(), "backward: x");
  require(in.weights, "backward: weights");
  require(in.reserve, "backward: reserve");
  const size_t elem = static_cast<size_t>(dtype_size(ctx_.config.dtype));
  for (auto [p, name] : {std::pair<const void*, const char*>{in.x, "backward: x"},
                         {in.h0, "backward: h0"},
                         {in.c0, "backward: c0"},
                         {in.weights, "backward: weights"},
                         {in.dy, "backward: dy"},
                         {in.dhy, "backward: dhy"},
                         {in.dcy, "backward: dcy"},
                         {in.dx, "backward: dx"},
                         {in.dh0, "backward: dh0"},
                         {in.dc0, "backward: dc0"},
                         {in.dweights, "backward: dweights"}}) {
    require_aligned(p, elem, name);
  }
  require_buffer_aligned(in.workspace, *impl_, "backward: workspace");
  require_buffer_aligned(in.reserve, *impl_, "backward: reserve");
  if (!lstm && (in.c0 || in.dcy || in.dc0)) {
    invalid(std::string("backward: c0/dcy/dc0 given but cell is ") + to_string(ctx_.config.cell));
  }
  if (in.reserve_size < reserve_size()) {
    invalid("backward: reserve_size (= " + std::to_string(in.reserve_size) +
            ") is smaller than required (= " + std::to_string(reserve_size()) + ")");
  }
  require_stream_use(*impl_, in.stream, "backward");
  const core::Memory& memory = impl_->memory();
  // On a device the ledger knows the reserves written at their own address, which spares a
  // synchronising read of the header; a reserve it does not know (copied) is read.
  ReserveHeader header{};
  const auto known = memory.on_device() ? ReserveLedger::instance().find(in.reserve) : std::nullopt;
  if (known) {
    header.magic = kReserveMagic;
    header.plan_id = known->plan_id;
    header.dropout_counter = known->dropout_counter;
  } else {
    memory.copy_to_host(&header, in.reserve, sizeof(header), in.stream);
  }
  if (header.magic != kReserveMagic || header.plan_id != plan_id_) {
    invalid(
        "backward: reserve was not written by a training forward of this plan (network and shape)");
  }
  BackwardArgs args = in;
  args.reserve = static_cast<const char*>(in.reserve) + sizeof(ReserveHeader);
  args.reserve_size = in.reserve_size - sizeof(ReserveHeader);
  std::optional<core::WorkspacePool::Lease> lease;
  void* ws = take_workspace(own, *impl_, in.workspace, in.workspace_size, backward_workspace_size(),
                            "backward", &lease);
  if (ctx_.schedule.B == 0) {
    // No sequence contributes: overwritten weight gradients are zero, accumulated ones
    // keep what they hold; dx, dh0 and dc0 have no elements.
    if (in.dweights != nullptr && in.weight_grad_mode == GradMode::overwrite) {
      memory.zero(in.dweights, static_cast<size_t>(ctx_.weights.numel()) * elem, in.stream);
    }
    return;
  }
  impl_->backward(args, ws, header.dropout_counter);
  if (lease) memory.wait(in.stream);
} catch (const std::bad_alloc&) {
  // Execution allocates only the workspace of a call that passes none (its failure is
  // already an Error); anything else the standard library may need is reported the same way.
  throw Error(Status::out_of_memory, "backward: out of memory");
}

}  // namespace core

uint64_t BackendImpl::choice_id() const {
  core::Fingerprint f;
  return f.add(name()).value();
}

}  // namespace rnnx
