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

// Forward: as the fast kernels, but `gates` (RNN: ExtendedCell::pre) returns pre-activations.
template <typename T>
void extended_rnn_forward(const StepKernels<T>& s, const RnnForward<T>& k,
                          const ExtendedCell<T>& o);
template <typename T>
void extended_lstm_forward(const StepKernels<T>& s, const LstmForward<T>& k,
                           const ExtendedCell<T>& o);
template <typename T>
void extended_gru_forward(const StepKernels<T>& s, const GruForward<T>& k,
                          const ExtendedCell<T>& o);
template <typename T>
void extended_gru_orig_gates_forward(const StepKernels<T>& s, const GruOrigGatesForward<T>& k,
                                     const ExtendedCell<T>& o);
template <typename T>
void extended_gru_orig_forward(const StepKernels<T>& s, const GruOrigForward<T>& k,
                               const ExtendedCell<T>& o);

// Backward: as the fast kernels, reading pre-activations where they read activated gates
// (RNN: ExtendedCell::pre instead of h).
template <typename T>
void extended_rnn_backward(const StepKernels<T>& s, const RnnBackward<T>& k,
                           const ExtendedCell<T>& o);
template <typename T>
void extended_lstm_backward(const StepKernels<T>& s, const LstmBackward<T>& k,
                            const ExtendedCell<T>& o);
template <typename T>
void extended_gru_backward(const StepKernels<T>& s, const GruBackward<T>& k,
                           const ExtendedCell<T>& o);
template <typename T>
void extended_gru_orig_backward_n(const StepKernels<T>& s, const GruOrigBackwardN<T>& k,
                                  const ExtendedCell<T>& o);
template <typename T>
void extended_gru_orig_backward_r(const StepKernels<T>& s, const GruOrigBackwardR<T>& k,
                                  const ExtendedCell<T>& o);

}  // namespace rnnx::cpu
