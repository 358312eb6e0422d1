// The peephole gradients over the tokens, one computation for every backend:
//   dP_i = sum dA_i c_{t-1},  dP_f = sum dA_f c_{t-1},  dP_o = sum dA_o c_t,
// dA the pre-activation gradients of a token's row, c_{t-1} the previous step's cell state (c0
// for a sequence's first step). Each token's three terms are rounded to T (peephole_terms),
// and each column is added up over the rows in packed order as core::column_sums adds (runs
// of kColumnSumRows rows, counted from the first packed row). The
// step program keeps the terms per row (its cell step writes them, a ColumnSumsOp adds them
// up); the cpu backend adds them up as it goes (peephole_grad_columns), saving the [tokens, 3H]
// buffer. Both give the same bits.
#pragma once

#include <cstdint>

#include "core/column_sums.hpp"
#include "core/host_device.hpp"
#include "core/schedule.hpp"

namespace rnnx::core {

// A token's terms for one unit: out[0] for dP_i, out[1] for dP_f, out[2] for dP_o.
template <typename T>
RNNX_HOST_DEVICE void peephole_terms(T da_i, T da_f, T da_o, T c_prev, T c, T out[3]) {
  out[0] = da_i * c_prev;
  out[1] = da_f * c_prev;
  out[2] = da_o * c;
}

// Columns [j0, j1) of one direction's peephole gradients from its packed rows (schedule s, in
// the direction's order when `reversed`): c the cell states [tokens, H], c0 the initial ones
// [batch, H] (sorted), dg the pre-activation gradients [tokens, GH] (i, f, g, o). Writes
// dp[q * H + j] for q < 3, or adds to it when `accumulate`.
template <typename T>
RNNX_ALWAYS_INLINE void peephole_grad_columns(const Schedule& s, bool reversed, const T* c,
                                              const T* c0, const T* dg, int64_t H, int64_t GH,
                                              int64_t j0, int64_t j1, bool accumulate, T* dp) {
  constexpr int64_t kBlock = 16;
  for (int64_t b0 = j0; b0 < j1; b0 += kBlock) {
    const int64_t n = j1 - b0 < kBlock ? j1 - b0 : kBlock;
    ColumnAccumulator total[3][kBlock] = {}, sum[3][kBlock] = {};
    for (int64_t t = 0; t < s.T_eff; ++t) {
      const PrevStep prev = prev_step(s, reversed, t);
      for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
        const int64_t r = s.offsets[t] + i;
        if (starts_column_run(r)) {
          for (int q = 0; q < 3; ++q) {
            for (int64_t j = 0; j < n; ++j) total[q][j] += sum[q][j], sum[q][j] = 0;
          }
        }
        const T* cp = (i < prev.count ? c + (s.offsets[prev.step] + i) * H : c0 + i * H) + b0;
        const T* cr = c + r * H + b0;
        const T* g = dg + r * GH + b0;
        for (int64_t j = 0; j < n; ++j) {
          T terms[3];
          peephole_terms(g[j], g[H + j], g[3 * H + j], cp[j], cr[j], terms);
          for (int q = 0; q < 3; ++q) sum[q][j] += static_cast<ColumnAccumulator>(terms[q]);
        }
      }
    }
    for (int q = 0; q < 3; ++q) {
      for (int64_t j = 0; j < n; ++j) {
        T& out = dp[q * H + b0 + j];
        const T v = static_cast<T>(total[q][j] + sum[q][j]);
        out = accumulate ? out + v : v;
      }
    }
  }
}

}  // namespace rnnx::core
