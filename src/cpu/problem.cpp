// Problem: the plan's dimensions and weight offsets, computed once at plan time.
#include "cpu/problem.hpp"

#include <omp.h>

#include <cstdlib>
#include <limits>
#include <string>

#include "cpu/packed_gemm.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cpu {
namespace {

// From this many rows a step's input projection is as fast in the loop, on weights packed
// once (about 155 GFLOP/s per core for I = 512, 4H = 2048), as one GEMM over all tokens,
// and its result is then still in cache for the step kernel.
constexpr int64_t kStepInputMinRows = 32;

// RNNX_CPU_DIRECTIONS: "concurrent" or "sequential" forces the choice; unset or "auto"
// runs the directions at once whenever the plan has two or more threads.
bool directions_concurrent(int threads) {
  const char* env = std::getenv("RNNX_CPU_DIRECTIONS");
  const std::string v = env ? env : "";
  if (v == "concurrent") return true;
  if (v == "sequential") return false;
  if (v != "" && v != "auto") {
    throw Error(Status::invalid_argument, "RNNX_CPU_DIRECTIONS (= \"" + v +
                                              "\") must be concurrent, sequential, auto, or unset");
  }
  return threads >= 2;
}

// RNNX_CPU_TIME_LOOP: "team" runs each time loop as one parallel region with a barrier per
// step, "per-step" opens parallel regions inside each step (per product and kernel); unset or
// "auto" is "team" for two or more threads.
bool team_loops_wanted(int threads) {
  const char* env = std::getenv("RNNX_CPU_TIME_LOOP");
  const std::string v = env ? env : "";
  if (v == "team") return true;
  if (v == "per-step") return false;
  if (v != "" && v != "auto") {
    throw Error(Status::invalid_argument,
                "RNNX_CPU_TIME_LOOP (= \"" + v + "\") must be team, per-step, auto, or unset");
  }
  return threads >= 2;
}

// RNNX_CPU_INPUT_PROJECTION: "bulk" projects every row before the time loop, "steps" every
// step's rows in it; unset or "auto" steps with kStepInputMinRows rows or more in the loop
// on the packed engine, the rest in bulk. Returns the fewest rows a step projects in the loop.
int64_t step_input_min_rows(GemmEngine engine) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  const char* env = std::getenv("RNNX_CPU_INPUT_PROJECTION");
  const std::string v = env ? env : "";
  if (v == "bulk") return kNever;
  if (v == "steps") return 1;
  if (v != "" && v != "auto") {
    throw Error(Status::invalid_argument,
                "RNNX_CPU_INPUT_PROJECTION (= \"" + v + "\") must be bulk, steps, auto, or unset");
  }
  return engine != GemmEngine::sgemm ? kStepInputMinRows : kNever;
}

}  // namespace

Problem::Problem(const PlanContext& c) : ctx(&c) {
  const Config& cfg = c.config;
  cell = cfg.cell;
  gru_lbr = cfg.gru_linear_before_reset;
  proj = cfg.cell == CellType::lstm && cfg.proj_size > 0;
  bias = cfg.bias;
  packed = c.shape.layout == Layout::packed;
  cell_clip = cfg.cell == CellType::lstm && cfg.cell_clip.enabled;
  proj_clip = proj && cfg.proj_clip.enabled;
  dropout = cfg.dropout;
  L = cfg.num_layers;
  D = cfg.num_directions();
  H = cfg.hidden_size;
  P = cfg.output_size();
  G = gates_per_cell(cfg.cell);
  GH = G * H;
  I0 = cfg.input_size;
  DP = D * P;
  B = c.schedule.B;
  N = c.schedule.tokens;
  T_eff = c.schedule.T_eff;
  engine = gemm_engine_for(cfg.dtype == DataType::f32, c.math == MathMode::allow_conversion);
  const int threads = c.options.num_threads > 0 ? c.options.num_threads : omp_get_max_threads();
  concurrent_dirs = D == 2 && directions_concurrent(threads);
  const bool team_capable =
      packed_engine() && !proj && !gru_orig() && B <= kPackedChunkRows;
  team_loops = team_capable && team_loops_wanted(threads);
  const int64_t min_rows = step_input_min_rows(engine);
  while (step_input_steps < T_eff && c.schedule.batch_sizes[step_input_steps] >= min_rows) {
    ++step_input_steps;
  }
  params.resize(L * D);
  for (int64_t l = 0; l < L; ++l) {
    for (int64_t d = 0; d < D; ++d) {
      auto off = [&](WeightKind kind) -> int64_t {
        const WeightParam* w = c.weights.get(l, d, kind);
        return w ? w->offset : -1;
      };
      params[l * D + d] = {off(WeightKind::w_ih), off(WeightKind::w_hh), off(WeightKind::b_ih),
                           off(WeightKind::b_hh), off(WeightKind::w_hr)};
    }
  }
}

bool Problem::pack_weights() const {
  // A cap lowered since the plan was built sends the products to dnnl_sgemm (the workspace
  // holds packs of the plan's type only).
  return packed_engine() && packed_gemm_available(packed_type());
}

}  // namespace rnnx::cpu
