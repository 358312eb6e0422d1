// Replacement operator new/delete for the test binary, counting allocations on request
// (in its own translation unit so that no call site sees new and free together).
#include "alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

namespace rnnx_test {
void start_counting_allocations() {
  g_allocations = 0;
  g_counting = true;
}
int64_t stop_counting_allocations() {
  g_counting = false;
  return g_allocations.load();
}
}  // namespace rnnx_test

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(n > 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return ::operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
// The nothrow forms pair with the deletes above, so they must come from here too (a
// sanitizer runtime would otherwise supply its own and report a mismatch). The aligned
// forms stay the runtime's, as do their deletes.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return ::operator new(n, std::nothrow);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
