// Threaded row gathers and scatters between the caller's layout and packed sorted rows
// (rows.hpp), on the schedule's maps (core::caller_row, Schedule::row).
#include "cpu/rows.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace rnnx::cpu {
namespace {

// Below this many bytes a copy is cheaper on one thread than waking the team.
constexpr int64_t kParallelMinBytes = int64_t{1} << 18;

bool parallel_copy(int64_t rows, int64_t width, size_t elem) {
  return !omp_in_parallel() && omp_get_max_threads() > 1 &&
         rows * width * static_cast<int64_t>(elem) >= kParallelMinBytes;
}

}  // namespace

template <typename T>
void gather_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src, T* dst,
                          int64_t width) {
  const size_t bytes = sizeof(T) * width;
  const bool par = parallel_copy(s.tokens, width, sizeof(T));
  if (shape.layout == Layout::packed) {
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < s.T_eff; ++t) {
      std::memcpy(dst + s.offsets[t] * width, src + s.offsets[t] * width, bytes * s.batch_sizes[t]);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (par)
  for (int64_t t = 0; t < s.T_eff; ++t) {
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      std::memcpy(dst + s.row(t, i) * width,
                  src + core::caller_row(shape, s, t, s.sorted_to_orig[i]) * width, bytes);
    }
  }
}

template <typename T>
void scatter_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src,
                           T* dst, int64_t width, T fill) {
  const size_t bytes = sizeof(T) * width;
  if (shape.layout == Layout::packed) {
    const bool par = parallel_copy(s.tokens, width, sizeof(T));
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < s.T_eff; ++t) {
      std::memcpy(dst + s.offsets[t] * width, src + s.offsets[t] * width, bytes * s.batch_sizes[t]);
    }
    return;
  }
  const bool par = parallel_copy(s.T * s.B, width, sizeof(T));
#pragma omp parallel for schedule(static) if (par)
  for (int64_t t = 0; t < s.T; ++t) {
    for (int64_t i = 0; i < s.B; ++i) {
      T* out = dst + core::caller_row(shape, s, t, s.sorted_to_orig[i]) * width;
      if (t < s.T_eff && i < s.batch_sizes[t]) {
        std::memcpy(out, src + s.row(t, i) * width, bytes);
      } else {
        std::fill(out, out + width, fill);
      }
    }
  }
}

#define RNNX_INSTANTIATE(T)                                                                        \
  template void gather_rows_parallel<T>(const SequenceShape&, const core::Schedule&, const T*, T*, \
                                        int64_t);                                                  \
  template void scatter_rows_parallel<T>(const SequenceShape&, const core::Schedule&, const T*,    \
                                         T*, int64_t, T);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
