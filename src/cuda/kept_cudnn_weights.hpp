// A network's copies of its weights in cuDNN's weight spaces, kept by (weights, version) as
// the cpu keeps its packed ones (ForwardArgs::weights_version, docs/cuda.md "Weights
// versions"). Without one, every inference forward converts the flat weights into its
// workspace (one kernel per cuDNN group, all the weights' bytes read and written). With a
// version, the second inference call of a (weights, version) pair converts them once more
// into a device buffer the network keeps, and later calls of the pair give cuDNN that
// buffer.
//
// What the host cannot see is ordered on the device: a copy is made on the calling stream
// and an event recorded after it; a call on another stream first makes its stream wait for
// that event (once per stream and copy). Every call that reads a copy records an event of
// its stream after its work, and a buffer is written again (for another pair) only when no
// call holds it and every other stream's last read of it has completed (cudaEventQuery,
// never a wait): otherwise that call converts into its workspace as without a version. A
// network keeps at most kPairs buffers; they go with it.
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
  // spaces (the backend's groups and algorithm: two backends of a network may differ).
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
    void* space_ = nullptr;
  };

  KeptCudnnWeights() = default;
  KeptCudnnWeights(const KeptCudnnWeights&) = delete;
  KeptCudnnWeights& operator=(const KeptCudnnWeights&) = delete;

  // The kept copy of `key` (`bytes` long), ready for work queued on `stream` after this
  // returns; made now by `convert(space)` on `stream` at the pair's second call. An empty
  // Use for version 0, a pair's first call, or when no buffer can be written now.
  Use find(const Key& key, size_t bytes, cudaStream_t stream,
           const std::function<void(void*)>& convert);

  // Device bytes held by copies.
  size_t bytes() const;

  // The pairs and buffers a network keeps.
  static constexpr size_t kPairs = 4;

 private:
  // A stream that has read a slot's buffer: its event, recorded after its last read, and
  // whether it has waited for the current copy's making.
  struct Reader {
    cudaStream_t stream = nullptr;
    EventOwner last_read;
    bool waited = false;
  };
  struct Slot {
    Key key;
    bool has_copy = false;  // the buffer holds key's weights
    uint64_t last_use = 0;
    core::Buffer buffer;  // kept when the slot takes another pair, reused if large enough
    size_t capacity = 0;
    cudaStream_t maker = nullptr;  // the stream the copy was made on
    EventOwner made;               // recorded after the copy
    std::vector<Reader> readers;
    int64_t holders = 0;  // Uses alive
  };

  // Whether the slot's buffer may be written on `stream` now: no Use holds it and every
  // other stream's last read has completed.
  bool writable(Slot& s, cudaStream_t stream);
  Reader& reader(Slot& s, cudaStream_t stream);
  // The end of a Use: its stream's event recorded; false (the buffer stays held) when the
  // record failed with `status`.
  bool release(size_t slot, cudaStream_t stream, cudaError_t* status) noexcept;

  mutable std::mutex mutex_;
  Slot slots_[kPairs];
  uint64_t clock_ = 0;
};

}  // namespace rnnx::cuda
