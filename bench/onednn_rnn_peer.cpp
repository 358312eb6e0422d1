// rnnx_onednn_peer: times oneDNN's own RNN primitives (vanilla RNN, LSTM with optional
// projection, GRU, linear-before-reset GRU; f32; uni- or bidirectional; multi-layer) on the
// padded batch T x B, in the modes of `rnnx bench` (infer, train, fwdbwd), and with
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
        Built b = build(n, mode, t, eng, strm);
        const rnnx::bench::Timing tm = rnnx::bench::time_runs(o.warmup, o.repeat, [&] {
          for (auto& s : b.steps) s.prim.execute(strm, s.args);
          strm.wait();
        });
        const double flops = rnnx::bench::flops(c, mode, real_tokens);
        const double gflops = tm.median_ms > 0 ? flops / (tm.median_ms * 1e-3) / 1e9 : 0.0;
        const bool training = mode != Mode::infer;
        const size_t ws = b.scratchpad_bytes + (training ? 0 : b.extra_bytes);
        const size_t rs = training ? b.workspace_bytes + b.extra_bytes : 0;
        if (o.json) {
          const json j = {{"problem", name},
                          {"backend", "onednn-rnn"},
                          {"impl", b.impl},
                          {"mode", mode_name},
                          {"threads", threads},
                          {"dtype", "float32"},
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
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf(
              "%s onednn-rnn %s %-6s threads=%d tokens=%lld (real %lld)  median %.3f ms "
              "(min %.3f, max %.3f)  %.2f GFLOP/s on real tokens  workspace %.2f MiB  "
              "reserve %.2f MiB\n",
              name.c_str(), b.impl.c_str(), mode_name, threads,
              static_cast<long long>(padded_tokens), static_cast<long long>(real_tokens),
              tm.median_ms, tm.min_ms, tm.max_ms, gflops, ws / 1048576.0, rs / 1048576.0);
        }
      } catch (const dnnl::error& e) {
        // "valid, but oneDNN cannot do it": report and go on with the other modes.
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
