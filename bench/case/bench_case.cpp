// Bench cases, their names, lengths and FLOP counts, the case-list format and the timing
// loop (bench_case.hpp; the definitions are docs/bench.md's).
#include "bench_case.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace rnnx::bench {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw std::invalid_argument(msg);
}

// longtail: one sequence in kLongShare has the full length T; the others are short, with an
// exponential length of mean T / kShortScale (plus one), capped at T.
constexpr int64_t kLongShare = 8;
constexpr double kShortScale = 8.0;
constexpr int kMaxThreads = 4096;

constexpr const char* kBlank = " \t\r";

std::vector<int64_t> lengths_from_file(const std::string& path, int64_t T, int64_t B) {
  std::ifstream in(path);
  if (!in) {
    invalid("--lengths " + path + ": not full, uniform or longtail, and no such file can be read");
  }
  std::vector<int64_t> lengths;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto first = line.find_first_not_of(kBlank);
    if (first == std::string::npos) continue;  // blank lines are allowed
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(line.substr(first), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const auto rest = line.find_first_not_of(kBlank, first + used);
    if (used == 0 || rest != std::string::npos) {
      invalid(path + ":" + std::to_string(line_no) + ": expected one integer length, got '" + line +
              "'");
    }
    if (v < 0 || v > T) {
      invalid(path + ":" + std::to_string(line_no) + ": length " + std::to_string(v) +
              " must be in [0, --seq (= " + std::to_string(T) + ")]");
    }
    lengths.push_back(v);
  }
  if (static_cast<int64_t>(lengths.size()) != B) {
    invalid(path + ": has " + std::to_string(lengths.size()) + " lengths but --batch is " +
            std::to_string(B));
  }
  return lengths;
}

void at_least(const char* flag, int64_t value, int64_t least) {
  if (value < least) {
    invalid(std::string(flag) + " (= " + std::to_string(value) +
            ") must be >= " + std::to_string(least));
  }
}

template <typename T>
void fill(T* data, int64_t n, double lo, double hi, SplitMix64& rng) {
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(lo + (hi - lo) * rng.uniform01());
}

}  // namespace

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform01() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

const std::vector<std::string>& cell_names() {
  static const std::vector<std::string> names = {"lstm", "gru", "gru-orig", "rnn_tanh", "rnn_relu"};
  return names;
}

int64_t gates_per_cell(const std::string& cell) {
  if (cell == "lstm") return 4;
  if (cell == "gru" || cell == "gru-orig") return 3;
  if (cell == "rnn_tanh" || cell == "rnn_relu") return 1;
  invalid("--cell '" + cell + "' is not one of lstm, gru, gru-orig, rnn_tanh, rnn_relu");
}

void validate(const BenchCase& c) {
  gates_per_cell(c.cell);
  at_least("--input", c.input, 1);
  at_least("--hidden", c.hidden, 1);
  at_least("--batch", c.batch, 1);
  at_least("--seq", c.seq, 1);
  at_least("--layers", c.layers, 1);
  if (c.proj < 0 || (c.proj > 0 && c.cell != "lstm")) {
    invalid("--proj (= " + std::to_string(c.proj) + ") needs --cell lstm and must be >= 0");
  }
}

std::string case_name(const BenchCase& c, const std::vector<int64_t>& lengths) {
  const bool full =
      std::all_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l == c.seq; });
  return c.cell + "_l" + std::to_string(c.layers) + (c.bidirectional ? "_bidir" : "_uni") + "_t" +
         std::to_string(c.seq) + "_b" + std::to_string(c.batch) + "_i" + std::to_string(c.input) +
         "_h" + std::to_string(c.hidden) + "_p" + std::to_string(c.proj) + "_len-" +
         (full ? "full" : "mixed");
}

std::string format_case_line(const BenchCase& c) {
  if (!c.line.empty()) return c.line;
  return c.cell + (c.bidirectional ? " bidir" : " uni") + " l=" + std::to_string(c.layers) +
         " i=" + std::to_string(c.input) + " h=" + std::to_string(c.hidden) +
         " p=" + std::to_string(c.proj) + " t=" + std::to_string(c.seq) +
         " b=" + std::to_string(c.batch);
}

BenchCase parse_case_line(const std::string& text, const std::string& where) {
  const std::string code = text.substr(0, text.find('#'));
  std::istringstream words(code);
  BenchCase c;
  if (!(words >> c.cell)) invalid(where + ": no case on this line");
  const auto& cells = cell_names();
  if (std::find(cells.begin(), cells.end(), c.cell) == cells.end()) {
    invalid(where + ": cell '" + c.cell +
            "' is not one of lstm, gru, gru-orig, rnn_tanh, rnn_relu");
  }
  struct Key {
    const char* name;
    int64_t* value;
    bool required;
  };
  const Key keys[] = {{"l", &c.layers, false}, {"i", &c.input, true}, {"h", &c.hidden, true},
                      {"p", &c.proj, false},   {"t", &c.seq, true},   {"b", &c.batch, true}};
  std::vector<bool> seen(std::size(keys), false);
  for (std::string w; words >> w;) {
    if (w == "bidir" || w == "uni") {
      c.bidirectional = w == "bidir";
      continue;
    }
    const auto eq = w.find('=');
    const std::string k = w.substr(0, eq), v = eq == std::string::npos ? "" : w.substr(eq + 1);
    size_t i = 0;
    while (i < std::size(keys) && k != keys[i].name) ++i;
    const bool digits =
        !v.empty() && v.size() < 19 && v.find_first_not_of("0123456789") == std::string::npos;
    if (i == std::size(keys) || !digits) {
      invalid(where + ": '" + w + "' is not bidir, uni or one of l=N, i=N, h=N, p=N, t=N, b=N");
    }
    *keys[i].value = std::stoll(v);
    seen[i] = true;
  }
  std::string missing;
  for (size_t i = 0; i < std::size(keys); ++i) {
    if (keys[i].required && !seen[i])
      missing += std::string(missing.empty() ? "" : ", ") + keys[i].name + "=";
  }
  if (!missing.empty()) invalid(where + ": missing " + missing);
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    invalid(where + ": " + e.what());
  }
  const auto first = code.find_first_not_of(kBlank), last = code.find_last_not_of(kBlank);
  c.line = code.substr(first, last - first + 1);
  return c;
}

std::vector<BenchCase> read_case_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) invalid("case list " + path + " cannot be read");
  std::vector<BenchCase> cases;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string code = line.substr(0, line.find('#'));
    if (code.find_first_not_of(kBlank) == std::string::npos) continue;
    cases.push_back(parse_case_line(code, path + ":" + std::to_string(line_no)));
  }
  if (cases.empty()) invalid("case list " + path + " holds no case");
  return cases;
}

std::vector<int64_t> make_lengths(const std::string& spec, int64_t T, int64_t B, uint64_t seed) {
  std::vector<int64_t> lengths(B, T);
  SplitMix64 rng(seed);
  if (spec == "full") return lengths;
  if (spec == "uniform") {
    for (auto& len : lengths)
      len = 1 + std::min(T - 1, static_cast<int64_t>(rng.uniform01() * static_cast<double>(T)));
    return lengths;
  }
  if (spec == "longtail") {
    // Which sequences are long: the first k of a seeded Fisher-Yates shuffle of 0..B-1.
    std::vector<int64_t> order(B);
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = B - 1; i > 0; --i) {
      std::swap(order[i], order[rng.next() % static_cast<uint64_t>(i + 1)]);
    }
    const int64_t long_count = std::max<int64_t>(1, B / kLongShare);
    std::vector<char> is_long(B, 0);
    for (int64_t i = 0; i < long_count; ++i) is_long[order[i]] = 1;
    for (int64_t b = 0; b < B; ++b) {
      if (is_long[b]) continue;
      const double e = -std::log1p(-rng.uniform01()) * static_cast<double>(T) / kShortScale;
      lengths[b] = std::min(T, 1 + static_cast<int64_t>(e));
    }
    return lengths;
  }
  return lengths_from_file(spec, T, B);
}

const char* to_string(Mode m) {
  return m == Mode::infer ? "infer" : m == Mode::train ? "train" : "fwdbwd";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> items;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<Mode> parse_modes(const std::string& list) {
  std::vector<Mode> modes;
  for (const auto& m : split_list(list)) {
    if (m == "infer")
      modes.push_back(Mode::infer);
    else if (m == "train")
      modes.push_back(Mode::train);
    else if (m == "fwdbwd")
      modes.push_back(Mode::fwdbwd);
    else
      invalid("--mode '" + m + "' is not one of infer, train, fwdbwd");
  }
  if (modes.empty()) invalid("--mode is empty");
  return modes;
}

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> threads;
  for (const auto& t : split_list(list)) {
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > kMaxThreads) {
      invalid("--threads '" + t + "' is not a thread count (0 = the default)");
    }
    threads.push_back(static_cast<int>(v));
  }
  if (threads.empty()) invalid("--threads is empty");
  return threads;
}

double forward_flops(const BenchCase& c, int64_t tokens) {
  const double G = static_cast<double>(gates_per_cell(c.cell)), H = static_cast<double>(c.hidden);
  const double P = static_cast<double>(c.output_size()), D = static_cast<double>(c.directions());
  double per_token = 0.0;
  for (int64_t l = 0; l < c.layers; ++l) {
    const double in = l == 0 ? static_cast<double>(c.input) : D * P;
    per_token += D * (2.0 * G * H * (in + P) + (c.proj > 0 ? 2.0 * H * P : 0.0));
  }
  return per_token * static_cast<double>(tokens);
}

double flops(const BenchCase& c, Mode mode, int64_t tokens) {
  return forward_flops(c, tokens) * (mode == Mode::fwdbwd ? 3.0 : 1.0);
}

void fill_uniform(float* data, int64_t n, double lo, double hi, SplitMix64& rng) {
  fill(data, n, lo, hi, rng);
}

void fill_uniform(double* data, int64_t n, double lo, double hi, SplitMix64& rng) {
  fill(data, n, lo, hi, rng);
}

Timing time_runs(int warmup, int repeat, const std::function<void()>& once) {
  for (int i = 0; i < warmup; ++i) once();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    once();
    const auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  return t;
}

}  // namespace rnnx::bench
