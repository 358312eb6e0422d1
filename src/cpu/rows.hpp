// The cpu backend's moves of rows: the batch mover's copier (the caller's layout <-> packed
// sorted rows, states) and dropout on the packed rows, split over the pool's threads, for the
// work that would otherwise be the serial part of a multi-threaded call.
#pragma once

#include <cstdint>

#include "core/batch_mover.hpp"
#include "core/dropout.hpp"
#include "core/schedule.hpp"

namespace rnnx::cpu {

// The cpu backend's row copier for the batch mover (core/batch_mover.hpp): rows of T, split
// over the pool's threads when a copy is large enough to gain from them.
template <typename T>
class HostRows final : public core::RowCopier {
 public:
  void copy_rows(const void* src, const int64_t* src_map, void* dst, const int64_t* dst_map,
                 int64_t rows, int64_t width, void* stream) const override;
  void fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width, double value,
                 void* stream) const override;
};

// core::dropout_apply_step_rows over every step, the steps split over the pool's threads.
template <typename T>
void dropout_rows_parallel(const core::DropoutKey& key, const core::Schedule& s, int64_t width,
                           T* rows);

}  // namespace rnnx::cpu
