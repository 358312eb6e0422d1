// One case of `rnnx run`: case.json and the .npy files of a case folder, checked, then a
// forward and (with dy.npy) a backward; the results go to an output folder as .npy files.
// The folder is read through CaseSource, so that a fuzzer can hand it over in memory.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "case_file.hpp"
#include "npy.hpp"

namespace rnnx::tool {

// What the runner reads of a case folder. Paths given to the callbacks are `dir`/name, as
// error messages show them.
struct CaseSource {
  std::string dir;
  std::function<CaseSpec(const std::string& path)> read_case;  // dir/case.json
  // Names (no folder) of the regular files whose extension is .npy.
  std::function<std::vector<std::string>()> npy_names;
  std::function<NpyArray(const std::string& path)> read_npy;
};

// The folder on disk; refuses a path that is not a directory.
CaseSource case_folder(const std::string& dir);

struct CaseRunResult {
  std::string problem_name;
  std::string impl_name;
  bool training = false;
  bool backward = false;
  int written = 0;  // files written to out_dir
};

// Runs the case on `backend` ("reference" or "cpu") with `threads` OpenMP threads (0: the
// default) and writes the results to out_dir (created if missing; nullopt: nothing is
// written). Throws rnnx::Error naming the file, the key and the values for a bad case.
CaseRunResult run_case(const CaseSource& source, const std::string& backend, int threads,
                       const std::optional<std::string>& out_dir);

}  // namespace rnnx::tool
