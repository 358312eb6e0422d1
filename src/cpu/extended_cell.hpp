// The extended cells' step kernels: one time step of each cell with the options that change
// its equations (ONNX's activation functions, peepholes, gate clip, coupled input-forget
// gate; uses_onnx_cell_math() says when a config has them), forward and backward. They take
// the same arguments as the fixed cells' kernels of cell_kernels.hpp plus an ExtendedCell,
// are vectorised per ISA like them (src/cpu/kernels/extended_step_kernels.inl, the
// extended_* entries of kernel_dispatch.hpp's table, the unit's math from
// core/cell_math.hpp) and are split over threads the same way (cell_kernels.cpp); only plans
// with PlanSpec::extended_cell run them. (impl_name() still says "/onnx-cell", the name users
// and scripts already match.)
#pragma once

#include <cstdint>

#include "cpu/cell_kernels.hpp"
#include "cpu/step_kernel_list.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cpu {

// The options of one direction. Where the fast kernels keep activated gates (`gates`),
// these keep the gate pre-activations after the gate clip, from which backward takes
// both the activations and their derivatives.
template <typename T>
struct ExtendedCell {
  const Activation* acts = nullptr;  // the direction's activations: LSTM f, g, h; GRU f, g; RNN f
  bool input_forget = false;         // LSTM: f = 1 - i
  Clamp<T> gate_clip;                // [-gate_clip, gate_clip] on every gate pre-activation
  const T* peephole = nullptr;       // LSTM [3H] i, f, o, or null
  // Optional [rows, G*H]: whether the gate clip passed the gradient (forward writes it,
  // backward reads it; null: it passed everywhere).
  uint8_t* gate_pass = nullptr;
  // RNN: [rows, H] where the input projection is and the pre-activation is kept, or null
  // when the input projection is in y (inference) and nothing is kept.
  T* pre = nullptr;
};

// extended_<name>(table, args, options) for each kernel of step_kernel_list.hpp with an
// extended variant. Forward: as the fast kernels, but `gates` (RNN: ExtendedCell::pre)
// returns pre-activations. Backward: as the fast kernels, reading pre-activations where they
// read activated gates (RNN: ExtendedCell::pre instead of h).
#define RNNX_DECLARE(name, Args, cells, cost, extended)           \
  RNNX_WHEN(extended, template <typename T> void extended_##name( \
                          const StepKernels<T>& s, const Args<T>& k, const ExtendedCell<T>& o);)
RNNX_STEP_KERNELS(RNNX_DECLARE)
#undef RNNX_DECLARE

// The same by their arguments' type, as cell_kernels.hpp's run_step_kernel.
#define RNNX_BY_ARGS(name, Args, cells, cost, extended)                         \
  RNNX_WHEN(                                                                    \
      extended, template <typename T>                                           \
                void run_step_kernel(const StepKernels<T>& s, const Args<T>& k, \
                                     const ExtendedCell<T>& o) { extended_##name(s, k, o); })
RNNX_STEP_KERNELS(RNNX_BY_ARGS)
#undef RNNX_BY_ARGS

}  // namespace rnnx::cpu
