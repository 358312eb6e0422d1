// KeptCudnnWeights of kept_cudnn_weights.hpp.
#include "cuda/kept_cudnn_weights.hpp"

#include <algorithm>
#include <utility>

namespace rnnx::cuda {

KeptCudnnWeights::Use::Use(Use&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)),
      slot_(o.slot_),
      stream_(o.stream_),
      space_(std::exchange(o.space_, nullptr)) {}

void KeptCudnnWeights::Use::done() {
  if (owner_ == nullptr) return;
  cudaError_t status = cudaSuccess;
  if (owner_->release(slot_, stream_, &status)) {
    owner_ = nullptr;
    return;
  }
  calls().cudaGetLastError();
  check(status, "cudaEventRecord (kept weights)");  // the destructor tries once more
}

KeptCudnnWeights::Use::~Use() {
  if (owner_ == nullptr) return;
  cudaError_t status = cudaSuccess;
  if (!owner_->release(slot_, stream_, &status)) {
    // Nothing then says when this call's reads end: the buffer stays held, never written
    // again while the network lives.
    calls().cudaGetLastError();
    report_release_failure("cudaEventRecord (kept weights)", calls().cudaGetErrorName(status));
  }
}

KeptCudnnWeights::Reader& KeptCudnnWeights::reader(Slot& s, cudaStream_t stream) {
  for (Reader& r : s.readers) {
    if (r.stream == stream) return r;
  }
  Reader r;
  r.stream = stream;
  r.last_read = make_sync_event();  // once per stream and slot: streams are few and reused
  s.readers.push_back(std::move(r));
  return s.readers.back();
}

bool KeptCudnnWeights::writable(Slot& s, cudaStream_t stream) {
  if (s.holders > 0) return false;
  // Work queued on `stream` is ordered before what this call queues; another stream's last
  // read (or the copy's making there) must have completed on the device.
  const auto done = [&](cudaEvent_t e) {
    const cudaError_t status = calls().cudaEventQuery(e);
    if (status == cudaErrorNotReady) {
      calls().cudaGetLastError();  // not an error: clears the runtime's last status
      return false;
    }
    check(status, "cudaEventQuery (kept weights)");
    return true;
  };
  if (s.made.get() && s.maker != stream && !done(s.made.get())) return false;
  for (Reader& r : s.readers) {
    if (r.stream != stream && !done(r.last_read.get())) return false;
  }
  return true;
}

KeptCudnnWeights::Use KeptCudnnWeights::find(const Key& key, size_t bytes, cudaStream_t stream,
                                             const std::function<void(void*)>& convert) {
  Use use;
  if (key.version == 0) return use;
  std::lock_guard<std::mutex> lock(mutex_);
  ++clock_;
  const auto same = [&](const Slot& s) {
    return s.key.version != 0 && s.key.weights == key.weights && s.key.version == key.version &&
           s.key.layout == key.layout;
  };
  Slot* s = std::find_if(std::begin(slots_), std::end(slots_), same);
  if (s == std::end(slots_)) {
    // A first call: remembered in the least recently used slot (an unused one first). Its
    // buffer stays with the slot, for the pair's copy if it has a second call.
    s = std::min_element(std::begin(slots_), std::end(slots_),
                         [](const Slot& a, const Slot& b) { return a.last_use < b.last_use; });
    s->key = key;
    s->has_copy = false;
    s->last_use = clock_;
    return use;
  }
  s->last_use = clock_;
  if (!s->has_copy) {
    // The second call: converted once more, into the slot's buffer, under the lock (a third
    // call of the pair waits for this copy rather than converting its own). Events first,
    // so that a failed creation leaves no half-made copy.
    if (!writable(*s, stream)) return use;
    if (!s->made.get()) s->made = make_sync_event();
    reader(*s, stream);
    if (s->capacity < bytes) {
      s->buffer.reset();  // frees the smaller one first: cudaFree waits for the device
      s->capacity = 0;
      s->buffer = device_memory().allocate(bytes, "network", "kept weights");
      s->capacity = bytes;
    }
    convert(s->buffer.get());
    check(calls().cudaEventRecord(s->made.get(), stream), "cudaEventRecord (kept weights)");
    s->maker = stream;
    for (Reader& r : s->readers) r.waited = r.stream == stream;
    s->has_copy = true;
  }
  Reader& r = reader(*s, stream);
  if (!r.waited) {
    // Made on another stream: this one waits for it on the device, once.
    check(calls().cudaStreamWaitEvent(stream, s->made.get(), 0),
          "cudaStreamWaitEvent (kept weights)");
    r.waited = true;
  }
  ++s->holders;
  use.owner_ = this;
  use.slot_ = static_cast<size_t>(s - slots_);
  use.stream_ = stream;
  use.space_ = s->buffer.get();
  return use;
}

bool KeptCudnnWeights::release(size_t slot, cudaStream_t stream, cudaError_t* status) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = slots_[slot];
  for (Reader& r : s.readers) {
    if (r.stream != stream) continue;
    *status = calls().cudaEventRecord(r.last_read.get(), stream);
    if (*status != cudaSuccess) return false;
  }
  --s.holders;
  return true;
}

size_t KeptCudnnWeights::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const Slot& s : slots_) n += s.capacity;
  return n;
}

}  // namespace rnnx::cuda
