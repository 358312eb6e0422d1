// Backend plugins: a backend this librnnx was built without, from a shared library (the
// cuda backend of the pip wheels is librnnx_cuda.so in the rnnx-cuda wheel;
// docs/packaging.md). A plan on such a backend finds its plugin by itself, in this order:
// one loaded by load_backend_plugin, the path given to register_backend_plugin, the path in
// the environment variable RNNX_<BACKEND>_PLUGIN (RNNX_CUDA_PLUGIN), librnnx_<backend>.so
// beside librnnx. A plugin stays loaded for the process.
#pragma once

#include <string>

#include "rnnx/export.h"
#include "rnnx/plan.hpp"

RNNX_EXPORT_BEGIN
namespace rnnx {

// Loads the plugin at `path` now and returns the backend it brings (loading the same file
// again returns it again). Throws Error(invalid_argument) naming the path and the reason when
// the file cannot be loaded (the loader's own message: missing file, a library it needs, such
// as cuDNN, not found), is not an rnnx backend plugin, was built for another plugin ABI or
// another rnnx version, or brings a backend this library has built in or has already loaded
// from another file.
Backend load_backend_plugin(const std::string& path);

// Where the plugin of `backend` is, loaded when a plan (or build_info()) first needs it:
// cheap, for `import rnnx` (the rnnx-cuda wheel's path). Replaces an earlier registration;
// has no effect once the backend's plugin is loaded. Throws Error(invalid_argument) for an
// empty path or a backend built into this library.
void register_backend_plugin(Backend backend, const std::string& path);

}  // namespace rnnx
RNNX_EXPORT_END
