// A network's packed copies of its forward weights (ForwardArgs::weights_version, docs/cpu.md
// "Weights versions"): the packed engine multiplies by W_hh^T, W_hr^T and W_ih^T packed into
// its own layout, which a call without a version packs into its workspace every time. With a
// version, the second call of a (weights, version) pair packs them once more into a copy the
// network keeps, and the calls after it multiply by that copy. The first call of a pair packs
// into its workspace as before: a training step's weights change at every step, and its
// forward then costs what it did.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu/packed_gemm.hpp"
#include "cpu/plan_spec.hpp"

namespace rnnx::cpu {

class KeptWeights {
 public:
  // One pair's packed blocks, [L * D] of forward_kept_block_floats each; never changed once
  // made, and kept alive by the calls that use it when the network lets it go.
  struct Copy {
    struct Free {
      void operator()(float* p) const;
    };
    std::unique_ptr<float, Free> data;  // 64-byte aligned, as the workspace's sub-buffers
    size_t floats = 0;
    std::vector<float*> blocks;  // each at a 64-byte boundary
  };

  KeptWeights() { entries_.reserve(kPairs); }

  // The copy for (weights, version) packed as `p` packs (its packed type): the kept one, or
  // one made now when this is the pair's second call; null for version 0 and a first call.
  std::shared_ptr<const Copy> find(const PlanSpec& p, const float* weights, uint64_t version);

  // The bytes the copies take now (bounded: kPairs copies).
  size_t bytes() const;

 private:
  // The pairs a network remembers: a few models of one config called in turn (one network
  // serves them all) each keep theirs.
  static constexpr size_t kPairs = 4;
  struct Entry {
    const float* weights = nullptr;
    uint64_t version = 0;
    PackedType type = PackedType::f32;
    std::shared_ptr<const Copy> copy;  // null while the pair has had one call
    uint64_t last_use = 0;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace rnnx::cpu
