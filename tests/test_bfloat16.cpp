// bfloat16 data (DataType::bf16): the conversion; and the cpu backend against the reference
// on 16-bit tensors (bfloat16 and float16, which share the cpu's 16-bit data path), forward
// and backward, held to the 16-bit bound in norm (rnnx::norm_error_bound: 16-bit products,
// and both sides round their results to 16 bits).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/bfloat16.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::core::bfloat16;

// The library's narrowing against the tests' own (test_util.hpp), on ties, carries into the
// exponent, overflow, signed zeros, subnormals, infinities, NaN and a sweep of bit patterns.
TEST(Bfloat16, NarrowingRoundsToNearestEvenAndKeepsNaN) {
  const double tie_down = 1.0 + std::ldexp(1.0, -8), tie_up = 1.0 + 3 * std::ldexp(1.0, -8);
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      1.0,
                                      -2.5,
                                      tie_down,
                                      tie_up,
                                      1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20),
                                      FLT_MAX,
                                      -FLT_MAX,
                                      3.3895313892515355e38 /* largest bf16 */,
                                      1e-40 /* subnormal */,
                                      std::numeric_limits<float>::denorm_min(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      0.1,
                                      -1234.5678};
  for (double v : values) {
    EXPECT_EQ(bfloat16(v).bits, bf16_bits(v)) << v;
    EXPECT_EQ(static_cast<double>(static_cast<float>(bfloat16(v))), bf16_value(bf16_bits(v))) << v;
  }
  EXPECT_EQ(bfloat16(tie_down).bits, bfloat16(1.0).bits) << "ties go to even";
  EXPECT_EQ(bfloat16(FLT_MAX).bits, 0x7f80u) << "rounds up into infinity";
  for (float nan :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()}) {
    const float back = bfloat16(nan);
    EXPECT_TRUE(std::isnan(back));
    EXPECT_EQ(std::signbit(back), std::signbit(nan));
  }
  // A signalling NaN whose payload sits only in the low half must not become infinity.
  uint32_t snan_bits = 0x7f800001u;
  float snan;
  std::memcpy(&snan, &snan_bits, sizeof snan);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(snan))));
  Rng rng(5);
  for (int i = 0; i < 200000; ++i) {
    const auto u = static_cast<uint32_t>(rng.next());
    float f;
    std::memcpy(&f, &u, sizeof f);
    if (std::isnan(f)) continue;
    ASSERT_EQ(bfloat16(f).bits, bf16_bits(f)) << "bits " << u;
  }
}

struct HalfCase {
  std::string name;
  Config config;
  LayoutKind layout;
  std::vector<int64_t> lengths;  // T is the longest
};

Config bf16_config(CellType cell, int64_t I, int64_t H, int64_t L, bool bidir, int64_t proj = 0,
                   bool lbr = true) {
  return make_config(cell, I, H, L, bidir, DataType::bf16, proj, lbr);
}

// The cases in one 16-bit type.
std::vector<HalfCase> half_cases(DataType dtype) {
  std::vector<HalfCase> v;
  v.push_back({"lstm_l2_bidir",
               bf16_config(CellType::lstm, 24, 40, 2, true),
               LayoutKind::time_major,
               {9, 3, 0, 9, 5}});
  Config lstmp = bf16_config(CellType::lstm, 17, 48, 1, false, 20);
  lstmp.cell_clip = {true, -0.8, 0.8};
  v.push_back({"lstmp_cell_clip", lstmp, LayoutKind::batch_first, {7, 7, 2, 6}});
  v.push_back({"gru_lbr_packed",
               bf16_config(CellType::gru, 32, 64, 1, false),
               LayoutKind::packed,
               {12, 10, 10, 4, 1}});
  v.push_back({"gru_orig",
               bf16_config(CellType::gru, 16, 33, 2, false, 0, false),
               LayoutKind::time_major,
               {8, 8, 8}});
  v.push_back({"rnn_relu_bidir",
               bf16_config(CellType::rnn_relu, 20, 36, 1, true),
               LayoutKind::packed_sorted_indices,
               {6, 2, 5}});
  Config dropout = bf16_config(CellType::rnn_tanh, 12, 40, 3, false);
  dropout.dropout = 0.25;
  v.push_back({"rnn_tanh_dropout", dropout, LayoutKind::time_major, {10, 10, 10, 10}});
  for (HalfCase& k : v) k.config.dtype = dtype;
  return v;
}

class HalfDataVsReference : public ::testing::TestWithParam<HalfCase> {};

TEST_P(HalfDataVsReference, ForwardAndBackward) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const HalfCase& k = GetParam();
  const Config& c = k.config;
  const int64_t T = *std::max_element(k.lengths.begin(), k.lengths.end());
  const int64_t B = static_cast<int64_t>(k.lengths.size());
  const SequenceShape shape = make_shape(k.layout, T, B, k.lengths);
  Plan cpu(c, shape, backend_options(Backend::cpu, 2));
  Plan ref(c, shape, backend_options(Backend::reference));
  const bool bf16 = c.dtype == DataType::bf16;
  EXPECT_NE(cpu.impl_name().find(bf16 ? "/bf16-data" : "/f16-data"), std::string::npos)
      << cpu.impl_name();
  EXPECT_EQ(resolved_math_mode(c), bf16 ? MathMode::allow_conversion : MathMode::fp32);
  const Data d = make_data(c, k.lengths, 17);
  for (GradMode mode : {GradMode::overwrite, GradMode::accumulate}) {
    SCOPED_TRACE(mode == GradMode::overwrite ? "overwrite" : "accumulate");
    RunOptions o;
    o.backward = true;
    o.mode = mode;
    o.dropout_counter = 3;
    if (mode == GradMode::accumulate) o.dw_init = std::vector<double>(d.w.size(), 0.25);
    const Results got = run(cpu, make_tensors(cpu, d), o);
    const Results want = run(ref, make_tensors(ref, d), o);
    EXPECT_TRUE(results_near_in_norm(got, want, norm_tolerance(c, T, B, false),
                                     norm_tolerance(c, T, B, true)));
  }
  // Inference gives the training forward's outputs, bit for bit.
  RunOptions train, infer;
  train.training = true;
  const Results a = run(cpu, make_tensors(cpu, d), train),
                b = run(cpu, make_tensors(cpu, d), infer);
  if (c.dropout == 0.0) {
    EXPECT_TRUE(identical("y", a.y, b.y));
  }
}

INSTANTIATE_TEST_SUITE_P(Bfloat16, HalfDataVsReference,
                         ::testing::ValuesIn(half_cases(DataType::bf16)),
                         [](const ::testing::TestParamInfo<HalfCase>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Float16, HalfDataVsReference,
                         ::testing::ValuesIn(half_cases(DataType::f16)),
                         [](const ::testing::TestParamInfo<HalfCase>& i) { return i.param.name; });

// ONNX import into a bf16 flat buffer rounds each value to bf16 (the tests' own rounding),
// and export gives those values back exactly.
TEST(Bfloat16, OnnxImportRoundsAndExportGivesTheValuesBack) {
  const Config c = bf16_config(CellType::gru, 3, 5, 1, false);
  const WeightLayout layout(c);
  Rng rng(9);
  std::vector<double> W(3 * 5 * 3), R(3 * 5 * 5), Bias(2 * 3 * 5);
  for (auto* v : {&W, &R, &Bias}) {
    for (double& e : *v) e = rng.uniform(-1, 1);
  }
  std::vector<uint16_t> flat(static_cast<size_t>(layout.numel()));
  import_onnx_layer(c, layout, 0, W.data(), R.data(), Bias.data(), nullptr, flat.data());
  std::vector<double> W2(W.size()), R2(R.size()), B2(Bias.size());
  export_onnx_layer(c, layout, 0, flat.data(), W2.data(), R2.data(), B2.data(), nullptr);
  for (size_t i = 0; i < W.size(); ++i) EXPECT_EQ(W2[i], bf16_value(bf16_bits(W[i]))) << i;
  for (size_t i = 0; i < R.size(); ++i) EXPECT_EQ(R2[i], bf16_value(bf16_bits(R[i]))) << i;
  for (size_t i = 0; i < Bias.size(); ++i) EXPECT_EQ(B2[i], bf16_value(bf16_bits(Bias[i]))) << i;
}

// bf16 buffers are half the size of float32 ones, and a caller's workspace means no allocation.
TEST(Bfloat16, SizesAndCallerWorkspace) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const Config c = bf16_config(CellType::lstm, 8, 16, 1, false);
  const SequenceShape shape = SequenceShape::padded(4, 3, {4, 2, 3});
  Plan p(c, shape, backend_options(Backend::cpu));
  EXPECT_EQ(dtype_size(DataType::bf16), 2);
  EXPECT_STREQ(to_string(DataType::bf16), "bfloat16");
  EXPECT_EQ(resolved_math_mode(c), MathMode::allow_conversion);
  const Data d = make_data(c, {4, 2, 3}, 2);
  RunOptions o;
  o.backward = true;
  o.caller_workspace = true;
  const Results first = run(p, make_tensors(p, d), o);
  const Results again = run(p, make_tensors(p, d), o);
  EXPECT_TRUE(results_identical(again, first)) << "reruns give the same bits";
}

}  // namespace
}  // namespace rnnx_test
