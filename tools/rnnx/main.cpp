// `rnnx`: the command-line tool. `info` prints the build, `run` runs one case from .npy
// files (the cross-framework check), `bench` times a problem. Errors become one line on
// stderr, `rnnx: error: ...`, and an exit status that says which kind of error it was.
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "rnnx/error.hpp"

namespace {

// Exit statuses (docs/cli.md).
constexpr int kExitOther = 1;
constexpr int kExitInvalid = 2;
constexpr int kExitUnsupported = 3;

int exit_status(rnnx::Status code) {
  switch (code) {
    case rnnx::Status::success:
      return 0;
    case rnnx::Status::invalid_argument:
      return kExitInvalid;
    case rnnx::Status::unsupported:
      return kExitUnsupported;
    default:
      return kExitOther;
  }
}

// Keeps the error to one line whatever the message holds.
void print_error(const std::string& message, const char* code = nullptr) {
  std::string line = message;
  for (char& ch : line)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (code != nullptr) line += std::string(" [") + code + "]";
  std::fprintf(stderr, "rnnx: error: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rnnx: fused recurrent operators (RNN, LSTM, GRU). See docs/cli.md."};
  app.name("rnnx");
  app.require_subcommand(1);
  const std::vector<rnnx::tool::Command> commands = {rnnx::tool::add_info_command(app),
                                                     rnnx::tool::add_run_command(app),
                                                     rnnx::tool::add_bench_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    print_error(std::string(e.what()) + " (see rnnx --help)");
    return kExitInvalid;
  }
  for (const auto& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run();
    } catch (const rnnx::Error& e) {
      print_error(e.what(), rnnx::to_string(e.code()));
      return exit_status(e.code());
    } catch (const std::bad_alloc&) {
      print_error("out of memory", rnnx::to_string(rnnx::Status::out_of_memory));
      return kExitOther;
    } catch (const std::exception& e) {
      print_error(e.what());
      return kExitOther;
    }
  }
  return kExitOther;  // unreachable: CLI11 requires one subcommand
}
