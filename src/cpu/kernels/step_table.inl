// The table of kernel_dispatch.hpp for a vector type V: every kernel of step_kernels.inl,
// onnx_step_kernels.inl and the array activations, instantiated for V. Pasted last into
// each ISA's namespace; no file-level includes.

template <class V>
constexpr StepKernels<typename V::S> step_table(const char* isa, int cost_scale) {
  return StepKernels<typename V::S>{
      isa,
      V::W,
      cost_scale,
      &rnn_forward_tile<V>,
      &lstm_forward_tile<V>,
      &proj_forward_tile<V>,
      &gru_forward_tile<V>,
      &gru_orig_gates_forward_tile<V>,
      &gru_orig_forward_tile<V>,
      &rnn_backward_tile<V>,
      &proj_backward_tile<V>,
      &lstm_backward_tile<V>,
      &gru_backward_tile<V>,
      &gru_orig_backward_n_tile<V>,
      &gru_orig_backward_r_tile<V>,
      &onnx_rnn_forward_tile<V>,
      &onnx_lstm_forward_tile<V>,
      &onnx_gru_forward_tile<V>,
      &onnx_gru_orig_gates_forward_tile<V>,
      &onnx_gru_orig_forward_tile<V>,
      &onnx_rnn_backward_tile<V>,
      &onnx_lstm_backward_tile<V>,
      &onnx_gru_backward_tile<V>,
      &onnx_gru_orig_backward_n_tile<V>,
      &onnx_gru_orig_backward_r_tile<V>,
      &apply_activation<V, &V::exp>,
      &apply_activation<V, &V::sigmoid>,
      &apply_activation<V, &V::tanh>,
      &activate_array<V>,
      &activation_grad_array<V>,
  };
}
