// The subcommands of `rnnx`: each registers its options on the CLI11 app and returns the
// function that runs it after parsing. Exit status: 0 success, 2 invalid input,
// 3 unsupported, 1 anything else (main.cpp maps rnnx::Error codes onto these).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace rnnx::tool {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_info_command(CLI::App& parent);
Command add_run_command(CLI::App& parent);
Command add_bench_command(CLI::App& parent);

// Where a plan's algorithm came from, read off its impl_name(): a cpu plan's name ends in
// "/tuned" when the algorithm search chose (docs/cpu.md), else it took the heuristic.
struct ChoiceOrigin {
  std::string key;   // "search", "heuristic", or "" for a backend that chooses nothing
  std::string text;  // for people, e.g. "algorithm from the heuristic: RNNX_AUTOTUNE=0"
};
ChoiceOrigin choice_origin(const std::string& impl_name);

// --backend of a command that runs on host buffers: reference or cpu. cuda is refused with
// `gpu_hint`, where to go instead (its plans take device pointers).
CLI::Option* add_host_backend_option(CLI::App& app, std::string& backend,
                                     const std::string& gpu_hint);

}  // namespace rnnx::tool
