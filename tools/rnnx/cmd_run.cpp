// `rnnx run CASE_DIR --out OUT_DIR`: the command's flags; case_runner.cpp reads the case
// (case.json and .npy files), runs it and writes the results as .npy files.
#include <cstdio>
#include <memory>
#include <string>

#include "case_runner.hpp"
#include "commands.hpp"

namespace rnnx::tool {
namespace {

struct RunOptions {
  std::string case_dir;
  std::string out_dir;
  std::string backend = "cpu";
  int threads = 0;
};

int run(const RunOptions& opts) {
  const CaseRunResult r =
      run_case(case_folder(opts.case_dir), opts.backend, opts.threads, opts.out_dir);
  const ChoiceOrigin origin = choice_origin(r.impl_name);
  std::printf("rnnx run: %s on %s%s, %s: wrote %d files to %s\n", r.problem_name.c_str(),
              r.impl_name.c_str(), origin.text.empty() ? "" : (" (" + origin.text + ")").c_str(),
              r.backward ? "training forward + backward"
                         : (r.training ? "training forward" : "inference forward"),
              r.written, opts.out_dir.c_str());
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* app = parent.add_subcommand(
      "run", "Run one case from CASE_DIR (case.json and .npy files) and write the results");
  app->add_option("case_dir", opts->case_dir, "Directory with case.json, x.npy and the weights")
      ->required();
  app->add_option("--out", opts->out_dir, "Directory for the results (created if missing)")
      ->required();
  add_host_backend_option(*app, opts->backend, "the C, C++ or rnnx.torch API with device buffers");
  app->add_option("--threads", opts->threads,
                  "Threads (0 = the default: OMP_NUM_THREADS, else the CPUs)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  return {app, [opts] { return run(*opts); }};
}

}  // namespace rnnx::tool
