// The step kernels for any CPU (baseline x86-64 or other architectures), one element at a
// time (the compiler may still vectorise with the baseline's SSE2): float32 with the same
// exp/sigmoid/tanh approximations as the vector ISAs, float64 with libm's exp and tanh
// (the float64 table of every ISA). Only the two tables have external linkage.
#include <cmath>
#include <cstdint>

#include "core/column_sums.hpp"
#include "core/peephole_grad.hpp"
#include "cpu/kernel_dispatch.hpp"

namespace rnnx::cpu::scalar {
namespace {

#include "cpu/kernels/vector_math.inl"

// The operations of a one-lane vector; fma is a multiply and an add (two roundings) since
// the baseline has no FMA instruction.
template <typename T>
struct Lane {
  using S = T;
  using F = T;
  using M = bool;
  static constexpr int W = 1;

  static F load(const T* p, int) { return *p; }
  static void store(T* p, F v, int) { *p = v; }
  static F set1(T v) { return v; }
  static F add(F a, F b) { return a + b; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F div_pos(F a, F b) { return a / b; }
  static F div(F a, F b) { return a / b; }
  static F fma(F a, F b, F c) { return a * b + c; }
  static F fnma(F a, F b, F c) { return c - a * b; }
  static F copysign(F mag, F sgn) {
    if constexpr (sizeof(T) == sizeof(float)) {
      return __builtin_copysignf(mag, sgn);
    } else {
      return __builtin_copysign(mag, sgn);
    }
  }
  static F abs(F a) { return copysign(a, T(1)); }
  static F nabs(F a) { return copysign(a, T(-1)); }
  static F clamp(F x, F lo, F hi) { return x < lo ? lo : (x > hi ? hi : x); }  // NaN stays
  static F at_least(F x, F lo) { return x < lo ? lo : x; }                     // NaN stays
  static F relu(F x) { return x < T(0) ? T(0) : x; }                           // NaN stays
  static M isnan(F a) { return a != a; }
  static M lt(F a, F b) { return a < b; }
  static M le(F a, F b) { return a <= b; }
  static M ge(F a, F b) { return a >= b; }
  static M gt(F a, F b) { return a > b; }
  static M mand(M a, M b) { return a && b; }
  static M mor(M a, M b) { return a || b; }
  static M mtrue() { return true; }
  static F select(M m, F if_true, F if_false) { return m ? if_true : if_false; }
  static M load_flags(const uint8_t* p, int) { return *p != 0; }
  static void store_flags(uint8_t* p, M m, int) { *p = m ? 1 : 0; }
};

struct LaneF32 : Lane<float> {
  // Round to nearest even by adding and removing 1.5 * 2^23 (exact for |a| < 2^22).
  static F round(F a) {
    constexpr float kShift = 12582912.0f;
    return (a + kShift) - kShift;
  }
  // p * 2^n for integral n in [-150, 128] (NaN n comes with NaN p), as two normal factors.
  static F scale2(F p, F n) {
    if (n != n) return p;
    const int32_t ni = static_cast<int32_t>(n);
    const int32_t n1 = ni >> 1, n2 = ni - n1;
    const float s1 = __builtin_bit_cast(float, static_cast<uint32_t>(n1 + 127) << 23);
    const float s2 = __builtin_bit_cast(float, static_cast<uint32_t>(n2 + 127) << 23);
    return p * s1 * s2;
  }
  static F exp(F x) { return poly_exp<LaneF32>(x); }
  static F sigmoid(F x) { return poly_sigmoid<LaneF32>(x); }
  static F tanh(F x) { return poly_tanh<LaneF32>(x); }
  static F log1p_unit(F u) { return poly_log1p_unit<LaneF32>(u); }
};

struct LaneF64 : Lane<double> {
  static F exp(F x) { return ::exp(x); }
  static F sigmoid(F x) { return 1.0 / (1.0 + ::exp(-x)); }
  static F tanh(F x) { return ::tanh(x); }
  static F log1p_unit(F u) { return ::log1p(u); }
};

#include "cpu/kernels/step_kernels.inl"
// The generic kernels use the fixed cells' helpers (for_vectors, clamp_value, plus_dy).
#include "cpu/kernels/activations.inl"
#include "cpu/kernels/extended_step_kernels.inl"
// Last, the table of every kernel above.
#include "cpu/kernels/step_table.inl"

}  // namespace

extern constinit const StepKernels<float> kStepKernelsF32 = step_table<LaneF32>("scalar", 8);
extern constinit const StepKernels<double> kStepKernelsF64 = step_table<LaneF64>("scalar", 16);

}  // namespace rnnx::cpu::scalar
