// Threaded row gathers and scatters between the caller's layout and packed sorted rows, and
// dropout on those rows (rows.hpp): the steps of core's gather_step_rows / scatter_step_rows
// / dropout_apply_step_rows split over the cpu backend's threads (thread_pool.hpp).
#include "cpu/rows.hpp"

#include <cstddef>

#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Below this many bytes a copy is cheaper on one thread than waking the team.
constexpr int64_t kParallelMinBytes = int64_t{1} << 18;

bool parallel_copy(int64_t rows, int64_t width, size_t elem) {
  return rows * width * static_cast<int64_t>(elem) >= kParallelMinBytes;
}

}  // namespace

template <typename T>
void gather_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src, T* dst,
                          int64_t width) {
  const bool par = parallel_copy(s.tokens, width, sizeof(T));
  parallel_for(s.T_eff, par,
               [&](int64_t t) { core::gather_step_rows(shape, s, src, dst, width, t); });
}

template <typename T>
void scatter_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src,
                           T* dst, int64_t width, T fill) {
  const bool packed = shape.layout == Layout::packed;
  const int64_t steps = packed ? s.T_eff : s.T;  // padded layouts fill their padding too
  const bool par = parallel_copy(packed ? s.tokens : s.T * s.B, width, sizeof(T));
  parallel_for(steps, par,
               [&](int64_t t) { core::scatter_step_rows(shape, s, src, dst, width, fill, t); });
}

template <typename T>
void dropout_rows_parallel(const core::DropoutKey& key, const core::Schedule& s, int64_t width,
                           T* rows) {
  // Philox per element costs far more than a copy, so unlike the copies above there is no
  // size below which one thread does it: any team with two steps to share splits them.
  parallel_for(s.T_eff, s.T_eff > 1,
               [&](int64_t t) { core::dropout_apply_step_rows(key, s, width, t, rows); });
}

#define RNNX_INSTANTIATE(T)                                                                        \
  template void gather_rows_parallel<T>(const SequenceShape&, const core::Schedule&, const T*, T*, \
                                        int64_t);                                                  \
  template void scatter_rows_parallel<T>(const SequenceShape&, const core::Schedule&, const T*,    \
                                         T*, int64_t, T);                                          \
  template void dropout_rows_parallel<T>(const core::DropoutKey&, const core::Schedule&, int64_t,  \
                                         T*);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
