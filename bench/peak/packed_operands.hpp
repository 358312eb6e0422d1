// What the packed engine's benchmarks in bench/peak (rnnx_step_gemm, rnnx_packed_kernel_ab)
// share: operands aligned as the cpu backend carves its workspace, and their size lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace rnnx::peak {

// Floats aligned to 64 bytes, as the cpu backend's workspace carves them: a vector's
// 16-byte alignment would make every other 32-byte load cross a cache line.
struct AlignedFloats {
  explicit AlignedFloats(int64_t n)
      : data(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {
    if (data == nullptr) throw std::bad_alloc();
  }
  ~AlignedFloats() { std::free(data); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
};

// "32,64" -> {32, 64}; std::invalid_argument or std::out_of_range for anything else.
inline std::vector<int64_t> parse_sizes(const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    out.push_back(std::stoll(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

}  // namespace rnnx::peak
