// MapUploads of map_uploads.hpp.
#include "cuda/map_uploads.hpp"

#include <algorithm>
#include <cstring>

namespace rnnx::cuda {
namespace {

// The capacity (values) a buffer holding `needed` grows to from `current`: at least twice
// what it was and at least 32 KiB, so that a network's ragged batches allocate a handful of
// times in all (each time a cudaFree or cudaFreeHost of the old buffer, which waits for the
// device) rather than whenever a batch is the longest yet.
size_t grown_capacity(size_t needed, size_t current) {
  constexpr size_t kMinimum = 4096;  // values: 32 KiB, a batch of 4096 rows' maps
  return std::max({needed, 2 * current, kMinimum});
}

}  // namespace

const int64_t* MapUploads::stage(const std::vector<int64_t>& maps) {
  if (maps.size() > device_capacity_) {  // grown, never shrunk: a network's batches reuse it
    const size_t capacity = grown_capacity(maps.size(), device_capacity_);
    device_ = device_memory().allocate(capacity * sizeof(int64_t), "plan", "row maps");
    device_capacity_ = capacity;
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
      // The first flush: both buffers' events at once, so that no later flush creates one.
      // Only those not made yet: one made and recorded before a failed creation of the
      // other still orders its buffer's copy.
      for (Staging& each : staging_) {
        if (!each.copied.get()) each.copied = make_sync_event();
      }
    }
    if (pending_.size() > s.capacity) {
      const size_t capacity = grown_capacity(pending_.size(), s.capacity);
      s.host = allocate_pinned(capacity * sizeof(int64_t), "row maps staging");
      s.capacity = capacity;
      // The other buffer, if it has never been made, is made now too: the next batch's
      // flush then allocates nothing.
      Staging& other = staging_[1 - next_];
      if (other.capacity == 0) {
        other.host = allocate_pinned(capacity * sizeof(int64_t), "row maps staging");
        other.capacity = capacity;
      }
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
