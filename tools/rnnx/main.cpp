// `rnnx`: the command-line tool. `info` prints the build (`--version` the version alone),
// `run` runs one case from .npy files (the cross-framework check), `bench` times a
// problem. Errors become one line on stderr, `rnnx: error: ...`, pointing at the help of
// the subcommand concerned, and an exit status that says which kind of error it was.
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "rnnx/error.hpp"
#include "rnnx/version.hpp"

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

// Where a parse error points for help: the subcommand being parsed, else the command.
std::string help_hint(const std::vector<rnnx::tool::Command>& commands) {
  for (const auto& command : commands) {
    if (command.app->parsed()) return "rnnx " + command.app->get_name() + " --help";
  }
  return "rnnx --help";
}

// "info, run or bench" (or "and").
std::string subcommand_list(const std::vector<rnnx::tool::Command>& commands,
                            const char* conjunction) {
  std::string list;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (i > 0) list += i + 1 == commands.size() ? std::string(" ") + conjunction + " " : ", ";
    list += commands[i].app->get_name();
  }
  return list;
}

// The message for a parse error. Without a subcommand CLI11 reports only that one is
// required, even when the first word is a misspelt subcommand or an unknown option: say
// which word it did not know, and which subcommands there are.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e,
                                const std::vector<rnnx::tool::Command>& commands) {
  std::string message = e.what();
  if (app.get_subcommands().empty()) {
    const std::vector<std::string> extra = app.remaining();
    if (!extra.empty() && !extra.front().empty() && extra.front()[0] == '-') {
      message = "unknown option " + extra.front() +
                "; a subcommand is required: " + subcommand_list(commands, "or");
    } else if (!extra.empty()) {
      message = "unknown subcommand \"" + extra.front() + "\"; the subcommands are " +
                subcommand_list(commands, "and");
    } else {
      message = "a subcommand is required: " + subcommand_list(commands, "or");
    }
  }
  return message + " (see " + help_hint(commands) + ")";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rnnx: fused recurrent operators (RNN, LSTM, GRU). See docs/cli.md."};
  app.name("rnnx");
  app.set_version_flag("--version", std::string("rnnx ") + RNNX_VERSION_STRING,
                       "Print the version and exit");
  app.require_subcommand(1);
  const std::vector<rnnx::tool::Command> commands = {rnnx::tool::add_info_command(app),
                                                     rnnx::tool::add_run_command(app),
                                                     rnnx::tool::add_bench_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    print_error(parse_error_message(app, e, commands));
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
