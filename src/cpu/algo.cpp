// The algorithm space of a cpu plan: the environment's forced choices, the heuristic, the
// candidates the search measures, and their names.
#include "cpu/algo.hpp"

#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

#include "cpu/library_gemm.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/thread_pool.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cpu {
namespace {

// The forced value of one choice: the plan's option when set (PlanOptions::cpu), else the
// environment variable's; "" when neither forces one (unset or "auto"), else one of `allowed`.
std::string forced_value(const std::string& option, const char* option_name, const char* variable,
                         std::initializer_list<const char*> allowed) {
  const char* env = std::getenv(variable);
  const bool from_option = !option.empty();
  const std::string v = from_option ? option : env ? env : "";
  if (v.empty() || v == "auto") return "";
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += std::string(a) + ", ";
  }
  const std::string source =
      from_option ? std::string("cpu choice ") + option_name : std::string(variable);
  throw Error(Status::invalid_argument, source + " (= \"" + v + "\") must be " + list + "auto" +
                                            (from_option ? "" : ", or unset"));
}

// The values of one choice the search may take: the forced one alone, else `all`.
template <typename V>
std::vector<V> allowed(bool forced, V forced_to, std::vector<V> all) {
  if (forced) return {forced_to};
  return all;
}

// The packed engines project the rows of large steps in the loop; the others (which repack
// the weights at every call) all before it.
InputProjection default_input(GemmEngine engine) {
  return is_packed(engine) ? InputProjection::split : InputProjection::bulk;
}

// The gemm choice (RNNX_CPU_GEMM): packed, sgemm (where the build has oneDNN), plain, or
// nothing forced.
GemmForce gemm_force(const CpuChoices& choices) {
  const std::string v =
      forced_value(choices.gemm, "gemm", "RNNX_CPU_GEMM", {"packed", "sgemm", "plain"});
  if (v == "sgemm" && !have_onednn()) {
    throw Error(Status::unsupported,
                std::string(choices.gemm.empty() ? "RNNX_CPU_GEMM" : "cpu choice gemm") +
                    " (= \"sgemm\") asks for oneDNN's sgemm, but this build has no "
                    "oneDNN (configured with RNNX_WITH_ONEDNN=OFF, or oneDNN was not found): use "
                    "packed, plain or auto");
  }
  return v == "packed"  ? GemmForce::packed
         : v == "sgemm" ? GemmForce::library
         : v == "plain" ? GemmForce::plain
                        : GemmForce::none;
}

bool team_capable(bool team_rows, GemmEngine engine) {
  return is_packed(engine) && team_rows;
}

}  // namespace

int plan_threads(const PlanContext& ctx) {
  return ctx.options.num_threads > 0 ? ctx.options.num_threads : max_threads();
}

AlgoSpace algo_space(const PlanContext& ctx) {
  return algo_space(ctx, ctx.schedule.B <= kPackedChunkRows, plan_threads(ctx) >= 2);
}

AlgoSpace algo_space(const PlanContext& ctx, bool team_rows, bool threads) {
  const bool f32 = ctx.config.dtype == DataType::f32;
  const bool two_dirs = ctx.config.num_directions() == 2;
  const CpuChoices& choices = ctx.options.cpu;
  const GemmForce gemm = gemm_force(choices);
  const std::string loop =
      forced_value(choices.time_loop, "time_loop", "RNNX_CPU_TIME_LOOP", {"team", "per-step"});
  const std::string dirs = forced_value(choices.directions, "directions", "RNNX_CPU_DIRECTIONS",
                                        {"concurrent", "sequential"});
  const std::string input = forced_value(choices.input_projection, "input_projection",
                                         "RNNX_CPU_INPUT_PROJECTION", {"split", "bulk", "steps"});

  // float64 always runs the BLAS (plain without one). float32: the engine gemm_engine_for()
  // picks (the packed engine on the ISA level's kernels, in bf16 with math mode
  // allow_conversion where the machine can), and where the build has oneDNN, dnnl_sgemm as
  // the alternative to the float32 packed one (it wins on tiny problems; the plain loops are
  // no such alternative). The search never changes the math mode: a bf16 engine has no
  // float32 alternative.
  const Isa isa = isa_for_plan(choices.isa);
  const GemmEngine best_engine = gemm_engine_for(f32, ctx.math, gemm, isa);
  std::vector<GemmEngine> engines = {best_engine};
  if (gemm == GemmForce::none && best_engine == GemmEngine::packed && have_onednn()) {
    engines.push_back(GemmEngine::library);
  }

  AlgoSpace space;
  space.isa = isa;
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"gemm", gemm == GemmForce::packed    ? "packed"
                                                    : gemm == GemmForce::library ? "sgemm"
                                                    : gemm == GemmForce::plain   ? "plain"
                                                                                 : ""},
        {"time_loop", loop},
        {"directions", dirs},
        {"input_projection", input}}) {
    if (value.empty()) continue;
    if (!space.forced.empty()) space.forced += ' ';
    space.forced += name;
    space.forced += '=';
    space.forced += value;
  }
  for (GemmEngine engine : engines) {
    const bool capable = team_capable(team_rows, engine);
    // Team loops on one thread or with another engine only when forced (the forced value
    // then holds for the engines that can run it).
    const std::vector<bool> teams =
        !capable ? std::vector<bool>{false}
                 : allowed(!loop.empty() || !threads, loop == "team", {true, false});
    const std::vector<bool> concurrent =
        !two_dirs ? std::vector<bool>{false}
                  : allowed(!dirs.empty() || !threads, dirs == "concurrent", {true, false});
    std::vector<InputProjection> inputs = {default_input(engine)};
    if (input == "bulk") inputs = {InputProjection::bulk};
    if (input == "steps") inputs = {InputProjection::steps};
    if (input.empty() && is_packed(engine)) {
      inputs = {InputProjection::split, InputProjection::bulk};
    }
    for (bool team : teams) {
      for (bool conc : concurrent) {
        for (InputProjection in : inputs) space.candidates.push_back({engine, team, conc, in});
      }
    }
  }
  // The heuristic: the first engine, team loops and concurrent directions wherever there
  // are threads for them, the engine's input projection, unless forced otherwise. LSTM
  // with projection steps one region at a time: on a quiet machine its team loop is about
  // as fast (the search keeps it where it measures faster), but beside a busy process its
  // two barriers per step cost more (docs/robustness.md, "A shared machine").
  const bool proj = ctx.config.cell == CellType::lstm && ctx.config.proj_size > 0;
  Algo h;
  h.engine = engines.front();
  h.team_loops =
      team_capable(team_rows, h.engine) && (loop.empty() ? threads && !proj : loop == "team");
  h.concurrent_dirs = two_dirs && (dirs.empty() ? threads : dirs == "concurrent");
  h.input = default_input(h.engine);
  if (input == "bulk") h.input = InputProjection::bulk;
  if (input == "steps") h.input = InputProjection::steps;
  space.heuristic = h;
  for (size_t i = 0; i < space.candidates.size(); ++i) {
    if (space.candidates[i] == h) {
      std::swap(space.candidates[i], space.candidates[0]);
      break;
    }
  }
  return space;
}

int64_t step_input_min_rows(InputProjection input) {
  if (input == InputProjection::steps) return 1;
  if (input == InputProjection::bulk) return std::numeric_limits<int64_t>::max();
  return kStepInputMinRows;
}

std::string algo_name(const Algo& algo, bool float32, Isa isa) {
  std::string s = gemm_engine_name(algo.engine, float32, isa);
  if (algo.team_loops) s += "/team";
  if (algo.concurrent_dirs) s += "/dirs-concurrent";
  if (algo.input != default_input(algo.engine)) {
    s += algo.input == InputProjection::bulk    ? "/input-bulk"
         : algo.input == InputProjection::steps ? "/input-steps"
                                                : "/input-split";
  }
  return s;
}

bool parse_algo(const std::string& text, Algo* out) {
  std::istringstream in(text);
  std::string part;
  Algo a;
  bool first = true, input_set = false;
  while (std::getline(in, part, '/')) {
    if (first) {
      // Either dtype's library name: the key of a stored choice holds the dtype.
      if (part == "onednn-sgemm" || part == "openblas-dgemm" || part == "blas-dgemm") {
        a.engine = GemmEngine::library;
      } else {
        bool known = false;
        for (GemmEngine e :
             {GemmEngine::plain, GemmEngine::packed, GemmEngine::packed_bf16,
              GemmEngine::packed_amx, GemmEngine::packed_int8, GemmEngine::packed_int8_scalar}) {
          for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
            if (part == gemm_engine_name(e, true, isa)) {
              a.engine = e;
              known = true;
            }
          }
        }
        if (!known) return false;
      }
      first = false;
    } else if (part == "team") {
      a.team_loops = true;
    } else if (part == "dirs-concurrent") {
      a.concurrent_dirs = true;
    } else if (part == "input-bulk" || part == "input-steps" || part == "input-split") {
      a.input = part == "input-bulk"    ? InputProjection::bulk
                : part == "input-steps" ? InputProjection::steps
                                        : InputProjection::split;
      input_set = true;
    } else {
      return false;
    }
  }
  if (first) return false;
  if (!input_set) a.input = default_input(a.engine);
  *out = a;
  return true;
}

}  // namespace rnnx::cpu
