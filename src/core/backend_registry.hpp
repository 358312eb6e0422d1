// The backends of this build. Each is one folder of src/ that defines its registration,
// `BackendRegistration <name>_backend_registration()`; the build lists the folders it builds
// (RNNX_BACKENDS in CMakeLists.txt, written to core/built_backends.inc), and the registry
// collects their registrations from that list, so core names no backend and no library.
// A Plan asks here for the backend its options name.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "rnnx/version.hpp"

namespace rnnx::core {

// What a backend's folder tells the registry about itself.
struct BackendRegistration {
  Backend backend;
  // Builds the backend for a plan (throws Error naming what it refuses).
  std::unique_ptr<BackendImpl> (*make)(const PlanContext& ctx);
  // Fills the fields of build_info() that are this backend's (the cpu's GEMM engines and
  // libraries); null when it has none.
  void (*describe)(BuildInfo& info);
};

// Whether this build has `backend`.
bool backend_built(Backend backend);
// "reference, cpu": the backends this build has, for messages.
std::string built_backends();
// Lets each built backend fill its fields of `info`.
void describe_backends(BuildInfo& info);
// The backend ctx.options.backend names, built for ctx: a built-in one, else one from its
// plugin (backend_plugin.hpp). Throws Error(unsupported) naming it and the backends this build
// has when neither has it.
std::unique_ptr<BackendImpl> make_backend(const PlanContext& ctx);

}  // namespace rnnx::core
