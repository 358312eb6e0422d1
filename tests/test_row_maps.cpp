// core::row_maps: the maps the device backends upload, against the schedule's own functions.
#include <gtest/gtest.h>

#include "core/dropout.hpp"
#include "core/row_maps.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

// Lengths 3, 0, 5, 2 batch-first: sorted 2, 0, 3 (then the empty 1); the first `active` = 3
// sequences' state rows per layer-direction, the empty one's apart, the caller's rows and
// the dropout elements as caller_row and dropout_element give them.
TEST(RowMaps, MatchTheScheduleOnARaggedBatchWithAnEmptySequence) {
  const SequenceShape shape = SequenceShape::padded(5, 4, {3, 0, 5, 2}, true);
  const rnnx::core::Schedule s = rnnx::core::make_schedule(shape);
  const rnnx::core::RowMaps m = rnnx::core::row_maps(shape, s, 2, 6, 3, true);
  ASSERT_EQ(s.sorted_to_orig, (std::vector<int64_t>{2, 0, 3, 1}));
  EXPECT_EQ(m.state_rows, (std::vector<int64_t>{2, 0, 3, 6, 4, 7}));
  EXPECT_EQ(m.empty_rows, (std::vector<int64_t>{1, 5}));
  ASSERT_EQ(m.caller_rows.size(), static_cast<size_t>(s.tokens));
  ASSERT_EQ(m.dropout.size(), static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.T_eff; ++t) {
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      const int64_t b = s.sorted_to_orig[i];
      EXPECT_EQ(m.caller_rows[s.row(t, i)], rnnx::core::caller_row(shape, s, t, b));
      EXPECT_EQ(m.dropout[s.row(t, i)],
                static_cast<int64_t>(rnnx::core::dropout_element(t, b, s.B, 6, 0)));
    }
  }
  // Batch-first rows b * 5 + t past each length: 3, 4 of sequence 0, all of 1, 4 of 3.
  EXPECT_EQ(m.padding_rows, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 17, 18, 19}));
  const rnnx::core::RowMaps without = rnnx::core::row_maps(shape, s, 2, 6, 4, false);
  EXPECT_TRUE(without.caller_rows.empty());
  EXPECT_TRUE(without.padding_rows.empty());
}

}  // namespace
}  // namespace rnnx_test
