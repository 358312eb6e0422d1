// The packed GEMM's AMX micro-kernel for bf16 operands (PackedType::bf16_amx): the packed
// layouts of packed_gemm_avx512_bf16.cpp (which also packs for it) are AMX tiles as they
// are: a chunk of packed A ([rows][16 pairs]) is an A tile of `rows` rows of 64 bytes, 16
// pair rows of a B panel are two B tiles of 16 columns (64 bytes at a stride of 128).
// Per 14-row block and panel, two C tiles of 14 x 16 float32 accumulate over K with
// tdpbf16ps and go to C through a buffer (masked columns, accumulate). Linux hands out
// the AMX state only on request (amx_tiles_granted()).
// Built with the AMX flags (as packed_gemm_avx512.cpp; x86-64 Linux only).
#include "cpu/cpu_features.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace rnnx::cpu::packed_amx {
namespace {

bool usable() {
  return cpu_features().amx_bf16 && amx_tiles_granted();
}

constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);  // pairs per A tile row
static_assert(kPanel == 32 && kChunk == 16 && kRows <= 16, "tiles are 16 pairs x 16 columns");

#include "cpu/kernels/amx_tiles.inl"

// tmm0, tmm1 the C tiles (rows x 16 float32), tmm2 the A tile (rows x 16 pairs), tmm3, tmm4
// the B tiles (16 pair rows x 16 columns).
void configure(int rows) {
  const auto r = static_cast<uint8_t>(rows);
  const uint8_t tiles[5] = {r, r, r, 16, 16};
  configure_tiles(tiles, 5);
}

inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  if (M <= 0 || p0 >= p1) return;
  const int64_t KP = ((K + 1) / 2 + kChunk - 1) / kChunk * kChunk;  // pairs, whole chunks
  const int64_t chunks = KP / kChunk;
  const char* ap = reinterpret_cast<const char*>(a_packed);
  const char* bp0 = reinterpret_cast<const char*>(b_packed);
  alignas(64) float out[kRows][kPanel];
  int configured = 0;
  for (int64_t m0 = 0; m0 < M; m0 += kRows) {
    const int rows = static_cast<int>(M - m0 < kRows ? M - m0 : kRows);
    if (rows != configured) {
      configure(rows);
      configured = rows;
    }
    // The block's chunks: [rows][16 pairs] each, one after the other.
    const char* a = ap + m0 * KP * 4;
    for (int64_t p = p0; p < p1; ++p) {
      const char* b = bp0 + p * KP * kPanel * 4;
      _tile_zero(0);
      _tile_zero(1);
      for (int64_t c = 0; c < chunks; ++c) {
        _tile_loadd(2, a + c * rows * kChunk * 4, kChunk * 4);
        const char* bc = b + c * kChunk * kPanel * 4;
        _tile_loadd(3, bc, kPanel * 4);
        _tile_loadd(4, bc + 64, kPanel * 4);
        _tile_dpbf16ps(0, 2, 3);
        _tile_dpbf16ps(1, 2, 4);
      }
      _tile_stored(0, &out[0][0], kPanel * 4);
      _tile_stored(1, &out[0][16], kPanel * 4);
      const int64_t n0 = p * kPanel;
      for (int v = 0; v < 2; ++v) {
        const int64_t n = N - n0 - 16 * v;
        if (n <= 0) break;
        const __mmask16 m = lanes(n);
        for (int i = 0; i < rows; ++i) {
          float* c = C + (m0 + i) * ldc + n0 + 16 * v;
          __m512 r = _mm512_load_ps(&out[i][16 * v]);
          if (accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, c));
          _mm512_mask_storeu_ps(c, m, r);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

// Packing is the bf16 table's (same layouts).
extern constinit const PackedKernels kPackedKernels{nullptr, nullptr, &multiply_panels, &usable};

}  // namespace rnnx::cpu::packed_amx
