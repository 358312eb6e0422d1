// Counts calls of operator new while counting is on. The whole test binary goes through
// the replacement in alloc_counter.cpp (it only forwards to malloc); allocations made with
// malloc directly (OpenMP, BLAS internals) are not seen.
#pragma once

#include <cstdint>

namespace rnnx_test {

void start_counting_allocations();
int64_t stop_counting_allocations();  // operator new calls since start

}  // namespace rnnx_test
