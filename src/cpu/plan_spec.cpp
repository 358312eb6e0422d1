// PlanSpec: the plan's dimensions and weight offsets, computed once at plan time.
#include "cpu/plan_spec.hpp"

#include "cpu/packed_gemm.hpp"

namespace rnnx::cpu {

PlanSpec::PlanSpec(const PlanContext& c, const Algo& a, Isa i) : PlanSpec(c, i) {
  bind_batch();
  set_algo(a);
}

PlanSpec::PlanSpec(const PlanContext& c, Isa i) : ctx(&c), isa(i) {
  const Config& cfg = c.config;
  cell = cfg.cell;
  gru_lbr = cfg.gru_linear_before_reset;
  proj = cfg.cell == CellType::lstm && cfg.proj_size > 0;
  bias = cfg.bias;
  cell_clip = cfg.cell == CellType::lstm && cfg.cell_clip.enabled;
  proj_clip = proj && cfg.proj_clip.enabled;
  dropout = cfg.dropout;
  extended_cell = uses_onnx_cell_math(cfg);
  gate_clip = cfg.gate_clip > 0.0;
  peephole = cfg.cell == CellType::lstm && cfg.peephole;
  L = cfg.num_layers;
  D = cfg.num_directions();
  H = cfg.hidden_size;
  P = cfg.output_size();
  G = gates_per_cell(cfg.cell);
  GH = G * H;
  I0 = cfg.input_size;
  DP = D * P;
  for (int64_t d = 0; d < D; ++d) acts[d] = direction_activations(cfg, d);
  stages = core::step_stages(cfg);
  params.resize(L * D);
  for (int64_t l = 0; l < L; ++l) {
    for (int64_t d = 0; d < D; ++d) {
      auto off = [&](WeightKind kind) -> int64_t {
        const WeightParam* w = c.weights.get(l, d, kind);
        return w ? w->offset : -1;
      };
      params[l * D + d] = {off(WeightKind::w_ih), off(WeightKind::w_hh),
                           off(WeightKind::b_ih), off(WeightKind::b_hh),
                           off(WeightKind::w_hr), off(WeightKind::w_peephole)};
    }
    weight_grads.push_back(core::weight_gradients(cfg, input_width(l)));
  }
  reserve_layer.resize(L);
}

void PlanSpec::bind_batch() {
  rows_in_place = core::rows_in_place(ctx->shape, ctx->schedule);
  if (rows_in_place) {
    caller_rows.clear();
    padding_rows.clear();
  } else {
    core::caller_rows(ctx->shape, ctx->schedule, caller_rows);
    core::padding_rows(ctx->shape, ctx->schedule, padding_rows);
  }
  B = ctx->schedule.B;
  N = ctx->schedule.tokens;
  T_eff = ctx->schedule.T_eff;
}

core::BatchMaps PlanSpec::batch_maps() const {
  const core::Schedule& s = ctx->schedule;
  return {.tokens = s.tokens,
          .caller_rows = rows_in_place ? nullptr : caller_rows.data(),
          .padding_rows = padding_rows.data(),
          .padding = static_cast<int64_t>(padding_rows.size()),
          .state_rows = s.sorted_to_orig.data(),
          .states = s.B};
}

void PlanSpec::set_algo(const Algo& a) {
  algo = a;
  engine = a.engine;
  concurrent_dirs = a.concurrent_dirs;
  team_loops = a.team_loops;
  const int64_t min_rows = step_input_min_rows(a.input);
  step_input_steps = 0;
  while (step_input_steps < T_eff && ctx->schedule.batch_sizes[step_input_steps] >= min_rows) {
    ++step_input_steps;
  }
}

}  // namespace rnnx::cpu
