// Who runs a direction's time loop. forward.cpp and backward.cpp write each pass's loop once,
// over a crew that says how its products, step kernels and operand packing run:
//  * PoolCrew: the calling thread walks the steps; each product and step kernel threads itself
//    over the pool (any engine, float32 and float64).
//  * TeamCrew: one member of a team that runs all of a direction's steps in one parallel
//    region (float32 on the packed engine, PlanSpec::team_loops; a single thread is a team of
//    one). Each member owns the same cells of every gate, computes their columns of the
//    step's products on its share of the packed weights (which stays in its core's cache), runs
//    the step kernel on them, and packs its columns of the operands that the next product
//    reads; sync() is the team's barrier before a product that reads every member's columns.
// A loop calls every method of both; a PoolCrew's pack and sync do nothing, a TeamCrew's
// multiply ignores the unpacked operand. Which crew runs is the plan's choice (run_steps), so
// the same plan gives the same bits on any call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/cell_kernels.hpp"
#include "cpu/extended_cell.hpp"
#include "cpu/gemm.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/plan_spec.hpp"
#include "cpu/team_barrier.hpp"
#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {

// Which of a team member's column ranges an operation covers: its cells (the H columns of
// every gate), its columns of the state (P wide: with a projection whole panels of W_hr's
// columns, else its cells), or its columns of the layer's input (forward's in-loop input
// projection packs them).
enum class Share { cells, state, input };

// A product with the same weights at every step, as each crew runs it: the pool on the bound
// WeightGemm, the team on those weights packed (the same bits: a team member's columns are
// computed as the pool's packed engine computes them).
template <typename T>
struct StepProduct {
  const WeightGemm<T>* gemm = nullptr;
  PackedB packed;
  Share columns = Share::cells;  // the columns of C a team member computes
};

template <typename T>
StepProduct<T> step_product(const WeightGemm<T>& w, Share columns) {
  StepProduct<T> s{&w, {}, columns};
  if constexpr (std::is_same_v<T, float>) {
    s.packed = PackedB{w.packed(), w.K(), w.N(), w.blocks(), w.type()};
  }
  return s;
}

// The columns [j0, j1) of `width` a member th of n owns, in whole panels of kPackedPanel
// (q0, q1) out of `panels`.
struct TeamShare {
  int64_t q0 = 0, q1 = 0;  // panels
  int64_t j0 = 0, j1 = 0;  // columns
  TeamShare() = default;
  TeamShare(int64_t panels, int64_t width, int th, int n)
      : q0(panels * th / n),
        q1(panels * (th + 1) / n),
        j0(std::min(width, q0 * kPackedPanel)),
        j1(std::min(width, q1 * kPackedPanel)) {}
};

template <typename T>
class PoolCrew {
 public:
  static constexpr bool team = false;
  // `a_scratch`: the packed left operand of a product on the packed engine (WeightGemm::run).
  PoolCrew(const PlanSpec& p, T* a_scratch) : p_(p), a_scratch_(a_scratch) {}

  void sync() const {}
  void pack(int64_t, int64_t, const T*, int64_t, Share, int64_t, T*,
            const int64_t* = nullptr) const {}
  // C (+)= A op(W) on the rows [0, rows) of A (through `a_rows` when given).
  void multiply(const StepProduct<T>& w, int64_t rows, const T* a, int64_t lda, const T*,
                bool accumulate, T* c, int64_t ldc, const int64_t* a_rows = nullptr) const {
    w.gemm->run(rows, a, lda, accumulate, c, ldc, a_scratch_, a_rows);
  }
  // The step kernel that takes `k`, over all its rows and cells (the generic one with ONNX's
  // cell options, where the kernel has one).
  template <typename K>
  void kernel(const K& k, const ExtendedCell<T>& o, Share) const {
    if constexpr (requires { run_step_kernel(p_.kernels<T>(), k, o); }) {
      if (p_.extended_cell) {
        run_step_kernel(p_.kernels<T>(), k, o);
        return;
      }
    }
    run_step_kernel(p_.kernels<T>(), k);
  }

 private:
  const PlanSpec& p_;
  T* a_scratch_;
};

class TeamCrew {
 public:
  static constexpr bool team = true;
  // Member th of n: its cells in whole panels of `cell_panels` over H, its state columns in
  // whole panels of `state_panels` over P, its input columns 16 at a time over I.
  TeamCrew(const PlanSpec& p, TeamBarrier& barrier, int th, int n, int64_t cell_panels,
           int64_t state_panels, int64_t I)
      : p_(p),
        barrier_(barrier),
        th_(th),
        n_(n),
        type_(p.packed_type()),
        cells_(cell_panels, p.H, th, n),
        state_(state_panels, p.P, th, n) {
    const int64_t units = (I + 15) / 16;  // the input's columns, packed 16 at a time
    input_.j0 = std::min(I, units * th / n * 16);
    input_.j1 = std::min(I, units * (th + 1) / n * 16);
  }

  void sync() const { barrier_.wait(n_); }
  // Packs this member's columns of `which` (from col0 on) of A [rows, K] into a_packed, the
  // left operand of a product that every member then reads (after a sync). int8 quantises
  // each row whole: every member first waits for the others' columns (not for the input),
  // then packs its share of the rows (whole blocks of kPackedTileRows), so every member
  // calls this.
  void pack(int64_t rows, int64_t K, const float* a, int64_t lda, Share which, int64_t col0,
            float* a_packed, const int64_t* a_rows = nullptr) const {
    if (packs_s8(type_)) {
      // The members' columns of a state or cell output must all be written first. A step's
      // input is the caller's (nobody writes it), and forward packs it only right after the
      // state, whose barrier has already ordered the buffer's earlier readers.
      if (which != Share::input) sync();
      const int64_t blocks = (rows + kPackedTileRows - 1) / kPackedTileRows;
      pack_a_rows(rows, K, a + col0, lda, blocks * th_ / n_, blocks * (th_ + 1) / n_, a_packed,
                  type_, a_rows);
      return;
    }
    const TeamShare& s = share(which);
    if (s.j0 < s.j1)
      pack_a_columns(rows, K, a, lda, col0 + s.j0, col0 + s.j1, a_packed, type_, a_rows);
  }
  void multiply(const StepProduct<float>& w, int64_t rows, const float*, int64_t,
                const float* a_packed, bool accumulate, float* c, int64_t ldc,
                const int64_t* = nullptr) const {
    const TeamShare& s = share(w.columns);
    multiply_panel_range(rows, a_packed, w.packed, s.q0, s.q1, accumulate, c, ldc);
  }
  // The step kernel that takes `k` on this member's columns of `which` of every row.
  template <typename K>
  void kernel(const K& k, const ExtendedCell<float>& o, Share which) const {
    const TeamShare& s = share(which);
    if (s.j0 >= s.j1) return;
    const Tile tile{0, k.rows, s.j0, s.j1};
    const StepKernels<float>& table = p_.kernels<float>();
    if constexpr (requires { extended_tile_kernel(table, k); }) {
      if (p_.extended_cell) {
        extended_tile_kernel(table, k)(k, o, tile);
        return;
      }
    }
    tile_kernel(table, k)(k, tile);
  }

 private:
  const TeamShare& share(Share which) const {
    return which == Share::cells ? cells_ : which == Share::state ? state_ : input_;
  }
  const PlanSpec& p_;
  TeamBarrier& barrier_;
  int th_, n_;
  PackedType type_;
  TeamShare cells_, state_, input_;
};

// Runs steps(crew) on the plan's crew: a team of the pool's threads (1 inside a region) where
// the plan runs team loops (float32 only: the packed engine's), else the pool step by step.
// `cell_panels`, `state_panels` and `I` size the team's shares (TeamCrew); `a_scratch` is the
// pool's (PoolCrew). A team runs nothing when there are no steps.
template <typename T, typename Steps>
void run_steps(const PlanSpec& p, int64_t cell_panels, int64_t state_panels, int64_t I,
               T* a_scratch, const Steps& steps) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.team_loops) {  // which only the packed engine gets (algo_space)
      if (p.T_eff == 0) return;
      TeamBarrier barrier;
      parallel_region(max_threads(), [&](int th, int n) {
        steps(TeamCrew(p, barrier, th, n, cell_panels, state_panels, I));
      });
      return;
    }
  }
  steps(PoolCrew<T>(p, a_scratch));
}

}  // namespace rnnx::cpu
