// 64-byte aligned host buffers for what the library allocates itself (a plan's workspaces
// when the caller passes none, the algorithm search's data), and a pool of workspaces that
// lets several threads execute one plan at once. Every such allocation can be made to fail
// on purpose (RNNX_TEST_FAIL_ALLOC_AFTER) to test the error paths of its callers.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace rnnx::core {

// Frees with the same aligned operator delete that allocated.
struct AlignedDelete {
  void operator()(void* p) const noexcept;
};
using HostBuffer = std::unique_ptr<void, AlignedDelete>;

// `bytes` (at least one) aligned to 64. Throws Error(out_of_memory) naming `what` and the
// size when the allocation fails, or when RNNX_TEST_FAIL_ALLOC_AFTER=N is set and N
// allocations have been made since it was set to that value (tests of the fault paths).
// `part` (may be null) follows `what` in the message: "forward: workspace: cannot ...".
HostBuffer allocate_host(size_t bytes, const char* what, const char* part = nullptr);

// The workspaces of calls that pass none. A call takes a buffer (a free one that is large
// enough, or a new one) and gives it back when it returns, so concurrent calls never share
// one and the pool holds as many buffers as calls were ever in flight at once.
class WorkspacePool {
 public:
  class Lease {
   public:
    Lease(WorkspacePool* pool, HostBuffer buffer, size_t size)
        : pool_(pool), buffer_(std::move(buffer)), size_(size) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    void* get() const { return buffer_.get(); }

   private:
    WorkspacePool* pool_;
    HostBuffer buffer_;
    size_t size_;
  };

  // A buffer of at least `bytes` for one call (`call` names it in an error).
  Lease acquire(size_t bytes, const char* call);

 private:
  struct Entry {
    HostBuffer buffer;
    size_t size;
  };
  std::mutex mutex_;
  std::vector<Entry> free_;
};

}  // namespace rnnx::core
