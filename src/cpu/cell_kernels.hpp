// Fused elementwise kernels of one time step of each cell, forward and backward, over the
// rows active at that step: bias, activations, clipping, state update, what backward keeps,
// pre-activation gradients. Equations as in src/reference/cell_math.cpp.
#pragma once

#include <cstdint>

#include "core/cell_math.hpp"
#include "cpu/step_kernel_list.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cpu {

// The per-ISA kernel table (kernel_dispatch.hpp). The threaded entry points below run the
// kernel of the table they are given: a plan passes the one of its ISA level
// (PlanSpec::kernels), fixed when it was built.
template <typename T>
struct StepKernels;

// A Clip and the NaN policy in the working type (core/cell_math.hpp's, which the kernels'
// math takes).
template <typename T>
using Clamp = core::cell::Clamp<T>;

// The previous state of a step's rows: rows i < count_a are the step before (row stride
// lda), the others start their sequence here and read the initial state b (stride ldb).
template <typename T>
struct PrevRows {
  const T* a = nullptr;
  int64_t lda = 0;
  int64_t count_a = 0;
  const T* b = nullptr;
  int64_t ldb = 0;
  const T* row(int64_t i) const { return i < count_a ? a + i * lda : b + i * ldb; }
};

// ---- forward ----

template <typename T>
struct RnnForward {
  int64_t rows = 0, H = 0;
  bool relu = false;
  const T* bias = nullptr;  // [H] b_ih + b_hh
  const T* hg = nullptr;    // [rows, H] h_{t-1} W_hh^T
  T* y = nullptr;           // in: x W_ih^T; out: h_t
  int64_t ld_y = 0;
  T* h_state = nullptr;  // [rows, H] out: h_t
};

template <typename T>
struct LstmForward {
  int64_t rows = 0, H = 0;
  const T* bias = nullptr;  // [4H] b_ih + b_hh
  const T* hg = nullptr;    // [rows, 4H] h_{t-1} W_hh^T
  T* gates = nullptr;       // [rows, 4H] in: x W_ih^T; out: activated i, f, g, o
  // Write the activated gates out (training: backward reads them); when false, o's row is
  // still written (the kernel's second pass reads it back) and i, f, g's rows are left as they
  // were.
  bool keep_gates = true;
  T* c_state = nullptr;       // [rows, H] in: c_{t-1}; out: c_t (clipped)
  T* c_keep = nullptr;        // optional [rows, H]: c_t kept for backward
  uint8_t* c_pass = nullptr;  // optional [rows, H]: whether the cell clip passes gradient
  Clamp<T> cell_clip;
  T* h = nullptr;  // out: o * tanh(c_t): the output, or h_full with projection
  int64_t ld_h = 0;
  T* h_state = nullptr;  // optional [rows, H]: the new state (no projection)
};

// LSTMP after the projection GEMM wrote r_raw = h_full W_hr^T into y.
template <typename T>
struct ProjForward {
  int64_t rows = 0, P = 0;
  T* y = nullptr;  // in: r_raw; out: r (clipped)
  int64_t ld_y = 0;
  uint8_t* pass = nullptr;  // optional [rows, P]
  Clamp<T> proj_clip;
  T* h_state = nullptr;  // [rows, P] out: r
};

// GRU, linear before reset: n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)).
template <typename T>
struct GruForward {
  int64_t rows = 0, H = 0;
  const T* bias = nullptr;  // [3H] r, z: b_ih + b_hh; n: b_in
  const T* b_hn = nullptr;  // [H]
  const T* hg = nullptr;    // [rows, 3H] h_{t-1} W_hh^T
  T* gates = nullptr;       // [rows, 3H] in: x W_ih^T; out: r, z, n
  // Write r, z, n out (training: backward reads them); when false, z's row and n's
  // pre-activation in n's row are still written (the kernel's second pass reads them back).
  bool keep_gates = true;
  T* hn_keep = nullptr;  // optional [rows, H]: h W_hn^T + b_hn, kept for backward
  T* h_state = nullptr;  // [rows, H] in: h_{t-1}; out: h_t
  T* y = nullptr;
  int64_t ld_y = 0;
};

// Original GRU, first half: r, z and r * h_{t-1} (the input of the W_hn GEMM).
template <typename T>
struct GruOrigGatesForward {
  int64_t rows = 0, H = 0;
  const T* bias = nullptr;  // [3H], r and z used
  const T* hg = nullptr;    // [rows, ld_hg] h_{t-1} W_h{r,z}^T in the first 2H columns
  int64_t ld_hg = 0;
  T* gates = nullptr;          // [rows, 3H] r, z: in x W_ih^T; out activated
  const T* h_state = nullptr;  // h_{t-1}
  T* rh = nullptr;             // [rows, H] out: r * h_{t-1}
};

// Original GRU, second half: n = tanh(x W_in^T + b_in + (r*h) W_hn^T + b_hn) and h_t.
template <typename T>
struct GruOrigForward {
  int64_t rows = 0, H = 0;
  const T* bias = nullptr;  // [3H], n (b_in) used
  const T* b_hn = nullptr;  // [H]
  const T* u = nullptr;     // [rows, ld_u] (r*h) W_hn^T
  int64_t ld_u = 0;
  T* gates = nullptr;    // n: in x W_in^T, out n; z read
  T* h_state = nullptr;  // in: h_{t-1}; out: h_t
  T* y = nullptr;
  int64_t ld_y = 0;
};

// ---- backward ----
// dh is the state gradient arriving from the step after; dy (optional, row stride ld_dy)
// the gradient of this step's output. Their sum is dL/dh_t.

template <typename T>
struct RnnBackward {
  int64_t rows = 0, H = 0;
  bool relu = false;
  const T* dh = nullptr;  // [rows, H]
  const T* dy = nullptr;
  int64_t ld_dy = 0;
  const T* h = nullptr;  // h_t (the layer output before dropout)
  int64_t ld_h = 0;
  T* dg = nullptr;  // [rows, H] out: gradient of the pre-activation
};

// LSTMP: dr = dh + dy where the projection clip passes, else 0.
template <typename T>
struct ProjBackward {
  int64_t rows = 0, P = 0;
  const T* dh = nullptr;  // [rows, P]
  const T* dy = nullptr;
  int64_t ld_dy = 0;
  const uint8_t* pass = nullptr;  // optional [rows, P]
  T* dr = nullptr;                // [rows, P]
};

template <typename T>
struct LstmBackward {
  int64_t rows = 0, H = 0;
  const T* dh = nullptr;  // [rows, H] dL/dh_full (with dy added when dy is set)
  const T* dy = nullptr;
  int64_t ld_dy = 0;
  const T* gates = nullptr;  // [rows, 4H] i, f, g, o
  const T* c = nullptr;      // [rows, H] c_t (clipped)
  PrevRows<T> c_prev;
  const uint8_t* c_pass = nullptr;  // optional [rows, H]
  T* dc_state = nullptr;            // [rows, H] in: dL/dc_t from later; out: dL/dc_{t-1}
  T* dg = nullptr;                  // [rows, 4H]
};

// GRU, linear before reset. dh is overwritten with dh * z, the part of dL/dh_{t-1} that
// bypasses the GEMM; the caller adds dgh W_hh after.
template <typename T>
struct GruBackward {
  int64_t rows = 0, H = 0;
  T* dh = nullptr;  // [rows, H]
  const T* dy = nullptr;
  int64_t ld_dy = 0;
  const T* gates = nullptr;   // [rows, 3H]
  const T* h_prev = nullptr;  // [rows, H]
  const T* hn = nullptr;      // [rows, H] h W_hn^T + b_hn
  T* dg = nullptr;            // [rows, 3H] input side
  T* dgh = nullptr;           // [rows, 3H] hidden side (n: dn * r)
};

// Original GRU, first half: dz, dn into dg; dh becomes dh * z.
template <typename T>
struct GruOrigBackwardN {
  int64_t rows = 0, H = 0;
  T* dh = nullptr;
  const T* dy = nullptr;
  int64_t ld_dy = 0;
  const T* gates = nullptr;
  const T* h_prev = nullptr;
  T* dg = nullptr;  // [rows, 3H]: z and n written
};

// Original GRU, second half, after d(r*h) = dn W_hn: dr into dg, dh += d(r*h) * r.
template <typename T>
struct GruOrigBackwardR {
  int64_t rows = 0, H = 0;
  const T* drh = nullptr;  // [rows, H]
  const T* gates = nullptr;
  const T* h_prev = nullptr;
  T* dg = nullptr;  // r written
  T* dh = nullptr;
};

// The threaded entry points, one per kernel of step_kernel_list.hpp: name(table, args) runs
// the table's kernel over the step's rows x cells, serially or split over threads.
#define RNNX_DECLARE(name, Args, cells, cost, extended) \
  template <typename T>                                 \
  void name(const StepKernels<T>& s, const Args<T>& k);
RNNX_STEP_KERNELS(RNNX_DECLARE)
#undef RNNX_DECLARE

// The same entry points by their arguments' type (each kernel has its own): for code written
// once over several kernels (step_crew.hpp).
#define RNNX_BY_ARGS(name, Args, cells, cost, extended)             \
  template <typename T>                                             \
  void run_step_kernel(const StepKernels<T>& s, const Args<T>& k) { \
    name(s, k);                                                     \
  }
RNNX_STEP_KERNELS(RNNX_BY_ARGS)
#undef RNNX_BY_ARGS

}  // namespace rnnx::cpu
