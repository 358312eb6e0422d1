// Sequence schedule: sort by length, batch sizes per step, and the gather/scatter maps
// between the caller's layout and packed sorted rows.
#include "core/schedule.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "core/checked.hpp"
#include "rnnx/error.hpp"

namespace rnnx::core {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

void finish(Schedule& s) {
  s.T_eff = s.B > 0 ? s.sorted_lengths[0] : 0;
  // Steps [sorted_lengths[i + 1], sorted_lengths[i]) have the first i + 1 sequences: O(B + T)
  // (the lengths are non-increasing), not O(tokens).
  s.batch_sizes.resize(s.T_eff);
  for (int64_t i = 0; i < s.B; ++i) {
    const int64_t next = i + 1 < s.B ? s.sorted_lengths[i + 1] : 0;
    for (int64_t t = next; t < s.sorted_lengths[i]; ++t) s.batch_sizes[t] = i + 1;
  }
  s.offsets.assign(s.T_eff + 1, 0);
  for (int64_t t = 0; t < s.T_eff; ++t) s.offsets[t + 1] = s.offsets[t] + s.batch_sizes[t];
  s.tokens = s.offsets[s.T_eff];
  s.orig_to_sorted.assign(s.B, 0);
  for (int64_t i = 0; i < s.B; ++i) s.orig_to_sorted[s.sorted_to_orig[i]] = i;
}

// Room for every schedule of at most T real steps (the longest length, not max_seq_len: a
// padded T may be far above it) and B sequences, so that a network's next batch of other
// lengths within that envelope assigns into the vectors it has.
void reserve_envelope(Schedule& s, int64_t T, int64_t B) {
  for (auto* v : {&s.sorted_to_orig, &s.orig_to_sorted, &s.sorted_lengths}) {
    v->reserve(static_cast<size_t>(B));
  }
  s.batch_sizes.reserve(static_cast<size_t>(T) + 1);
  s.offsets.reserve(static_cast<size_t>(T) + 2);  // the counting sort's counts
}

void padded_schedule(const SequenceShape& shape, Schedule& s) {
  s.T = shape.max_seq_len;
  s.B = shape.batch;
  if (s.T < 1) invalid("max_seq_len (= " + std::to_string(s.T) + ") must be at least 1");
  // B = 0 is an empty batch (the last shard of a data-parallel step): a valid no-op, as in
  // torch.nn.LSTM; T = 0 stays refused, as in torch ("sequence length ... larger than 0").
  if (s.B < 0) invalid("batch (= " + std::to_string(s.B) + ") must be at least 0");
  checked_mul(s.T, s.B, "max_seq_len * batch");
  const std::vector<int64_t>& given = shape.lengths;
  if (!given.empty() && static_cast<int64_t>(given.size()) != s.B) {
    invalid("lengths has " + std::to_string(given.size()) + " entries but batch is " +
            std::to_string(s.B));
  }
  auto length = [&](int64_t b) { return given.empty() ? s.T : given[b]; };
  for (int64_t b = 0; b < s.B; ++b) {
    if (length(b) < 0 || length(b) > s.T) {
      invalid("lengths[" + std::to_string(b) + "] (= " + std::to_string(length(b)) +
              ") must be in [0, max_seq_len (= " + std::to_string(s.T) + ")]");
    }
  }
  int64_t longest = 0;
  for (int64_t b = 0; b < s.B; ++b) longest = std::max(longest, length(b));
  reserve_envelope(s, longest, s.B);
  // Longest first, stable: a counting sort over the lengths, whose counts borrow `offsets`
  // (longest + 2 slots; finish() rewrites it), so that a schedule within the envelope of
  // the vectors' capacity allocates nothing (std::stable_sort takes a buffer).
  s.offsets.assign(static_cast<size_t>(longest) + 2, 0);
  for (int64_t b = 0; b < s.B; ++b) ++s.offsets[longest - length(b) + 1];
  for (int64_t k = 1; k <= longest + 1; ++k) s.offsets[k] += s.offsets[k - 1];
  s.sorted_to_orig.resize(s.B);
  for (int64_t b = 0; b < s.B; ++b) s.sorted_to_orig[s.offsets[longest - length(b)]++] = b;
  s.sorted_lengths.resize(s.B);
  for (int64_t i = 0; i < s.B; ++i) s.sorted_lengths[i] = length(s.sorted_to_orig[i]);
  finish(s);
}

void packed_schedule(const SequenceShape& shape, Schedule& s) {
  const auto& bs = shape.batch_sizes;
  if (bs.empty()) invalid("batch_sizes is empty; a packed batch needs at least one step");
  s.T = static_cast<int64_t>(bs.size());
  s.B = bs[0];
  for (size_t t = 0; t < bs.size(); ++t) {
    if (bs[t] < 1) {
      invalid("batch_sizes[" + std::to_string(t) + "] (= " + std::to_string(bs[t]) +
              ") must be at least 1");
    }
    if (t > 0 && bs[t] > bs[t - 1]) {
      invalid("batch_sizes must be non-increasing, but batch_sizes[" + std::to_string(t) +
              "] (= " + std::to_string(bs[t]) + ") > batch_sizes[" + std::to_string(t - 1) +
              "] (= " + std::to_string(bs[t - 1]) + ")");
    }
  }
  reserve_envelope(s, s.T, s.B);
  const auto& si = shape.sorted_indices;
  if (si.empty()) {
    s.sorted_to_orig.resize(s.B);
    std::iota(s.sorted_to_orig.begin(), s.sorted_to_orig.end(), 0);
  } else {
    if (static_cast<int64_t>(si.size()) != s.B) {
      invalid("sorted_indices has " + std::to_string(si.size()) +
              " entries but batch_sizes[0] (= " + std::to_string(s.B) + ")");
    }
    // orig_to_sorted marks the indices seen (finish() rewrites it).
    s.orig_to_sorted.assign(s.B, 0);
    for (int64_t i = 0; i < s.B; ++i) {
      if (si[i] < 0 || si[i] >= s.B || s.orig_to_sorted[si[i]] != 0) {
        invalid("sorted_indices is not a permutation of 0..batch-1: sorted_indices[" +
                std::to_string(i) + "] = " + std::to_string(si[i]));
      }
      s.orig_to_sorted[si[i]] = 1;
    }
    s.sorted_to_orig.assign(si.begin(), si.end());
  }
  s.sorted_lengths.assign(s.B, 0);
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t i = 0; i < bs[t]; ++i) ++s.sorted_lengths[i];
  finish(s);
}

}  // namespace

void make_schedule(const SequenceShape& shape, Schedule& out) {
  if (shape.layout == Layout::packed) {
    packed_schedule(shape, out);
  } else {
    padded_schedule(shape, out);
  }
}

Schedule make_schedule(const SequenceShape& shape) {
  Schedule s;
  make_schedule(shape, s);
  return s;
}

int64_t caller_row(const SequenceShape& shape, const Schedule& s, int64_t t, int64_t b) {
  switch (shape.layout) {
    case Layout::time_major:
      return t * s.B + b;
    case Layout::batch_first:
      return b * s.T + t;
    case Layout::packed:
      return s.row(t, s.orig_to_sorted[b]);
  }
  return 0;
}

std::vector<int64_t> caller_rows(const SequenceShape& shape, const Schedule& s) {
  std::vector<int64_t> rows;
  caller_rows(shape, s, rows);
  return rows;
}

void caller_rows(const SequenceShape& shape, const Schedule& s, std::vector<int64_t>& rows) {
  // caller_row() spelt out per layout, outside the loops: this map is O(tokens) and was most
  // of a plan's set-up time (65% at B = 16, T = 200) with a switch per element.
  rows.reserve(static_cast<size_t>(s.T_eff * s.B));  // the envelope, as the schedule's
  rows.resize(static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.T_eff; ++t) {
    int64_t* out = rows.data() + s.offsets[t];
    const int64_t n = s.batch_sizes[t];
    switch (shape.layout) {
      case Layout::time_major:
        for (int64_t i = 0; i < n; ++i) out[i] = t * s.B + s.sorted_to_orig[i];
        break;
      case Layout::batch_first:
        for (int64_t i = 0; i < n; ++i) out[i] = s.sorted_to_orig[i] * s.T + t;
        break;
      case Layout::packed:
        // The packed rows are the caller's (orig_to_sorted inverts sorted_to_orig).
        for (int64_t i = 0; i < n; ++i) out[i] = s.offsets[t] + i;
        break;
    }
  }
}

bool rows_in_place(const SequenceShape& shape, const Schedule& s) {
  if (shape.layout == Layout::packed) return true;
  const bool full = s.tokens == s.T * s.B;
  return full && (shape.layout == Layout::time_major || s.B == 1);
}

void padding_rows(const SequenceShape& shape, const Schedule& s, std::vector<int64_t>& rows) {
  if (shape.layout == Layout::packed) {
    rows.clear();
    return;
  }
  // Written through a pointer after one resize: this map is O(T * B) and, built with
  // push_back, was half of a network's binding at B = 64, T = 200.
  rows.resize(static_cast<size_t>(s.T * s.B - s.tokens));
  int64_t* out = rows.data();
  // In the caller's memory order, so that a copier walks its rows forward.
  if (shape.layout == Layout::time_major) {
    for (int64_t t = 0; t < s.T; ++t) {
      const int64_t base = t * s.B;
      for (int64_t i = t < s.T_eff ? s.batch_sizes[t] : 0; i < s.B; ++i)
        *out++ = base + s.sorted_to_orig[i];
    }
    return;
  }
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t t = s.sorted_lengths[s.orig_to_sorted[b]]; t < s.T; ++t) *out++ = b * s.T + t;
  }
}

}  // namespace rnnx::core
