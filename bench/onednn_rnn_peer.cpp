// rnnx_onednn_peer: times oneDNN's own RNN primitives (vanilla RNN, LSTM with optional
// projection, GRU, linear-before-reset GRU; f32; uni- or bidirectional; multi-layer) on the
// padded batch T x B, in the modes of `rnnx bench` (infer, train, fwdbwd), with --dtype int8
// its int8 inference (u8 activations, s8 weights: the int8 peer of docs/int8.md), and with
// --gemm-peak measures the machine's large-GEMM peak (dnnl_sgemm, f32 and bf16 matmul).
// The case flags, lengths, FLOP count, names and timing are `rnnx bench`'s own (bench/case),
// and so is the JSON schema (docs/bench.md, bench/README.md).
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_case.hpp"
#include "bench_case_cli.hpp"

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

constexpr int kExitInvalid = 2;
constexpr int kExitUnsupported = 3;

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

using rnnx::bench::Mode;
using rnnx::bench::SplitMix64;
using json = nlohmann::ordered_json;

struct Options {
  rnnx::bench::CaseFlags case_flags;
  std::string modes = "infer";
  std::string threads = "1";
  std::string dtype = "float32";
  int repeat = 10;
  int warmup = 2;
  bool json = false;
  bool gemm_peak = false;
  int64_t gemm_size = 2048;
  std::string gemm_kinds = "sgemm,matmul-f32,matmul-bf16";
};

[[noreturn]] void usage_error(const std::string& msg) {
  throw std::invalid_argument(msg);
}

// Registers every flag on `app`; the checks that need all of them run after parsing.
void add_flags(CLI::App& app, Options& o) {
  rnnx::bench::add_case_flags(app, o.case_flags);
  app.add_option("--mode", o.modes, "infer, train, fwdbwd, or a comma-separated list")
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "Thread count or comma-separated list (0 = OpenMP default)")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype,
                 "float32, or int8 (inference only: oneDNN's u8/s8 RNN, static data quantisation)")
      ->check(CLI::IsMember({"float32", "int8"}))
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "Timed runs per measurement")->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed runs before the timed ones")->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object per line");
  app.add_flag("--gemm-peak", o.gemm_peak,
               "Time large GEMMs (the machine's peak) instead of a case");
  app.add_option("--gemm-size", o.gemm_size, "m = n = k of --gemm-peak")->capture_default_str();
  app.add_option("--gemm-kinds", o.gemm_kinds, "sgemm, matmul-f32, matmul-bf16 (comma-separated)")
      ->capture_default_str();
  app.callback([&app, &o] {
    if (!o.gemm_peak) rnnx::bench::require_case_flags(app);
  });
}

void check(const Options& o) {
  if (o.repeat < 1) usage_error("--repeat (= " + std::to_string(o.repeat) + ") must be >= 1");
  if (o.warmup < 0) usage_error("--warmup (= " + std::to_string(o.warmup) + ") must be >= 0");
  if (o.gemm_peak) {
    if (o.gemm_size < 1) usage_error("--gemm-size must be >= 1");
    return;
  }
  rnnx::bench::validate(o.case_flags.bench_case);
  if (o.dtype == "int8") {
    for (const Mode m : rnnx::bench::parse_modes(o.modes)) {
      if (m != Mode::infer) {
        usage_error(std::string("--dtype int8 runs inference only: --mode has '") +
                    rnnx::bench::to_string(m) + "'");
      }
    }
  }
}

// --threads with 0 resolved to the OpenMP default.
std::vector<int> thread_counts(const std::string& s) {
  std::vector<int> t = rnnx::bench::parse_threads(s);
  for (int& v : t) v = v == 0 ? omp_get_max_threads() : v;
  return t;
}

// Fills a buffer (any format) uniformly in [lo, hi); writing it is also its first touch.
void fill(const memory& m, double lo, double hi, SplitMix64& rng) {
  const size_t n = m.get_desc().get_size() / sizeof(float);
  rnnx::bench::fill_uniform(static_cast<float*>(m.get_data_handle()), static_cast<int64_t>(n), lo,
                            hi, rng);
}

void zero(const memory& m) {
  if (m) std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
}

// ---------------------------------------------------------------------------------------
// The RNN network as a chain of oneDNN primitives
// ---------------------------------------------------------------------------------------

// oneDNN gives every layer of a multi-layer primitive the same input width (SLC) and keeps
// the directions of a bidirectional stack apart between layers, which is not PyTorch's (and
// rnnx's) network. So one primitive ("stage") runs all layers only when the network is
// unidirectional and I == P'; otherwise each layer is its own single-layer primitive, as
// PyTorch's own oneDNN RNN path does.
struct Net {
  std::string cell;
  dnnl::algorithm kind;
  int64_t L, D, T, B, I, H, P, DIC, G, Gbias;
  bool lstm, proj;
  dnnl::rnn_direction dir;
  struct StageShape {
    int64_t layers, slc;
  };
  std::vector<StageShape> stages;
};

Net make_net(const rnnx::bench::BenchCase& c) {
  Net n;
  n.cell = c.cell;
  n.L = c.layers;
  n.D = c.directions();
  n.T = c.seq;
  n.B = c.batch;
  n.I = c.input;
  n.H = c.hidden;
  n.P = c.proj;
  n.DIC = c.output_size();
  n.lstm = c.cell == "lstm";
  n.proj = c.proj > 0;
  n.dir = c.bidirectional ? dnnl::rnn_direction::bidirectional_concat
                          : dnnl::rnn_direction::unidirectional_left2right;
  n.G = rnnx::bench::gates_per_cell(c.cell);
  // oneDNN's linear-before-reset GRU has a fourth bias, b_hn apart from b_in.
  if (c.cell == "lstm")
    n.kind = dnnl::algorithm::vanilla_lstm, n.Gbias = 4;
  else if (c.cell == "gru")
    n.kind = dnnl::algorithm::lbr_gru, n.Gbias = 4;
  else if (c.cell == "gru-orig")
    n.kind = dnnl::algorithm::vanilla_gru, n.Gbias = 3;
  else
    n.kind = dnnl::algorithm::vanilla_rnn, n.Gbias = 1;
  if (n.L > 1 && n.D == 1 && n.I == n.DIC) {
    n.stages.push_back({n.L, n.I});
  } else {
    for (int64_t l = 0; l < n.L; ++l) n.stages.push_back({1, l == 0 ? n.I : n.D * n.DIC});
  }
  return n;
}

memory::desc md(const memory::dims& d, tag t) {
  return memory::desc(d, dt::f32, t);
}

// The memory descriptors of one stage (format `any` for the weights).
struct StageMds {
  memory::desc src_layer, src_iter, src_iter_c, wl, wi, wp, bias, dst_layer, dst_iter, dst_iter_c;
};

StageMds stage_mds(const Net& n, const Net::StageShape& s) {
  StageMds m;
  const int64_t Ls = s.layers;
  m.src_layer = md({n.T, n.B, s.slc}, tag::tnc);
  m.src_iter = md({Ls, n.D, n.B, n.DIC}, tag::ldnc);
  m.wl = md({Ls, n.D, s.slc, n.G, n.H}, tag::any);
  m.wi = md({Ls, n.D, n.DIC, n.G, n.H}, tag::any);
  if (n.proj) m.wp = md({Ls, n.D, n.H, n.DIC}, tag::any);
  m.bias = md({Ls, n.D, n.Gbias, n.H}, tag::ldgo);
  m.dst_layer = md({n.T, n.B, n.D * n.DIC}, tag::tnc);
  m.dst_iter = md({Ls, n.D, n.B, n.DIC}, tag::ldnc);
  if (n.lstm) {
    m.src_iter_c = md({Ls, n.D, n.B, n.H}, tag::ldnc);
    m.dst_iter_c = md({Ls, n.D, n.B, n.H}, tag::ldnc);
  }
  return m;
}

dnnl_rnn_desc_t forward_desc(const Net& n, dnnl::prop_kind prop, const StageMds& m) {
  const memory::desc none;
  switch (n.kind) {
    case dnnl::algorithm::vanilla_lstm:
      return dnnl::lstm_forward::desc(prop, n.dir, m.src_layer, m.src_iter, m.src_iter_c, m.wl,
                                      m.wi, none, m.wp, m.bias, m.dst_layer, m.dst_iter,
                                      m.dst_iter_c)
          .data;
    case dnnl::algorithm::lbr_gru:
      return dnnl::lbr_gru_forward::desc(prop, n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                         m.dst_layer, m.dst_iter)
          .data;
    case dnnl::algorithm::vanilla_gru:
      return dnnl::gru_forward::desc(prop, n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                     m.dst_layer, m.dst_iter)
          .data;
    default:
      return dnnl::vanilla_rnn_forward::desc(prop,
                                             n.cell == "rnn_relu" ? dnnl::algorithm::eltwise_relu
                                                                  : dnnl::algorithm::eltwise_tanh,
                                             n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                             m.dst_layer, m.dst_iter)
          .data;
  }
}

dnnl_rnn_desc_t backward_desc(const Net& n, const StageMds& m) {
  const memory::desc none;
  const auto bwd = dnnl::prop_kind::backward;
  // Gradients take the same shapes (and, for the weights, `any`).
  const StageMds& d = m;
  switch (n.kind) {
    case dnnl::algorithm::vanilla_lstm:
      return dnnl::lstm_backward::desc(
                 bwd, n.dir, m.src_layer, m.src_iter, m.src_iter_c, m.wl, m.wi, none, m.wp, m.bias,
                 m.dst_layer, m.dst_iter, m.dst_iter_c, d.src_layer, d.src_iter, d.src_iter_c, d.wl,
                 d.wi, none, d.wp, d.bias, d.dst_layer, d.dst_iter, d.dst_iter_c)
          .data;
    case dnnl::algorithm::lbr_gru:
      return dnnl::lbr_gru_backward::desc(bwd, n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                          m.dst_layer, m.dst_iter, d.src_layer, d.src_iter, d.wl,
                                          d.wi, d.bias, d.dst_layer, d.dst_iter)
          .data;
    case dnnl::algorithm::vanilla_gru:
      return dnnl::gru_backward::desc(bwd, n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                      m.dst_layer, m.dst_iter, d.src_layer, d.src_iter, d.wl, d.wi,
                                      d.bias, d.dst_layer, d.dst_iter)
          .data;
    default:
      return dnnl::vanilla_rnn_backward::desc(bwd,
                                              n.cell == "rnn_relu" ? dnnl::algorithm::eltwise_relu
                                                                   : dnnl::algorithm::eltwise_tanh,
                                              n.dir, m.src_layer, m.src_iter, m.wl, m.wi, m.bias,
                                              m.dst_layer, m.dst_iter, d.src_layer, d.src_iter,
                                              d.wl, d.wi, d.bias, d.dst_layer, d.dst_iter)
          .data;
  }
}

// All buffers of the problem, allocated once and written once (first touch) before timing.
struct Tensors {
  // Activations: acts[0] = x, acts[s + 1] = output of stage s (the last is y); same for the
  // gradients (dacts[0] = dx, dacts.back() = dy).
  std::vector<memory> acts, dacts;
  // Per stage: states, their gradients, the weights in plain layouts, the bias, and the
  // weight gradients (allocated by the backward primitive descriptor's formats).
  struct Stage {
    memory h0, c0, hy, cy, dh0, dc0, dhy, dcy, wl, wi, wp, bias, dbias;
  };
  std::vector<Stage> st;
};

Tensors make_tensors(const Net& n, const dnnl::engine& eng, uint64_t seed) {
  Tensors t;
  SplitMix64 rng(seed + 1);
  const double k = 1.0 / std::sqrt(double(n.H));
  for (size_t s = 0; s <= n.stages.size(); ++s) {
    const int64_t c = s == 0 ? n.I : n.D * n.DIC;
    t.acts.emplace_back(md({n.T, n.B, c}, tag::tnc), eng);
    t.dacts.emplace_back(md({n.T, n.B, c}, tag::tnc), eng);
    fill(t.acts.back(), -1.0, 1.0, rng);
    fill(t.dacts.back(), -1.0, 1.0, rng);  // dy is the last; the others are overwritten
  }
  for (const auto& ss : n.stages) {
    Tensors::Stage s;
    const int64_t Ls = ss.layers;
    auto state = [&](int64_t c) {
      memory m(md({Ls, n.D, n.B, c}, tag::ldnc), eng);
      fill(m, -1.0, 1.0, rng);
      return m;
    };
    s.h0 = state(n.DIC), s.hy = state(n.DIC), s.dh0 = state(n.DIC), s.dhy = state(n.DIC);
    if (n.lstm) s.c0 = state(n.H), s.cy = state(n.H), s.dc0 = state(n.H), s.dcy = state(n.H);
    s.wl = memory(md({Ls, n.D, ss.slc, n.G, n.H}, tag::ldigo), eng);
    s.wi = memory(md({Ls, n.D, n.DIC, n.G, n.H}, tag::ldigo), eng);
    fill(s.wl, -k, k, rng);
    fill(s.wi, -k, k, rng);
    if (n.proj) {
      s.wp = memory(md({Ls, n.D, n.H, n.DIC}, tag::ldio), eng);
      fill(s.wp, -k, k, rng);
    }
    s.bias = memory(md({Ls, n.D, n.Gbias, n.H}, tag::ldgo), eng);
    fill(s.bias, -k, k, rng);
    s.dbias = memory(md({Ls, n.D, n.Gbias, n.H}, tag::ldgo), eng);
    zero(s.dbias);
    t.st.push_back(s);
  }
  return t;
}

// The weights in the format a primitive descriptor chose: reordered once, outside timing.
memory weights_for(const dnnl::primitive_desc& pd, int arg, const memory& user,
                   const dnnl::engine& eng, dnnl::stream& strm) {
  const memory::desc want = pd.query_md(dnnl::query::exec_arg_md, arg);
  if (want == user.get_desc()) return user;
  memory m(want, eng);
  dnnl::reorder(user, m).execute(strm, const_cast<memory&>(user), m);
  strm.wait();
  return m;
}

struct Step {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
};

struct Built {
  std::vector<Step> steps;  // executed in order
  std::string impl;
  size_t scratchpad_bytes = 0;  // the largest of the primitives (one buffer is shared)
  size_t workspace_bytes = 0;   // oneDNN training workspaces, all stages
  size_t extra_bytes = 0;       // intermediate layer outputs (and their gradients)
  memory scratchpad;            // shared by every step (they run one after the other)
};

void add_impl(std::string& all, const std::string& one) {
  if (all.find(one) != std::string::npos) return;
  all += all.empty() ? one : "+" + one;
}

// Builds the primitives of one mode: infer (forward_inference), train (forward_training),
// fwdbwd (forward_training then backward, stages in reverse).
Built build(const Net& n, Mode mode, Tensors& t, const dnnl::engine& eng, dnnl::stream& strm) {
  Built b;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const bool training = mode != Mode::infer;
  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  std::vector<dnnl::primitive_desc> fwd_pds, bwd_pds;
  std::vector<memory> workspaces;
  std::string fwd_impl, bwd_impl;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const StageMds m = stage_mds(n, n.stages[s]);
    const dnnl_rnn_desc_t fd = forward_desc(n, prop, m);
    dnnl::primitive_desc fpd(&fd, &attr, eng, nullptr);
    add_impl(fwd_impl, fpd.impl_info_str());
    b.scratchpad_bytes = std::max(b.scratchpad_bytes, fpd.scratchpad_desc().get_size());
    fwd_pds.push_back(fpd);
    memory ws;
    if (training) {
      ws = memory(fpd.workspace_desc(), eng);
      zero(ws);
      b.workspace_bytes += ws.get_desc().get_size();
    }
    workspaces.push_back(ws);
    if (mode == Mode::fwdbwd) {
      const dnnl_rnn_desc_t bd = backward_desc(n, m);
      dnnl::primitive_desc bpd(&bd, &attr, eng, fpd.get());
      add_impl(bwd_impl, bpd.impl_info_str());
      b.scratchpad_bytes = std::max(b.scratchpad_bytes, bpd.scratchpad_desc().get_size());
      bwd_pds.push_back(bpd);
    }
  }
  // Intermediate layer outputs: scratch for inference, kept for the backward when training;
  // their gradients are scratch of the backward.
  for (size_t s = 1; s < n.stages.size(); ++s) {
    b.extra_bytes += t.acts[s].get_desc().get_size();
    if (mode == Mode::fwdbwd) b.extra_bytes += t.dacts[s].get_desc().get_size();
  }
  b.scratchpad = memory(
      memory::desc({static_cast<int64_t>(std::max<size_t>(b.scratchpad_bytes, 1))}, dt::u8, tag::a),
      eng);
  zero(b.scratchpad);
  auto scratch_for = [&](const dnnl::primitive_desc& pd) {
    return memory(pd.scratchpad_desc(), eng, b.scratchpad.get_data_handle());
  };

  // What a stage's forward and backward primitives both take: activations, states, the
  // weights in the format `pd` asks for, the bias, the shared scratchpad.
  auto stage_args = [&](size_t s, const dnnl::primitive_desc& pd) {
    const auto& ts = t.st[s];
    std::unordered_map<int, memory> a;
    a[DNNL_ARG_SRC_LAYER] = t.acts[s];
    a[DNNL_ARG_DST_LAYER] = t.acts[s + 1];
    a[DNNL_ARG_SRC_ITER] = ts.h0;
    a[DNNL_ARG_DST_ITER] = ts.hy;
    if (n.lstm) a[DNNL_ARG_SRC_ITER_C] = ts.c0, a[DNNL_ARG_DST_ITER_C] = ts.cy;
    a[DNNL_ARG_WEIGHTS_LAYER] = weights_for(pd, DNNL_ARG_WEIGHTS_LAYER, ts.wl, eng, strm);
    a[DNNL_ARG_WEIGHTS_ITER] = weights_for(pd, DNNL_ARG_WEIGHTS_ITER, ts.wi, eng, strm);
    if (n.proj)
      a[DNNL_ARG_WEIGHTS_PROJECTION] =
          weights_for(pd, DNNL_ARG_WEIGHTS_PROJECTION, ts.wp, eng, strm);
    a[DNNL_ARG_BIAS] = ts.bias;
    a[DNNL_ARG_SCRATCHPAD] = scratch_for(pd);
    return a;
  };

  for (size_t s = 0; s < n.stages.size(); ++s) {
    Step st{dnnl::primitive(fwd_pds[s]), stage_args(s, fwd_pds[s])};
    if (training) st.args[DNNL_ARG_WORKSPACE] = workspaces[s];
    b.steps.push_back(std::move(st));
  }
  if (mode == Mode::fwdbwd) {
    for (size_t s = n.stages.size(); s-- > 0;) {
      auto& ts = t.st[s];
      const auto& pd = bwd_pds[s];
      Step st{dnnl::primitive(pd), stage_args(s, pd)};
      auto& a = st.args;
      a[DNNL_ARG_DIFF_SRC_LAYER] = t.dacts[s];
      a[DNNL_ARG_DIFF_DST_LAYER] = t.dacts[s + 1];
      a[DNNL_ARG_DIFF_SRC_ITER] = ts.dh0;
      a[DNNL_ARG_DIFF_DST_ITER] = ts.dhy;
      if (n.lstm) a[DNNL_ARG_DIFF_SRC_ITER_C] = ts.dc0, a[DNNL_ARG_DIFF_DST_ITER_C] = ts.dcy;
      a[DNNL_ARG_DIFF_BIAS] = ts.dbias;
      for (int arg : {DNNL_ARG_DIFF_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_ITER,
                      DNNL_ARG_DIFF_WEIGHTS_PROJECTION}) {
        if (arg == DNNL_ARG_DIFF_WEIGHTS_PROJECTION && !n.proj) continue;
        memory m(pd.query_md(dnnl::query::exec_arg_md, arg), eng);
        zero(m);
        a[arg] = m;
      }
      a[DNNL_ARG_WORKSPACE] = workspaces[s];
      b.steps.push_back(std::move(st));
    }
    b.impl = "fwd:" + fwd_impl + " bwd:" + bwd_impl;
  } else {
    b.impl = fwd_impl;
  }
  return b;
}

// ---------------------------------------------------------------------------------------
// int8 inference
// ---------------------------------------------------------------------------------------

// oneDNN's int8 RNN (2.x): u8 activations under one affine quantisation q = scale * x + shift,
// fixed when the primitive is built and shared by src_layer, src_iter, dst_iter and a u8
// dst_layer; s8 weights with one scale per gate and output channel, shared by W_layer and
// W_iter (and by the layers and directions of one primitive); f32 c states, bias and the last
// dst_layer. Static, so the scale comes from a calibration: here the data's known range,
// [-1, 1] for x (make_tensors) and for h (tanh, or the projection of such h). The dynamic
// peers and rnnx find their scales at every call; this peer is given them.
// A case this oneDNN cannot run in int8, or only with its reference loop.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Int8Quant {
  float data_scale = 127.5f, data_shift = 127.5f;
  std::vector<std::vector<float>> w_scales, p_scales;  // per stage: G*H, and DIC (projection)
};

constexpr int kGateOutputMask = (1 << 3) | (1 << 4);  // ldigo's g and o
constexpr int kProjOutputMask = 1 << 3;               // ldio's o

// 127 / max |w| per output channel over the given f32 ldigo (or ldio, G = 1) buffers.
std::vector<float> channel_scales(const std::vector<const memory*>& ws, int64_t channels) {
  std::vector<float> amax(static_cast<size_t>(channels), 0.0f);
  for (const memory* m : ws) {
    const auto* w = static_cast<const float*>(m->get_data_handle());
    const int64_t n = static_cast<int64_t>(m->get_desc().get_size() / sizeof(float));
    for (int64_t i = 0; i < n; ++i) {
      float& a = amax[static_cast<size_t>(i % channels)];
      a = std::max(a, std::fabs(w[i]));
    }
  }
  for (float& a : amax) a = a > 0.0f ? 127.0f / a : 1.0f;
  return amax;
}

Int8Quant int8_quant(const Net& n, const Tensors& t) {
  Int8Quant q;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const auto& ts = t.st[s];
    q.w_scales.push_back(channel_scales({&ts.wl, &ts.wi}, n.G * n.H));
    q.p_scales.push_back(n.proj ? channel_scales({&ts.wp}, n.DIC) : std::vector<float>{});
  }
  return q;
}

// q = scale * x + shift, rounded and saturated to [0, 255]: the caller's part of a static
// int8 RNN, timed with it (rnnx and the dynamic peers take float32 x too).
void quantize_u8(const memory& from, const memory& to, float scale, float shift) {
  const auto* x = static_cast<const float*>(from.get_data_handle());
  auto* q = static_cast<uint8_t*>(to.get_data_handle());
  const int64_t n = static_cast<int64_t>(to.get_desc().get_size());
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::min(255.0f, std::max(0.0f, x[i] * scale + shift));
    q[i] = static_cast<uint8_t>(static_cast<int>(v + 0.5f));
  }
}

struct Int8Built {
  Built b;
  memory x_u8;  // the timed run quantises t.acts[0] into it first
};

Int8Built build_int8(const Net& n, Tensors& t, const Int8Quant& q, const dnnl::engine& eng,
                     dnnl::stream& strm) {
  Int8Built r;
  Built& b = r.b;
  const auto u8 = dt::u8, f32 = dt::f32, s8 = dt::s8;
  std::vector<memory> acts_u8;  // stage inputs as u8: x, then every stage's output but the last
  acts_u8.emplace_back(memory::desc({n.T, n.B, n.I}, u8, tag::tnc), eng);
  std::vector<dnnl::primitive_desc> pds;
  std::vector<dnnl::primitive_attr> attrs;
  for (size_t s = 0; s < n.stages.size(); ++s) {
    const auto& ss = n.stages[s];
    const int64_t Ls = ss.layers;
    const bool last = s + 1 == n.stages.size();
    const memory::desc none;
    const memory::desc src_layer({n.T, n.B, ss.slc}, u8, tag::tnc),
        src_iter({Ls, n.D, n.B, n.DIC}, u8, tag::ldnc), c_iter({Ls, n.D, n.B, n.H}, f32, tag::ldnc),
        wl({Ls, n.D, ss.slc, n.G, n.H}, s8, tag::any), wi({Ls, n.D, n.DIC, n.G, n.H}, s8, tag::any),
        wp = n.proj ? memory::desc({Ls, n.D, n.H, n.DIC}, s8, tag::any) : none,
        bias({Ls, n.D, n.Gbias, n.H}, f32, tag::ldgo),
        dst_layer({n.T, n.B, n.D * n.DIC}, last ? f32 : u8, tag::tnc);
    // The quantisation, for the primitive and for the weights' reorders (which keep their
    // own scratchpad: only the primitive's is the caller's).
    // (dnnl::primitive_attr copies share one handle: two are built.)
    const auto quantised = [&] {
      dnnl::primitive_attr a;
      a.set_rnn_data_qparams(q.data_scale, q.data_shift);
      a.set_rnn_weights_qparams(kGateOutputMask, q.w_scales[s]);
      if (n.proj) a.set_rnn_weights_projection_qparams(kProjOutputMask, q.p_scales[s]);
      return a;
    };
    const dnnl::primitive_attr quant = quantised();
    dnnl::primitive_attr attr = quantised();
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto inf = dnnl::prop_kind::forward_inference;
    dnnl_rnn_desc_t d;
    switch (n.kind) {
      case dnnl::algorithm::vanilla_lstm:
        d = dnnl::lstm_forward::desc(inf, n.dir, src_layer, src_iter, c_iter, wl, wi, none, wp,
                                     bias, dst_layer, src_iter, c_iter)
                .data;
        break;
      case dnnl::algorithm::vanilla_gru:
        d = dnnl::gru_forward::desc(inf, n.dir, src_layer, src_iter, wl, wi, bias, dst_layer,
                                    src_iter)
                .data;
        break;
      default:
        throw Unsupported(std::string("oneDNN has no int8 ") + n.cell +
                          " (int8 RNN primitives: LSTM, LSTMP and the original GRU)");
    }
    dnnl::primitive_desc pd(&d, &attr, eng, nullptr);
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0) {
      // Its time would say nothing about the CPU: the peer's int8 path for this cell is the
      // reference loop.
      throw Unsupported("only oneDNN's reference kernel (" + impl + ") for int8 " + n.cell);
    }
    add_impl(b.impl, impl);
    b.scratchpad_bytes = std::max(b.scratchpad_bytes, pd.scratchpad_desc().get_size());
    pds.push_back(pd);
    attrs.push_back(quant);
    if (!last) acts_u8.emplace_back(memory::desc({n.T, n.B, n.D * n.DIC}, u8, tag::tnc), eng);
  }
  b.scratchpad = memory(
      memory::desc({static_cast<int64_t>(std::max<size_t>(b.scratchpad_bytes, 1))}, u8, tag::a),
      eng);
  zero(b.scratchpad);
  // The weights quantised and packed by reorders that carry the primitive's quantisation
  // (oneDNN folds the data shift's compensation into the packed weights), once, untimed.
  auto packed = [&](const dnnl::primitive_desc& pd, int arg, const memory& user,
                    const dnnl::primitive_attr& attr) {
    memory m(pd.query_md(dnnl::query::exec_arg_md, arg), eng);
    memory& src = const_cast<memory&>(user);
    dnnl::reorder(dnnl::reorder::primitive_desc(src, m, attr)).execute(strm, src, m);
    strm.wait();
    return m;
  };
  for (size_t s = 0; s < n.stages.size(); ++s) {
    auto& ts = t.st[s];
    const auto& pd = pds[s];
    const auto state_u8 = [&](const memory& from) {
      memory m(memory::desc(from.get_desc().dims(), u8, tag::ldnc), eng);
      quantize_u8(from, m, q.data_scale, q.data_shift);
      return m;
    };
    Step st{dnnl::primitive(pd), {}};
    auto& a = st.args;
    a[DNNL_ARG_SRC_LAYER] = acts_u8[s];
    a[DNNL_ARG_DST_LAYER] = s + 1 == n.stages.size() ? t.acts[s + 1] : acts_u8[s + 1];
    a[DNNL_ARG_SRC_ITER] = state_u8(ts.h0);
    a[DNNL_ARG_DST_ITER] = state_u8(ts.hy);
    if (n.lstm) a[DNNL_ARG_SRC_ITER_C] = ts.c0, a[DNNL_ARG_DST_ITER_C] = ts.cy;
    a[DNNL_ARG_WEIGHTS_LAYER] = packed(pd, DNNL_ARG_WEIGHTS_LAYER, ts.wl, attrs[s]);
    a[DNNL_ARG_WEIGHTS_ITER] = packed(pd, DNNL_ARG_WEIGHTS_ITER, ts.wi, attrs[s]);
    if (n.proj) {
      a[DNNL_ARG_WEIGHTS_PROJECTION] = packed(pd, DNNL_ARG_WEIGHTS_PROJECTION, ts.wp, attrs[s]);
    }
    a[DNNL_ARG_BIAS] = ts.bias;
    a[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng, b.scratchpad.get_data_handle());
    b.steps.push_back(std::move(st));
  }
  for (size_t s = 1; s < acts_u8.size(); ++s) b.extra_bytes += acts_u8[s].get_desc().get_size();
  r.x_u8 = acts_u8[0];
  return r;
}

std::string fmt_sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

// Relative 2-norm of a - b over b.
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<float> contents(const memory& m) {
  const auto* p = static_cast<const float*>(m.get_data_handle());
  return {p, p + m.get_desc().get_size() / sizeof(float)};
}

int run_rnn(const Options& o) {
  const rnnx::bench::BenchCase& c = o.case_flags.bench_case;
  const Net n = make_net(c);
  const std::vector<int64_t> lengths =
      rnnx::bench::make_lengths(o.case_flags.lengths, c.seq, c.batch, o.case_flags.seed);
  const int64_t real_tokens = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const int64_t padded_tokens = c.seq * c.batch;
  const std::string name = rnnx::bench::case_name(c, lengths);
  const std::vector<Mode> modes = rnnx::bench::parse_modes(o.modes);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  int status = 0;
  for (int threads : thread_counts(o.threads)) {
    omp_set_num_threads(threads);
    Tensors t = make_tensors(n, eng, o.case_flags.seed);
    for (const Mode mode : modes) {
      const char* mode_name = rnnx::bench::to_string(mode);
      try {
        const bool int8 = o.dtype == "int8";
        Built b;
        memory x_u8;
        Int8Quant q;
        std::vector<float> y32;
        if (int8) {
          // The float32 primitive's y on the same data first: the int8 error beside the time.
          Built f = build(n, mode, t, eng, strm);
          for (auto& s : f.steps) s.prim.execute(strm, s.args);
          strm.wait();
          y32 = contents(t.acts.back());
          q = int8_quant(n, t);
          Int8Built ib = build_int8(n, t, q, eng, strm);
          b = std::move(ib.b);
          x_u8 = ib.x_u8;
        } else {
          b = build(n, mode, t, eng, strm);
        }
        const auto run_once = [&] {
          if (x_u8) quantize_u8(t.acts[0], x_u8, q.data_scale, q.data_shift);
          for (auto& s : b.steps) s.prim.execute(strm, s.args);
          strm.wait();
        };
        const rnnx::bench::Timing tm = rnnx::bench::time_runs(o.warmup, o.repeat, run_once);
        const double err = int8 ? rel_error(contents(t.acts.back()), y32) : 0.0;
        const double flops = rnnx::bench::flops(c, mode, real_tokens);
        const double gflops = tm.median_ms > 0 ? flops / (tm.median_ms * 1e-3) / 1e9 : 0.0;
        const bool training = mode != Mode::infer;
        const size_t ws = b.scratchpad_bytes + (training ? 0 : b.extra_bytes);
        const size_t rs = training ? b.workspace_bytes + b.extra_bytes : 0;
        if (o.json) {
          json j = {{"problem", name},
                    {"backend", "onednn-rnn"},
                    {"impl", b.impl},
                    {"mode", mode_name},
                    {"threads", threads},
                    {"dtype", o.dtype},
                    {"lengths", o.case_flags.lengths},
                    {"seed", o.case_flags.seed},
                    {"tokens", padded_tokens},
                    {"padded_tokens", padded_tokens},
                    {"real_tokens", real_tokens},
                    {"repeat", o.repeat},
                    {"ms_median", tm.median_ms},
                    {"ms_min", tm.min_ms},
                    {"ms_max", tm.max_ms},
                    {"flops", flops},
                    {"gflops", gflops},
                    {"workspace_bytes", ws},
                    {"reserve_bytes", rs},
                    {"stages", n.stages.size()}};
          if (int8) {
            j["err_vs_float32"] = err;
            j["data_scale"] = q.data_scale;
            j["data_shift"] = q.data_shift;
          }
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf(
              "%s onednn-rnn %s %s %-6s threads=%d tokens=%lld (real %lld)  median %.3f ms "
              "(min %.3f, max %.3f)  %.2f GFLOP/s on real tokens  workspace %.2f MiB  "
              "reserve %.2f MiB%s\n",
              name.c_str(), o.dtype.c_str(), b.impl.c_str(), mode_name, threads,
              static_cast<long long>(padded_tokens), static_cast<long long>(real_tokens),
              tm.median_ms, tm.min_ms, tm.max_ms, gflops, ws / 1048576.0, rs / 1048576.0,
              int8 ? ("  err vs float32: y " + fmt_sci(err)).c_str() : "");
        }
      } catch (const std::exception& e) {
        // "valid, but oneDNN cannot do it" (its error, or an int8 cell it lacks): report and
        // go on with the other modes.
        if (!dynamic_cast<const dnnl::error*>(&e) && !dynamic_cast<const Unsupported*>(&e)) throw;
        status = kExitUnsupported;
        const std::string msg = std::string("oneDNN: ") + e.what();
        if (o.json) {
          const json j = {
              {"problem", name},    {"backend", "onednn-rnn"},         {"mode", mode_name},
              {"threads", threads}, {"lengths", o.case_flags.lengths}, {"error", msg}};
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf("%s onednn-rnn %s threads=%d: unsupported: %s\n", name.c_str(), mode_name,
                      threads, msg.c_str());
        }
        std::fprintf(stderr, "rnnx_onednn_peer: %s %s: %s\n", name.c_str(), mode_name, msg.c_str());
      }
      std::fflush(stdout);
    }
  }
  return status;
}

// ---------------------------------------------------------------------------------------
// GEMM peak
// ---------------------------------------------------------------------------------------

void print_gemm(const Options& o, const std::string& kind, int64_t m, int64_t nn, int64_t k,
                const rnnx::bench::Timing& tm, int threads, const std::string& impl) {
  const double gflops = 2.0 * double(m) * double(nn) * double(k) / (tm.median_ms * 1e-3) / 1e9;
  if (o.json) {
    const json j = {{"backend", "gemm-peak"},
                    {"kind", kind},
                    {"impl", impl},
                    {"m", m},
                    {"n", nn},
                    {"k", k},
                    {"threads", threads},
                    {"repeat", o.repeat},
                    {"ms_median", tm.median_ms},
                    {"ms_min", tm.min_ms},
                    {"ms_max", tm.max_ms},
                    {"gflops", gflops}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("gemm-peak %-12s %s m=n=k=%lld threads=%d  median %.3f ms  %.1f GFLOP/s\n",
                kind.c_str(), impl.c_str(), (long long)m, threads, tm.median_ms, gflops);
  }
  std::fflush(stdout);
}

// A GEMM kind that did not run: its reason, as a JSON record or a line.
void print_gemm_error(const Options& o, const std::string& kind, int threads,
                      const std::string& why) {
  if (o.json) {
    const json j = {{"backend", "gemm-peak"}, {"kind", kind}, {"threads", threads}, {"error", why}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("gemm-peak %s threads=%d: %s\n", kind.c_str(), threads, why.c_str());
  }
}

int run_gemm_peak(const Options& o) {
  const int64_t N = o.gemm_size;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  int status = 0;
  for (int threads : thread_counts(o.threads)) {
    omp_set_num_threads(threads);
    SplitMix64 rng(o.case_flags.seed + 1);
    memory a(md({N, N}, tag::ab), eng), w(md({N, N}, tag::ab), eng), c(md({N, N}, tag::ab), eng);
    fill(a, -1.0, 1.0, rng);
    fill(w, -1.0, 1.0, rng);
    zero(c);
    for (const auto& kind : rnnx::bench::split_list(o.gemm_kinds)) {
      try {
        if (kind == "sgemm") {
          const auto* pa = static_cast<const float*>(a.get_data_handle());
          const auto* pw = static_cast<const float*>(w.get_data_handle());
          auto* pc = static_cast<float*>(c.get_data_handle());
          const rnnx::bench::Timing tm = rnnx::bench::time_runs(o.warmup, o.repeat, [&] {
            if (dnnl_sgemm('N', 'N', N, N, N, 1.0f, pa, N, pw, N, 0.0f, pc, N) != dnnl_success)
              throw std::runtime_error("dnnl_sgemm failed");
          });
          print_gemm(o, kind, N, N, N, tm, threads, "dnnl_sgemm");
        } else if (kind == "matmul-f32" || kind == "matmul-bf16") {
          const dt in = kind == "matmul-f32" ? dt::f32 : dt::bf16;
          const memory::desc src_md({N, N}, in, tag::ab), w_md({N, N}, in, tag::any),
              dst_md({N, N}, dt::f32, tag::ab);
          dnnl::primitive_attr attr;
          attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
          dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_md, dst_md), attr, eng);
          const std::string impl = pd.impl_info_str();
          if (impl.rfind("ref", 0) == 0) {
            // A reference kernel says the CPU lacks the instructions; its time means nothing.
            print_gemm_error(o, kind, threads,
                             "only oneDNN's reference kernel (" + impl + "): not supported here");
            continue;
          }
          memory src = a, wt(pd.weights_desc(), eng), dst(pd.dst_desc(), eng);
          if (in != dt::f32) {
            src = memory(src_md, eng);
            dnnl::reorder(a, src).execute(strm, a, src);
          }
          dnnl::reorder(w, wt).execute(strm, w, wt);
          strm.wait();
          zero(dst);
          memory scratch(pd.scratchpad_desc(), eng);
          zero(scratch);
          dnnl::matmul mm(pd);
          const std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                                        {DNNL_ARG_WEIGHTS, wt},
                                                        {DNNL_ARG_DST, dst},
                                                        {DNNL_ARG_SCRATCHPAD, scratch}};
          const rnnx::bench::Timing tm = rnnx::bench::time_runs(o.warmup, o.repeat, [&] {
            mm.execute(strm, args);
            strm.wait();
          });
          print_gemm(o, kind, N, N, N, tm, threads, impl);
        } else {
          usage_error("--gemm-kinds: '" + kind + "' is not sgemm, matmul-f32 or matmul-bf16");
        }
      } catch (const dnnl::error& e) {
        // No implementation at all (bf16 on a CPU without AVX-512, as with a reference
        // kernel above): the CPU's limit, reported, not a failure of the run.
        if (e.status != dnnl_unimplemented) status = kExitUnsupported;
        print_gemm_error(o, kind, threads,
                         e.status == dnnl_unimplemented
                             ? std::string("oneDNN has no kernel for it on this CPU: ") + e.what()
                             : std::string("oneDNN: ") + e.what());
      }
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rnnx_onednn_peer: oneDNN's RNN primitives on a case of `rnnx bench`, or --gemm-peak "
      "(bench/README.md)"};
  app.name("rnnx_onednn_peer");
  Options o;
  add_flags(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "rnnx_onednn_peer: error: %s (see rnnx_onednn_peer --help)\n", e.what());
    return kExitInvalid;
  }
  try {
    check(o);
    return o.gemm_peak ? run_gemm_peak(o) : run_rnn(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rnnx_onednn_peer: error: %s (see rnnx_onednn_peer --help)\n", e.what());
    return kExitInvalid;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rnnx_onednn_peer: error: %s\n", e.what());
    return 1;
  }
}
