// The step kernels of the cpu backend, listed once. From this list come the kernel table's
// entries (kernel_dispatch.hpp's StepKernels), the threaded entry points' declarations
// (cell_kernels.hpp, extended_cell.hpp), their definitions and instantiations
// (cell_kernels.cpp) and each ISA's table (kernels/step_table.inl). A new kernel (a cell, an
// int8 path) is one line here plus its tile function <name>_tile<V> in
// kernels/step_kernels.inl (and extended_<name>_tile<V> in kernels/extended_step_kernels.inl).
//
// RNNX_STEP_KERNELS(X) calls X(name, Args, cells, cost, extended) for each kernel:
//   name      the kernel, its table entry and its tile function's stem
//   Args      its argument struct (cell_kernels.hpp), a template on the working type
//   cells     the member of Args that counts a row's cells (H, or P for the projection)
//   cost      one cell's time in units of 0.1 ns: the float32 AVX-512 kernels on one core of a
//             Xeon (Emerald Rapids), data in cache; cell_kernels.cpp splits a step over
//             threads by it (other tables scale it by their cost_scale)
//   extended  1 where ONNX's generic variant extended_<name> exists (extended_cell.hpp)
// The order is the table's: forward kernels, then backward ones.
#pragma once

#define RNNX_STEP_KERNELS(X)                               \
  X(rnn_forward, RnnForward, H, 6, 1)                      \
  X(lstm_forward, LstmForward, H, 27, 1)                   \
  X(proj_forward, ProjForward, P, 2, 0)                    \
  X(gru_forward, GruForward, H, 18, 1)                     \
  X(gru_orig_gates_forward, GruOrigGatesForward, H, 12, 1) \
  X(gru_orig_forward, GruOrigForward, H, 7, 1)             \
  X(rnn_backward, RnnBackward, H, 1, 1)                    \
  X(proj_backward, ProjBackward, P, 1, 0)                  \
  X(lstm_backward, LstmBackward, H, 9, 1)                  \
  X(gru_backward, GruBackward, H, 5, 1)                    \
  X(gru_orig_backward_n, GruOrigBackwardN, H, 4, 1)        \
  X(gru_orig_backward_r, GruOrigBackwardR, H, 2, 1)

// RNNX_WHEN(extended, ...): the tokens when the list's flag is 1, nothing when 0.
#define RNNX_WHEN_0(...)
#define RNNX_WHEN_1(...) __VA_ARGS__
#define RNNX_WHEN(flag, ...) RNNX_WHEN_##flag(__VA_ARGS__)
