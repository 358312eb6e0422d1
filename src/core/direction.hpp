// Which way a direction runs in time, for every backend.
#pragma once

#include <cstdint>

#include "rnnx/config.hpp"

namespace rnnx::core {

// Direction d runs from each sequence's last element to its first: the second direction
// of a bidirectional network, or the one direction of a `reverse` network.
inline bool direction_reversed(const Config& c, int64_t d) {
  return (d == 1) != c.reverse;
}

}  // namespace rnnx::core
