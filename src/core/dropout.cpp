// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
// and the dropout masks built on it.
#include "core/dropout.hpp"

namespace rnnx::core {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

// Uniform in [0, 1) from the top 24 bits, exact in float and double.
inline double to_unit(uint32_t x) {
  return static_cast<double>(x >> 8) * (1.0 / 16777216.0);
}

std::array<uint32_t, 4> block(const DropoutKey& key, uint64_t group) {
  std::array<uint32_t, 4> ctr = {static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                                 static_cast<uint32_t>(key.layer),
                                 static_cast<uint32_t>(key.counter)};
  std::array<uint32_t, 2> k = {
      static_cast<uint32_t>(key.seed),
      static_cast<uint32_t>(key.seed >> 32) ^ static_cast<uint32_t>(key.counter >> 32)};
  return philox4x32_10(ctr, k);
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

bool dropout_keep(const DropoutKey& key, uint64_t element) {
  return to_unit(block(key, element / 4)[element % 4]) >= key.p;
}

template <typename T>
void dropout_apply_rows(const DropoutKey& key, const Schedule& s, int64_t width, T* rows) {
  const T scale = key.p < 1.0 ? static_cast<T>(1.0 / (1.0 - key.p)) : T(0);
  // Parallel over steps; each element's decision depends only on its own index.
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < s.T_eff; ++t) {
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      T* row = rows + s.row(t, i) * width;
      const uint64_t base = dropout_element(t, s.sorted_to_orig[i], s.B, width, 0);
      std::array<uint32_t, 4> bits{};
      for (int64_t j = 0; j < width; ++j) {
        const uint64_t e = base + j;
        if (j == 0 || e % 4 == 0) bits = block(key, e / 4);
        row[j] = to_unit(bits[e % 4]) >= key.p ? row[j] * scale : T(0);
      }
    }
  }
}

template void dropout_apply_rows<float>(const DropoutKey&, const Schedule&, int64_t, float*);
template void dropout_apply_rows<double>(const DropoutKey&, const Schedule&, int64_t, double*);

}  // namespace rnnx::core
