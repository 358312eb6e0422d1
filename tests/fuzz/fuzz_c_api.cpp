// Fuzz target: the C API (include/rnnx/rnnx.h). Arbitrary calls of the config setters
// (sizes, clips, activations, enums out of range), a sequence description (padded or
// packed, lengths, batch_sizes, sorted_indices), plan creation on either backend, then on
// small plans a forward and a training forward + backward on buffers sized by the plan.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "c_calls.h"
#include "fuzz_common.hpp"
#include "rnnx/rnnx.h"

namespace {

using rnnx::fuzz::finding;
// A run is only attempted when every buffer together stays below this (bytes) and the
// work below kMaxWork multiply-adds, so that one input takes milliseconds.
constexpr int64_t kMaxBytes = 1 << 20;
constexpr int64_t kMaxWork = 4'000'000;
// Caller arrays (lengths, batch_sizes, sorted_indices) are passed only up to this length;
// a longer one would have to exist in the caller's memory for the call to be valid.
constexpr int64_t kMaxArray = 256;
// Shapes whose products fit in int64 but exceed this many elements are valid problems too
// large to build here; overflowing ones are still passed (rnnx must refuse them).
constexpr int64_t kMaxElements = int64_t{1} << 22;

int64_t size_value(FuzzedDataProvider& in) {
  static const int64_t kEdges[] = {-1,
                                   0,
                                   1,
                                   2,
                                   17,
                                   37,
                                   int64_t{1} << 31,
                                   int64_t{1} << 32,
                                   int64_t{1} << 40,
                                   int64_t{1} << 62,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min()};
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 6:
      return in.PickValueInArray(kEdges);
    case 7:
      return in.ConsumeIntegral<int64_t>();
    case 5:
      return in.ConsumeIntegralInRange<int64_t>(-3, 40);
    default:
      return in.ConsumeIntegralInRange<int64_t>(0, 9);
  }
}

double real_value(FuzzedDataProvider& in) {
  static const double kEdges[] = {0.0,
                                  -0.0,
                                  1.0,
                                  -1.0,
                                  0.5,
                                  1e300,
                                  -1e300,
                                  1e-310,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN()};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return in.PickValueInArray(kEdges);
    case 1:
      return in.ConsumeFloatingPoint<double>();
    default:
      return in.ConsumeFloatingPointInRange<double>(-4.0, 4.0);
  }
}

int enum_value(FuzzedDataProvider& in, int count) {
  return in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegral<int>()
                                                    : in.ConsumeIntegralInRange<int>(0, count - 1);
}

// Every status must be one the header lists, and a failure must leave a message.
void check_status(rnnx_status_t s, const char* call, bool may_fail = true) {
  switch (s) {
    case RNNX_STATUS_SUCCESS:
      return;
    case RNNX_STATUS_INVALID_ARGUMENT:
    case RNNX_STATUS_UNSUPPORTED:
      if (!may_fail) {
        finding(std::string(call) + " failed on valid arguments: " + rnnx_get_last_error_message());
      }
      if (rnnx_get_last_error_message()[0] == '\0') finding(std::string(call) + ": empty message");
      return;
    default:
      finding(std::string(call) + " returned " + rnnx_status_string(s) + ": " +
              rnnx_get_last_error_message());
  }
}

void apply_setter(FuzzedDataProvider& in, rnnx_config_t c) {
  const int op = in.ConsumeIntegralInRange<int>(0, 20);
  rnnx_status_t s = RNNX_STATUS_SUCCESS;
  switch (op) {
    case 0: {
      s = fuzz_config_set_cell(c, enum_value(in, 4));
      break;
    }
    case 1:
      s = rnnx_config_set_input_size(c, size_value(in));
      break;
    case 2:
      s = rnnx_config_set_hidden_size(c, size_value(in));
      break;
    case 3:
      s = rnnx_config_set_proj_size(c, size_value(in));
      break;
    case 4:
      s = rnnx_config_set_num_layers(c, size_value(in));
      break;
    case 5:
      s = rnnx_config_set_bidirectional(c, in.ConsumeIntegral<int>());
      break;
    case 6:
      s = rnnx_config_set_bias(c, in.ConsumeBool());
      break;
    case 7:
      s = rnnx_config_set_gru_linear_before_reset(c, in.ConsumeBool());
      break;
    case 8: {
      const int on = in.ConsumeBool();
      const double lo = real_value(in), hi = real_value(in);
      s = rnnx_config_set_cell_clip(c, on, lo, hi);
      break;
    }
    case 9: {
      const int on = in.ConsumeBool();
      const double lo = real_value(in), hi = real_value(in);
      s = rnnx_config_set_proj_clip(c, on, lo, hi);
      break;
    }
    case 10: {
      s = fuzz_config_set_clip_nan_policy(c, enum_value(in, 2));
      break;
    }
    case 11:
      s = rnnx_config_set_dropout(c, real_value(in));
      break;
    case 12:
      s = rnnx_config_set_seed(c, in.ConsumeIntegral<uint64_t>());
      break;
    case 13: {
      s = fuzz_config_set_dtype(c, enum_value(in, 2));
      break;
    }
    case 14: {
      s = fuzz_config_set_math_mode(c, enum_value(in, 3));
      break;
    }
    case 15:
      s = rnnx_config_set_padding_fill(c, real_value(in));
      break;
    case 16:
      s = rnnx_config_set_reverse(c, in.ConsumeBool());
      break;
    case 17:
      s = rnnx_config_set_peephole(c, in.ConsumeBool());
      break;
    case 18:
      s = rnnx_config_set_gate_clip(c, real_value(in));
      break;
    case 19:
      s = rnnx_config_set_input_forget(c, in.ConsumeBool());
      break;
    case 20: {
      // count is what the caller claims; the arrays always hold that many entries (up to a
      // cap; a larger claim with NULL arrays must be refused without reading).
      const int64_t count =
          in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 7) : size_value(in);
      const bool fits = count >= 0 && count <= kMaxArray;
      std::vector<int> kinds;
      std::vector<double> alpha, beta;
      for (int64_t k = 0; fits && k < count; ++k) {
        kinds.push_back(enum_value(in, 11));
        alpha.push_back(real_value(in));
        beta.push_back(real_value(in));
      }
      const bool with_alpha = in.ConsumeBool(), with_beta = in.ConsumeBool();
      s = fuzz_config_set_activations(c, fits ? kinds.data() : nullptr,
                                      fits && with_alpha ? alpha.data() : nullptr,
                                      fits && with_beta ? beta.data() : nullptr, count);
      break;
    }
  }
  check_status(s, "rnnx_config_set_*");
}

// The sequence description and the arrays it points into.
struct Shape {
  rnnx_sequence_desc_t desc;
  std::vector<int64_t> lengths, batch_sizes, sorted_indices;
};

void make_shape(FuzzedDataProvider& in, Shape& s) {
  const int layout = in.ConsumeIntegralInRange<int>(0, 12) == 0
                         ? in.ConsumeIntegral<int>()
                         : in.ConsumeIntegralInRange<int>(0, 2);
  if (layout == RNNX_LAYOUT_PACKED) {
    const int64_t steps = size_value(in);
    if (steps >= 0 && steps <= kMaxArray) {
      // Mostly non-increasing, as PyTorch's batch_sizes; sometimes anything.
      int64_t b = size_value(in);
      for (int64_t t = 0; t < steps; ++t) {
        s.batch_sizes.push_back(b);
        const bool shrink = in.ConsumeBool() && b > std::numeric_limits<int64_t>::min() + 2;
        b = shrink ? b - in.ConsumeIntegralInRange<int64_t>(0, 2) : size_value(in);
      }
    }
    const bool with_indices = in.ConsumeBool();
    if (with_indices && !s.batch_sizes.empty() && s.batch_sizes[0] >= 1 &&
        s.batch_sizes[0] <= kMaxArray) {
      for (int64_t i = 0; i < s.batch_sizes[0]; ++i) s.sorted_indices.push_back(i);
      for (int64_t i = 0; i < s.batch_sizes[0]; ++i) {  // a permutation, or not
        const int64_t j = in.ConsumeIntegralInRange<int64_t>(0, s.batch_sizes[0] - 1);
        if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
          s.sorted_indices[i] = size_value(in);
        else
          std::swap(s.sorted_indices[i], s.sorted_indices[j]);
      }
    }
    s.desc =
        rnnx_sequence_desc_packed(s.batch_sizes.empty() ? nullptr : s.batch_sizes.data(), steps,
                                  s.sorted_indices.empty() ? nullptr : s.sorted_indices.data());
    if (s.batch_sizes.empty() && steps > 0) s.desc.batch_sizes = nullptr;
  } else {
    const int64_t T = size_value(in), B = size_value(in);
    const bool with_lengths = in.ConsumeBool();
    if (with_lengths && B >= 0 && B <= kMaxArray) {
      for (int64_t b = 0; b < B; ++b) {
        s.lengths.push_back(in.ConsumeBool() && T >= 0 && T < kMaxArray
                                ? in.ConsumeIntegralInRange<int64_t>(0, T)
                                : size_value(in));
      }
    }
    s.desc = rnnx_sequence_desc_padded(T, B, s.lengths.empty() ? nullptr : s.lengths.data(),
                                       layout == RNNX_LAYOUT_BATCH_FIRST);
  }
  s.desc.layout = layout;
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) s.desc.reserved0 = in.ConsumeIntegral<int32_t>();
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    s.desc.struct_size = in.ConsumeIntegralInRange<size_t>(0, sizeof(s.desc));
  }
}

// Product of non-negative factors; false when it overflows int64.
bool product(std::initializer_list<int64_t> factors, int64_t& out) {
  out = 1;
  for (int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(out, f, &out)) return false;
  }
  return true;
}

// Sum of non-negative terms; false when it overflows int64.
bool sum(std::initializer_list<int64_t> terms, int64_t& out) {
  int64_t total = 0;
  for (int64_t t : terms) {
    if (t < 0 || __builtin_add_overflow(total, t, &total)) return false;
  }
  out = total;
  return true;
}

// A valid problem too large to build in a fuzzer run: none of rnnx's own size formulas
// (x bytes; T*B rows of the widest row per layer, as plan.cpp checks; the weight buffer,
// bounded as validate() bounds it) overflows, but one exceeds kMaxElements. Negative or
// overflowing sizes are not "too large": rnnx must refuse them itself, without allocating.
bool too_large(rnnx_config_t c, const Shape& s) {
  int64_t I = 0, H = 0, L = 0, P = 0;
  int bidir = 0;
  rnnx_config_get_input_size(c, &I);
  rnnx_config_get_hidden_size(c, &H);
  rnnx_config_get_num_layers(c, &L);
  rnnx_config_get_proj_size(c, &P);
  rnnx_config_get_bidirectional(c, &bidir);
  int64_t T = s.desc.max_seq_len, B = s.desc.batch;
  if (s.desc.layout == RNNX_LAYOUT_PACKED) {
    T = static_cast<int64_t>(s.batch_sizes.size());
    B = s.batch_sizes.empty() ? 0 : s.batch_sizes[0];
  }
  const int64_t D = bidir ? 2 : 1, Pp = P > 0 ? P : H;
  int64_t dp = 0, gdh = 0, x = 0, buffers = 0, per_dir = 0, weights = 0, hh = 0, hr = 0, small = 0;
  const bool sized = product({D, Pp}, dp) && product({D, 4, H}, gdh) && product({T, B, I, 8}, x) &&
                     product({T, B, std::max({I, dp, gdh}), L, 32}, buffers) &&
                     product({4, H, Pp}, hh) && product({Pp, H}, hr) &&
                     product({4, H, std::max(I, dp)}, per_dir) && product({11, H}, small) &&
                     sum({per_dir, hh, hr, small}, per_dir) && product({L, D, per_dir}, weights);
  if (!sized) return false;
  return x > kMaxElements || buffers > 32 * kMaxElements || weights > kMaxElements;
}

// Deterministic small values (no fuzz bytes spent on bulk data), with NaN sometimes.
void fill(std::vector<unsigned char>& buf, bool f64, uint32_t seed, bool with_nan) {
  const size_t n = buf.size() / (f64 ? 8 : 4);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    double v = (static_cast<double>(x % 2001) - 1000.0) / 2000.0;
    if (with_nan && x % 97 == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (f64) {
      std::memcpy(buf.data() + i * 8, &v, 8);
    } else {
      const float f = static_cast<float>(v);
      std::memcpy(buf.data() + i * 4, &f, 4);
    }
  }
}

void run_plan(FuzzedDataProvider& in, rnnx_plan_t plan, rnnx_config_t config) {
  int64_t xn = 0, yn = 0, hn = 0, cn = 0, wn = 0, tokens = 0;
  check_status(rnnx_plan_get_x_numel(plan, &xn), "get_x_numel", false);
  check_status(rnnx_plan_get_y_numel(plan, &yn), "get_y_numel", false);
  check_status(rnnx_plan_get_h_numel(plan, &hn), "get_h_numel", false);
  check_status(rnnx_plan_get_c_numel(plan, &cn), "get_c_numel", false);
  check_status(rnnx_plan_get_weights_numel(plan, &wn), "get_weights_numel", false);
  check_status(rnnx_plan_get_tokens(plan, &tokens), "get_tokens", false);
  size_t ws_inf = 0, ws_train = 0, ws_back = 0, reserve = 0;
  check_status(rnnx_plan_get_workspace_size(plan, RNNX_PHASE_FORWARD_INFERENCE, &ws_inf), "ws",
               false);
  check_status(rnnx_plan_get_workspace_size(plan, RNNX_PHASE_FORWARD_TRAINING, &ws_train), "ws",
               false);
  check_status(rnnx_plan_get_workspace_size(plan, RNNX_PHASE_BACKWARD, &ws_back), "ws", false);
  check_status(rnnx_plan_get_reserve_size(plan, &reserve), "reserve", false);
  const char* name = nullptr;
  check_status(rnnx_plan_get_impl_name(plan, &name), "impl_name", false);
  check_status(rnnx_plan_get_problem_name(plan, &name), "problem_name", false);
  int64_t count = 0;
  check_status(rnnx_plan_get_weight_param_count(plan, &count), "param_count", false);
  for (int64_t k = 0; k < count && k < 64; ++k) {
    int64_t off = 0, rows = 0, cols = 0;
    check_status(rnnx_plan_get_weight_param_by_index(plan, k, &name, &off, &rows, &cols),
                 "param_by_index", false);
    if (off < 0 || rows < 0 || cols < 0 || off + rows * cols > wn)
      finding("weight param out of range");
  }
  for (int64_t v : {xn, yn, hn, cn, wn, tokens}) {
    if (v < 0) finding("a plan reported a negative size");
  }
  rnnx_dtype_t dtype = RNNX_DTYPE_FLOAT32;
  check_status(rnnx_config_get_dtype(config, &dtype), "get_dtype", false);
  const bool f64 = dtype == RNNX_DTYPE_FLOAT64;
  const int64_t es = f64 ? 8 : 4;
  int64_t work = 0;
  const int64_t sum = 2 * (xn + yn + 2 * hn + 2 * cn + wn);  // values and their gradients
  if (sum > kMaxBytes || static_cast<int64_t>(ws_inf + ws_train + ws_back + reserve) > kMaxBytes ||
      sum * es > kMaxBytes)
    return;
  if (!product({tokens, wn}, work) || work > kMaxWork) return;

  using Buf = std::vector<unsigned char>;
  const bool with_nan = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  Buf x(xn * es), w(wn * es), h0(hn * es), c0(cn * es), y(yn * es), hy(hn * es), cy(cn * es);
  fill(x, f64, 1, with_nan);
  fill(w, f64, 2, false);
  fill(h0, f64, 3, false);
  fill(c0, f64, 4, false);
  const bool give_h0 = in.ConsumeBool(), give_c0 = in.ConsumeBool(), give_ws = in.ConsumeBool();
  Buf ws(std::max({ws_inf, ws_train, ws_back}));
  Buf res(reserve);

  rnnx_forward_args_t f = rnnx_forward_args_init();
  f.x = x.data();
  f.weights = w.data();
  f.y = y.data();
  f.h0 = give_h0 ? h0.data() : nullptr;
  f.c0 = give_c0 && cn > 0 ? c0.data() : nullptr;
  f.hy = in.ConsumeBool() ? hy.data() : nullptr;
  f.cy = in.ConsumeBool() && cn > 0 ? cy.data() : nullptr;
  f.workspace = give_ws ? ws.data() : nullptr;
  f.workspace_size = give_ws ? ws.size() : 0;
  f.dropout_counter = in.ConsumeIntegral<uint64_t>();
  check_status(rnnx_plan_forward(plan, &f), "forward (inference)", false);

  f.training = 1;
  f.reserve = res.data();
  f.reserve_size = res.size();
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0 && reserve > 0) {  // too small: refused
    f.reserve_size = reserve - 1;
    if (rnnx_plan_forward(plan, &f) != RNNX_STATUS_INVALID_ARGUMENT) {
      finding("a training forward with a reserve 1 byte short was not refused");
    }
    f.reserve_size = res.size();
  }
  check_status(rnnx_plan_forward(plan, &f), "forward (training)", false);

  Buf dy(yn * es), dhy(hn * es), dcy(cn * es), dx(xn * es), dh0(hn * es), dc0(cn * es), dw(wn * es);
  fill(dy, f64, 5, false);
  fill(dhy, f64, 6, false);
  fill(dcy, f64, 7, false);
  rnnx_backward_args_t b = rnnx_backward_args_init();
  b.x = x.data();
  b.h0 = f.h0;
  b.c0 = f.c0;
  b.weights = w.data();
  b.dy = in.ConsumeBool() ? dy.data() : nullptr;
  b.dhy = in.ConsumeBool() ? dhy.data() : nullptr;
  b.dcy = in.ConsumeBool() && cn > 0 ? dcy.data() : nullptr;
  b.dx = in.ConsumeBool() ? dx.data() : nullptr;
  b.dh0 = in.ConsumeBool() ? dh0.data() : nullptr;
  b.dc0 = in.ConsumeBool() && cn > 0 ? dc0.data() : nullptr;
  b.dweights = in.ConsumeBool() ? dw.data() : nullptr;
  b.weight_grad_mode = in.ConsumeBool() ? RNNX_GRAD_MODE_ACCUMULATE : RNNX_GRAD_MODE_OVERWRITE;
  b.workspace = give_ws ? ws.data() : nullptr;
  b.workspace_size = give_ws ? ws.size() : 0;
  b.reserve = res.data();
  b.reserve_size = res.size();
  check_status(rnnx_plan_backward(plan, &b), "backward", false);

  // ONNX import into the plan's weights: W, R, B, P sized as rnnx.h says, for one layer.
  int64_t I = 0, H = 0, P = 0, L = 0;
  int bidir = 0, bias = 0, peephole = 0;
  rnnx_cell_t cell = RNNX_CELL_LSTM;
  rnnx_config_get_input_size(config, &I);
  rnnx_config_get_hidden_size(config, &H);
  rnnx_config_get_proj_size(config, &P);
  rnnx_config_get_num_layers(config, &L);
  rnnx_config_get_bidirectional(config, &bidir);
  rnnx_config_get_bias(config, &bias);
  rnnx_config_get_peephole(config, &peephole);
  rnnx_config_get_cell(config, &cell);
  const int64_t D = bidir ? 2 : 1;
  const int64_t G = cell == RNNX_CELL_LSTM ? 4 : cell == RNNX_CELL_GRU ? 3 : 1;
  const int64_t layer = in.ConsumeIntegralInRange<int64_t>(-1, L);
  const int64_t in_width = std::max(I, D * H);
  std::vector<double> Wo(D * G * H * in_width, 0.25), Ro(D * G * H * H, -0.25),
      Bo(D * 2 * G * H, 0.5), Po(D * 3 * H, 0.125);
  const bool give_b = in.ConsumeBool(), give_p = in.ConsumeBool();
  const rnnx_status_t s =
      rnnx_plan_import_onnx_layer(plan, layer, Wo.data(), Ro.data(), give_b ? Bo.data() : nullptr,
                                  give_p ? Po.data() : nullptr, w.data());
  const bool valid =
      layer >= 0 && layer < L && P == 0 && (!give_b || bias) && (!give_p || peephole);
  check_status(s, "rnnx_plan_import_onnx_layer", !valid);
  if (s == RNNX_STATUS_SUCCESS && !valid)
    finding("rnnx_plan_import_onnx_layer accepted invalid input");
}

// The same batch on a network (issue 45): a network takes the config and options the plan
// took, asks the plan's sizes for its shape, and gives the plan's bits, also from the copy
// of the packed weights it keeps from the third call of a weights version on.
void run_network(FuzzedDataProvider& in, rnnx_config_t config, const rnnx_sequence_desc_t& desc,
                 int backend, int threads, rnnx_plan_t plan) {
  rnnx_network_t net = nullptr;
  const rnnx_status_t s = fuzz_network_create(&net, config, backend, threads);
  check_status(s, "rnnx_network_create");
  if (s != RNNX_STATUS_SUCCESS || net == nullptr) {
    finding("a network refused the config and options a plan took");
    return;
  }
  size_t plan_sizes[2] = {0, 0}, sizes[2] = {0, 0};
  rnnx_plan_get_reserve_size(plan, &plan_sizes[0]);
  rnnx_plan_get_workspace_size(plan, RNNX_PHASE_FORWARD_INFERENCE, &plan_sizes[1]);
  check_status(rnnx_network_get_reserve_size(net, &desc, &sizes[0]), "network reserve", false);
  check_status(rnnx_network_get_workspace_size(net, &desc, RNNX_PHASE_FORWARD_INFERENCE, &sizes[1]),
               "network workspace", false);
  if (sizes[0] != plan_sizes[0] || sizes[1] != plan_sizes[1])
    finding("a network's sizes differ from the plan's");
  int64_t xn = 0, yn = 0, wn = 0, tokens = 0;
  rnnx_plan_get_x_numel(plan, &xn);
  rnnx_plan_get_y_numel(plan, &yn);
  rnnx_plan_get_weights_numel(plan, &wn);
  rnnx_plan_get_tokens(plan, &tokens);
  rnnx_dtype_t dtype = RNNX_DTYPE_FLOAT32;
  rnnx_config_get_dtype(config, &dtype);
  const int64_t es = dtype == RNNX_DTYPE_FLOAT64 ? 8 : dtype == RNNX_DTYPE_FLOAT32 ? 4 : 2;
  int64_t work = 0;
  if ((xn + 2 * yn + wn) * es <= kMaxBytes && static_cast<int64_t>(sizes[1]) <= kMaxBytes &&
      product({tokens, wn}, work) && work <= kMaxWork) {
    using Buf = std::vector<unsigned char>;
    Buf x(xn * es), w(wn * es), want(yn * es), got(yn * es);
    fill(x, es == 8, 1, false);
    fill(w, es == 8, 2, false);
    rnnx_forward_args_t f = rnnx_forward_args_init();
    f.x = x.data();
    f.weights = w.data();
    f.y = want.data();
    check_status(rnnx_plan_forward(plan, &f), "plan forward (for the network)", false);
    f.y = got.data();
    f.weights_version = in.ConsumeIntegral<uint64_t>();
    for (int k = 0; k < 3; ++k) {
      check_status(rnnx_network_forward(net, &desc, &f), "network forward", false);
      if (got != want) finding("a network's forward differs from the plan's");
    }
  }
  check_status(rnnx_network_destroy(net), "rnnx_network_destroy", false);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rnnx::fuzz::set_up_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  rnnx_config_t config = nullptr;
  check_status(rnnx_config_create(&config), "rnnx_config_create", false);
  // A usable start (PyTorch's LSTM with small sizes), then arbitrary changes.
  rnnx_config_set_input_size(config, 3);
  rnnx_config_set_hidden_size(config, 4);
  const int setters = in.ConsumeIntegralInRange<int>(0, 16);
  for (int k = 0; k < setters && in.remaining_bytes() > 0; ++k) apply_setter(in, config);
  check_status(rnnx_config_validate(config), "rnnx_config_validate");

  Shape shape;
  make_shape(in, shape);
  const int backend = in.ConsumeIntegralInRange<int>(0, 15) == 0
                          ? in.ConsumeIntegral<int>()
                          : in.ConsumeIntegralInRange<int>(0, 1);
  static const int kThreads[] = {1, 1, 1, 1, 0, 2, -1};
  const int threads = in.PickValueInArray(kThreads);
  if (!too_large(config, shape)) {
    rnnx_plan_t plan = nullptr;
    const rnnx_status_t s = fuzz_plan_create(&plan, config, &shape.desc, backend, threads);
    check_status(s, "rnnx_plan_create");
    if ((s == RNNX_STATUS_SUCCESS) != (plan != nullptr))
      finding("plan handle does not match status");
    if (plan != nullptr) run_plan(in, plan, config);
    if (plan != nullptr) run_network(in, config, shape.desc, backend, threads, plan);
    check_status(rnnx_plan_destroy(plan), "rnnx_plan_destroy", false);
  }
  check_status(rnnx_config_destroy(config), "rnnx_config_destroy", false);
  return 0;
}
