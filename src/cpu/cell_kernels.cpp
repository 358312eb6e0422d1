// The fused step kernels of cell_kernels.hpp and the generic ones of extended_cell.hpp: the
// per-ISA table of kernel_dispatch.hpp, run on the calling thread for small steps and
// otherwise over the pool's threads (thread_pool.hpp), each taking one contiguous piece of the
// step's rows x cells in row-major order (so a step of one or two rows is split along its cells).
// Every element is computed by the same code whatever the split, so a row's result never depends on
// the thread count.
#include "cpu/cell_kernels.hpp"

#include <algorithm>

#include "cpu/extended_cell.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/step_kernel_list.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// The generic kernels (any activation, peepholes, gate clip) cost about twice as much.
constexpr int64_t kOnnxCostFactor = 2;
// Each thread gets at least 2 us of work: waking a team costs about 0.7 us there.
constexpr int64_t kMinWorkPerThread = 20000;

// A position in a step's rows x cells.
struct Pos {
  int64_t r, c;
};

// Where piece t of n starts: row-major position t/n of the step, moved down to a whole
// vector within its row.
Pos piece_start(int64_t rows, int64_t cells, int vw, int t, int n) {
  const int64_t flat = rows * cells * t / n;
  const int64_t c = flat % cells;
  return Pos{flat / cells, c - c % vw};
}

// The cells from b up to e as at most three tiles: the end of b's row, whole rows, the
// start of e's row.
// tile(Tile) runs one tile of the step.
template <typename TileFn>
void run_piece(const TileFn& tile, int64_t cells, Pos b, Pos e) {
  if (b.r == e.r) {
    if (b.c < e.c) tile(Tile{b.r, b.r + 1, b.c, e.c});
    return;
  }
  int64_t r = b.r;
  if (b.c > 0) {
    tile(Tile{r, r + 1, b.c, cells});
    ++r;
  }
  if (r < e.r) tile(Tile{r, e.r, 0, cells});
  if (e.c > 0) tile(Tile{e.r, e.r + 1, 0, e.c});
}

template <typename T, typename TileFn>
void run_tiles(const StepKernels<T>& table, int64_t rows, int64_t cells, int64_t cost,
               const TileFn& tile) {
  if (rows <= 0 || cells <= 0) return;
  // Inside a parallel region (a caller that threads over something else) stay serial.
  const int64_t work = rows * cells * cost * table.cost_scale;
  const int64_t nt = std::min<int64_t>(max_threads(), work / kMinWorkPerThread);  // 1 in a region
  if (nt <= 1) {
    tile(Tile{0, rows, 0, cells});
    return;
  }
  const int vw = table.vector_width, team = static_cast<int>(nt);
  parallel_region(team, [&](int t, int n) {
    run_piece(tile, cells, piece_start(rows, cells, vw, t, n),
              t + 1 == n ? Pos{rows, 0} : piece_start(rows, cells, vw, t + 1, n));
  });
}

template <typename K, typename T>
void run_step(void (*fn)(const K&, Tile), const StepKernels<T>& table, const K& k, int64_t rows,
              int64_t cells, int64_t cost) {
  run_tiles(table, rows, cells, cost, [&](Tile t) { fn(k, t); });
}

// The generic kernels of ONNX's options: run_step with the cell's options.
template <typename K, typename T>
void run_extended_step(void (*fn)(const K&, const ExtendedCell<T>&, Tile),
                       const StepKernels<T>& table, const K& k, const ExtendedCell<T>& o,
                       int64_t rows, int64_t cells, int64_t cost) {
  run_tiles(table, rows, cells, cost * kOnnxCostFactor, [&](Tile t) { fn(k, o, t); });
}

}  // namespace

// The entry points of every kernel of step_kernel_list.hpp, at its cost per cell, and the
// extended variants where the list has them, each instantiated for float and double.
#define RNNX_DEFINE(name, Args, cells, cost, extended)                                            \
  template <typename T>                                                                           \
  void name(const StepKernels<T>& s, const Args<T>& k) {                                          \
    run_step(s.name, s, k, k.rows, k.cells, cost);                                                \
  }                                                                                               \
  template void name<float>(const StepKernels<float>&, const Args<float>&);                       \
  template void name<double>(const StepKernels<double>&, const Args<double>&);                    \
  RNNX_WHEN(                                                                                      \
      extended,                                                                                   \
      template <typename T>                                                                       \
      void extended_##name(const StepKernels<T>& s, const Args<T>& k, const ExtendedCell<T>& o) { \
        run_extended_step(s.extended_##name, s, k, o, k.rows, k.cells, cost);                     \
      } template void extended_##name<float>(const StepKernels<float>&, const Args<float>&,       \
                                             const ExtendedCell<float>&);                         \
      template void extended_##name<double>(const StepKernels<double>&, const Args<double>&,      \
                                            const ExtendedCell<double>&);)
RNNX_STEP_KERNELS(RNNX_DEFINE)
#undef RNNX_DEFINE

}  // namespace rnnx::cpu
