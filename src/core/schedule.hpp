// The sequence schedule shared by every backend: sequences sorted by length once
// (longest first, stable), so that in packed time-major order the sequences active at
// step t are the first batch_sizes[t] rows, starting at row offsets[t]. Also the maps
// between the caller's layout (padded time-major, batch-first, or packed) and that order.
#pragma once

#include <cstdint>
#include <vector>

#include "rnnx/sequence.hpp"

namespace rnnx::core {

struct Schedule {
  int64_t T = 0;                        // time axis of the caller's tensors
  int64_t B = 0;                        // batch
  int64_t T_eff = 0;                    // longest real sequence (steps actually run)
  int64_t tokens = 0;                   // sum of lengths
  std::vector<int64_t> sorted_to_orig;  // [B] sorted position -> original batch index
  std::vector<int64_t> orig_to_sorted;  // [B]
  std::vector<int64_t> sorted_lengths;  // [B] non-increasing
  std::vector<int64_t> batch_sizes;     // [T_eff]
  std::vector<int64_t> offsets;         // [T_eff + 1] first packed row of each step

  // Packed row of (t, sorted position i); valid for i < batch_sizes[t].
  int64_t row(int64_t t, int64_t i) const { return offsets[t] + i; }
};

// Validates the shape (throws invalid_argument naming the argument and the values)
// and computes the schedule.
Schedule make_schedule(const SequenceShape& shape);
// The same into `out`, whose vectors keep their capacity: they are reserved for the shape's
// whole envelope (its longest length in steps, batch sequences), so that a later schedule of other
// lengths within it allocates nothing (a network's batches, core/network_core.hpp).
void make_schedule(const SequenceShape& shape, Schedule& out);

// Element offset, in units of `width`-wide rows, of (t, original batch b) in the caller's
// layout; for packed layouts only valid when t < length of b.
int64_t caller_row(const SequenceShape& shape, const Schedule& s, int64_t t, int64_t b);

// The caller's row (caller_row, in rows of the caller's tensors) of every packed sorted row
// [tokens]: the row map through which a backend reads x (or writes y) where the caller keeps
// them instead of gathering a copy.
std::vector<int64_t> caller_rows(const SequenceShape& shape, const Schedule& s);
// The same into `rows`, reserved for T_eff * B rows (as make_schedule's envelope).
void caller_rows(const SequenceShape& shape, const Schedule& s, std::vector<int64_t>& rows);

// Where the previous state of step t's rows comes from, in a direction's own order
// (`reversed`: the direction runs from each sequence's end): rows i < count are the rows of
// step `step` (packed rows from offsets[step]); the others start their sequence at t and
// read the initial state.
struct PrevStep {
  int64_t count = 0;
  int64_t step = 0;
};
inline PrevStep prev_step(const Schedule& s, bool reversed, int64_t t) {
  if (!reversed) return t > 0 ? PrevStep{s.batch_sizes[t], t - 1} : PrevStep{0, 0};
  return t + 1 < s.T_eff ? PrevStep{s.batch_sizes[t + 1], t + 1} : PrevStep{0, 0};
}

// Whether the caller's rows already are the packed sorted rows, so that moving them between
// the two (core/batch_mover.hpp) would copy them unchanged: the packed layout, or every sequence
// full length (the sort keeps the batch order) in the time-major layout or with one sequence.
bool rows_in_place(const SequenceShape& shape, const Schedule& s);

// The caller's rows that no token fills (its padding, t >= the sequence's length, in padded
// layouts; none in the packed one), into `rows`, which keeps its capacity.
void padding_rows(const SequenceShape& shape, const Schedule& s, std::vector<int64_t>& rows);

}  // namespace rnnx::core
