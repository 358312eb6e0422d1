// case.json of `rnnx run`: the keys of torch.nn.LSTM/GRU/RNN's constructor plus rnnx's
// extensions, parsed into an rnnx::Config with PyTorch's defaults for omitted keys.
// Unknown keys are refused unless the case lists them in "ignore" (docs/cli.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rnnx/config.hpp"

namespace rnnx::tool {

struct CaseSpec {
  Config config;
  bool batch_first = false;
  bool training = false;
  uint64_t dropout_counter = 0;
  // The case's "ignore" array: keys of case.json and names of files in the case
  // directory that rnnx should pass over instead of refusing.
  std::vector<std::string> ignore;

  bool ignores(const std::string& name) const;
};

// Reads and validates case.json; throws rnnx::Error(invalid_argument) naming the file,
// the key and the value.
CaseSpec read_case_file(const std::string& path);
CaseSpec parse_case_text(const std::string& path, const std::string& text);

}  // namespace rnnx::tool
