// Math mode int8 (docs/int8.md) through the operator: every cell (RNN tanh and ReLU, LSTM,
// LSTM with projection, peepholes and clips, both GRU variants), two layers, both
// directions, ragged lengths in every layout, against the float32 plan on the same data
// within the stated bounds (tests/test_math_int8.cpp's kBounds, docs/int8.md's table); the
// VNNI plan equal to the scalar definition's plan bit for bit, at 1 and 2 threads, with and
// without a kept (quantised once) weights copy; and every refusal by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

constexpr const char* kKernelVar = "RNNX_CPU_INT8_KERNEL";

bool vnni_machine() {
  try {
    const std::string k = cpu_int8_gemm();
    return k == "avx512-vnni" || k == "amx-int8" || k == "avx-vnni";
  } catch (const Error&) {
    return false;
  }
}

// The suites also run with the time loop, input projection or GEMM engine forced through
// the environment (tests/CMakeLists.txt), which int8 plans refuse: "auto" overrides them.
PlanOptions inference(int threads = 0) {
  PlanOptions o = backend_options(Backend::cpu, threads);
  o.purpose = PlanPurpose::inference;
  o.cpu.time_loop = o.cpu.input_projection = o.cpu.gemm = "auto";
  return o;
}

struct Int8Case {
  std::string name;
  Config config;
  LayoutKind layout;
  double bound;  // of the relative 2-norm error of y, hy and cy against float32
};

std::vector<Int8Case> int8_cases() {
  std::vector<Int8Case> v;
  int k = 0;
  for (const CellVariant& cv : cell_variants()) {
    for (bool bidir : {false, true}) {
      Config c = config_for(cv, 48, 64, 2, bidir, true);
      c.math = MathMode::int8;
      const LayoutKind layouts[] = {LayoutKind::time_major, LayoutKind::batch_first,
                                    LayoutKind::packed_sorted_indices};
      std::string name = std::string(cv.tag) + (bidir ? "_bi" : "_uni");
      std::replace(name.begin(), name.end(), '-', '_');
      v.push_back({name, c, layouts[k++ % 3], 0.03});
    }
  }
  Config peep = make_config(CellType::lstm, 40, 56, 2, true, DataType::f32, 20);
  peep.peephole = true;
  peep.cell_clip = {true, -2.0, 2.0};
  peep.proj_clip = {true, -0.5, 0.5};
  peep.math = MathMode::int8;
  v.push_back({"lstmp_peephole_clips_bi", peep, LayoutKind::time_major, 0.03});
  Config gate = make_config(CellType::gru, 40, 56, 1, false, DataType::f32);
  gate.gate_clip = 1.5;
  gate.math = MathMode::int8;
  v.push_back({"gru_gate_clip", gate, LayoutKind::batch_first, 0.03});
  return v;
}

std::vector<int64_t> ragged_lengths() {
  return {9, 3, 12, 0, 7, 12, 1, 5, 11, 4, 8, 2, 10, 6, 12, 3, 9};
}

void PrintTo(const Int8Case& c, std::ostream* os) {
  *os << c.name;
}

class MathInt8 : public ::testing::TestWithParam<Int8Case> {};

// Without VNNI (an AVX2 machine, or the suites run capped at avx2 or scalar) the plans run on
// the definition: the bounds hold there too, and the bit checks compare it with itself.
TEST_P(MathInt8, NearFloat32AndEqualToTheDefinition) {
  const Int8Case& p = GetParam();
  std::optional<ScopedEnv> definition;
  if (!vnni_machine()) definition.emplace(kKernelVar, "scalar");
  std::vector<int64_t> lengths = ragged_lengths();
  if (p.layout == LayoutKind::packed_sorted_indices) lengths[3] = 2;  // packed: no length 0
  const int64_t B = static_cast<int64_t>(lengths.size()), T = 12;
  const SequenceShape shape = make_shape(p.layout, T, B, lengths);
  Config f32 = p.config;
  f32.math = MathMode::fp32;
  Plan fp(f32, shape, backend_options(Backend::cpu));
  Plan q(p.config, shape, inference());
  EXPECT_NE(q.impl_name().find("int8"), std::string::npos) << q.impl_name();
  const Data d = make_data(p.config, lengths, 1234);
  const Tensors in = make_tensors(q, d);
  const Results want = run(fp, in);
  const Results got = run(q, in);
  EXPECT_TRUE(results_near_in_norm(got, want, p.bound, 0.0)) << q.impl_name();
  // Padding is written as in float32.
  EXPECT_TRUE(near(
      "y padding",
      Buf::from(DataType::f64, padding_values(geometry_of(shape), got.y, out_width(p.config))),
      Buf::from(DataType::f64, padding_values(geometry_of(shape), want.y, out_width(p.config))),
      0.0));
  // The same bits at 2 threads, on vpdpbusd where AMX ran, and on the definition.
  Plan q2(p.config, shape, inference(2));
  EXPECT_TRUE(results_identical(run(q2, in), got)) << "2 threads";
  // Every row is quantised alone, so projecting the input before the loop, at every step in
  // it, or split between the two, in team loops (members packing shares of the rows) or
  // per-step ones, gives the same bits.
  for (const char* how : {"steps", "bulk", "split"}) {
    for (const char* loop : {"team", "per-step"}) {
      PlanOptions o = inference(2);
      o.cpu.input_projection = how;
      o.cpu.time_loop = loop;
      Plan qi(p.config, shape, o);
      EXPECT_TRUE(results_identical(run(qi, in), got))
          << "input projection " << how << ", " << loop << " loop, 2 threads";
    }
  }
  if (std::string(cpu_int8_gemm()) == "amx-int8") {
    ScopedEnv env(kKernelVar, "vnni");
    Plan vnni(p.config, shape, inference(1));
    EXPECT_NE(vnni.impl_name().find("packed-avx512-vnni-int8"), std::string::npos);
    EXPECT_TRUE(results_identical(run(vnni, in), got)) << "vpdpbusd";
  }
  {
    ScopedEnv env(kKernelVar, "scalar");
    Plan def(p.config, shape, inference(1));
    EXPECT_NE(def.impl_name().find("packed-scalar-int8"), std::string::npos) << def.impl_name();
    EXPECT_TRUE(results_identical(run(def, in), got)) << "the scalar definition";
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, MathInt8, ::testing::ValuesIn(int8_cases()),
                         [](const ::testing::TestParamInfo<Int8Case>& info) {
                           return info.param.name;
                         });

// Calls naming a weights version quantise the weights once and multiply by the kept copy
// from the second call on: the same bits as a call that quantises its own.
TEST(MathInt8Network, KeptWeightsGiveTheSameBits) {
  if (!vnni_machine()) GTEST_SKIP() << "no AVX512-VNNI within the ISA cap";
  Config c = make_config(CellType::lstm, 32, 48, 2, true, DataType::f32);
  c.math = MathMode::int8;
  const std::vector<int64_t> lengths = {7, 2, 5, 7};
  const SequenceShape shape = SequenceShape::padded(7, 4, lengths);
  Network net(c, inference());
  const Data d = make_data(c, lengths, 99);
  Plan plain(c, shape, inference());
  const Tensors in = make_tensors(plain, d);
  const Results want = run(plain, in);
  for (int call = 0; call < 3; ++call) {
    Results r;
    r.y = Buf(DataType::f32, plain.y_numel(), kNaN);
    ForwardArgs a;
    a.x = in.x.data();
    a.h0 = in.h0.data();
    a.c0 = in.c0.data();
    a.weights = in.w.data();
    a.y = r.y.data();
    a.weights_version = 5;
    net.forward(shape, a);
    EXPECT_TRUE(identical("y", r.y, want.y)) << "call " << call;
  }
  EXPECT_GT(net.stats().kept_weights_bytes, 0u);
}

void expect_refused(const Config& c, const PlanOptions& o, Status status, const std::string& part) {
  try {
    Plan p(c, SequenceShape::padded(3, 2), o);
    ADD_FAILURE() << "not refused: " << p.impl_name();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(MathInt8Refusals, ByName) {
  Config c = make_config(CellType::gru, 8, 16, 1, false, DataType::f32);
  c.math = MathMode::int8;
  expect_refused(c, backend_options(Backend::cpu), Status::invalid_argument,
                 "math (= int8) runs inference only");
  PlanOptions ref = backend_options(Backend::reference);
  ref.purpose = PlanPurpose::inference;
  expect_refused(c, ref, Status::unsupported, "math (= int8) runs on backend cpu only");
  for (DataType dt : {DataType::f64, DataType::bf16, DataType::f16}) {
    Config d = c;
    d.dtype = dt;
    expect_refused(d, inference(), Status::invalid_argument, "dtype must be f32");
  }
  Config wide = c;
  wide.input_size = 70000;
  expect_refused(wide, inference(), Status::invalid_argument, "at most 65536");
  {
    ScopedEnv env(kKernelVar, "avx2");
    expect_refused(c, inference(), Status::invalid_argument, "RNNX_CPU_INT8_KERNEL (= \"avx2\")");
  }
  if (std::string(cpu_int8_gemm()) == "avx512-vnni") {  // VNNI without AMX-INT8 (a Zen 4)
    ScopedEnv env(kKernelVar, "amx");
    expect_refused(c, inference(), Status::unsupported, "needs AMX-INT8");
  }
  PlanOptions capped = inference();
  capped.cpu.isa = "scalar";
  expect_refused(c, capped, Status::unsupported, "needs AVX512-VNNI");
  if (vnni_machine()) {
    PlanOptions plain = inference();
    plain.cpu.gemm = "plain";
    expect_refused(c, plain, Status::unsupported, "forced to plain");
  }
  EXPECT_EQ(math_mode_from_string("INT8"), MathMode::int8);
  EXPECT_STREQ(to_string(MathMode::int8), "int8");
}

// The scalar definition runs anywhere when asked for, at any ISA cap.
TEST(MathInt8Refusals, TheDefinitionRunsAtAnyLevel) {
  ScopedEnv env(kKernelVar, "scalar");
  Config c = make_config(CellType::rnn_tanh, 8, 16, 1, false, DataType::f32);
  c.math = MathMode::int8;
  PlanOptions capped = inference();
  capped.cpu.isa = "scalar";
  Plan p(c, SequenceShape::padded(3, 2), capped);
  EXPECT_NE(p.impl_name().find("packed-scalar-int8"), std::string::npos) << p.impl_name();
  EXPECT_STREQ(cpu_int8_gemm(), "scalar");
}

}  // namespace
}  // namespace rnnx_test
