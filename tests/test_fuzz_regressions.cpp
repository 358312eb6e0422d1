// Inputs the fuzz targets (tests/fuzz, docs/testing.md) found mishandled, kept as plain
// tests so the default suite guards them too: each is refused with invalid_argument naming
// the sizes, quickly and without first allocating for them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "rnnx/rnnx.hpp"

namespace {

using rnnx::CellType;
using rnnx::Config;
using rnnx::Error;
using rnnx::Plan;
using rnnx::SequenceShape;
using rnnx::Status;

// Runs `body`, expects an rnnx::Error with code invalid_argument whose message holds `needle`.
template <typename Body>
void expect_invalid(Body&& body, const std::string& needle) {
  try {
    body();
    FAIL() << "accepted; expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

Config lstm(int64_t input, int64_t hidden) {
  Config c;
  c.cell = CellType::lstm;
  c.input_size = input;
  c.hidden_size = hidden;
  return c;
}

// fuzz_c_api: D * P' was multiplied unchecked in validate() (signed overflow, UBSan): an
// RNN whose G * H fits but whose two directions' outputs do not.
TEST(FuzzRegressions, OutputTimesDirectionsOverflows) {
  Config c = lstm(4, (int64_t{1} << 62) + 1);
  c.cell = CellType::rnn_tanh;
  c.bidirectional = true;
  expect_invalid([&] { rnnx::validate(c); }, "directions * output size");
}

// num_layers so large that the weight buffer overflows int64 while L * D * G * H fits:
// validate() passed it, and a WeightLayout built for it looped over 2^59 layers.
TEST(FuzzRegressions, WeightBufferOfHugeLayerCountOverflows) {
  Config c = lstm(1, 1);
  c.num_layers = int64_t{1} << 59;
  expect_invalid([&] { rnnx::validate(c); }, "total weight size");
  expect_invalid([&] { Plan p(c, SequenceShape::padded(1, 1)); }, "total weight size");
}

// fuzz_c_api: a batch of 2^40 sequences whose buffers overflow (H = 2^31) used to allocate
// the schedule's [B] vectors (8 TiB) before the buffer sizes were checked.
TEST(FuzzRegressions, HugeBatchRefusedBeforeTheScheduleAllocates) {
  Config c = lstm(4, int64_t{1} << 31);
  c.proj_size = 8;
  expect_invalid([&] { Plan p(c, SequenceShape::padded(7, int64_t{1} << 40, {}, true)); },
                 "sequence tensor size");
}

}  // namespace

// fuzz_c_api (issue 45's network): a plan built its network, and so the weight layout of a
// config of millions of layers, before checking the shape, whose per-layer buffers overflow.
TEST(FuzzRegressions, ManyLayersWithAnOverflowingShapeAreRefusedBeforeTheLayout) {
  Config c = lstm(3, 4);
  c.num_layers = int64_t{1} << 22;
  expect_invalid([&] { Plan p(c, SequenceShape::padded(int64_t{1} << 20, int64_t{1} << 20)); },
                 "per-layer buffers");
}

// fuzz_c_api: the schedule's counting sort took max_seq_len + 2 counters, so an empty batch
// (B = 0) of a huge max_seq_len allocated them; they follow the longest real length now.
TEST(FuzzRegressions, AnEmptyBatchOfAHugeMaxSeqLenAllocatesNothingForIt) {
  Plan p(lstm(3, 4), SequenceShape::padded(int64_t{1} << 58, 0));
  EXPECT_EQ(p.batch(), 0);
  EXPECT_EQ(p.forward_workspace_size(true), 0u);
}

// fuzz_c_api: the same with a shape whose sizes fit but whose lengths are refused (the
// schedule's check, which a plan now runs before it builds its network).
TEST(FuzzRegressions, ManyLayersWithRefusedLengthsAreRefusedBeforeTheLayout) {
  Config c = lstm(3, 4);
  c.num_layers = int64_t{1} << 22;
  expect_invalid([&] { Plan p(c, SequenceShape::padded(4, 2, {5, 1})); }, "lengths[0] (= 5)");
}
