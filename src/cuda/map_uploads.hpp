// A bound batch's row maps (core/batch_mover.hpp's, the dropout rows) on the device without a
// host wait: bind time stages them (host only); each call, before its first work, flushes them
// onto its own stream. The copy is ordered after the work that reads the previous maps (the
// same stream, or another one made to wait for it by an event) and goes from pinned memory,
// two staging buffers in turn, so the host waits only if the device is two batches behind
// (issue 47: no host-device sync per ragged training step). Replaces a pageable copy on a
// private stream and a wait, which also let the copy overwrite maps that the previous
// batch's kernels, still queued on the caller's stream, had yet to read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/memory.hpp"
#include "cuda/cuda_api.hpp"

namespace rnnx::cuda {

class MapUploads {
 public:
  MapUploads() = default;
  MapUploads(const MapUploads&) = delete;
  MapUploads& operator=(const MapUploads&) = delete;

  // Keeps `maps` for the next flush and returns where they will be on the device: a buffer
  // kept across batches, made anew (the old one freed, which waits for the device) only when
  // too small, then at least twice as large (map_uploads.cpp).
  const int64_t* stage(const std::vector<int64_t>& maps);
  // Before a call's first work on `stream`: the staged maps, if any, copied on it.
  void flush(cudaStream_t stream);

 private:
  struct Staging {
    PinnedOwner host;
    size_t capacity = 0;  // values
    EventOwner copied;    // recorded after the copy from `host` on its stream
  };
  core::Buffer device_;
  size_t device_capacity_ = 0;  // values
  std::vector<int64_t> pending_;
  bool dirty_ = false;
  Staging staging_[2];
  int next_ = 0;
  bool called_ = false;
  cudaStream_t last_ = nullptr;  // the stream of the last call
  EventOwner order_;             // orders a flush on another stream after the last call's work
};

}  // namespace rnnx::cuda
