// The generic step kernels: one time step of each cell with ONNX's options that change the
// cell's equations (activation functions, peepholes, gate clip, coupled input-forget gate),
// forward and backward. They take the same arguments as the fast kernels of
// cell_kernels.hpp plus an OnnxCell, are vectorised per ISA like them
// (src/cpu/kernels/onnx_step_kernels.inl, entries onnx_* of kernel_dispatch.hpp's table,
// activations from src/cpu/kernels/activations.inl) and are split over threads the same way
// (cell_kernels.cpp); only plans with PlanSpec::onnx_cell run them.
#pragma once

#include <cstdint>

#include "cpu/cell_kernels.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cpu {

// The options of one direction. Where the fast kernels keep activated gates (`gates`),
// these keep the gate pre-activations after the gate clip, from which backward takes
// both the activations and their derivatives.
template <typename T>
struct OnnxCell {
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

// Forward: as the fast kernels, but `gates` (RNN: OnnxCell::pre) returns pre-activations.
template <typename T>
void onnx_rnn_forward(const StepKernels<T>& s, const RnnForward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_lstm_forward(const StepKernels<T>& s, const LstmForward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_gru_forward(const StepKernels<T>& s, const GruForward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_gru_orig_gates_forward(const StepKernels<T>& s, const GruOrigGatesForward<T>& k,
                                 const OnnxCell<T>& o);
template <typename T>
void onnx_gru_orig_forward(const StepKernels<T>& s, const GruOrigForward<T>& k,
                           const OnnxCell<T>& o);

// Backward: as the fast kernels, reading pre-activations where they read activated gates
// (RNN: OnnxCell::pre instead of h).
template <typename T>
void onnx_rnn_backward(const StepKernels<T>& s, const RnnBackward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_lstm_backward(const StepKernels<T>& s, const LstmBackward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_gru_backward(const StepKernels<T>& s, const GruBackward<T>& k, const OnnxCell<T>& o);
template <typename T>
void onnx_gru_orig_backward_n(const StepKernels<T>& s, const GruOrigBackwardN<T>& k,
                              const OnnxCell<T>& o);
template <typename T>
void onnx_gru_orig_backward_r(const StepKernels<T>& s, const GruOrigBackwardR<T>& k,
                              const OnnxCell<T>& o);

}  // namespace rnnx::cpu
