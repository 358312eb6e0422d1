// The search rules' one setting (fastest_candidate.hpp).
#include "core/fastest_candidate.hpp"

#include <cstdlib>
#include <string>

#include "rnnx/error.hpp"

namespace rnnx::core {

// On a quiet machine repeated measurements agree within a few percent.
constexpr double kInterferenceSpread = 1.5;

double interference_spread() {
  const char* env = std::getenv("RNNX_AUTOTUNE_SPREAD");
  if (env == nullptr || *env == '\0') return kInterferenceSpread;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (*end != '\0' || !(v > 0.0)) {
    throw Error(Status::invalid_argument, std::string("RNNX_AUTOTUNE_SPREAD (= \"") + env +
                                              "\") must be a factor > 0, or unset");
  }
  return v;
}

}  // namespace rnnx::core
