// core::gather_rows and core::scatter_rows (the caller's layout <-> packed sorted rows), and
// dropout on the packed rows, with the time steps split over the pool's threads: the same
// maps and the same results, for the work that would otherwise be the serial part of a
// multi-threaded call. (The threads are the cpu backend's: core's pieces are one step each.)
#pragma once

#include <cstdint>

#include "core/dropout.hpp"
#include "core/schedule.hpp"

namespace rnnx::cpu {

template <typename T>
void gather_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src, T* dst,
                          int64_t width);
template <typename T>
void scatter_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src,
                           T* dst, int64_t width, T fill);
// core::dropout_apply_step_rows over every step, the steps split over the pool's threads.
template <typename T>
void dropout_rows_parallel(const core::DropoutKey& key, const core::Schedule& s, int64_t width,
                           T* rows);

}  // namespace rnnx::cpu
