// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and
// the keep/drop decision of dropout built on it, written once for the host and for CUDA
// kernels: the same seed, call counter, layer and element give the same bits on every
// backend.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace rnnx::core {

struct PhiloxBlock {
  uint32_t v[4];
};

RNNX_HOST_DEVICE PhiloxBlock philox4x32_10_block(PhiloxBlock c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c.v[2];
    c = PhiloxBlock{{static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k0, static_cast<uint32_t>(p1),
                     static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k1, static_cast<uint32_t>(p0)}};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

// The four decisions' bits of elements 4*group .. 4*group+3 of one dropout (seed, counter,
// layer): the counter's low word and the layer go into the Philox counter, its high word
// into the key.
RNNX_HOST_DEVICE PhiloxBlock dropout_block(uint64_t seed, uint64_t counter, int64_t layer,
                                           uint64_t group) {
  const PhiloxBlock ctr{{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                         static_cast<uint32_t>(layer), static_cast<uint32_t>(counter)}};
  return philox4x32_10_block(
      ctr, static_cast<uint32_t>(seed),
      static_cast<uint32_t>(seed >> 32) ^ static_cast<uint32_t>(counter >> 32));
}

// Kept when the uniform number in [0, 1) of the top 24 bits (exact in float and double)
// is at least p.
RNNX_HOST_DEVICE bool dropout_bits_keep(uint32_t bits, double p) {
  return static_cast<double>(bits >> 8) * (1.0 / 16777216.0) >= p;
}

}  // namespace rnnx::core
