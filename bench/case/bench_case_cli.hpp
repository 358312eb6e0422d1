// The flags that give a bench case, its lengths and seed, registered alike on `rnnx bench`
// and on rnnx_onednn_peer (CLI11): one spelling, one help text, one check.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "bench_case.hpp"

namespace rnnx::bench {

struct CaseFlags {
  BenchCase bench_case;
  std::string lengths = "full";
  uint64_t seed = 0;
};

// --cell --layers --bidirectional --input --hidden --proj --batch --seq --lengths --seed.
// None is required here: a command that can run without a case (a case list, the peer's
// GEMM peak) calls require_case_flags when it needs one.
void add_case_flags(CLI::App& app, CaseFlags& flags);

// Throws CLI::RequiredError for the first of --input, --hidden, --batch and --seq that
// `app` did not get.
void require_case_flags(const CLI::App& app);

}  // namespace rnnx::bench
