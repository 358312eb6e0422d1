// What `rnnx bench` times, apart from the timing itself: the seeded length distributions
// (full, uniform, longtail, or a file), the random data generator and the FLOP count on
// real tokens. docs/bench.md states the exact definitions; keep the two in step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rnnx/config.hpp"

namespace rnnx::tool {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable, and the same on every platform,
// unlike the distributions of <random>, so a length list can be reproduced elsewhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform01();  // [0, 1) with 53 random bits
 private:
  uint64_t state_;
};

// `spec` is full, uniform, longtail or the path of a file with one length per line.
// Throws rnnx::Error(invalid_argument) for a bad file.
std::vector<int64_t> make_lengths(const std::string& spec, int64_t T, int64_t B, uint64_t seed);

// FLOPs of one inference forward over `tokens` real tokens (GEMM work only):
// per token, layer and direction 2*G*H*(I_l + P') + (proj ? 2*H*P' : 0).
double forward_flops(const Config& config, int64_t tokens);

// Fills `n` elements of `dtype` at `data` uniformly in [lo, hi).
void fill_uniform(void* data, DataType dtype, int64_t n, double lo, double hi, SplitMix64& rng);

}  // namespace rnnx::tool
