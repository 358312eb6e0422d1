// Backends from shared libraries (backend plugins, backend_plugin_abi.h): when a plan asks
// for a backend this librnnx was built without, the registry asks here. A plugin is found,
// in this order, where rnnx::load_backend_plugin loaded it, at the path
// rnnx::register_backend_plugin gave for its backend, in RNNX_<BACKEND>_PLUGIN (a path), or
// as librnnx_<backend>.so beside librnnx; it stays loaded for the process. Its plans and
// memory are wrapped as a BackendImpl and a core::Memory, its errors as rnnx::Error.
// Device-neutral: the backend's name is all this file knows of it.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"

namespace rnnx::core {

// ctx's backend from its plugin, loading the plugin on first use. Throws Error(unsupported)
// starting with "backend (= NAME) is not in this build, which has `built`" and saying where
// it looked, or why the plugin found there did not load.
std::unique_ptr<BackendImpl> make_plugin_backend(const PlanContext& ctx, const std::string& built);

// The plugins for build_info(): loads those that can be found (as make_plugin_backend
// would) and says, per backend, where each came from and what it describes, or why it did
// not load; "" when there is none.
std::string describe_plugins();

}  // namespace rnnx::core
