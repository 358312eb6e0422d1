// KeptWeights: the packed copies of a network's forward weights, by (weights, version).
#include "cpu/kept_weights.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "cpu/buffers.hpp"
#include "cpu/passes.hpp"

namespace rnnx::cpu {
namespace {

// A block's floats rounded up to 64 bytes, so that every block starts aligned.
size_t block_floats(const PlanSpec& p, int64_t l) {
  return (static_cast<size_t>(forward_kept_block_floats(p, l)) + 15) / 16 * 16;
}

}  // namespace

void KeptWeights::Copy::Free::operator()(float* p) const {
  std::free(p);
}

std::shared_ptr<const KeptWeights::Copy> KeptWeights::find(const PlanSpec& p, const float* weights,
                                                           uint64_t version) {
  if (version == 0 || !p.packed_engine()) return nullptr;
  const PackedType type = p.packed_type();
  std::lock_guard<std::mutex> lock(mutex_);
  ++clock_;
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.weights == weights && e.version == version && e.type == type;
  });
  if (it == entries_.end()) {
    // A first call: remembered (in the place of the least recently used pair when full).
    if (entries_.size() < kPairs) {
      entries_.emplace_back();
      it = entries_.end() - 1;
    } else {
      it = std::min_element(entries_.begin(), entries_.end(),
                            [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    }
    *it = Entry{weights, version, type, nullptr, clock_};
    return nullptr;
  }
  it->last_use = clock_;
  if (!it->copy) {
    // The second call: packed once more, under the lock (a third call of the pair waits for
    // this copy rather than packing its own).
    auto copy = std::make_shared<Copy>();
    for (int64_t l = 0; l < p.L; ++l) copy->floats += p.D * block_floats(p, l);
    void* raw = std::aligned_alloc(64, copy->floats * sizeof(float));
    if (raw == nullptr) throw std::bad_alloc();
    copy->data.reset(static_cast<float*>(raw));
    float* at = copy->data.get();
    for (int64_t l = 0; l < p.L; ++l) {
      for (int64_t d = 0; d < p.D; ++d) {
        copy->blocks.push_back(at);
        pack_kept_forward_weights<float>(p, weights, l, d, at);
        at += block_floats(p, l);
      }
    }
    it->copy = std::move(copy);
  }
  return it->copy;
}

size_t KeptWeights::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.copy ? e.copy->floats * sizeof(float) : 0;
  return n;
}

}  // namespace rnnx::cpu
