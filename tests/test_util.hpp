// Shared helpers of the rnnx tests: a seeded generator, buffers in a plan's dtype, the
// caller's sequence layouts re-implemented here independently of src/core, random problem
// data, one helper that runs forward/backward through rnnx::Plan, the tolerance formula
// and the comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "cpu/library_gemm.hpp"
#include "rnnx/rnnx.hpp"

// Readable parameter values in gtest's and ctest's listings (found by ADL).
namespace rnnx {
inline void PrintTo(Backend b, std::ostream* os) {
  *os << to_string(b);
}
inline void PrintTo(DataType d, std::ostream* os) {
  *os << to_string(d);
}
}  // namespace rnnx

namespace rnnx_test {

using namespace rnnx;

// The (backend, dtype) parameter of the suites that run on every backend.
struct BackendParam {
  Backend backend;
  DataType dtype;
};
inline void PrintTo(const BackendParam& p, std::ostream* os) {
  *os << to_string(p.backend) << "/" << to_string(p.dtype);
}
inline std::string backend_param_name(const ::testing::TestParamInfo<BackendParam>& info) {
  return std::string(to_string(info.param.backend)) + "_" + to_string(info.param.dtype);
}
inline auto all_backends() {
  return ::testing::Values(BackendParam{Backend::reference, DataType::f64},
                           BackendParam{Backend::reference, DataType::f32},
                           BackendParam{Backend::cpu, DataType::f32},
                           BackendParam{Backend::cpu, DataType::f64});
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sets (or, value == nullptr, unsets) an environment variable for a scope and restores
// it after: how the tests force the library's environment switches.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// ---------------------------------------------------------------------------------------
// Random numbers: splitmix64, the same stream on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t s_;
};

// ---------------------------------------------------------------------------------------
// bfloat16 as the tests write it (the upper half of a float32), independently of the
// library's: rounding to nearest even from the float32 value, NaN kept a NaN.
inline uint16_t bf16_bits(double v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t lower = u & 0xffffu, upper = u >> 16;
  const bool up = lower > 0x8000u || (lower == 0x8000u && (upper & 1u));
  return static_cast<uint16_t>(upper + (up ? 1u : 0u));
}
inline double bf16_value(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE float16 as the tests write it, independently of the library's: the float32 value
// rounded to the nearest multiple of its binade's quantum (ties to even), subnormals
// included; past 65520 infinity; NaN kept a NaN.
inline uint16_t f16_bits(double v) {
  const float f = static_cast<float>(v);
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
  if (std::isnan(f)) return 0x7e00u;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00u;
  if (a == 0.0) return sign;
  const int e = std::max(static_cast<int>(std::floor(std::log2(a))), -14);
  const double m = std::nearbyint(std::ldexp(a, 10 - e));  // in [0, 2048]
  return static_cast<uint16_t>(sign | (((e + 14) << 10) + static_cast<int>(m)));
}
inline double f16_value(uint16_t bits) {
  const int exp = (bits >> 10) & 31, mant = bits & 0x3ff;
  const double sign = bits & 0x8000u ? -1.0 : 1.0;
  if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// A dense buffer in a plan's dtype, read and written as doubles. "Absent" buffers give a
// null pointer, which is how the API spells an optional argument that is not passed.
class Buf {
 public:
  Buf() = default;
  Buf(DataType dt, int64_t n, double fill = 0.0) : dt_(dt), present_(true) {
    if (dt == DataType::f32) {
      f_.assign(static_cast<size_t>(n), static_cast<float>(fill));
    } else if (dt == DataType::bf16) {
      h_.assign(static_cast<size_t>(n), bf16_bits(fill));
    } else if (dt == DataType::f16) {
      h_.assign(static_cast<size_t>(n), f16_bits(fill));
    } else {
      d_.assign(static_cast<size_t>(n), fill);
    }
  }
  bool present() const { return present_; }
  DataType dtype() const { return dt_; }
  int64_t size() const {
    return static_cast<int64_t>(dt_ == DataType::f32   ? f_.size()
                                : dt_ == DataType::f64 ? d_.size()
                                                       : h_.size());
  }
  void* data() {
    if (!present_) return nullptr;
    if (dt_ == DataType::bf16 || dt_ == DataType::f16) return h_.data();
    return dt_ == DataType::f32 ? static_cast<void*>(f_.data()) : static_cast<void*>(d_.data());
  }
  const void* data() const { return const_cast<Buf*>(this)->data(); }
  double get(int64_t i) const {
    switch (dt_) {
      case DataType::f32:
        return f_[i];
      case DataType::bf16:
        return bf16_value(h_[i]);
      case DataType::f16:
        return f16_value(h_[i]);
      case DataType::f64:
        break;
    }
    return d_[i];
  }
  void set(int64_t i, double v) {
    if (dt_ == DataType::f32) {
      f_[i] = static_cast<float>(v);
    } else if (dt_ == DataType::bf16) {
      h_[i] = bf16_bits(v);
    } else if (dt_ == DataType::f16) {
      h_[i] = f16_bits(v);
    } else {
      d_[i] = v;
    }
  }
  void fill(double v) {
    for (int64_t i = 0; i < size(); ++i) set(i, v);
  }
  std::vector<double> values() const {
    std::vector<double> v(size());
    for (int64_t i = 0; i < size(); ++i) v[i] = get(i);
    return v;
  }
  static Buf from(DataType dt, const std::vector<double>& v) {
    Buf b(dt, static_cast<int64_t>(v.size()));
    for (size_t i = 0; i < v.size(); ++i) b.set(static_cast<int64_t>(i), v[i]);
    return b;
  }

 private:
  DataType dt_ = DataType::f64;
  bool present_ = false;
  std::vector<float> f_;
  std::vector<double> d_;
  std::vector<uint16_t> h_;
};

// Raw bytes for a workspace or reserve, as an ordinary caller has them (the README passes
// a std::vector<std::byte>): aligned to 16 bytes and deliberately *not* to 32 or 64, so a
// backend that assumed more would fail here rather than by luck. The buffer ends exactly
// at the end of its allocation, so AddressSanitizer sees any access past `size`.
struct Bytes {
  explicit Bytes(size_t n, unsigned char fill = 0) : size(n) {
    void* raw = nullptr;
    if (posix_memalign(&raw, 64, n + kOffset) != 0) throw std::bad_alloc();
    raw_.reset(static_cast<unsigned char*>(raw));
    std::memset(raw_.get() + kOffset, fill, n);
  }
  size_t size;
  void* data() { return raw_.get() + kOffset; }
  const unsigned char* begin() const { return raw_.get() + kOffset; }
  const unsigned char* end() const { return begin() + size; }

 private:
  static constexpr size_t kOffset = 16;
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> raw_;
};

// ---------------------------------------------------------------------------------------
// The caller's sequence layouts, written from include/rnnx/sequence.hpp (not from
// src/core): where row (t, b) of x, y, dx, dy lives.
struct Geometry {
  Layout layout = Layout::time_major;
  int64_t T = 0;
  int64_t B = 0;
  std::vector<int64_t> lengths;     // [B], original batch order
  std::vector<int64_t> sorted_pos;  // packed: original b -> its column in batch_sizes order
  std::vector<int64_t> offsets;     // packed: first row of step t
  int64_t rows = 0;                 // rows of x and y

  bool real(int64_t t, int64_t b) const { return t < lengths[b]; }
  int64_t row(int64_t t, int64_t b) const {
    switch (layout) {
      case Layout::time_major:
        return t * B + b;
      case Layout::batch_first:
        return b * T + t;
      case Layout::packed:
        return offsets[t] + sorted_pos[b];
    }
    return -1;
  }
};

inline Geometry geometry_of(const SequenceShape& s) {
  Geometry g;
  g.layout = s.layout;
  if (s.layout == Layout::packed) {
    const auto& bs = s.batch_sizes;
    g.T = static_cast<int64_t>(bs.size());
    g.B = bs.at(0);
    g.lengths.assign(g.B, 0);
    g.sorted_pos.assign(g.B, 0);
    for (int64_t i = 0; i < g.B; ++i) {
      const int64_t b = s.sorted_indices.empty() ? i : s.sorted_indices[i];
      g.sorted_pos[b] = i;
      for (int64_t t = 0; t < g.T; ++t) g.lengths[b] += bs[t] > i ? 1 : 0;
    }
    g.offsets.assign(g.T + 1, 0);
    for (int64_t t = 0; t < g.T; ++t) g.offsets[t + 1] = g.offsets[t] + bs[t];
    g.rows = g.offsets[g.T];
  } else {
    g.T = s.max_seq_len;
    g.B = s.batch;
    g.lengths = s.lengths.empty() ? std::vector<int64_t>(g.B, g.T) : s.lengths;
    g.rows = g.T * g.B;
  }
  return g;
}

// PyTorch's pack_padded_sequence(enforce_sorted=False): sort by length, longest first.
// Ties are broken by *descending* batch index on purpose, a different order from the
// library's own stable sort. Without sorted_indices the lengths must already be
// non-increasing (enforce_sorted=True).
inline SequenceShape packed_shape(const std::vector<int64_t>& lengths, bool with_sorted_indices) {
  const int64_t B = static_cast<int64_t>(lengths.size());
  std::vector<int64_t> order(B);
  std::iota(order.begin(), order.end(), 0);
  if (with_sorted_indices) {
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return lengths[a] != lengths[b] ? lengths[a] > lengths[b] : a > b;
    });
  }
  const int64_t T = B > 0 ? lengths[order[0]] : 0;
  std::vector<int64_t> batch_sizes(T, 0);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t < lengths[order[i]]; ++t) ++batch_sizes[t];
  return SequenceShape::packed(batch_sizes, with_sorted_indices ? order : std::vector<int64_t>{});
}

// The same lengths in each of the three layouts.
enum class LayoutKind { time_major, batch_first, packed, packed_sorted_indices };
inline const char* tag(LayoutKind k) {
  switch (k) {
    case LayoutKind::time_major:
      return "tm";
    case LayoutKind::batch_first:
      return "bf";
    case LayoutKind::packed:
      return "packed";
    case LayoutKind::packed_sorted_indices:
      return "packedsi";
  }
  return "?";
}
inline SequenceShape make_shape(LayoutKind k, int64_t T, int64_t B, std::vector<int64_t> lengths) {
  switch (k) {
    case LayoutKind::time_major:
      return SequenceShape::padded(T, B, lengths, false);
    case LayoutKind::batch_first:
      return SequenceShape::padded(T, B, lengths, true);
    case LayoutKind::packed:
    case LayoutKind::packed_sorted_indices: {
      if (lengths.empty()) lengths.assign(B, T);
      return packed_shape(lengths, k == LayoutKind::packed_sorted_indices);
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------
// Problem data in logical form: per sequence (original batch order) rows [t][feature],
// and the state tensors [L*D][B][width]. Independent of the layout, so that one data set
// can be run through plans of different layouts and batch compositions.
using Seqs = std::vector<std::vector<double>>;

struct DataOptions {
  bool h0 = true, c0 = true;               // initial states given
  bool dy = true, dhy = true, dcy = true;  // output gradients given
};

struct Data {
  std::vector<int64_t> lengths;
  Seqs x;                      // [b][t * I + i]
  std::vector<double> h0, c0;  // empty = absent
  std::vector<double> w;
  Seqs dy;  // [b][t * D*P' + j]; empty = absent
  std::vector<double> dhy, dcy;
};

inline int64_t state_rows(const Config& c) {
  return c.num_layers * c.num_directions();
}
inline int64_t out_width(const Config& c) {
  return c.num_directions() * c.output_size();
}
inline bool is_lstm(const Config& c) {
  return c.cell == CellType::lstm;
}

// Weights uniform in +-1/sqrt(H) like PyTorch's reset_parameters; activations and
// gradients uniform in +-1.
inline std::vector<double> random_weights(const Config& c, Rng& rng) {
  const double k = 1.0 / std::sqrt(static_cast<double>(c.hidden_size));
  std::vector<double> w(WeightLayout(c).numel());
  for (double& v : w) v = rng.uniform(-k, k);
  return w;
}

inline Data make_data(const Config& c, const std::vector<int64_t>& lengths, uint64_t seed,
                      const DataOptions& o = {}) {
  Rng rng(seed);
  Data d;
  const int64_t B = static_cast<int64_t>(lengths.size());
  const int64_t P = c.output_size(), H = c.hidden_size, W = out_width(c), LD = state_rows(c);
  d.lengths = lengths;
  auto fill = [&](std::vector<double>& v, int64_t n) {
    v.resize(n);
    for (double& e : v) e = rng.uniform(-1.0, 1.0);
  };
  d.w = random_weights(c, rng);
  d.x.resize(B);
  for (int64_t b = 0; b < B; ++b) fill(d.x[b], lengths[b] * c.input_size);
  if (o.h0) fill(d.h0, LD * B * P);
  if (o.c0 && is_lstm(c)) fill(d.c0, LD * B * H);
  if (o.dy) {
    d.dy.resize(B);
    for (int64_t b = 0; b < B; ++b) fill(d.dy[b], lengths[b] * W);
  }
  if (o.dhy) fill(d.dhy, LD * B * P);
  if (o.dcy && is_lstm(c)) fill(d.dcy, LD * B * H);
  return d;
}

// The sequences `order[k]` of `d`, in that order, as a new batch.
inline Data select(const Config& c, const Data& d, const std::vector<int64_t>& order) {
  const int64_t B = static_cast<int64_t>(d.lengths.size()), Bn = static_cast<int64_t>(order.size());
  const int64_t LD = state_rows(c), P = c.output_size(), H = c.hidden_size;
  auto states = [&](const std::vector<double>& s, int64_t width) {
    if (s.empty()) return s;
    std::vector<double> r(LD * Bn * width);
    for (int64_t ld = 0; ld < LD; ++ld)
      for (int64_t k = 0; k < Bn; ++k)
        std::copy_n(s.begin() + (ld * B + order[k]) * width, width,
                    r.begin() + (ld * Bn + k) * width);
    return r;
  };
  Data r;
  r.w = d.w;
  for (int64_t b : order) {
    r.lengths.push_back(d.lengths[b]);
    r.x.push_back(d.x[b]);
    if (!d.dy.empty()) r.dy.push_back(d.dy[b]);
  }
  r.h0 = states(d.h0, P);
  r.c0 = states(d.c0, H);
  r.dhy = states(d.dhy, P);
  r.dcy = states(d.dcy, H);
  return r;
}

// Logical sequences -> the caller's layout; padding positions get `pad`.
inline Buf lay_out(const Geometry& g, DataType dt, const Seqs& seqs, int64_t width, double pad) {
  Buf buf(dt, g.rows * width, pad);
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t t = 0; t < g.lengths[b]; ++t)
      for (int64_t j = 0; j < width; ++j) buf.set(g.row(t, b) * width + j, seqs[b][t * width + j]);
  return buf;
}

// The caller's layout -> logical sequences (real positions only).
inline Seqs read_seqs(const Geometry& g, const Buf& buf, int64_t width) {
  Seqs s(g.B);
  for (int64_t b = 0; b < g.B; ++b) {
    s[b].resize(g.lengths[b] * width);
    for (int64_t t = 0; t < g.lengths[b]; ++t)
      for (int64_t j = 0; j < width; ++j) s[b][t * width + j] = buf.get(g.row(t, b) * width + j);
  }
  return s;
}

// Values of `buf` at padding positions (padded layouts; packed has none).
inline std::vector<double> padding_values(const Geometry& g, const Buf& buf, int64_t width) {
  std::vector<double> v;
  if (g.layout == Layout::packed) return v;
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t t = g.lengths[b]; t < g.T; ++t)
      for (int64_t j = 0; j < width; ++j) v.push_back(buf.get(g.row(t, b) * width + j));
  return v;
}

struct Tensors {
  Buf x, h0, c0, w, dy, dhy, dcy;
};

// The tensors of `d` for `plan`, in the plan's dtype and layout. x and dy padding hold
// x_pad and dy_pad (the contract says they are never read).
inline Tensors make_tensors(const Plan& plan, const Data& d, double x_pad = 0.0,
                            double dy_pad = 0.0) {
  const Config& c = plan.config();
  const Geometry g = geometry_of(plan.shape());
  EXPECT_EQ(g.lengths, d.lengths) << "test bug: data and plan disagree on lengths";
  Tensors t;
  const DataType dt = c.dtype;
  t.x = lay_out(g, dt, d.x, c.input_size, x_pad);
  if (!d.h0.empty()) t.h0 = Buf::from(dt, d.h0);
  if (!d.c0.empty()) t.c0 = Buf::from(dt, d.c0);
  t.w = Buf::from(dt, d.w);
  if (!d.dy.empty()) t.dy = lay_out(g, dt, d.dy, out_width(c), dy_pad);
  if (!d.dhy.empty()) t.dhy = Buf::from(dt, d.dhy);
  if (!d.dcy.empty()) t.dcy = Buf::from(dt, d.dcy);
  return t;
}

// ---------------------------------------------------------------------------------------
// Running a plan. Every output is pre-filled with a sentinel (NaN by default) so that an
// element the library forgot to write shows up in every comparison.
struct Results {
  Buf y, hy, cy;         // forward
  Buf dx, dh0, dc0, dw;  // backward (absent when not run or not asked for)
};

struct RunOptions {
  bool training = false;  // forced on when backward is asked for
  uint64_t dropout_counter = 0;
  bool backward = false;
  GradMode mode = GradMode::overwrite;
  std::vector<double> dw_init;  // initial dweights content (default: the sentinel)
  bool caller_workspace = false;
  unsigned char workspace_fill = 0xFF;  // caller workspace bytes (0xFF.. is a NaN pattern)
  double sentinel = kNaN;
  bool want_hy = true, want_cy = true;
  bool want_dx = true, want_dh0 = true, want_dc0 = true, want_dw = true;
  int backward_runs =
      1;  // backwards from the one reserve, one after the other (the last's results)
  // A device backend's plan: its tensors, workspace and reserve live in device memory
  // through these (tests/cuda/device_hooks.hpp); null for host backends.
  const struct DeviceHooks* device = nullptr;
};

// How run() moves a plan's buffers to a device and back.
struct DeviceHooks {
  void* (*allocate)(size_t bytes);
  void (*release)(void* p);
  void (*to_device)(void* dst, const void* src, size_t bytes);
  void (*to_host)(void* dst, const void* src, size_t bytes);
  void* stream = nullptr;  // ForwardArgs/BackwardArgs::stream
};

// The buffers of one run() where the plan wants them: host buffers as they are, or device
// copies (inputs uploaded, outputs uploaded with their sentinel and read back at the end).
class Placement {
 public:
  explicit Placement(const DeviceHooks* hooks) : hooks_(hooks) {}
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;
  ~Placement() {
    for (void* p : owned_) hooks_->release(p);
  }
  const void* in(const Buf& b) { return hooks_ ? upload(b) : b.data(); }
  void* out(Buf& b) {
    if (!hooks_ || !b.present()) return b.data();
    void* p = upload(b);
    outputs_.push_back({&b, p});
    return p;
  }
  // Scratch bytes (workspace, reserve) filled with `fill`.
  void* scratch(size_t n, unsigned char fill) {
    if (!hooks_) {
      bytes_.push_back(std::make_unique<Bytes>(n, fill));
      return bytes_.back()->data();
    }
    void* p = hooks_->allocate(n);
    owned_.push_back(p);
    std::vector<unsigned char> init(n, fill);
    hooks_->to_device(p, init.data(), n);
    return p;
  }
  // Copies the device outputs back into their host buffers.
  void read_back() {
    for (auto [b, p] : outputs_) hooks_->to_host(b->data(), p, bytes_of(*b));
    outputs_.clear();
  }
  void* stream() const { return hooks_ ? hooks_->stream : nullptr; }

 private:
  static size_t bytes_of(const Buf& b) {
    return static_cast<size_t>(b.size() * dtype_size(b.dtype()));
  }
  void* upload(const Buf& b) {
    if (!b.present()) return nullptr;
    const size_t n = bytes_of(b);
    void* p = hooks_->allocate(n);
    owned_.push_back(p);
    hooks_->to_device(p, b.data(), n);
    return p;
  }
  const DeviceHooks* hooks_;
  std::vector<void*> owned_;
  std::vector<std::pair<Buf*, void*>> outputs_;
  std::vector<std::unique_ptr<Bytes>> bytes_;
};

// `plan`: a Plan, or anything that answers as one (test_network.cpp's NetworkCall).
template <typename PlanLike>
Results run(PlanLike& plan, const Tensors& in, const RunOptions& o = {}) {
  const Config& c = plan.config();
  const DataType dt = c.dtype;
  const bool lstm = is_lstm(c);
  const bool training = o.training || o.backward;
  Results r;
  r.y = Buf(dt, plan.y_numel(), o.sentinel);
  if (o.want_hy) r.hy = Buf(dt, plan.h_numel(), o.sentinel);
  if (o.want_cy && lstm) r.cy = Buf(dt, plan.c_numel(), o.sentinel);
  if (o.backward) {
    if (o.want_dx) r.dx = Buf(dt, plan.x_numel(), o.sentinel);
    if (o.want_dh0) r.dh0 = Buf(dt, plan.h_numel(), o.sentinel);
    if (o.want_dc0 && lstm) r.dc0 = Buf(dt, plan.c_numel(), o.sentinel);
    if (o.want_dw) {
      r.dw =
          o.dw_init.empty() ? Buf(dt, plan.weights_numel(), o.sentinel) : Buf::from(dt, o.dw_init);
    }
  }
  Placement at(o.device);
  const size_t reserve_size = training ? plan.reserve_size() : 0;
  void* reserve = at.scratch(reserve_size, 0);
  const void* x = at.in(in.x);
  const void* h0 = at.in(in.h0);
  const void* c0 = at.in(in.c0);
  const void* w = at.in(in.w);
  {
    ForwardArgs a;
    a.x = x;
    a.h0 = h0;
    a.c0 = c0;
    a.weights = w;
    a.y = at.out(r.y);
    a.hy = at.out(r.hy);
    a.cy = at.out(r.cy);
    a.training = training;
    a.dropout_counter = o.dropout_counter;
    a.stream = at.stream();
    if (training) {
      a.reserve = reserve;
      a.reserve_size = reserve_size;
    }
    if (o.caller_workspace) {
      a.workspace_size = plan.forward_workspace_size(training);
      a.workspace = at.scratch(a.workspace_size, o.workspace_fill);
    }
    plan.forward(a);
  }
  if (o.backward) {
    BackwardArgs a;
    a.x = x;
    a.h0 = h0;
    a.c0 = c0;
    a.weights = w;
    a.dy = at.in(in.dy);
    a.dhy = at.in(in.dhy);
    a.dcy = at.in(in.dcy);
    a.dx = at.out(r.dx);
    a.dh0 = at.out(r.dh0);
    a.dc0 = at.out(r.dc0);
    a.dweights = at.out(r.dw);
    a.weight_grad_mode = o.mode;
    a.reserve = reserve;
    a.reserve_size = reserve_size;
    a.stream = at.stream();
    if (o.caller_workspace) {
      a.workspace_size = plan.backward_workspace_size();
      a.workspace = at.scratch(a.workspace_size, o.workspace_fill);
    }
    for (int k = 0; k < o.backward_runs; ++k) plan.backward(a);
  }
  at.read_back();
  return r;
}

// ---------------------------------------------------------------------------------------
// Whether a float32 problem's products run on bf16-rounded operands (math mode
// allow_conversion, from the config or RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION=1).
inline bool converts_to_bf16(const Config& c) {
  return c.dtype == DataType::f32 && resolved_math_mode(c) == MathMode::allow_conversion;
}

// Whether a derivative of the cell jumps somewhere: ReLU-like activations, HardSigmoid's
// corners, Elu with alpha != 1, and every clamp (gate, cell and projection clips). A value
// within bf16's error of such a point may land on the other side, which switches a whole
// gradient element; no tolerance covers that.
inline bool derivative_jumps(const Config& c) {
  if (c.cell == CellType::rnn_relu || c.gate_clip > 0.0 || c.cell_clip.enabled ||
      c.proj_clip.enabled) {
    return true;
  }
  for (int64_t d = 0; d < c.num_directions(); ++d) {
    for (const Activation& a : direction_activations(c, d)) {
      switch (a.kind) {
        case ActivationKind::relu:
        case ActivationKind::leaky_relu:
        case ActivationKind::thresholded_relu:
        case ActivationKind::hard_sigmoid:
          return true;
        case ActivationKind::elu:
          if (a.alpha != 1.0) return true;
          break;
        default:
          break;
      }
    }
  }
  return false;
}

// The bound every backend is held to (rnnx::error_bound, include/rnnx/error_bound.hpp):
// one definition for the C++ and Python tests and the PyTorch cross-check.
inline double tolerance(const Config& c, int64_t T, int64_t B, bool backward) {
  return rnnx::error_bound(c, T, B, backward, converts_to_bf16(c));
}

// The bound of a converting run in norm (rnnx::norm_error_bound, benchdnn's comparison of
// bf16 results): what the whole tensor may be off by, where tolerance() bounds each element.
inline double norm_tolerance(const Config& c, int64_t T, int64_t B, bool backward) {
  return rnnx::norm_error_bound(c, T, B, backward);
}

// |got - want| <= atol + rtol*|want| with rtol = tol and atol = tol * max(1, max|want|):
// the absolute part is relative to the tensor's scale, because an element that is small
// after cancellation carries the rounding error of its large terms. NaN matches NaN and
// infinities must match exactly.
inline ::testing::AssertionResult near(const std::string& what, const Buf& got, const Buf& want,
                                       double tol) {
  if (got.present() != want.present()) {
    return ::testing::AssertionFailure()
           << what << ": present " << got.present() << " vs " << want.present();
  }
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " vs " << want.size();
  }
  double scale = 1.0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (std::isfinite(want.get(i))) scale = std::max(scale, std::abs(want.get(i)));
  const double atol = tol * scale;
  int64_t bad = 0;
  double worst = 0.0;
  std::ostringstream os;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = got.get(i), b = want.get(i);
    bool ok;
    if (std::isnan(b) || std::isnan(a)) {
      ok = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(b) || std::isinf(a)) {
      ok = a == b;
    } else {
      ok = std::abs(a - b) <= atol + tol * std::abs(b);
      worst = std::max(worst, std::abs(a - b) / (atol + tol * std::abs(b)));
    }
    if (!ok) {
      if (bad < 6) os << "\n  [" << i << "] got " << a << " want " << b << " diff " << (a - b);
      ++bad;
    }
  }
  // RNNX_TEST_SHOW_MARGIN=1 prints how much of the tolerance each comparison used.
  static const bool show = std::getenv("RNNX_TEST_SHOW_MARGIN") != nullptr;
  if (show && tol > 0) std::fprintf(stderr, "margin %-10s %.3g\n", what.c_str(), worst);
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << want.size() << " elements differ (tol " << tol
         << ", atol " << atol << ", worst finite diff/allowed " << worst << ")" << os.str();
}

// Bitwise-equal values (NaN equal to NaN).
inline ::testing::AssertionResult identical(const std::string& what, const Buf& got,
                                            const Buf& want) {
  return near(what, got, want, 0.0);
}

inline ::testing::AssertionResult near_values(const std::string& what,
                                              const std::vector<double>& got,
                                              const std::vector<double>& want, double tol) {
  return near(what, Buf::from(DataType::f64, got), Buf::from(DataType::f64, want), tol);
}

// benchdnn's norm check: ||got - want||_2 / max(||want||_2, tiny) <= bound over the finite
// elements of `want`; a non-finite element must match exactly, as in near(). `base` (the
// initial content of accumulated weight gradients, or empty) is taken off both, so that
// what the run added is compared, not what the caller passed in.
inline ::testing::AssertionResult near_in_norm(const std::string& what, const Buf& got,
                                               const Buf& want, double bound,
                                               const std::vector<double>& base = {}) {
  if (got.present() != want.present() || got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": present " << got.present() << " vs " << want.present() << ", size "
           << got.size() << " vs " << want.size();
  }
  double diff2 = 0.0, want2 = 0.0;
  int64_t mismatched = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double off = base.empty() ? 0.0 : base[i];
    const double a = got.get(i), b = want.get(i);
    if (!std::isfinite(b) || !std::isfinite(a)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) ++mismatched;
      continue;
    }
    diff2 += (a - b) * (a - b);
    want2 += (b - off) * (b - off);
  }
  const double err =
      std::sqrt(diff2) / std::max(std::sqrt(want2), std::numeric_limits<double>::min());
  static const bool show = std::getenv("RNNX_TEST_SHOW_MARGIN") != nullptr;
  if (show)
    std::fprintf(stderr, "norm margin %-10s %.3g (%.3g of %.3g)\n", what.c_str(), err / bound, err,
                 bound);
  if (mismatched == 0 && err <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": relative 2-norm error " << err << " (bound " << bound << ", " << err / bound
         << " of it), " << mismatched << " non-finite elements differ";
}

// Calls f(name, got's tensor, want's tensor, whether it is a gradient) for each result
// tensor of a run, in one order: y, hy, cy, then dx, dh0, dc0, dweights.
template <typename F>
void for_each_result(const Results& got, const Results& want, F&& f) {
  f("y", got.y, want.y, false);
  f("hy", got.hy, want.hy, false);
  f("cy", got.cy, want.cy, false);
  f("dx", got.dx, want.dx, true);
  f("dh0", got.dh0, want.dh0, true);
  f("dc0", got.dc0, want.dc0, true);
  f("dweights", got.dw, want.dw, true);
}

// Whether two runs gave the same bits in every result tensor (NaN payloads included): what
// the determinism and concurrency tests require, where a tolerance would hide a race.
inline ::testing::AssertionResult results_identical(const Results& got, const Results& want) {
  std::ostringstream os;
  for_each_result(got, want, [&](const char* name, const Buf& a, const Buf& b, bool) {
    if (a.present() != b.present() || a.size() != b.size()) {
      os << " " << name << " (present/size differ)";
      return;
    }
    if (!a.present()) return;
    const size_t elem = static_cast<size_t>(dtype_size(a.dtype()));
    const auto* pa = static_cast<const char*>(a.data());
    const auto* pb = static_cast<const char*>(b.data());
    for (int64_t i = 0; i < a.size(); ++i) {
      if (std::memcmp(pa + i * elem, pb + i * elem, elem) != 0) {
        os << " " << name << " (first difference at element " << i << ": " << a.get(i) << " vs "
           << b.get(i) << ")";
        return;
      }
    }
  });
  if (os.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "results differ in" << os.str();
}

// Every result tensor both runs have, in norm: forward results within `bound_fwd`,
// gradients within `bound_bwd`; `dw_base` as near_in_norm's `base` for the weight gradients.
// The tensors named in `left_out` are not compared; those that fail are named in `failed`.
inline ::testing::AssertionResult results_near_in_norm(
    const Results& got, const Results& want, double bound_fwd, double bound_bwd,
    const std::vector<double>& dw_base = {}, const std::vector<std::string>& left_out = {},
    std::vector<std::string>* failed = nullptr) {
  std::ostringstream os;
  for_each_result(got, want, [&](const char* name, const Buf& a, const Buf& b, bool backward) {
    if (!a.present() && !b.present()) return;
    if (std::find(left_out.begin(), left_out.end(), name) != left_out.end()) return;
    const bool dw = &a == &got.dw;
    const ::testing::AssertionResult r = near_in_norm(name, a, b, backward ? bound_bwd : bound_fwd,
                                                      dw ? dw_base : std::vector<double>{});
    if (r) return;
    os << "\n  " << r.message();
    if (failed) failed->push_back(name);
  });
  if (os.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "in norm:" << os.str();
}

// Compares every result tensor both runs have.
inline void expect_results_near(const Results& got, const Results& want, double tol_fwd,
                                double tol_bwd, const std::string& where = "") {
  for_each_result(got, want, [&](const char* name, const Buf& a, const Buf& b, bool backward) {
    if (!a.present() && !b.present()) return;
    EXPECT_TRUE(near(where + name, a, b, backward ? tol_bwd : tol_fwd));
  });
}

// ---------------------------------------------------------------------------------------
// Backends.
inline PlanOptions backend_options(Backend b, int threads = 0) {
  PlanOptions o;
  o.backend = b;
  o.num_threads = threads;
  return o;
}

// The {gemm} part of a cpu plan's impl_name(), cpu:{isa}/{gemm}/...
inline std::string gemm_of(const std::string& impl) {
  const size_t a = impl.find('/');
  if (a == std::string::npos) return "";
  const size_t b = impl.find('/', a + 1);
  return impl.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
}

// What float64 plans run on in this build: its BLAS, else the plain loops (docs/cpu.md).
inline std::string float64_gemm() {
  return rnnx::cpu::have_blas() ? rnnx::cpu::library_gemm_name(false) : "plain";
}

// Whether the cpu backend exists in this build at all (until it lands, every cpu plan
// throws unsupported). Tests of the cpu backend skip when it does not; CpuBackend.Available
// fails instead, so a missing backend is never silent.
inline bool cpu_backend_available() {
  static const bool available = [] {
    Config c;
    c.input_size = 2;
    c.hidden_size = 3;
    try {
      Plan p(c, SequenceShape::padded(2, 1), backend_options(Backend::cpu));
      return true;
    } catch (const Error& e) {
      return e.code() != Status::unsupported;
    }
  }();
  return available;
}

// A run with RNNX_CPU_ISA=<level> (tests/CMakeLists.txt runs the cpu suites once per
// level) is meant for that level's kernels: on a machine without it, cpu tests skip rather
// than run a lower level again under its name. Empty when the run gets what it asks for.
inline std::string cpu_isa_not_available() {
  const char* want = std::getenv("RNNX_CPU_ISA");
  if (want == nullptr || *want == '\0') return "";
  std::string used;
  try {
    used = cpu_isa_used();
  } catch (const Error&) {
    return "";  // an unknown name: the cpu plans themselves refuse it
  }
  std::string w = want;
  for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (w == used) return "";
  return "RNNX_CPU_ISA=" + std::string(want) + " but this machine runs " + used;
}

#define RNNX_SKIP_UNLESS_AVAILABLE(backend)                                            \
  do {                                                                                 \
    if ((backend) == ::rnnx::Backend::cpu && !::rnnx_test::cpu_backend_available())    \
      GTEST_SKIP() << "cpu backend not built yet (every cpu plan throws unsupported)"; \
    if ((backend) == ::rnnx::Backend::cpu) {                                           \
      const std::string isa_skip = ::rnnx_test::cpu_isa_not_available();               \
      if (!isa_skip.empty()) GTEST_SKIP() << isa_skip;                                 \
    }                                                                                  \
  } while (0)

// f() throws rnnx::Error with `code` and a message holding every string of `message`.
inline void expect_error(const std::function<void()>& f, Status code,
                         const std::vector<std::string>& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << to_string(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << to_string(e.code()) << ": " << e.what();
    const std::string what = e.what();
    for (const std::string& s : message)
      EXPECT_NE(what.find(s), std::string::npos) << "message lacks '" << s << "': " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a " << typeid(e).name() << " instead of rnnx::Error: " << e.what();
  }
}

// Only [A-Za-z0-9_] in gtest names.
inline std::string sanitize(const std::string& s) {
  std::string r = s;
  for (char& ch : r)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return r;
}

inline std::string short_name(const Config& c) {
  std::string s = to_string(c.cell);
  if (c.cell == CellType::gru && !c.gru_linear_before_reset) s += "-orig";
  if (c.proj_size > 0) s += "-p" + std::to_string(c.proj_size);
  s += "_l" + std::to_string(c.num_layers) + (c.bidirectional ? "_bidir" : "_uni");
  if (c.cell_clip.enabled) s += "_cclip";
  if (c.proj_clip.enabled) s += "_pclip";
  if (c.dropout > 0) s += "_drop";
  s += c.dtype == DataType::f32 ? "_f32" : "_f64";
  return s;
}

// A small config builder for tests that loop over cells.
inline Config make_config(CellType cell, int64_t I, int64_t H, int64_t L, bool bidir,
                          DataType dt = DataType::f64, int64_t proj = 0, bool lbr = true) {
  Config c;
  c.cell = cell;
  c.input_size = I;
  c.hidden_size = H;
  c.num_layers = L;
  c.bidirectional = bidir;
  c.proj_size = proj;
  c.gru_linear_before_reset = lbr;
  c.dtype = dt;
  return c;
}

}  // namespace rnnx_test
