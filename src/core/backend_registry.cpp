// The registry of backend_registry.hpp, over the generated list of the backends this build
// has (core/built_backends.inc: one RNNX_BACKEND(name) per folder, written by CMake).
#include "core/backend_registry.hpp"

#include <vector>

#include "core/backend_plugin.hpp"
#include "rnnx/error.hpp"

namespace rnnx {

// Each backend's folder defines its registration.
#define RNNX_BACKEND(name) core::BackendRegistration name##_backend_registration();
#include "core/built_backends.inc"
#undef RNNX_BACKEND

namespace core {
namespace {

const std::vector<BackendRegistration>& registered() {
  static const std::vector<BackendRegistration> list = {
#define RNNX_BACKEND(name) name##_backend_registration(),
#include "core/built_backends.inc"
#undef RNNX_BACKEND
  };
  return list;
}

}  // namespace

bool backend_built(Backend backend) {
  for (const BackendRegistration& r : registered()) {
    if (r.backend == backend) return true;
  }
  return false;
}

std::string built_backends() {
  std::string list;
  for (const BackendRegistration& r : registered())
    list += (list.empty() ? "" : ", ") + std::string(to_string(r.backend));
  return list;
}

void describe_backends(BuildInfo& info) {
  for (const BackendRegistration& r : registered()) {
    if (r.describe) r.describe(info);
  }
}

std::unique_ptr<BackendImpl> make_backend(const PlanContext& ctx) {
  const Backend wanted = ctx.options.backend;
  for (const BackendRegistration& r : registered()) {
    if (r.backend == wanted) return r.make(ctx);
  }
  // Not built in: a plugin may bring it (backend_plugin.hpp).
  return make_plugin_backend(ctx, built_backends());
}

}  // namespace core
}  // namespace rnnx
