// The one mover of a batch between the caller's tensors and a backend's own order (packed
// sorted rows, sorted states), used by every backend (cpu, the own step programs, cuDNN):
// x and dy in, y and dx out with their padding, the initial states and state gradients in,
// the final ones out, and the states of length-0 sequences passed through where a backend's
// batch leaves them out. What moves where, when the caller's rows already are the packed rows
// and what the padding gets is decided here once; each backend brings a RowCopier (its memory
// and threads: host threads, CUDA kernels) and the maps in its memory (BatchMaps, made on the
// host from the schedule: core::caller_rows, core::padding_rows, core::row_maps).
#pragma once

#include <cstdint>

namespace rnnx::core {

class RowCopier {
 public:
  virtual ~RowCopier() = default;
  // For r < rows: dst row (dst_map ? dst_map[r] : r) = src row (src_map ? src_map[r] : r),
  // rows `width` elements of the batch's data type; a null src writes zeros.
  virtual void copy_rows(const void* src, const int64_t* src_map, void* dst, const int64_t* dst_map,
                         int64_t rows, int64_t width, void* stream) const = 0;
  // For r < rows: every element of dst row dst_map[r] = value.
  virtual void fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width,
                         double value, void* stream) const = 0;
};

// The maps of one batch, in the copier's memory.
struct BatchMaps {
  int64_t tokens = 0;
  // [tokens] the caller's row of every packed row; null when the caller's rows are the packed
  // rows (core::rows_in_place).
  const int64_t* caller_rows = nullptr;
  // [padding] the caller's rows that no token fills (core::padding_rows).
  const int64_t* padding_rows = nullptr;
  int64_t padding = 0;
  // [states] the caller's state row of every sorted state row the backend keeps, and
  // [empty] those of the length-0 sequences it leaves out (core::row_maps).
  const int64_t* state_rows = nullptr;
  int64_t states = 0;
  const int64_t* empty_rows = nullptr;
  int64_t empty = 0;
};

class BatchMover {
 public:
  BatchMover(const RowCopier& copier, const BatchMaps& maps) : copier_(copier), maps_(maps) {}

  bool rows_in_place() const { return maps_.caller_rows == nullptr; }
  // The caller's rows (x, dy) as packed rows: src itself when in place, else gathered into
  // `packed`. Padding is never read.
  const void* rows_in(const void* src, void* packed, int64_t width, void* stream) const;
  // The same always into `packed` (for a backend that reads them only there); a null src gives
  // zeros.
  void copy_rows_in(const void* src, void* packed, int64_t width, void* stream) const;
  // Packed rows out to the caller's tensor (y, dx), its padding rows set to `fill`; nothing to
  // copy when `packed` is dst.
  void rows_out(const void* packed, void* dst, int64_t width, double fill, void* stream) const;
  // The caller's states -> the sorted state rows (a null src gives zeros), and back.
  void states_in(const void* src, void* sorted, int64_t width, void* stream) const;
  void states_out(const void* sorted, void* dst, int64_t width, void* stream) const;
  // The length-0 sequences the backend leaves out pass their state through: their rows of dst
  // = their rows of src (zeros for a null src).
  void pass_empty_states(const void* src, void* dst, int64_t width, void* stream) const;

 private:
  const RowCopier& copier_;
  BatchMaps maps_;
};

}  // namespace rnnx::core
