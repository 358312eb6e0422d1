// Placeholder until the fast CPU backend lands.
#include "core/backend.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
std::unique_ptr<BackendImpl> make_cpu_backend(const PlanContext&) {
  throw Error(Status::unsupported, "cpu backend not built yet");
}
}  // namespace rnnx
