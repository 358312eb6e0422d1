// The forward and backward passes of the cpu backend: layer, direction and time loops
// around the GEMM engine and the fused step kernels.
#pragma once

#include <omp.h>

#include <cstdint>
#include <exception>

#include "cpu/onnx_cell.hpp"
#include "cpu/plan_spec.hpp"
#include "rnnx/plan.hpp"

namespace rnnx::cpu {

// `workspace` holds carve_forward(p, args.training); args.reserve (training) the layers
// at p.reserve_layer.
template <typename T>
void run_forward(const PlanSpec& p, const ForwardArgs& args, void* workspace);

// `workspace` holds carve_backward(p); args.reserve what the training forward kept.
template <typename T>
void run_backward(const PlanSpec& p, const BackwardArgs& args, void* workspace,
                  uint64_t dropout_counter);

// Where the previous state of step t's rows comes from, in the direction's own order
// (`reversed`: PlanSpec::reversed(d)): rows i < count are the rows of step `step` (packed
// rows from offsets[step]); the others start their sequence at t and read the initial state.
struct PrevStep {
  int64_t count = 0;
  int64_t step = 0;
};
inline PrevStep prev_step(const core::Schedule& s, bool reversed, int64_t t) {
  if (!reversed) return t > 0 ? PrevStep{s.batch_sizes[t], t - 1} : PrevStep{0, 0};
  return t + 1 < s.T_eff ? PrevStep{s.batch_sizes[t + 1], t + 1} : PrevStep{0, 0};
}

// The generic kernels' options for one layer and direction (PlanSpec::onnx_cell); the
// per-step pointers (gate_pass, pre) are the caller's.
template <typename T>
OnnxCell<T> onnx_cell_of(const PlanSpec& p, const T* weights, const ParamOffsets& po, int64_t d) {
  OnnxCell<T> o;
  if (!p.onnx_cell) return o;
  const Config& c = p.config();
  o.acts = p.acts[d].data();
  o.input_forget = p.cell == CellType::lstm && c.input_forget;
  o.gate_clip = Clamp<T>(Clip{p.gate_clip, -c.gate_clip, c.gate_clip}, c.clip_nan);
  o.peephole = p.peephole ? weights + po.w_peephole : nullptr;
  return o;
}

// One step kernel: the fast one, or the generic one when the plan has ONNX cell options.
template <typename K, typename T>
void step(const PlanSpec& p, void (*fast)(const K&), void (*generic)(const K&, const OnnxCell<T>&),
          const OnnxCell<T>& o, const K& k) {
  if (p.onnx_cell) {
    generic(k, o);
  } else {
    fast(k);
  }
}

// Runs fn(0) and fn(1), the time loops of the two directions, on two OpenMP threads at once
// (both on one if the runtime gives only one). Whatever they start (step kernels, GEMMs)
// runs on their own thread. The first exception is rethrown once both are done.
template <typename Fn>
void run_directions_concurrently(const Fn& fn) {
  std::exception_ptr error[2];
#pragma omp parallel num_threads(2)
  {
    omp_set_num_threads(1);  // for regions nested in this one (this thread's setting only)
    const int n = omp_get_num_threads();
    for (int d = omp_get_thread_num(); d < 2; d += n) {
      try {
        fn(d);
      } catch (...) {
        error[d] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& e : error) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace rnnx::cpu
