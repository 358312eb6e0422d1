// rnnx error reporting: one exception type carrying a status code and a message that
// names the argument and the values. "Your input is wrong" (invalid_argument) and
// "valid, but this backend cannot do it" (unsupported) are different codes.
#pragma once

#include <stdexcept>
#include <string>

#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

enum class Status : int {
  success = 0,
  invalid_argument = 1,  // the caller's input breaks the contract
  unsupported = 2,       // valid input that this backend or build cannot run
  internal = 3,          // a bug in rnnx or a failure of a library it calls
  out_of_memory = 4,
};

const char* to_string(Status s);

class Error : public std::runtime_error {
 public:
  Error(Status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  // Out of line: the library holds Error's vtable and type information, which catch
  // clauses in the caller's code then match.
  ~Error() override;
  Status code() const noexcept { return code_; }

 private:
  Status code_;
};

}  // namespace rnnx
RNNX_EXPORT_END
