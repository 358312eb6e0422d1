// KeptCudnnWeights of kept_cudnn_weights.hpp.
#include "cuda/kept_cudnn_weights.hpp"

#include <algorithm>
#include <utility>

#include "rnnx/error.hpp"

namespace rnnx::cuda {
namespace {

// The runtime's identity of `stream`, and whether it is capturing a graph; false when either
// cannot be told (the call then converts into its workspace, as without a version).
bool stream_for_copies(cudaStream_t stream, unsigned long long* id) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (calls().cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      calls().cudaStreamGetId(stream, id) != cudaSuccess) {
    calls().cudaGetLastError();  // not sticky: clears the runtime's last status
    return false;
  }
  return capture == cudaStreamCaptureStatusNone;
}

}  // namespace

KeptCudnnWeights::Use::Use(Use&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)),
      slot_(o.slot_),
      stream_(o.stream_),
      stream_id_(o.stream_id_),
      space_(std::exchange(o.space_, nullptr)) {}

void KeptCudnnWeights::Use::done() {
  if (owner_ == nullptr) return;
  cudaError_t status = cudaSuccess;
  if (owner_->release(slot_, stream_, stream_id_, &status)) {
    owner_ = nullptr;
    return;
  }
  calls().cudaGetLastError();
  check(status, "cudaEventRecord (kept weights)");  // the destructor tries once more
}

KeptCudnnWeights::Use::~Use() {
  if (owner_ == nullptr) return;
  cudaError_t status = cudaSuccess;
  if (!owner_->release(slot_, stream_, stream_id_, &status)) {
    // Nothing then says when this call's reads end: the buffer stays held, never written
    // again while the network lives.
    calls().cudaGetLastError();
    report_release_failure("cudaEventRecord (kept weights)", calls().cudaGetErrorName(status));
  }
}

KeptCudnnWeights::Reader& KeptCudnnWeights::reader(Slot& s, unsigned long long stream) {
  for (Reader& r : s.readers) {
    if (r.stream == stream) return r;
  }
  Reader r;
  r.stream = stream;
  r.last_read = make_sync_event();  // once per stream and copy (a making prunes the others)
  s.readers.push_back(std::move(r));
  return s.readers.back();
}

bool KeptCudnnWeights::completed(cudaEvent_t e) {
  const cudaError_t status = calls().cudaEventQuery(e);
  if (status == cudaErrorNotReady) {
    calls().cudaGetLastError();  // not an error: clears the runtime's last status
    return false;
  }
  check(status, "cudaEventQuery (kept weights)");
  return true;
}

bool KeptCudnnWeights::writable(Slot& s) {
  if (s.holders > 0) return false;
  // Even the calling stream's own reads must have completed: a stream id is checked, but a
  // write is never ordered by stream alone (the simplest rule that holds for every stream).
  if (s.made.get() && !s.made_done && !completed(s.made.get())) return false;
  for (Reader& r : s.readers) {
    if (!completed(r.last_read.get())) return false;
  }
  return true;
}

KeptCudnnWeights::Use KeptCudnnWeights::find(const Key& key, size_t bytes, cudaStream_t stream,
                                             const std::function<void(void*)>& convert) {
  Use use;
  unsigned long long id = 0;
  if (key.version == 0 || !stream_for_copies(stream, &id)) return use;
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
    // call of the pair waits for this copy rather than converting its own).
    if (!writable(*s)) return use;
    // Every read has completed: only this stream's reader is kept (a caller that makes a
    // stream per request would otherwise grow the list without bound).
    s->readers.erase(std::remove_if(s->readers.begin(), s->readers.end(),
                                    [&](const Reader& r) { return r.stream != id; }),
                     s->readers.end());
    // Events first, so that a failed creation leaves no half-made copy.
    if (!s->made.get()) s->made = make_sync_event();
    reader(*s, id);
    if (s->capacity < bytes) {
      s->buffer.reset();  // frees the smaller one first: cudaFree waits for the device
      s->capacity = 0;
      try {
        s->buffer = device_memory().allocate(bytes, "network", "kept weights");
      } catch (const Error& e) {
        if (e.code() != Status::out_of_memory) throw;
        calls().cudaGetLastError();
        return use;  // the call converts into its workspace, as without a version
      }
      s->capacity = bytes;
    }
    // Until the making is recorded the buffer may have writes queued that no event covers:
    // a failure on the way frees it (cudaFree waits for the device, so for those writes).
    struct Unmade {
      Slot* slot;
      bool armed = true;
      ~Unmade() {
        if (!armed) return;
        slot->buffer.reset();
        slot->capacity = 0;
      }
    } unmade{s};
    convert(s->buffer.get());
    check(calls().cudaEventRecord(s->made.get(), stream), "cudaEventRecord (kept weights)");
    unmade.armed = false;
    s->maker = id;
    s->made_done = false;
    s->has_copy = true;
  }
  reader(*s, id);
  if (id != s->maker && !s->made_done) {
    if (completed(s->made.get())) {
      s->made_done = true;  // from now on no stream waits
    } else {
      check(calls().cudaStreamWaitEvent(stream, s->made.get(), 0),
            "cudaStreamWaitEvent (kept weights)");
    }
  }
  ++s->holders;
  use.owner_ = this;
  use.slot_ = static_cast<size_t>(s - slots_);
  use.stream_ = stream;
  use.stream_id_ = id;
  use.space_ = s->buffer.get();
  return use;
}

bool KeptCudnnWeights::release(size_t slot, cudaStream_t stream, unsigned long long stream_id,
                               cudaError_t* status) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = slots_[slot];
  for (Reader& r : s.readers) {
    if (r.stream != stream_id) continue;
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
