// Dropout between layers from a counter-based generator (Philox4x32-10): the keep/drop
// decision of an element is a pure function of (seed, call counter, layer, t, original
// batch index b, feature j), so it is the same for any thread count, any layout
// (time-major, batch-first, packed) and on every backend. Nothing is stateful: a call
// never re-initialises random state, it only needs the counter.
#pragma once

#include <array>
#include <cstdint>

#include "core/schedule.hpp"
#include "rnnx/config.hpp"

namespace rnnx::core {

// Where dropout applies: to the output of every layer but the last, as the next layer reads
// it, when p > 0 (in training; the caller knows whether it trains). Backward undoes it on the
// same layers' gradients.
inline bool dropout_after_layer(const Config& c, int64_t layer) {
  return c.dropout > 0.0 && layer + 1 < c.num_layers;
}
// Whether any layer has it.
inline bool dropout_between_layers(const Config& c) {
  return dropout_after_layer(c, 0);
}

struct DropoutKey {
  uint64_t seed = 0;
  uint64_t counter = 0;  // the caller's call counter
  int64_t layer = 0;     // dropout after layer `layer` (0 .. L-2)
  double p = 0.0;
};

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

// Element index on the logical [T, B, width] grid; independent of the caller's layout.
inline uint64_t dropout_element(int64_t t, int64_t b, int64_t B, int64_t width, int64_t j) {
  return (static_cast<uint64_t>(t) * B + b) * width + j;
}

// True when element e is kept (probability 1 - p).
bool dropout_keep(const DropoutKey& key, uint64_t element);

// Multiplies step t's packed sorted rows (of [tokens, width]) by mask / (1 - p) in place:
// the forward of dropout and, applied to gradients, its backward. One step, so that each
// backend spreads the steps over its own threads (cpu/rows.hpp); an element's decision
// depends only on its own index, never on which thread or step order applies it.
template <typename T>
void dropout_apply_step_rows(const DropoutKey& key, const Schedule& s, int64_t width, int64_t t,
                             T* rows);

}  // namespace rnnx::core
