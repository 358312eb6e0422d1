// amx_bf16 and amx_permitted (peak_kernels.hpp), built with the AMX flags (x86-64 Linux).
// GCC 12 warns inside its own intrinsics header (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "peak_kernels.hpp"

namespace rnnx::peak {
namespace {

constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: ask for an XSAVE feature
constexpr long kXfeatureXtileData = 18;     // the AMX tile data state

// Palette 1: tmm0-3 accumulators (16 rows x 64 bytes of float32), tmm4 A (16 x 32 bf16),
// tmm5 B (16 pair rows x 16 columns).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace

bool amx_permitted() {
  static const bool ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  return ok;
}

double amx_bf16(int64_t iterations) {
  TileConfig cfg;
  for (int t = 0; t < 6; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) uint16_t ab[16 * 32];
  for (int i = 0; i < 16 * 32; ++i) ab[i] = 0x3f80;  // bf16 1.0
  alignas(64) float c[16 * 16];
  std::memset(c, 0, sizeof c);
  _tile_loadd(0, c, 64);
  _tile_loadd(1, c, 64);
  _tile_loadd(2, c, 64);
  _tile_loadd(3, c, 64);
  _tile_loadd(4, ab, 64);
  _tile_loadd(5, ab, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  _tile_stored(0, c, 64);
  volatile float sink = c[0];
  (void)sink;
  _tile_release();
  return 4.0 * 16 * 16 * 32 * 2 * static_cast<double>(iterations);
}

}  // namespace rnnx::peak
