// Replacement operator new/delete for the test binary, counting allocations on request
// (in its own translation unit so that no call site sees new and free together).
#include "alloc_counter.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
std::atomic<bool> g_failing{false};
std::atomic<int64_t> g_allowed{0};
std::atomic<int64_t> g_refused{0};

// Counts the call; false when it must fail.
bool admit() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (!g_failing.load(std::memory_order_relaxed)) return true;
  if (g_allowed.fetch_sub(1) != 0) return true;  // only the one that finds 0 is refused
  g_refused.fetch_add(1);
  return false;
}
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
void fail_allocation_after(int64_t n) {
  g_allowed = n;
  g_refused = 0;
  g_failing = true;
}
void stop_failing_allocations() {
  g_failing = false;
}
bool allocation_refused() {
  return g_refused.load() > 0;
}
}  // namespace rnnx_test

void* operator new(std::size_t n) {
  if (!admit()) throw std::bad_alloc();
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
// The nothrow and aligned forms pair with the deletes here, so they must come from here
// too (a sanitizer runtime would otherwise supply its own and report a mismatch).
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
void* operator new(std::size_t n, std::align_val_t a) {
  if (!admit()) throw std::bad_alloc();
  const std::size_t align = static_cast<std::size_t>(a);
  // aligned_alloc wants a size that is a multiple of the alignment.
  if (void* p =
          std::aligned_alloc(align, (std::max<std::size_t>(n, 1) + align - 1) / align * align)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return ::operator new(n, a);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return ::operator new(n, a, std::nothrow);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
