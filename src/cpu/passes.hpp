// The forward and backward passes of the cpu backend: layer, direction and time loops
// around the GEMM engine and the fused step kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <type_traits>

#include "cpu/extended_cell.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/plan_spec.hpp"
#include "cpu/rows.hpp"
#include "cpu/thread_pool.hpp"
#include "rnnx/plan.hpp"

namespace rnnx::cpu {

// `workspace` holds carve_forward(p, args.training); args.reserve (training) the layers
// at p.reserve_layer. `kept` (packed engine, or null): a network's packed copy of these
// weights, [L * D] blocks (packed_weights.hpp), used instead of packing them into the
// workspace.
template <typename T>
void run_forward(const PlanSpec& p, const ForwardArgs& args, void* workspace,
                 T* const* kept = nullptr);

// Packs layer l, direction d's forward weights into `block` (forward_kept_block_floats
// floats) as run_forward's `kept` holds them.
template <typename T>
void pack_kept_forward_weights(const PlanSpec& p, const T* weights, int64_t l, int64_t d, T* block);

// `workspace` holds carve_backward(p); args.reserve what the training forward kept.
template <typename T>
void run_backward(const PlanSpec& p, const BackwardArgs& args, void* workspace,
                  uint64_t dropout_counter);

// The batch's mover (core/batch_mover.hpp) on the host's threaded copier.
template <typename T>
core::BatchMover batch_mover(const PlanSpec& p) {
  static const HostRows<T> copier;
  return core::BatchMover(copier, p.batch_maps());
}

// One of four things by the plan's cell: a time loop binds its cell stage so, once.
template <typename Fn>
Fn by_cell(const PlanSpec& p, Fn rnn, Fn lstm, Fn gru, Fn gru_orig) {
  switch (p.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu:
      return rnn;
    case CellType::lstm:
      return lstm;
    case CellType::gru:
      break;
  }
  return p.gru_orig() ? gru_orig : gru;
}

using core::prev_step;
using core::PrevStep;

// The generic kernels' options for one layer and direction (PlanSpec::extended_cell); the
// per-step pointers (gate_pass, pre) are the caller's.
template <typename T>
ExtendedCell<T> extended_cell_of(const PlanSpec& p, const T* weights, const ParamOffsets& po,
                                 int64_t d) {
  ExtendedCell<T> o;
  if (!p.extended_cell) return o;
  const Config& c = p.config();
  o.acts = p.acts[d].data();
  o.input_forget = p.cell == CellType::lstm && c.input_forget;
  o.gate_clip = Clamp<T>(Clip{p.gate_clip, -c.gate_clip, c.gate_clip}, c.clip_nan);
  o.peephole = p.peephole ? weights + po.w_peephole : nullptr;
  return o;
}

// Runs fn(0) and fn(1), the time loops of the two directions, on two threads at once (both
// on one if the pool gives only one). Whatever they start (step kernels, GEMMs) runs on their
// own thread. The first exception is rethrown once both are done.
template <typename Fn>
void run_directions_concurrently(const Fn& fn) {
  std::exception_ptr error[2];
  parallel_region(2, [&](int th, int n) {
    for (int d = th; d < 2; d += n) {
      try {
        fn(d);
      } catch (...) {
        error[d] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : error) {
    if (e) std::rethrow_exception(e);
  }
}

// The direction loop of one layer, the same for both passes: before(d) (on all threads:
// forward's bulk input projection, backward's gathers), loop(d) (the time loop) and
// after(d) (backward's all-token GEMMs) for each direction; with concurrent directions
// (PlanSpec::concurrent_dirs, two threads or more) both befores, then the two loops at once,
// one thread each, then both afters.
template <typename Before, typename Loop, typename After>
void for_each_direction(const PlanSpec& p, const Before& before, const Loop& loop,
                        const After& after) {
  if (p.concurrent_dirs && p.D == 2 && max_threads() >= 2) {
    for (int64_t d = 0; d < 2; ++d) before(d);
    run_directions_concurrently(loop);
    for (int64_t d = 0; d < 2; ++d) after(d);
  } else {
    for (int64_t d = 0; d < p.D; ++d) {
      before(d);
      loop(d);
      after(d);
    }
  }
}

}  // namespace rnnx::cpu
