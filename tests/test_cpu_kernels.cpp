// The cpu backend's step kernels, once per instruction set the machine supports (scalar,
// avx2, avx512 tables of src/cpu/kernel_dispatch.hpp, called directly): the float32
// exp/sigmoid/tanh approximations against the exact values (ulp error over a sweep of every
// binade plus the edge values, NaN and infinities), tails of sizes that are not a multiple
// of the vector width, every step kernel against the equations evaluated in double, with
// split tiles, row strides and the clip NaN policies; and the ISA selection
// (RNNX_CPU_ISA, set_cpu_isa_limit).
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/column_sums.hpp"
#include "core/float16.hpp"
#include "core/peephole_grad.hpp"
#include "core/schedule.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernel_dispatch.hpp"
#include "reference/activations.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using cpu::Isa;
using cpu::StepKernels;
using cpu::Tile;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr double kFltEps = std::numeric_limits<float>::epsilon();

std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) {
  return sanitize(cpu::isa_name(info.param));
}

// The three kernel builds; a level the machine lacks is skipped, loudly.
class PerIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu::isa_detected()) {
      GTEST_SKIP() << "this machine lacks " << cpu::isa_name(GetParam()) << " (it has "
                   << cpu::isa_name(cpu::isa_detected()) << ")";
    }
  }
  static const StepKernels<float>& k() { return cpu::step_kernels<float>(GetParam()); }
};

TEST_P(PerIsa, TableIsTheRequestedBuild) {
#if defined(__x86_64__)
  EXPECT_STREQ(k().isa, cpu::isa_name(GetParam()));
  const int width[] = {1, 8, 16};
  EXPECT_EQ(k().vector_width, width[static_cast<int>(GetParam())]);
#endif
  EXPECT_STREQ(cpu::step_kernels<double>(GetParam()).isa, "scalar");
}

// The float16 conversions of a table (avx512 has them; the others leave them to
// core/float16.hpp): every one of the 65536 bit patterns widened, and narrowing of ties,
// overflow, subnormals, NaN and 200k float32 bit patterns, bit for bit core's, in full
// vectors and in tails.
TEST_P(PerIsa, Float16ConversionsAreCoresBitForBit) {
  const auto& t = k();
  if (GetParam() == Isa::avx512) {
    ASSERT_NE(t.widen_f16, nullptr);
    ASSERT_NE(t.narrow_f16, nullptr);
  }
  if (t.widen_f16 == nullptr || t.narrow_f16 == nullptr) {
    EXPECT_EQ(t.widen_f16 == nullptr, t.narrow_f16 == nullptr) << "both or neither";
    GTEST_SKIP() << cpu::isa_name(GetParam()) << " leaves float16 to core/float16.hpp";
  }
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f(h.size());
  t.widen_f16(h.data(), f.data(), static_cast<int64_t>(h.size()) - 3);  // a tail of 13
  for (size_t i = 0; i + 3 < h.size(); ++i) {
    const float want = rnnx::core::float16::widen(h[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f[i])) << "bits " << i;
      ASSERT_EQ(std::signbit(f[i]), std::signbit(want)) << "bits " << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(f[i]), std::bit_cast<uint32_t>(want)) << "bits " << i;
    }
  }
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          1.0f + 0x1p-11f,
                          1.0f + 3 * 0x1p-11f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          -70000.0f,
                          0x1p-24f,
                          0x1p-25f,
                          0x1.8p-25f,
                          1e-9f,
                          kInf,
                          -kInf,
                          kNaNf,
                          -kNaNf,
                          std::bit_cast<float>(0x7f800001u),
                          std::bit_cast<float>(0xffc01234u)};
  Rng rng(16);
  while (x.size() < 200000) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.next())));
  std::vector<uint16_t> got(x.size());
  for (int64_t n : {static_cast<int64_t>(x.size()), int64_t{7}}) {
    std::fill(got.begin(), got.end(), uint16_t{0xABCD});
    t.narrow_f16(x.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], rnnx::core::float16::narrow(x[i]))
          << "float bits " << std::bit_cast<uint32_t>(x[i]) << " (n = " << n << ")";
    }
    if (n < static_cast<int64_t>(got.size())) {
      EXPECT_EQ(got[n], 0xABCD) << "wrote past n";
    }
  }
}

// ---------------------------------------------------------------------------------------
// exp, sigmoid, tanh

// Error of `got` in units in the last place of the exact value `want` (float spacing at
// |want|, 2^-149 among the subnormals). An infinity counts as 2^128, the next float after
// FLT_MAX, so a result that overflows one ulp early is one ulp off, not infinitely.
double ulp_error(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  const float rounded = static_cast<float>(want);
  if (std::isinf(got) && std::isinf(rounded)) return got == rounded ? 0 : 1e30;
  const double g = std::isinf(got) ? std::copysign(0x1p128, got) : static_cast<double>(got);
  int e = 0;
  std::frexp(want, &e);  // want = m 2^e, m in [0.5, 1)
  const double ulp = want == 0.0 ? 0x1p-149 : std::ldexp(1.0, std::max(e - 24, -149));
  return std::abs(g - want) / ulp;
}

double exact_exp(double x) {
  return std::exp(x);
}
double exact_sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}
double exact_tanh(double x) {
  return std::tanh(x);
}

using ArrayFn = void (*)(const float*, float*, int64_t);

struct MathFn {
  const char* name;
  ArrayFn StepKernels<float>::*fn;
  double (*exact)(double);
  // The bound each approximation promises (src/cpu/kernels/vector_math.inl): the largest
  // error over all 2^32 inputs (RNNX_TEST_EXHAUSTIVE=1, every build: exp 1.01 ulp, sigmoid
  // 2.41, tanh 1.33) rounded up to the next integer.
  double max_ulps;
};

const MathFn kMathFns[] = {
    {"exp", &StepKernels<float>::exp, exact_exp, 2.0},
    {"sigmoid", &StepKernels<float>::sigmoid, exact_sigmoid, 3.0},
    {"tanh", &StepKernels<float>::tanh, exact_tanh, 2.0},
};

struct Worst {
  double ulps = 0;
  float at = 0;
  float got = 0;
};

// Runs fn over the inputs and folds the errors into `w`.
void measure(const MathFn& m, ArrayFn fn, const std::vector<float>& x, Worst& w) {
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], m.exact(x[i]));
    if (e > w.ulps || (std::isnan(e))) w = Worst{e, x[i], y[i]};
  }
}

// Every float whose bit pattern is a multiple of `stride` (every binade, both signs,
// subnormals, infinities and NaNs included), plus all floats in the ranges where the
// approximations change method or clamp.
TEST_P(PerIsa, ActivationsAreAccurateToAFewUlps) {
  const bool exhaustive = std::getenv("RNNX_TEST_EXHAUSTIVE") != nullptr;
  const uint64_t stride = exhaustive ? 1 : 4099;
  for (const MathFn& m : kMathFns) {
    SCOPED_TRACE(m.name);
    const ArrayFn fn = k().*(m.fn);
    Worst w;
    std::vector<float> x;
    x.reserve(1 << 16);
    auto flush = [&] {
      measure(m, fn, x, w);
      x.clear();
    };
    for (uint64_t bits = 0; bits < (1ull << 32); bits += stride) {
      x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
      if (x.size() == x.capacity()) flush();
    }
    // Every float where the method changes: the tanh switch at 0.625, exp's clamps and
    // overflow, sigmoid's subnormal tail, tanh reaching 1.
    for (auto [lo, hi] :
         {std::pair{0.62f, 0.63f}, std::pair{-0.63f, -0.62f}, std::pair{88.5f, 89.5f},
          std::pair{-104.5f, -86.5f}, std::pair{8.9f, 10.1f}}) {
      for (float v = lo; v <= hi; v = std::nextafter(v, kInf)) {
        x.push_back(v);
        if (x.size() == x.capacity()) flush();
      }
    }
    flush();
    if (exhaustive || std::getenv("RNNX_TEST_SHOW_MARGIN")) {
      std::printf("%-7s %-8s max %.3f ulp at x = %.9g (got %.9g, exact %.17g)\n", k().isa, m.name,
                  w.ulps, w.at, w.got, m.exact(w.at));
    }
    EXPECT_LE(w.ulps, m.max_ulps) << "worst at x = " << w.at << " (bits 0x" << std::hex
                                  << std::bit_cast<uint32_t>(w.at) << std::dec << "): got " << w.got
                                  << ", exact " << m.exact(w.at);
  }
}

TEST_P(PerIsa, ActivationsAtSpecialValues) {
  const float nan_neg = -kNaNf;
  const float nan_payload = std::bit_cast<float>(0x7fc12345u);
  const std::vector<float> x = {kNaNf,
                                nan_neg,
                                nan_payload,
                                kInf,
                                -kInf,
                                0.0f,
                                -0.0f,
                                0x1p-149f,
                                -0x1p-149f,
                                std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max()};
  std::vector<float> e(x.size()), s(x.size()), t(x.size());
  k().exp(x.data(), e.data(), static_cast<int64_t>(x.size()));
  k().sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
  k().tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(e[i])) << i;
    EXPECT_TRUE(std::isnan(s[i])) << i;
    EXPECT_TRUE(std::isnan(t[i])) << i;
  }
  EXPECT_EQ(e[3], kInf);
  EXPECT_EQ(e[4], 0.0f);
  EXPECT_EQ(s[3], 1.0f);
  EXPECT_EQ(s[4], 0.0f);
  EXPECT_EQ(t[3], 1.0f);
  EXPECT_EQ(t[4], -1.0f);
  EXPECT_EQ(e[5], 1.0f);
  EXPECT_EQ(e[6], 1.0f);
  EXPECT_EQ(s[5], 0.5f);
  EXPECT_EQ(s[6], 0.5f);
  EXPECT_EQ(t[5], 0.0f);
  EXPECT_FALSE(std::signbit(t[5]));
  EXPECT_EQ(t[6], 0.0f);
  EXPECT_TRUE(std::signbit(t[6])) << "tanh(-0) = -0";
  EXPECT_EQ(t[7], 0x1p-149f);
  EXPECT_EQ(t[8], -0x1p-149f);
  EXPECT_EQ(e[9], kInf);
  EXPECT_EQ(e[10], 0.0f);
  EXPECT_EQ(s[9], 1.0f);
  EXPECT_EQ(s[10], 0.0f);
  EXPECT_EQ(t[9], 1.0f);
  EXPECT_EQ(t[10], -1.0f);
}

// Sizes around the vector widths: nothing past n is written, and every value equals the
// one computed for it at another position of a longer call (the tail runs the same code).
TEST_P(PerIsa, ActivationTailsMatchFullVectors) {
  Rng rng(7);
  std::vector<float> x(64);
  for (float& v : x) v = static_cast<float>(rng.uniform(-12.0, 12.0));
  for (const MathFn& m : kMathFns) {
    SCOPED_TRACE(m.name);
    const ArrayFn fn = k().*(m.fn);
    std::vector<float> ref(64);
    fn(x.data(), ref.data(), 64);
    for (int64_t n : {1, 7, 15, 16, 17, 33}) {
      for (int64_t off : {0, 3}) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", offset " + std::to_string(off));
        std::vector<float> y(n + 40, 1234.5f);
        fn(x.data() + off, y.data(), n);
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(ref[off + i])) << i;
        for (int64_t i = n; i < n + 40; ++i) ASSERT_EQ(y[i], 1234.5f) << "written past n at " << i;
      }
    }
    // In place.
    std::vector<float> y(x.begin(), x.begin() + 17);
    fn(y.data(), y.data(), 17);
    for (int64_t i = 0; i < 17; ++i) EXPECT_EQ(y[i], ref[i]) << i;
  }
}

// The builds agree with each other to within the sum of their bounds.
TEST(CpuKernels, IsasAgree) {
  Rng rng(3);
  std::vector<float> x(4096);
  for (float& v : x) v = static_cast<float>(rng.uniform(-30.0, 30.0));
  for (const MathFn& m : kMathFns) {
    std::vector<float> ys(x.size());
    (cpu::step_kernels<float>(Isa::scalar).*(m.fn))(x.data(), ys.data(), 4096);
    for (Isa isa : {Isa::avx2, Isa::avx512}) {
      if (isa > cpu::isa_detected()) continue;
      std::vector<float> y(x.size());
      (cpu::step_kernels<float>(isa).*(m.fn))(x.data(), y.data(), 4096);
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_LE(ulp_error(y[i], ys[i]), 2 * m.max_ulps)
            << m.name << " " << cpu::isa_name(isa) << " vs scalar at x = " << x[i];
      }
    }
  }
}

// The sums over the tokens (bias and peephole gradients) are core's, compiled into every
// level's table: each gives core's bits, so that neither the thread count nor the ISA cap
// changes a gradient. Widths that end in a partial vector and a partial block of columns.
TEST(CpuKernels, TokenSumsAreCoresOnEveryIsa) {
  Rng rng(11);
  const int64_t H = 37, GH = 4 * H;
  const SequenceShape shape = SequenceShape::padded(6, 3, {6, 3, 5});
  const core::Schedule s = core::make_schedule(shape);
  const int64_t N = s.tokens;
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(rng.uniform(-1e3, 1e3));
    return v;
  };
  const std::vector<float> c = random(N * H), c0 = random(3 * H), dg = random(N * GH);
  std::vector<float> sums(GH), peep(3 * H);
  core::column_sums(dg.data(), GH, N, GH, sums.data());
  core::peephole_grad_columns(s, true, c.data(), c0.data(), dg.data(), H, GH, 0, H, false,
                              peep.data());
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (isa > cpu::isa_detected()) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    const StepKernels<float>& k = cpu::step_kernels<float>(isa);
    std::vector<float> got(GH, -1.0f), got_peep(3 * H, -1.0f);
    k.column_sums(dg.data(), GH, N, GH, got.data());
    k.peephole_grad_columns(s, true, c.data(), c0.data(), dg.data(), H, GH, 0, H, false,
                            got_peep.data());
    EXPECT_EQ(got, sums);
    EXPECT_EQ(got_peep, peep);
  }
}

// ---------------------------------------------------------------------------------------
// Step kernels against the equations in double.
//
// Tolerance: every output is a composition of at most ten float roundings (bias sums,
// products, one fused multiply-add) and two activations of at most 3 ulp each, on values of
// magnitude <= 4, so it is within 16 eps * max(1, |value|) of the exact value; kSafety 2.
constexpr double kKernelTol = 2 * 16 * kFltEps;

// Named float and byte buffers of one kernel call, so that runs can be compared whole.
struct Bufs {
  std::map<std::string, std::vector<float>> f;
  std::map<std::string, std::vector<uint8_t>> b;
  float* operator[](const std::string& n) { return f.at(n).data(); }
  bool operator==(const Bufs& o) const {
    if (b != o.b || f.size() != o.f.size()) return false;
    for (const auto& [name, v] : f) {
      const auto& w = o.f.at(name);
      if (v.size() != w.size() || std::memcmp(v.data(), w.data(), v.size() * sizeof(float)) != 0)
        return false;
    }
    return true;
  }
};

// The expected content of the float buffers: the input where the kernel writes nothing
// (compared exactly), the double value where it writes (compared with kKernelTol).
struct Want {
  std::map<std::string, std::vector<double>> v;
  std::map<std::string, std::vector<bool>> written;
  std::map<std::string, std::vector<uint8_t>> b;
  explicit Want(const Bufs& in) : b(in.b) {
    for (const auto& [name, vals] : in.f) {
      v[name].assign(vals.begin(), vals.end());
      written[name].assign(vals.size(), false);
    }
  }
  double in(const std::string& n, int64_t i) const { return v.at(n).at(i); }
  void set(const std::string& n, int64_t i, double x) {
    v.at(n).at(i) = x;
    written.at(n).at(i) = true;
  }
};

void expect_matches(const Bufs& got, const Want& want) {
  for (const auto& [name, g] : got.f) {
    const auto& w = want.v.at(name);
    const auto& wr = want.written.at(name);
    int bad = 0;
    for (size_t i = 0; i < g.size() && bad < 5; ++i) {
      const double a = g[i], e = w[i];
      bool ok;
      if (!wr[i]) {
        ok = std::bit_cast<uint32_t>(g[i]) == std::bit_cast<uint32_t>(static_cast<float>(e));
      } else if (std::isnan(e) || std::isnan(a)) {
        ok = std::isnan(e) && std::isnan(a);
      } else {
        ok = std::abs(a - e) <= kKernelTol * std::max(1.0, std::abs(e));
      }
      if (!ok) {
        ++bad;
        ADD_FAILURE() << name << "[" << i << "]: got " << a << ", want " << e
                      << (wr[i] ? "" : " (must not be written)");
      }
    }
  }
  for (const auto& [name, g] : got.b) EXPECT_EQ(g, want.b.at(name)) << name;
}

double sig(double x) {
  return exact_sigmoid(x);
}
double clip_ref(double v, const cpu::Clamp<float>& c) {
  if (!c.enabled) return v;
  if (std::isnan(v)) return c.replace_nan ? c.hi : v;
  return std::min(std::max(v, static_cast<double>(c.lo)), static_cast<double>(c.hi));
}
uint8_t pass_ref(double raw, const cpu::Clamp<float>& c) {
  if (!c.enabled) return 1;
  if (std::isnan(raw)) return c.replace_nan ? 0 : 1;
  return raw >= c.lo && raw <= c.hi;
}

// One kernel under test: fills its buffers, runs one tile, computes what it must give.
struct KernelCase {
  std::string name;
  std::function<Bufs(int64_t rows, int64_t H, Rng&)> make;
  std::function<void(const StepKernels<float>&, Bufs&, int64_t rows, int64_t H, Tile)> run;
  std::function<Want(const Bufs& in, int64_t rows, int64_t H)> want;
};

constexpr int64_t kPad = 3;  // extra columns of every strided row, which must stay untouched

std::vector<float> rnd(Rng& rng, int64_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

// The cell clip in the variants the kernels distinguish.
cpu::Clamp<float> clamp_of(int variant) {
  cpu::Clamp<float> c;
  if (variant == 0) return c;
  c.enabled = true;
  c.replace_nan = variant == 2;
  c.lo = -0.3f;
  c.hi = 0.25f;
  return c;
}

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> v;
  for (bool relu : {false, true}) {
    v.push_back(KernelCase{
        relu ? "rnn_relu_forward" : "rnn_tanh_forward",
        [](int64_t R, int64_t H, Rng& g) {
          Bufs b;
          b.f["bias"] = rnd(g, H, -1, 1);
          b.f["hg"] = rnd(g, R * H, -2, 2);
          b.f["y"] = rnd(g, R * (H + kPad), -2, 2);
          b.f["hs"] = rnd(g, R * H, -1, 1);
          b.f["y"][0] = kNaNf;  // NaN in, NaN out
          return b;
        },
        [relu](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
          k.rnn_forward({.rows = R,
                         .H = H,
                         .relu = relu,
                         .bias = b["bias"],
                         .hg = b["hg"],
                         .y = b["y"],
                         .ld_y = H + kPad,
                         .h_state = b["hs"]},
                        t);
        },
        [relu](const Bufs& in, int64_t R, int64_t H) {
          Want w(in);
          for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < H; ++j) {
              const double a =
                  w.in("y", i * (H + kPad) + j) + w.in("hg", i * H + j) + w.in("bias", j);
              const double h = relu ? (a < 0 ? 0.0 : a) : std::tanh(a);
              w.set("y", i * (H + kPad) + j, h);
              w.set("hs", i * H + j, h);
            }
          return w;
        }});
  }
  for (int clip : {0, 1, 2}) {
    for (int variant : {0, 1, 2}) {
      // 0: the optional outputs; 1: none of them; 2: none, and not the gates either (keep_gates
      // false: inference), where only o's row of the gates is written.
      const bool optional = variant == 0, keep_gates = variant != 2;
      if (!keep_gates && clip != 0) continue;
      const std::string tag = std::string(clip == 0   ? ""
                                          : clip == 1 ? "_clip"
                                                      : "_clip_nanrepl") +
                              (optional ? "_keep" : "") + (keep_gates ? "" : "_nogates");
      v.push_back(
          KernelCase{"lstm_forward" + tag,
                     [](int64_t R, int64_t H, Rng& g) {
                       Bufs b;
                       b.f["bias"] = rnd(g, 4 * H, -1, 1);
                       b.f["hg"] = rnd(g, R * 4 * H, -2, 2);
                       b.f["gates"] = rnd(g, R * 4 * H, -2, 2);
                       b.f["c"] = rnd(g, R * H, -1, 1);
                       b.f["c_keep"] = rnd(g, R * H, -1, 1);
                       b.f["h"] = rnd(g, R * (H + kPad), -1, 1);
                       b.f["hs"] = rnd(g, R * H, -1, 1);
                       b.b["c_pass"].assign(R * H, 7);
                       b.f["gates"][2 * H] = kNaNf;  // g of row 0, cell 0: c_raw is NaN there
                       return b;
                     },
                     [clip, optional, keep_gates](const StepKernels<float>& k, Bufs& b, int64_t R,
                                                  int64_t H, Tile t) {
                       k.lstm_forward({.rows = R,
                                       .H = H,
                                       .bias = b["bias"],
                                       .hg = b["hg"],
                                       .gates = b["gates"],
                                       .keep_gates = keep_gates,
                                       .c_state = b["c"],
                                       .c_keep = optional ? b["c_keep"] : nullptr,
                                       .c_pass = optional ? b.b["c_pass"].data() : nullptr,
                                       .cell_clip = clamp_of(clip),
                                       .h = b["h"],
                                       .ld_h = H + kPad,
                                       .h_state = optional ? b["hs"] : nullptr},
                                      t);
                     },
                     [clip, optional, keep_gates](const Bufs& in, int64_t R, int64_t H) {
                       Want w(in);
                       const cpu::Clamp<float> cc = clamp_of(clip);
                       for (int64_t i = 0; i < R; ++i)
                         for (int64_t j = 0; j < H; ++j) {
                           double a[4];
                           for (int q = 0; q < 4; ++q) {
                             const int64_t at = i * 4 * H + q * H + j;
                             a[q] = w.in("gates", at) + w.in("hg", at) + w.in("bias", q * H + j);
                             a[q] = q == 2 ? std::tanh(a[q]) : sig(a[q]);
                             if (keep_gates || q == 3) w.set("gates", at, a[q]);
                           }
                           const double raw = a[1] * w.in("c", i * H + j) + a[0] * a[2];
                           const double cn = clip_ref(raw, cc);
                           w.set("c", i * H + j, cn);
                           const double h = a[3] * std::tanh(cn);
                           w.set("h", i * (H + kPad) + j, h);
                           if (optional) {
                             w.set("c_keep", i * H + j, cn);
                             w.b["c_pass"][i * H + j] = pass_ref(raw, cc);
                             w.set("hs", i * H + j, h);
                           }
                         }
                       return w;
                     }});
    }
  }
  for (int clip : {0, 1, 2}) {
    v.push_back(
        KernelCase{std::string("proj_forward") + (clip == 0   ? ""
                                                  : clip == 1 ? "_clip"
                                                              : "_clip_nanrepl"),
                   [](int64_t R, int64_t P, Rng& g) {
                     Bufs b;
                     b.f["y"] = rnd(g, R * (P + kPad), -1, 1);
                     b.f["hs"] = rnd(g, R * P, -1, 1);
                     b.b["pass"].assign(R * P, 7);
                     b.f["y"][0] = kNaNf;
                     return b;
                   },
                   [clip](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t P, Tile t) {
                     k.proj_forward({.rows = R,
                                     .P = P,
                                     .y = b["y"],
                                     .ld_y = P + kPad,
                                     .pass = b.b["pass"].data(),
                                     .proj_clip = clamp_of(clip),
                                     .h_state = b["hs"]},
                                    t);
                   },
                   [clip](const Bufs& in, int64_t R, int64_t P) {
                     Want w(in);
                     const cpu::Clamp<float> cc = clamp_of(clip);
                     for (int64_t i = 0; i < R; ++i)
                       for (int64_t j = 0; j < P; ++j) {
                         const double raw = w.in("y", i * (P + kPad) + j);
                         w.set("y", i * (P + kPad) + j, clip_ref(raw, cc));
                         w.set("hs", i * P + j, clip_ref(raw, cc));
                         w.b["pass"][i * P + j] = pass_ref(raw, cc);
                       }
                     return w;
                   }});
  }
  for (int variant : {0, 1, 2}) {
    // 0: hn kept; 1: not; 2: not, and not the gates either (keep_gates false: inference),
    // where z's row and n's pre-activation in n's row are written.
    const bool keep = variant == 0, keep_gates = variant != 2;
    v.push_back(KernelCase{
        keep         ? "gru_forward_keep"
        : keep_gates ? "gru_forward"
                     : "gru_forward_nogates",
        [](int64_t R, int64_t H, Rng& g) {
          Bufs b;
          b.f["bias"] = rnd(g, 3 * H, -1, 1);
          b.f["b_hn"] = rnd(g, H, -1, 1);
          b.f["hg"] = rnd(g, R * 3 * H, -2, 2);
          b.f["gates"] = rnd(g, R * 3 * H, -2, 2);
          b.f["hn"] = rnd(g, R * H, -1, 1);
          b.f["hs"] = rnd(g, R * H, -1, 1);
          b.f["y"] = rnd(g, R * (H + kPad), -1, 1);
          return b;
        },
        [keep, keep_gates](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
          k.gru_forward({.rows = R,
                         .H = H,
                         .bias = b["bias"],
                         .b_hn = b["b_hn"],
                         .hg = b["hg"],
                         .gates = b["gates"],
                         .keep_gates = keep_gates,
                         .hn_keep = keep ? b["hn"] : nullptr,
                         .h_state = b["hs"],
                         .y = b["y"],
                         .ld_y = H + kPad},
                        t);
        },
        [keep, keep_gates](const Bufs& in, int64_t R, int64_t H) {
          Want w(in);
          for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < H; ++j) {
              const int64_t g0 = i * 3 * H + j;
              const double r = sig(w.in("gates", g0) + w.in("hg", g0) + w.in("bias", j));
              const double z =
                  sig(w.in("gates", g0 + H) + w.in("hg", g0 + H) + w.in("bias", H + j));
              const double hn = w.in("hg", g0 + 2 * H) + w.in("b_hn", j);
              const double an = w.in("gates", g0 + 2 * H) + w.in("bias", 2 * H + j) + r * hn;
              const double n = std::tanh(an);
              if (keep_gates) w.set("gates", g0, r);
              w.set("gates", g0 + H, z);
              w.set("gates", g0 + 2 * H, keep_gates ? n : an);
              if (keep) w.set("hn", i * H + j, hn);
              const double h = (1 - z) * n + z * w.in("hs", i * H + j);
              w.set("hs", i * H + j, h);
              w.set("y", i * (H + kPad) + j, h);
            }
          return w;
        }});
  }
  v.push_back(KernelCase{
      "gru_orig_gates_forward",
      [](int64_t R, int64_t H, Rng& g) {
        Bufs b;
        b.f["bias"] = rnd(g, 3 * H, -1, 1);
        b.f["hg"] = rnd(g, R * (3 * H + kPad), -2, 2);
        b.f["gates"] = rnd(g, R * 3 * H, -2, 2);
        b.f["hs"] = rnd(g, R * H, -1, 1);
        b.f["rh"] = rnd(g, R * H, -1, 1);
        return b;
      },
      [](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
        k.gru_orig_gates_forward({.rows = R,
                                  .H = H,
                                  .bias = b["bias"],
                                  .hg = b["hg"],
                                  .ld_hg = 3 * H + kPad,
                                  .gates = b["gates"],
                                  .h_state = b["hs"],
                                  .rh = b["rh"]},
                                 t);
      },
      [](const Bufs& in, int64_t R, int64_t H) {
        Want w(in);
        const int64_t ld = 3 * H + kPad;
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < H; ++j) {
            const int64_t g0 = i * 3 * H + j;
            const double r = sig(w.in("gates", g0) + w.in("hg", i * ld + j) + w.in("bias", j));
            const double z =
                sig(w.in("gates", g0 + H) + w.in("hg", i * ld + H + j) + w.in("bias", H + j));
            w.set("gates", g0, r);
            w.set("gates", g0 + H, z);
            w.set("rh", i * H + j, r * w.in("hs", i * H + j));
          }
        return w;
      }});
  v.push_back(KernelCase{"gru_orig_forward",
                         [](int64_t R, int64_t H, Rng& g) {
                           Bufs b;
                           b.f["bias"] = rnd(g, 3 * H, -1, 1);
                           b.f["b_hn"] = rnd(g, H, -1, 1);
                           b.f["u"] = rnd(g, R * (3 * H), -2, 2);
                           b.f["gates"] = rnd(g, R * 3 * H, 0, 1);
                           b.f["hs"] = rnd(g, R * H, -1, 1);
                           b.f["y"] = rnd(g, R * (H + kPad), -1, 1);
                           return b;
                         },
                         [](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
                           k.gru_orig_forward({.rows = R,
                                               .H = H,
                                               .bias = b["bias"],
                                               .b_hn = b["b_hn"],
                                               .u = b["u"],
                                               .ld_u = 3 * H,
                                               .gates = b["gates"],
                                               .h_state = b["hs"],
                                               .y = b["y"],
                                               .ld_y = H + kPad},
                                              t);
                         },
                         [](const Bufs& in, int64_t R, int64_t H) {
                           Want w(in);
                           for (int64_t i = 0; i < R; ++i)
                             for (int64_t j = 0; j < H; ++j) {
                               const int64_t g0 = i * 3 * H + j;
                               const double n =
                                   std::tanh(w.in("gates", g0 + 2 * H) + w.in("bias", 2 * H + j) +
                                             w.in("u", i * 3 * H + j) + w.in("b_hn", j));
                               w.set("gates", g0 + 2 * H, n);
                               const double z = w.in("gates", g0 + H);
                               const double h = (1 - z) * n + z * w.in("hs", i * H + j);
                               w.set("hs", i * H + j, h);
                               w.set("y", i * (H + kPad) + j, h);
                             }
                           return w;
                         }});
  // ---- backward ----
  for (bool relu : {false, true}) {
    for (bool dy : {true, false}) {
      v.push_back(KernelCase{
          std::string(relu ? "rnn_relu_backward" : "rnn_tanh_backward") + (dy ? "_dy" : ""),
          [](int64_t R, int64_t H, Rng& g) {
            Bufs b;
            b.f["dh"] = rnd(g, R * H, -1, 1);
            b.f["dy"] = rnd(g, R * (H + kPad), -1, 1);
            b.f["h"] = rnd(g, R * (H + kPad), -1, 1);
            b.f["dg"] = rnd(g, R * H, -1, 1);
            return b;
          },
          [relu, dy](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
            k.rnn_backward({.rows = R,
                            .H = H,
                            .relu = relu,
                            .dh = b["dh"],
                            .dy = dy ? b["dy"] : nullptr,
                            .ld_dy = H + kPad,
                            .h = b["h"],
                            .ld_h = H + kPad,
                            .dg = b["dg"]},
                           t);
          },
          [relu, dy](const Bufs& in, int64_t R, int64_t H) {
            Want w(in);
            for (int64_t i = 0; i < R; ++i)
              for (int64_t j = 0; j < H; ++j) {
                const double d = w.in("dh", i * H + j) + (dy ? w.in("dy", i * (H + kPad) + j) : 0);
                const double h = w.in("h", i * (H + kPad) + j);
                w.set("dg", i * H + j, d * (relu ? (h > 0 ? 1.0 : 0.0) : 1 - h * h));
              }
            return w;
          }});
    }
  }
  for (bool pass : {true, false}) {
    v.push_back(
        KernelCase{pass ? "proj_backward_pass" : "proj_backward",
                   [](int64_t R, int64_t P, Rng& g) {
                     Bufs b;
                     b.f["dh"] = rnd(g, R * P, -1, 1);
                     b.f["dy"] = rnd(g, R * (P + kPad), -1, 1);
                     b.f["dr"] = rnd(g, R * P, -1, 1);
                     b.b["pass"].resize(R * P);
                     for (auto& x : b.b["pass"]) x = g.next() % 2;
                     b.f["dh"][0] = kNaNf;  // a clipped NaN gradient passes zero
                     b.b["pass"][0] = 0;
                     return b;
                   },
                   [pass](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t P, Tile t) {
                     k.proj_backward({.rows = R,
                                      .P = P,
                                      .dh = b["dh"],
                                      .dy = b["dy"],
                                      .ld_dy = P + kPad,
                                      .pass = pass ? b.b["pass"].data() : nullptr,
                                      .dr = b["dr"]},
                                     t);
                   },
                   [pass](const Bufs& in, int64_t R, int64_t P) {
                     Want w(in);
                     for (int64_t i = 0; i < R; ++i)
                       for (int64_t j = 0; j < P; ++j) {
                         const double d = w.in("dh", i * P + j) + w.in("dy", i * (P + kPad) + j);
                         w.set("dr", i * P + j, !pass || in.b.at("pass")[i * P + j] ? d : 0.0);
                       }
                     return w;
                   }});
  }
  for (bool pass : {true, false}) {
    v.push_back(KernelCase{
        pass ? "lstm_backward_cpass" : "lstm_backward",
        [](int64_t R, int64_t H, Rng& g) {
          Bufs b;
          b.f["dh"] = rnd(g, R * H, -1, 1);
          b.f["dy"] = rnd(g, R * (H + kPad), -1, 1);
          b.f["gates"] = rnd(g, R * 4 * H, 0, 1);
          b.f["c"] = rnd(g, R * H, -2, 2);
          b.f["c_prev_a"] = rnd(g, R * (H + kPad), -1, 1);
          b.f["c_prev_b"] = rnd(g, R * (H + 1), -1, 1);
          b.f["dc"] = rnd(g, R * H, -1, 1);
          b.f["dg"] = rnd(g, R * 4 * H, -1, 1);
          b.b["c_pass"].resize(R * H);
          for (auto& x : b.b["c_pass"]) x = g.next() % 2;
          return b;
        },
        [pass](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
          cpu::PrevRows<float> cp;
          cp.a = b["c_prev_a"];
          cp.lda = H + kPad;
          cp.count_a = R / 2 + 1;  // the others start their sequence here
          cp.b = b["c_prev_b"];
          cp.ldb = H + 1;
          k.lstm_backward({.rows = R,
                           .H = H,
                           .dh = b["dh"],
                           .dy = b["dy"],
                           .ld_dy = H + kPad,
                           .gates = b["gates"],
                           .c = b["c"],
                           .c_prev = cp,
                           .c_pass = pass ? b.b["c_pass"].data() : nullptr,
                           .dc_state = b["dc"],
                           .dg = b["dg"]},
                          t);
        },
        [pass](const Bufs& in, int64_t R, int64_t H) {
          Want w(in);
          for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < H; ++j) {
              const int64_t g0 = i * 4 * H + j;
              const double gi = w.in("gates", g0), gf = w.in("gates", g0 + H);
              const double gg = w.in("gates", g0 + 2 * H), go = w.in("gates", g0 + 3 * H);
              const double cp = i < R / 2 + 1 ? w.in("c_prev_a", i * (H + kPad) + j)
                                              : w.in("c_prev_b", i * (H + 1) + j);
              const double dh = w.in("dh", i * H + j) + w.in("dy", i * (H + kPad) + j);
              const double tc = std::tanh(w.in("c", i * H + j));
              double dc = w.in("dc", i * H + j) + dh * go * (1 - tc * tc);
              if (pass && !in.b.at("c_pass")[i * H + j]) dc = 0;
              w.set("dg", g0, dc * gg * gi * (1 - gi));
              w.set("dg", g0 + H, dc * cp * gf * (1 - gf));
              w.set("dg", g0 + 2 * H, dc * gi * (1 - gg * gg));
              w.set("dg", g0 + 3 * H, dh * tc * go * (1 - go));
              w.set("dc", i * H + j, dc * gf);
            }
          return w;
        }});
  }
  v.push_back(KernelCase{"gru_backward",
                         [](int64_t R, int64_t H, Rng& g) {
                           Bufs b;
                           b.f["dh"] = rnd(g, R * H, -1, 1);
                           b.f["dy"] = rnd(g, R * (H + kPad), -1, 1);
                           b.f["gates"] = rnd(g, R * 3 * H, 0, 1);
                           b.f["hp"] = rnd(g, R * H, -1, 1);
                           b.f["hn"] = rnd(g, R * H, -2, 2);
                           b.f["dg"] = rnd(g, R * 3 * H, -1, 1);
                           b.f["dgh"] = rnd(g, R * 3 * H, -1, 1);
                           return b;
                         },
                         [](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
                           k.gru_backward({.rows = R,
                                           .H = H,
                                           .dh = b["dh"],
                                           .dy = b["dy"],
                                           .ld_dy = H + kPad,
                                           .gates = b["gates"],
                                           .h_prev = b["hp"],
                                           .hn = b["hn"],
                                           .dg = b["dg"],
                                           .dgh = b["dgh"]},
                                          t);
                         },
                         [](const Bufs& in, int64_t R, int64_t H) {
                           Want w(in);
                           for (int64_t i = 0; i < R; ++i)
                             for (int64_t j = 0; j < H; ++j) {
                               const int64_t g0 = i * 3 * H + j;
                               const double r = w.in("gates", g0), z = w.in("gates", g0 + H),
                                            n = w.in("gates", g0 + 2 * H);
                               const double d =
                                   w.in("dh", i * H + j) + w.in("dy", i * (H + kPad) + j);
                               const double dn = d * (1 - z) * (1 - n * n);
                               const double dz = d * (w.in("hp", i * H + j) - n) * z * (1 - z);
                               const double dr = dn * w.in("hn", i * H + j) * r * (1 - r);
                               w.set("dg", g0, dr);
                               w.set("dg", g0 + H, dz);
                               w.set("dg", g0 + 2 * H, dn);
                               w.set("dgh", g0, dr);
                               w.set("dgh", g0 + H, dz);
                               w.set("dgh", g0 + 2 * H, dn * r);
                               w.set("dh", i * H + j, d * z);
                             }
                           return w;
                         }});
  v.push_back(KernelCase{"gru_orig_backward_n",
                         [](int64_t R, int64_t H, Rng& g) {
                           Bufs b;
                           b.f["dh"] = rnd(g, R * H, -1, 1);
                           b.f["dy"] = rnd(g, R * (H + kPad), -1, 1);
                           b.f["gates"] = rnd(g, R * 3 * H, 0, 1);
                           b.f["hp"] = rnd(g, R * H, -1, 1);
                           b.f["dg"] = rnd(g, R * 3 * H, -1, 1);
                           return b;
                         },
                         [](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
                           k.gru_orig_backward_n({.rows = R,
                                                  .H = H,
                                                  .dh = b["dh"],
                                                  .dy = b["dy"],
                                                  .ld_dy = H + kPad,
                                                  .gates = b["gates"],
                                                  .h_prev = b["hp"],
                                                  .dg = b["dg"]},
                                                 t);
                         },
                         [](const Bufs& in, int64_t R, int64_t H) {
                           Want w(in);
                           for (int64_t i = 0; i < R; ++i)
                             for (int64_t j = 0; j < H; ++j) {
                               const int64_t g0 = i * 3 * H + j;
                               const double z = w.in("gates", g0 + H),
                                            n = w.in("gates", g0 + 2 * H);
                               const double d =
                                   w.in("dh", i * H + j) + w.in("dy", i * (H + kPad) + j);
                               w.set("dg", g0 + H, d * (w.in("hp", i * H + j) - n) * z * (1 - z));
                               w.set("dg", g0 + 2 * H, d * (1 - z) * (1 - n * n));
                               w.set("dh", i * H + j, d * z);
                             }
                           return w;
                         }});
  v.push_back(KernelCase{"gru_orig_backward_r",
                         [](int64_t R, int64_t H, Rng& g) {
                           Bufs b;
                           b.f["drh"] = rnd(g, R * H, -1, 1);
                           b.f["gates"] = rnd(g, R * 3 * H, 0, 1);
                           b.f["hp"] = rnd(g, R * H, -1, 1);
                           b.f["dg"] = rnd(g, R * 3 * H, -1, 1);
                           b.f["dh"] = rnd(g, R * H, -1, 1);
                           return b;
                         },
                         [](const StepKernels<float>& k, Bufs& b, int64_t R, int64_t H, Tile t) {
                           k.gru_orig_backward_r({.rows = R,
                                                  .H = H,
                                                  .drh = b["drh"],
                                                  .gates = b["gates"],
                                                  .h_prev = b["hp"],
                                                  .dg = b["dg"],
                                                  .dh = b["dh"]},
                                                 t);
                         },
                         [](const Bufs& in, int64_t R, int64_t H) {
                           Want w(in);
                           for (int64_t i = 0; i < R; ++i)
                             for (int64_t j = 0; j < H; ++j) {
                               const double r = w.in("gates", i * 3 * H + j),
                                            d = w.in("drh", i * H + j);
                               w.set("dg", i * 3 * H + j, d * w.in("hp", i * H + j) * r * (1 - r));
                               w.set("dh", i * H + j, w.in("dh", i * H + j) + d * r);
                             }
                           return w;
                         }});
  return v;
}

// ONNX's activations and their derivatives as the generic kernels compute them (the
// table's activate/activation_grad, src/cpu/kernels/activations.inl) against the oracle's
// own copy in double (src/reference/activations.hpp), over [-40, 40] off the kinks and at
// the special values. Tolerance: a few float32 roundings of the result and of the affine
// steps inside (alpha x + beta, beta x), eps * 8 (|ref| + |alpha| (1 + |x|) + |beta| + 1);
// NaN exactly where the oracle gives NaN, infinities equal.
TEST_P(PerIsa, OnnxActivationsMatchTheOracle) {
  using K = ActivationKind;
  const std::vector<Activation> acts = {{K::sigmoid, 0, 0},
                                        {K::tanh, 0, 0},
                                        {K::relu, 0, 0},
                                        {K::affine, 0.7, -0.3},
                                        {K::leaky_relu, 0.01, 0},
                                        {K::thresholded_relu, 1.0, 0},
                                        {K::scaled_tanh, 1.7, 0.67},
                                        {K::hard_sigmoid, 0.2, 0.5},
                                        {K::elu, 1.3, 0},
                                        {K::softsign, 0, 0},
                                        {K::softplus, 0, 0}};
  std::vector<float> x;
  for (int i = 0; i < 4000; ++i) x.push_back(static_cast<float>(-40.0 + (i + 0.37) * 0.02));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e30f, -1e30f, kInf, -kInf, kNaNf}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  for (const Activation& a : acts) {
    SCOPED_TRACE(std::string(to_string(a.kind)));
    std::vector<float> y(x.size()), g(x.size());
    k().activate(a, x.data(), y.data(), n);
    k().activation_grad(a, x.data(), g.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      const double xv = x[i];
      const double want[2] = {reference::activate(a, xv), reference::activation_grad(a, xv)};
      const float got[2] = {y[i], g[i]};
      for (int q = 0; q < 2; ++q) {
        const char* what = q == 0 ? "value" : "derivative";
        if (std::isnan(want[q])) {
          EXPECT_TRUE(std::isnan(got[q])) << what << " at " << xv << ": " << got[q];
        } else if (std::isinf(want[q])) {
          EXPECT_EQ(static_cast<double>(got[q]), want[q]) << what << " at " << xv;
        } else {
          const double tol = 8 * kFltEps *
                             (std::fabs(want[q]) +
                              std::fabs(a.alpha) * (1 + (std::isfinite(xv) ? std::fabs(xv) : 0)) +
                              std::fabs(a.beta) + 1);
          EXPECT_NEAR(got[q], want[q], tol) << what << " at " << xv;
        }
      }
    }
  }
}

// Every kernel, rows 1 and 3, cells 1, 7, 15, 17, 33: against the equations, and the same
// bits when the step is cut into tiles at odd places (rows apart, a row split mid-vector).
TEST_P(PerIsa, StepKernelsMatchTheEquationsForAnyTiling) {
  for (const KernelCase& kc : kernel_cases()) {
    for (int64_t R : {1, 3}) {
      for (int64_t H : {1, 7, 15, 17, 33}) {
        SCOPED_TRACE(kc.name + " rows " + std::to_string(R) + " cells " + std::to_string(H));
        Rng rng(static_cast<uint64_t>(H * 131 + R));
        const Bufs in = kc.make(R, H, rng);
        Bufs whole = in;
        kc.run(k(), whole, R, H, Tile{0, R, 0, H});
        expect_matches(whole, kc.want(in, R, H));
        Bufs split = in;
        const int64_t cut = H / 2 + 1;  // mid-vector for every width
        for (int64_t i = 0; i < R; ++i) {
          kc.run(k(), split, R, H, Tile{i, i + 1, cut, H});
          kc.run(k(), split, R, H, Tile{i, i + 1, 0, cut});
        }
        EXPECT_TRUE(split == whole) << "results depend on the tiling";
      }
    }
  }
}

// The dispatching entry points of cell_kernels.hpp split big steps over threads: the
// result is the one of a single tile, bit for bit, for 1 and 2 threads and any row count.
TEST_P(PerIsa, ThreadedStepsEqualOneTile) {
  const int threads = rnnx::max_threads();
  for (int64_t R : {1, 2, 5, 64}) {
    const int64_t H = 9001;  // enough work for 2 threads even at one row; not a multiple of 16
    SCOPED_TRACE("rows " + std::to_string(R));
    Rng rng(static_cast<uint64_t>(R));
    Bufs in;
    in.f["bias"] = rnd(rng, 4 * H, -1, 1);
    in.f["hg"] = rnd(rng, R * 4 * H, -2, 2);
    in.f["gates"] = rnd(rng, R * 4 * H, -2, 2);
    in.f["c"] = rnd(rng, R * H, -1, 1);
    in.f["h"] = rnd(rng, R * (H + kPad), -1, 1);
    auto args = [&](Bufs& b) {
      return cpu::LstmForward<float>{.rows = R,
                                     .H = H,
                                     .bias = b["bias"],
                                     .hg = b["hg"],
                                     .gates = b["gates"],
                                     .c_state = b["c"],
                                     .cell_clip = cpu::Clamp<float>(),
                                     .h = b["h"],
                                     .ld_h = H + kPad};
    };
    Bufs one = in;
    k().lstm_forward(args(one), Tile{0, R, 0, H});
    for (int nt : {1, 2, 3}) {
      rnnx::set_num_threads(nt);
      Bufs many = in;
      cpu::lstm_forward(k(), args(many));
      EXPECT_TRUE(many == one) << nt << " threads";
    }
  }
  rnnx::set_num_threads(threads);
}

INSTANTIATE_TEST_SUITE_P(Isas, PerIsa, ::testing::Values(Isa::scalar, Isa::avx2, Isa::avx512),
                         isa_param_name);

// ---------------------------------------------------------------------------------------
// Choosing the ISA.

// Restores "no API cap" whatever the test does.
struct ApiCapReset {
  ~ApiCapReset() { set_cpu_isa_limit(nullptr); }
};

TEST(CpuIsa, LimitCapsWhatIsUsed) {
  if (std::getenv("RNNX_CPU_ISA")) GTEST_SKIP() << "RNNX_CPU_ISA is set for this run";
  ApiCapReset reset;
  EXPECT_STREQ(cpu_isa_used(), cpu_isa_detected()) << "no cap: the best the machine has";
  set_cpu_isa_limit("scalar");
  EXPECT_STREQ(cpu_isa_used(), "scalar");
  Config c = make_config(CellType::lstm, 3, 5, 1, false, DataType::f32);
  Plan p(c, SequenceShape::padded(2, 2), backend_options(Backend::cpu));
  EXPECT_EQ(p.impl_name().rfind("cpu:scalar/", 0), 0u) << p.impl_name();
  set_cpu_isa_limit("AVX2");  // names are case-insensitive
  EXPECT_STREQ(cpu_isa_used(), cpu::isa_detected() >= Isa::avx2 ? "avx2" : "scalar");
  set_cpu_isa_limit("avx512-bf16");  // above the machine's (or equal): the machine's
  EXPECT_STREQ(cpu_isa_used(), cpu_isa_detected());
  set_cpu_isa_limit(nullptr);
  EXPECT_STREQ(cpu_isa_used(), cpu_isa_detected());
  set_cpu_isa_limit("scalar");
  set_cpu_isa_limit("");
  EXPECT_STREQ(cpu_isa_used(), cpu_isa_detected()) << "\"\" removes the cap too";
}

// A plan's ISA level is fixed when it is built: a cap set or lifted later changes neither its
// name nor a bit of its results (its step kernels and GEMM engine stay those it was built
// with, forward and backward), while a plan built after the change follows the new cap.
TEST(CpuIsa, PlanKeepsTheIsaItWasBuiltWith) {
  if (std::getenv("RNNX_CPU_ISA")) GTEST_SKIP() << "RNNX_CPU_ISA is set for this run";
  if (cpu::isa_detected() == Isa::scalar) GTEST_SKIP() << "the machine has only scalar kernels";
  ApiCapReset reset;
  const Config c = make_config(CellType::lstm, 7, 24, 2, true, DataType::f32);
  const std::vector<int64_t> lengths = {5, 0, 3, 5};
  const SequenceShape shape = SequenceShape::padded(5, 4, lengths);
  const Data d = make_data(c, lengths, 11);
  RunOptions ro;
  ro.backward = true;
  for (const char* built_at : {"scalar", ""}) {
    SCOPED_TRACE(std::string("built at cap \"") + built_at + "\"");
    set_cpu_isa_limit(built_at);
    Plan plan(c, shape, backend_options(Backend::cpu, 2));
    const std::string name = plan.impl_name();
    const std::string level = cpu_isa_used();
    EXPECT_EQ(name.rfind("cpu:" + level + "/", 0), 0u) << name;
    const Tensors in = make_tensors(plan, d);
    const Results before = run(plan, in, ro);
    set_cpu_isa_limit(*built_at ? "" : "scalar");  // the other cap
    EXPECT_EQ(plan.impl_name(), name);
    EXPECT_TRUE(results_identical(run(plan, in, ro), before));
    Plan later(c, shape, backend_options(Backend::cpu, 2));
    EXPECT_EQ(later.impl_name().rfind(std::string("cpu:") + cpu_isa_used() + "/", 0), 0u)
        << later.impl_name();
    EXPECT_NE(later.impl_name(), name);
  }
}

TEST(CpuIsa, UnknownLimitIsRefused) {
  ApiCapReset reset;
  const Isa before = cpu::isa_for_plan();
  for (const char* bad : {"avx", "sse2", "avx-512", "neon", " avx2"}) {
    try {
      set_cpu_isa_limit(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("scalar, avx2, avx512, avx512-bf16"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(cpu::isa_for_plan(), before) << "a refused name changes nothing";
}

TEST(CpuIsa, ConcurrentLimitChangesAreSafe) {
  ApiCapReset reset;
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      std::vector<float> x(100, 0.5f), y(100);
      while (!stop.load()) {
        const std::string used = cpu_isa_used();
        if (used != "scalar" && used != "avx2" && used != "avx512" && used != "avx512-bf16") ++bad;
        cpu::step_kernels<float>(cpu::isa_for_plan()).sigmoid(x.data(), y.data(), 100);
        if (std::abs(y[99] - 0.62245933f) > 1e-6f) ++bad;
      }
    });
  }
  for (int i = 0; i < 2000; ++i) set_cpu_isa_limit(i % 2 ? "scalar" : "avx512");
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Run by ctest with RNNX_CPU_ISA set to a name that is not an ISA (tests/CMakeLists.txt):
// every cpu plan is refused with a message that names the variable and its value.
TEST(CpuIsa, UnknownEnvironmentValueIsRefused) {
  const char* env = std::getenv("RNNX_CPU_ISA");
  cpu::Isa isa;
  if (env == nullptr || *env == '\0' || cpu::isa_from_name(env, &isa))
    GTEST_SKIP() << "needs RNNX_CPU_ISA set to an unknown name (ctest cpu_isa_env_unknown)";
  try {
    Config c = make_config(CellType::gru, 3, 5, 1, false, DataType::f32);
    Plan p(c, SequenceShape::padded(2, 2), backend_options(Backend::cpu));
    ADD_FAILURE() << "plan built with RNNX_CPU_ISA=" << env;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(std::string("RNNX_CPU_ISA (= \"") + env + "\")"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cpu_isa_used(), Error);
  // The API cap overrides the environment.
  ApiCapReset reset;
  set_cpu_isa_limit("scalar");
  EXPECT_STREQ(cpu_isa_used(), "scalar");
}

}  // namespace
}  // namespace rnnx_test
