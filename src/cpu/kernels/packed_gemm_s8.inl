// The int8 packed GEMM (math mode int8, docs/int8.md): its layouts, its packers, which
// quantise, and the scalar multiply that defines the arithmetic. Pasted into the anonymous
// namespace of packed_gemm_s8_scalar.cpp (the definition's table) and of
// packed_gemm_avx512_vnni.cpp (which multiplies on vpdpbusd), after <cmath>, <cstring>,
// <stdexcept> and packed_gemm_kernels.hpp; both tables therefore quantise with this same code.
//
// The arithmetic, C[i][n] (+)= sa[i] * sw[n] * sum_k qa[i][k] * qw[k][n]:
//  * B (the weights, op(W) [K, N]): per output column n, symmetric: sw[n] = max_k |W| / 127,
//    qw = round-half-even(w * (127 / max)), in [-127, 127].
//  * A (a step's input or state rows): per row i, dynamically at every product, the same
//    rule: sa[i] = max_k |a| / 127. A row or column holding a NaN or an infinity gets the
//    scale NaN (all its outputs NaN: the NaN policy's "propagate"); an all-zero one the scale
//    0 (its outputs 0).
//  * vpdpbusd multiplies unsigned by signed bytes: A is stored as qa + 128 (in [1, 255]) and
//    each column keeps 128 * sum_k qw[k][n], subtracted from the int32 sum. The sum is exact:
//    |sum| <= 255 * 127 * K < 2^31 for K <= 65536 (the plan refuses wider
//    operands: network_core.cpp).
//  * The result, in float32: float(sum - comp[n]) * (sa[i] * sw[n]), then + C when
//    accumulating: three roundings, in this order, on every path, so the kernels equal this
//    definition bit for bit.
//
// Layouts, in 32-bit slots of four consecutive k (K rounded up to whole chunks of 16 slots,
// the padding 0 in B and 128 in A):
//  * B: panels of kPackedPanel columns, [depth][kPanel][4] int8, then kPanel float scales
//    and kPanel int32 compensations (panel_slots() slots per panel);
//  * A: blocks of kPackedTileRows rows, [depth / kChunk][rows][kChunk][4] uint8, the block of
//    row m0 at slot m0 * depth; after M rows, M float scales (the row scales of the M rows the
//    product then multiplies). A is always packed whole: all of K, from rows in order.

constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);
constexpr int kQuad = 4;  // k per slot

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
// Slots of k of a packed operand: K / 4 rounded up to whole chunks.
inline int64_t s8_depth(int64_t K) {
  return ((K + kQuad - 1) / kQuad + kChunk - 1) / kChunk * kChunk;
}
// Slots of one panel of packed B: the quads, then the scales and the compensations.
inline int64_t panel_slots(int64_t K) {
  return s8_depth(K) * kPanel + 2 * kPanel;
}

// The scale of a row or column whose largest magnitude is `amax` (`bad`: it holds a NaN or
// an infinity), and the factor that quantises it; `zero`: every value quantises to 0.
struct Quantizer {
  float scale = 0.0f, inv = 0.0f;
  bool zero = true;
};
inline Quantizer quantizer(float amax, bool bad) {
  if (bad || !(amax <= 3.4028234663852886e38f)) return {std::nanf(""), 0.0f, true};
  if (amax == 0.0f) return {0.0f, 0.0f, true};
  return {amax / 127.0f, 127.0f / amax, false};
}
inline int32_t quantize(float v, const Quantizer& q) {
  if (q.zero) return 0;
  float r = std::nearbyint(v * q.inv);  // the default rounding: half to even
  r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
  return static_cast<int32_t>(r);
}
// The largest magnitude of n values `stride` apart, and whether one is NaN or infinite.
inline Quantizer quantizer_of(const float* v, int64_t n, int64_t stride) {
  float amax = 0.0f;
  bool bad = false;
  for (int64_t k = 0; k < n; ++k) {
    const float a = std::fabs(v[k * stride]);
    bad |= !(a <= 3.4028234663852886e38f);  // NaN compares false
    amax = a > amax ? a : amax;
  }
  return quantizer(amax, bad);
}

void pack_b_panels(bool trans, int64_t K, int64_t N, const float* W, int64_t ldw, int64_t p0,
                   int64_t p1, float* out, const int64_t* row_map) {
  const int64_t depth = s8_depth(K);
  std::vector<float> column(static_cast<size_t>(K));
  for (int64_t p = p0; p < p1; ++p) {
    float* slots = out + p * panel_slots(K);
    auto* q = reinterpret_cast<int8_t*>(slots);
    auto* scales = slots + depth * kPanel;
    auto* comp = reinterpret_cast<int32_t*>(scales + kPanel);
    std::memset(q, 0, static_cast<size_t>(depth * kPanel * kQuad));
    for (int j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      scales[j] = 0.0f;
      comp[j] = 0;
      if (n >= N) continue;
      for (int64_t k = 0; k < K; ++k) {
        column[k] = trans ? W[n * ldw + k] : W[(row_map ? row_map[k] : k) * ldw + n];
      }
      const Quantizer z = quantizer_of(column.data(), K, 1);
      int32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t v = quantize(column[k], z);
        q[(k / kQuad * kPanel + j) * kQuad + k % kQuad] = static_cast<int8_t>(v);
        sum += v;
      }
      scales[j] = z.scale;
      comp[j] = 128 * sum;
    }
  }
}

[[maybe_unused]] void pack_a_blocks(bool trans, int64_t M, int64_t K, int64_t k0, int64_t k1,
                                    const float* A, int64_t lda, int64_t b0, int64_t b1, float* out,
                                    const int64_t* row_map) {
  // A row's scale needs all of its k: the int8 plans pack whole rows (no team loops, no
  // all-token products), which this checks.
  if (trans || k0 != 0 || k1 != K) {
    throw std::logic_error("int8 packed A: only whole rows in order are packed");
  }
  const int64_t depth = s8_depth(K);
  float* scales = out + M * depth;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t m0 = b * kRows;
    const int64_t rows = min64(kRows, M - m0);
    auto* block = reinterpret_cast<uint8_t*>(out + m0 * depth);
    for (int64_t i = 0; i < rows; ++i) {
      const float* src = A + (row_map ? row_map[m0 + i] : m0 + i) * lda;
      const Quantizer z = quantizer_of(src, K, 1);
      scales[m0 + i] = z.scale;
      for (int64_t s = 0; s < depth; ++s) {
        uint8_t* slot = block + ((s / kChunk * rows + i) * kChunk + s % kChunk) * kQuad;
        for (int t = 0; t < kQuad; ++t) {
          const int64_t k = s * kQuad + t;
          slot[t] = static_cast<uint8_t>((k < K ? quantize(src[k], z) : 0) + 128);
        }
      }
    }
  }
}

// The epilogue of one element: the definition's three roundings.
inline float dequantize(int32_t sum, int32_t comp, float sa, float sw) {
  const float v = static_cast<float>(sum - comp);
  const float s = sa * sw;
  return v * s;
}
