// Which of cuDNN's RNN algorithms the cuda backend's search may try (src/core/
// cudnn_algorithm.hpp), and what its cached choice is keyed by; checked without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cuda/rules/cudnn_algorithm.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using cuda::CudnnAlgo;

std::vector<CudnnAlgo> candidates(const Config& c, const SequenceShape& shape) {
  const core::Schedule s = core::make_schedule(shape);
  return cuda::cudnn_algorithm_candidates(c, cuda::cudnn_batch(shape, s, c));
}

TEST(CudnnAlgorithm, PersistentOnlyWhereTheirLimitsAllow) {
  const std::vector<CudnnAlgo> all = {CudnnAlgo::standard, CudnnAlgo::persist_static,
                                      CudnnAlgo::persist_static_small_h};
  const std::vector<CudnnAlgo> standard = {CudnnAlgo::standard};
  const std::vector<CudnnAlgo> no_small = {CudnnAlgo::standard, CudnnAlgo::persist_static};
  const Config lstm = make_config(CellType::lstm, 8, 64, 2, true, DataType::f32);
  const SequenceShape full = SequenceShape::padded(5, 3);
  EXPECT_EQ(candidates(lstm, full), all);
  // Every sequence the same length, also below T and with length-0 ones left out.
  EXPECT_EQ(candidates(lstm, SequenceShape::padded(5, 3, {4, 0, 4})), all);
  EXPECT_EQ(candidates(lstm, SequenceShape::padded(5, 3, {5, 4, 5})), standard);
  EXPECT_EQ(candidates(lstm, SequenceShape::padded(5, 2, {0, 0})), standard);
  Config c = lstm;
  c.hidden_size = 129;
  EXPECT_EQ(candidates(c, full), no_small) << "small-H backward stops at 128";
  c = make_config(CellType::lstm, 8, 64, 1, false, DataType::f32, 16);
  EXPECT_EQ(candidates(c, full), standard) << "projection";
  c = lstm;
  c.bias = false;
  EXPECT_EQ(candidates(c, full), standard) << "no double bias";
  for (DataType dt : {DataType::f64, DataType::bf16}) {
    c = lstm;
    c.dtype = dt;
    EXPECT_EQ(candidates(c, full), standard) << to_string(dt);
  }
  c = make_config(CellType::gru, 8, 32, 1, false, DataType::f32);
  EXPECT_EQ(candidates(c, full), all);
}

TEST(CudnnAlgorithm, NamesRoundTrip) {
  for (CudnnAlgo a :
       {CudnnAlgo::standard, CudnnAlgo::persist_static, CudnnAlgo::persist_static_small_h})
    EXPECT_EQ(cuda::cudnn_algo_from_string(cuda::to_string(a)), a);
  EXPECT_EQ(cuda::cudnn_algo_from_string("persist-dynamic"), std::nullopt);
  EXPECT_EQ(cuda::cudnn_algo_from_string(""), std::nullopt);
}

// One key per problem the choice can depend on; the same problem, the same key; never a
// tab or newline (the cache file's separators), whatever the GPU's name holds.
TEST(CudnnAlgorithm, KeyNamesWhatTheChoiceDependsOn) {
  constexpr PlanPurpose kTrain = PlanPurpose::training;
  const Config lstm = make_config(CellType::lstm, 8, 64, 2, true, DataType::f32);
  const SequenceShape shape = SequenceShape::padded(5, 3);
  const core::Schedule s = core::make_schedule(shape);
  const cuda::CudnnBatch batch = cuda::cudnn_batch(shape, s, lstm);
  const std::string key =
      cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, kTrain, "NVIDIA H200", 91900);
  EXPECT_EQ(key,
            cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, kTrain, "NVIDIA H200", 91900));
  std::set<std::string> keys = {key};
  keys.insert(cuda::cudnn_autotune_key(lstm, MathMode::allow_conversion, batch, kTrain,
                                       "NVIDIA H200", 91900));
  keys.insert(cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, kTrain, "NVIDIA H100", 91900));
  keys.insert(cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, kTrain, "NVIDIA H200", 90100));
  Config other = lstm;
  other.hidden_size = 65;
  keys.insert(cuda::cudnn_autotune_key(other, MathMode::fp32, batch, kTrain, "NVIDIA H200", 91900));
  other = lstm;
  other.dropout = 0.5;  // one cuDNN call per layer
  keys.insert(cuda::cudnn_autotune_key(other, MathMode::fp32, batch, kTrain, "NVIDIA H200", 91900));
  const SequenceShape shorter = SequenceShape::padded(4, 3);
  const core::Schedule s4 = core::make_schedule(shorter);
  keys.insert(cuda::cudnn_autotune_key(lstm, MathMode::fp32, cuda::cudnn_batch(shorter, s4, lstm),
                                       kTrain, "NVIDIA H200", 91900));
  keys.insert(cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, PlanPurpose::inference,
                                       "NVIDIA H200", 91900));
  EXPECT_EQ(keys.size(), 8u);
  const std::string odd =
      cuda::cudnn_autotune_key(lstm, MathMode::fp32, batch, kTrain, "a\tb\nc", 1);
  EXPECT_EQ(odd.find_first_of("\t\n"), std::string::npos) << odd;
}

cuda::CudnnBatch full_batch(const Config& c, int64_t T, int64_t B) {
  const SequenceShape shape = SequenceShape::padded(T, B);
  return cuda::cudnn_batch(shape, core::make_schedule(shape), c);
}

TEST(CudnnAlgorithm, CandidatesAreHeldToHalfTheTestsBound) {
  // The search keeps a candidate within half of what the tests allow the plan against the
  // reference (tests/cuda: tolerance(c, T, B, false), rnnx::error_bound), so that a kept
  // candidate does not fail them where STANDARD passes with room.
  const Config lstm = make_config(CellType::lstm, 8, 64, 2, true, DataType::f32);
  const double strict =
      cuda::cudnn_candidate_tolerance(lstm, MathMode::fp32, full_batch(lstm, 5, 3));
  EXPECT_DOUBLE_EQ(strict, 0.5 * rnnx::error_bound(lstm, 5, 3, false, false));
  // TF32's products round to 10 bits (unit roundoff 2^-11): a strict float32 plan of the
  // tests' small shapes drops a candidate that computes so.
  EXPECT_LT(strict, 1.0 / 2048);
  // Under allow_conversion the conversion's rounding is allowed (TF32, float16 on opt-in).
  const double converting =
      cuda::cudnn_candidate_tolerance(lstm, MathMode::allow_conversion, full_batch(lstm, 5, 3));
  EXPECT_DOUBLE_EQ(converting, std::min(0.5 * rnnx::error_bound(lstm, 5, 3, false, true), 5e-2));
  EXPECT_GT(converting, 1.0 / 256);
  // Longer sequences and bigger batches carry more rounding: the bound follows the batch...
  EXPECT_GT(cuda::cudnn_candidate_tolerance(lstm, MathMode::fp32, full_batch(lstm, 50, 32)),
            strict);
  // ...up to a ceiling: the worst-case bound of a float32 LSTM H 1024 at T 100 is 5e-2,
  // which would keep a candidate computing in TF32.
  const Config wide = make_config(CellType::lstm, 1024, 1024, 1, false, DataType::f32);
  EXPECT_GT(0.5 * rnnx::error_bound(wide, 100, 8, false, false), 1e-2);
  EXPECT_EQ(cuda::cudnn_candidate_tolerance(wide, MathMode::fp32, full_batch(wide, 100, 8)), 1e-3);
  EXPECT_EQ(
      cuda::cudnn_candidate_tolerance(wide, MathMode::allow_conversion, full_batch(wide, 100, 8)),
      5e-2);
  // A float64 plan drops a candidate that computes in float32.
  const Config f64 = make_config(CellType::lstm, 8, 64, 2, true, DataType::f64);
  EXPECT_LT(cuda::cudnn_candidate_tolerance(f64, MathMode::fp32, full_batch(f64, 50, 32)),
            std::numeric_limits<float>::epsilon());
  // 16-bit data keeps its own rounding whatever the math.
  const Config half = make_config(CellType::lstm, 8, 64, 2, true, DataType::f16);
  EXPECT_GT(cuda::cudnn_candidate_tolerance(half, MathMode::fp32, full_batch(half, 5, 3)),
            1.0 / 2048);
}

TEST(CudnnAlgorithm, AgreementIsRelativeToTheLargestMagnitudeAndRefusesNaN) {
  const double tol = 1e-4;
  const std::vector<double> want = {0.5, -0.25, 0.0};
  EXPECT_TRUE(cuda::cudnn_candidate_agrees(want, want, tol));
  EXPECT_TRUE(cuda::cudnn_candidate_agrees({0.5 + 0.9e-4, -0.25, 0.0}, want, tol));
  EXPECT_FALSE(cuda::cudnn_candidate_agrees({0.5 + 1.1e-4, -0.25, 0.0}, want, tol));
  // The scale is the largest |want| where it exceeds 1: 1e-4 of 40 is 4e-3.
  const std::vector<double> large = {40.0, 0.001};
  EXPECT_TRUE(cuda::cudnn_candidate_agrees({40.0, 0.001 + 3.9e-3}, large, tol));
  EXPECT_FALSE(cuda::cudnn_candidate_agrees({40.0, 0.001 + 4.1e-3}, large, tol));
  EXPECT_FALSE(cuda::cudnn_candidate_agrees({0.5, std::nan(""), 0.0}, want, tol));
  EXPECT_FALSE(cuda::cudnn_candidate_agrees({0.5, -0.25}, want, tol)) << "sizes differ";
}

}  // namespace
}  // namespace rnnx_test
