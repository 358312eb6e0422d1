// A network's copies of its weights in cuDNN's weight spaces, kept by (weights, version) as
// the cpu keeps its packed ones (ForwardArgs::weights_version, docs/cuda.md "Weights
// versions"). Without one, every inference forward converts the flat weights into its
// workspace (one kernel per cuDNN group, all the weights' bytes read and written). With a
// version, the second inference call of a (weights, version) pair converts them once more
// into a device buffer the network keeps, and later calls of the pair give cuDNN that
// buffer.
//
// What the host cannot see is ordered on the device: a copy is made on the calling stream
// and an event recorded after it; a call on another stream makes its stream wait for that
// event until a query says the copy is complete. Every call that reads a copy records an
// event of its stream after its work, and a buffer is written again (for another pair) only
// when no call holds it and its making and every stream's last read of it have completed
// (cudaEventQuery, never a wait): otherwise that call converts into its workspace as without
// a version. Streams are told apart by the runtime's stream id, not the handle (the
// per-thread default stream is one handle for many streams; a destroyed stream's handle may
// come back). A call on a capturing stream (a CUDA graph) neither makes nor reads a copy: a
// graph would keep reading the buffer at replay. A network keeps at most kPairs buffers;
// they go with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/memory.hpp"
#include "cuda/cuda_api.hpp"

namespace rnnx::cuda {

class KeptCudnnWeights {
 public:
  // What identifies a copy: the caller's weights and version, and the layout of the weight
  // spaces (a hash of the backend's groups, algorithm, math and GPU: two backends of a
  // network may differ).
  struct Key {
    const void* weights = nullptr;
    uint64_t version = 0;
    uint64_t layout = 0;
  };

  // A call's use of a kept copy: `space` is null when the call converts into its workspace.
  // done(), once the call's work that reads `space` is queued on its stream, records the
  // stream's event for that work (throws naming cudaEventRecord) and lets the buffer go;
  // the destructor does the same for a call that ended early (an exception), reporting a
  // failure on stderr, as releases do, and then never writing the buffer again.
  class Use {
   public:
    Use() = default;
    Use(Use&& o) noexcept;
    Use& operator=(Use&&) = delete;
    Use(const Use&) = delete;
    ~Use();
    void* space() const { return space_; }
    void done();

   private:
    friend class KeptCudnnWeights;
    KeptCudnnWeights* owner_ = nullptr;
    size_t slot_ = 0;
    cudaStream_t stream_ = nullptr;
    unsigned long long stream_id_ = 0;
    void* space_ = nullptr;
  };

  KeptCudnnWeights() = default;
  KeptCudnnWeights(const KeptCudnnWeights&) = delete;
  KeptCudnnWeights& operator=(const KeptCudnnWeights&) = delete;

  // The kept copy of `key` (`bytes` long), ready for work queued on `stream` after this
  // returns; made now by `convert(space)` on `stream` at the pair's second call. An empty
  // Use for version 0, a pair's first call, a capturing stream, or when no buffer can be
  // written or allocated now.
  Use find(const Key& key, size_t bytes, cudaStream_t stream,
           const std::function<void(void*)>& convert);

  // Device bytes held by copies.
  size_t bytes() const;

  // The pairs and buffers a network keeps.
  static constexpr size_t kPairs = 4;

 private:
  // A stream that has read a slot's buffer (by the runtime's stream id): its event,
  // recorded after its last read.
  struct Reader {
    unsigned long long stream = 0;
    EventOwner last_read;
  };
  struct Slot {
    Key key;
    bool has_copy = false;  // the buffer holds key's weights
    uint64_t last_use = 0;
    core::Buffer buffer;  // kept when the slot takes another pair, reused if large enough
    size_t capacity = 0;
    unsigned long long maker = 0;  // the stream the copy was made on
    bool made_done = false;        // a query saw the making complete: no stream waits
    EventOwner made;               // recorded after the copy
    std::vector<Reader> readers;
    int64_t holders = 0;  // Uses alive
  };

  // Whether the slot's buffer may be written now: no Use holds it, and its making and every
  // stream's last read have completed.
  bool writable(Slot& s);
  // Whether `e` has completed (false: not yet); throws on an error.
  static bool completed(cudaEvent_t e);
  Reader& reader(Slot& s, unsigned long long stream);
  // The end of a Use: its stream's event recorded; false (the buffer stays held) when the
  // record failed with `status`.
  bool release(size_t slot, cudaStream_t stream, unsigned long long stream_id,
               cudaError_t* status) noexcept;

  mutable std::mutex mutex_;
  Slot slots_[kPairs];
  uint64_t clock_ = 0;
};

}  // namespace rnnx::cuda
