// Which of cuDNN's RNN algorithms the cuda backend's search may try (src/core/
// cudnn_algorithm.hpp), and what its cached choice is keyed by; checked without a GPU.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace rnnx_test
