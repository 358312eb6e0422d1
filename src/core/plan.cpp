// Plan: validation of the config, the shape and the buffers, backend dispatch, the
// reserve header that ties a backward to its training forward, and thread scoping.
#include "rnnx/plan.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/checked.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(Status::invalid_argument, msg); }

constexpr uint64_t kReserveMagic = 0x72726e7852535631ull;  // "rrnxRSV1"
struct ReserveHeader {
  uint64_t magic;
  uint64_t plan_id;
  uint64_t dropout_counter;
  uint64_t pad[5];
};
static_assert(sizeof(ReserveHeader) == 64, "header keeps the body 64-byte aligned");

// Sets the OpenMP thread count for the duration of a call and restores it after.
class ThreadScope {
 public:
  explicit ThreadScope(int n) : saved_(omp_get_max_threads()), active_(n > 0) {
    if (active_) omp_set_num_threads(n);
  }
  ~ThreadScope() {
    if (active_) omp_set_num_threads(saved_);
  }

 private:
  int saved_;
  bool active_;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

void require(const void* p, const char* name) {
  if (p == nullptr) invalid(std::string(name) + " is null");
}

}  // namespace

struct Plan::State {
  PlanContext ctx;
  std::unique_ptr<BackendImpl> impl;
  std::vector<std::max_align_t> own_workspace;  // used when the caller passes none
  uint64_t plan_id = 0;

  void* workspace(void* given, size_t given_size, size_t needed, const char* call) {
    if (needed == 0) return given;
    if (given != nullptr) {
      if (given_size < needed) {
        invalid(std::string(call) + ": workspace_size (= " + std::to_string(given_size) +
                ") is smaller than required (= " + std::to_string(needed) + ")");
      }
      return given;
    }
    const size_t words = (needed + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (own_workspace.size() < words) own_workspace.resize(words);
    return own_workspace.data();
  }
};

Plan::Plan(const Config& config, const SequenceShape& shape, const PlanOptions& options) {
  validate(config);
  if (options.num_threads < 0) {
    invalid("num_threads (= " + std::to_string(options.num_threads) + ") must be >= 0");
  }
  auto schedule = core::make_schedule(shape);
  // Every buffer a backend carves is at most (T*B) rows of the widest row, per layer, in
  // double: refuse up front what could overflow a size computation later.
  const int64_t widest = std::max({config.input_size, config.num_directions() * config.output_size(),
                                   config.num_directions() * gates_per_cell(config.cell) *
                                       config.hidden_size});
  const int64_t grid = core::checked_mul(schedule.T, schedule.B, "max_seq_len * batch");
  core::checked_mul(core::checked_mul(core::checked_mul(grid, widest, "sequence tensor size"),
                                      config.num_layers, "per-layer buffers"),
                    8 * 4, "buffer bytes");
  state_ = std::make_unique<State>(
      State{PlanContext{config, shape, std::move(schedule), WeightLayout(config), options}, nullptr,
            {}, 0});
  state_->impl = options.backend == Backend::reference ? make_reference_backend(state_->ctx)
                                                       : make_cpu_backend(state_->ctx);
  state_->plan_id = fnv1a(problem_name() + "/" + impl_name());
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const Config& Plan::config() const { return state_->ctx.config; }
const SequenceShape& Plan::shape() const { return state_->ctx.shape; }
const WeightLayout& Plan::weight_layout() const { return state_->ctx.weights; }
int64_t Plan::max_seq_len() const { return state_->ctx.schedule.T; }
int64_t Plan::batch() const { return state_->ctx.schedule.B; }
int64_t Plan::tokens() const { return state_->ctx.schedule.tokens; }

int64_t Plan::x_numel() const {
  const auto& s = state_->ctx.schedule;
  const int64_t rows = shape().layout == Layout::packed ? s.tokens : s.T * s.B;
  return rows * config().input_size;
}
int64_t Plan::y_numel() const {
  const auto& s = state_->ctx.schedule;
  const int64_t rows = shape().layout == Layout::packed ? s.tokens : s.T * s.B;
  return rows * config().num_directions() * config().output_size();
}
int64_t Plan::h_numel() const {
  const auto& c = config();
  return c.num_layers * c.num_directions() * batch() * c.output_size();
}
int64_t Plan::c_numel() const {
  const auto& c = config();
  return c.cell == CellType::lstm ? c.num_layers * c.num_directions() * batch() * c.hidden_size : 0;
}
int64_t Plan::weights_numel() const { return weight_layout().numel(); }

size_t Plan::forward_workspace_size(bool training) const {
  return state_->impl->forward_workspace_size(training);
}
size_t Plan::backward_workspace_size() const { return state_->impl->backward_workspace_size(); }
size_t Plan::reserve_size() const { return sizeof(ReserveHeader) + state_->impl->reserve_size(); }
std::string Plan::impl_name() const { return state_->impl->name(); }

std::string Plan::problem_name() const {
  const auto& c = config();
  const auto& s = state_->ctx.schedule;
  bool full = true;
  for (int64_t len : s.sorted_lengths) full = full && len == s.T;
  std::string cell = to_string(c.cell);
  if (c.cell == CellType::gru && !c.gru_linear_before_reset) cell += "-orig";
  return cell + "_l" + std::to_string(c.num_layers) + (c.bidirectional ? "_bidir" : "_uni") +
         "_t" + std::to_string(s.T) + "_b" + std::to_string(s.B) + "_i" +
         std::to_string(c.input_size) + "_h" + std::to_string(c.hidden_size) + "_p" +
         std::to_string(c.proj_size) + "_len-" + (full ? "full" : "mixed");
}

void Plan::forward(const ForwardArgs& in) {
  const bool lstm = config().cell == CellType::lstm;
  require(in.x, "forward: x");
  require(in.weights, "forward: weights");
  require(in.y, "forward: y");
  if (!lstm && in.c0) invalid(std::string("forward: c0 given but cell is ") + to_string(config().cell));
  if (!lstm && in.cy) invalid(std::string("forward: cy given but cell is ") + to_string(config().cell));
  if (in.training) {
    require(in.reserve, "forward (training): reserve");
    if (in.reserve_size < reserve_size()) {
      invalid("forward: reserve_size (= " + std::to_string(in.reserve_size) +
              ") is smaller than required (= " + std::to_string(reserve_size()) + ")");
    }
  }
  void* ws = state_->workspace(in.workspace, in.workspace_size, forward_workspace_size(in.training),
                               "forward");
  ForwardArgs args = in;
  if (in.training) {
    auto* header = static_cast<ReserveHeader*>(in.reserve);
    std::memset(header, 0, sizeof(ReserveHeader));
    header->magic = kReserveMagic;
    header->plan_id = state_->plan_id;
    header->dropout_counter = in.dropout_counter;
    args.reserve = static_cast<char*>(in.reserve) + sizeof(ReserveHeader);
    args.reserve_size = in.reserve_size - sizeof(ReserveHeader);
  } else {
    args.reserve = nullptr;
    args.reserve_size = 0;
  }
  ThreadScope threads(state_->ctx.options.num_threads);
  state_->impl->forward(args, ws);
}

void Plan::backward(const BackwardArgs& in) {
  const bool lstm = config().cell == CellType::lstm;
  require(in.x, "backward: x");
  require(in.weights, "backward: weights");
  require(in.reserve, "backward: reserve");
  if (!lstm && (in.c0 || in.dcy || in.dc0)) {
    invalid(std::string("backward: c0/dcy/dc0 given but cell is ") + to_string(config().cell));
  }
  if (in.reserve_size < reserve_size()) {
    invalid("backward: reserve_size (= " + std::to_string(in.reserve_size) +
            ") is smaller than required (= " + std::to_string(reserve_size()) + ")");
  }
  const auto* header = static_cast<const ReserveHeader*>(in.reserve);
  if (header->magic != kReserveMagic || header->plan_id != state_->plan_id) {
    invalid("backward: reserve was not written by a training forward of this plan");
  }
  BackwardArgs args = in;
  args.reserve = static_cast<const char*>(in.reserve) + sizeof(ReserveHeader);
  args.reserve_size = in.reserve_size - sizeof(ReserveHeader);
  void* ws = state_->workspace(in.workspace, in.workspace_size, backward_workspace_size(), "backward");
  ThreadScope threads(state_->ctx.options.num_threads);
  state_->impl->backward(args, ws, header->dropout_counter);
}

}  // namespace rnnx
