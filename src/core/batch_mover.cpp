// The batch mover (batch_mover.hpp).
#include "core/batch_mover.hpp"

namespace rnnx::core {

const void* BatchMover::rows_in(const void* src, void* packed, int64_t width, void* stream) const {
  if (rows_in_place()) return src;
  copy_rows_in(src, packed, width, stream);
  return packed;
}

void BatchMover::copy_rows_in(const void* src, void* packed, int64_t width, void* stream) const {
  if (maps_.tokens > 0) {
    copier_.copy_rows(src, src ? maps_.caller_rows : nullptr, packed, nullptr, maps_.tokens, width,
                      stream);
  }
}

void BatchMover::rows_out(const void* packed, void* dst, int64_t width, double fill,
                          void* stream) const {
  if (maps_.padding > 0)
    copier_.fill_rows(dst, maps_.padding_rows, maps_.padding, width, fill, stream);
  if (packed != dst && maps_.tokens > 0)
    copier_.copy_rows(packed, nullptr, dst, maps_.caller_rows, maps_.tokens, width, stream);
}

void BatchMover::states_in(const void* src, void* sorted, int64_t width, void* stream) const {
  if (maps_.states > 0)
    copier_.copy_rows(src, src ? maps_.state_rows : nullptr, sorted, nullptr, maps_.states, width,
                      stream);
}

void BatchMover::states_out(const void* sorted, void* dst, int64_t width, void* stream) const {
  if (maps_.states > 0)
    copier_.copy_rows(sorted, nullptr, dst, maps_.state_rows, maps_.states, width, stream);
}

void BatchMover::pass_empty_states(const void* src, void* dst, int64_t width, void* stream) const {
  if (maps_.empty > 0)
    copier_.copy_rows(src, src ? maps_.empty_rows : nullptr, dst, maps_.empty_rows, maps_.empty,
                      width, stream);
}

}  // namespace rnnx::core
