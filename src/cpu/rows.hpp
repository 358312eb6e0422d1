// core::gather_rows and core::scatter_rows (the caller's layout <-> packed sorted rows) with
// the time steps split over the OpenMP threads: the same maps and the same results, for the
// copies that would otherwise be the serial part of a multi-threaded call.
#pragma once

#include <cstdint>

#include "core/schedule.hpp"

namespace rnnx::cpu {

template <typename T>
void gather_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src, T* dst,
                          int64_t width);
template <typename T>
void scatter_rows_parallel(const SequenceShape& shape, const core::Schedule& s, const T* src,
                           T* dst, int64_t width, T fill);

}  // namespace rnnx::cpu
