// The sizes and switches of one cpu plan, derived once from the PlanContext: dimensions,
// which optional parts exist, where each layer's weights sit in the flat buffer, and where
// each layer's block starts in the reserve.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/batch_mover.hpp"
#include "core/direction.hpp"
#include "core/dropout.hpp"
#include "core/step_stages.hpp"
#include "core/weight_gradients.hpp"
#include "cpu/algo.hpp"
#include "cpu/gemm.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "rnnx/weights.hpp"

namespace rnnx::cpu {

// Element offsets of one layer and direction's parameters in the flat weight buffer
// (-1 when absent).
struct ParamOffsets {
  int64_t w_ih = -1, w_hh = -1, b_ih = -1, b_hh = -1, w_hr = -1, w_peephole = -1;
  int64_t of(WeightKind kind) const {
    switch (kind) {
      case WeightKind::w_ih:
        return w_ih;
      case WeightKind::w_hh:
        return w_hh;
      case WeightKind::b_ih:
        return b_ih;
      case WeightKind::b_hh:
        return b_hh;
      case WeightKind::w_hr:
        return w_hr;
      case WeightKind::w_peephole:
        return w_peephole;
    }
    return -1;
  }
};

struct PlanSpec {
  PlanSpec(const PlanContext& ctx, const Algo& algo, Isa isa);
  // What the config alone decides; bind_batch() and set_algo() then fill in the rest.
  PlanSpec(const PlanContext& ctx, Isa isa);

  // The fields of the batch: from ctx's shape and schedule, which a network's batch slot
  // rewrites for every call (core/network_core.hpp). The row maps keep their capacity, so a
  // batch within the envelope of an earlier one allocates nothing.
  void bind_batch();
  // The fields the algorithm decides (the batch's fields must be bound).
  void set_algo(const Algo& algo);

  const PlanContext* ctx;
  Algo algo;  // how this plan runs (algo.hpp); the fields below spell it out
  // The ISA level of its step kernels and packed GEMMs (AlgoSpace::isa), fixed when the
  // plan is built: a cap set later (RNNX_CPU_ISA, set_cpu_isa_limit) changes new plans only.
  Isa isa;
  CellType cell;
  bool gru_lbr;  // GRU linear before reset
  bool proj;     // LSTM projection
  bool bias;
  // The caller's x, y, dy, dx already are packed sorted rows (core::rows_in_place): used
  // where they are, with no gather or scatter.
  bool rows_in_place = false;
  // Otherwise the caller's row of each packed row ([N], core::caller_rows): the row map the
  // packed engine reads x through (forward's input projection, backward's dW_ih), so that
  // only the other engines gather x; and the caller's padding rows (core::padding_rows).
  std::vector<int64_t> caller_rows, padding_rows;
  // The maps of the batch mover (core/batch_mover.hpp) over these: the states of one layer
  // and direction at a time (sorted_to_orig), every sequence's (length 0 included).
  core::BatchMaps batch_maps() const;
  bool cell_clip, proj_clip;
  // ONNX options that change the cell's equations (uses_onnx_cell_math): the time loops run
  // the extended cells' step kernels (extended_cell.hpp), which keep gate pre-activations in the
  // reserve's gates (also for RNN) and, with gate_clip, the clip's pass flags.
  bool extended_cell = false;
  bool gate_clip = false;
  bool peephole = false;
  std::vector<Activation> acts[2];  // each direction's activations, defaults filled in
  double dropout;
  int64_t L, D, H, P, G, GH, I0, DP;
  int64_t B = 0, N = 0, T_eff = 0;   // batch, real tokens, steps actually run
  std::vector<ParamOffsets> params;  // [L * D]
  // [L] the weight gradients backward makes over the tokens of each layer (built with the
  // plan: a call with the caller's workspace allocates nothing).
  std::vector<core::WeightGradients> weight_grads;
  core::StepStages stages;            // the stages of a forward and a backward step, in order
  std::vector<size_t> reserve_layer;  // [L] byte offset of each layer's reserve block
  GemmEngine engine;                  // for the products with recurrent/projection weights
  // The two directions' time loops run at once, one thread each (bidirectional plans for
  // two or more threads); they then have a set of per-direction buffers each.
  bool concurrent_dirs = false;
  // Steps [0, step_input_steps) have at least kStepInputMinRows rows and project their input
  // (x W_ih^T) in the time loop (packed engine); the rows of later steps are projected in
  // bulk before it.
  int64_t step_input_steps = 0;
  // The time loops run as one parallel region each (a TeamCrew, step_crew.hpp):
  // packed engine, at most kPackedChunkRows rows and two or more threads (or forced).
  bool team_loops = false;

  const core::Schedule& schedule() const { return ctx->schedule; }
  const SequenceShape& shape() const { return ctx->shape; }
  const Config& config() const { return ctx->config; }
  int64_t input_width(int64_t l) const { return l == 0 ? I0 : DP; }
  // Dropout follows layer l in training (every layer but the last).
  bool dropout_after(int64_t l) const { return core::dropout_after_layer(config(), l); }
  const ParamOffsets& param(int64_t l, int64_t d) const { return params[l * D + d]; }
  // Direction d runs from each sequence's end (bidirectional d = 1, or `reverse`).
  bool reversed(int64_t d) const { return core::direction_reversed(config(), d); }
  bool is_rnn() const { return cell == CellType::rnn_tanh || cell == CellType::rnn_relu; }
  bool gru_orig() const { return cell == CellType::gru && !gru_lbr; }
  // The step kernels of the plan's ISA level.
  template <typename T>
  const StepKernels<T>& kernels() const {
    return step_kernels<T>(isa);
  }
  // Where its products run: the engine at the plan's ISA level.
  GemmRoute gemm() const { return {engine, isa}; }
  // What the packed engine multiplies in: bf16 for GemmEngine::packed_bf16 and packed_amx
  // (math mode allow_conversion on AVX512-BF16), else float32.
  PackedType packed_type() const { return gemm().packed_type(); }
  bool packed_engine() const { return is_packed(engine); }
};

}  // namespace rnnx::cpu
