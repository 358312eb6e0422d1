// MapUploads of map_uploads.hpp.
#include "cuda/map_uploads.hpp"

#include <cstring>

namespace rnnx::cuda {

const int64_t* MapUploads::stage(const std::vector<int64_t>& maps) {
  if (maps.size() > device_capacity_) {  // grown, never shrunk: a network's batches reuse it
    device_ = device_memory().allocate(maps.size() * sizeof(int64_t), "plan", "row maps");
    device_capacity_ = maps.size();
  }
  pending_ = maps;
  dirty_ = !maps.empty();
  return static_cast<const int64_t*>(device_.get());
}

void MapUploads::flush(cudaStream_t stream) {
  if (dirty_) {
    Staging& s = staging_[next_];
    if (s.copied.get()) {
      // Its last copy must have left the staging buffer before the host writes it again:
      // done unless the device is two batches behind.
      const cudaError_t status = calls().cudaEventQuery(s.copied.get());
      if (status == cudaErrorNotReady) {
        calls().cudaGetLastError();
        check(calls().cudaEventSynchronize(s.copied.get()), "cudaEventSynchronize (row maps)");
      } else {
        check(status, "cudaEventQuery (row maps)");
      }
    } else {
      s.copied = make_sync_event();
    }
    if (pending_.size() > s.capacity) {
      s.host = allocate_pinned(pending_.size() * sizeof(int64_t), "row maps staging");
      s.capacity = pending_.size();
    }
    const size_t bytes = pending_.size() * sizeof(int64_t);
    std::memcpy(s.host.get(), pending_.data(), bytes);
    if (called_ && last_ != stream) {
      // The previous call's kernels, queued on another stream, may still read the maps.
      if (!order_.get()) order_ = make_sync_event();
      check(calls().cudaEventRecord(order_.get(), last_), "cudaEventRecord (row maps)");
      check(calls().cudaStreamWaitEvent(stream, order_.get(), 0), "cudaStreamWaitEvent (row maps)");
    }
    check(
        calls().cudaMemcpyAsync(device_.get(), s.host.get(), bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (row maps)");
    check(calls().cudaEventRecord(s.copied.get(), stream), "cudaEventRecord (row maps)");
    next_ = 1 - next_;
    dirty_ = false;
  }
  called_ = true;
  last_ = stream;
}

}  // namespace rnnx::cuda
