// The test cases the cpu backend is checked on against the reference: every cell
// variant crossed with a table of scenarios (topology, awkward sizes, lengths, layout,
// optional tensors, gradient mode), plus the options that only some cells have (dropout,
// cell/projection clipping with both NaN policies, NaN inputs). Each test case has a
// printable name: Plan::problem_name() plus a variant tag for what that name leaves out.
// And the benchmark's case lists (bench/problems*.txt), read as `rnnx bench --cases` reads
// them: every bench case is a test case too.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_case.hpp"
#include "test_util.hpp"

namespace rnnx_test {

struct TestCase {
  std::string name;  // sanitized problem_name() + "_" + variant (dtype is added by the test)
  Config cfg;        // dtype is set by the test
  SequenceShape shape;
  DataOptions data;
  GradMode mode = GradMode::overwrite;
  uint64_t dropout_counter = 0;
  bool backward = true;
  // Puts NaN into one real element of x (sequence 1, t = 2): forward only, checks that
  // NaN goes where the reference sends it (clip_nan propagate / replace).
  bool nan_in_x = false;
};

inline std::ostream& operator<<(std::ostream& os, const TestCase& p) {
  return os << p.name;
}

struct CellVariant {
  const char* tag;
  CellType cell;
  bool lbr;   // GRU linear-before-reset
  bool proj;  // LSTM projection (P' = max(1, H/3))
};

inline const std::vector<CellVariant>& cell_variants() {
  static const std::vector<CellVariant> v = {
      {"rnn_tanh", CellType::rnn_tanh, true, false}, {"rnn_relu", CellType::rnn_relu, true, false},
      {"lstm", CellType::lstm, true, false},         {"lstmp", CellType::lstm, true, true},
      {"gru", CellType::gru, true, false},           {"gru-orig", CellType::gru, false, false},
  };
  return v;
}

inline Config config_for(const CellVariant& v, int64_t I, int64_t H, int64_t L, bool bidir,
                         bool bias) {
  Config c = make_config(v.cell, I, H, L, bidir, DataType::f32,
                         v.proj ? std::max<int64_t>(1, H / 3) : 0, v.lbr);
  c.bias = bias;
  return c;
}

// The variant tag: everything the problem name does not say.
inline std::string variant_tag(const Config& c, LayoutKind layout, const DataOptions& d,
                               GradMode mode, bool backward) {
  std::string s = tag(layout);
  if (!c.bias) s += "_nobias";
  if (c.cell_clip.enabled) s += "_cclip";
  if (c.proj_clip.enabled) s += "_pclip";
  if ((c.cell_clip.enabled || c.proj_clip.enabled || c.gate_clip > 0.0) &&
      c.clip_nan == NanPolicy::replace)
    s += "-nanrepl";
  if (c.dropout > 0) s += "_drop" + std::to_string(static_cast<int>(c.dropout * 100 + 0.5));
  if (c.padding_fill != 0.0) s += "_fill";
  // ONNX's cell options.
  if (c.reverse) s += "_rev";
  if (c.peephole) s += "_peep";
  if (c.gate_clip > 0.0) s += "_gclip";
  if (c.input_forget) s += "_ifg";
  if (!c.activations.empty()) {
    s += "_act";
    for (const Activation& a : c.activations) s += std::string("-") + to_string(a.kind);
  }
  if (!d.h0) s += "_noh0";
  if (backward) {
    std::string g;
    if (d.dy) g += "dy";
    if (d.dhy) g += "dhy";
    if (d.dcy && c.cell == CellType::lstm) g += "dcy";
    if (g.empty()) g = "nograd";
    s += '_';
    s += g;  // (not "_" + g: GCC 12 warns falsely about that, -Wrestrict)
    if (mode == GradMode::accumulate) s += "_acc";
  } else {
    s += "_fwdonly";
  }
  return s;
}

inline TestCase make_test_case(const Config& c, LayoutKind layout, int64_t T, int64_t B,
                               std::vector<int64_t> lengths, DataOptions d, GradMode mode,
                               bool backward = true, const std::string& extra = "") {
  TestCase p;
  p.cfg = c;
  p.shape = make_shape(layout, T, B, lengths);
  d.c0 = d.h0;  // c0 goes with h0
  p.data = d;
  p.mode = mode;
  p.backward = backward;
  const std::string base = Plan(c, p.shape, backend_options(Backend::reference)).problem_name();
  p.name = sanitize(base + "_" + variant_tag(c, layout, d, mode, backward) + extra);
  return p;
}

// A long-tail ragged batch of B sequences up to T: most short, a few long, some empty, in
// shuffled order (a fixed pattern, so the problem names are stable).
inline std::vector<int64_t> medium_long_tail_lengths(int64_t B, int64_t T) {
  std::vector<int64_t> l(B);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t k = (b * 17) % B;  // a permutation of 0..B-1 (17 is prime to 41 and 48)
    l[b] = k < 3 ? 0 : k < B / 2 ? 1 + k % 4 : k < B - 4 ? 3 + k % (T / 2) : T - k % 3;
  }
  return l;
}

// Lengths spread evenly over 1..T (uniform ragged), shuffled.
inline std::vector<int64_t> medium_uniform_lengths(int64_t B, int64_t T) {
  std::vector<int64_t> l(B);
  for (int64_t b = 0; b < B; ++b) l[b] = 1 + ((b * 17) % B) * T / B;
  return l;
}

inline std::vector<TestCase> cpu_vs_reference_cases() {
  std::vector<TestCase> out;
  using LK = LayoutKind;
  const DataOptions all{};
  const DataOptions noh0{false, false, true, true, true};
  const DataOptions dy_only{true, true, true, false, false};
  const DataOptions dhy_only{true, true, false, true, false};
  const DataOptions dy_dcy{true, true, true, false, true};
  const DataOptions none{true, true, false, false, false};
  const DataOptions noh0_dy{false, false, true, false, false};
  const auto OW = GradMode::overwrite, ACC = GradMode::accumulate;

  struct Scenario {
    int64_t L;
    bool bidir;
    int64_t T, B, I, H;
    std::vector<int64_t> lengths;  // empty = all T
    LK layout;
    bool bias;
    DataOptions data;
    GradMode mode;
    double fill;
  };
  // Sizes: 1, 17, 37 and others that are not multiples of a vector width; T=1, B=1,
  // zero lengths, a batch of only empty sequences, mostly-length-1 batches.
  const std::vector<Scenario> scenarios = {
      {1, false, 5, 3, 7, 9, {}, LK::time_major, true, all, OW, 0.0},
      {1, true, 7, 4, 17, 13, {7, 3, 0, 5}, LK::batch_first, false, noh0_dy, ACC, 0.0},
      {2, false, 6, 5, 8, 16, {2, 6, 3, 6, 1}, LK::packed_sorted_indices, true, dhy_only, OW, 0.0},
      {2, true, 9, 6, 37, 17, {9, 4, 0, 1, 9, 6}, LK::time_major, true, all, ACC, 0.0},
      {3, true, 4, 3, 5, 11, {4, 3, 3}, LK::packed, false, noh0, OW, 0.0},
      {3, false, 8, 2, 12, 37, {3, 8}, LK::batch_first, true, dy_dcy, OW, 0.0},
      {1, false, 1, 1, 3, 4, {}, LK::time_major, true, all, OW, 0.0},
      {2, true, 3, 4, 6, 8, {0, 0, 0, 0}, LK::time_major, true, all, OW, 0.0},
      {1, true, 9, 1, 40, 40, {}, LK::batch_first, true, all, ACC, 0.0},
      {2, false, 7, 6, 10, 20, {1, 1, 7, 1, 1, 1}, LK::time_major, true, noh0, OW, 0.0},
      {2, true, 5, 3, 1, 2, {5, 2, 4}, LK::time_major, true, all, OW, 0.0},
      {2, true, 6, 4, 9, 12, {6, 5, 0, 3}, LK::time_major, true, none, OW, 0.0},
      {1, false, 8, 5, 33, 24, {}, LK::packed_sorted_indices, true, dhy_only, ACC, 0.0},
      {1, true, 6, 3, 5, 7, {6, 2, 4}, LK::batch_first, true, dy_only, OW, -7.5},
  };
  for (const CellVariant& v : cell_variants()) {
    for (const Scenario& s : scenarios) {
      Config c = config_for(v, s.I, s.H, s.L, s.bidir, s.bias);
      c.padding_fill = s.fill;
      out.push_back(make_test_case(c, s.layout, s.T, s.B, s.lengths, s.data, s.mode));
    }
  }
  // Medium problems, every cell: sizes at which the fast paths all run together, which
  // the small ones above never reach: 40+ active rows (past the in-loop input projection's
  // 32-row threshold, several 14-row tiles and a ragged last one), team loops with rows
  // for both threads, the split input projection, several layers in both directions, and
  // a long-tail ragged batch whose active rows fall step by step to 1 (zeros included).
  for (const CellVariant& v : cell_variants()) {
    Config c = config_for(v, 40, 64, 2, true, true);
    out.push_back(make_test_case(c, LK::time_major, 20, 48, medium_long_tail_lengths(48, 20), all,
                                 OW, true, "_medium"));
    c = config_for(v, 24, 72, 3, false, true);
    out.push_back(make_test_case(c, LK::batch_first, 12, 41, medium_uniform_lengths(41, 12),
                                 dy_only, ACC, true, "_medium"));
  }

  // Dropout between layers (training), fixed seed and counter, every cell.
  for (const CellVariant& v : cell_variants()) {
    Config c = config_for(v, 9, 12, 2, true, true);
    c.dropout = 0.3;
    c.seed = 42;
    TestCase p = make_test_case(c, LK::time_major, 6, 4, {6, 3, 0, 5}, all, OW);
    p.dropout_counter = 7;
    out.push_back(p);
    c = config_for(v, 7, 10, 3, false, true);
    c.dropout = 0.3;
    c.seed = 0x123456789abcdefull;
    p = make_test_case(c, LK::packed_sorted_indices, 5, 3, {5, 5, 2}, dy_only, ACC);
    p.dropout_counter = (1ull << 32) + 3;  // the counter's high half matters too
    out.push_back(p);
  }
  {  // p = 1: the upper layer sees only zeros.
    Config c = config_for(cell_variants()[2], 6, 8, 2, true, true);
    c.dropout = 1.0;
    TestCase p = make_test_case(c, LK::time_major, 4, 3, {4, 1, 3}, all, OW, true, "_p1");
    out.push_back(p);
  }

  // Cell and projection clipping. Bounds well inside the range the states take with
  // these weights (|c| ~ 1; |r| ~ 0.1 once c is clipped), so that many elements are clipped.
  const CellVariant lstm = cell_variants()[2], lstmp = cell_variants()[3];
  auto clipped = [](Config c, bool cell, bool proj, NanPolicy nan) {
    if (cell) c.cell_clip = {true, -0.3, 0.35};
    if (proj) c.proj_clip = {true, -0.05, 0.04};
    c.clip_nan = nan;
    return c;
  };
  out.push_back(make_test_case(
      clipped(config_for(lstm, 7, 9, 2, true, true), true, false, NanPolicy::propagate),
      LK::time_major, 6, 4, {6, 2, 0, 5}, all, OW));
  out.push_back(make_test_case(
      clipped(config_for(lstm, 5, 17, 1, false, true), true, false, NanPolicy::replace),
      LK::batch_first, 7, 3, {7, 7, 4}, all, ACC));
  out.push_back(make_test_case(
      clipped(config_for(lstmp, 6, 12, 2, true, true), true, true, NanPolicy::propagate),
      LK::time_major, 5, 4, {5, 1, 3, 0}, all, OW));
  out.push_back(make_test_case(
      clipped(config_for(lstmp, 8, 10, 2, false, false), false, true, NanPolicy::replace),
      LK::batch_first, 6, 3, {}, noh0, OW));
  {
    Config c = clipped(config_for(lstmp, 5, 9, 3, true, true), true, true, NanPolicy::replace);
    c.dropout = 0.3;
    c.seed = 9;
    TestCase p = make_test_case(c, LK::packed_sorted_indices, 4, 3, {2, 4, 3}, all, OW);
    p.dropout_counter = 11;
    out.push_back(p);
  }

  // NaN in x (forward only): where NaN goes and where a clip replaces it.
  auto nan_case = [&](Config c) {
    TestCase p = make_test_case(c, LK::time_major, 5, 3, {5, 4, 2}, all, OW, false, "_nanx");
    p.nan_in_x = true;
    out.push_back(p);
  };
  nan_case(clipped(config_for(lstm, 4, 6, 2, true, true), true, false, NanPolicy::propagate));
  nan_case(clipped(config_for(lstm, 4, 6, 2, true, true), true, false, NanPolicy::replace));
  nan_case(clipped(config_for(lstmp, 4, 6, 2, true, true), true, true, NanPolicy::propagate));
  nan_case(clipped(config_for(lstmp, 4, 6, 2, true, true), true, true, NanPolicy::replace));
  nan_case(config_for(cell_variants()[5], 4, 6, 1, false, true));
  for (NanPolicy nan : {NanPolicy::propagate, NanPolicy::replace}) {  // the gate clip's policy
    for (const CellVariant& v : {lstm, cell_variants()[4]}) {
      Config c = config_for(v, 4, 6, 2, true, true);
      c.gate_clip = 0.5;
      c.clip_nan = nan;
      nan_case(c);
    }
  }

  // ONNX's cell options (the cpu's generic step kernels, extended_cell.hpp; reverse alone runs
  // the fast kernels): each alone and combined, on every cell, with variable and zero
  // lengths, projection, cell clip and dropout.
  {
    using K = ActivationKind;
    // Every kind with alpha/beta away from the defaults where it has them.
    auto act = [](K kind) {
      Activation a = default_activation(kind);
      switch (kind) {
        case K::affine:
          a = {kind, 0.7, 0.1};
          break;
        case K::leaky_relu:
          a = {kind, 0.05, 0.0};
          break;
        case K::thresholded_relu:
          a = {kind, 0.1, 0.0};
          break;
        case K::scaled_tanh:
          a = {kind, 1.3, 0.8};
          break;
        case K::hard_sigmoid:
          a = {kind, 0.3, 0.45};
          break;
        case K::elu:
          a = {kind, 0.6, 0.0};
          break;
        default:
          break;
      }
      return a;
    };
    const std::vector<K> kinds = {
        K::sigmoid,     K::tanh,         K::relu, K::affine,   K::leaky_relu, K::thresholded_relu,
        K::scaled_tanh, K::hard_sigmoid, K::elu,  K::softsign, K::softplus};
    const int64_t nk = static_cast<int64_t>(kinds.size());
    const CellVariant rnn = cell_variants()[0], gru = cell_variants()[4],
                      gru_orig = cell_variants()[5];
    // Every kind in the RNN's one position, and in some position of each LSTM and GRU.
    for (int64_t k = 0; k < nk; ++k) {
      Config c = config_for(rnn, 5, 7, 1, k % 2 == 1, true);
      c.activations = {act(kinds[k])};
      out.push_back(make_test_case(c, LK::time_major, 5, 3, {5, 0, 3}, all, k % 3 ? OW : ACC));
    }
    for (int64_t k = 0; k < nk; k += 3) {
      Config c = config_for(lstm, 6, 9, 1, false, true);
      c.activations = {act(kinds[k]), act(kinds[(k + 1) % nk]), act(kinds[(k + 2) % nk])};
      out.push_back(make_test_case(c, LK::batch_first, 6, 3, {6, 2, 4}, all, OW));
    }
    for (int64_t k = 0; k < nk; k += 2) {
      Config c = config_for(k % 4 == 0 ? gru : gru_orig, 6, 8, 1, false, true);
      c.activations = {act(kinds[k]), act(kinds[(k + 1) % nk])};
      out.push_back(make_test_case(c, LK::time_major, 5, 3, {5, 3, 0}, all, OW));
    }
    // Bidirectional with different activations per direction, two layers, GRU both ways.
    for (const CellVariant& v : {gru, gru_orig}) {
      Config c = config_for(v, 5, 6, 2, true, true);
      c.activations = {act(K::hard_sigmoid), act(K::softsign), act(K::sigmoid), act(K::elu)};
      out.push_back(make_test_case(c, LK::time_major, 5, 4, {5, 2, 0, 4}, all, ACC));
    }
    // reverse alone (fast kernels), with zero lengths, packed, multi-layer, every cell.
    for (const CellVariant& v : cell_variants()) {
      Config c = config_for(v, 7, 10, 2, false, true);
      c.reverse = true;
      out.push_back(make_test_case(c, LK::time_major, 6, 4, {6, 0, 3, 1}, all, OW));
      c = config_for(v, 5, 8, 1, false, v.proj);
      c.reverse = true;
      out.push_back(make_test_case(c, LK::packed_sorted_indices, 5, 3, {2, 5, 4}, dy_only, ACC));
    }
    // Gate clip alone, bounds that many pre-activations cross, both NaN policies.
    for (const CellVariant& v : cell_variants()) {
      Config c = config_for(v, 6, 9, 1, v.cell == CellType::gru, true);
      c.gate_clip = 0.3;
      c.clip_nan = v.lbr ? NanPolicy::propagate : NanPolicy::replace;
      out.push_back(make_test_case(c, LK::time_major, 5, 3, {5, 4, 0}, all, OW));
    }
    // LSTM: peephole alone, input_forget alone, everything at once (with projection, cell
    // clip, reverse, dropout), bidirectional peepholes with cell clip.
    {
      Config c = config_for(lstm, 6, 9, 1, false, true);
      c.peephole = true;
      out.push_back(make_test_case(c, LK::time_major, 6, 4, {6, 3, 0, 5}, all, OW));
      c = config_for(lstm, 6, 9, 1, false, true);
      c.input_forget = true;
      out.push_back(make_test_case(c, LK::batch_first, 6, 3, {6, 1, 4}, all, ACC));
      c = clipped(config_for(lstmp, 7, 12, 2, false, true), true, true, NanPolicy::replace);
      c.peephole = c.input_forget = c.reverse = true;
      c.gate_clip = 0.4;
      c.activations = {act(K::hard_sigmoid), act(K::softsign), act(K::scaled_tanh)};
      c.dropout = 0.25;
      c.seed = 3;
      TestCase p = make_test_case(c, LK::time_major, 6, 4, {6, 0, 2, 5}, all, OW);
      p.dropout_counter = 5;
      out.push_back(p);
      c = clipped(config_for(lstm, 5, 8, 2, true, false), true, false, NanPolicy::propagate);
      c.peephole = true;
      c.gate_clip = 0.5;
      out.push_back(make_test_case(c, LK::packed, 5, 3, {5, 4, 2}, noh0, ACC));
      c = clipped(config_for(lstmp, 5, 10, 1, true, true), true, false, NanPolicy::propagate);
      c.peephole = true;
      c.activations = {act(K::sigmoid), act(K::relu), act(K::softplus)};
      out.push_back(make_test_case(c, LK::batch_first, 5, 3, {5, 3, 1}, dy_dcy, OW));
    }
    // GRU and RNN with gate clip, activations, reverse and dropout at once.
    for (const CellVariant& v : {rnn, gru, gru_orig}) {
      Config c = config_for(v, 6, 8, 2, false, true);
      c.reverse = true;
      c.gate_clip = 0.35;
      c.activations = v.cell == CellType::gru
                          ? std::vector<Activation>{act(K::softsign), act(K::elu)}
                          : std::vector<Activation>{act(K::leaky_relu)};
      c.dropout = 0.3;
      c.seed = 8;
      TestCase p = make_test_case(c, LK::batch_first, 5, 4, {5, 5, 0, 2}, all, ACC);
      p.dropout_counter = 2;
      out.push_back(p);
    }
  }

  // Names must be unique (gtest refuses duplicates): say so here rather than at startup.
  std::map<std::string, int> seen;
  for (TestCase& p : out)
    if (seen[p.name]++ > 0) p.name += "_dup" + std::to_string(seen[p.name]);
  return out;
}

// A case list of bench/ (RNNX_BENCH_DIR, set by tests/CMakeLists.txt).
inline std::string bench_list_path(const std::string& file) {
  return std::string(RNNX_BENCH_DIR) + "/" + file;
}

// The lengths bench/run_all.py crosses every case with, at its default seed.
inline const std::vector<std::string>& bench_distributions() {
  static const std::vector<std::string> d = {"full", "uniform", "longtail"};
  return d;
}
constexpr uint64_t kBenchSeed = 0;

// The network of a bench case, as `rnnx bench` builds it (bias on, gru-orig the original GRU).
inline Config bench_config(const rnnx::bench::BenchCase& bc) {
  const CellType cell = bc.cell == "lstm"                           ? CellType::lstm
                        : bc.cell == "gru" || bc.cell == "gru-orig" ? CellType::gru
                        : bc.cell == "rnn_tanh"                     ? CellType::rnn_tanh
                                                                    : CellType::rnn_relu;
  return make_config(cell, bc.input, bc.hidden, bc.layers, bc.bidirectional, DataType::f32, bc.proj,
                     bc.cell != "gru-orig");
}

// Every case of a bench list crossed with bench_distributions(), as the benchmark runs it:
// padded time-major [T, B, I], h0 and c0 given, every output gradient (when `backward`).
// The name is the test-case name of the same problem plus "_bench_" and the distribution;
// a distribution whose lengths are all T (as full's) is left out, as run_all.py leaves it.
// A list that cannot be read gives no case (BenchCases.ListsAreRead says why).
inline std::vector<TestCase> bench_list_cases(const std::string& file, bool backward) {
  std::vector<rnnx::bench::BenchCase> cases;
  try {
    cases = rnnx::bench::read_case_list(bench_list_path(file));
  } catch (const std::invalid_argument&) {
    return {};
  }
  std::vector<TestCase> out;
  for (const rnnx::bench::BenchCase& bc : cases) {
    for (const std::string& dist : bench_distributions()) {
      const std::vector<int64_t> lengths =
          rnnx::bench::make_lengths(dist, bc.seq, bc.batch, kBenchSeed);
      const bool all_full =
          std::all_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l == bc.seq; });
      if (dist != "full" && all_full) continue;
      out.push_back(make_test_case(bench_config(bc), LayoutKind::time_major, bc.seq, bc.batch,
                                   lengths, DataOptions{}, GradMode::overwrite, backward,
                                   "_bench_" + dist));
    }
  }
  return out;
}

inline uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// The result tensors of the reference that jump within bf16's reach of this problem's
// data: where a derivative jumps (ReLU at 0, a clamp at its bound), bf16's rounding may move
// an argument across, and the flip switches a whole gradient element, by far more than any
// bound from smooth error propagation allows when the tensor is small or the element
// carries much of it. The probe: the reference on its inputs (x, h0, c0, weights) scaled
// elementwise by 1 + e and by 1 - e, e uniform in +-2^-8 (bf16's unit roundoff: each input
// moved as far as the cpu's rounding of its operands can move it), two draws. In the second
// difference R(+) + R(-) - 2 R the first-order change cancels, so where a result is smooth
// in the inputs it is O(e^2), far below the bound; an argument that either perturbation
// pushes across a jump leaves its whole size. A tensor whose second difference exceeds
// its bound in norm sits at a kink that the cpu's rounding may cross as well, and no
// comparison with the reference can tell a flip there from an error.
inline std::vector<std::string> tensors_jumping_within_bf16_reach(Plan& ref, const Tensors& in,
                                                                  const RunOptions& o,
                                                                  const Results& want,
                                                                  double bound_fwd,
                                                                  double bound_bwd) {
  constexpr double kReach = 1.0 / 256;  // u = 2^-8, as in rnnx::norm_error_bound
  std::vector<std::string> jumping;
  for (uint64_t draw = 1; draw <= 2; ++draw) {
    Tensors plus = in, minus = in;
    Rng rng(draw);
    for (auto [p, m] : {std::pair{&plus.x, &minus.x}, std::pair{&plus.h0, &minus.h0},
                        std::pair{&plus.c0, &minus.c0}, std::pair{&plus.w, &minus.w}}) {
      for (int64_t i = 0; i < p->size(); ++i) {
        const double e = kReach * rng.uniform(-1.0, 1.0);
        p->set(i, p->get(i) * (1.0 + e));
        m->set(i, m->get(i) * (1.0 - e));
      }
    }
    const Results rp = run(ref, plus, o), rm = run(ref, minus, o);
    // The second difference as a result, R(+) + R(-) - R against R.
    Results second = rp;
    for (auto [s, m, w] :
         {std::tuple{&second.y, &rm.y, &want.y}, std::tuple{&second.hy, &rm.hy, &want.hy},
          std::tuple{&second.cy, &rm.cy, &want.cy}, std::tuple{&second.dx, &rm.dx, &want.dx},
          std::tuple{&second.dh0, &rm.dh0, &want.dh0}, std::tuple{&second.dc0, &rm.dc0, &want.dc0},
          std::tuple{&second.dw, &rm.dw, &want.dw}}) {
      for (int64_t i = 0; i < s->size(); ++i) s->set(i, s->get(i) + m->get(i) - w->get(i));
    }
    std::vector<std::string> found;
    results_near_in_norm(second, want, bound_fwd, bound_bwd, o.dw_init, jumping, &found);
    jumping.insert(jumping.end(), found.begin(), found.end());
  }
  return jumping;
}

// What runs the problem under test: run() of its plan, or a backend driven directly.
using Runner = std::function<Results(const Tensors& in, const RunOptions& o)>;

// Runs one problem through `runner` and on the reference plan `ref` (p's dtype set) and
// compares everything: inference and training forward, then backward. Padding of x and dy
// holds NaN. A converting run (math mode allow_conversion) is compared in norm as well (rnnx::
// norm_error_bound), every tensor of every cell; where a derivative jumps, its gradients
// only in norm.
inline void check_runner_against_reference(const TestCase& p, Plan& ref, const Runner& runner) {
  const Config& c = p.cfg;
  const Geometry g = geometry_of(p.shape);
  Data d = make_data(c, g.lengths, fnv1a(p.name), p.data);
  if (p.nan_in_x) d.x.at(1).at(2 * c.input_size) = kNaN;
  // Padding of x and dy holds NaN: never read, says the contract.
  const Tensors in = make_tensors(ref, d, kNaN, kNaN);
  const int64_t T = g.T, B = g.B;
  const double tol_f = tolerance(c, T, B, false), tol_b = tolerance(c, T, B, true);
  // 16-bit data (bfloat16, float16 on a GPU): both sides round every result to 16 bits, so
  // the comparison is in norm only, as benchdnn compares such runs.
  const bool sixteen_bit_data = c.dtype == DataType::bf16 || c.dtype == DataType::f16;
  const bool bf16 = converts_to_bf16(c) || sixteen_bit_data;
  const double norm_f = norm_tolerance(c, T, B, false), norm_b = norm_tolerance(c, T, B, true);
  // A converting run in norm. Where a derivative jumps, a tensor that fails is left out
  // only if the reference's own result jumps within bf16's reach of this data (a true
  // kink: nothing can be compared there), and the test says so.
  auto expect_near_in_norm = [&](const Results& got, const Results& want, const RunOptions& o) {
    if (!bf16) return;
    std::vector<std::string> failed;
    const ::testing::AssertionResult all =
        results_near_in_norm(got, want, norm_f, norm_b, o.dw_init, {}, &failed);
    if (all) return;
    if (!derivative_jumps(c)) {
      ADD_FAILURE() << all.message();
      return;
    }
    const std::vector<std::string> kinks =
        tensors_jumping_within_bf16_reach(ref, in, o, want, norm_f, norm_b);
    const ::testing::AssertionResult rest =
        results_near_in_norm(got, want, norm_f, norm_b, o.dw_init, kinks);
    if (!rest) {
      ADD_FAILURE() << rest.message();
      return;
    }
    std::string names;
    for (const std::string& f : failed) names += " " + f;
    std::printf(
        "[   NOTE   ] %s, %s: not compared in norm where the reference itself jumps "
        "within bf16's reach (a kink):%s; the cpu run %s\n",
        p.name.c_str(), o.backward ? "backward" : "forward", names.c_str(), all.message());
  };

  {
    SCOPED_TRACE("inference forward");
    const RunOptions infer;
    const RunOptions& on_backend = infer;
    const Results want = run(ref, in, infer);
    const Results got = runner(in, on_backend);
    if (!sixteen_bit_data) expect_results_near(got, want, tol_f, tol_b);
    expect_near_in_norm(got, want, infer);
  }
  RunOptions train;
  train.training = true;
  train.dropout_counter = p.dropout_counter;
  {
    SCOPED_TRACE("training forward");
    const RunOptions& on_backend = train;
    const Results want = run(ref, in, train);
    const Results got = runner(in, on_backend);
    if (!sixteen_bit_data) expect_results_near(got, want, tol_f, tol_b);
    expect_near_in_norm(got, want, train);
  }
  if (!p.backward) return;
  RunOptions bwd = train;
  bwd.backward = true;
  bwd.mode = p.mode;
  if (p.mode == GradMode::accumulate) {
    Rng rng(7);
    bwd.dw_init.resize(ref.weights_numel());
    for (double& v : bwd.dw_init) v = rng.uniform(-1.0, 1.0);
  }
  const RunOptions& bwd_on_backend = bwd;
  const Results want = run(ref, in, bwd);
  const Results got = runner(in, bwd_on_backend);
  {
    SCOPED_TRACE("backward");
    // Where a derivative jumps (ReLU at 0, clamps at their bounds), a value within bf16's
    // error of the jump may land on the other side, which switches a whole gradient
    // element on or off: no elementwise tolerance covers that, so a converting run of such
    // a cell compares its gradients in norm only, where a few flips weigh little.
    if (!sixteen_bit_data && !(bf16 && derivative_jumps(c)))
      expect_results_near(got, want, tol_f, tol_b);
    expect_near_in_norm(got, want, bwd);
  }
  // The contract's fixed values, exactly: y padding = padding_fill, dx padding = 0.
  for (double v : padding_values(g, got.y, out_width(c))) ASSERT_EQ(v, c.padding_fill);
  for (double v : padding_values(g, got.dx, c.input_size)) ASSERT_EQ(v, 0.0);
}

// `backend` (the cpu backend, or a device backend whose buffers go through `device`)
// against the reference.
inline void check_against_reference(TestCase p, DataType dtype, Backend backend,
                                    const DeviceHooks* device = nullptr) {
  p.cfg.dtype = dtype;
  Plan ref(p.cfg, p.shape, backend_options(Backend::reference));
  std::unique_ptr<Plan> plan;
  try {
    plan = std::make_unique<Plan>(p.cfg, p.shape, backend_options(backend));
  } catch (const Error& e) {
    FAIL() << to_string(backend) << " plan refused a valid problem (" << to_string(e.code())
           << "): " << e.what();
  }
  EXPECT_EQ(plan->problem_name(), ref.problem_name());
  check_runner_against_reference(p, ref, [&](const Tensors& in, const RunOptions& o) {
    RunOptions on_backend = o;
    on_backend.device = device;
    return run(*plan, in, on_backend);
  });
}

inline void check_cpu_against_reference(TestCase p, DataType dtype) {
  check_against_reference(std::move(p), dtype, Backend::cpu);
}

}  // namespace rnnx_test
