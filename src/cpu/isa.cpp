// Placeholder until the cpu backend lands.
#include "rnnx/version.hpp"
namespace rnnx {
const char* cpu_isa_detected() { return "unknown"; }
const char* cpu_isa_used() { return "unknown"; }
}  // namespace rnnx
