// The CUDA runtime and cuDNN as the cuda backend uses them: every status checked into an
// rnnx::Error that names the call, RAII owners of every handle and descriptor, device
// memory behind core::Memory, and the GPU a plan is bound to.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "cuda/call_table.hpp"

namespace rnnx::cuda {

// What a caller's workspace and reserve must be aligned to on the cuda backend, on cuDNN and
// on rnnx's own kernels alike (what cudaMalloc gives, and what cuDNN's spaces need).
constexpr size_t kBufferAlignment = 256;

// Throw Error naming `what` and the library's own text: out_of_memory for allocation
// failures, unsupported for what cuDNN does not support, internal for the rest.
void check(cudaError_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

// A release's status (a destroyer's, cudaFree's, the restore of the caller's device): these
// run in destructors, which cannot throw, so a failure is reported on stderr (once per call
// name in a process, naming the call and the library's text) and counted, as PyTorch's
// C10_CUDA_CHECK_WARN does; cudaErrorCudartUnloading (the runtime already gone at process
// exit) is no failure. The object is abandoned: nothing else can be done with it.
void check_release(cudaError_t status, const char* what) noexcept;
void check_release(cudnnStatus_t status, const char* what) noexcept;
// The library's text is already known (cuBLAS's, step_device.cpp).
void report_release_failure(const char* what, const char* text) noexcept;
// Failed releases since the process started.
int64_t release_failures() noexcept;

// Owner of one handle or descriptor, destroyed with `Destroy`.
template <typename H, auto Destroy>
class Owned {
 public:
  Owned() = default;
  explicit Owned(H h) : h_(h) {}
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, H{})) {}
  Owned& operator=(Owned&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (h_) Destroy(h_);
  }
  H get() const { return h_; }

 private:
  H h_{};
};

// A new handle or descriptor from a library's create function, owned.
template <typename Owner, typename Status, typename H>
Owner create(Status (*make)(H*), const char* what) {
  H h{};
  check(make(&h), what);
  return Owner(h);
}

// Destroyers through the call table (call_table.hpp), for Owned.
void destroy_handle(cudnnHandle_t h);
void destroy_rnn(cudnnRNNDescriptor_t d);
void destroy_rnn_data(cudnnRNNDataDescriptor_t d);
void destroy_tensor(cudnnTensorDescriptor_t d);
void destroy_dropout(cudnnDropoutDescriptor_t d);
void destroy_stream(cudaStream_t s);
void destroy_event(cudaEvent_t e);
void free_pinned(void* p);

using CudnnHandle = Owned<cudnnHandle_t, &destroy_handle>;
using RnnDescriptor = Owned<cudnnRNNDescriptor_t, &destroy_rnn>;
using RnnDataDescriptor = Owned<cudnnRNNDataDescriptor_t, &destroy_rnn_data>;
using TensorDescriptor = Owned<cudnnTensorDescriptor_t, &destroy_tensor>;
using DropoutDescriptor = Owned<cudnnDropoutDescriptor_t, &destroy_dropout>;
using StreamOwner = Owned<cudaStream_t, &destroy_stream>;
using EventOwner = Owned<cudaEvent_t, &destroy_event>;
using PinnedOwner = Owned<void*, &free_pinned>;  // page-locked host memory (cudaMallocHost)

// An event for ordering only (no timing: cheaper to record and wait for).
EventOwner make_sync_event();
// `bytes` of page-locked host memory, from which copies run without staging or a wait;
// throws Error(out_of_memory) naming `what`.
PinnedOwner allocate_pinned(size_t bytes, const char* what);

CudnnHandle make_handle();
RnnDescriptor make_rnn_descriptor();
RnnDataDescriptor make_rnn_data_descriptor();
TensorDescriptor make_tensor_descriptor();
DropoutDescriptor make_dropout_descriptor();

// The GPU of the calling thread, checked to exist: throws Error(unsupported) saying that
// there is none (and what cudaGetDeviceCount said) on a machine without one.
int current_device();

// Makes `device` current for a scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

// Device memory (cudaMalloc'd, so 256-byte aligned); zero and copies run on the given
// stream and are finished when they return.
const core::Memory& device_memory();

// A plan's own constant data to the device, on the device when it returns (copied on a
// stream of its own and waited for): calls on any stream, non-blocking ones included, then
// see it.
void upload(void* dst, const void* src, size_t bytes);
// The same on `stream`, a stream of the caller's own that nothing else uses (the backend's
// uploads at each new batch): no stream is created.
void upload(void* dst, const void* src, size_t bytes, cudaStream_t stream);
// A non-blocking stream, owned.
StreamOwner make_stream();

// Library handles (cuDNN's, cuBLAS's) for the calls of one plan: a call takes one (a handle
// must not be used by two threads at once), attached to its stream, and gives it back when it
// returns; the pool makes a new one when none is free.
template <typename Owner>
class HandlePool {
 public:
  using Handle = decltype(std::declval<const Owner&>().get());
  HandlePool(Owner (*make)(), void (*attach)(Handle, cudaStream_t))
      : make_(make), attach_(attach) {}

  class Lease {
   public:
    Lease(HandlePool* pool, Owner handle) : pool_(pool), handle_(std::move(handle)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (!handle_.get()) return;
      std::lock_guard<std::mutex> lock(pool_->mutex_);
      pool_->free_.push_back(std::move(handle_));
    }
    Handle get() const { return handle_.get(); }

   private:
    HandlePool* pool_;
    Owner handle_;
  };
  Lease acquire(cudaStream_t stream) {
    Owner handle;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        handle = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!handle.get()) handle = make_();
    attach_(handle.get(), stream);
    return Lease(this, std::move(handle));
  }

 private:
  Owner (*make_)();
  void (*attach_)(Handle, cudaStream_t);
  std::mutex mutex_;
  std::vector<Owner> free_;
};

void attach_stream(cudnnHandle_t handle, cudaStream_t stream);
using CudnnHandlePool = HandlePool<CudnnHandle>;

}  // namespace rnnx::cuda
