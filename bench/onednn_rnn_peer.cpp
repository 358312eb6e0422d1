// rnnx_onednn_peer: times oneDNN's own RNN primitives (vanilla RNN, LSTM with optional
// projection, GRU, linear-before-reset GRU; f32; uni- or bidirectional; multi-layer) on the
// padded batch T x B, in the modes of `rnnx bench` (infer, train, fwdbwd), and with
// --gemm-peak measures the machine's large-GEMM peak (dnnl_sgemm, f32 and bf16 matmul).
// The problem flags and the JSON schema follow `rnnx bench` (docs/bench.md, bench/README.md).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

constexpr int kExitInvalid = 2;
constexpr int kExitUnsupported = 3;

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

struct Options {
  std::string cell = "lstm";
  int64_t layers = 1;
  bool bidirectional = false;
  int64_t input = 0;
  int64_t hidden = 0;
  int64_t proj = 0;
  int64_t batch = 0;
  int64_t seq = 0;
  std::string lengths = "full";
  uint64_t seed = 0;
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

const char* kUsage =
    "usage: rnnx_onednn_peer --cell lstm|gru|gru-orig|rnn_tanh|rnn_relu --input I --hidden H\n"
    "                        --batch B --seq T [--layers N] [--bidirectional] [--proj P]\n"
    "                        [--lengths full|uniform|longtail|FILE] [--seed S]\n"
    "                        [--mode infer|train|fwdbwd[,...]] [--threads N[,...]]\n"
    "                        [--repeat N] [--warmup N] [--json]\n"
    "       rnnx_onednn_peer --gemm-peak [--gemm-size N] [--gemm-kinds "
    "sgemm,matmul-f32,matmul-bf16]\n"
    "                        [--threads N[,...]] [--repeat N] [--warmup N] [--json]\n";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> items;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

int64_t parse_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') usage_error(flag + " '" + v + "' is not an integer");
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--cell")
      o.cell = value();
    else if (a == "--layers")
      o.layers = parse_int(a, value());
    else if (a == "--bidirectional")
      o.bidirectional = true;
    else if (a == "--input")
      o.input = parse_int(a, value());
    else if (a == "--hidden")
      o.hidden = parse_int(a, value());
    else if (a == "--proj")
      o.proj = parse_int(a, value());
    else if (a == "--batch")
      o.batch = parse_int(a, value());
    else if (a == "--seq")
      o.seq = parse_int(a, value());
    else if (a == "--lengths")
      o.lengths = value();
    else if (a == "--seed")
      o.seed = static_cast<uint64_t>(parse_int(a, value()));
    else if (a == "--mode")
      o.modes = value();
    else if (a == "--threads")
      o.threads = value();
    else if (a == "--repeat")
      o.repeat = static_cast<int>(parse_int(a, value()));
    else if (a == "--warmup")
      o.warmup = static_cast<int>(parse_int(a, value()));
    else if (a == "--json")
      o.json = true;
    else if (a == "--gemm-peak")
      o.gemm_peak = true;
    else if (a == "--gemm-size")
      o.gemm_size = parse_int(a, value());
    else if (a == "--gemm-kinds")
      o.gemm_kinds = value();
    else
      usage_error("unknown argument '" + a + "'");
  }
  if (o.repeat < 1) usage_error("--repeat (= " + std::to_string(o.repeat) + ") must be >= 1");
  if (o.warmup < 0) usage_error("--warmup (= " + std::to_string(o.warmup) + ") must be >= 0");
  if (o.gemm_peak) {
    if (o.gemm_size < 1) usage_error("--gemm-size must be >= 1");
    return o;
  }
  const std::set<std::string> cells = {"lstm", "gru", "gru-orig", "rnn_tanh", "rnn_relu"};
  if (!cells.count(o.cell))
    usage_error("--cell '" + o.cell + "' is not one of lstm, gru, gru-orig, rnn_tanh, rnn_relu");
  if (o.input < 1) usage_error("--input (= " + std::to_string(o.input) + ") must be >= 1");
  if (o.hidden < 1) usage_error("--hidden (= " + std::to_string(o.hidden) + ") must be >= 1");
  if (o.batch < 1) usage_error("--batch (= " + std::to_string(o.batch) + ") must be >= 1");
  if (o.seq < 1) usage_error("--seq (= " + std::to_string(o.seq) + ") must be >= 1");
  if (o.layers < 1) usage_error("--layers (= " + std::to_string(o.layers) + ") must be >= 1");
  if (o.proj < 0 || (o.proj > 0 && o.cell != "lstm"))
    usage_error("--proj (= " + std::to_string(o.proj) + ") needs --cell lstm and must be >= 0");
  return o;
}

std::vector<int> parse_threads(const std::string& s) {
  std::vector<int> t;
  for (const auto& item : split_list(s)) {
    const int64_t v = parse_int("--threads", item);
    if (v < 0 || v > 4096) usage_error("--threads '" + item + "' is not a thread count");
    t.push_back(v == 0 ? omp_get_max_threads() : static_cast<int>(v));
  }
  if (t.empty()) usage_error("--threads is empty");
  return t;
}

// ---------------------------------------------------------------------------------------
// Lengths and data: the same generator and definitions as `rnnx bench` (docs/bench.md).
// ---------------------------------------------------------------------------------------

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

std::vector<int64_t> make_lengths(const std::string& spec, int64_t T, int64_t B, uint64_t seed) {
  std::vector<int64_t> len(B, T);
  SplitMix64 rng(seed);
  if (spec == "full") return len;
  if (spec == "uniform") {
    for (auto& l : len) l = 1 + std::min(T - 1, static_cast<int64_t>(rng.uniform01() * double(T)));
    return len;
  }
  if (spec == "longtail") {
    std::vector<int64_t> order(B);
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = B - 1; i > 0; --i) std::swap(order[i], order[rng.next() % uint64_t(i + 1)]);
    const int64_t long_count = std::max<int64_t>(1, B / 8);
    std::vector<char> is_long(B, 0);
    for (int64_t i = 0; i < long_count; ++i) is_long[order[i]] = 1;
    for (int64_t b = 0; b < B; ++b) {
      if (is_long[b]) continue;
      const double e = -std::log1p(-rng.uniform01()) * double(T) / 8.0;
      len[b] = std::min(T, 1 + static_cast<int64_t>(e));
    }
    return len;
  }
  std::ifstream in(spec);
  if (!in) usage_error("--lengths " + spec + ": not full, uniform or longtail, and no such file");
  len.clear();
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    char* end = nullptr;
    const long long v = std::strtoll(line.c_str(), &end, 10);
    if (end == line.c_str() || std::string(end).find_first_not_of(" \t\r") != std::string::npos ||
        v < 0 || v > T)
      usage_error(spec + ":" + std::to_string(line_no) + ": expected a length in [0, " +
                  std::to_string(T) + "], got '" + line + "'");
    len.push_back(v);
  }
  if (int64_t(len.size()) != B)
    usage_error(spec + ": has " + std::to_string(len.size()) + " lengths but --batch is " +
                std::to_string(B));
  return len;
}

// Fills a buffer (any format) uniformly in [lo, hi); writing it is also its first touch.
void fill(const memory& m, double lo, double hi, SplitMix64& rng) {
  const size_t n = m.get_desc().get_size() / sizeof(float);
  auto* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(lo + (hi - lo) * rng.uniform01());
}

void zero(const memory& m) {
  if (m) std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    r += c;
  }
  return r;
}

struct Timing {
  double med = 0, lo = 0, hi = 0;
};

Timing time_runs(int warmup, int repeat, const std::function<void()>& once) {
  for (int i = 0; i < warmup; ++i) once();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    once();
    const auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return {median(ms), *std::min_element(ms.begin(), ms.end()),
          *std::max_element(ms.begin(), ms.end())};
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

Net make_net(const Options& o) {
  Net n;
  n.cell = o.cell;
  n.L = o.layers;
  n.D = o.bidirectional ? 2 : 1;
  n.T = o.seq;
  n.B = o.batch;
  n.I = o.input;
  n.H = o.hidden;
  n.P = o.proj;
  n.DIC = o.proj > 0 ? o.proj : o.hidden;
  n.lstm = o.cell == "lstm";
  n.proj = o.proj > 0;
  n.dir = o.bidirectional ? dnnl::rnn_direction::bidirectional_concat
                          : dnnl::rnn_direction::unidirectional_left2right;
  if (o.cell == "lstm")
    n.kind = dnnl::algorithm::vanilla_lstm, n.G = 4, n.Gbias = 4;
  else if (o.cell == "gru")
    n.kind = dnnl::algorithm::lbr_gru, n.G = 3, n.Gbias = 4;
  else if (o.cell == "gru-orig")
    n.kind = dnnl::algorithm::vanilla_gru, n.G = 3, n.Gbias = 3;
  else
    n.kind = dnnl::algorithm::vanilla_rnn, n.G = 1, n.Gbias = 1;
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
Built build(const Net& n, const std::string& mode, Tensors& t, const dnnl::engine& eng,
            dnnl::stream& strm) {
  Built b;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const bool training = mode != "infer";
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
    if (mode == "fwdbwd") {
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
    if (mode == "fwdbwd") b.extra_bytes += t.dacts[s].get_desc().get_size();
  }
  b.scratchpad = memory(
      memory::desc({static_cast<int64_t>(std::max<size_t>(b.scratchpad_bytes, 1))}, dt::u8, tag::a),
      eng);
  zero(b.scratchpad);
  auto scratch_for = [&](const dnnl::primitive_desc& pd) {
    return memory(pd.scratchpad_desc(), eng, b.scratchpad.get_data_handle());
  };

  for (size_t s = 0; s < n.stages.size(); ++s) {
    auto& ts = t.st[s];
    const auto& pd = fwd_pds[s];
    Step st{dnnl::primitive(pd), {}};
    auto& a = st.args;
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
    if (training) a[DNNL_ARG_WORKSPACE] = workspaces[s];
    a[DNNL_ARG_SCRATCHPAD] = scratch_for(pd);
    b.steps.push_back(std::move(st));
  }
  if (mode == "fwdbwd") {
    for (size_t s = n.stages.size(); s-- > 0;) {
      auto& ts = t.st[s];
      const auto& pd = bwd_pds[s];
      Step st{dnnl::primitive(pd), {}};
      auto& a = st.args;
      a[DNNL_ARG_SRC_LAYER] = t.acts[s];
      a[DNNL_ARG_DST_LAYER] = t.acts[s + 1];
      a[DNNL_ARG_SRC_ITER] = ts.h0;
      a[DNNL_ARG_DST_ITER] = ts.hy;
      a[DNNL_ARG_DIFF_SRC_LAYER] = t.dacts[s];
      a[DNNL_ARG_DIFF_DST_LAYER] = t.dacts[s + 1];
      a[DNNL_ARG_DIFF_SRC_ITER] = ts.dh0;
      a[DNNL_ARG_DIFF_DST_ITER] = ts.dhy;
      if (n.lstm) {
        a[DNNL_ARG_SRC_ITER_C] = ts.c0, a[DNNL_ARG_DST_ITER_C] = ts.cy;
        a[DNNL_ARG_DIFF_SRC_ITER_C] = ts.dc0, a[DNNL_ARG_DIFF_DST_ITER_C] = ts.dcy;
      }
      a[DNNL_ARG_WEIGHTS_LAYER] = weights_for(pd, DNNL_ARG_WEIGHTS_LAYER, ts.wl, eng, strm);
      a[DNNL_ARG_WEIGHTS_ITER] = weights_for(pd, DNNL_ARG_WEIGHTS_ITER, ts.wi, eng, strm);
      a[DNNL_ARG_BIAS] = ts.bias;
      a[DNNL_ARG_DIFF_BIAS] = ts.dbias;
      auto grad = [&](int arg) {
        memory m(pd.query_md(dnnl::query::exec_arg_md, arg), eng);
        zero(m);
        a[arg] = m;
      };
      grad(DNNL_ARG_DIFF_WEIGHTS_LAYER);
      grad(DNNL_ARG_DIFF_WEIGHTS_ITER);
      if (n.proj) {
        a[DNNL_ARG_WEIGHTS_PROJECTION] =
            weights_for(pd, DNNL_ARG_WEIGHTS_PROJECTION, ts.wp, eng, strm);
        grad(DNNL_ARG_DIFF_WEIGHTS_PROJECTION);
      }
      a[DNNL_ARG_WORKSPACE] = workspaces[s];
      a[DNNL_ARG_SCRATCHPAD] = scratch_for(pd);
      b.steps.push_back(std::move(st));
    }
    b.impl = "fwd:" + fwd_impl + " bwd:" + bwd_impl;
  } else {
    b.impl = fwd_impl;
  }
  return b;
}

double forward_flops(const Net& n, int64_t tokens) {
  const double G = double(n.G), H = double(n.H), P = double(n.DIC), D = double(n.D);
  double per_token = 0.0;
  for (int64_t l = 0; l < n.L; ++l) {
    const double in = l == 0 ? double(n.I) : D * P;
    per_token += D * (2.0 * G * H * (in + P) + (n.proj ? 2.0 * H * P : 0.0));
  }
  return per_token * double(tokens);
}

std::string problem_name(const Options& o, const std::vector<int64_t>& lengths) {
  const bool full =
      std::all_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l == o.seq; });
  std::string cell = o.cell;
  return cell + "_l" + std::to_string(o.layers) + (o.bidirectional ? "_bidir" : "_uni") + "_t" +
         std::to_string(o.seq) + "_b" + std::to_string(o.batch) + "_i" + std::to_string(o.input) +
         "_h" + std::to_string(o.hidden) + "_p" + std::to_string(o.proj) + "_len-" +
         (full ? "full" : "mixed");
}

int run_rnn(const Options& o) {
  const Net n = make_net(o);
  const std::vector<int64_t> lengths = make_lengths(o.lengths, o.seq, o.batch, o.seed);
  const int64_t real_tokens = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const int64_t padded_tokens = o.seq * o.batch;
  const std::string name = problem_name(o, lengths);
  std::vector<std::string> modes = split_list(o.modes);
  for (const auto& m : modes)
    if (m != "infer" && m != "train" && m != "fwdbwd")
      usage_error("--mode '" + m + "' is not one of infer, train, fwdbwd");
  if (modes.empty()) usage_error("--mode is empty");

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  int status = 0;
  for (int threads : parse_threads(o.threads)) {
    omp_set_num_threads(threads);
    Tensors t = make_tensors(n, eng, o.seed);
    for (const auto& mode : modes) {
      const char* fmt_err =
          "{\"problem\":\"%s\",\"backend\":\"onednn-rnn\",\"mode\":\"%s\",\"threads\":%d,"
          "\"lengths\":\"%s\",\"error\":\"%s\"}\n";
      try {
        Built b = build(n, mode, t, eng, strm);
        const Timing tm = time_runs(o.warmup, o.repeat, [&] {
          for (auto& s : b.steps) s.prim.execute(strm, s.args);
          strm.wait();
        });
        const double flops = forward_flops(n, real_tokens) * (mode == "fwdbwd" ? 3.0 : 1.0);
        const double gflops = tm.med > 0 ? flops / (tm.med * 1e-3) / 1e9 : 0.0;
        const bool training = mode != "infer";
        const size_t ws = b.scratchpad_bytes + (training ? 0 : b.extra_bytes);
        const size_t rs = training ? b.workspace_bytes + b.extra_bytes : 0;
        if (o.json) {
          std::printf(
              "{\"problem\":\"%s\",\"backend\":\"onednn-rnn\",\"impl\":\"%s\",\"mode\":\"%s\","
              "\"threads\":%d,\"dtype\":\"float32\",\"lengths\":\"%s\",\"seed\":%llu,"
              "\"tokens\":%lld,\"padded_tokens\":%lld,\"real_tokens\":%lld,\"repeat\":%d,"
              "\"ms_median\":%.6g,\"ms_min\":%.6g,\"ms_max\":%.6g,\"flops\":%.6g,\"gflops\":%.6g,"
              "\"workspace_bytes\":%zu,\"reserve_bytes\":%zu,\"stages\":%zu}\n",
              name.c_str(), json_escape(b.impl).c_str(), mode.c_str(), threads,
              json_escape(o.lengths).c_str(), static_cast<unsigned long long>(o.seed),
              static_cast<long long>(padded_tokens), static_cast<long long>(padded_tokens),
              static_cast<long long>(real_tokens), o.repeat, tm.med, tm.lo, tm.hi, flops, gflops,
              ws, rs, n.stages.size());
        } else {
          std::printf(
              "%s onednn-rnn %s %-6s threads=%d tokens=%lld (real %lld)  median %.3f ms "
              "(min %.3f, max %.3f)  %.2f GFLOP/s on real tokens  workspace %.2f MiB  "
              "reserve %.2f MiB\n",
              name.c_str(), b.impl.c_str(), mode.c_str(), threads,
              static_cast<long long>(padded_tokens), static_cast<long long>(real_tokens), tm.med,
              tm.lo, tm.hi, gflops, ws / 1048576.0, rs / 1048576.0);
        }
      } catch (const dnnl::error& e) {
        // "valid, but oneDNN cannot do it": report and go on with the other modes.
        status = kExitUnsupported;
        std::string msg = std::string("oneDNN: ") + e.what();
        if (o.json) {
          std::printf(fmt_err, name.c_str(), mode.c_str(), threads, json_escape(o.lengths).c_str(),
                      json_escape(msg).c_str());
        } else {
          std::printf("%s onednn-rnn %s threads=%d: unsupported: %s\n", name.c_str(), mode.c_str(),
                      threads, msg.c_str());
        }
        std::fprintf(stderr, "rnnx_onednn_peer: %s %s: %s\n", name.c_str(), mode.c_str(),
                     msg.c_str());
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
                const Timing& tm, int threads, const std::string& impl) {
  const double gflops = 2.0 * double(m) * double(nn) * double(k) / (tm.med * 1e-3) / 1e9;
  if (o.json) {
    std::printf(
        "{\"backend\":\"gemm-peak\",\"kind\":\"%s\",\"impl\":\"%s\",\"m\":%lld,\"n\":%lld,"
        "\"k\":%lld,\"threads\":%d,\"repeat\":%d,\"ms_median\":%.6g,\"ms_min\":%.6g,"
        "\"ms_max\":%.6g,\"gflops\":%.6g}\n",
        kind.c_str(), json_escape(impl).c_str(), (long long)m, (long long)nn, (long long)k, threads,
        o.repeat, tm.med, tm.lo, tm.hi, gflops);
  } else {
    std::printf("gemm-peak %-12s %s m=n=k=%lld threads=%d  median %.3f ms  %.1f GFLOP/s\n",
                kind.c_str(), impl.c_str(), (long long)m, threads, tm.med, gflops);
  }
  std::fflush(stdout);
}

int run_gemm_peak(const Options& o) {
  const int64_t N = o.gemm_size;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  int status = 0;
  for (int threads : parse_threads(o.threads)) {
    omp_set_num_threads(threads);
    SplitMix64 rng(o.seed + 1);
    memory a(md({N, N}, tag::ab), eng), w(md({N, N}, tag::ab), eng), c(md({N, N}, tag::ab), eng);
    fill(a, -1.0, 1.0, rng);
    fill(w, -1.0, 1.0, rng);
    zero(c);
    for (const auto& kind : split_list(o.gemm_kinds)) {
      try {
        if (kind == "sgemm") {
          const auto* pa = static_cast<const float*>(a.get_data_handle());
          const auto* pw = static_cast<const float*>(w.get_data_handle());
          auto* pc = static_cast<float*>(c.get_data_handle());
          const Timing tm = time_runs(o.warmup, o.repeat, [&] {
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
            std::printf(
                o.json ? "{\"backend\":\"gemm-peak\",\"kind\":\"%s\",\"threads\":%d,"
                         "\"error\":\"only oneDNN's reference kernel (%s): not supported here\"}\n"
                       : "gemm-peak %s threads=%d: only oneDNN's reference kernel (%s)\n",
                kind.c_str(), threads, impl.c_str());
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
          const Timing tm = time_runs(o.warmup, o.repeat, [&] {
            mm.execute(strm, args);
            strm.wait();
          });
          print_gemm(o, kind, N, N, N, tm, threads, impl);
        } else {
          usage_error("--gemm-kinds: '" + kind + "' is not sgemm, matmul-f32 or matmul-bf16");
        }
      } catch (const dnnl::error& e) {
        status = kExitUnsupported;
        std::printf(
            o.json ? "{\"backend\":\"gemm-peak\",\"kind\":\"%s\",\"threads\":%d,\"error\":\"%s\"}\n"
                   : "gemm-peak %s threads=%d: unsupported: %s\n",
            kind.c_str(), threads, json_escape(e.what()).c_str());
      }
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    return o.gemm_peak ? run_gemm_peak(o) : run_rnn(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rnnx_onednn_peer: error: %s\n%s", e.what(), kUsage);
    return kExitInvalid;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rnnx_onednn_peer: error: %s\n", e.what());
    return 1;
  }
}
