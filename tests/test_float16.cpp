// float16 data (DataType::f16): the host conversion the reference, the cpu backend and the
// ONNX converters use, the reference in float16 against itself in float64 within the
// float16 bound (it is the oracle of the float16 runs), and write_values / read_values. The
// cpu backend against the reference is in test_bfloat16.cpp (HalfDataVsReference), the
// GPU's float16 runs in tests/cuda.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/float16.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using rnnx::core::float16;

// Every float16 widens exactly; narrowing agrees with the tests' own rounding on ties,
// overflow, subnormals, signed zeros, infinities, NaN and a sweep of float32 bit patterns.
TEST(Float16, ConversionRoundsToNearestEvenAndKeepsNaN) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const double want = f16_value(bits);
    const double got = float16::widen(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
    } else {
      ASSERT_EQ(got, want) << b;
      ASSERT_EQ(float16(want).bits, bits) << "round trip of " << want;
    }
  }
  const double ulp1 = std::ldexp(1.0, -10);
  const std::vector<double> values = {
      0.0,      -0.0,       1.0 + ulp1 / 2, 1.0 + 1.5 * ulp1, 65504.0, 65519.99, 65520.0,
      -70000.0, FLT_MAX,    6.1e-5,         5.96e-8,          2.98e-8, 2.99e-8,  1e-9,
      0.1,      -1234.5678, INFINITY,       -INFINITY};
  for (double v : values) EXPECT_EQ(float16(v).bits, f16_bits(v)) << v;
  EXPECT_EQ(float16(1.0 + ulp1 / 2).bits, float16(1.0).bits) << "ties go to even";
  EXPECT_EQ(float16(65520.0).bits, 0x7c00u) << "rounds up into infinity";
  EXPECT_EQ(float16(65504.0).bits, 0x7bffu) << "largest finite";
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::numeric_limits<float>::quiet_NaN()))));
  Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    const auto u = static_cast<uint32_t>(rng.next());
    float f;
    std::memcpy(&f, &u, sizeof f);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16(f).bits, f16_bits(f)) << f;
  }
}

// The oracle of the GPU's float16 runs: the reference on float16 tensors against the
// reference in float64 on the same (float16) values, held to the float16 bound.
TEST(Float16, ReferenceAgreesWithFloat64WithinTheBound) {
  for (const auto& [cell, proj] : std::vector<std::pair<CellType, int64_t>>{
           {CellType::lstm, 0}, {CellType::lstm, 3}, {CellType::gru, 0}, {CellType::rnn_tanh, 0}}) {
    Config c = make_config(cell, 6, 8, 2, true, DataType::f16, proj);
    const std::vector<int64_t> lengths = {5, 0, 3, 5};
    const SequenceShape shape = SequenceShape::padded(5, 4, lengths);
    Plan half(c, shape, backend_options(Backend::reference));
    Config c64 = c;
    c64.dtype = DataType::f64;
    Plan wide(c64, shape, backend_options(Backend::reference));
    Data d = make_data(c, lengths, 11, {});
    const Tensors in16 = make_tensors(half, d);
    Tensors in64;  // the same values, widened
    auto widen = [](const Buf& b) {
      return b.present() ? Buf::from(DataType::f64, b.values()) : Buf();
    };
    in64.x = widen(in16.x), in64.h0 = widen(in16.h0), in64.c0 = widen(in16.c0);
    in64.w = widen(in16.w), in64.dy = widen(in16.dy), in64.dhy = widen(in16.dhy);
    in64.dcy = widen(in16.dcy);
    RunOptions o;
    o.backward = true;
    const Results got = run(half, in16, o), want = run(wide, in64, o);
    SCOPED_TRACE(to_string(cell) + std::string(proj ? " with projection" : ""));
    const double tf = tolerance(c, 5, 4, false), tb = tolerance(c, 5, 4, true);
    EXPECT_TRUE(near("y", got.y, want.y, tf));
    EXPECT_TRUE(near("hy", got.hy, want.hy, tf));
    EXPECT_TRUE(near("dx", got.dx, want.dx, tb));
    EXPECT_TRUE(near("dh0", got.dh0, want.dh0, tb));
    EXPECT_TRUE(near("dw", got.dw, want.dw, tb));
    EXPECT_LT(tf, 0.1) << "a bound that holds anything proves nothing";
  }
}

// The public conversions round like the library's types and read back exactly, for every
// dtype.
TEST(Float16, WriteAndReadValuesRoundLikeTheStorageTypes) {
  const std::vector<double> v = {
      0.0,  -0.0, 1.0, 1.0 + std::ldexp(1.0, -11), 65519.0, 65520.0, -3.14159265358979,
      1e-6, 1e-9, 0.1};
  const auto n = static_cast<int64_t>(v.size());
  std::vector<uint16_t> h(v.size()), b(v.size());
  write_values(DataType::f16, v.data(), h.data(), n);
  write_values(DataType::bf16, v.data(), b.data(), n);
  std::vector<float> f(v.size());
  std::vector<double> d(v.size()), back(v.size());
  write_values(DataType::f32, v.data(), f.data(), n);
  write_values(DataType::f64, v.data(), d.data(), n);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(h[i], f16_bits(v[i])) << v[i];
    EXPECT_EQ(b[i], bf16_bits(v[i])) << v[i];
    EXPECT_EQ(f[i], static_cast<float>(v[i])) << v[i];
    EXPECT_EQ(d[i], v[i]);
  }
  read_values(DataType::f16, h.data(), back.data(), n);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], f16_value(h[i])) << v[i];
  read_values(DataType::bf16, b.data(), back.data(), n);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], bf16_value(b[i])) << v[i];
  read_values(DataType::f64, d.data(), back.data(), n);
  EXPECT_EQ(back, v);
  EXPECT_EQ(std::string(to_string(DataType::f16)), "float16");
  EXPECT_EQ(dtype_size(DataType::f16), 2);
}

TEST(Float16, WriteAndReadValuesRefuseBadArguments) {
  double v = 1.0;
  uint16_t h = 0;
  expect_error([&] { write_values(DataType::f16, &v, &h, -1); }, Status::invalid_argument,
               {"write_values", "n (= -1)"});
  expect_error([&] { read_values(DataType::bf16, &h, &v, -2); }, Status::invalid_argument,
               {"read_values", "n (= -2)"});
  const auto bogus = static_cast<DataType>(9);
  expect_error([&] { write_values(bogus, &v, &h, 1); }, Status::invalid_argument,
               {"write_values", "dtype (= 9)"});
  expect_error([&] { read_values(bogus, &h, &v, 1); }, Status::invalid_argument,
               {"read_values", "dtype (= 9)"});
  EXPECT_EQ(h, 0) << "a refused call writes nothing";
}

}  // namespace
}  // namespace rnnx_test
