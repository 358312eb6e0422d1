// bfloat16 storage (DataType::bf16): the upper 16 bits of a float32. Widening is exact;
// narrowing rounds to nearest, ties to even, keeps infinities, and keeps a NaN a NaN (quiet,
// sign kept) where plain truncation of the rounding could carry it into infinity. Compute
// never happens in bf16: backends widen, work in float32 or double, and narrow the results.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rnnx::core {

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  template <typename U>
  requires std::is_arithmetic_v<U>
  explicit bfloat16(U v) : bits(narrow(static_cast<float>(v))) {}
  operator float() const { return widen(bits); }

  static float widen(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static uint16_t narrow(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
};
static_assert(sizeof(bfloat16) == 2, "bfloat16 is two bytes");

// n values between the caller's bf16 tensors and float32 working copies.
inline void widen(const bfloat16* src, float* dst, int64_t n) {
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16::widen(s[i]);
}
inline void narrow(const float* src, bfloat16* dst, int64_t n) {
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = bfloat16::narrow(src[i]);
}

}  // namespace rnnx::core
