// `rnnx info`: version, build options, the backends this build can run (probed by
// building a tiny plan on each, so "available" means a plan really builds), the CPU ISA
// detected and used, the GEMM engine, the math mode (whether float32 GEMMs can run in bf16
// and what RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION selects), the default thread count and the
// algorithm search, and whether the cpu probe's algorithm came from the search or the
// heuristic. Text or --json.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "rnnx/rnnx.hpp"

namespace rnnx::tool {
namespace {

struct BackendProbe {
  Backend backend;
  bool available = false;
  std::string detail;   // the impl name of the probe plan, or why it could not be built
  std::string problem;  // the probe's problem name
  ChoiceOrigin origin;
};

BackendProbe probe(Backend backend) {
  BackendProbe p{backend, false, {}, {}, {}};
  Config config;  // the smallest LSTM: enough to make the backend build a plan
  config.input_size = 1;
  config.hidden_size = 1;
  try {
    Plan plan(config, SequenceShape::padded(1, 1), PlanOptions{backend, 0});
    p.available = true;
    p.detail = plan.impl_name();
    p.problem = plan.problem_name();
    p.origin = choice_origin(p.detail);
  } catch (const Error& e) {
    p.detail = std::string(to_string(e.code())) + ": " + e.what();
  }
  return p;
}

// Math mode allow_conversion on this machine: the bf16 GEMM kernel, and what the
// environment variable selects for configs left at from_environment.
struct MathProbe {
  std::string bf16_gemm;  // amx-bf16, avx512-bf16, none, or the error
  std::string int8_gemm;  // avx512-vnni, scalar, none, or the error
  const char* env_value;  // null when unset
  std::string selected;   // fp32, allow_conversion, or "invalid: <message>"
};

MathProbe probe_math() {
  MathProbe m;
  try {
    m.bf16_gemm = cpu_bf16_gemm();
  } catch (const Error& e) {
    m.bf16_gemm = std::string("invalid: ") + e.what();
  }
  try {
    m.int8_gemm = cpu_int8_gemm();
  } catch (const Error& e) {
    m.int8_gemm = std::string("invalid: ") + e.what();
  }
  m.env_value = std::getenv("RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION");
  Config config;
  try {
    m.selected = to_string(resolved_math_mode(config));
  } catch (const Error& e) {
    m.selected = std::string("invalid: ") + e.what();
  }
  return m;
}

int run_info(bool as_json) {
  const MathProbe math = probe_math();
  const BuildInfo build = build_info();
  const BackendProbe probes[] = {probe(Backend::reference), probe(Backend::cpu),
                                 probe(Backend::cuda)};
  if (as_json) {
    nlohmann::ordered_json j;
    j["version"] = build.version;
    j["build_type"] = build.build_type;
    j["compiler"] = build.compiler;
    j["sanitizers"] = build.sanitizers;
    for (const auto& p : probes) {
      auto& b = j["backends"][to_string(p.backend)];
      b = {{"available", p.available}, {"detail", p.detail}};
      if (!p.origin.key.empty()) {
        b["probe"] = p.problem;
        b["choice"] = p.origin.key;
      }
    }
    j["cpu_isa_detected"] = cpu_isa_detected();
    j["cpu_isa_used"] = cpu_isa_used();
    j["cpu_features"] = cpu_features_detected();
    j["gemm_engine"] = build.gemm_engine;
    j["with_onednn"] = build.with_onednn;
    j["with_blas"] = build.with_blas;
    j["built_backends"] = build.backends;
    j["plugins"] = build.plugins;
    j["math"] = {{"bf16_gemm", math.bf16_gemm},
                 {"int8_gemm", math.int8_gemm},
                 {"RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION",
                  math.env_value ? nlohmann::ordered_json(math.env_value) : nullptr},
                 {"from_environment", math.selected}};
    j["threads"] = max_threads();
    j["autotune"] = autotune_enabled();
    j["autotune_cache"] = autotune_cache_file();
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("rnnx %s\n", build.version);
  std::printf("build:     %s, compiler %s, sanitizers %s, backends %s\n", build.build_type,
              build.compiler, build.sanitizers ? "on" : "off", build.backends);
  // Backends from plugins (rnnx/plugin.hpp): the file and its libraries, or why not loaded.
  if (*build.plugins != '\0') std::printf("plugins:   %s\n", build.plugins);
  for (const auto& p : probes) {
    std::printf("backend:   %-9s %s (%s)\n", to_string(p.backend),
                p.available ? "available" : "not available", p.detail.c_str());
    if (!p.origin.key.empty()) {
      // The probe is a toy problem: its choice says nothing about another problem's.
      std::printf("           probe %s: %s; each problem gets its own\n", p.problem.c_str(),
                  p.origin.text.c_str());
    }
  }
  std::printf("cpu isa:   detected %s, used %s\n", cpu_isa_detected(), cpu_isa_used());
  std::printf("cpu flags: %s\n", *cpu_features_detected() ? cpu_features_detected() : "(none)");
  std::printf("gemm:      %s\n", build.gemm_engine);
  const bool bf16 = math.bf16_gemm == "amx-bf16" || math.bf16_gemm == "avx512-bf16";
  std::printf(
      "math:      allow_conversion runs float32 GEMMs %s\n",
      bf16 ? ("in bf16 on " + math.bf16_gemm +
              (math.bf16_gemm == "amx-bf16" ? " (AMX tiles)" : " (vdpbf16ps)"))
                 .c_str()
           : ("in float32: no AVX512-BF16 within the ISA cap (" + math.bf16_gemm + ")").c_str());
  std::printf("           int8 runs on %s\n",
              math.int8_gemm == "amx-int8"      ? "AMX-INT8 tiles (tdpbusd)"
              : math.int8_gemm == "avx512-vnni" ? "vpdpbusd (AVX512-VNNI)"
              : math.int8_gemm == "avx-vnni"    ? "vpdpbusd on ymm (AVX-VNNI)"
              : math.int8_gemm == "scalar" ? "the scalar definition (RNNX_CPU_INT8_KERNEL=scalar)"
                                           : ("nothing: refused (" + math.int8_gemm + ")").c_str());
  std::printf("           RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION %s selects %s\n",
              math.env_value ? ("= \"" + std::string(math.env_value) + "\"").c_str() : "unset",
              math.selected.c_str());
  std::printf("threads:   %d (the default: OMP_NUM_THREADS, else the CPUs; --threads changes it)\n",
              max_threads());
  const std::string cache = autotune_cache_file();
  std::printf("autotune:  %s, choices kept %s\n",
              autotune_enabled() ? "on (RNNX_AUTOTUNE=0 turns it off)" : "off (RNNX_AUTOTUNE=0)",
              cache.empty() ? "in memory (RNNX_AUTOTUNE_CACHE names a file)"
                            : ("in memory and in " + cache).c_str());
  return 0;
}

}  // namespace

ChoiceOrigin choice_origin(const std::string& impl_name) {
  if (impl_name.rfind("cpu:", 0) != 0) return {};
  const std::string tuned = "/tuned";
  if (impl_name.size() >= tuned.size() &&
      impl_name.compare(impl_name.size() - tuned.size(), tuned.size(), tuned) == 0) {
    return {"search", "algorithm chosen by the search, which measured the candidates"};
  }
  bool search_on = true;
  try {
    search_on = autotune_enabled();
  } catch (const Error&) {
    // A bad RNNX_AUTOTUNE fails the plan itself, so no plan name reaches this.
  }
  return {"heuristic", search_on ? "algorithm from the heuristic: a single candidate, or no "
                                   "tokens to measure"
                                 : "algorithm from the heuristic: RNNX_AUTOTUNE=0"};
}

Command add_info_command(CLI::App& parent) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* app = parent.add_subcommand("info", "Print the version, build options and backends");
  app->add_flag("--json", *as_json, "One JSON object instead of text");
  return {app, [as_json] { return run_info(*as_json); }};
}

}  // namespace rnnx::tool
