// The memory a plan touches on the caller's behalf, behind one interface a backend
// provides (BackendImpl::memory()): its allocations (a call's workspace when the caller
// passes none), zeroing and small copies to and from the host (a training forward's
// reserve header, the weight gradients of an empty batch). Host backends use host_memory():
// 64-byte aligned host buffers and plain memset/memcpy; a device backend supplies its own,
// running on the call's stream (host allocations are operator new's aligned nothrow form,
// which the tests replace to make them fail: the library itself has no test hook). And a
// pool of workspaces that lets several threads execute one plan at once.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace rnnx::core {

// Frees with the function of the Memory that allocated.
struct BufferFree {
  void (*release)(void*) = nullptr;
  void operator()(void* p) const noexcept {
    if (p != nullptr && release != nullptr) release(p);
  }
};
using Buffer = std::unique_ptr<void, BufferFree>;
using HostBuffer = Buffer;

class Memory {
 public:
  virtual ~Memory() = default;
  // `bytes` (at least one) aligned to 64. Throws Error(out_of_memory) naming `what`, `part`
  // (may be null; "forward: workspace: cannot ...") and the size when it cannot.
  virtual Buffer allocate(size_t bytes, const char* what, const char* part = nullptr) const = 0;
  // On `stream` (the call's; null for host memory), in its order: work queued on the stream
  // later sees them done, and the host source of copy_from_host may be reused once it
  // returns (a device backend need not wait for the device); copy_to_host returns when the
  // bytes are in host memory.
  virtual void zero(void* dst, size_t bytes, void* stream) const = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes,
                              void* stream) const = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes, void* stream) const = 0;
  // Returns when everything queued on `stream` is done: before a call gives its pooled
  // workspace back, since another call on another stream may take it next.
  virtual void wait(void* stream) const { (void)stream; }
  // Whether the bytes live on a device, where reading them back is a synchronising copy
  // (the plan then keeps what it needs on the host: core/reserve_ledger.hpp).
  virtual bool on_device() const { return false; }
};

// Host memory: 64-byte aligned, Error(out_of_memory) naming the buffer when refused.
const Memory& host_memory();

// host_memory().allocate(): for the library's own host data (the algorithm search's).
HostBuffer allocate_host(size_t bytes, const char* what, const char* part = nullptr);

// The workspaces of calls that pass none. A call takes a buffer (a free one that is large
// enough, or a new one) and gives it back when it returns, so concurrent calls never share
// one and the pool holds as many buffers as calls were ever in flight at once.
class WorkspacePool {
 public:
  class Lease {
   public:
    Lease(WorkspacePool* pool, Buffer buffer, size_t size)
        : pool_(pool), buffer_(std::move(buffer)), size_(size) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    void* get() const { return buffer_.get(); }

   private:
    WorkspacePool* pool_;
    Buffer buffer_;
    size_t size_;
  };

  // A buffer of at least `bytes` for one call (`call` names it in an error), a new one
  // from `memory` (every buffer of one pool comes from the same Memory).
  Lease acquire(size_t bytes, const char* call, const Memory& memory);

 private:
  struct Entry {
    Buffer buffer;
    size_t size;
  };
  std::mutex mutex_;
  std::vector<Entry> free_;
};

}  // namespace rnnx::core
