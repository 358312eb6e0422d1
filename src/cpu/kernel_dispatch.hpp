// The step kernels of cell_kernels.hpp as one table per instruction set and working type,
// and the choice among them at run time. Each table comes from its own translation unit
// (src/cpu/kernels/{scalar,avx2,avx512}.cpp) compiled with that ISA's flags; every entry
// computes one tile of a step (rows [r0, r1) and, within them, the cells [j0, j1) of the
// H or P columns) serially, so the caller decides the threading (cell_kernels.cpp splits
// a step over the pool's threads; a caller already inside a parallel region may hand out tiles
// itself). An element's result does not depend on the tiling or on its position in a
// vector: tails run the same vector code with masked loads and stores.
//
// float32 runs polynomial/rational exp, sigmoid and tanh (a few ulp, see
// src/cpu/kernels/vector_math.inl); float64 runs the scalar table on every ISA, with libm's
// exp and tanh.
#pragma once

#include <cstdint>

#include "core/schedule.hpp"
#include "cpu/cell_kernels.hpp"
#include "cpu/extended_cell.hpp"
#include "cpu/isa.hpp"
#include "cpu/step_kernel_list.hpp"

namespace rnnx::cpu {

struct Tile {
  int64_t r0 = 0, r1 = 0;  // rows
  int64_t j0 = 0, j1 = 0;  // cells within each row
};

template <typename T>
struct StepKernels {
  const char* isa;   // the build these kernels come from: "scalar", "avx2" or "avx512"
  int vector_width;  // elements of T per vector; tiles split at multiples of it run fastest
  int cost_scale;    // time per element relative to the avx512 float32 kernels (threading)

  // One entry per kernel of step_kernel_list.hpp, in its order: the fast kernels, then the
  // extended cells' (ONNX's cell options, extended_cell.hpp) on the same tiles.
#define RNNX_ENTRY(name, Args, cells, cost, extended) void (*name)(const Args<T>&, Tile);
  RNNX_STEP_KERNELS(RNNX_ENTRY)
#undef RNNX_ENTRY
#define RNNX_ENTRY(name, Args, cells, cost, extended) \
  RNNX_WHEN(extended, void (*extended_##name)(const Args<T>&, const ExtendedCell<T>&, Tile);)
  RNNX_STEP_KERNELS(RNNX_ENTRY)
#undef RNNX_ENTRY

  // The activations over n contiguous values (y may equal x), as the kernels compute
  // them; for tests and for other element-wise code.
  void (*exp)(const T* x, T* y, int64_t n);
  void (*sigmoid)(const T* x, T* y, int64_t n);
  void (*tanh)(const T* x, T* y, int64_t n);
  // Any of ONNX's activations and its derivative, as the generic kernels compute them.
  void (*activate)(const Activation& a, const T* x, T* y, int64_t n);
  void (*activation_grad)(const Activation& a, const T* x, T* y, int64_t n);

  // IEEE float16 bits <-> float32 over n contiguous values (the 16-bit data path): widening
  // exact, narrowing to nearest even, NaN kept quiet, bit for bit core/float16.hpp's. Null
  // where the build has no conversion instructions (all but avx512): callers then use
  // core/float16.hpp's loops.
  void (*widen_f16)(const uint16_t* x, float* y, int64_t n);
  void (*narrow_f16)(const float* x, uint16_t* y, int64_t n);

  // The sums over the tokens behind the bias and peephole gradients, core::column_sums and
  // core::peephole_grad_columns compiled for this level: the same bits on every level (each
  // column's additions in row order, in double).
  void (*column_sums)(const T* A, int64_t lda, int64_t rows, int64_t cols, T* out);
  void (*peephole_grad_columns)(const core::Schedule& s, bool reversed, const T* c, const T* c0,
                                const T* dg, int64_t H, int64_t GH, int64_t j0, int64_t j1,
                                bool accumulate, T* dp);
};

// The table's entry for the kernel that takes arguments `k` (each kernel has its own type),
// and its extended variant where the list has one: for code written once over several kernels
// (step_crew.hpp).
#define RNNX_BY_ARGS(name, Args, cells, cost, extended)          \
  template <typename T>                                          \
  auto tile_kernel(const StepKernels<T>& s, const Args<T>&) {    \
    return s.name;                                               \
  }                                                              \
  RNNX_WHEN(                                                     \
      extended, template <typename T> auto extended_tile_kernel( \
                    const StepKernels<T>& s, const Args<T>&) { return s.extended_##name; })
RNNX_STEP_KERNELS(RNNX_BY_ARGS)
#undef RNNX_BY_ARGS

// The kernels of min(isa, isa_detected()); avx512-bf16 runs the avx512 kernels. A plan
// asks for those of its own level (PlanSpec::kernels).
template <typename T>
const StepKernels<T>& step_kernels(Isa isa);

}  // namespace rnnx::cpu
