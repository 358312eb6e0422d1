// What every runner of the benchmark agrees on, apart from the kernels: a bench case (the
// network and the padded shape), its printable name, the seeded length distributions (full,
// uniform, longtail, or a file), the FLOP count on real tokens, the case-list format of
// bench/problems.txt, the data generator and the timing loop. `rnnx bench` and
// rnnx_onednn_peer link it; the tests read the case lists through it; the Python runners ask
// `rnnx bench --dry-run` (docs/bench.md states every definition). Plain C++: neither rnnx nor
// oneDNN, so that the oneDNN peer does not link the library it is compared with.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rnnx::bench {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable, and the same on every platform,
// unlike the distributions of <random>, so a length list can be reproduced elsewhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform01();  // [0, 1) with 53 random bits
 private:
  uint64_t state_;
};

// The cells, spelt as in flags and lists: lstm, gru (linear before reset, PyTorch's),
// gru-orig (ONNX's default GRU), rnn_tanh, rnn_relu.
const std::vector<std::string>& cell_names();
int64_t gates_per_cell(const std::string& cell);  // 4, 3, 3, 1, 1

// One row of the benchmark before the lengths are drawn: the network and the padded
// shape [T, B, I]. Its flags and list keys are docs/bench.md's and bench/README.md's.
struct BenchCase {
  std::string cell = "lstm";
  int64_t layers = 1;
  bool bidirectional = false;
  int64_t input = 0;
  int64_t hidden = 0;
  int64_t proj = 0;   // LSTM projection size P, 0 = none
  int64_t seq = 0;    // T, the longest length
  int64_t batch = 0;  // B
  std::string line;   // the text of its line in a case list; empty when given by flags

  int64_t directions() const { return bidirectional ? 2 : 1; }
  int64_t output_size() const { return proj > 0 ? proj : hidden; }  // P'
};

// Throws std::invalid_argument naming the flag and its value, e.g. "--input (= 0) must be >= 1".
void validate(const BenchCase& c);

// The printable name, rnnx's Plan::problem_name():
// {cell}_l{L}_{uni|bidir}_t{T}_b{B}_i{I}_h{H}_p{P}_len-{full|mixed}.
std::string case_name(const BenchCase& c, const std::vector<int64_t>& lengths);

// The case as a line of a case list: its `line` when it came from one, else written out
// with every key, e.g. `lstm bidir l=2 i=256 h=256 p=0 t=100 b=32`.
std::string format_case_line(const BenchCase& c);

// A case list: one case a line, `CELL [bidir|uni] l=LAYERS i=INPUT h=HIDDEN [p=PROJ]
// t=LONGEST_LENGTH b=BATCH`, '#' starts a comment. Throws std::invalid_argument naming
// the file and line.
BenchCase parse_case_line(const std::string& text, const std::string& where);
std::vector<BenchCase> read_case_list(const std::string& path);

// `spec` is full, uniform, longtail or the path of a file with one length per line.
// Throws std::invalid_argument for a bad file.
std::vector<int64_t> make_lengths(const std::string& spec, int64_t T, int64_t B, uint64_t seed);

enum class Mode { infer, train, fwdbwd };
const char* to_string(Mode m);

// Comma-separated lists of flags; each throws std::invalid_argument naming the bad item.
std::vector<std::string> split_list(const std::string& s);
std::vector<Mode> parse_modes(const std::string& list);
std::vector<int> parse_threads(const std::string& list);  // each in [0, 4096]

// FLOPs of one inference forward over `tokens` real tokens (GEMM work only): per token,
// layer and direction 2*G*H*(I_l + P') + (proj ? 2*H*P' : 0). A mode's count: fwdbwd
// adds the backward at twice the forward.
double forward_flops(const BenchCase& c, int64_t tokens);
double flops(const BenchCase& c, Mode mode, int64_t tokens);

// Fills `n` elements uniformly in [lo, hi): lo + (hi - lo) * uniform01(), rounded to the type.
void fill_uniform(float* data, int64_t n, double lo, double hi, SplitMix64& rng);
void fill_uniform(double* data, int64_t n, double lo, double hi, SplitMix64& rng);

// `warmup` untimed calls, then `repeat` calls each timed alone (steady_clock): the median
// (the mean of the two middle ones for an even count), the minimum and the maximum, in ms.
struct Timing {
  double median_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
};
Timing time_runs(int warmup, int repeat, const std::function<void()>& once);

}  // namespace rnnx::bench
