// ForwardArgs::weights_version: a network keeps its packed copy of weights it has seen twice
// under one version, and the calls after that multiply by it: the same bits as packing at
// every call; weights changed in place under a new version give the new result; the copies
// are bounded and go with the network.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rnnx/network.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

struct VersionCase {
  const char* name;
  Config config;
  const char* cpu;  // forced cpu choices
};

class WeightsVersion : public ::testing::TestWithParam<VersionCase> {};

std::vector<float> forward_y(Network& net, const SequenceShape& shape, const Plan& like,
                             const std::vector<float>& x, const std::vector<float>& w,
                             uint64_t version) {
  std::vector<float> y(static_cast<size_t>(like.y_numel()), -7.0f);
  std::vector<float> hy(static_cast<size_t>(like.h_numel()));
  ForwardArgs a;
  a.x = x.data();
  a.weights = w.data();
  a.y = y.data();
  a.hy = hy.data();
  a.weights_version = version;
  net.forward(shape, a);
  y.insert(y.end(), hy.begin(), hy.end());
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(WeightsVersion, KeptCopyGivesTheBitsOfPackingAndFollowsNewVersions) {
  const VersionCase& c = GetParam();
  PlanOptions o = backend_options(Backend::cpu, 2);
  o.purpose = PlanPurpose::inference;
  o.cpu = cpu_choices_from_string(c.cpu);
  Network net(c.config, o);
  const SequenceShape shape = SequenceShape::padded(7, 40, {});  // 40 rows: W_ih in the loop too
  const Plan like(c.config, shape, o);
  Rng rng(3);
  std::vector<float> x(static_cast<size_t>(like.x_numel())),
      w(static_cast<size_t>(like.weights_numel()));
  for (float& v : x) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : w) v = static_cast<float>(rng.uniform(-0.3, 0.3));

  const std::vector<float> packed_each_call = forward_y(net, shape, like, x, w, 0);
  for (int k = 0; k < 3; ++k) {  // the first call packs, the second keeps, the third uses
    EXPECT_TRUE(same_bits(forward_y(net, shape, like, x, w, 1), packed_each_call)) << "call " << k;
  }
  EXPECT_GT(net.stats().kept_weights_bytes, 0u) << "the pair's copy is kept";
  // Weights changed in place under a new version: the new result, as packed at the call.
  for (float& v : w) v *= -0.5f;
  const std::vector<float> changed = forward_y(net, shape, like, x, w, 0);
  EXPECT_FALSE(same_bits(changed, packed_each_call));
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(same_bits(forward_y(net, shape, like, x, w, 2), changed)) << "call " << k;
  }
  // Other versions: the copies stay bounded (four pairs).
  const size_t one = net.stats().kept_weights_bytes / 2;
  for (uint64_t v = 3; v < 12; ++v) {
    forward_y(net, shape, like, x, w, v);
    forward_y(net, shape, like, x, w, v);
  }
  EXPECT_LE(net.stats().kept_weights_bytes, 4 * one);
}

Config lstmp() {
  Config c = make_config(CellType::lstm, 24, 20, 2, true, DataType::f32, 12);
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WeightsVersion,
    ::testing::Values(VersionCase{"lstmp_per_step", lstmp(), "gemm=packed time_loop=per-step"},
                      VersionCase{"lstmp_team", lstmp(), "gemm=packed time_loop=team"},
                      VersionCase{
                          "gru_orig_team",
                          make_config(CellType::gru, 16, 24, 2, false, DataType::f32, 0, false),
                          "gemm=packed time_loop=team"},
                      VersionCase{"rnn_concurrent",
                                  make_config(CellType::rnn_tanh, 8, 32, 1, true, DataType::f32),
                                  "gemm=packed directions=concurrent input_projection=steps"}),
    [](const ::testing::TestParamInfo<VersionCase>& info) { return info.param.name; });

// A version on an engine that keeps nothing (oneDNN's sgemm, the plain loops, float64) is
// accepted and changes nothing.
TEST(WeightsVersionOff, OtherEnginesIgnoreIt) {
  for (const char* cpu : {"gemm=plain", "gemm=packed"}) {
    for (const DataType dt : {DataType::f32, DataType::f64}) {
      if (dt == DataType::f64 && std::string(cpu) == "gemm=packed") continue;  // float32 only
      SCOPED_TRACE(std::string(cpu) + " " + to_string(dt));
      const Config c = make_config(CellType::gru, 5, 6, 1, false, dt);
      PlanOptions o = backend_options(Backend::cpu, 1);
      o.cpu = cpu_choices_from_string(cpu);
      Network net(c, o);
      const SequenceShape shape = SequenceShape::padded(4, 2, {4, 3});
      const Plan like(c, shape, o);
      const Tensors in = make_tensors(like, make_data(c, {4, 3}, 1));
      ForwardArgs a;
      Buf y(dt, like.y_numel(), 0.0);
      a.x = in.x.data();
      a.weights = in.w.data();
      a.y = y.data();
      for (int k = 0; k < 3; ++k) {
        a.weights_version = 9;
        net.forward(shape, a);
      }
      if (dt == DataType::f64 || std::string(cpu) == "gemm=plain") {
        EXPECT_EQ(net.stats().kept_weights_bytes, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace rnnx_test
