// The row maps of one batch (row_maps.hpp).
#include "core/row_maps.hpp"

#include "core/dropout.hpp"

namespace rnnx::core {

RowMaps row_maps(const SequenceShape& shape, const Schedule& s, int64_t layer_dirs, int64_t width,
                 int64_t active, bool with_caller_rows) {
  RowMaps m;
  if (with_caller_rows) {
    caller_rows(shape, s, m.caller_rows);
    padding_rows(shape, s, m.padding_rows);
  }
  for (int64_t ld = 0; ld < layer_dirs; ++ld) {
    for (int64_t i = 0; i < s.B; ++i) {
      (i < active ? m.state_rows : m.empty_rows).push_back(ld * s.B + s.sorted_to_orig[i]);
    }
  }
  m.dropout.resize(static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.T_eff; ++t) {
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      m.dropout[s.row(t, i)] =
          static_cast<int64_t>(dropout_element(t, s.sorted_to_orig[i], s.B, width, 0));
    }
  }
  return m;
}

}  // namespace rnnx::core
