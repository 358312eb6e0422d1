// The subcommands of `rnnx`: each registers its options on the CLI11 app and returns the
// function that runs it after parsing. Exit status: 0 success, 2 invalid input,
// 3 unsupported, 1 anything else (main.cpp maps rnnx::Error codes onto these).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace rnnx::tool {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_info_command(CLI::App& parent);
Command add_run_command(CLI::App& parent);
Command add_bench_command(CLI::App& parent);

}  // namespace rnnx::tool
