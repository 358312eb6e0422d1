// The ways the cpu backend can run one problem (an Algo), which of them the environment
// allows, the heuristic default, and their names: the search (autotune.cpp) measures the
// allowed ones, RNNX_AUTOTUNE=0 takes the heuristic. docs/cpu.md describes each choice.
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cpu/gemm.hpp"
#include "cpu/isa.hpp"

namespace rnnx::cpu {

// Where the input projection x W_ih^T runs: `split` projects the steps with at least
// kStepInputMinRows rows in the time loop (packed engine) and the others before it; `bulk`
// every row before the loop; `steps` every step in the loop.
enum class InputProjection { split, bulk, steps };

struct Algo {
  GemmEngine engine = GemmEngine::plain;
  bool team_loops = false;       // each time loop one parallel region (forward.cpp)
  bool concurrent_dirs = false;  // the two directions' loops at once, one thread each
  InputProjection input = InputProjection::bulk;

  bool operator==(const Algo&) const = default;
};

// From this many rows a step projects its input in the time loop under `split`: the
// product is about as fast there as in one GEMM over all tokens, and its gates are then
// still in cache for the step kernel, where a bulk projection writes float32 gates for every
// token (9.8 MB for a GRU H 512, B 16, T 100) that the step kernels read back from beyond L2.
// Measured on a Zen 4, one thread, I = H = 512, T 100 (`RNNX_CPU_INPUT_PROJECTION=bulk|steps
// rnnx bench --keep-weights`): in the loop int8 was 12-14% faster at B 16-28, 2-3% at B 8,
// even at B 4 and 20-60% slower at B 1-2 (a 1- or 2-row product per step); bfloat16 3-7%
// faster at B 8-24, float32 1-7% at B 4-24 on one and two threads, capped at AVX2 within 1%
// either way. It was 32 (float32 on an earlier machine); the search still measures both
// `split` and `bulk`.
constexpr int64_t kStepInputMinRows = 8;

// The fewest rows a step needs to project its input in the time loop under `input` (none:
// never, for `bulk`).
int64_t step_input_min_rows(InputProjection input);

// The threads a plan's calls run on.
int plan_threads(const PlanContext& ctx);

// The heuristic choice, and every choice the search may try, for this problem: the values
// forced by RNNX_CPU_GEMM, RNNX_CPU_TIME_LOOP, RNNX_CPU_DIRECTIONS and
// RNNX_CPU_INPUT_PROJECTION are the only ones of their kind; where nothing is forced, every
// value that can run (team loops need the packed engine and at most kPackedChunkRows rows;
// directions need two, and threads to gain from, unless forced).
// Throws Error(invalid_argument) naming the variable for a value it does not know, and
// Error(unsupported) for RNNX_CPU_GEMM=sgemm in a build without oneDNN.
struct AlgoSpace {
  Algo heuristic;
  std::vector<Algo> candidates;  // heuristic first
  // The ISA level every candidate runs at, read once here (isa_for_plan(): refuses an
  // unknown RNNX_CPU_ISA): the engines above depend on it, and the plan keeps it.
  Isa isa = Isa::scalar;
  // The choices forced (by the plan's options or the environment), "gemm=packed
  // time_loop=team", "" for none: a search among fewer candidates is stored apart.
  std::string forced;
};
AlgoSpace algo_space(const PlanContext& ctx);
// The same for a batch of at most kPackedChunkRows rows (`team_rows`) or more, on two or more
// threads (`threads`) or one: all the batch's shape decides (network_choices.hpp).
AlgoSpace algo_space(const PlanContext& ctx, bool team_rows, bool threads);

// The choice of a plan of level `isa`, as impl_name() shows it after the ISA:
// "{gemm}[/team][/dirs-concurrent][/input-bulk|/input-steps]"; and back (false for a text
// that is not one; the packed engine's name of any level is read as the packed engine).
std::string algo_name(const Algo& algo, bool float32, Isa isa);
bool parse_algo(const std::string& text, Algo* out);

}  // namespace rnnx::cpu
