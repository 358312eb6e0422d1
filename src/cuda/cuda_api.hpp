// The CUDA runtime and cuDNN as the cuda backend uses them: every status checked into an
// rnnx::Error that names the call, RAII owners of every handle and descriptor, device
// memory behind core::Memory, and the GPU a plan is bound to.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>
#include <utility>
#include <vector>

#include "core/memory.hpp"

namespace rnnx::cuda {

// Throw Error naming `what` and the library's own text: out_of_memory for allocation
// failures, unsupported for what cuDNN does not support, internal for the rest.
void check(cudaError_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

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

using CudnnHandle = Owned<cudnnHandle_t, &cudnnDestroy>;
using RnnDescriptor = Owned<cudnnRNNDescriptor_t, &cudnnDestroyRNNDescriptor>;
using RnnDataDescriptor = Owned<cudnnRNNDataDescriptor_t, &cudnnDestroyRNNDataDescriptor>;
using TensorDescriptor = Owned<cudnnTensorDescriptor_t, &cudnnDestroyTensorDescriptor>;
using DropoutDescriptor = Owned<cudnnDropoutDescriptor_t, &cudnnDestroyDropoutDescriptor>;

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

// A plan's own constant data to the device, finished when it returns (cudaMemcpy): calls
// on any stream, non-blocking ones included, then see it.
void upload(void* dst, const void* src, size_t bytes);

// cuDNN handles for the calls of one plan: a call takes one (cuDNN handles must not be
// used by two threads at once), sets its stream and gives it back when it returns.
class HandlePool {
 public:
  class Lease {
   public:
    Lease(HandlePool* pool, CudnnHandle handle) : pool_(pool), handle_(std::move(handle)) {}
    Lease(Lease&&) = default;
    ~Lease();
    cudnnHandle_t get() const { return handle_.get(); }

   private:
    HandlePool* pool_;
    CudnnHandle handle_;
  };
  Lease acquire(cudaStream_t stream);

 private:
  std::mutex mutex_;
  std::vector<CudnnHandle> free_;
};

}  // namespace rnnx::cuda
