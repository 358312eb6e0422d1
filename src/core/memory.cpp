// Host memory and the workspace pool (memory.hpp).
#include "core/memory.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "rnnx/error.hpp"

namespace rnnx::core {
namespace {

constexpr std::align_val_t kAlignment{64};

void free_host(void* p) {
  ::operator delete(p, kAlignment);
}

class HostMemory final : public Memory {
 public:
  Buffer allocate(size_t bytes, const char* what, const char* part) const override {
    // The tests make this fail on demand by replacing this form of operator new
    // (tests/alloc_counter.cpp in the C++ suites, tests/fault_preload for Python's).
    void* p = ::operator new(std::max<size_t>(bytes, 1), kAlignment, std::nothrow);
    if (p == nullptr) {
      throw Error(Status::out_of_memory,
                  std::string(what) + (part ? std::string(": ") + part : "") +
                      ": cannot allocate " + std::to_string(bytes) + " bytes");
    }
    return Buffer(p, BufferFree{&free_host});
  }
  void zero(void* dst, size_t bytes, void*) const override { std::memset(dst, 0, bytes); }
  void copy_from_host(void* dst, const void* src, size_t bytes, void*) const override {
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, void*) const override {
    std::memcpy(dst, src, bytes);
  }
};

}  // namespace

const Memory& host_memory() {
  static const HostMemory memory;
  return memory;
}

HostBuffer allocate_host(size_t bytes, const char* what, const char* part) {
  return host_memory().allocate(bytes, what, part);
}

WorkspacePool::Lease::~Lease() {
  if (!buffer_) return;
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  try {
    pool_->free_.push_back(Entry{std::move(buffer_), size_});
  } catch (const std::bad_alloc&) {
    // The pool could not grow its list: the buffer is freed instead of kept.
  }
}

WorkspacePool::Lease WorkspacePool::acquire(size_t bytes, const char* call, const Memory& memory) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest free buffer that is large enough; else the largest is replaced below.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size >= bytes && (best == free_.end() || it->size < best->size)) best = it;
    }
    if (best != free_.end()) {
      Entry e = std::move(*best);
      free_.erase(best);
      return Lease(this, std::move(e.buffer), e.size);
    }
    // None fits: drop the largest (too small) one so the pool does not keep buffers that
    // no call can use.
    if (!free_.empty()) {
      auto largest =
          std::max_element(free_.begin(), free_.end(),
                           [](const Entry& a, const Entry& b) { return a.size < b.size; });
      free_.erase(largest);
    }
  }
  return Lease(this, memory.allocate(bytes, call, "workspace"), bytes);
}

}  // namespace rnnx::core
