// The int8 packed GEMM's AMX micro-kernel (PackedType::s8_amx, math mode int8): the int8
// layouts of kernels/packed_gemm_s8.inl (packed by the VNNI table) are AMX tiles as they are:
// a chunk of packed A ([rows][16 quads] of uint8) is an A tile of `rows` rows of 64 bytes,
// 16 quad rows of a B panel are two B tiles of 16 columns (64 bytes at a stride of 128, the
// four k of a column together, as tdpbusd wants them). Per pair of 14-row blocks and panel,
// four C tiles of 14 x 16 int32 sums accumulate over K with tdpbusd (uint8 x int8, exact;
// each pair of B tiles loaded serves both blocks) and are
// dequantised through a buffer as the definition says (packed_gemm_s8_scalar.cpp), so bit
// for bit equal to it. Built with the avx512 level's flags and AMX-INT8's (x86-64 Linux).
#include <cstdint>

#include "cpu/cpu_features.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace rnnx::cpu::packed_amx_int8 {
namespace {

bool usable() {
  return cpu_features().amx_int8 && amx_tiles_granted();
}

constexpr int kPanel = static_cast<int>(kPackedPanel);
constexpr int kRows = static_cast<int>(kPackedTileRows);
constexpr int kChunk = static_cast<int>(kPackedDepthChunk);  // quads per A tile row
static_assert(kPanel == 32 && kChunk == 16 && kRows <= 16, "tiles are 16 quads x 16 columns");

#include "cpu/kernels/amx_tiles.inl"

// Two row blocks at once, so that each pair of B tiles loaded serves both: tmm0, tmm1 and
// tmm6, tmm7 the C tiles of the first and second block (rows x 16 int32), tmm2 and tmm5
// their A tiles (rows x 16 quads), tmm3, tmm4 the B tiles (16 quad rows x 16 columns).
void configure(int rows0, int rows1) {
  const auto r0 = static_cast<uint8_t>(rows0);
  const auto r1 = static_cast<uint8_t>(rows1 > 0 ? rows1 : 1);  // unused when 0
  const uint8_t tiles[8] = {r0, r0, r0, 16, 16, r1, r1, r1};
  configure_tiles(tiles, 8);
}

inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// C's rows [m0, m0 + rows) of panel p's columns from the int32 sums in `out`: the
// definition's dequantize(), float(sum - comp), times (sa * sw), then + C.
void store_rows(const int32_t (*out)[kPanel], int rows, int64_t m0, int64_t n0, int64_t N,
                const float* a_scales, const float* w_scales, const int32_t* comp, bool accumulate,
                float* C, int64_t ldc) {
  for (int v = 0; v < 2; ++v) {
    const int64_t n = N - n0 - 16 * v;
    if (n <= 0) break;
    const __mmask16 m = lanes(n);
    const __m512 sw = _mm512_loadu_ps(w_scales + 16 * v);
    const __m512i cv = _mm512_loadu_si512(comp + 16 * v);
    for (int i = 0; i < rows; ++i) {
      float* c = C + (m0 + i) * ldc + n0 + 16 * v;
      const __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(&out[i][16 * v]), cv));
      __m512 r = _mm512_mul_ps(x, _mm512_mul_ps(_mm512_set1_ps(a_scales[m0 + i]), sw));
      if (accumulate) r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c), r);
      _mm512_mask_storeu_ps(c, m, r);
    }
  }
}

void multiply_panels(int64_t M, int64_t K, const float* a_packed, const float* b_packed, int64_t N,
                     int64_t p0, int64_t p1, bool accumulate, float* C, int64_t ldc) {
  if (M <= 0 || p0 >= p1) return;
  // packed_gemm_s8.inl's s8_depth() and panel_slots().
  const int64_t depth = ((K + 3) / 4 + kChunk - 1) / kChunk * kChunk;
  const int64_t panel_slots = depth * kPanel + 2 * kPanel;
  const int64_t chunks = depth / kChunk;
  const float* a_scales = a_packed + M * depth;
  const char* ap = reinterpret_cast<const char*>(a_packed);
  alignas(64) int32_t out0[kRows][kPanel];
  alignas(64) int32_t out1[kRows][kPanel];
  int configured0 = 0, configured1 = -1;
  for (int64_t m0 = 0; m0 < M; m0 += 2 * kRows) {
    const int rows0 = static_cast<int>(M - m0 < kRows ? M - m0 : kRows);
    const int64_t m1 = m0 + kRows;
    const int rows1 = static_cast<int>(M - m1 <= 0 ? 0 : M - m1 < kRows ? M - m1 : kRows);
    if (rows0 != configured0 || rows1 != configured1) {
      configure(rows0, rows1);
      configured0 = rows0;
      configured1 = rows1;
    }
    const char* a0 = ap + m0 * depth * 4;  // the blocks' chunks, [rows][16 quads] each
    const char* a1 = ap + m1 * depth * 4;
    for (int64_t p = p0; p < p1; ++p) {
      const float* panel = b_packed + p * panel_slots;
      const char* b = reinterpret_cast<const char*>(panel);
      _tile_zero(0);
      _tile_zero(1);
      if (rows1 > 0) {
        _tile_zero(6);
        _tile_zero(7);
      }
      for (int64_t c = 0; c < chunks; ++c) {
        const char* bc = b + c * kChunk * kPanel * 4;
        _tile_loadd(3, bc, kPanel * 4);
        _tile_loadd(4, bc + 64, kPanel * 4);
        _tile_loadd(2, a0 + c * rows0 * kChunk * 4, kChunk * 4);
        _tile_dpbusd(0, 2, 3);
        _tile_dpbusd(1, 2, 4);
        if (rows1 > 0) {
          _tile_loadd(5, a1 + c * rows1 * kChunk * 4, kChunk * 4);
          _tile_dpbusd(6, 5, 3);
          _tile_dpbusd(7, 5, 4);
        }
      }
      const float* w_scales = panel + depth * kPanel;
      const auto* comp = reinterpret_cast<const int32_t*>(w_scales + kPanel);
      _tile_stored(0, &out0[0][0], kPanel * 4);
      _tile_stored(1, &out0[0][16], kPanel * 4);
      store_rows(out0, rows0, m0, p * kPanel, N, a_scales, w_scales, comp, accumulate, C, ldc);
      if (rows1 > 0) {
        _tile_stored(6, &out1[0][0], kPanel * 4);
        _tile_stored(7, &out1[0][16], kPanel * 4);
        store_rows(out1, rows1, m1, p * kPanel, N, a_scales, w_scales, comp, accumulate, C, ldc);
      }
    }
  }
  _tile_release();
}

}  // namespace

// Packing is the VNNI table's (same layouts).
extern constinit const PackedKernels kPackedKernels{nullptr, nullptr, &multiply_panels, &usable};

}  // namespace rnnx::cpu::packed_amx_int8
