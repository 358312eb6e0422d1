// The dropout masks of the host backends, on the generator of philox.hpp.
#include "core/dropout.hpp"

#include "core/philox.hpp"

namespace rnnx::core {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const PhiloxBlock out = philox4x32_10_block(PhiloxBlock{{c[0], c[1], c[2], c[3]}}, k[0], k[1]);
  return {out.v[0], out.v[1], out.v[2], out.v[3]};
}

bool dropout_keep(const DropoutKey& key, uint64_t element) {
  return dropout_bits_keep(
      dropout_block(key.seed, key.counter, key.layer, element / 4).v[element % 4], key.p);
}

template <typename T>
void dropout_apply_step_rows(const DropoutKey& key, const Schedule& s, int64_t width, int64_t t,
                             T* rows) {
  const T scale = key.p < 1.0 ? static_cast<T>(1.0 / (1.0 - key.p)) : T(0);
  for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
    T* row = rows + s.row(t, i) * width;
    const uint64_t base = dropout_element(t, s.sorted_to_orig[i], s.B, width, 0);
    PhiloxBlock bits{};
    for (int64_t j = 0; j < width; ++j) {
      const uint64_t e = base + j;
      if (j == 0 || e % 4 == 0) bits = dropout_block(key.seed, key.counter, key.layer, e / 4);
      row[j] = dropout_bits_keep(bits.v[e % 4], key.p) ? row[j] * scale : T(0);
    }
  }
}

template void dropout_apply_step_rows<float>(const DropoutKey&, const Schedule&, int64_t, int64_t,
                                             float*);
template void dropout_apply_step_rows<double>(const DropoutKey&, const Schedule&, int64_t, int64_t,
                                              double*);

}  // namespace rnnx::core
