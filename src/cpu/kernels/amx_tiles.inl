// AMX tile configuration shared by the AMX kernels (packed_gemm_amx.cpp, bf16;
// packed_gemm_amx_int8.cpp, int8). Pasted into each one's anonymous namespace after
// <immintrin.h>.

// The 64-byte tile configuration of palette 1 (Intel SDM, LDTILECFG).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads a configuration of `count` tiles, tmm t with rows[t] rows of 64 bytes.
inline void configure_tiles(const uint8_t* rows, int count) {
  TileConfig cfg;
  for (int t = 0; t < count; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = rows[t];
  }
  _tile_loadconfig(&cfg);
}
