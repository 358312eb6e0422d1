// The cpu backend's row copier and dropout on packed rows (rows.hpp), split over its threads
// (thread_pool.hpp).
#include "cpu/rows.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cpu/thread_pool.hpp"

namespace rnnx::cpu {
namespace {

// Below this many bytes a copy is cheaper on one thread than waking the team.
constexpr int64_t kParallelMinBytes = int64_t{1} << 18;

bool parallel_copy(int64_t rows, int64_t width, size_t elem) {
  return rows * width * static_cast<int64_t>(elem) >= kParallelMinBytes;
}

// Rows per piece of a threaded copy: a few pages each.
constexpr int64_t kRowsPerPiece = 64;

template <typename Row>
void for_rows(int64_t rows, int64_t width, size_t elem, const Row& row) {
  const int64_t pieces = (rows + kRowsPerPiece - 1) / kRowsPerPiece;
  parallel_for(pieces, parallel_copy(rows, width, elem), [&](int64_t piece) {
    const int64_t r1 = std::min(rows, (piece + 1) * kRowsPerPiece);
    for (int64_t r = piece * kRowsPerPiece; r < r1; ++r) row(r);
  });
}

}  // namespace

template <typename T>
void HostRows<T>::copy_rows(const void* src, const int64_t* src_map, void* dst,
                            const int64_t* dst_map, int64_t rows, int64_t width, void*) const {
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  if (in != nullptr && src_map == nullptr && dst_map == nullptr) {  // one block
    for_rows(rows, width, sizeof(T),
             [&](int64_t r) { std::memcpy(out + r * width, in + r * width, sizeof(T) * width); });
    return;
  }
  for_rows(rows, width, sizeof(T), [&](int64_t r) {
    T* o = out + (dst_map ? dst_map[r] : r) * width;
    if (in == nullptr) {
      std::fill(o, o + width, T(0));
    } else {
      std::memcpy(o, in + (src_map ? src_map[r] : r) * width, sizeof(T) * width);
    }
  });
}

template <typename T>
void HostRows<T>::fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width,
                            double value, void*) const {
  T* out = static_cast<T*>(dst);
  const T v = static_cast<T>(value);
  for_rows(rows, width, sizeof(T), [&](int64_t r) {
    T* o = out + (dst_map ? dst_map[r] : r) * width;
    std::fill(o, o + width, v);
  });
}

template <typename T>
void dropout_rows_parallel(const core::DropoutKey& key, const core::Schedule& s, int64_t width,
                           T* rows) {
  // Philox per element costs far more than a copy, so unlike the copies above there is no
  // size below which one thread does it: any team with two steps to share splits them.
  parallel_for(s.T_eff, s.T_eff > 1,
               [&](int64_t t) { core::dropout_apply_step_rows(key, s, width, t, rows); });
}

#define RNNX_INSTANTIATE(T)                                                                       \
  template class HostRows<T>;                                                                     \
  template void dropout_rows_parallel<T>(const core::DropoutKey&, const core::Schedule&, int64_t, \
                                         T*);
RNNX_INSTANTIATE(float)
RNNX_INSTANTIATE(double)
#undef RNNX_INSTANTIATE

}  // namespace rnnx::cpu
