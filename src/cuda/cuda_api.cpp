// Status checks, owners, device memory and handle pool of cuda_api.hpp.
#include "cuda/cuda_api.hpp"

#include <atomic>
#include <cstdio>
#include <set>
#include <string>

#include "rnnx/error.hpp"

namespace rnnx::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const Status code = status == cudaErrorMemoryAllocation ? Status::out_of_memory
                      : status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver
                          ? Status::unsupported
                          : Status::internal;
  calls().cudaGetLastError();  // a non-sticky error would otherwise resurface in the next check
  throw Error(code, std::string("backend cuda: ") + what + ": " + calls().cudaGetErrorName(status) +
                        " (" + calls().cudaGetErrorString(status) + ")");
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const int category = CUDNN_STATUS_CATEGORY(status);
  const Status code = status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                              status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                          ? Status::out_of_memory
                      : category == CUDNN_STATUS_NOT_SUPPORTED ? Status::unsupported
                                                               : Status::internal;
  // cuDNN 9 keeps the last failure's reason (which argument, which value) per thread.
  char detail[512] = {};
  calls().cudnnGetLastErrorString(detail, sizeof detail);
  std::string message =
      std::string("backend cuda: ") + what + ": " + calls().cudnnGetErrorString(status);
  if (detail[0] != '\0') message += std::string(" (") + detail + ")";
  throw Error(code, message);
}

namespace {
std::atomic<int64_t> g_release_failures{0};
}  // namespace

void report_release_failure(const char* what, const char* text) noexcept {
  g_release_failures.fetch_add(1, std::memory_order_relaxed);
  static std::mutex mutex;
  static std::set<std::string>* reported = new std::set<std::string>();  // outlives exit
  try {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!reported->insert(what).second) return;
  } catch (...) {
    return;  // no memory for the name: the count still says it
  }
  std::fprintf(stderr,
               "rnnx: backend cuda: %s failed while releasing (%s); the object is abandoned "
               "(reported once per call)\n",
               what, text);
}

void check_release(cudaError_t status, const char* what) noexcept {
  if (status == cudaSuccess || status == cudaErrorCudartUnloading) return;
  calls().cudaGetLastError();  // a non-sticky error would otherwise resurface in the next check
  report_release_failure(what, calls().cudaGetErrorName(status));
}

void check_release(cudnnStatus_t status, const char* what) noexcept {
  if (status == CUDNN_STATUS_SUCCESS) return;
  report_release_failure(what, calls().cudnnGetErrorString(status));
}

int64_t release_failures() noexcept {
  return g_release_failures.load(std::memory_order_relaxed);
}

void destroy_handle(cudnnHandle_t h) {
  check_release(calls().cudnnDestroy(h), "cudnnDestroy");
}
void destroy_rnn(cudnnRNNDescriptor_t d) {
  check_release(calls().cudnnDestroyRNNDescriptor(d), "cudnnDestroyRNNDescriptor");
}
void destroy_rnn_data(cudnnRNNDataDescriptor_t d) {
  check_release(calls().cudnnDestroyRNNDataDescriptor(d), "cudnnDestroyRNNDataDescriptor");
}
void destroy_tensor(cudnnTensorDescriptor_t d) {
  check_release(calls().cudnnDestroyTensorDescriptor(d), "cudnnDestroyTensorDescriptor");
}
void destroy_dropout(cudnnDropoutDescriptor_t d) {
  check_release(calls().cudnnDestroyDropoutDescriptor(d), "cudnnDestroyDropoutDescriptor");
}
void destroy_stream(cudaStream_t s) {
  check_release(calls().cudaStreamDestroy(s), "cudaStreamDestroy");
}
void destroy_event(cudaEvent_t e) {
  check_release(calls().cudaEventDestroy(e), "cudaEventDestroy");
}
void free_pinned(void* p) {
  check_release(calls().cudaFreeHost(p), "cudaFreeHost");
}

EventOwner make_sync_event() {
  cudaEvent_t e = nullptr;
  check(calls().cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return EventOwner(e);
}

PinnedOwner allocate_pinned(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t status = calls().cudaMallocHost(&p, bytes == 0 ? 1 : bytes);
  if (status != cudaSuccess) {
    calls().cudaGetLastError();
    throw Error(status == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::internal,
                std::string("backend cuda: ") + what + ": cannot allocate " +
                    std::to_string(bytes) + " bytes of pinned host memory (cudaMallocHost: " +
                    calls().cudaGetErrorString(status) + ")");
  }
  return PinnedOwner(p);
}

CudnnHandle make_handle() {
  return create<CudnnHandle>(calls().cudnnCreate, "cudnnCreate");
}
RnnDescriptor make_rnn_descriptor() {
  return create<RnnDescriptor>(calls().cudnnCreateRNNDescriptor, "cudnnCreateRNNDescriptor");
}
RnnDataDescriptor make_rnn_data_descriptor() {
  return create<RnnDataDescriptor>(calls().cudnnCreateRNNDataDescriptor,
                                   "cudnnCreateRNNDataDescriptor");
}
TensorDescriptor make_tensor_descriptor() {
  return create<TensorDescriptor>(calls().cudnnCreateTensorDescriptor,
                                  "cudnnCreateTensorDescriptor");
}
DropoutDescriptor make_dropout_descriptor() {
  return create<DropoutDescriptor>(calls().cudnnCreateDropoutDescriptor,
                                   "cudnnCreateDropoutDescriptor");
}

int current_device() {
  int count = 0;
  const cudaError_t status = calls().cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    calls().cudaGetLastError();
    throw Error(Status::unsupported,
                std::string("backend cuda: no CUDA device on this machine (cudaGetDeviceCount: ") +
                    (status == cudaSuccess ? "0 devices" : calls().cudaGetErrorString(status)) +
                    ")");
  }
  int device = 0;
  check(calls().cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

DeviceScope::DeviceScope(int device) {
  check(calls().cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check(calls().cudaSetDevice(device), "cudaSetDevice");
    changed_ = true;
  }
}
DeviceScope::~DeviceScope() {
  if (changed_) check_release(calls().cudaSetDevice(previous_), "cudaSetDevice (restore)");
}

namespace {

void free_device(void* p) {
  check_release(calls().cudaFree(p), "cudaFree");
}

class DeviceMemory final : public core::Memory {
 public:
  core::Buffer allocate(size_t bytes, const char* what, const char* part) const override {
    void* p = nullptr;
    const cudaError_t status = calls().cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    if (status != cudaSuccess) {
      calls().cudaGetLastError();
      throw Error(status == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::internal,
                  std::string(what) + (part ? std::string(": ") + part : "") +
                      ": cannot allocate " + std::to_string(bytes) +
                      " bytes on the GPU (cudaMalloc: " + calls().cudaGetErrorString(status) + ")");
    }
    return core::Buffer(p, core::BufferFree{&free_device});
  }
  void zero(void* dst, size_t bytes, void* stream) const override {
    check(calls().cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream)),
          "cudaMemsetAsync");
  }
  // From pageable host memory the runtime stages the bytes before it returns, so the source
  // may go at once: no wait for the device (a training forward's reserve header).
  void copy_from_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    check(calls().cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(stream)),
          "cudaMemcpyAsync to device");
  }
  void wait(void* stream) const override {
    check(calls().cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
          "cudaStreamSynchronize");
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    const auto s = static_cast<cudaStream_t>(stream);
    check(calls().cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync to host");
    check(calls().cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  bool on_device() const override { return true; }
};

}  // namespace

const core::Memory& device_memory() {
  static const DeviceMemory memory;
  return memory;
}

// cudaMemcpy from pageable memory returns once the bytes are staged, before they reach the
// device, and CUDA's rules promise nothing about when a non-blocking stream (PyTorch's, a
// framework's) then sees them. So the copy runs on a stream of its own and the host waits
// for it: the plan's data is on the device before the plan is returned, whatever stream its
// calls use, and no other stream's work is waited for.
void upload(void* dst, const void* src, size_t bytes) {
  const StreamOwner stream = make_stream();
  upload(dst, src, bytes, stream.get());
}

void upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  check(calls().cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (plan data)");
  check(calls().cudaStreamSynchronize(stream), "cudaStreamSynchronize (plan data)");
}

StreamOwner make_stream() {
  cudaStream_t stream = nullptr;
  check(calls().cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  return StreamOwner(stream);
}

void attach_stream(cudnnHandle_t handle, cudaStream_t stream) {
  check(calls().cudnnSetStream(handle, stream), "cudnnSetStream");
}

}  // namespace rnnx::cuda
