// Length distributions, random data and FLOP counts for `rnnx bench` (docs/bench.md).
#include "bench_problem.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "rnnx/error.hpp"

namespace rnnx::tool {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

// longtail: one sequence in kLongShare has the full length T; the others are short, with an
// exponential length of mean T / kShortScale (plus one), capped at T.
constexpr int64_t kLongShare = 8;
constexpr double kShortScale = 8.0;

std::vector<int64_t> lengths_from_file(const std::string& path, int64_t T, int64_t B) {
  std::ifstream in(path);
  if (!in) {
    invalid("--lengths " + path + ": not full, uniform or longtail, and no such file can be read");
  }
  std::vector<int64_t> lengths;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;  // blank lines are allowed
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(line.substr(first), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const auto rest = line.find_first_not_of(" \t\r", first + used);
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

double forward_flops(const Config& c, int64_t tokens) {
  const double G = static_cast<double>(gates_per_cell(c.cell)),
               H = static_cast<double>(c.hidden_size);
  const double P = static_cast<double>(c.output_size()),
               D = static_cast<double>(c.num_directions());
  double per_token = 0.0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const double in = l == 0 ? static_cast<double>(c.input_size) : D * P;
    per_token += D * (2.0 * G * H * (in + P) + (c.proj_size > 0 ? 2.0 * H * P : 0.0));
  }
  return per_token * static_cast<double>(tokens);
}

void fill_uniform(void* data, DataType dtype, int64_t n, double lo, double hi, SplitMix64& rng) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = lo + (hi - lo) * rng.uniform01();
    if (dtype == DataType::f64) {
      static_cast<double*>(data)[i] = v;
    } else {
      static_cast<float*>(data)[i] = static_cast<float>(v);
    }
  }
}

}  // namespace rnnx::tool
