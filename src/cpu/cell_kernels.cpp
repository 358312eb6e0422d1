// The fused step kernels of cell_kernels.hpp and the generic ones of extended_cell.hpp: the
// per-ISA table of kernel_dispatch.hpp, run on the calling thread for small steps and
// otherwise over OpenMP threads, each taking one contiguous piece of the step's rows x cells in
// row-major order (so a step of one or two rows is split along its cells). Every element is
// computed by the same code whatever the split, so a row's result never depends on the thread
// count.
#include "cpu/cell_kernels.hpp"

#include <algorithm>

#include "cpu/extended_cell.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Cost of one cell (one j of one row) of each kernel in units of 0.1 ns: the float32
// AVX-512 kernels on one core of a Xeon (Emerald Rapids), data in cache; other tables
// scale it by their cost_scale.
constexpr int64_t kCostLstm = 27, kCostGru = 18, kCostRnn = 6, kCostProj = 2;
constexpr int64_t kCostGruGates = 12, kCostGruN = 7;
constexpr int64_t kCostLstmBackward = 9, kCostGruBackward = 5, kCostGruBackwardN = 4;
constexpr int64_t kCostRnnBackward = 1, kCostProjBackward = 1, kCostGruBackwardR = 2;
// The generic kernels (any activation, peepholes, gate clip) cost about twice as much.
constexpr int64_t kOnnxCostFactor = 2;
// Each thread gets at least 2 us of work: waking an OpenMP team costs about 0.7 us there.
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

// ---- forward ----

template <typename T>
void rnn_forward(const StepKernels<T>& s, const RnnForward<T>& k) {
  run_step(s.rnn_forward, s, k, k.rows, k.H, kCostRnn);
}

template <typename T>
void lstm_forward(const StepKernels<T>& s, const LstmForward<T>& k) {
  run_step(s.lstm_forward, s, k, k.rows, k.H, kCostLstm);
}

template <typename T>
void proj_forward(const StepKernels<T>& s, const ProjForward<T>& k) {
  run_step(s.proj_forward, s, k, k.rows, k.P, kCostProj);
}

template <typename T>
void gru_forward(const StepKernels<T>& s, const GruForward<T>& k) {
  run_step(s.gru_forward, s, k, k.rows, k.H, kCostGru);
}

template <typename T>
void gru_orig_gates_forward(const StepKernels<T>& s, const GruOrigGatesForward<T>& k) {
  run_step(s.gru_orig_gates_forward, s, k, k.rows, k.H, kCostGruGates);
}

template <typename T>
void gru_orig_forward(const StepKernels<T>& s, const GruOrigForward<T>& k) {
  run_step(s.gru_orig_forward, s, k, k.rows, k.H, kCostGruN);
}

// ---- backward ----

template <typename T>
void rnn_backward(const StepKernels<T>& s, const RnnBackward<T>& k) {
  run_step(s.rnn_backward, s, k, k.rows, k.H, kCostRnnBackward);
}

template <typename T>
void proj_backward(const StepKernels<T>& s, const ProjBackward<T>& k) {
  run_step(s.proj_backward, s, k, k.rows, k.P, kCostProjBackward);
}

template <typename T>
void lstm_backward(const StepKernels<T>& s, const LstmBackward<T>& k) {
  run_step(s.lstm_backward, s, k, k.rows, k.H, kCostLstmBackward);
}

template <typename T>
void gru_backward(const StepKernels<T>& s, const GruBackward<T>& k) {
  run_step(s.gru_backward, s, k, k.rows, k.H, kCostGruBackward);
}

template <typename T>
void gru_orig_backward_n(const StepKernels<T>& s, const GruOrigBackwardN<T>& k) {
  run_step(s.gru_orig_backward_n, s, k, k.rows, k.H, kCostGruBackwardN);
}

template <typename T>
void gru_orig_backward_r(const StepKernels<T>& s, const GruOrigBackwardR<T>& k) {
  run_step(s.gru_orig_backward_r, s, k, k.rows, k.H, kCostGruBackwardR);
}

// ---- the generic kernels of ONNX's options ----

template <typename T>
void extended_rnn_forward(const StepKernels<T>& s, const RnnForward<T>& k,
                          const ExtendedCell<T>& o) {
  run_extended_step(s.extended_rnn_forward, s, k, o, k.rows, k.H, kCostRnn);
}

template <typename T>
void extended_lstm_forward(const StepKernels<T>& s, const LstmForward<T>& k,
                           const ExtendedCell<T>& o) {
  run_extended_step(s.extended_lstm_forward, s, k, o, k.rows, k.H, kCostLstm);
}

template <typename T>
void extended_gru_forward(const StepKernels<T>& s, const GruForward<T>& k,
                          const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_forward, s, k, o, k.rows, k.H, kCostGru);
}

template <typename T>
void extended_gru_orig_gates_forward(const StepKernels<T>& s, const GruOrigGatesForward<T>& k,
                                     const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_orig_gates_forward, s, k, o, k.rows, k.H, kCostGruGates);
}

template <typename T>
void extended_gru_orig_forward(const StepKernels<T>& s, const GruOrigForward<T>& k,
                               const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_orig_forward, s, k, o, k.rows, k.H, kCostGruN);
}

template <typename T>
void extended_rnn_backward(const StepKernels<T>& s, const RnnBackward<T>& k,
                           const ExtendedCell<T>& o) {
  run_extended_step(s.extended_rnn_backward, s, k, o, k.rows, k.H, kCostRnnBackward);
}

template <typename T>
void extended_lstm_backward(const StepKernels<T>& s, const LstmBackward<T>& k,
                            const ExtendedCell<T>& o) {
  run_extended_step(s.extended_lstm_backward, s, k, o, k.rows, k.H, kCostLstmBackward);
}

template <typename T>
void extended_gru_backward(const StepKernels<T>& s, const GruBackward<T>& k,
                           const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_backward, s, k, o, k.rows, k.H, kCostGruBackward);
}

template <typename T>
void extended_gru_orig_backward_n(const StepKernels<T>& s, const GruOrigBackwardN<T>& k,
                                  const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_orig_backward_n, s, k, o, k.rows, k.H, kCostGruBackwardN);
}

template <typename T>
void extended_gru_orig_backward_r(const StepKernels<T>& s, const GruOrigBackwardR<T>& k,
                                  const ExtendedCell<T>& o) {
  run_extended_step(s.extended_gru_orig_backward_r, s, k, o, k.rows, k.H, kCostGruBackwardR);
}

#define RNNX_INSTANTIATE(T)                                                                        \
  template void rnn_forward<T>(const StepKernels<T>&, const RnnForward<T>&);                       \
  template void lstm_forward<T>(const StepKernels<T>&, const LstmForward<T>&);                     \
  template void proj_forward<T>(const StepKernels<T>&, const ProjForward<T>&);                     \
  template void gru_forward<T>(const StepKernels<T>&, const GruForward<T>&);                       \
  template void gru_orig_gates_forward<T>(const StepKernels<T>&, const GruOrigGatesForward<T>&);   \
  template void gru_orig_forward<T>(const StepKernels<T>&, const GruOrigForward<T>&);              \
  template void rnn_backward<T>(const StepKernels<T>&, const RnnBackward<T>&);                     \
  template void proj_backward<T>(const StepKernels<T>&, const ProjBackward<T>&);                   \
  template void lstm_backward<T>(const StepKernels<T>&, const LstmBackward<T>&);                   \
  template void gru_backward<T>(const StepKernels<T>&, const GruBackward<T>&);                     \
  template void gru_orig_backward_n<T>(const StepKernels<T>&, const GruOrigBackwardN<T>&);         \
  template void gru_orig_backward_r<T>(const StepKernels<T>&, const GruOrigBackwardR<T>&);         \
  template void extended_rnn_forward<T>(const StepKernels<T>&, const RnnForward<T>&,               \
                                        const ExtendedCell<T>&);                                   \
  template void extended_lstm_forward<T>(const StepKernels<T>&, const LstmForward<T>&,             \
                                         const ExtendedCell<T>&);                                  \
  template void extended_gru_forward<T>(const StepKernels<T>&, const GruForward<T>&,               \
                                        const ExtendedCell<T>&);                                   \
  template void extended_gru_orig_gates_forward<T>(                                                \
      const StepKernels<T>&, const GruOrigGatesForward<T>&, const ExtendedCell<T>&);               \
  template void extended_gru_orig_forward<T>(const StepKernels<T>&, const GruOrigForward<T>&,      \
                                             const ExtendedCell<T>&);                              \
  template void extended_rnn_backward<T>(const StepKernels<T>&, const RnnBackward<T>&,             \
                                         const ExtendedCell<T>&);                                  \
  template void extended_lstm_backward<T>(const StepKernels<T>&, const LstmBackward<T>&,           \
                                          const ExtendedCell<T>&);                                 \
  template void extended_gru_backward<T>(const StepKernels<T>&, const GruBackward<T>&,             \
                                         const ExtendedCell<T>&);                                  \
  template void extended_gru_orig_backward_n<T>(const StepKernels<T>&, const GruOrigBackwardN<T>&, \
                                                const ExtendedCell<T>&);                           \
  template void extended_gru_orig_backward_r<T>(const StepKernels<T>&, const GruOrigBackwardR<T>&, \
                                                const ExtendedCell<T>&);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
