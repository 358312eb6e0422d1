// The maps a device backend's copy kernels read to move one batch's rows and states between
// the caller's layout and its own (the packed sorted rows, sorted states; core/batch_mover.hpp),
// and to place the dropout masks: made on the host from the schedule, then uploaded. One
// description for every device backend (core/step_backend.cpp, cuda/cuda_backend.cpp); the cpu
// backend keeps the same caller_rows and padding_rows on the host (cpu/plan_spec.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.hpp"

namespace rnnx::core {

struct RowMaps {
  // [tokens] the caller's row of every packed row (core::caller_rows); empty when not asked.
  std::vector<int64_t> caller_rows;
  // The caller's rows that no token fills (core::padding_rows); empty when not asked.
  std::vector<int64_t> padding_rows;
  // [L*D * active] the caller's state row (layer-direction ld, original batch index) of every
  // state row of the first `active` sorted sequences, ld by ld.
  std::vector<int64_t> state_rows;
  // [L*D * (B - active)] the same for the sorted sequences past `active` (length 0: a backend
  // whose batch leaves them out copies their initial states to the final ones).
  std::vector<int64_t> empty_rows;
  // [tokens] the first dropout element (core::dropout_element) of every packed row, of rows
  // `width` wide.
  std::vector<int64_t> dropout;
};

// The maps of the batch of `shape` and `s`, for `layer_dirs` = L*D state rows per sequence;
// the caller's rows and padding rows `with_caller_rows` (where the caller's rows are not the
// packed rows).
RowMaps row_maps(const SequenceShape& shape, const Schedule& s, int64_t layer_dirs, int64_t width,
                 int64_t active, bool with_caller_rows);

}  // namespace rnnx::core
