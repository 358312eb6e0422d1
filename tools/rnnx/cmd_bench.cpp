// `rnnx bench`: times one case given by flags, or every case of a list (--cases), in the
// modes infer, train and fwdbwd for one or more thread counts; --dry-run describes the cases
// (name, lengths, tokens, FLOPs) instead. Every buffer is allocated once and touched before timing
// (first touch costs ~0.3 GB/s on our VMs, PERF-NOTES.md); warm-up runs precede the
// timed ones. One line per measurement, text or JSON (docs/bench.md). Ctrl-C ends it at
// once (status 130 in a shell), leaving only whole lines (docs/bench.md, "Interrupting").
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_case.hpp"
#include "bench_case_cli.hpp"
#include "commands.hpp"
#include "rnnx/rnnx.hpp"

namespace rnnx::tool {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

// The bench library reports a bad flag or list as std::invalid_argument; the command's
// errors are rnnx::Error, whose code main.cpp turns into the exit status.
template <typename F>
auto checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    invalid(e.what());
  }
}

using bench::Mode;

struct BenchOptions {
  bench::CaseFlags case_flags;
  std::string cases;  // a case list (bench/problems.txt) instead of the case flags
  bool dry_run = false;
  std::string modes = "infer";
  std::string threads = "0";
  std::string backend = "cpu";
  std::string dtype = "float32";
  std::string maths = "from_environment";
  int rounds = 1;
  double dropout = 0.0;
  int repeat = 10;
  int warmup = 2;
  bool json = false;
  bool keep_weights = false;
};

std::vector<MathMode> parse_maths(const std::string& s) {
  std::vector<MathMode> maths;
  for (const auto& m : bench::split_list(s)) {
    if (m == "fp32") {
      maths.push_back(MathMode::fp32);
    } else if (m == "allow_conversion") {
      maths.push_back(MathMode::allow_conversion);
    } else if (m == "int8") {
      maths.push_back(MathMode::int8);
    } else if (m == "from_environment") {
      maths.push_back(MathMode::from_environment);
    } else {
      invalid("--math '" + m + "' is not one of fp32, allow_conversion, int8, from_environment");
    }
  }
  if (maths.empty()) invalid("--math is empty");
  return maths;
}

// Element values of a buffer of the config's dtype.
std::vector<double> values(const void* p, DataType dt, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  read_values(dt, p, v.data(), n);
  return v;
}

// Fills `n` elements of `dtype` at `data` uniformly in [lo, hi) (the 16-bit types: those
// values rounded).
void fill_uniform(void* data, DataType dtype, int64_t n, double lo, double hi,
                  bench::SplitMix64& rng) {
  if (dtype == DataType::f64) {
    bench::fill_uniform(static_cast<double*>(data), n, lo, hi, rng);
  } else if (dtype == DataType::f32) {
    bench::fill_uniform(static_cast<float*>(data), n, lo, hi, rng);
  } else {
    std::vector<double> v(static_cast<size_t>(n));
    bench::fill_uniform(v.data(), n, lo, hi, rng);
    write_values(dtype, v.data(), data, n);
  }
}

// max |got - want| / max(1, max |want|): the error relative to the tensor's scale (as the
// tests measure it), so that elements near 0 after cancellation do not blow it up.
double scaled_error(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 1.0, err = 0.0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
  return err / scale;
}

// A 64-byte aligned buffer, filled at allocation so that no timed run pays the first touch.
class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const size_t rounded = (bytes + 63) / 64 * 64;
    data_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)));
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, rounded);
  }
  void* get() const { return data_.get(); }
  size_t size() const { return bytes_; }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data_;
  size_t bytes_ = 0;
};

// --- Ctrl-C ---------------------------------------------------------------------------
// A finished measurement is printed and flushed as one line at once, so everything that
// finished is already out when SIGINT comes: the handler says so and ends the process. It
// does so from the bench's own thread, never from a pool or oneDNN worker that happened
// to take the signal: that thread is the one that writes stdout and the algorithm search's
// cache file, and a thread running a handler is not inside a write() (a pipe write of one
// line is all or nothing, a file write is not cut short by SIGINT), so neither can be left
// with half a line; a process killed while that thread was in a file write() could be.
// It ends by SIGINT itself, not exit(130): the shell still reports 130 (128 + SIGINT), and
// a shell loop or make running it sees the interrupt and stops too.
pthread_t g_bench_thread;
volatile std::sig_atomic_t g_measurements_done = 0;

void on_interrupt(int) {
  if (!pthread_equal(pthread_self(), g_bench_thread)) {
    pthread_kill(g_bench_thread, SIGINT);  // async-signal-safe (a tgkill)
    return;
  }
  // Only async-signal-safe calls from here: the number is formatted by hand.
  char msg[128] = "\nrnnx: interrupted after ";
  size_t n = std::strlen(msg);
  char digits[24];
  size_t nd = 0;
  for (long v = g_measurements_done; nd == 0 || v > 0; v /= 10) digits[nd++] = char('0' + v % 10);
  while (nd > 0) msg[n++] = digits[--nd];
  const char tail[] = " finished measurement(s), each printed whole above\n";
  std::memcpy(msg + n, tail, sizeof tail);
  n += sizeof tail - 1;
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, msg, n);
  // Die of the default action: no stdio flush, so a line not yet flushed is dropped, not torn.
  signal(SIGINT, SIG_DFL);
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);  // blocked while its handler runs
  raise(SIGINT);
  _exit(128 + SIGINT);  // not reached
}

// The handler runs on an alternate stack (SA_ONSTACK): the signal may land while oneDNN's
// JIT code has the stack pointer in a buffer of its own on the heap, and a frame pushed
// there is a heap-buffer-overflow to AddressSanitizer (it aborted CI's cli_interrupt about
// one run in 40). The bench thread gets this one unless it has one already (a sanitizer
// gives every thread its own); a worker thread without one only forwards the signal.
alignas(64) unsigned char g_interrupt_stack[64 * 1024];

// Installs on_interrupt for the bench's lifetime, unless SIGINT is ignored (a background job
// of a non-interactive shell), which stays so.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_bench_thread = pthread_self();
    g_measurements_done = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGINT, nullptr, &old_) == 0 && old_.sa_handler != SIG_IGN) {
      stack_t current{};
      if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) != 0) {
        stack_t ours{};
        ours.ss_sp = g_interrupt_stack;
        ours.ss_size = sizeof g_interrupt_stack;
        own_stack_ = sigaltstack(&ours, &old_stack_) == 0;
      }
      installed_ = sigaction(SIGINT, &action, nullptr) == 0;
    }
  }
  ~InterruptGuard() {
    if (installed_) sigaction(SIGINT, &old_, nullptr);
    if (own_stack_) sigaltstack(&old_stack_, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_ {};
  stack_t old_stack_{};
  bool installed_ = false;
  bool own_stack_ = false;
};

std::string mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return s;
}

Config make_config(const bench::BenchCase& bc, const BenchOptions& o) {
  Config c;
  if (bc.cell == "lstm") {
    c.cell = CellType::lstm;
  } else if (bc.cell == "gru" || bc.cell == "gru-orig") {
    c.cell = CellType::gru;
    c.gru_linear_before_reset = bc.cell == "gru";
  } else if (bc.cell == "rnn_tanh") {
    c.cell = CellType::rnn_tanh;
  } else {
    c.cell = CellType::rnn_relu;
  }
  c.input_size = bc.input;
  c.hidden_size = bc.hidden;
  c.proj_size = bc.proj;
  c.num_layers = bc.layers;
  c.bidirectional = bc.bidirectional;
  c.dropout = o.dropout;
  c.seed = o.case_flags.seed;
  c.dtype = dtype_from_string(o.dtype);
  return c;
}

// What every case of a run shares: the lists of modes, thread counts and math modes.
struct RunLists {
  std::vector<Mode> modes;
  std::vector<int> thread_counts;
  std::vector<MathMode> maths;
};

// --dry-run: the case as the runners see it, from a reference plan (which validates it like
// any plan and names it) and the bench library (lengths, FLOPs). Nothing is allocated or run.
void describe_case(const bench::BenchCase& bc, const BenchOptions& o, const RunLists& lists) {
  const bench::CaseFlags& f = o.case_flags;
  const std::vector<int64_t> lengths =
      checked([&] { return bench::make_lengths(f.lengths, bc.seq, bc.batch, f.seed); });
  const Plan plan(make_config(bc, o), SequenceShape::padded(bc.seq, bc.batch, lengths),
                  PlanOptions{Backend::reference, 1});
  const std::string line = bench::format_case_line(bc);
  if (o.json) {
    nlohmann::ordered_json flops;
    for (Mode mode : lists.modes) flops[to_string(mode)] = bench::flops(bc, mode, plan.tokens());
    const nlohmann::ordered_json j = {{"problem", plan.problem_name()},
                                      {"line", line},
                                      {"cell", bc.cell},
                                      {"layers", bc.layers},
                                      {"bidirectional", bc.bidirectional},
                                      {"input", bc.input},
                                      {"hidden", bc.hidden},
                                      {"proj", bc.proj},
                                      {"seq", bc.seq},
                                      {"batch", bc.batch},
                                      {"lengths", f.lengths},
                                      {"seed", f.seed},
                                      {"length_values", lengths},
                                      {"tokens", plan.tokens()},
                                      {"padded_tokens", bc.seq * bc.batch},
                                      {"flops", flops}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string text = plan.problem_name() + " (" + line + ") lengths=" + f.lengths +
                       " seed=" + std::to_string(f.seed) +
                       " tokens=" + std::to_string(plan.tokens()) + " of " +
                       std::to_string(bc.seq * bc.batch);
    for (Mode mode : lists.modes) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.6g FLOP", to_string(mode),
                    bench::flops(bc, mode, plan.tokens()));
      text += buf;
    }
    text += ":";
    for (int64_t len : lengths) text += " " + std::to_string(len);
    std::printf("%s\n", text.c_str());
  }
  std::fflush(stdout);
}

void time_case(const bench::BenchCase& bc, const BenchOptions& o, const RunLists& lists) {
  const std::vector<Mode>& modes = lists.modes;
  const std::vector<int>& thread_counts = lists.thread_counts;
  const std::vector<MathMode>& maths = lists.maths;
  const bench::CaseFlags& case_flags = o.case_flags;
  const Config config = make_config(bc, o);
  const std::vector<int64_t> lengths = checked(
      [&] { return bench::make_lengths(case_flags.lengths, bc.seq, bc.batch, case_flags.seed); });
  const SequenceShape shape = SequenceShape::padded(bc.seq, bc.batch, lengths);

  // Plans first (one per thread count and math mode), so that every buffer can be sized for
  // all of them.
  std::vector<Plan> plans;
  std::vector<MathMode> plan_math;
  std::vector<int> plan_threads;
  size_t workspace_bytes = 0;
  for (int t : thread_counts) {
    for (MathMode m : maths) {
      Config c = config;
      c.math = m;
      // int8 runs inference only (its plan is built for it); training modes are refused.
      PlanOptions options{backend_from_string(o.backend), t};
      if (m == MathMode::int8) {
        for (Mode mode : modes) {
          if (mode != Mode::infer) {
            invalid(std::string("--math int8 runs --mode infer only, not ") + to_string(mode));
          }
        }
        options.purpose = PlanPurpose::inference;
      }
      plans.emplace_back(c, shape, options);
      plan_math.push_back(m);
      plan_threads.push_back(t);
      const Plan& p = plans.back();
      workspace_bytes = std::max({workspace_bytes, p.forward_workspace_size(false),
                                  p.forward_workspace_size(true), p.backward_workspace_size()});
    }
  }
  const Plan& p0 = plans.front();
  size_t reserve_bytes = 0;
  for (const Plan& p : plans) reserve_bytes = std::max(reserve_bytes, p.reserve_size());
  const size_t es = static_cast<size_t>(dtype_size(config.dtype));
  const bool lstm = config.cell == CellType::lstm;

  Buffer x(p0.x_numel() * es), y(p0.y_numel() * es), dx(p0.x_numel() * es), dy(p0.y_numel() * es);
  Buffer h0(p0.h_numel() * es), hy(p0.h_numel() * es), dh0(p0.h_numel() * es),
      dhy(p0.h_numel() * es);
  Buffer c0(p0.c_numel() * es), cy(p0.c_numel() * es), dc0(p0.c_numel() * es),
      dcy(p0.c_numel() * es);
  Buffer w(p0.weights_numel() * es), dw(p0.weights_numel() * es);
  Buffer workspace(workspace_bytes), reserve(reserve_bytes);
  // Inputs and weights as PyTorch initialises them; states and gradients in [-1, 1).
  bench::SplitMix64 rng(case_flags.seed + 1);
  const double k = 1.0 / std::sqrt(static_cast<double>(bc.hidden));
  fill_uniform(w.get(), config.dtype, p0.weights_numel(), -k, k, rng);
  fill_uniform(x.get(), config.dtype, p0.x_numel(), -1.0, 1.0, rng);
  fill_uniform(dy.get(), config.dtype, p0.y_numel(), -1.0, 1.0, rng);
  fill_uniform(h0.get(), config.dtype, p0.h_numel(), -1.0, 1.0, rng);
  fill_uniform(dhy.get(), config.dtype, p0.h_numel(), -1.0, 1.0, rng);
  fill_uniform(c0.get(), config.dtype, p0.c_numel(), -1.0, 1.0, rng);
  fill_uniform(dcy.get(), config.dtype, p0.c_numel(), -1.0, 1.0, rng);

  // The outputs of a run, to compare a converting plan's with the float32 plan's.
  struct Outputs {
    std::vector<double> y, dx, dw;
  };
  auto outputs = [&](bool backward) {
    Outputs r;
    r.y = values(y.get(), config.dtype, p0.y_numel());
    if (backward) {
      r.dx = values(dx.get(), config.dtype, p0.x_numel());
      r.dw = values(dw.get(), config.dtype, p0.weights_numel());
    }
    return r;
  };
  // Thread counts outside, then each mode, then the math modes one after the other, the
  // whole round `rounds` times: A/B measurements alternate on a noisy machine.
  for (size_t t0 = 0; t0 < plans.size(); t0 += maths.size()) {
    for (Mode mode : modes) {
      for (int round = 0; round < o.rounds; ++round) {
        std::optional<Outputs> fp32_out;
        for (size_t pi = t0; pi < t0 + maths.size(); ++pi) {
          Plan& plan = plans[pi];
          const int threads = plan_threads[pi] > 0 ? plan_threads[pi] : max_threads();
          {
            const bool training = mode != Mode::infer;
            ForwardArgs f;
            f.x = x.get();
            f.h0 = h0.get();
            f.c0 = lstm ? c0.get() : nullptr;
            f.weights = w.get();
            f.y = y.get();
            f.hy = hy.get();
            f.cy = lstm ? cy.get() : nullptr;
            f.training = training;
            f.workspace = workspace.get();
            f.workspace_size = workspace.size();
            f.reserve = training ? reserve.get() : nullptr;
            f.reserve_size = training ? reserve.size() : 0;
            // --keep-weights: inference calls name their (unchanging) weights' version, so the
            // plan keeps what it prepares from them (packed, or quantised for int8), as a
            // server's calls do; without it every call prepares them.
            f.weights_version = !training && o.keep_weights ? 1 : 0;
            BackwardArgs b;
            b.x = x.get();
            b.h0 = f.h0;
            b.c0 = f.c0;
            b.weights = w.get();
            b.dy = dy.get();
            b.dhy = dhy.get();
            b.dcy = lstm ? dcy.get() : nullptr;
            b.dx = dx.get();
            b.dh0 = dh0.get();
            b.dc0 = lstm ? dc0.get() : nullptr;
            b.dweights = dw.get();
            b.workspace = workspace.get();
            b.workspace_size = workspace.size();
            b.reserve = reserve.get();
            b.reserve_size = reserve.size();
            auto once = [&] {
              plan.forward(f);
              if (mode == Mode::fwdbwd) plan.backward(b);
            };
            const bench::Timing timing = bench::time_runs(o.warmup, o.repeat, once);
            const double med = timing.median_ms, lo = timing.min_ms, hi = timing.max_ms;
            const double flops = bench::flops(bc, mode, p0.tokens());
            const double gflops = med > 0.0 ? flops / (med * 1e-3) / 1e9 : 0.0;
            const size_t ws_used =
                std::max(plan.forward_workspace_size(training),
                         mode == Mode::fwdbwd ? plan.backward_workspace_size() : 0);
            const size_t rs_used = training ? plan.reserve_size() : 0;
            // With float32 and a converting plan in the list: the converting plan's error
            // against the float32 plan's outputs on the same inputs.
            const MathMode resolved = resolved_math_mode(plan.config());
            std::string err_text;
            nlohmann::ordered_json err_json;
            if (config.dtype == DataType::f32) {
              Outputs out = outputs(mode == Mode::fwdbwd);
              if (resolved == MathMode::fp32 && !fp32_out) {
                fp32_out = std::move(out);
              } else if ((resolved == MathMode::allow_conversion || resolved == MathMode::int8) &&
                         fp32_out) {
                const double ey = scaled_error(out.y, fp32_out->y);
                err_json["y"] = ey;
                char buf[160];
                std::snprintf(buf, sizeof buf, "  err vs fp32: y %.2e", ey);
                err_text = buf;
                if (mode == Mode::fwdbwd) {
                  const double ex = scaled_error(out.dx, fp32_out->dx);
                  const double ew = scaled_error(out.dw, fp32_out->dw);
                  err_json["dx"] = ex;
                  err_json["dweights"] = ew;
                  std::snprintf(buf, sizeof buf, ", dx %.2e, dweights %.2e", ex, ew);
                  err_text += buf;
                }
              }
            }
            if (o.json) {
              nlohmann::ordered_json j = {{"problem", plan.problem_name()},
                                          {"backend", o.backend},
                                          {"impl", plan.impl_name()},
                                          {"mode", to_string(mode)},
                                          {"threads", threads},
                                          {"dtype", o.dtype},
                                          {"math", to_string(resolved)},
                                          {"round", round},
                                          {"lengths", case_flags.lengths},
                                          {"seed", case_flags.seed},
                                          {"tokens", plan.tokens()},
                                          {"padded_tokens", plan.max_seq_len() * plan.batch()},
                                          {"repeat", o.repeat},
                                          {"ms_median", med},
                                          {"ms_min", lo},
                                          {"ms_max", hi},
                                          {"flops", flops},
                                          {"gflops", gflops},
                                          {"workspace_bytes", ws_used},
                                          {"reserve_bytes", rs_used}};
              if (!err_json.empty()) j["err_vs_fp32"] = err_json;
              std::printf("%s\n", j.dump().c_str());
            } else {
              std::printf(
                  "%s %s %s %s %-6s threads=%d tokens=%lld  median %.3f ms (min %.3f, max %.3f)  "
                  "%.2f GFLOP/s  workspace %s  reserve %s%s\n",
                  plan.problem_name().c_str(), o.dtype.c_str(), to_string(resolved),
                  plan.impl_name().c_str(), to_string(mode), threads,
                  static_cast<long long>(plan.tokens()), med, lo, hi, gflops, mib(ws_used).c_str(),
                  mib(rs_used).c_str(), err_text.c_str());
            }
            std::fflush(stdout);
            g_measurements_done = g_measurements_done + 1;
          }
        }
      }
    }
  }
}

int run_bench(const BenchOptions& o) {
  const InterruptGuard interrupt_guard;
  RunLists lists;
  lists.modes = checked([&] { return bench::parse_modes(o.modes); });
  lists.thread_counts = checked([&] { return bench::parse_threads(o.threads); });
  const bench::BenchCase& flag_case = o.case_flags.bench_case;
  if (o.repeat < 1) invalid("--repeat (= " + std::to_string(o.repeat) + ") must be >= 1");
  if (o.cases.empty() && flag_case.seq < 1)
    invalid("--seq (= " + std::to_string(flag_case.seq) + ") must be >= 1");
  if (o.cases.empty() && flag_case.batch < 1)
    invalid("--batch (= " + std::to_string(flag_case.batch) + ") must be >= 1");
  if (o.rounds < 1) invalid("--rounds (= " + std::to_string(o.rounds) + ") must be >= 1");
  lists.maths = parse_maths(o.maths);
  const std::vector<bench::BenchCase> cases =
      o.cases.empty() ? std::vector<bench::BenchCase>{flag_case}
                      : checked([&] { return bench::read_case_list(o.cases); });
  for (const bench::BenchCase& bc : cases) {
    if (o.dry_run) {
      describe_case(bc, o, lists);
    } else {
      time_case(bc, o, lists);
    }
  }
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = parent.add_subcommand(
      "bench", "Time a case given by flags, or every case of a list (docs/bench.md)");
  bench::add_case_flags(*app, o->case_flags);
  CLI::Option* cases =
      app->add_option("--cases", o->cases,
                      "A case list (bench/problems.txt) instead of --cell ... --seq: every "
                      "case in turn, with the same other flags");
  for (const char* flag : {"--cell", "--layers", "--bidirectional", "--input", "--hidden", "--proj",
                           "--batch", "--seq"}) {
    cases->excludes(flag);
  }
  app->add_flag("--dry-run", o->dry_run,
                "Print each case (name, lengths, tokens, FLOPs per --mode) instead of timing it");
  // Without a list the case flags are required; checked while parsing, so that the error
  // points at `rnnx bench --help` like any other parse error.
  app->callback([app, o] {
    if (o->cases.empty()) bench::require_case_flags(*app);
  });
  app->add_option("--mode", o->modes, "infer, train, fwdbwd, or a comma-separated list")
      ->capture_default_str();
  app->add_option(
         "--threads", o->threads,
         "Thread count or comma-separated list (0 = the default: OMP_NUM_THREADS, else the CPUs)")
      ->capture_default_str();
  add_host_backend_option(*app, o->backend, "bench/cuda/rnnx_cuda_bench (tools/gpu-check --bench)");
  app->add_option("--dtype", o->dtype,
                  "float32, float64, bfloat16 or float16 (16-bit storage, float32 compute)")
      ->check(CLI::IsMember({"float32", "float64", "bfloat16", "float16"}))
      ->capture_default_str();
  app->add_option("--math", o->maths,
                  "Math mode or comma-separated list: fp32, allow_conversion (bf16 GEMMs), "
                  "int8 (dynamic quantisation, infer only), from_environment "
                  "(RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION); a converting or int8 plan after an "
                  "fp32 one reports its error against it")
      ->capture_default_str();
  app->add_option("--rounds", o->rounds,
                  "Repeat every (mode, math) measurement this many times, alternating")
      ->capture_default_str();
  app->add_option("--dropout", o->dropout, "Dropout between layers (train and fwdbwd only)")
      ->capture_default_str();
  app->add_option("--repeat", o->repeat, "Timed runs per measurement")->capture_default_str();
  app->add_option("--warmup", o->warmup, "Untimed runs before the timed ones")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_flag("--json", o->json, "One JSON object per line");
  app->add_flag("--keep-weights", o->keep_weights,
                "Inference calls name their weights' version, so plans keep their packed "
                "(int8: quantised) weights across calls, as a server's do");
  return {app, [o] { return run_bench(*o); }};
}

}  // namespace rnnx::tool
