// Texts of name=value items separated by spaces ("isa=avx2 gemm=packed"): the text forms of
// the config (rnnx/config_fields.hpp) and of the cpu choices (PlanOptions::cpu).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rnnx::core {

// The items in order. Throws Error(invalid_argument) starting with `what` for an item that
// is not name=value (`noun` names what the name is: "field", "choice") and for a name given
// twice. Runs of spaces separate items; an empty text has none.
std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  const char* what,
                                                                  const char* noun);

}  // namespace rnnx::core
