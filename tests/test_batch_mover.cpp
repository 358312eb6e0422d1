// core::BatchMover, the one mover of every backend, on a host copier: what it reads and writes
// of the caller's tensors for ragged padded batches (an empty sequence included), the packed
// layout, and rows already in place.
#include <gtest/gtest.h>

#include "core/batch_mover.hpp"
#include "core/row_maps.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

// Rows of doubles; counts its calls, so that "nothing moves" can fail.
class CountingRows final : public rnnx::core::RowCopier {
 public:
  void copy_rows(const void* src, const int64_t* src_map, void* dst, const int64_t* dst_map,
                 int64_t rows, int64_t width, void*) const override {
    ++calls;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j)
        static_cast<double*>(dst)[(dst_map ? dst_map[r] : r) * width + j] =
            src ? static_cast<const double*>(src)[(src_map ? src_map[r] : r) * width + j] : 0.0;
  }
  void fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width, double value,
                 void*) const override {
    ++calls;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j)
        static_cast<double*>(dst)[(dst_map ? dst_map[r] : r) * width + j] = value;
  }
  mutable int calls = 0;
};

struct Mover {
  Mover(const SequenceShape& shape, int64_t layer_dirs, int64_t active)
      : s(rnnx::core::make_schedule(shape)),
        maps(rnnx::core::row_maps(shape, s, layer_dirs, 1, active,
                                  !rnnx::core::rows_in_place(shape, s))) {
    m.tokens = s.tokens;
    m.caller_rows = maps.caller_rows.empty() ? nullptr : maps.caller_rows.data();
    m.padding_rows = maps.padding_rows.data();
    m.padding = static_cast<int64_t>(maps.padding_rows.size());
    m.state_rows = maps.state_rows.data();
    m.states = static_cast<int64_t>(maps.state_rows.size());
    m.empty_rows = maps.empty_rows.data();
    m.empty = static_cast<int64_t>(maps.empty_rows.size());
  }
  rnnx::core::BatchMover mover() const { return rnnx::core::BatchMover(rows, m); }
  rnnx::core::Schedule s;
  rnnx::core::RowMaps maps;
  rnnx::core::BatchMaps m;
  CountingRows rows;
};

// Caller's value of (t, b, j) in a padded tensor of width W.
double value(int64_t t, int64_t b, int64_t j) {
  return 100.0 * t + 10.0 * b + j;
}

TEST(BatchMover, GathersAndScattersARaggedBatchFirstBatchWithItsPadding) {
  const int64_t T = 4, B = 3, W = 2;
  const std::vector<int64_t> lengths{2, 0, 4};
  const SequenceShape shape = SequenceShape::padded(T, B, lengths, true);
  const Mover mv(shape, 1, B);
  const rnnx::core::BatchMover m = mv.mover();
  ASSERT_FALSE(m.rows_in_place());
  std::vector<double> x(T * B * W);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < W; ++j) x[(b * T + t) * W + j] = value(t, b, j);
  std::vector<double> packed(mv.s.tokens * W, -1.0);
  EXPECT_EQ(m.rows_in(x.data(), packed.data(), W, nullptr), packed.data());
  for (int64_t t = 0; t < mv.s.T_eff; ++t)
    for (int64_t i = 0; i < mv.s.batch_sizes[t]; ++i)
      for (int64_t j = 0; j < W; ++j)
        EXPECT_EQ(packed[mv.s.row(t, i) * W + j], value(t, mv.s.sorted_to_orig[i], j));

  std::vector<double> y(T * B * W, -1.0);
  m.rows_out(packed.data(), y.data(), W, 7.5, nullptr);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < W; ++j)
        EXPECT_EQ(y[(b * T + t) * W + j], t < lengths[b] ? value(t, b, j) : 7.5)
            << "t " << t << " b " << b;
}

TEST(BatchMover, MovesStatesAndPassesTheEmptySequencesThrough) {
  // Time-major lengths 3, 0, 2, two layer-directions; the backend keeps the 2 non-empty ones.
  const SequenceShape shape = SequenceShape::padded(3, 3, {3, 0, 2});
  const Mover mv(shape, 2, 2);
  const rnnx::core::BatchMover m = mv.mover();
  const std::vector<double> h0{10, 11, 12, 20, 21, 22};  // [ld][b], width 1
  std::vector<double> sorted(4, -1.0), hy(6, -1.0);
  m.states_in(h0.data(), sorted.data(), 1, nullptr);
  EXPECT_EQ(sorted, (std::vector<double>{10, 12, 20, 22}));
  m.states_in(nullptr, sorted.data(), 1, nullptr);
  EXPECT_EQ(sorted, (std::vector<double>{0, 0, 0, 0}));
  const std::vector<double> last{1, 2, 3, 4};
  m.states_out(last.data(), hy.data(), 1, nullptr);
  m.pass_empty_states(h0.data(), hy.data(), 1, nullptr);
  EXPECT_EQ(hy, (std::vector<double>{1, 11, 2, 3, 21, 4}));
  m.pass_empty_states(nullptr, hy.data(), 1, nullptr);
  EXPECT_EQ(hy, (std::vector<double>{1, 0, 2, 3, 0, 4}));
}

TEST(BatchMover, RowsInPlaceAreUsedWhereTheyAre) {
  for (const SequenceShape& shape :
       {SequenceShape::packed({3, 2, 1}, {}), SequenceShape::padded(3, 2, {})}) {
    const Mover mv(shape, 1, 2);
    const rnnx::core::BatchMover m = mv.mover();
    ASSERT_TRUE(m.rows_in_place());
    std::vector<double> x(mv.s.tokens, 1.0), y(mv.s.tokens, 0.0);
    EXPECT_EQ(m.rows_in(x.data(), nullptr, 1, nullptr), x.data());
    EXPECT_EQ(mv.rows.calls, 0);
    m.rows_out(x.data(), x.data(), 1, 5.0, nullptr);  // the backend wrote the caller's y
    EXPECT_EQ(mv.rows.calls, 0);
    m.rows_out(x.data(), y.data(), 1, 5.0, nullptr);
    EXPECT_EQ(y, x);  // no padding to fill
    EXPECT_EQ(mv.rows.calls, 1);
  }
}

TEST(BatchMover, AnEmptyBatchFillsEveryPaddedRow) {
  const SequenceShape shape = SequenceShape::padded(2, 2, {0, 0});
  const Mover mv(shape, 1, 0);
  std::vector<double> y(4, -1.0);
  mv.mover().rows_out(nullptr, y.data(), 1, 3.0, nullptr);
  EXPECT_EQ(y, (std::vector<double>{3, 3, 3, 3}));
}

}  // namespace
}  // namespace rnnx_test
