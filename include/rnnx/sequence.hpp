// How a batch of variable-length sequences is laid out in memory.
//   time_major  x [T, B, I], y [T, B, D*P']
//   batch_first x [B, T, I], y [B, T, D*P']
//   packed      PyTorch's PackedSequence: x [N, I] rows of all sequences time step by
//               time step, batch_sizes[T] non-increasing, optional sorted_indices[B]
//               (sorted position -> original batch index); y [N, D*P'].
// lengths may be in any order and 0 is allowed; empty lengths means every sequence has T.
#pragma once

#include <cstdint>
#include <vector>

#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

enum class Layout { time_major, batch_first, packed };

struct SequenceShape {
  Layout layout = Layout::time_major;
  int64_t max_seq_len = 0;              // T (padded layouts); ignored for packed
  int64_t batch = 0;                    // B (padded layouts); ignored for packed
  std::vector<int64_t> lengths;         // padded layouts: [B] or empty
  std::vector<int64_t> batch_sizes;     // packed: [T]
  std::vector<int64_t> sorted_indices;  // packed: [B] or empty (identity)

  static SequenceShape padded(int64_t T, int64_t B, std::vector<int64_t> lengths = {},
                              bool batch_first = false);
  static SequenceShape packed(std::vector<int64_t> batch_sizes,
                              std::vector<int64_t> sorted_indices = {});
};

const char* to_string(Layout layout);

}  // namespace rnnx
RNNX_EXPORT_END
