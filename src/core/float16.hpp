// IEEE binary16 storage (DataType::f16) on the host: what the reference (the oracle of the
// float16 runs), the cpu backend's 16-bit data path, the ONNX converters and the tests read
// and write. Widening is exact;
// narrowing rounds to nearest, ties to even, overflows to infinity past 65520, keeps
// subnormals, and keeps a NaN a NaN (quiet, sign kept). Compute never happens in float16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rnnx::core {

struct float16 {
  uint16_t bits = 0;

  float16() = default;
  template <typename U>
  requires std::is_arithmetic_v<U>
  explicit float16(U v) : bits(narrow(static_cast<float>(v))) {}
  operator float() const { return widen(bits); }

  static float widen(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
      const float v = std::ldexp(static_cast<float>(mant), -24);
      return sign ? -v : v;
    }
    const uint32_t u =
        sign | (exp == 31 ? 0x7f800000u | (mant << 13) : ((exp + 112u) << 23) | (mant << 13));
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static uint16_t narrow(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
    if (a >= 0x38800000u) {  // a normal float16 (>= 2^-14): round off 13 bits, rebias
      a += 0xfffu + ((a >> 13) & 1u);
      return static_cast<uint16_t>(sign | ((a - (112u << 23)) >> 13));
    }
    // Subnormal or zero: the multiple of 2^-24 nearest (the scaling is exact; 1024 is the
    // smallest normal, which has the right bits too).
    float m;
    std::memcpy(&m, &a, sizeof m);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(m * 16777216.0f)));
  }
};
static_assert(sizeof(float16) == 2, "float16 is two bytes");

// n values between the caller's float16 tensors and float32 working copies (the cpu
// backend's 16-bit data path).
inline void widen(const float16* src, float* dst, int64_t n) {
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = float16::widen(s[i]);
}
inline void narrow(const float* src, float16* dst, int64_t n) {
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = float16::narrow(src[i]);
}

}  // namespace rnnx::core
