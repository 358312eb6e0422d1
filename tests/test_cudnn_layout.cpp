// cuDNN's side of the cuda backend, checked without a GPU (src/cuda/rules/cudnn_layout.hpp): which
// configs cuDNN runs, the weight space of cuDNN's documentation filled from the flat buffer
// (every element where the PyTorch parameter of that name puts it) and back, and the batch
// cuDNN sees (sequences of length 0 left out, lengths sorted).
#include <gtest/gtest.h>

#include <numeric>

#include "cuda/rules/cudnn_layout.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using cuda::CudnnParam;

Status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return Status::success;
}

// PyTorch's math choices; float32 never meets float16 unless asked by name (issue 47: the
// seed's allow_conversion meant float16 on cuDNN, bfloat16 everywhere else).
TEST(CudnnLayout, MathKeepsFloat32sRangeUnlessFloat16IsAskedFor) {
  Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32);
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::fp32, false), "fma");
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::fp32, true), "fma") << "the opt-in needs the mode";
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::allow_conversion, false), "tf32");
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::allow_conversion, true), "tensor-op-fp16-conversion");
  c.dtype = DataType::f64;
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::allow_conversion, true), "double");
  c.dtype = DataType::bf16;
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::allow_conversion, false), "default");
  c.dtype = DataType::f16;
  EXPECT_EQ(cuda::cudnn_math(c, MathMode::fp32, false), "tensor-op");
}

TEST(CudnnLayout, Bfloat16NeedsCudnn913) {
  EXPECT_EQ(cuda::cudnn_version_refusal(DataType::bf16, 91300), "");
  EXPECT_EQ(cuda::cudnn_version_refusal(DataType::bf16, 91900), "");
  EXPECT_EQ(cuda::cudnn_version_refusal(DataType::f32, 90100), "");
  EXPECT_EQ(cuda::cudnn_version_refusal(DataType::bf16, 91205),
            "bfloat16 RNNs need cuDNN 9.13 or later, this is 9.12.5");
  EXPECT_EQ(cuda::cudnn_version_refusal(DataType::f32, 80907),
            "rnnx needs cuDNN 9, the loaded library is 8.9.7");
}

TEST(CudnnLayout, RefusesWhatCudnnCannotRun) {
  const Config lstm = make_config(CellType::lstm, 4, 6, 2, true, DataType::f32, 3);
  EXPECT_EQ(cuda::cudnn_refusal(lstm), "");
  Config dropped = lstm;
  dropped.dropout = 0.5;
  EXPECT_EQ(cuda::cudnn_refusal(dropped), "") << "dropout runs on cuDNN (one call per layer)";
  Config defaults_spelt = make_config(CellType::gru, 4, 6, 1, true);
  defaults_spelt.activations = {default_activation(ActivationKind::sigmoid),
                                default_activation(ActivationKind::tanh)};
  EXPECT_EQ(cuda::cudnn_refusal(defaults_spelt), "");

  struct Case {
    Config config;
    const char* reason;
  };
  std::vector<Case> refused;
  refused.push_back(
      {make_config(CellType::gru, 4, 6, 1, false, DataType::f32, 0, false), "original GRU"});
  auto with = [&](auto change, const char* reason) {
    Config c = lstm;
    change(c);
    refused.push_back({c, reason});
  };
  with([](Config& c) { c.proj_clip = {true, -1, 1}; }, "proj_clip");
  // cuDNN's clip rules are undocumented for NaN and for the backward (issue 27): both policies.
  with(
      [](Config& c) {
        c.cell_clip = {true, -1, 1}, c.clip_nan = NanPolicy::replace;
      },
      "cell_clip");
  with(
      [](Config& c) {
        c.cell_clip = {true, -1, 1}, c.clip_nan = NanPolicy::propagate;
      },
      "cell_clip");
  with([](Config& c) { c.peephole = true, c.proj_size = 0; }, "peephole");
  with([](Config& c) { c.gate_clip = 3.0; }, "gate_clip");
  with([](Config& c) { c.input_forget = true; }, "input_forget");
  with([](Config& c) { c.reverse = true, c.bidirectional = false; }, "reverse");
  with(
      [](Config& c) {
        c.activations = {default_activation(ActivationKind::hard_sigmoid),
                         default_activation(ActivationKind::tanh),
                         default_activation(ActivationKind::tanh)};
      },
      "activations");
  for (const Case& k : refused) {
    const std::string why = cuda::cudnn_refusal(k.config);
    EXPECT_NE(why.find(k.reason), std::string::npos) << why;
  }
}

// The PyTorch parameter name and row block of cuDNN's (pseudo-layer, id): computed here from
// cuDNN's documented meaning of the ids, independently of cudnn_layout.cpp.
struct Expected {
  std::string name;
  int64_t row0;
};
Expected pytorch_block(const Config& c, const CudnnParam& p) {
  const int64_t D = c.num_directions(), G = gates_per_cell(c.cell);
  const std::string sfx =
      "_l" + std::to_string(p.pseudo_layer / D) + (p.pseudo_layer % D == 1 ? "_reverse" : "");
  if (c.cell == CellType::lstm && p.id == 8) return {"weight_hr" + sfx, 0};
  const bool recurrent = p.id >= G;
  const int64_t gate = recurrent ? p.id - G : p.id;
  std::string base =
      p.bias ? (recurrent ? "bias_hh" : "bias_ih") : (recurrent ? "weight_hh" : "weight_ih");
  return {base + sfx, gate * c.hidden_size};
}

std::vector<Config> layout_configs() {
  std::vector<Config> out;
  out.push_back(make_config(CellType::lstm, 5, 7, 2, true, DataType::f64, 3));
  out.push_back(make_config(CellType::lstm, 5, 7, 3, false, DataType::f64));
  out.push_back(make_config(CellType::gru, 6, 4, 2, true, DataType::f64));
  out.push_back(make_config(CellType::rnn_tanh, 1, 9, 2, true, DataType::f64));
  Config nobias = make_config(CellType::gru, 3, 5, 2, false, DataType::f64);
  nobias.bias = false;
  out.push_back(nobias);
  return out;
}

TEST(CudnnLayout, DocumentedWeightSpaceHoldsEachPyTorchParameter) {
  for (const Config& c : layout_configs()) {
    SCOPED_TRACE(std::string(to_string(c.cell)) + " L" + std::to_string(c.num_layers));
    const WeightLayout layout(c);
    const auto params = cuda::cudnn_documented_layout(c);
    int64_t space = 0;
    for (const CudnnParam& p : params) space = std::max(space, p.offset + p.numel());
    EXPECT_EQ(space, layout.numel()) << "cuDNN's double bias holds what PyTorch's params do";

    std::vector<double> flat(static_cast<size_t>(layout.numel()));
    std::iota(flat.begin(), flat.end(), 1.0);
    std::vector<double> cudnn(static_cast<size_t>(space), -1.0);
    const auto segs = cuda::cudnn_weight_segments(c, layout, params);
    cuda::apply_segments_to_cudnn(segs, flat.data(), cudnn.data());
    for (const CudnnParam& p : params) {
      const Expected e = pytorch_block(c, p);
      const WeightParam& w = layout.find(e.name);
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t k = 0; k < p.cols; ++k) {
          ASSERT_EQ(cudnn[static_cast<size_t>(p.offset + r * p.cols + k)],
                    flat[static_cast<size_t>(w.offset + (e.row0 + r) * w.cols + k)])
              << e.name << " row " << e.row0 + r << " col " << k;
        }
    }
    // Back again, overwriting, then adding.
    std::vector<double> back(flat.size(), 0.0);
    cuda::apply_segments_to_flat(segs, cudnn.data(), back.data(), false);
    EXPECT_EQ(back, flat);
    cuda::apply_segments_to_flat(segs, cudnn.data(), back.data(), true);
    for (size_t i = 0; i < flat.size(); ++i) ASSERT_EQ(back[i], 2 * flat[i]);
  }
}

TEST(CudnnLayout, AdjacentCopiesAreMerged) {
  // Per pseudo-layer: weight_ih + weight_hh (ids 0-7), weight_hr (id 8), bias_ih + bias_hh.
  const Config c = make_config(CellType::lstm, 5, 7, 2, true, DataType::f32, 3);
  const WeightLayout layout(c);
  const auto segs = cuda::cudnn_weight_segments(c, layout, cuda::cudnn_documented_layout(c));
  EXPECT_EQ(segs.size(), 3u * 4u);
  int64_t total = 0;
  for (const auto& s : segs) total += s.count;
  EXPECT_EQ(total, layout.numel());
}

TEST(CudnnLayout, ShapesOtherThanExpectedAndOverlapsAreRefused) {
  const Config c = make_config(CellType::gru, 6, 4, 1, false, DataType::f32);
  const WeightLayout layout(c);
  auto params = cuda::cudnn_documented_layout(c);
  EXPECT_EQ(status_of([&] { cuda::cudnn_weight_segments(c, layout, cuda::cudnn_params(c)); }),
            Status::internal)
      << "offsets not filled";
  auto wrong_shape = params;
  wrong_shape[1].rows += 1;
  EXPECT_EQ(status_of([&] { cuda::cudnn_weight_segments(c, layout, wrong_shape); }),
            Status::internal);
  auto overlap = params;
  overlap[1].offset = overlap[0].offset + 1;
  EXPECT_EQ(status_of([&] { cuda::cudnn_weight_segments(c, layout, overlap); }), Status::internal);
}

TEST(CudnnLayout, BatchLeavesZeroLengthsOutSorted) {
  const Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32);
  {
    const auto shape = SequenceShape::padded(5, 4, {3, 0, 5, 2});
    const auto s = core::make_schedule(shape);
    const auto b = cuda::cudnn_batch(shape, s, c);
    EXPECT_EQ(b.batch, 3);
    EXPECT_EQ(b.max_seq_len, 5);
    EXPECT_EQ(b.lengths, (std::vector<int32_t>{5, 3, 2}));
    EXPECT_EQ(b.tokens, 10);
    EXPECT_FALSE(b.states_in_order);
    EXPECT_FALSE(b.rows_in_place);
  }
  {
    const auto shape = SequenceShape::padded(5, 2, {0, 0});
    const auto b = cuda::cudnn_batch(shape, core::make_schedule(shape), c);
    EXPECT_EQ(b.batch, 0);
    EXPECT_TRUE(b.lengths.empty());
  }
  {
    const auto shape = SequenceShape::padded(3, 2, {});
    const auto b = cuda::cudnn_batch(shape, core::make_schedule(shape), c);
    EXPECT_EQ(b.lengths, (std::vector<int32_t>{3, 3}));
    EXPECT_TRUE(b.states_in_order);
    EXPECT_TRUE(b.rows_in_place);
    const auto bf = SequenceShape::padded(3, 2, {}, true);
    EXPECT_FALSE(cuda::cudnn_batch(bf, core::make_schedule(bf), c).rows_in_place);
  }
  {
    const auto shape = SequenceShape::packed({2, 1}, {1, 0});
    const auto b = cuda::cudnn_batch(shape, core::make_schedule(shape), c);
    EXPECT_EQ(b.lengths, (std::vector<int32_t>{2, 1}));
    EXPECT_TRUE(b.rows_in_place);
    EXPECT_FALSE(b.states_in_order);
  }
}

}  // namespace
}  // namespace rnnx_test
