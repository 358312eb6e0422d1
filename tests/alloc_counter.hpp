// Counts calls of operator new while counting is on, and makes them fail on request (the
// fault-injection tests). The whole test binary, the library included, goes through the
// replacements in alloc_counter.cpp (they forward to malloc and aligned_alloc); allocations
// made with malloc directly (OpenMP, BLAS internals) are not seen.
#pragma once

#include <cstdint>

namespace rnnx_test {

void start_counting_allocations();
int64_t stop_counting_allocations();  // operator new calls since start

// Of the calls of operator new (any form) from now on, the one after the first `n` throws
// std::bad_alloc (or returns null, for the nothrow forms); the others succeed. One refusal
// at a time, as when one large request cannot be met: the error path itself still gets
// the small allocations its message needs.
void fail_allocation_after(int64_t n);
void stop_failing_allocations();
// Whether the refusal has happened since fail_allocation_after.
bool allocation_refused();

}  // namespace rnnx_test
